"""Where each BCD run stands at its first full estimate, task by task, against stock's finals.

    python experiments/first_full_gap.py DIR MODEL [--top 8]

DIR is a `bcd bench --out` folder: its stores are DIR/MODEL/{metaschedule,bcd}-seed*.db. For
each BCD run this prints when its first full estimate came (every task measured once) and
its value, then the tasks furthest above stock's mean final for them (weight x best latency),
with the origin of the program that held the task's best then (evolved, diffused, memory...).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
from pathlib import Path

Best = dict[str, tuple[float, str]]  # task name -> (weight x best latency in s, origin)


def best_until_first_full(store: Path, stop_at_first_full: bool) -> tuple[Best, float]:
    with sqlite3.connect(store) as db:
        tasks = {row[0]: (row[1], row[2]) for row in db.execute("SELECT id, name, weight FROM tasks")}
        rows = db.execute("SELECT task_id, elapsed_s, latency_s, origin FROM trials ORDER BY id").fetchall()
    best: Best = {}
    first_full = rows[-1][1] if rows else 0.0
    for task_id, elapsed, latency, origin in rows:
        if not latency:
            continue
        name, weight = tasks[task_id]
        if name not in best or latency * weight < best[name][0]:
            best[name] = (latency * weight, origin)
        if len(best) == len(tasks) and stop_at_first_full:
            return best, elapsed
    return best, first_full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path)
    parser.add_argument("model")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    folder = args.dir / args.model
    finals = [best_until_first_full(s, False)[0] for s in sorted(folder.glob("metaschedule-seed*.db"))]
    stock = {name: statistics.mean(f[name][0] for f in finals) for name in finals[0]}
    print(f"stock's finals, weight x best summed, mean: {sum(stock.values()) * 1e3:.3f} ms ({len(finals)} runs)")
    for store in sorted(folder.glob("bcd-seed*.db")):
        best, at = best_until_first_full(store, True)
        total = sum(v for v, _ in best.values()) * 1e3  # the tasks' sum, not the bench's estimate
        print(f"{store.stem}: every task measured at {at:.0f} s, weight x best summed {total:.3f} ms")
        gaps = sorted(((value - stock[name], name, origin) for name, (value, origin) in best.items()), reverse=True)
        for gap, name, origin in gaps[: args.top]:
            held, final = best[name][0] * 1e6, stock[name] * 1e6
            print(f"  {gap * 1e6:+7.0f} us  {name}  via {origin}: {held:.0f} us, stock {final:.0f}")


if __name__ == "__main__":
    main()
