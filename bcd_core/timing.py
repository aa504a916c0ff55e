"""One way to time a model, for every latency bcd prints: `bcd check`, `bcd export`, `bcd bench`
(its probes and its measured models), the dashboard's onnxruntime reference and the report.

Each callable gets its own warm-up (long enough for onnxruntime's thread pool and TVM's VM to
settle), then is timed in blocks; when several are compared, their blocks take turns over
`passes`, so a slow moment of the machine falls on all of them, and a short pause before each
block lets the previous engine's spinning worker threads go idle instead of competing with the
next one for the cores. The median and the interquartile range are reported.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

RUNS = 50
PASSES = 3
WARMUP_S = 0.5  # onnxruntime's and TVM's thread pools settle within it on the shared models
MIN_WARMUP_RUNS = 3
SETTLE_S = 0.1  # spinning worker threads of the engine timed before go to sleep meanwhile


@dataclass(frozen=True)
class Timing:
    """Milliseconds per run: median and quartiles."""

    median_ms: float
    q1_ms: float
    q3_ms: float
    runs: int

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median."""
        return (self.q3_ms - self.q1_ms) / self.median_ms if self.median_ms > 0 else 0.0

    def describe(self) -> str:
        return f"median {self.median_ms:.3f} ms over {self.runs} runs (IQR {self.spread:.1%})"

    @classmethod
    def of(cls, times_ms: list[float]) -> Timing:
        if len(times_ms) < 2:
            only = times_ms[0]
            return cls(only, only, only, 1)
        q1, median, q3 = statistics.quantiles(times_ms, n=4, method="inclusive")
        return cls(median, q1, q3, len(times_ms))


def _warm_up(run: Callable[[], None], warmup_s: float) -> None:
    start, done = time.perf_counter(), 0
    while done < MIN_WARMUP_RUNS or time.perf_counter() - start < warmup_s:
        run()
        done += 1


def _timed_block(run: Callable[[], None], count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return times


def time_in_turns(
    runs_by_name: Mapping[str, Callable[[], None]],
    runs: int = RUNS,
    passes: int = PASSES,
    warmup_s: float = WARMUP_S,
) -> dict[str, Timing]:
    """Time each callable `runs` times (at least one per pass), in blocks that take turns.
    A callable must return only once its work is done (a GPU module synchronizes)."""
    passes = max(1, min(passes, runs))
    per_pass = [runs // passes + (1 if p < runs % passes else 0) for p in range(passes)]
    times: dict[str, list[float]] = {name: [] for name in runs_by_name}
    for count in per_pass:
        for name, run in runs_by_name.items():
            time.sleep(SETTLE_S)
            _warm_up(run, warmup_s)
            times[name] += _timed_block(run, max(1, count))
    return {name: Timing.of(values) for name, values in times.items()}


def time_runs(run: Callable[[], None], runs: int = RUNS, passes: int = PASSES, warmup_s: float = WARMUP_S) -> Timing:
    """`time_in_turns` for one callable."""
    return time_in_turns({"only": run}, runs, passes, warmup_s)["only"]
