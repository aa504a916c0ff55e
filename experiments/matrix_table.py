"""Print the Markdown table of a `bcd bench --seeds N` matrix from its saved JSON (every column
`bcd bench` prints; docs/benchmarks.md is written by benchmarks_doc.py).

    python experiments/matrix_table.py docs/bench/blocked-znver4/squeezenet1_1-32.json [more ...]

With --reach it also prints, per model and strategy, when the mean curves reach stock's first
full estimate and stock's final (a mean curve starts once every run has its first full estimate);
with --levels MS,MS,... when each strategy's mean curve reaches each of those estimates (to compare
benches against other stock runs' finals, or how fast curves descend after their first full one);
with --descent, for every run, how many seconds after its own first full estimate it reached 97, 94,
91 and 88 % of it, and the median over each strategy's runs (runs whose first full estimates differ
by their spread compared from where each started).
"""

from __future__ import annotations

import argparse
import statistics
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


DESCENT_FRACTIONS = (0.97, 0.94, 0.91, 0.88)


def print_descent(matrix: Matrix) -> None:
    for model in matrix.models:
        for strategy in sorted({run.strategy for run in model.runs}):
            columns: list[list[float]] = [[] for _ in DESCENT_FRACTIONS]
            for run in model.runs_of(strategy):
                start_s, start = run.timeline[0]
                after = [
                    next((t - start_s for t, e in run.timeline if e <= start * f), None) for f in DESCENT_FRACTIONS
                ]
                for column, seconds in zip(columns, after):
                    if seconds is not None:
                        column.append(seconds)
                text = " ".join("never" if s is None else f"{s:.0f}" for s in after)
                print(
                    f"{Path(model.model).stem} {strategy} seed {run.seed}: "
                    f"{start * 1e3:.3f} ms at {start_s:.0f} s; {text}"
                )
            medians = " ".join(
                f"{f:.0%}: {statistics.median(c):.0f} s ({len(c)} runs)" if c else f"{f:.0%}: never"
                for f, c in zip(DESCENT_FRACTIONS, columns)
            )
            print(f"{Path(model.model).stem} {strategy}, median seconds after the first full estimate: {medians}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="+", type=Path, help="matrix.json files written by bcd bench --seeds")
    parser.add_argument("--plot", action="store_true", help="also draw MODEL-curves.png beside each matrix.json")
    parser.add_argument("--reach", action="store_true", help="also print when the mean curves reach stock's figures")
    parser.add_argument("--levels", help="estimates in ms, comma-separated: when each mean curve reaches them")
    parser.add_argument(
        "--descent", action="store_true", help="also print how fast each run descends from its first full estimate"
    )
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
        if args.descent:
            print_descent(matrix)
            print()
        for model in matrix.models if args.plot else []:
            plot_model(model, matrix, path.parent / f"{Path(model.model).stem}-curves.png")


if __name__ == "__main__":
    main()
