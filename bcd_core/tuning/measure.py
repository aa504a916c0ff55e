"""Builder and runner set-up shared by every strategy."""

from __future__ import annotations

from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.records.timing import FLUSHED, timing_for
from bcd_core.target import host_core_count, is_gpu, target_key
from bcd_core.tuning.arguments import local_arguments
from bcd_core.tuning.builder import PooledBuilder
from bcd_core.tuning.cache_flush import local_flushed_run_evaluator
from bcd_core.tuning.remote import check_tracker, make_rpc_runner
from bcd_core.tuning.settings import TuneSettings


def make_builder(settings: TuneSettings, target: Target) -> PooledBuilder:
    """Close it when the session ends (its worker processes outlive a round)."""
    gpu = is_gpu(target)
    limit = settings.builder_timeout_for(gpu)
    return PooledBuilder(max_workers=host_core_count(), timeout_sec=limit, stop_slow_builds=not gpu)


def times_flushed(settings: TuneSettings, target: Target) -> bool:
    """Whether candidates are timed with cold caches (cache_flush.py): CPUs only."""
    return timing_for(settings.cpu_cache, target_key(target)) == FLUSHED


def evaluator_config(settings: TuneSettings, flushed: bool) -> ms.runner.EvaluatorConfig:
    # Flushed: one call per run, the run count filling min_repeat_ms (cache_flush.py).
    return ms.runner.EvaluatorConfig(
        number=1 if flushed else settings.runner_number,
        repeat=1 if flushed else settings.runner_repeat,
        min_repeat_ms=settings.runner_min_repeat_ms,
        enable_cpu_cache_flush=flushed,
    )


def make_runner(settings: TuneSettings, target: Target) -> ms.runner.Runner:
    flushed = times_flushed(settings, target)
    if settings.runner == "rpc":  # builds stay here; modules are timed on the tracker's servers
        return make_rpc_runner(settings, evaluator_config(settings, flushed))
    return ms.runner.LocalRunner(
        timeout_sec=settings.runner_timeout_s,
        evaluator_config=evaluator_config(settings, flushed),
        f_alloc_argument=local_arguments,
        f_run_evaluator=local_flushed_run_evaluator if flushed else None,
    )


def check_runner(settings: TuneSettings) -> None:
    """Fail now, with what to do, if candidates could not be measured where asked."""
    if settings.runner == "rpc":
        check_tracker(settings)
