"""Where candidates are built and timed, shared by every strategy: this project's pooled
builder, MetaSchedule's local runner with in-bounds arguments, or TVM's RPC runner behind a
tracker. Candidates are timed as stock MetaSchedule times them: calls repeated with warm caches."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import closing, contextmanager

from tvm.ir.utils import derived_object
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


@derived_object
class StartingRunner(ms.runner.PyRunner):
    """MetaSchedule's local runner, made while the first round is searched. Its constructor
    waits for its worker process to import TVM (3 s on 2 cores, before every tune's first
    search); here a thread makes it, and the first batch to run waits for it, or gets the error
    that made it fail."""

    def __init__(self, make: Callable[[], ms.runner.Runner]) -> None:
        super().__init__()
        self._made: Future = Future()
        threading.Thread(target=self._make, args=(make,), name="bcd-runner-start", daemon=True).start()

    def _make(self, make: Callable[[], ms.runner.Runner]) -> None:
        try:
            self._made.set_result(make())
        except BaseException as error:  # noqa: BLE001 - handed to the first batch
            self._made.set_exception(error)

    def run(self, runner_inputs: list[ms.runner.RunnerInput]) -> list[ms.runner.RunnerFuture]:
        return self._made.result().run(runner_inputs)


def make_runner(settings: TuneSettings, target: Target) -> ms.runner.Runner:
    if settings.runner == "rpc":  # builds stay here; modules are timed on the tracker's servers
        return make_rpc_runner(settings, evaluator_config(settings))
    return StartingRunner(
        lambda: ms.runner.LocalRunner(
            timeout_sec=settings.runner_timeout_s,
            evaluator_config=evaluator_config(settings),
            f_alloc_argument=local_arguments,
        )
    )


def check_runner(settings: TuneSettings) -> None:
    """Fail now, with what to do, if candidates could not be measured where asked."""
    if settings.runner == "rpc":
        check_tracker(settings)


class Measurers:
    """The builder and runner a session measures with, made at its first use. One tune's
    sessions (its layout probes, then the tune) share one `Measurers(kept=True)`, closed by
    whoever made it: a session that started worker processes of its own would wait for each to
    import TVM (2-4 s on 2 cores) before its first build, on the tune's clock. A session's own
    (`kept=False`) is closed when the session's search ends."""

    def __init__(self, kept: bool = False) -> None:
        self.kept = kept
        self._builder: PooledBuilder | None = None
        self._runner: ms.runner.Runner | None = None

    @contextmanager
    def lent(self, settings: TuneSettings, target: Target) -> Iterator[tuple[PooledBuilder, ms.runner.Runner]]:
        if self._builder is None:
            self._builder = make_builder(settings, target)
        if self._runner is None:
            self._runner = make_runner(settings, target)
        try:
            yield self._builder, self._runner
        finally:
            if not self.kept:
                self.close()

    def close(self) -> None:
        """Stop the builder's workers; the runner's worker ends once the runner is dropped."""
        if self._builder is not None:
            self._builder.close()
        self._builder = self._runner = None


@contextmanager
def tune_measurers(given: Measurers | None) -> Iterator[Measurers]:
    """`given` (a layout probe's: its tune's), else the tune's own for its probes and itself,
    closed when the tune ends."""
    if given is not None:
        yield given
        return
    with closing(Measurers(kept=True)) as own:
        yield own
