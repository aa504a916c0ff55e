"""How much a task's second round gains, by the size of its first round.

    python experiments/second_round_gain.py DIR/MODEL/bcd-seed*.db

For every task of the given BCD stores that had two rounds or more, the relative gain of its
best latency in its second round ((best after round 1 - best after round 2) / best after round
1), grouped by whether its first round measured half a round (8 or fewer trials) or more. It
is the evidence behind the gradient rule counting trials, not rounds (docs/benchmarks.md): a
task that measured half a round has more to gain from its next one.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

HALF_ROUND = 8


def second_round_gains(store: Path) -> list[tuple[int, float]]:
    """(first round's trials, relative gain of the second round) per task with two rounds."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT task_id, round, latency_s FROM trials ORDER BY id").fetchall()
    rounds: dict[int, dict[int, list[float]]] = defaultdict(dict)
    for task, round_, latency in rows:
        rounds[task].setdefault(round_, []).append(latency)
    gains = []
    for by_round in rounds.values():
        batches = list(by_round.values())
        if len(batches) < 2:
            continue
        first = min((x for x in batches[0] if x), default=None)
        if not first or first < 2e-6:  # failed, or a reshape that takes nothing
            continue
        second = min([first, *(x for x in batches[1] if x)])
        gains.append((len(batches[0]), (first - second) / first))
    return gains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=Path)
    args = parser.parse_args()
    groups: dict[str, list[float]] = defaultdict(list)
    for store in args.stores:
        for trials, gain in second_round_gains(store):
            groups[f"first round of {HALF_ROUND} or fewer" if trials <= HALF_ROUND else "first round of more"].append(
                gain
            )
    for name, gains in sorted(groups.items()):
        print(
            f"{name}: {len(gains)} tasks, second round gained {statistics.mean(gains):.1%} (mean), "
            f"{statistics.median(gains):.1%} (median)"
        )


if __name__ == "__main__":
    main()
