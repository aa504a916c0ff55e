"""Where candidates are built and timed, shared by every strategy: this project's pooled
builder, MetaSchedule's local runner with in-bounds arguments, or TVM's RPC runner behind a
tracker. Candidates are timed as stock MetaSchedule times them: calls repeated with warm caches."""

from __future__ import annotations

from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.target import host_core_count, is_gpu
from bcd_core.tuning.measure.arguments import local_arguments
from bcd_core.tuning.measure.builder import PooledBuilder
from bcd_core.tuning.measure.remote import check_tracker, make_rpc_runner
from bcd_core.tuning.settings import TuneSettings


def make_builder(settings: TuneSettings, target: Target) -> PooledBuilder:
    """Close it when the session ends (its worker processes outlive a round)."""
    gpu = is_gpu(target)
    limit = settings.builder_timeout_for(gpu)
    return PooledBuilder(max_workers=host_core_count(), timeout_sec=limit, stop_slow_builds=not gpu)


def evaluator_config(settings: TuneSettings) -> ms.runner.EvaluatorConfig:
    return ms.runner.EvaluatorConfig(
        number=settings.runner_number,
        repeat=settings.runner_repeat,
        min_repeat_ms=settings.runner_min_repeat_ms,
        enable_cpu_cache_flush=False,
    )


def make_runner(settings: TuneSettings, target: Target) -> ms.runner.Runner:
    if settings.runner == "rpc":  # builds stay here; modules are timed on the tracker's servers
        return make_rpc_runner(settings, evaluator_config(settings))
    return ms.runner.LocalRunner(
        timeout_sec=settings.runner_timeout_s,
        evaluator_config=evaluator_config(settings),
        f_alloc_argument=local_arguments,
    )


def check_runner(settings: TuneSettings) -> None:
    """Fail now, with what to do, if candidates could not be measured where asked."""
    if settings.runner == "rpc":
        check_tracker(settings)
