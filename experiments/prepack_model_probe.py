"""Does pre-packing weights make a whole compiled model faster, where its weights come cold?

`prepack_probe.py` compared single tasks timed as MetaSchedule's runner times them, with warm
caches. Inside a model the weights come cold from memory (docs/benchmarks.md, "The end-to-end
gap"), and a pre-packed weight is read in the order the kernel's loops walk it. This tunes a
whole model with TVM's own `static_shape_tuning_pipeline`, once plain and once with
`cpu_weight_prepack=True` (weights marked layout-free, MetaSchedule's RewriteLayout choosing
their layout per program, the rewrite folded into the constants at compile time), `--pairs`
times, and times all the compiled models in turns.

    python experiments/prepack_model_probe.py ../shared/models/mobilenet_v2.onnx --trials-per-task 32 --pairs 1

With `max_trials_per_task` at the budget per task, TVM's pipeline measures each task in one
batch, so its models are slower than bcd's; only the two kinds against each other count.
Result on 2026-11-26 (2-core znver5, one pair, 32 trials per task), MobileNetV2: plain 9.517
ms, pre-packed 9.670 ms: no win, so bcd does not pre-pack weights.

Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

import tvm
from e2e_gap import print_models_in_turns  # the models timed as rerank_probe.py times them
from tvm import relax

from bcd_core.model_import import import_model, random_inputs
from bcd_core.target import host_target
from bcd_core.tasks import extract_tasks


def tuned_executable(mod: tvm.IRModule, target, trials_per_task: int, prepack: bool):
    tasks = len(extract_tasks(mod, target))
    with tempfile.TemporaryDirectory() as work_dir:
        pipeline = relax.pipeline.static_shape_tuning_pipeline(
            total_trials=trials_per_task * tasks,
            target=target,
            work_dir=work_dir,
            cpu_weight_prepack=prepack,
            max_trials_per_task=trials_per_task,
        )
        tuned = pipeline(mod)
        return tvm.compile(tuned, target=target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--trials-per-task", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=1, help="tunes of each kind (MetaSchedule picks its own seeds)")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)  # its console log is per round
    target = host_target(2)
    imported = import_model(args.model)
    dev = tvm.cpu()
    arguments = [tvm.runtime.tensor(a, device=dev) for a in random_inputs(imported.inputs).values()]
    vms = {}
    for pair in range(args.pairs):
        for prepack in (False, True):
            name = f"{'packed' if prepack else 'plain '} {pair}"
            executable = tuned_executable(imported.relax_mod, target, args.trials_per_task, prepack)
            vms[name] = relax.VirtualMachine(executable, dev)
            print(f"tuned {name}", flush=True)
    print_models_in_turns(vms, arguments, args.passes)


if __name__ == "__main__":
    main()
