"""SIGKILL the dashboard and its engine process in the middle of a real tune (a crash of the
machine, say); reopening it resumes the session with every committed trial kept exactly once.
(Killing the dashboard alone leaves the tune running: tests/bcd_gui/test_engine_process.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import committed_trials

from bcd_core.records.store import RecordStore


def dashboard(model: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bcd_gui", str(model), "--db", str(db), "--tune", "--trials-per-task", "6", *extra]


@pytest.mark.slow
def test_a_killed_dashboard_resumes_without_losing_trials(tiny_convnet: Path, tmp_path: Path) -> None:
    db = tmp_path / "gui.db"
    # Offscreen Qt, and settings (recent files, geometry) in the test's own folder.
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(dashboard(tiny_convnet, db), env=env, start_new_session=True, **quiet)
    deadline = time.time() + 300
    while len(committed_trials(db)) < 8 and time.time() < deadline and process.poll() is None:
        time.sleep(0.1)
    assert process.poll() is None, "the dashboard quit before it could be killed"
    with closing(RecordStore(db, create=False)) as store:
        engine = store.engine_state(store.sessions()[-1]["id"])
    os.killpg(process.pid, signal.SIGKILL)  # the window and its threads
    os.killpg(engine["pid"], signal.SIGKILL)  # the engine (its own process group) and its workers
    process.wait()
    before = committed_trials(db)
    assert len(before) >= 8

    reopened = subprocess.run(
        dashboard(tiny_convnet, db, "--quit-when-done"), env=env, capture_output=True, text=True, timeout=600
    )
    assert reopened.returncode == 0, reopened.stderr[-2000:]
    after = committed_trials(db)
    assert after[: len(before)] == before, "a trial committed before the kill changed or vanished"
    assert len({row[0] for row in after}) == len(after)
    store = RecordStore(db)
    sessions = store.sessions()
    assert len(sessions) == 1 and sessions[0]["status"] == "completed"  # resumed, not started over
    assert len(after) >= 6 * len(store.tasks(sessions[0]["id"]))
