"""Does pre-packing weights (MetaSchedule's layout rewrite of constant weights) make a task's
best program faster? Tunes the heaviest tasks of a model with stock MetaSchedule twice, with
and without the weights marked layout-free, at the same budget, and prints their best latencies.

    python experiments/prepack_probe.py ../shared/models/transformer_encoder_l2.onnx --tasks 2 --trials 64

Run it alone: the figures are wall-clock measurements. Result on 2026-11-25 (2-core znver4 VM,
64 trials, seed 0), transformer_encoder_l2's two heaviest matmuls: 967.5 us plain against
1037.3 us pre-packed (the GELU feed-forward matmul) and 608.9 against 600.9 us (the second
feed-forward matmul): no win at this budget, so bcd does not pre-pack weights.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

import tvm
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from bcd_core.model_import import fuse_for_tuning, import_model
from bcd_core.target import host_target


def heaviest_tasks(mod: tvm.IRModule, target, count: int) -> list:
    tasks = ms.relax_integration.extract_tasks(mod, target)
    weighted = sorted(tasks, key=lambda t: -t.weight * tvm.s_tir.analysis.estimate_tir_flops(t.dispatched[0]))
    return weighted[:count]


def best_latency_us(task, target, trials: int) -> float:
    with tempfile.TemporaryDirectory() as work_dir:
        database = ms.tune_tir(
            task.dispatched[0],
            target,
            work_dir,
            max_trials_global=trials,
            num_trials_per_iter=16,
            runner=ms.runner.LocalRunner(
                evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=20)
            ),
            seed=0,
        )
        record = database.get_top_k(database.commit_workload(task.dispatched[0]), 1)[0]
        return 1e6 * sum(float(s) for s in record.run_secs) / len(record.run_secs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--trials", type=int, default=64)
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)  # its console log is per round
    target = host_target(2)
    fused = fuse_for_tuning(import_model(args.model).relax_mod, target)
    with target:
        prepacked = relax.transform.AttachAttrLayoutFreeBuffers()(fused)
    plain = heaviest_tasks(fused, target, args.tasks)
    packed = heaviest_tasks(prepacked, target, args.tasks)
    for a, b in zip(plain, packed):
        free = b.dispatched[0]["main"].attrs.get("layout_free_buffers") if b.dispatched[0]["main"].attrs else None
        print(f"{a.task_name} (weight {a.weight}): layout-free buffers {list(free) if free else []}", flush=True)
        print(f"  plain     {best_latency_us(a, target, args.trials):9.1f} us", flush=True)
        print(f"  prepacked {best_latency_us(b, target, args.trials):9.1f} us", flush=True)


if __name__ == "__main__":
    main()
