"""Building candidates: the build function the workers run, and a builder whose worker
processes live across rounds.

`build_candidate` must stay importable cheaply: every builder worker process unpickles it.
The stock default imports all tensor intrinsics in each fresh worker (about 20 s on 2 cores),
which made most candidates time out; CPU targets do not need them.

A round waits for its slowest build. On a CPU, a candidate whose build takes many times longer
than its task's other candidates' is mostly LLVM unrolling a pathological loop nest (vector
loops of an odd width wider than the registers), and such programs are slow ones, far from
the best. So once a task has built a few candidates, a build is stopped at SLOW_BUILD_FACTOR
times its median build, and never before SLOW_BUILD_FLOOR_S (BuildTimes); the best programs of
tuned models build well inside that limit.
"""

from __future__ import annotations

import statistics
import time
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

# Slow builds (module docstring): a build longer than this many times its task's median is
# stopped, but never before SLOW_BUILD_FLOOR_S, and only once the task has MIN_BUILDS_SEEN
# successful builds (the median of the last RECENT_BUILDS).
SLOW_BUILD_FACTOR = 10.0
SLOW_BUILD_FLOOR_S = 3.0
MIN_BUILDS_SEEN = 8
RECENT_BUILDS = 64


def build_candidate(mod: tvm.IRModule, target: Target, _params: object = None) -> tvm.runtime.Module:
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if target.kind.name != "llvm":  # GPU schedules may use tensor-core intrinsics
        from bcd_core.tvm_speedups import load_tensor_intrinsics

        load_tensor_intrinsics(target)
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm.tirx.build(mod, target=target)


def _build_in_worker(args: tuple) -> tuple[str, float]:
    """(artifact path, seconds the build took), timed in the worker."""
    started = time.perf_counter()
    path = local_builder._worker_func(*args)
    return path, time.perf_counter() - started


def build_kind(mod: tvm.IRModule) -> str:
    """What a task's candidates share: their function's argument shapes and types (each
    parameter's buffer type)."""
    func = next(iter(mod.functions.values()))
    types = [param.ty for param in func.params]
    return repr([(tuple(str(d) for d in ty.shape), str(ty.dtype)) for ty in types if hasattr(ty, "shape")])


class BuildTimes:
    """Seconds of the successful builds of each kind of candidate, and the time limit a
    build of that kind gets (module docstring)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.seen: dict[str, list[float]] = {}

    def limit_for(self, kinds: set[str]) -> float:
        limits = [self._limit(kind) for kind in kinds]
        return max(limits) if limits else self.limit_s

    def _limit(self, kind: str) -> float:
        times = self.seen.get(kind, [])
        if len(times) < MIN_BUILDS_SEEN:
            return self.limit_s
        usual = statistics.median(times[-RECENT_BUILDS:])
        return min(self.limit_s, max(SLOW_BUILD_FLOOR_S, SLOW_BUILD_FACTOR * usual))

    def record(self, kind: str, seconds: float) -> None:
        self.seen.setdefault(kind, []).append(seconds)


@derived_object
class PooledBuilder(ms.builder.PyBuilder):
    """MetaSchedule's LocalBuilder, except that its worker processes are kept between rounds.

    LocalBuilder starts a fresh pool for every batch; each worker imports TVM first (about
    1 s on 2 cores), most of a small round's wall time. A worker that times out or dies is
    restarted by the pool on its next build.
    """

    def __init__(
        self, max_workers: int, timeout_sec: float, f_build: Callable = build_candidate, stop_slow_builds: bool = False
    ) -> None:
        super().__init__()
        self.max_workers = max_workers
        self.timeout_sec = timeout_sec
        self.f_build = f_build
        self._pool: PopenPoolExecutor | None = None
        # CPU targets only: a GPU build's time is mostly NVRTC's and says little of the kernel.
        self.build_times = BuildTimes(timeout_sec) if stop_slow_builds else None

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
        kinds = [build_kind(item.mod) for item in build_inputs] if self.build_times else []
        limit = self.build_times.limit_for(set(kinds)) if self.build_times else self.timeout_sec
        pool = self._workers()
        pool._timeout = limit  # read as each job is sent; this batch's jobs are all sent in map
        outcomes = list(pool.map_with_error_catching(_build_in_worker, jobs))
        failed = [i for i, outcome in enumerate(outcomes) if outcome.status == StatusKind.EXCEPTION]
        if failed:
            # A long-lived worker's LLVM state can go bad, rarely ("Instruction does not dominate
            # all uses", then every later build of a task fails): start fresh workers, and build
            # what failed again in fresh processes, as LocalBuilder would. A candidate that
            # really cannot build fails twice.
            self.close()
            fresh = self._new_pool(None)
            fresh._timeout = limit
            try:
                retried = fresh.map_with_error_catching(_build_in_worker, [jobs[i] for i in failed])
                for i, outcome in zip(failed, retried):
                    outcomes[i] = outcome
            finally:
                fresh.shutdown(wait=True)
        if self.build_times:
            for kind, outcome in zip(kinds, outcomes):
                if outcome.status == StatusKind.COMPLETE:
                    self.build_times.record(kind, outcome.value[1])
        return [self._result(outcome, limit) for outcome in outcomes]

    def _result(self, outcome: MapResult, limit: float) -> ms.builder.BuilderResult:
        if outcome.status == StatusKind.COMPLETE:
            return ms.builder.BuilderResult(outcome.value[0], None)
        if outcome.status == StatusKind.TIMEOUT:
            return ms.builder.BuilderResult(None, f"LocalBuilder: Timeout, killed after {limit:.3g} seconds")
        return ms.builder.BuilderResult(None, f"LocalBuilder: An exception occurred\n{outcome.value}")

    def close(self) -> None:
        """Stop the workers (the session is over)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
