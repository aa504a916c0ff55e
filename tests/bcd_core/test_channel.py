"""Steering through the store: requests written by one connection (any process) reach the
engine's in-process control, are marked applied once taken, and the engine says whether it
is alive and paused."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from bcd_core.records.states import SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.tuning.channel import ControlChannel, RemoteControl
from bcd_core.tuning.control import RequestKind, TuningControl
from bcd_core.tuning.events import SessionPaused


def _store_with_session(path: Path) -> int:
    with closing(RecordStore(path)) as store:
        return store.create_session(
            model_path="m.onnx", model_hash="h", target="llvm", target_key="k", strategy="bcd", settings={}
        )


def test_requests_cross_the_store_and_are_marked_applied(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    session_id = _store_with_session(db)
    control = TuningControl()
    remote = RemoteControl(db)  # not bound yet: requests wait in it
    remote.skip_task(2)
    assert [r.kind for r in remote.pending()] == [RequestKind.SKIP]
    channel = ControlChannel(db, session_id, control, token="t1")
    channel.start()
    try:
        with closing(RecordStore(db, create=False)) as store:
            assert store.session_of_launch("t1") == session_id
            remote.bind(session_id)
            remote.set_task_budget(1, 7)
            remote.pause()
            channel.poll(store)
            assert control.paused and not control.stop_requested
            assert [(r.kind, r.args) for r in control.pending()] == [
                (RequestKind.SKIP, {"task": 2}),
                (RequestKind.TASK_BUDGET, {"task": 1, "trials": 7}),
            ]
            assert len(remote.pending()) == 2  # queued in the engine, not applied yet
            control.take_pending()  # the tuner applies them at its round boundary
            channel.on_event(SessionPaused(session_id, True))
            channel.poll(store)
            assert remote.pending() == []
            assert store.engine_state(session_id)["paused"] == 1
            remote.stop()
            channel.poll(store)
            assert control.stop_requested and not control.paused  # a paused tune wakes up to stop
    finally:
        channel.close()


def test_requests_left_from_an_earlier_run_are_not_replayed(tmp_path: Path) -> None:
    """A session stopped from the dashboard and resumed later must not stop again at once."""
    db = tmp_path / "r.db"
    session_id = _store_with_session(db)
    RemoteControl(db, session_id).stop()
    control = TuningControl()
    channel = ControlChannel(db, session_id, control).start()
    try:
        time.sleep(1.2)  # two polls
        assert not control.stop_requested
    finally:
        channel.close()


def _wait_until_zombie(pid: int) -> None:
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.time() + 10
    while stat.exists() and stat.read_text().rpartition(")")[2].split()[0] != "Z" and time.time() < deadline:
        time.sleep(0.01)


def test_a_running_session_is_live_only_while_its_engine_process_is(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    session_id = _store_with_session(db)
    with closing(RecordStore(db)) as store:
        store.claim_session(session_id)  # this process, status running
        assert store.engine_running(session_id)
        engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            with store.transaction() as tx:
                tx["sessions"].update(session_id, {"pid": engine.pid})
            store.write_engine_state(session_id, None, False)
            with store.transaction() as tx:
                tx["engine_state"].update(session_id, {"pid": engine.pid})
            assert store.engine_running(session_id)
            engine.kill()
            _wait_until_zombie(engine.pid)
            # Killed, not reaped yet (as when init reaps an orphan late): dead all the same.
            assert not store.engine_running(session_id)
            engine.wait()
            assert not store.engine_running(session_id)  # killed: shown as not running, resumable
        finally:
            if engine.poll() is None:
                engine.kill()
        assert store.sessions_as_they_are()[0]["status"] == SessionStatus.INTERRUPTED  # resumable
        store.finish_session(session_id, SessionStatus.STOPPED, 1.0, 0.0)
        assert not store.engine_running(session_id)


def test_an_unknown_request_in_the_store_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    session_id = _store_with_session(db)
    control = TuningControl()
    channel = ControlChannel(db, session_id, control)
    channel.start()
    try:
        with closing(RecordStore(db, create=False)) as store:
            store.add_control_request(session_id, "bogus", {})
            channel.poll(store)
            assert control.pending() == []
            assert store.control_requests(session_id, unapplied_only=True) == []
    finally:
        channel.close()


def test_a_pause_asked_before_the_engine_opened_its_session_still_reads_paused(tmp_path: Path) -> None:
    db = tmp_path / "early.db"
    session_id = _store_with_session(db)
    remote = RemoteControl(db)
    remote.pause()  # the user pressed Space while the model was still importing
    remote.bind(session_id)  # the engine's state does not say paused yet
    assert remote.paused, "the next Space resumes instead of pausing again"
    early = RemoteControl(db)
    early.pause()
    early.resume()
    early.bind(session_id)
    assert not early.paused
