"""How candidates are timed on a CPU (bcd_core/tuning/cache_flush.py); a tune's trials show it
in tests/bcd_core/test_tuning.py."""

from __future__ import annotations

from tvm.target import Target

from bcd_core.target import host_target
from bcd_core.tuning.cache_flush import MAX_RUNS, MIN_RUNS, runs_to_fill
from bcd_core.tuning.measure import evaluator_config, times_flushed
from bcd_core.tuning.settings import TuneSettings


def test_enough_flushed_runs_to_fill_the_minimum_time_within_bounds() -> None:
    assert runs_to_fill(1e-3, 20) == 20  # 20 runs of 1 ms fill 20 ms
    assert runs_to_fill(0.5, 20) == MIN_RUNS  # a heavy kernel still runs a few times
    assert runs_to_fill(1e-7, 20) == MAX_RUNS
    assert runs_to_fill(0.0, 20) == MAX_RUNS


def test_only_cpu_candidates_are_flushed_and_only_on_request() -> None:
    cpu, gpu = host_target(), Target({"kind": "cuda", "arch": "sm_90"})
    assert times_flushed(TuneSettings(cpu_cache="flushed"), cpu)
    assert not times_flushed(TuneSettings(), cpu)
    assert not times_flushed(TuneSettings(cpu_cache="flushed"), gpu)
    flushed, warm = evaluator_config(TuneSettings(), True), evaluator_config(TuneSettings(), False)
    assert flushed.enable_cpu_cache_flush and (flushed.number, flushed.repeat) == (1, 1)
    assert not warm.enable_cpu_cache_flush and warm.number == TuneSettings().runner_number
