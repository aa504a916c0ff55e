"""When does each run of a `bcd bench` matrix reach 2x, 1.5x and 1.2x of onnxruntime's latency?

    python experiments/onnxruntime_reach.py runs/long256/squeezenet1_1/matrix.json [more ...]

For every run, the first moment (wall time and trials) its estimated latency is at most
FACTOR times onnxruntime's (the median of the matrix's probes), or "never"; then its final
estimate and its compiled model's measured latency as multiples of onnxruntime's. The estimate
is the sum of the tasks' best latencies, each timed alone; docs/benchmarks.md ("The end-to-end
gap") says how far the compiled model sits above it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bcd_core.bench_matrix import Curve, RunResult, load_matrix

FACTORS = (2.0, 1.5, 1.2)


def first_reach(curve: Curve, bound_s: float) -> float | None:
    """The first x of `curve` (x, estimated latency s) whose latency is at most `bound_s`."""
    return next((x for x, latency in curve if latency <= bound_s), None)


def describe(run: RunResult, onnxruntime_ms: float) -> str:
    cells = []
    for factor in FACTORS:
        bound = factor * onnxruntime_ms / 1e3
        when = first_reach(run.timeline, bound)
        trials = first_reach(run.trial_timeline, bound)
        cells.append("never" if when is None else f"{when / 60:.1f} min ({trials:.0f} trials)")
    final = f"{run.final_estimate_s * 1e3 / onnxruntime_ms:.2f}x" if run.final_estimate_s else "-"
    measured = f"{run.measured_latency_ms / onnxruntime_ms:.2f}x" if run.measured_latency_ms else "-"
    return f"| {run.strategy} | {run.seed} | " + " | ".join(cells) + f" | {final} | {measured} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="+", type=Path, help="matrix.json files written by bcd bench")
    args = parser.parse_args()
    for path in args.matrices:
        matrix = load_matrix(path)
        for model in matrix.models:
            if not model.onnxruntime_ms:
                print(f"{model.model}: no onnxruntime probe in {path}")
                continue
            name = Path(model.model).stem
            print(f"{name}: onnxruntime {model.onnxruntime_ms:.3f} ms, {matrix.trials_per_task} trials per task")
            heads = " | ".join(f"reaches {factor}x onnxruntime" for factor in FACTORS)
            print(f"| strategy | seed | {heads} | final estimate | measured |")
            print("|---" * (4 + len(FACTORS)) + "|")
            for run in model.runs:
                print(describe(run, model.onnxruntime_ms))
            print()


if __name__ == "__main__":
    main()
