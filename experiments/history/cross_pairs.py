"""Speedup at equal latency for every (baseline run, BCD run) pair of several `bcd bench` runs.

One bench run pairs one baseline with one BCD tune, and on a shared 2-core virtual machine
identical baseline runs end 2 % apart and reach their final estimate up to 25 % apart in
time. Pairing each BCD timeline with every baseline timeline of the same model, budget and
baseline code shows how much of a single pair's speedup is that noise.

    python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32*/squeezenet1_1-bench.json \\
        --bcd docs/bench/squeezenet-32d/squeezenet1_1-bench.json --plot pairs.png

`--plot` draws every timeline in one figure (baselines grey, BCD blue), with the mean of
each strategy's estimates at each time (where every run of it had an estimate).
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
    parser.add_argument("--plot", type=Path, help="also draw every timeline into this PNG")
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
    baseline_runs = [timeline(f, "metaschedule") for f in args.baseline]
    bcd_runs = [timeline(f, "bcd") for f in args.bcd]
    grid = time_grid(baseline_runs + bcd_runs)
    mean_baseline, mean_bcd = mean_curve(baseline_runs, grid), mean_curve(bcd_runs, grid)
    final, t_b, t_d, speedup = speedup_at_equal_latency(mean_baseline, mean_bcd)
    reached = f"at {t_d:.0f} s, {speedup:.2f}x" if speedup else "never"
    print(f"mean curves: baseline's final {final * 1e3:.3f} ms at {t_b:.0f} s; BCD's mean reached it {reached}")
    if args.plot:
        plot_runs(args.baseline, args.bcd, args.plot)


def estimate_at(steps: list[tuple[float, float]], when: float) -> float | None:
    """The best estimate a timeline had reached by `when` (None before its first)."""
    reached = [latency for t, latency in steps if t <= when]
    return min(reached) if reached else None


def time_grid(runs: list[list[tuple[float, float]]], points: int = 200) -> list[float]:
    end = max(t for steps in runs for t, _ in steps)
    return [end * i / points for i in range(points + 1)]


def mean_curve(runs: list[list[tuple[float, float]]], grid: list[float]) -> list[tuple[float, float]]:
    """The mean of the runs' best estimates at each grid time where every run had one (seconds, s)."""
    values = [(t, [estimate_at(steps, t) for steps in runs]) for t in grid]
    return [(t, statistics.fmean(v)) for t, v in values if all(x is not None for x in v)]


def plot_runs(baselines: list[Path], bcds: list[Path], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5), dpi=110)
    groups = (("metaschedule", baselines, "#7f7f7f", "stock MetaSchedule"), ("bcd", bcds, "#1f77b4", "BCD"))
    grid = time_grid([timeline(f, strategy) for strategy, files, _, _ in groups for f in files])
    for strategy, files, color, label in groups:
        runs = [timeline(f, strategy) for f in files]
        for steps in runs:
            xs, ys = [t / 60 for t, _ in steps], [latency * 1e3 for _, latency in steps]
            axis.step(xs, ys, where="post", color=color, linewidth=0.8, alpha=0.45)
        mean = mean_curve(runs, grid)
        axis.plot(
            [t / 60 for t, _ in mean],
            [v * 1e3 for _, v in mean],
            color=color,
            linewidth=2.4,
            label=f"{label}: mean of {len(runs)} runs",
        )
    report = json.loads(baselines[0].read_text())
    axis.set_title(
        f"{Path(report['model']).name}, {report['trials_per_task']} trials/task: every run, and the mean "
        "(after its end a run keeps its final estimate)",
        fontsize=9,
    )
    axis.set_yscale("log")
    axis.set_xlabel("tuning time (min, including import and task extraction)")
    axis.set_ylabel("estimated model latency (ms)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


if __name__ == "__main__":
    main()
