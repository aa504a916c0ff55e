"""Stopping rules: a time budget that a resumed session continues, a plateau, a target latency
and onnxruntime's latency met by the compiled model as timed; each stop says why, in the store,
the CLI and the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bcd_core.records.states import SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.report import write_report
from bcd_core.session_view import eta_by_clock, session_status_text
from bcd_core.target import host_target
from bcd_core.tuning.milestones import GOAL_CHECK
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.stopping import plateau_reason, recent_batch_s
from bcd_core.tuning.tune import run_session

MANY = dict(trials_per_task=200, trials_per_round=4)  # more trials than any of these tunes spends


def largest_gap(store: RecordStore, session_id: int) -> float:
    """The longest time between two recorded batches (or before the first): a batch in flight."""
    times = [0.0] + [row["elapsed_s"] for row in store.timeline(session_id)]
    return max(later - earlier for earlier, later in zip(times, times[1:]))


def test_a_plateau_is_an_improvement_below_the_share_over_the_window() -> None:
    history = [(10.0, 4.0), (40.0, 3.0), (70.0, 2.97), (100.0, 2.96)]
    assert plateau_reason(history, 100.0, 1.0, 60.0) is None  # 3.0 -> 2.96 over the last minute: 1.3 %
    assert plateau_reason(history, 100.0, 2.0, 60.0).startswith("plateau: the estimate improved 1.3 %")
    assert plateau_reason(history, 100.0, 1.0, 90.0) is None  # since 4.0: 26 %
    assert plateau_reason(history, 100.0, 50.0, 90.0) is not None
    assert plateau_reason(history, 100.0, 50.0, 95.0) is None  # no estimate that long ago yet
    assert plateau_reason(history, 100.0, 0.0, 60.0) is None  # off


def test_the_clock_ends_the_eta_sooner_than_the_trials_do() -> None:
    assert eta_by_clock(100.0, 50.0, None) == 100.0
    assert eta_by_clock(100.0, 50.0, 90.0, offset_s=10.0) == 30.0
    assert eta_by_clock(10.0, 50.0, 90.0) == 10.0
    assert eta_by_clock(None, 95.0, 90.0) == 0.0


def test_a_session_says_why_it_ended_unless_its_trials_ran_out() -> None:
    assert session_status_text({"status": "stopped", "stop_reason": "stopped by the user"}) == "stopped by the user"
    assert session_status_text({"status": "stopped", "stop_reason": "plateau: x"}) == "stopped: plateau: x"
    assert session_status_text({"status": "completed", "stop_reason": "its trials are spent"}) == "completed"
    assert session_status_text({"status": "running", "stop_reason": "old"}) == "running"


def test_a_resumed_session_keeps_the_longer_of_its_last_two_batch_gaps_for_the_batch_in_flight() -> None:
    rows = [{"elapsed_s": t} for t in (0.5, 2.0, 5.0, 6.0)]
    assert recent_batch_s(rows) == 3.0  # the gap before the stopping batch, not the in-flight one's 1 s
    assert recent_batch_s(rows[:3]) == 3.0
    assert recent_batch_s(rows[:1]) == 0.0 and recent_batch_s([]) == 0.0


def test_stop_rules_are_checked_before_a_tune_starts() -> None:
    for bad in (dict(minutes=-1), dict(plateau_minutes=0), dict(faster_than_onnxruntime_pct=100)):
        with pytest.raises(ValueError):
            TuneSettings(**bad)


def test_minutes_stop_the_tune_in_time_and_a_resume_spends_what_is_left(tmp_path: Path, tiny_mlp: Path) -> None:
    db = tmp_path / "clock.db"
    command = [sys.executable, "-m", "bcd_core", "tune", str(tiny_mlp), "--db", str(db), "--trials-per-task", "200"]
    first = subprocess.run([*command, "--minutes", "0.2"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "stopped (time budget of 0.2 min spent)" in first.stderr
    store = RecordStore(db)
    session = store.sessions()[-1]
    assert session["status"] == SessionStatus.STOPPED and session["stop_reason"] == "time budget of 0.2 min spent"
    assert 0 < session["trials_done"] < 800
    assert session["elapsed_s"] <= 12 + largest_gap(store, session["id"]), "stopped within the budget and a batch"
    trials, elapsed = session["trials_done"], session["elapsed_s"]
    again = subprocess.run([*command, "--minutes", "0.2"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "not tuned: time budget of 0.2 min spent" in again.stderr
    assert store.session(session["id"])["trials_done"] == trials, "no time left: nothing measured"
    # Half a minute in all: the first session's last two batches include its first, which waited
    # for the runner's worker to start, and the rule keeps two such batches back.
    more = subprocess.run([*command, "--minutes", "0.5"], capture_output=True, text=True, timeout=300)
    assert more.returncode == 0, more.stderr
    resumed = store.session(session["id"])
    assert resumed["trials_done"] > trials, "the longer budget's time left was tuned"
    assert elapsed < resumed["elapsed_s"] <= 30 + largest_gap(store, session["id"])
    assert len(store.sessions()) == 1, "the same session each time"


def test_a_plateau_stops_once_the_window_has_passed_since_the_first_estimate(tmp_path: Path, tiny_mlp: Path) -> None:
    settings = TuneSettings(**MANY, plateau_pct=100, plateau_minutes=0.05)  # any gain is below 100 %
    run = run_session(tiny_mlp, tmp_path / "plateau.db", host_target(), settings)
    session = run.store.session(run.session_id)
    assert session["status"] == SessionStatus.STOPPED and session["stop_reason"].startswith("plateau: ")
    timeline = run.store.timeline(run.session_id)
    first = next(row["elapsed_s"] for row in timeline if row["estimated_latency_s"])
    stopped_at = next(row for row in timeline if row["elapsed_s"] >= first + 3)  # the first batch past the window
    assert stopped_at["round"] >= timeline[-1]["round"] - 1, "stopped there (a batch in flight may follow)"
    patient = TuneSettings(trials_per_task=4, trials_per_round=4, plateau_pct=100, plateau_minutes=60)
    run = run_session(tiny_mlp, tmp_path / "patient.db", host_target(), patient)
    assert run.store.session(run.session_id)["status"] == SessionStatus.COMPLETED


def test_a_target_is_met_by_the_compiled_model_as_timed(tmp_path: Path, tiny_mlp: Path) -> None:
    run = run_session(tiny_mlp, tmp_path / "target.db", host_target(), TuneSettings(**MANY, target_ms=1000))
    session = run.store.session(run.session_id)
    assert session["status"] == SessionStatus.STOPPED
    assert session["stop_reason"].startswith("the target 1000 ms reached: the compiled model ran in ")
    checks = [row for row in run.store.model_latencies(run.session_id) if row["milestone"] == GOAL_CHECK]
    assert checks and checks[-1]["measured_latency_s"] <= 1.0
    report = write_report(run.store, run.session_id, tmp_path / "report").html.read_text()
    assert "stopped: the target 1000 ms reached" in report

    unreachable = TuneSettings(trials_per_task=4, trials_per_round=4, target_ms=1e-6)
    run = run_session(tiny_mlp, tmp_path / "never.db", host_target(), unreachable)
    assert run.store.session(run.session_id)["status"] == SessionStatus.COMPLETED
    assert not run.store.model_latencies(run.session_id), "an estimate far above the goal is not worth timing"


def test_faster_than_onnxruntime_compares_timings_not_estimates(tmp_path: Path, tiny_convnet: Path) -> None:
    settings = TuneSettings(trials_per_task=16, trials_per_round=4, faster_than_onnxruntime_pct=0)
    run = run_session(tiny_convnet, tmp_path / "ort.db", host_target(), settings)
    store, session = run.store, run.store.session(run.session_id)
    reference = store.reference_latency(session["model_hash"], session["target_key"])
    assert reference is not None, "onnxruntime was timed and kept"
    timings = [row["measured_latency_s"] for row in store.model_latencies(run.session_id)]
    if session["status"] == SessionStatus.STOPPED:
        assert session["stop_reason"].startswith("onnxruntime's ") and min(timings) <= reference
    else:
        assert session["status"] == SessionStatus.COMPLETED
        assert all(seconds > reference for seconds in timings), "a timing at or below onnxruntime's stops the tune"
