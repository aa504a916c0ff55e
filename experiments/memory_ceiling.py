"""How far could a tuning memory take a new model by itself? (issue 26)

For every task of MODEL, the memory's programs for it (the most similar remembered tasks'
best programs, diffused into the task as a tune would hand them out, at most `--programs`)
are compiled and timed beside stock MetaSchedule's final best for the task from each STORE,
task by task in the same process, so a slow moment of the machine scales both. The memory's
estimate (weight x the memory's best program, summed over tasks) against stock's final
estimates says whether a tune that measured only the memory's programs in its first round
could already be at stock's final, the condition for reaching it several times sooner.

    python experiments/memory_ceiling.py ../shared/models/mobilenet_v2.onnx \
        runs/mem26/mobilenet_v2/mobilenet_v2/metaschedule-seed*.db \
        --memory runs/mem-src/squeezenet1_1.db runs/mem-src/resnet18.db runs/mem-src/bert_mini_l4_h256.db

Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse
import math
import statistics
from contextlib import ExitStack, closing
from pathlib import Path

import tvm
from e2e_gap import library_us, open_session

from bcd_core.diffusion import diffuse
from bcd_core.memory.recall import TuningMemory, preview_memory
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import target_key
from bcd_core.tasks import Task, extract_tasks
from bcd_core.tuning.session import task_context
from bcd_core.untuned import standard_normal_arguments


def memory_schedules(memory: TuningMemory, index: int, task: Task, target, count: int) -> list[tvm.s_tir.Schedule]:
    """The memory's programs for `task`, diffused into its design spaces as a tune does."""
    remembered = memory.programs(index, task, count, exclude=set())
    if not remembered:
        return []
    context = task_context(task, target, "evolutionary", 0)
    sketches = list(context.generate_design_space())
    priors = [(position, program.trace) for position, program in enumerate(remembered)]
    return [p.schedule for p in diffuse(context, sketches, priors, count, seed=index, spread=True).programs]


def timed_us(schedule: tvm.s_tir.Schedule, target, arguments: list) -> float:
    try:
        return library_us(tvm.compile(schedule.mod, target=target).mod, arguments, False, 20)
    except Exception:  # noqa: BLE001 - a program that fails to build or run counts as missing
        return math.inf


def stock_schedule(database: SqliteDatabase, task: Task, target) -> tvm.s_tir.Schedule | None:
    return database.query_schedule(task.mod, target, workload_name=task.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("stores", type=Path, nargs="+", help="stock MetaSchedule's stores of MODEL")
    parser.add_argument("--memory", type=Path, nargs="+", required=True)
    parser.add_argument("--programs", type=int, default=8, help="memory programs per task (a first round's share)")
    args = parser.parse_args()
    with ExitStack() as stack:
        stores = [stack.enter_context(closing(RecordStore(path, create=False))) for path in args.stores]
        sessions = [open_session(store, args.model) for store in stores]
        _, target, imported, _ = sessions[0]
        tasks = extract_tasks(imported.relax_mod, target)
        memory = preview_memory([str(p) for p in args.memory], target_key(target), imported.sha256, tasks, print)
        if memory is None:
            raise SystemExit("the memory holds nothing like this model's tasks")
        totals = {"memory": 0.0, **{f"stock {i}": 0.0 for i in range(len(stores))}}
        covered = 0
        header = f"{'task':44} {'w':>2} {'stock best us (each store)':>30} {'memory best us':>15} {'n':>2}"
        print(f"{header} ratio (first 4)")
        for index, task in enumerate(tasks):
            arguments = standard_normal_arguments(task, tvm.cpu())
            stock_us = [
                timed_us(schedule, target, arguments) if (schedule := stock_schedule(db, task, target)) else math.inf
                for _, _, _, db in sessions
            ]
            programs = memory_schedules(memory, index, task, target, args.programs)
            each_us = [timed_us(s, target, arguments) for s in programs]
            memory_us = min(each_us, default=math.inf)
            first_four_us = min(each_us[:4], default=math.inf)
            # A task the memory has nothing for keeps the stock median (it would tune as cold).
            stock_mid = statistics.median(stock_us)
            covered += math.isfinite(memory_us)
            totals["memory"] += task.weight * (memory_us if math.isfinite(memory_us) else stock_mid)
            for i, value in enumerate(stock_us):
                totals[f"stock {i}"] += task.weight * value
            stock_text = " ".join(f"{v:9.1f}" for v in stock_us)
            print(
                f"{task.name[:44]:44} {task.weight:2} {stock_text:>30} {memory_us:15.1f} {len(programs):2}"
                f" {memory_us / stock_mid:5.2f} {first_four_us / stock_mid:5.2f}",
                flush=True,
            )
        print(f"memory programs for {covered} of {len(tasks)} tasks (the others count at stock's median)")
        for name, total in totals.items():
            print(f"estimate {name:8}: {total / 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
