"""Add each run's whole-model timings to a `bcd bench --seeds N` matrix written before the
matrix kept them (bench_matrix.RunResult.model_timings), from the runs' stores beside it.

Usage: python experiments/add_model_timings.py OUT_DIR  (the bench's --out: matrix.json, and
one folder per model holding <strategy>-seed<N>.db). A run's session is the newest in its store
that is not a layout probe; the matrix is rewritten in place.
"""

from __future__ import annotations

import argparse
import json
from contextlib import closing
from pathlib import Path

from bcd_core.bench_matrix import load_matrix, model_timings, write_matrix
from bcd_core.records.store import RecordStore


def tune_session(store: RecordStore) -> int:
    tunes = [s["id"] for s in store.sessions() if not json.loads(s["settings"] or "{}").get("layout_probe")]
    if not tunes:
        raise SystemExit(f"{store.path}: no tune session")
    return max(tunes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    out_dir = parser.parse_args().out_dir
    matrix = load_matrix(out_dir / "matrix.json")
    for model in matrix.models:
        for run in model.runs:
            path = out_dir / Path(model.model).stem / f"{run.strategy}-seed{run.seed}.db"
            with closing(RecordStore(path, read_only=True)) as store:
                run.model_timings = model_timings(store, tune_session(store))
            print(f"{path}: {len(run.model_timings)} timing(s)")
    write_matrix(matrix, out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
