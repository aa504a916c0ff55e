"""Building candidates: the build function the workers run, and a builder whose worker
processes live across rounds.

`build_candidate` must stay importable cheaply: every builder worker process unpickles it.
The stock default imports all tensor intrinsics in each fresh worker (about 20 s on 2 cores),
which made most candidates time out; CPU targets do not need them.
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import local_builder
from tvm.support.popen_pool import MapResult, PopenPoolExecutor, StatusKind
from tvm.target import Target

# A worker is replaced after this many builds: MetaSchedule restarts its pool every round
# because Popen workers leak memory over many uses; a few dozen uses are harmless.
BUILDS_PER_WORKER = 64


def build_candidate(mod: tvm.IRModule, target: Target, _params: object = None) -> tvm.runtime.Module:
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if target.kind.name != "llvm":  # GPU schedules may use tensor-core intrinsics
        from bcd_core.tvm_speedups import load_tensor_intrinsics

        load_tensor_intrinsics(target)
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm.tirx.build(mod, target=target)


def _build_in_worker(args: tuple) -> str:
    return local_builder._worker_func(*args)


@derived_object
class PooledBuilder(ms.builder.PyBuilder):
    """MetaSchedule's LocalBuilder, except that its worker processes are kept between rounds.

    LocalBuilder starts a fresh pool for every batch; each worker imports TVM first (about
    1 s on 2 cores), most of a small round's wall time. A worker that times out or dies is
    restarted by the pool on its next build.
    """

    def __init__(self, max_workers: int, timeout_sec: float, f_build: Callable = build_candidate) -> None:
        super().__init__()
        self.max_workers = max_workers
        self.timeout_sec = timeout_sec
        self.f_build = f_build
        self._pool: PopenPoolExecutor | None = None

    def _workers(self) -> PopenPoolExecutor:
        if self._pool is None:
            self._pool = self._new_pool(BUILDS_PER_WORKER)
        return self._pool

    def _new_pool(self, uses: int | None) -> PopenPoolExecutor:
        return PopenPoolExecutor(max_workers=self.max_workers, timeout=self.timeout_sec, maximum_process_uses=uses)

    def build(self, build_inputs: list[ms.builder.BuilderInput]) -> list[ms.builder.BuilderResult]:
        jobs = [
            (self.f_build, None, item.mod, item.target, local_builder._serialize_params(item.params))
            for item in build_inputs
        ]
        outcomes = list(self._workers().map_with_error_catching(_build_in_worker, jobs))
        failed = [i for i, outcome in enumerate(outcomes) if outcome.status == StatusKind.EXCEPTION]
        if failed:
            # A long-lived worker's LLVM state can go bad, rarely ("Instruction does not dominate
            # all uses", then every later build of a task fails): start fresh workers, and build
            # what failed again in fresh processes, as LocalBuilder would. A candidate that
            # really cannot build fails twice.
            self.close()
            fresh = self._new_pool(None)
            try:
                retried = fresh.map_with_error_catching(_build_in_worker, [jobs[i] for i in failed])
                for i, outcome in zip(failed, retried):
                    outcomes[i] = outcome
            finally:
                fresh.shutdown(wait=True)
        return [self._result(outcome) for outcome in outcomes]

    def _result(self, outcome: MapResult) -> ms.builder.BuilderResult:
        if outcome.status == StatusKind.COMPLETE:
            return ms.builder.BuilderResult(outcome.value, None)
        if outcome.status == StatusKind.TIMEOUT:
            return ms.builder.BuilderResult(None, f"LocalBuilder: Timeout, killed after {self.timeout_sec} seconds")
        return ms.builder.BuilderResult(None, f"LocalBuilder: An exception occurred\n{outcome.value}")

    def close(self) -> None:
        """Stop the workers (the session is over)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
