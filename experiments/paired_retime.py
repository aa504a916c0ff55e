"""Compare the compiled models of two runs folders on a noisy machine: many short passes, each
timing every module once in a fresh random order, and the new / old ratio taken per pass.

On a VM whose speed drifts by 1.5x within minutes, a long timing block can fall on a slow
moment, and the means of three seeds a side then move by more than the difference looked for.
Here each pass is a few seconds, both sides are timed within it in a random order (so neither
side is favoured by the drift), and the ratio of the two sides' means is taken per pass: a slow
moment scales both. The median ratio over passes, a bootstrap 95 % interval and how many passes
had the new side faster are printed, with each module's median over passes. Every
MODEL-STRATEGY-seedN.so under each folder is timed (`--strategy`, bcd by default), with
onnxruntime.

    python experiments/paired_retime.py $MODELS/squeezenet1_1.onnx \
        runs/old/squeezenet1_1 runs/new/squeezenet1_1 --passes 40
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from pathlib import Path

from bcd_core.bench import ONNXRUNTIME
from bcd_core.export import library_runner, onnxruntime_runner
from bcd_core.model_import import import_model, random_inputs
from bcd_core.timing import time_in_turns

BOOTSTRAP_DRAWS = 2000


def modules_under(folder: Path, strategy: str) -> dict[str, Path]:
    found = sorted(folder.rglob(f"*-{strategy}-seed*.so"))
    return {f"{folder.parent.name}/{folder.name}/{path.stem}": path for path in found}


def timed_passes(
    runners: dict[str, Callable[[], None]], passes: int, runs: int, rng: random.Random
) -> list[dict[str, float]]:
    """Per pass, each runner's median over `runs` calls, the runners in a fresh random order."""
    results = []
    for number in range(passes):
        names = list(runners)
        rng.shuffle(names)
        timings = time_in_turns({name: runners[name] for name in names}, runs=runs, passes=1)
        results.append({name: timing.median_ms for name, timing in timings.items()})
        if (number + 1) % 10 == 0:
            print(f"  {number + 1}/{passes} passes", flush=True)
    return results


def bootstrap_interval(values: list[float], rng: random.Random) -> tuple[float, float]:
    """A 95 % interval of the median of `values`, resampled."""
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP_DRAWS))
    return medians[int(0.025 * BOOTSTRAP_DRAWS)], medians[int(0.975 * BOOTSTRAP_DRAWS) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--passes", type=int, default=40)
    parser.add_argument("--runs", type=int, default=10, help="calls per module per pass")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strategy", default="bcd", help="time the MODEL-STRATEGY-seedN.so modules")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    imported = import_model(args.model)
    inputs = random_inputs(imported.inputs)
    old, new = modules_under(args.old, args.strategy), modules_under(args.new, args.strategy)
    if not old or not new:
        raise SystemExit(f"no *-{args.strategy}-seed*.so under {args.old if not old else args.new}")
    runners = {name: library_runner(path, inputs).run for name, path in {**old, **new}.items()}
    runners[ONNXRUNTIME] = onnxruntime_runner(imported.onnx_model, inputs).run
    print(f"{len(old)} old and {len(new)} new modules, {args.passes} passes of {args.runs} calls each", flush=True)
    results = timed_passes(runners, args.passes, args.runs, rng)
    for name in runners:
        per_pass = [result[name] for result in results]
        spread = f"passes {min(per_pass):.3f}-{max(per_pass):.3f}"
        print(f"{name:50} median {statistics.median(per_pass):9.3f} ms  ({spread})")
    ratios = [
        statistics.mean(result[name] for name in new) / statistics.mean(result[name] for name in old)
        for result in results
    ]
    low, high = bootstrap_interval(ratios, rng)
    faster = sum(1 for ratio in ratios if ratio < 1)
    print(
        f"new / old, mean of the modules per pass: median {statistics.median(ratios):.3f} "
        f"(95 % interval {low:.3f}-{high:.3f}); new faster in {faster} of {len(ratios)} passes"
    )


if __name__ == "__main__":
    main()
