"""The pooled builder: workers live across rounds, a worker gone bad is replaced."""

from __future__ import annotations

import os
import time

import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms

from bcd_core.target import host_target
from bcd_core.tuning.measure import builder as builder_module
from bcd_core.tuning.measure.builder import PooledBuilder, build_candidate
from bcd_core.tuning.measure.setup import make_builder
from bcd_core.tuning.settings import TuneSettings


def add_one() -> tvm.IRModule:
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] + 1.0, name="b")
    return tvm.IRModule({"main": te.create_prim_func([a, b])})


def worker_pids(builder: PooledBuilder) -> set[int]:
    pool = builder._pool
    assert pool is not None
    return {worker._proc.pid for worker in pool._worker_map.values() if worker._proc is not None}


def test_workers_outlive_a_round_and_run_the_build() -> None:
    builder = PooledBuilder(max_workers=1, timeout_sec=30.0)
    inputs = [ms.builder.BuilderInput(add_one(), host_target())]
    try:
        first = builder.build(inputs)
        pids = worker_pids(builder)
        second = builder.build(inputs)
        assert worker_pids(builder) == pids  # the same process built both rounds
    finally:
        builder.close()
    for result in first + second:
        assert result.error_msg is None
        assert os.path.exists(result.artifact_path)
        assert tvm.runtime.load_module(result.artifact_path)["main"] is not None


def test_a_build_that_fails_in_a_used_worker_is_built_again_in_a_fresh_one() -> None:
    def fails_after_first_use(
        mod: tvm.IRModule, target: tvm.target.Target, params: object = None
    ) -> tvm.runtime.Module:
        """Builds once per process, then raises: a worker whose state went bad (defined
        here, so that the workers get it by value)."""
        if os.environ.get("BCD_TEST_WORKER_USED"):
            raise RuntimeError("this worker went bad")
        os.environ["BCD_TEST_WORKER_USED"] = "1"
        return build_candidate(mod, target, params)

    builder = PooledBuilder(max_workers=1, timeout_sec=30.0, f_build=fails_after_first_use)
    inputs = [ms.builder.BuilderInput(add_one(), host_target())]
    try:
        assert builder.build(inputs)[0].error_msg is None
        retried = builder.build(inputs)[0]  # fails in the used worker, then builds in a fresh one
        assert retried.error_msg is None
        assert builder._pool is None  # the bad workers are gone; the next round starts new ones
        assert builder.build(inputs)[0].error_msg is None
    finally:
        builder.close()


def test_a_build_that_fails_everywhere_reports_the_error() -> None:
    def always_fails(mod: tvm.IRModule, target: tvm.target.Target, params: object = None) -> tvm.runtime.Module:
        raise RuntimeError("no such instruction")

    builder = PooledBuilder(max_workers=1, timeout_sec=30.0, f_build=always_fails)
    try:
        result = builder.build([ms.builder.BuilderInput(add_one(), host_target())])[0]
    finally:
        builder.close()
    assert result.artifact_path is None
    assert "An exception occurred" in result.error_msg and "no such instruction" in result.error_msg


def add_two() -> tvm.IRModule:
    """Another program of add_one's kind (the same arguments)."""
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] + 2.0, name="b")
    return tvm.IRModule({"main": te.create_prim_func([a, b])})


def test_a_build_far_slower_than_its_kinds_usual_ones_is_stopped_early(monkeypatch) -> None:
    def slow_for_add_two(mod: tvm.IRModule, target: tvm.target.Target, params: object = None) -> tvm.runtime.Module:
        import time

        if "2.0" in mod.script():
            time.sleep(20)  # a pathological build
        return build_candidate(mod, target, params)

    monkeypatch.setattr(builder_module, "SLOW_BUILD_FLOOR_S", 1.0)
    builder = PooledBuilder(max_workers=1, timeout_sec=30.0, f_build=slow_for_add_two, stop_slow_builds=True)
    usual = [ms.builder.BuilderInput(add_one(), host_target())] * builder_module.MIN_BUILDS_SEEN
    try:
        assert all(result.error_msg is None for result in builder.build(usual[:-1]))
        # One build short of what it takes to know the kind: the slow one gets the full 30 s.
        assert builder.build_times.limit_for({builder_module.build_kind(add_one())}) == 30.0
        assert builder.build(usual[-1:])[0].error_msg is None
        started = time.perf_counter()
        slow = builder.build([ms.builder.BuilderInput(add_two(), host_target())])[0]
        waited = time.perf_counter() - started
    finally:
        builder.close()
    assert slow.artifact_path is None and "Timeout, killed after 1 seconds" in slow.error_msg
    assert waited < 10


def test_a_kind_is_its_tasks_arguments() -> None:
    """A task whose builds take seconds (Winograd's unrolled transforms) is not held to the
    limit that the fast builds of other tasks set."""
    wide = te.placeholder((128,), name="a")
    other = tvm.IRModule({"main": te.create_prim_func([wide, te.compute((128,), lambda i: wide[i] + 1.0)])})
    kind = builder_module.build_kind(add_one())
    assert kind == builder_module.build_kind(add_two()) and "64" in kind
    assert builder_module.build_kind(other) != kind
    times = builder_module.BuildTimes(30.0)
    for _ in range(builder_module.MIN_BUILDS_SEEN):
        times.record(kind, 0.1)
    assert times.limit_for({kind}) == builder_module.SLOW_BUILD_FLOOR_S
    assert times.limit_for({builder_module.build_kind(other)}) == 30.0


def test_only_cpu_builds_are_stopped_early() -> None:
    """A GPU build's time is mostly the CUDA compiler's: it keeps its fixed timeout."""
    cpu = make_builder(TuneSettings(), host_target())
    gpu = make_builder(TuneSettings(), tvm.target.Target({"kind": "cuda", "arch": "sm_90"}))
    assert cpu.build_times is not None and gpu.build_times is None
    assert gpu.timeout_sec > cpu.timeout_sec
