"""The one timing routine: blocks that take turns, each after its own warm-up; median and IQR."""

from __future__ import annotations

import time

import pytest

from bcd_core import timing
from bcd_core.timing import Timing, time_in_turns, time_runs


def test_quartiles_and_spread() -> None:
    result = Timing.of([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (result.q1_ms, result.median_ms, result.q3_ms, result.runs) == (2.0, 3.0, 4.0, 5)
    assert result.spread == pytest.approx(2 / 3)
    assert "median 3.000 ms over 5 runs" in result.describe()
    assert Timing.of([2.5]) == Timing(2.5, 2.5, 2.5, 1)


def test_blocks_take_turns_and_each_is_warmed_up_first(monkeypatch) -> None:
    monkeypatch.setattr(timing, "SETTLE_S", 0.0)
    calls: list[str] = []
    result = time_in_turns({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, runs=7, warmup_s=0)
    assert result["a"].runs == result["b"].runs == 7
    blocks = [calls[0]]
    for name in calls[1:]:
        if name != blocks[-1]:
            blocks.append(name)
    assert blocks == ["a", "b"] * timing.PASSES  # one block each per pass, in turns
    per_block = timing.MIN_WARMUP_RUNS + 7 // timing.PASSES
    assert per_block <= calls[: calls.index("b")].count("a") <= per_block + 1


def test_a_known_duration_reads_as_it_is() -> None:
    result = time_runs(lambda: time.sleep(0.004), runs=6, warmup_s=0)
    assert 4.0 <= result.median_ms < 8.0
    assert result.q1_ms <= result.median_ms <= result.q3_ms
