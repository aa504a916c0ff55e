"""Candidates that fail (build errors, run errors, timeouts, crashed workers) are recorded as
such and never stop a session; a task whose candidates all fail is skipped with the reason."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import psutil
import pytest

from bcd_core.records.store import RecordStore
from bcd_core.target import host_target
from bcd_core.tuning.run import ROUNDS_BEFORE_GIVING_UP
from bcd_core.tuning.settings import CPU_BUILDER_TIMEOUT_S, GPU_BUILDER_TIMEOUT_S, TuneSettings
from bcd_core.tuning.tune import run_session


def test_builder_timeout_defaults_by_target_and_can_be_set() -> None:
    # CPU: an LLVM build over 10 s is an extreme unroll; GPU builds also run NVRTC and took
    # over 10 s per candidate on an H100 machine (every candidate failed).
    assert TuneSettings().builder_timeout_for(gpu=False) == CPU_BUILDER_TIMEOUT_S == 10.0
    assert TuneSettings().builder_timeout_for(gpu=True) == GPU_BUILDER_TIMEOUT_S > CPU_BUILDER_TIMEOUT_S
    assert TuneSettings(builder_timeout_s=3.5).builder_timeout_for(gpu=True) == 3.5
    with pytest.raises(ValueError, match="builder timeout"):
        TuneSettings(builder_timeout_s=0)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["metaschedule", "bcd"])
def test_a_task_whose_candidates_all_time_out_is_skipped_with_the_reason(
    tiny_mlp: Path, tmp_path: Path, strategy: str
) -> None:
    db = tmp_path / "timeouts.db"
    # Every measurement times out: it takes at least runner_number x runner_min_repeat_ms (60 ms).
    # Not 1 us: LocalRunner's start-up check runs under the same limit, and lost that race at times.
    settings = TuneSettings(strategy=strategy, trials_per_task=6, trials_per_round=2, runner_timeout_s=0.04)
    assert settings.runner_number * settings.runner_min_repeat_ms / 1000 > settings.runner_timeout_s
    run = run_session(tiny_mlp, db, host_target(), settings, new_session=True)

    store = RecordStore(db)
    session = store.session(run.session_id)
    assert session["status"] == "completed"
    trials = store.trials(run.session_id)
    assert trials and all(t["error"] and t["latency_s"] is None for t in trials)
    assert any("timeout" in t["error"].lower() for t in trials)
    tasks = store.tasks(run.session_id)
    assert all(task["status"] == "skipped" for task in tasks)
    # Given up after ROUNDS_BEFORE_GIVING_UP rounds each, not after the whole budget (a BCD
    # member's rounds are half batches, so the trial counts differ between tasks).
    rounds = {task["id"]: {t["round"] for t in trials if t["task_id"] == task["id"]} for task in tasks}
    assert all(len(task_rounds) == ROUNDS_BEFORE_GIVING_UP for task_rounds in rounds.values())
    assert len(trials) < settings.trials_per_task * len(tasks)
    reasons = {e["task_id"]: e["message"] for e in store.events(run.session_id) if "candidates failed" in e["message"]}
    assert set(reasons) == {task["id"] for task in tasks}
    for task in tasks:
        failed = sum(1 for t in trials if t["task_id"] == task["id"])
        assert f"skipped, all {failed} candidates failed (run: " in reasons[task["id"]]


def is_popen_worker(process: psutil.Process) -> bool:
    try:
        return "popen_worker" in " ".join(process.cmdline())
    except psutil.Error:  # gone, or a zombie, since the listing
        return False


def measured(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("select count(*) from trials").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    finally:
        conn.close()


@pytest.mark.slow
def test_killing_builder_and_runner_workers_does_not_stop_the_session(tiny_convnet: Path, tmp_path: Path) -> None:
    db = tmp_path / "workers.db"
    settings = TuneSettings(strategy="bcd", trials_per_task=6, trials_per_round=2)
    outcome: dict = {}

    def tune() -> None:
        try:
            outcome["run"] = run_session(tiny_convnet, db, host_target(), settings, new_session=True)
        except Exception as err:  # the assertion below reports it
            outcome["error"] = err

    thread = threading.Thread(target=tune)
    thread.start()
    killed = 0
    me = psutil.Process()
    deadline = time.time() + 300
    while thread.is_alive() and killed < 3 and time.time() < deadline:
        workers = [p for p in me.children(recursive=True) if is_popen_worker(p)]
        if workers and measured(db) >= 2:  # past start-up: the workers now build and run candidates
            time.sleep(0.2)  # let it start on a candidate
            try:
                workers[0].kill()  # SIGKILL, as the OOM killer or a crashing candidate would
                killed += 1
            except psutil.NoSuchProcess:
                pass
        time.sleep(0.1)
    thread.join(timeout=600)
    assert "error" not in outcome, outcome.get("error")
    assert killed >= 1, "no builder or runner worker was seen to kill"
    run = outcome["run"]
    store = RecordStore(db)
    assert store.session(run.session_id)["status"] == "completed"
    trials = store.trials(run.session_id)
    assert len(trials) >= 6 * len(run.tasks)  # the whole budget was measured despite the kills
    assert sum(t["latency_s"] is not None for t in trials) > len(trials) // 2
