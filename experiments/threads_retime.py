"""Compiled models as each side runs them: bench folders' modules, each on its own kernel threads.

    python experiments/threads_retime.py MODEL.onnx FOLDER=THREADS [FOLDER=THREADS ...] [--passes 8]

A process sizes TVM's thread pool once, so modules that ran on different thread counts (before
and after bcd_core/cores.py: TVM's default, one thread on a 2-vCPU VM, against every core) are
timed in separate processes: every pass starts one process per thread count, in a fresh random
order, and each times its folders' MODEL-STRATEGY-seedN.so modules and onnxruntime in turns
(bcd_core/timing.py, `--runs` calls each, a fresh random order), then the cache line's round trip
between CPU 0 and CPU 1 (experiments/core_distance.py). It prints, per folder and strategy, the
median over passes and seeds, and the passes' round trips. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ONE_PASS = """
import json, random, sys
from pathlib import Path
from bcd_core.bench import ONNXRUNTIME
from bcd_core.export import library_runner, onnxruntime_runner
from bcd_core.model_import import import_model, random_inputs
from bcd_core.timing import time_in_turns
from core_distance import round_trip_timer

model, runs, seed, paths = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
imported = import_model(model)
inputs = random_inputs(imported.inputs)
runners = {name: library_runner(path, inputs).run for name, path in paths.items()}
runners[ONNXRUNTIME] = onnxruntime_runner(imported.onnx_model, inputs).run
names = list(runners)
random.Random(seed).shuffle(names)
timings = time_in_turns({name: runners[name] for name in names}, runs=runs, passes=1)
result = {name: timing.median_ms for name, timing in timings.items()}
result["round trip ns"] = round_trip_timer()()
print(json.dumps(result))
"""


def modules_of(folder: Path) -> dict[str, str]:
    return {f"{folder}::{path.stem}": str(path) for path in sorted(folder.rglob("*-seed*.so"))}


def one_pass(model: Path, threads: int, paths: dict[str, str], runs: int, seed: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | {"TVM_NUM_THREADS": str(threads)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    output = subprocess.run(
        [sys.executable, "-c", ONE_PASS, str(model), str(runs), str(seed), json.dumps(paths)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("folders", nargs="+", help="FOLDER=THREADS")
    parser.add_argument("--passes", type=int, default=8)
    parser.add_argument("--runs", type=int, default=20, help="calls per module per pass")
    args = parser.parse_args()
    groups: dict[int, dict[str, str]] = defaultdict(dict)
    for spec in args.folders:
        folder, _, threads = spec.rpartition("=")
        groups[int(threads)] |= modules_of(Path(folder))
    rng = random.Random(0)
    medians: dict[str, list[float]] = defaultdict(list)
    for number in range(args.passes):
        for threads in rng.sample(list(groups), len(groups)):
            result = one_pass(args.model, threads, groups[threads], args.runs, rng.randrange(1 << 30))
            for name, value in result.items():
                key = name.rsplit("-seed", 1)[0] if "::" in name else name
                medians[f"{key} (process with kernels on {threads})"].append(value)
        print(f"  {number + 1}/{args.passes} passes", flush=True)
    print("| modules | median ms over passes and seeds | 10th-90th percentile |\n|---|---|---|")
    for name, values in sorted(medians.items()):
        ordered = sorted(values)
        low, high = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10 - 1]
        unit = "ns" if "round trip" in name else "ms"
        print(f"| {name} | {statistics.median(values):.3f} {unit} | {low:.3f}-{high:.3f} |")


if __name__ == "__main__":
    main()
