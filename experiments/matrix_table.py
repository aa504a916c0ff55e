"""Print the Markdown table of a `bcd bench --seeds N` matrix from its saved JSON (the top
table of docs/benchmarks.md comes from here).

    python experiments/matrix_table.py docs/bench/matrix-16/matrix.json [more matrix.json ...]

With --reach it also prints, per model and strategy, when the mean curves reach stock's first
full estimate and stock's final (a mean curve starts once every run has its first full estimate);
with --levels MS,MS,... when each strategy's mean curve reaches each of those estimates (to compare
benches against other stock runs' finals, or how fast curves descend after their first full one).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bcd_core.bench_matrix import Curve, Matrix, load_matrix, markdown_table, mean_curve, plot_model, time_grid


def reached_at(curve: Curve, latency: float) -> str:
    return next((f"{t:.0f} s" for t, estimate in curve if estimate <= latency), "never")


def print_reach(matrix: Matrix) -> None:
    for model in matrix.models:
        stock = [run.timeline for run in model.runs_of("metaschedule")]
        for strategy in sorted({run.strategy for run in model.runs} - {"metaschedule"}):
            other = [run.timeline for run in model.runs_of(strategy)]
            grid = time_grid([*stock, *other], 2000)
            stock_mean, other_mean = mean_curve(stock, grid), mean_curve(other, grid)
            (stock_first_s, first), final = stock_mean[0], stock_mean[-1][1]
            print(
                f"{Path(model.model).stem} {strategy}: stock's first full estimate {first * 1e3:.3f} ms at "
                f"{stock_first_s:.0f} s, {strategy} reaches it at {reached_at(other_mean, first)}; stock's final "
                f"{final * 1e3:.3f} ms, stock reaches it at {reached_at(stock_mean, final)}, {strategy} at "
                f"{reached_at(other_mean, final)}"
            )


def print_levels(matrix: Matrix, levels_ms: list[float]) -> None:
    for model in matrix.models:
        for strategy in sorted({run.strategy for run in model.runs}):
            runs = [run.timeline for run in model.runs_of(strategy)]
            curve = mean_curve(runs, time_grid(runs, 2000))
            reached = ", ".join(f"{level:.3f} ms at {reached_at(curve, level / 1e3)}" for level in levels_ms)
            start_s, start = curve[0]
            print(f"{Path(model.model).stem} {strategy}: from {start * 1e3:.3f} ms at {start_s:.0f} s; {reached}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="+", type=Path, help="matrix.json files written by bcd bench --seeds")
    parser.add_argument("--plot", action="store_true", help="also draw MODEL-curves.png beside each matrix.json")
    parser.add_argument("--reach", action="store_true", help="also print when the mean curves reach stock's figures")
    parser.add_argument("--levels", help="estimates in ms, comma-separated: when each mean curve reaches them")
    args = parser.parse_args()
    for path in args.matrices:
        matrix = load_matrix(path)
        print(markdown_table(matrix))
        print()
        if args.reach:
            print_reach(matrix)
            print()
        if args.levels:
            print_levels(matrix, [float(value) for value in args.levels.split(",")])
            print()
        for model in matrix.models if args.plot else []:
            plot_model(model, matrix, path.parent / f"{Path(model.model).stem}-curves.png")


if __name__ == "__main__":
    main()
