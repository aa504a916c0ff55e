"""How counts, latencies and durations read in the CLI, GUI and reports."""

from __future__ import annotations

from bcd_core.formatting import counted, format_duration, format_latency


def test_a_count_of_one_reads_singular() -> None:
    assert counted(1, "task") == "1 task"
    assert counted(0, "task") == "0 tasks"
    assert counted(3, "earlier tune") == "3 earlier tunes"
    assert counted(2, "child", "children") == "2 children"


def test_latencies_and_durations_read_in_their_units() -> None:
    assert format_latency(None) == "n/a"
    assert format_latency(2.5e-3) == "2.500 ms"
    assert format_latency(44.4e-6) == "44.4 us"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(65) == "01:05"
