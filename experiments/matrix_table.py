"""Print the Markdown table of a `bcd bench --seeds N` matrix from its saved JSON (the top
table of docs/benchmarks.md comes from here).

    python experiments/matrix_table.py docs/bench/matrix-16/matrix.json [more matrix.json ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bcd_core.bench_matrix import load_matrix, markdown_table, plot_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="+", type=Path, help="matrix.json files written by bcd bench --seeds")
    parser.add_argument("--plot", action="store_true", help="also draw MODEL-curves.png beside each matrix.json")
    args = parser.parse_args()
    for path in args.matrices:
        matrix = load_matrix(path)
        print(markdown_table(matrix))
        print()
        for model in matrix.models if args.plot else []:
            plot_model(model, matrix, path.parent / f"{Path(model.model).stem}-curves.png")


if __name__ == "__main__":
    main()
