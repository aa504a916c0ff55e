"""How much a task's next round improves its best latency, by how many rounds in a row it went
without a better program: what BCD's phase-3 STALL_DECAY (bcd_core/tuning/bcd.py, 0.5) models.
The stored BCD runs fit about 0.75 per stalled round; 0.75 was tried and not kept
(docs/history/benchmarks-until-2026-11-24.md, 2026-11-23 third session).

Reads finished stores (any strategy) and, for every round of every task after its second,
records the relative improvement of the task's best latency, grouped by the rounds in a row
before it without a better program (by MIN_IMPROVEMENT, as the tuner counts them) and by
whether the task had had more than three rounds.

    PYTHONPATH=. .venv/bin/python experiments/history/stall_calibration.py docs/bench/squeezenet*/bcd.db \
        docs/bench/squeezenet-bcd-only/*/bcd.db docs/bench/resnet18*/bcd.db docs/bench/resnet18-bcd-only/*/bcd.db
"""

from __future__ import annotations

import math
import sqlite3
import statistics
import sys
from collections import defaultdict

from bcd_core.tuning.bcd import MIN_IMPROVEMENT, stalled_rounds  # counted as the tuner counts them

SKIPPED_PREFIXES = ("concatenate", "reshape")  # one-candidate tasks: nothing to improve


def improvements(path: str) -> dict[tuple[int, bool], list[float]]:
    """(stalled rounds, capped at 4; more than 3 rounds before) -> relative improvements."""
    found: dict[tuple[int, bool], list[float]] = defaultdict(list)
    db = sqlite3.connect(path)
    session = db.execute("select max(id) from sessions").fetchone()[0]
    for task_id, name in db.execute("select id, name from tasks where session_id = ?", (session,)).fetchall():
        if name.startswith(SKIPPED_PREFIXES):
            continue
        rounds = db.execute(
            "select round, min(latency_s) from trials where task_id = ? group by round order by round", (task_id,)
        ).fetchall()
        history: list[float] = []
        best = math.inf
        for _, latency in rounds:
            if len(history) >= 2 and best < math.inf:
                new_best = min(best, latency) if latency is not None else best
                found[(min(stalled_rounds(history), 4), len(history) > 3)].append((best - new_best) / best)
            if latency is not None:
                best = min(best, latency)
            history.append(best)
    return found


def main() -> None:
    merged: dict[tuple[int, bool], list[float]] = defaultdict(list)
    for path in sys.argv[1:]:
        for key, values in improvements(path).items():
            merged[key].extend(values)
    print("stalled  rounds>3  n     mean improvement  P(>1 %)")
    for (stalled, late), values in sorted(merged.items()):
        share = sum(v > MIN_IMPROVEMENT for v in values) / len(values)
        label = f"{stalled}+" if stalled == 4 else str(stalled)
        print(f"{label:7s}  {str(late):8s}  {len(values):4d}  {statistics.mean(values):.4f}            {share:.2f}")
    late = {s: statistics.mean(merged[(s, True)]) for s in range(5) if merged.get((s, True))}
    if 0 in late and len(late) > 1:
        # Geometric decay per stalled round, fitted through the origin in log space.
        points = [(s, math.log(late[s] / late[0])) for s in late if s > 0 and late[s] > 0]
        slope = sum(s * y for s, y in points) / sum(s * s for s, _ in points)
        print(f"fitted decay per stalled round (rounds > 3): {math.exp(slope):.2f}")


if __name__ == "__main__":
    main()
