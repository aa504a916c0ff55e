"""When does each run of a `bcd bench` matrix reach 2x, 1.5x and 1.2x of onnxruntime's latency?

    python experiments/onnxruntime_reach.py runs/bench-matrix/matrix.json [more ...]
    python experiments/onnxruntime_reach.py runs/long256/squeezenet1_1/squeezenet1_1-bench.json

Reads a matrix (`--seeds 2` or more) or a single pair's `MODEL-bench.json` (`--seeds 1`).

For every run, the first moment (wall time and trials) its estimated latency is at most
FACTOR times onnxruntime's (the median of the matrix's probes), or "never"; then its final
estimate and its compiled model's measured latency as multiples of onnxruntime's. The estimate
is the sum of the tasks' best latencies, each timed alone; docs/benchmarks.md ("The end-to-end
gap") says how far the compiled model sits above it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
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


@dataclass
class ModelRuns:
    name: str
    trials_per_task: int
    onnxruntime_ms: float | None
    runs: list[RunResult]


def pair_runs(data: dict) -> ModelRuns:
    """A single pair's MODEL-bench.json as runs (seed 0 each)."""
    runs = []
    for result in data["results"].values():
        timeline = [tuple(p) for p in result["timeline"]]
        run = RunResult(
            strategy=result["strategy"],
            seed=0,
            trials=result["trials"],
            elapsed_s=result["elapsed_s"],
            final_estimate_s=result["final_estimate_s"],
            first_estimate_s=timeline[0][0] if timeline else None,
            measured_latency_ms=result["measured_latency_ms"],
            timeline=timeline,
            trial_timeline=[tuple(p) for p in result["trial_timeline"]],
        )
        runs.append(run)
    return ModelRuns(Path(data["model"]).stem, data["trials_per_task"], data["onnxruntime_ms"], runs)


def load_runs(path: Path) -> list[ModelRuns]:
    data = json.loads(path.read_text())
    if "results" in data:
        return [pair_runs(data)]
    matrix = load_matrix(path)
    return [
        ModelRuns(Path(model.model).stem, matrix.trials_per_task, model.onnxruntime_ms, model.runs)
        for model in matrix.models
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="matrix.json or MODEL-bench.json files of bcd bench")
    args = parser.parse_args()
    for path in args.files:
        for model in load_runs(path):
            if not model.onnxruntime_ms:
                print(f"{model.name}: no onnxruntime probe in {path}")
                continue
            print(f"{model.name}: onnxruntime {model.onnxruntime_ms:.3f} ms, {model.trials_per_task} trials per task")
            heads = " | ".join(f"reaches {factor}x onnxruntime" for factor in FACTORS)
            print(f"| strategy | seed | {heads} | final estimate | measured |")
            print("|---" * (4 + len(FACTORS)) + "|")
            for run in model.runs:
                print(describe(run, model.onnxruntime_ms))
            print()


if __name__ == "__main__":
    main()
