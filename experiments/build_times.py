"""How long do a task's best programs take to build, against its other programs? (the CPU
builder's slow-build limit, bcd_core/tuning/builder.py)

    python experiments/build_times.py STORE.db [--tasks 5] [--others 8]

For the STORE's newest session, takes the `--tasks` tasks with the slowest best latency,
rebuilds (LLVM, in this process) each one's three best programs and `--others` random other
measured programs, and prints their build times and latencies, and the best programs' slowest
build over the task's median build. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import tvm

from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_target
from bcd_core.tuning.builder import build_candidate


def build_seconds(database: SqliteDatabase, row: dict, target: tvm.target.Target) -> float:
    mod = database.candidate_from_row(row).sch.mod  # the program as the tune built it
    started = time.perf_counter()
    build_candidate(mod, target)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--others", type=int, default=8)
    args = parser.parse_args()
    store = RecordStore(args.store, read_only=True)
    database, target = SqliteDatabase(store), host_target()
    session_id = store.sessions()[-1]["id"]
    by_task: dict[int, list[dict]] = {}
    for row in store.trials(session_id):
        if row["latency_s"]:
            by_task.setdefault(row["task_id"], []).append(row)
    slowest = sorted(by_task, key=lambda task: -min(r["latency_s"] for r in by_task[task]))[: args.tasks]
    rng = random.Random(0)
    for task in slowest:
        rows = sorted(by_task[task], key=lambda r: r["latency_s"])
        best, others = rows[:3], rng.sample(rows[3:], min(args.others, len(rows) - 3))
        best_s = [build_seconds(database, r, target) for r in best]
        others_s = [build_seconds(database, r, target) for r in others]
        ratio = max(best_s) / statistics.median(best_s + others_s)
        print(
            f"task {task}: best {[round(r['latency_s'] * 1e6) for r in best]} us built in "
            f"{[round(s, 2) for s in best_s]} s; others {[round(r['latency_s'] * 1e6) for r in others]} us "
            f"in {[round(s, 2) for s in others_s]} s; best's slowest / median {ratio:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
