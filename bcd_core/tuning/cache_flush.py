"""Timing a CPU candidate as it runs inside a model: its weights and output cold
(`--cpu-cache flushed`, a research option; the default times warm, as stock MetaSchedule).

MetaSchedule's runner (as stock `tune_relax` sets it up) calls a candidate again and again for
`min_repeat_ms`, so from the second call on its weights sit in the cache. Inside a model they
do not: the kernels before it evicted them. Flushed, each run is one call after TVM's
`cache_flush_cpu_non_first_arg` (every argument but the first, the activation the kernel
before produced, leaves the caches), with enough runs to fill `min_repeat_ms`. Measured at 32
trials per task (docs/benchmarks.md, "Timing candidates with cold caches"), the estimates then
match the compiled models (measured / estimated 0.95-1.04 on MobileNetV2 and SqueezeNet, against
1.04-1.29 warm; 0.89-0.92 on transformer_encoder_l2, whose weights stay in cache), but the
compiled models were no faster and each trial took 3-9 % longer, so it is not the default.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from tvm.s_tir import meta_schedule as ms

FLUSH_BEFORE_EACH_RUN = "cache_flush_cpu_non_first_arg"
PROBE_RUNS = 3
MIN_RUNS = 5  # heavy kernels: a few runs average out a preempted one
MAX_RUNS = 100  # microsecond kernels: more runs would only add flushes


def runs_to_fill(run_s: float, min_repeat_ms: int) -> int:
    """How many flushed runs of `run_s` seconds add up to `min_repeat_ms`, within bounds."""
    if run_s <= 0:
        return MAX_RUNS
    return max(MIN_RUNS, min(MAX_RUNS, math.ceil(min_repeat_ms / 1e3 / run_s)))


def flushed_costs(rt_mod: Any, device: Any, config: ms.runner.EvaluatorConfig, args: list) -> list[float]:
    """Seconds of each flushed run of one argument set. TVM's evaluator flushes once per
    `repeat`, before `number` calls that grow to `min_repeat_ms`: so every repeat is a single
    call here, and the repeat count is chosen from a short probe instead."""

    def evaluator(runs: int):
        return rt_mod.time_evaluator(
            rt_mod.entry_name, device, number=1, repeat=runs, min_repeat_ms=0, f_preproc=FLUSH_BEFORE_EACH_RUN
        )

    device.sync()
    probe = evaluator(PROBE_RUNS)(*args).results
    runs = runs_to_fill(statistics.median(probe), config.min_repeat_ms)
    return [float(cost) for cost in evaluator(runs)(*args).results]


def local_flushed_run_evaluator(
    rt_mod: Any, device: Any, config: ms.runner.EvaluatorConfig, repeated_args: list
) -> list[float]:
    """LocalRunner's `f_run_evaluator`."""
    return [cost for args in repeated_args for cost in flushed_costs(rt_mod, device, config, args)]


def remote_flushed_run_evaluator(
    _session: Any, rt_mod: Any, device: Any, config: ms.runner.EvaluatorConfig, repeated_args: list
) -> list[float]:
    """RPCRunner's `f_run_evaluator` (it passes the RPC session first)."""
    return local_flushed_run_evaluator(rt_mod, device, config, repeated_args)
