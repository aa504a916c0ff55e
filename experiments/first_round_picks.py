"""How good are a strategy's first-round picks, pooled over every task of a model?

    python experiments/first_round_picks.py MODEL --stock DIR [DIR ...] --group NAME=DIR[,DIR] ...

DIR is a `bcd bench --out` folder (its stores are DIR/MODEL/MODEL/{metaschedule,bcd}-seed*.db).
For every task, stock's own first-round picks (all of its runs in the --stock folders) set two
references: q, their 10th percentile latency, and their median. For stock and for each group
(bcd runs, the first round's own picks only: diffused and remembered programs left out), it
prints how many picks it made, the share of them at or below q (a "hit": about 0.10 for stock
by construction) and the median of log(latency / stock's median). With `--split` a group's
picks are split into the first half of each task's own picks and the second, which is how
`bcd`'s ranked first round orders them: the model's best, then the random ones (or stock's
picks, with `--first-round ranked-cold`).

Compare only runs timed on the same machine in the same state: q is a latency.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

FirstRound = dict[str, list[float]]  # task name -> its own first-round picks' latencies (inf: failed)


def first_round_trials(store: Path) -> dict[str, list[tuple[str, float | None]]]:
    """Each task's first-round trials as (origin, latency or None), in measuring order."""
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "select t.name, r.round, r.origin, r.latency_s from trials r join tasks t on t.id = r.task_id order by r.id"
        ).fetchall()
    first: dict[str, int] = {}
    trials: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
    for name, number, origin, latency in rows:
        first.setdefault(name, number)
        if number == first[name]:
            trials[name].append((origin, latency))
    return trials


def first_round_picks(store: Path) -> FirstRound:
    """Each task's own (evolved, not carried) picks in its first round, in measuring order."""
    picks: FirstRound = defaultdict(list)
    for name, trials in first_round_trials(store).items():
        for origin, latency in trials:
            if origin == "evolved":
                picks[name].append(latency or math.inf)
    return picks


def stores(folders: list[str], model: str, prefix: str) -> list[Path]:
    return [path for folder in folders for path in sorted(Path(folder, model, model).glob(f"{prefix}-seed*.db"))]


def references(stock: list[FirstRound]) -> dict[str, tuple[float, float]]:
    """Per task: (10th percentile, median) of stock's first-round picks that ran."""
    pooled: dict[str, list[float]] = defaultdict(list)
    for run in stock:
        for name, picks in run.items():
            pooled[name] += [latency for latency in picks if math.isfinite(latency)]
    return {
        name: (sorted(values)[max(0, len(values) // 10 - 1)], statistics.median(values))
        for name, values in pooled.items()
        if len(values) >= 16
    }


def summary(runs: list[FirstRound], refs: dict[str, tuple[float, float]], part: str = "all") -> str:
    hits = count = 0
    logs: list[float] = []
    for run in runs:
        for name, picks in run.items():
            if name not in refs or len(picks) < 2:
                continue
            half = len(picks) - len(picks) // 2
            chosen = {"all": picks, "first": picks[:half], "second": picks[half:]}[part]
            q, median = refs[name]
            hits += sum(latency <= q for latency in chosen)
            count += len(chosen)
            logs += [math.log(latency / median) for latency in chosen if math.isfinite(latency)]
    if not count:
        return "no picks"
    return f"runs {len(runs):2d}  picks {count:5d}  hit {hits / count:.3f}  median log {statistics.median(logs):+.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model name, as in the bench folders (e.g. squeezenet1_1)")
    parser.add_argument("--stock", nargs="+", required=True, help="bench folders whose stock runs set the references")
    parser.add_argument("--group", action="append", default=[], help="NAME=DIR[,DIR]: bcd runs to compare")
    parser.add_argument("--split", action="store_true", help="also the first and second half of each task's picks")
    args = parser.parse_args()
    stock = [first_round_picks(path) for path in stores(args.stock, args.model, "metaschedule")]
    refs = references(stock)
    print(f"{args.model}: {len(refs)} tasks")
    print(f"  {'stock':24s} {summary(stock, refs)}")
    for group in args.group:
        name, _, folders = group.partition("=")
        runs = [first_round_picks(path) for path in stores(folders.split(","), args.model, "bcd")]
        print(f"  {name:24s} {summary(runs, refs)}")
        if args.split:
            for part in ("first", "second"):
                print(f"  {name + ' ' + part + ' half':24s} {summary(runs, refs, part)}")


if __name__ == "__main__":
    main()
