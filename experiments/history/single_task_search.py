"""How far MetaSchedule's evolutionary search gets on one task of a model in a few rounds,
with this project's shared cost model or MetaSchedule's own XGBoost model.

A question from the benchmarks: BCD's representative of SqueezeNet's 3x3 convolutions often
ended phase 1 slower than the stock search's result for the same task. Is the cost model the
cause (it learns from the representative's own records only in phase 1), or would tuning
another task beside it help (the stock search learns from every task at once)?

    PYTHONPATH=. .venv/bin/python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx \
        fused_conv2d7_add4_relu4 --cost-model shared --seed 1 --rounds 6

Prints one JSON line: the task's best latency (ms) after each of its rounds. Several tasks
(comma-separated) are tuned round-robin with one cost model; the first one is reported.
Run it alone: it measures.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile

import numpy as np
import tvm_ffi
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.xgb import SharedXGBModel
from bcd_core.target import host_core_count, host_target
from bcd_core.tuning.measure import make_builder, make_runner
from bcd_core.tuning.session import prepare_model
from bcd_core.tuning.settings import TuneSettings

COST_MODELS = ("shared", "stock", "stock-no-warmup")


def make_cost_model(name: str, seed: int) -> ms.cost_model.CostModel:
    cores = host_core_count()
    if name == "shared":  # what BCD uses (bcd_core/cost_model/xgb.py)
        return SharedXGBModel(num_threads=cores, seed=seed)
    if name == "stock":  # what the stock strategy uses: random scores until 100 samples
        return ms.cost_model.CostModel.create("xgb", num_tuning_cores=cores, tree_method="auto")
    return ms.cost_model.XGBModel(num_tuning_cores=cores, tree_method="auto", num_warmup_samples=0)


def best_per_round(latencies: list[float], batch: int) -> list[float]:
    best, history = float("inf"), []
    for start in range(0, len(latencies), batch):
        best = min([best, *latencies[start : start + batch]])
        history.append(round(best * 1e3, 4))
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("tasks", help="task name(s), comma-separated; the first is reported")
    parser.add_argument("--cost-model", choices=COST_MODELS, default="shared")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()

    settings = TuneSettings()
    target = host_target()
    by_name = {task.name: task for task in prepare_model(args.model, target).tasks}
    tasks = [by_name[name] for name in args.tasks.split(",")]
    contexts = [
        ms.TuneContext(
            mod=task.mod,
            target=target,
            space_generator="post-order-apply",
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=settings.population_size, init_min_unmeasured=settings.init_min_unmeasured
            ),
            task_name=task.name,
            # the offset of the runs in docs/history/benchmarks-until-2026-11-24.md
            rand_state=args.seed * 1000 + 7 + position,
            num_threads=host_core_count(),
            logger=logging.getLogger("single_task_search"),
        )
        for position, task in enumerate(tasks)
    ]
    np.random.seed(args.seed)  # the stock model's warm-up scores
    database = ms.database.MemoryDatabase()
    batch = settings.batch_size
    builder = make_builder(settings, target)
    with tempfile.TemporaryDirectory() as work_dir:
        ms.tune_tasks(
            tasks=contexts,
            task_weights=[1.0] * len(contexts),
            work_dir=work_dir,
            max_trials_global=batch * args.rounds * len(contexts),
            max_trials_per_task=batch * args.rounds,
            num_trials_per_iter=batch,
            builder=builder,
            runner=make_runner(settings),
            database=database,
            cost_model=make_cost_model(args.cost_model, args.seed),
            measure_callbacks=ms.measure_callback.MeasureCallback.create("default"),
            task_scheduler=ms.task_scheduler.RoundRobin(),
        )
    builder.close()
    reported = tvm_ffi.structural_hash(tasks[0].mod)
    records = [r for r in database.get_all_tuning_records() if tvm_ffi.structural_hash(r.workload.mod) == reported]
    latencies = [float(np.mean([float(s) for s in r.run_secs])) if r.run_secs else float("inf") for r in records]
    history = best_per_round(latencies, batch)
    report = {"tasks": args.tasks, "cost_model": args.cost_model, "seed": args.seed, "best_ms_per_round": history}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
