"""Which programs outlast the builder's timeout on a CPU? Read from `bcd bench` out dirs.

    python experiments/build_timeouts.py runs/m16-half/mobilenet_v2/mobilenet_v2 [more dirs ...]

Each DIR holds stores of a matrix (`bcd-seed*.db`, `metaschedule-seed*.db`). Every trial's
program is rebuilt from its record (no compiling) and classed by its vectorized loops: "wide
odd" when one is wider than the target's float32 lanes (16 with AVX-512) and not a multiple
of them, LLVM's slow case, else "plain". Printed: trials, build timeouts and failures per
class and origin, then how many tasks' best programs (and programs within 10 % of a task's
best) are of each class, which says what a filter on the class would cost.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

import tvm

from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore

LANES = 16
NEAR_BEST = 1.10
VECTORIZED = re.compile(r"T\.vectorized\(T\.int64\((\d+)\)\)")


def vector_class(database: SqliteDatabase, row: dict) -> str | None:
    record = database.record_from_row(row)
    sch = tvm.s_tir.Schedule(record.workload.mod)
    try:
        record.trace.apply_to_schedule(sch, remove_postproc=False)
    except Exception:
        return None
    widths = [int(w) for w in VECTORIZED.findall(sch.mod.script())]
    return "wide odd" if any(w > LANES and w % LANES for w in widths) else "plain"


def failure(row: dict) -> str:
    if row["latency_s"]:
        return "ok"
    return "timeout" if "timeout" in (row["error"] or "").lower() else "failed"


def count(paths: list[Path]) -> tuple[Counter, Counter, Counter]:
    outcomes: Counter = Counter()
    bests: Counter = Counter()
    near: Counter = Counter()
    for path in paths:
        store = RecordStore(path, read_only=True)
        database = SqliteDatabase(store)
        by_task: dict[int, list[tuple[float, str]]] = defaultdict(list)
        for row in store.trials():
            kind = vector_class(database, row)
            if kind is None:
                continue
            outcomes[kind, row["origin"], failure(row)] += 1
            if row["latency_s"]:
                by_task[row["task_id"]].append((row["latency_s"], kind))
        for rows in by_task.values():
            best = min(rows)[0]
            bests[min(rows)[1]] += 1
            near.update(kind for latency, kind in rows if latency <= best * NEAR_BEST)
    return outcomes, bests, near


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    paths = [p for d in args.dirs for p in sorted(d.glob("*-seed*.db"))]
    outcomes, bests, near = count(paths)
    print(f"{len(paths)} stores")
    print(f"{'class':10} {'origin':10} {'trials':>7} {'timeout':>8} {'failed':>7}")
    for kind, origin in sorted({(k, o) for k, o, _ in outcomes}):
        row = [outcomes[kind, origin, outcome] for outcome in ("ok", "timeout", "failed")]
        print(f"{kind:10} {origin:10} {sum(row):7} {row[1]:8} {row[2]:7}")
    print("tasks' best programs by class:", dict(bests))
    print(f"programs within {NEAR_BEST:.2f}x of their task's best by class:", dict(near))


if __name__ == "__main__":
    main()
