"""Speedup at equal latency for every (baseline run, BCD run) pair of several `bcd bench` runs.

One bench run pairs one baseline with one BCD tune, and on a shared 2-core virtual machine
identical baseline runs end 2 % apart and reach their final estimate up to 25 % apart in
time. Pairing each BCD timeline with every baseline timeline of the same model, budget and
baseline code shows how much of a single pair's speedup is that noise.

    python docs/cross_pairs.py --baseline docs/bench/squeezenet-32*/squeezenet1_1-bench.json \\
        --bcd docs/bench/squeezenet-32d/squeezenet1_1-bench.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bcd_core.bench import speedup_at_equal_latency


def timeline(path: Path, strategy: str) -> list[tuple[float, float]]:
    report = json.loads(path.read_text())
    return [(float(t), float(latency)) for t, latency in report["results"][strategy]["timeline"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", nargs="+", type=Path, required=True, help="bench JSON files")
    parser.add_argument("--bcd", nargs="+", type=Path, required=True, help="bench JSON files")
    args = parser.parse_args()
    speedups = []
    for base in args.baseline:
        baseline = timeline(base, "metaschedule")
        cells = []
        for other in args.bcd:
            final, t_b, t_d, speedup = speedup_at_equal_latency(baseline, timeline(other, "bcd"))
            cells.append(f"{other.parent.name}: {speedup:.2f}x" if speedup else f"{other.parent.name}: never")
            speedups.append(speedup or 0.0)
        print(f"baseline {base.parent.name} (L_b {final * 1e3:.3f} ms at {t_b:.0f} s): " + ", ".join(cells))
    reached = [s for s in speedups if s > 0]
    print(
        f"{len(speedups)} pairs: median {statistics.median(speedups):.2f}x, "
        f"range {min(reached, default=0):.2f}-{max(reached, default=0):.2f}x where reached, "
        f"{sum(1 for s in speedups if s >= 2)} at 2x or more, {len(speedups) - len(reached)} never reached"
    )


if __name__ == "__main__":
    main()
