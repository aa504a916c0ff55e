"""Does a refactor keep the default strategy's behaviour? Tune with `bcd` at several seeds, then
compare two such sets by their mean curves (estimated latency against trials and against time).

    python experiments/strategy_parity.py run --bcd .venv/bin/bcd --out runs/parity/after MODEL ...
    (--first-seed N --seeds 1 runs one seed: alternate the two sides seed by seed)
    python experiments/strategy_parity.py compare runs/parity/before runs/parity/after

`run` only calls the `bcd` command and reads the store's timeline table, so it works on an older
checkout's `bcd` too (the "before" side).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
from pathlib import Path


def run_side(bcd: str, models: list[str], seeds: range, trials_per_task: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for model in models:
        for seed in seeds:
            name = f"{Path(model).stem}-seed{seed}"
            db = out / f"{name}.db"
            command = [
                bcd,
                "tune",
                model,
                "--trials-per-task",
                str(trials_per_task),
                "--seed",
                str(seed),
                "--no-memory",
                "--new-session",
                "--db",
                str(db),
            ]
            print("+", " ".join(command), flush=True)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            (out / f"{name}.json").write_text(json.dumps(read_curve(db, Path(model).stem, seed)))


def read_curve(db: Path, model: str, seed: int) -> dict:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "select elapsed_s, trials_done, estimated_latency_s from timeline where session_id ="
            " (select max(id) from sessions) order by round"
        ).fetchall()
    points = [(t, n, e) for t, n, e in rows if e is not None]
    return {"model": model, "seed": seed, "points": points}


def load_side(folder: Path) -> dict[str, list[list]]:
    by_model: dict[str, list[list]] = {}
    for path in sorted(folder.glob("*.json")):
        curve = json.loads(path.read_text())
        by_model.setdefault(curve["model"], []).append(curve["points"])
    return by_model


def value_at(points: list, axis: int, where: float) -> float | None:
    reached = [p[2] for p in points if p[axis] <= where]
    return reached[-1] if reached else None


def mean_at(curves: list[list], axis: int, where: float) -> float | None:
    values = [value_at(points, axis, where) for points in curves]
    return None if None in values else statistics.mean(values)


def compare(before: Path, after: Path) -> None:
    sides = load_side(before), load_side(after)
    for model in sorted(sides[0]):
        curves = sides[0][model], sides[1].get(model, [])
        total = max(p[1] for points in curves[0] for p in points)
        print(f"\n{model}: {len(curves[0])} seeds before, {len(curves[1])} after")
        print("trials | mean est. before ms | after ms | after/before")
        for share in (0.25, 0.5, 0.75, 1.0):
            values = [mean_at(c, 1, share * total) for c in curves]
            print(f"{share * total:6.0f} | {_ms(values[0])} | {_ms(values[1])} | {_ratio(values)}")
        wall = statistics.mean(points[-1][0] for points in curves[0])
        print("seconds | mean est. before ms | after ms | after/before")
        for share in (0.25, 0.5, 0.75, 1.0):
            values = [mean_at(c, 0, share * wall) for c in curves]
            print(f"{share * wall:7.0f} | {_ms(values[0])} | {_ms(values[1])} | {_ratio(values)}")
        ends = [[p[-1][2] * 1e3 for p in c] for c in curves]
        walls = [[p[-1][0] for p in c] for c in curves]
        print("finals ms before", [f"{v:.3f}" for v in ends[0]], "after", [f"{v:.3f}" for v in ends[1]])
        print("wall s before", [f"{v:.0f}" for v in walls[0]], "after", [f"{v:.0f}" for v in walls[1]])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.3f}"


def _ratio(values: list) -> str:
    return "-" if None in values else f"{values[1] / values[0]:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run")
    run.add_argument("models", nargs="+")
    run.add_argument("--bcd", default="bcd")
    run.add_argument("--seeds", type=int, default=3)
    run.add_argument("--first-seed", type=int, default=0)
    run.add_argument("--trials-per-task", type=int, default=16)
    run.add_argument("--out", type=Path, required=True)
    both = commands.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        run_side(
            args.bcd, args.models, range(args.first_seed, args.first_seed + args.seeds), args.trials_per_task, args.out
        )
    else:
        compare(args.before, args.after)


if __name__ == "__main__":
    main()
