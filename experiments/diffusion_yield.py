"""Does diffusion pay, per round, against the search's own picks? Read from a `bcd bench` out dir.

    python experiments/diffusion_yield.py runs/bench/squeezenet1_1-32/squeezenet1_1 [more dirs ...]

Each DIR holds the stores of one model's matrix (`bcd-seed*.db`, `metaschedule-seed*.db`).
For BCD's runs it prints, per kind of round (a task's first or a later one) and kind of task
(cluster representative or member), how many trials diffused ("carried") programs and own
picks took, and their yield: the relative improvement of the task's best latency credited to
the origin of each batch's fastest program, per 1000 trials. Then, per task, BCD's mean best
latency against stock's, weighted, worst first: where BCD loses.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bcd_core.records.states import CARRIED_ORIGINS
from bcd_core.records.store import RecordStore


def task_batches(store: RecordStore, task_id: int) -> list[list[tuple[float, bool]]]:
    """The task's batches in order, each as (latency or inf, carried) pairs."""
    by_round: dict[int, list[tuple[float, bool]]] = {}
    for trial in store.trials(task_id=task_id):
        carried = trial["origin"] in CARRIED_ORIGINS
        by_round.setdefault(trial["round"], []).append((trial["latency_s"] or math.inf, carried))
    return list(by_round.values())


def session_tasks(store: RecordStore) -> Iterator[tuple[int, dict[str, Any]]]:
    """(session id, task row) for every task of every session in the store."""
    for session in store.sessions():
        for task in store.tasks(session["id"]):
            yield session["id"], task


def yields(stores: list[Path]) -> Counter:
    totals: Counter = Counter()
    for path in stores:
        store = RecordStore(path, read_only=True)
        for _, task in session_tasks(store):
            best = math.inf
            for position, batch in enumerate(task_batches(store, task["id"])):
                kind = ("first" if position == 0 else "later") + (" rep" if task["is_representative"] else " member")
                fastest, fastest_carried = min(batch)
                for _, carried in batch:
                    totals[kind, carried, "trials"] += 1
                if math.isfinite(best) and fastest < best:
                    totals[kind, fastest_carried, "gain"] += (best - fastest) / best
                best = min(best, fastest)
    return totals


def best_by_task(stores: list[Path]) -> dict[str, list[tuple[float, int]]]:
    """Task name -> (best latency, weight) per store."""
    result: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for path in stores:
        store = RecordStore(path, read_only=True)
        bests: dict[int, float] = {}
        for session in store.sessions():
            bests.update(store.best_latencies(session["id"]))
        for _, task in session_tasks(store):
            result[task["name"]].append((bests.get(task["id"], math.inf), task["weight"]))
    return result


def print_report(folder: Path, worst: int) -> None:
    bcd = sorted(folder.glob("bcd-seed*.db"))
    stock = sorted(folder.glob("metaschedule-seed*.db"))
    print(f"== {folder} ({len(bcd)} BCD runs, {len(stock)} stock runs)")
    totals = yields(bcd)
    for kind in ("first rep", "first member", "later rep", "later member"):
        cells = []
        for carried, label in ((True, "carried"), (False, "own")):
            trials = totals[kind, carried, "trials"]
            per_1000 = 1000 * totals[kind, carried, "gain"] / trials if trials else 0.0
            cells.append(f"{label} {trials:5d} trials, yield {per_1000:6.1f}")
        print(f"  {kind:13s} {' | '.join(cells)}")
    ours, theirs = best_by_task(bcd), best_by_task(stock)
    rows = []
    for name in ours.keys() & theirs.keys():
        mean_ours = statistics.mean(best for best, _ in ours[name])
        mean_theirs = statistics.mean(best for best, _ in theirs[name])
        weight = ours[name][0][1]
        rows.append((weight * (mean_ours - mean_theirs), name, mean_ours, mean_theirs))
    for loss, name, mean_ours, mean_theirs in sorted(rows, reverse=True)[:worst]:
        latencies = f"bcd {mean_ours * 1e6:9.1f} us  stock {mean_theirs * 1e6:9.1f} us"
        print(f"  {name[:44]:44s} {latencies}  {mean_ours / mean_theirs:5.2f}x  weighted {loss * 1e6:+8.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding one model's bench stores")
    parser.add_argument("--worst", type=int, default=6, help="how many tasks to list, where BCD loses most")
    args = parser.parse_args()
    for folder in args.folders:
        print_report(folder, args.worst)


if __name__ == "__main__":
    main()
