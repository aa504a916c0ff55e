"""The engine in its own process, with real processes: a tune outlives a killed dashboard and
is followed again when its store is reopened; a `bcd tune` started in a terminal is followed
and paused/resumed from the dashboard."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from bcd_core.records.store import RecordStore
from bcd_core.tuning.events import SessionPaused

TRIALS_PER_TASK = 12
START_TIMEOUT_S = 180


def _wait_for_rounds(db: Path, rounds: int, proc: subprocess.Popen) -> int:
    """The session id once the store shows `rounds` finished rounds of it."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the process ended early ({proc.returncode})"
        if db.exists():
            with closing(RecordStore(db, create=False)) as store:
                sessions = store.sessions()
                latest = store.latest_round(sessions[-1]["id"]) if sessions else None
                if latest is not None and latest["round"] >= rounds:
                    return int(sessions[-1]["id"])
        time.sleep(0.3)
    log = db.parent / "process.log"
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise AssertionError(f"the tune did not start in time; the process said:\n{tail}")


def _trial_count(db: Path, session_id: int) -> int:
    with closing(RecordStore(db, create=False)) as store:
        return sum(store.trial_counts(session_id).values())


def _kill_engine(db: Path, session_id: int) -> None:
    with closing(RecordStore(db, create=False)) as store:
        state = store.engine_state(session_id)
    if state and state["pid"]:
        try:
            os.kill(int(state["pid"]), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_killing_the_dashboard_leaves_the_tune_running_and_reopening_follows_it(
    qtbot, qsettings, tiny_mlp: Path, tmp_path: Path
) -> None:
    from bcd_gui.main_window import MainWindow

    db = tmp_path / "records.db"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    command = [sys.executable, "-m", "bcd_gui", str(tiny_mlp), "--db", str(db), "--tune"]
    said = (tmp_path / "process.log").open("w")  # shown if the tune does not start
    gui = subprocess.Popen([*command, "--trials-per-task", str(TRIALS_PER_TASK)], env=env, cwd=tmp_path, stderr=said)
    said.close()  # the child holds its own copy
    session_id = None
    try:
        session_id = _wait_for_rounds(db, 2, gui)
        gui.send_signal(signal.SIGKILL)
        gui.wait(30)
        with closing(RecordStore(db, create=False)) as store:
            assert store.engine_running(session_id), "the tune died with the dashboard"

        win = MainWindow(db_path=db, settings=qsettings)
        qtbot.addWidget(win)
        win.show()
        with qtbot.waitSignal(win.tuneFinished, timeout=300_000) as finished:
            win.open_store(db)
            assert win.worker is not None and win.worker.attached and win.worker.session_id == session_id
        assert finished.args[0] == "completed"
        total = TRIALS_PER_TASK * len(win.snapshot.tasks)
        assert win.snapshot.trials_done == total
        assert _trial_count(db, session_id) == total  # every trial of the whole tune is in the store
    finally:
        if gui.poll() is None:
            gui.kill()
        if session_id is not None:
            _kill_engine(db, session_id)


@pytest.mark.slow
def test_a_terminal_tune_is_followed_paused_and_resumed_from_the_dashboard(
    qtbot, qsettings, tiny_mlp: Path, tmp_path: Path
) -> None:
    from bcd_gui.main_window import MainWindow

    db = tmp_path / "shared.db"
    tune = subprocess.Popen(
        [sys.executable, "-m", "bcd_core", "tune", str(tiny_mlp), "--db", str(db), "--target", "llvm"]
        + ["--trials-per-task", str(TRIALS_PER_TASK), "--trials-per-round", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        session_id = _wait_for_rounds(db, 1, tune)
        win = MainWindow(db_path=db, settings=qsettings)
        qtbot.addWidget(win)
        win.show()
        win.open_store(db)
        worker = win.worker
        assert worker is not None and worker.attached and worker.session_id == session_id
        paused: list[bool] = []
        worker.event.connect(lambda e: paused.append(e.paused) if isinstance(e, SessionPaused) else None)

        win.toggle_pause()
        qtbot.waitUntil(lambda: paused[-1:] == [True], timeout=120_000)  # the engine waits at a boundary
        assert win.window_actions.pause_action.text() == "&Resume"
        held = _trial_count(db, session_id)
        qtbot.wait(2000)
        assert _trial_count(db, session_id) == held
        assert tune.poll() is None

        with qtbot.waitSignal(win.tuneFinished, timeout=300_000) as finished:
            win.toggle_pause()
        assert finished.args[0] == "completed"
        assert tune.wait(60) == 0
        assert win.snapshot.trials_done == TRIALS_PER_TASK * len(win.snapshot.tasks)
    finally:
        if tune.poll() is None:
            tune.kill()
