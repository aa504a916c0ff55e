"""Kill a real `bcd tune` mid-run and re-run the same command: it continues the session."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bcd_core.records.store import RecordStore


def committed_trials(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    try:
        conn = sqlite3.connect(db, timeout=5)
        rows = conn.execute("select id, session_id, task_id, round, trace from trials order by id").fetchall()
        conn.close()
        return rows
    except sqlite3.OperationalError:
        return []


def tune_command(model: Path, db: Path, strategy: str) -> list[str]:
    options = ["--strategy", strategy, "--trials-per-task", "6", "--trials-per-round", "2", "--db", str(db)]
    return [sys.executable, "-m", "bcd_core", "tune", str(model), *options]


@pytest.mark.parametrize("strategy", ["metaschedule", "bcd"])
def test_killed_tune_resumes_without_losing_trials(tiny_convnet: Path, tmp_path: Path, strategy: str) -> None:
    db = tmp_path / "resume.db"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(tune_command(tiny_convnet, db, strategy), start_new_session=True, **quiet)
    deadline = time.time() + 300
    while len(committed_trials(db)) < 4 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    assert process.poll() is None, "tune finished before it could be killed; raise the budget"
    os.killpg(process.pid, signal.SIGKILL)  # the CLI and its builder/runner workers
    process.wait()
    before = committed_trials(db)
    assert len(before) >= 4

    done = subprocess.run(tune_command(tiny_convnet, db, strategy), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "resumed" in done.stderr

    after = committed_trials(db)
    assert after[: len(before)] == before, "a trial committed before the kill changed or vanished"
    assert len({row[0] for row in after}) == len(after)
    store = RecordStore(db)
    sessions = store.sessions()
    assert len(sessions) == 1 and sessions[0]["status"] == "completed"
    # Rounds continue after the last committed one instead of starting over.
    rounds_before = {row[3] for row in before}
    new_rounds = {row[3] for row in after[len(before) :]}
    assert not rounds_before & new_rounds
    assert sessions[0]["trials_done"] == len(after)
    assert len(after) <= 6 * len(store.tasks(sessions[0]["id"])) + 2  # budget, plus at most one batch
