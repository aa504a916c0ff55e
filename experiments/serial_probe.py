"""Would a task's best program run faster on one thread? Times each task's best program of a
tuned session as tuned and as its serial twin (the same trace with MetaSchedule's parallel
annotation set to 1, post-processed again), alone, warm, as MetaSchedule's runner times it.

    python experiments/serial_probe.py STORE MODEL [--session ID]

Prints, per task: weight, the stored best, both times now, and the twin's ratio.
"""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path

import tvm
from e2e_gap import library_us, open_session
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.schedule import Schedule

from bcd_core.programs import serial_twin
from bcd_core.records.store import RecordStore
from bcd_core.tasks import extract_tasks
from bcd_core.untuned import standard_normal_arguments


def time_schedule(sch: Schedule, task, target, repeat: int) -> float:
    library = tvm.compile(sch.mod, target=target).mod
    return library_us(library, standard_normal_arguments(task, tvm.cpu()), False, repeat)


def postprocs_of(mod, target) -> list:
    context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply", num_threads=1)
    return list(context.space_generator.postprocs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--session", type=int)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with closing(RecordStore(args.store, create=False)) as store:
        session, target, imported, database = open_session(store, args.model, args.session)
        tasks = extract_tasks(imported.relax_mod, target)
        total_tuned = total_twin = 0.0
        for task in tasks:
            best = database.query_schedule(task.mod, target, workload_name=task.name)
            if best is None:
                continue
            tuned_us = time_schedule(best, task, target, args.repeat)
            twin = serial_twin(task.mod, best.trace, postprocs_of(task.mod, target))
            twin_us = time_schedule(twin, task, target, args.repeat) if twin is not None else float("nan")
            better = min(tuned_us, twin_us) if twin is not None else tuned_us
            total_tuned += task.weight * tuned_us
            total_twin += task.weight * better
            ratio = twin_us / tuned_us
            name = task.name[:36]
            print(f"{name:36} w={task.weight:3} tuned {tuned_us:8.1f} us, serial {twin_us:8.1f} us, {ratio:.2f}")
        ratio = total_twin / total_tuned
        print(f"weight x time: tuned {total_tuned:.1f} us, with the faster twin {total_twin:.1f} us ({ratio:.3f})")


if __name__ == "__main__":
    main()
