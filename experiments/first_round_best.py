"""Per task, the best of BCD's first round against the best of stock's, seed by seed.

    python experiments/first_round_best.py DIR MODEL

DIR is a `bcd bench --out` folder: its stores are DIR/MODEL/{metaschedule,bcd}-seed*.db.
The best of a task's first round sets its share of the first full estimate, which is where
BCD's mean curve starts. For every task and seed this prints, pooled, the median and the
geometric mean of (BCD's first-round best / the same seed's stock first-round best), once
over BCD's whole first round (carried programs included) and once over its own picks only
(`origin` evolved). `first_round_picks.py` looks at the picks' distribution instead.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from first_round_picks import first_round_trials  # this folder's script, on sys.path when run

Best = dict[str, tuple[float | None, float | None]]  # task -> (whole first round, own picks)


def first_round_best(store: Path) -> Best:
    best: Best = {}
    for name, trials in first_round_trials(store).items():
        whole = [latency for _, latency in trials if latency]
        own = [latency for origin, latency in trials if origin == "evolved" and latency]
        if whole:
            best[name] = (min(whole), min(own) if own else None)
    return best


def summary(label: str, ratios: list[float]) -> str:
    if not ratios:
        return f"  {label:22s} no tasks"
    median, geometric = statistics.median(ratios), statistics.geometric_mean(ratios)
    return f"  {label:22s} task-runs {len(ratios):4d}  median {median:.2f}  geometric mean {geometric:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a bcd bench --out folder")
    parser.add_argument("model", help="model name, as in the folder (e.g. mobilenet_v2)")
    args = parser.parse_args()
    stores = Path(args.folder, args.model)
    whole: list[float] = []
    own: list[float] = []
    for bcd_store in sorted(stores.glob("bcd-seed*.db")):
        stock_store = stores / bcd_store.name.replace("bcd-", "metaschedule-")
        if not stock_store.exists():
            continue
        bcd, stock = first_round_best(bcd_store), first_round_best(stock_store)
        for name, (bcd_whole, bcd_own) in bcd.items():
            reference = stock.get(name, (None, None))[0]
            if reference:
                whole.append(bcd_whole / reference)
                if bcd_own:
                    own.append(bcd_own / reference)
    print(f"{args.model}: BCD's first-round best / the same seed's stock first-round best")
    print(summary("whole first round", whole))
    print(summary("own picks only", own))


if __name__ == "__main__":
    main()
