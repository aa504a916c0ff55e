"""A tune the window follows live: one it launched (an engine process of its own) or one it
attached to (a `bcd tune` in a terminal, another window's engine, a server on a shared disk).

The store is the interface both ways: a watcher thread reads the session's progress, events
and engine state from it and turns them into the engine's events and snapshots for the GUI
thread; steering goes back through `RemoteControl` (control requests the engine polls).
Nothing here tunes: a crash of the engine cannot take the window with it, nor the reverse.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from contextlib import closing
from pathlib import Path

from PySide6.QtCore import QObject, QThread, QTimer, Signal

from bcd_core.errors import BcdError
from bcd_core.records.states import SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.session_view import SessionSnapshot, continues_its_probe, load_snapshot
from bcd_core.tuning.channel import RemoteControl
from bcd_core.tuning.control import ControlRequest, RequestKind
from bcd_core.tuning.engine_process import EngineLaunch, EngineProcess
from bcd_core.tuning.events import RoundFinished, SessionFinished, SessionMessage, SessionPaused, SessionStarted

log = logging.getLogger("bcd.gui")
engine_log = logging.getLogger("bcd.engine")  # the engine's events, shown once in the log panel
WATCH_INTERVAL_S = 0.5
ENGINE_DIR = Path(tempfile.gettempdir()) / "bcd-engines"  # launch files and engine logs


class SessionWatcher(QThread):
    """Polls the store for one session (or, until the engine opens it, for the launch token)
    and reports what changed. Reads happen here, so the GUI thread only draws."""

    bound = Signal(int)  # the session id, once known
    event = Signal(object)  # a TuneEvent, rebuilt from the store
    snapshot = Signal(object)
    ended = Signal()

    def __init__(self, db_path: Path, session_id: int | None = None, token: str | None = None) -> None:
        super().__init__()
        self.db_path = db_path
        self.session_id = session_id
        self.token = token
        self._quit = threading.Event()
        self._last_event_id = 0
        self._last_round: int | None = None
        self._paused: bool | None = None

    def stop(self) -> None:
        self._quit.set()

    def run(self) -> None:
        try:
            with closing(RecordStore(self.db_path, create=False)) as store:
                while not self._quit.is_set():
                    if self.poll(store):
                        break
                    self._quit.wait(WATCH_INTERVAL_S)
        except BcdError as err:
            log.error("cannot follow the tune in %s: %s", self.db_path, err)
        self.ended.emit()

    def poll(self, store: RecordStore) -> bool:
        """One look at the store; True once the session's engine is gone (or never came)."""
        if self.session_id is None:
            self.session_id = store.session_of_launch(self.token or "")
            if self.session_id is None:
                return False
            self._last_event_id = max((row["id"] for row in store.events(self.session_id)), default=0)
            self.bound.emit(self.session_id)
            self._announce(store, self.session_id)
        session_id = self.session_id
        running = store.engine_running(session_id)
        for row in store.events(session_id, self._last_event_id):
            self._last_event_id = row["id"]
            engine_log.info("%s", row["message"])
            self.event.emit(SessionMessage(session_id, row["kind"], row["message"]))
        state = store.engine_state(session_id)
        paused = bool(state and state["paused"]) and running
        if paused != self._paused:
            self._paused = paused
            self.event.emit(SessionPaused(session_id, paused))
        latest = store.latest_round(session_id)
        round_now = latest["round"] if latest else 0
        if round_now != self._last_round or not running:
            self._last_round = round_now
            snapshot = load_snapshot(store, session_id)
            if latest is not None:
                self.event.emit(_round_event(latest, snapshot))
            self.snapshot.emit(snapshot)
            if not running:
                session = snapshot.session
                self.event.emit(
                    SessionFinished(
                        session_id,
                        str(session["status"]),
                        snapshot.trials_done,
                        snapshot.estimated_latency_s,
                        float(session["elapsed_s"] or 0),
                        str(session.get("stop_reason") or ""),
                    )
                )
        return not running

    def _announce(self, store: RecordStore, session_id: int) -> None:
        snapshot = load_snapshot(store, session_id)
        elapsed = float(snapshot.session["elapsed_s"] or 0)
        done = snapshot.trials_done
        counts = (len(snapshot.tasks), snapshot.trials_total, done)
        continues_probe = continues_its_probe(snapshot.session)
        self.event.emit(SessionStarted(session_id, done > 0, *counts, elapsed, continues_probe=continues_probe))


def _round_event(row: dict, snapshot: SessionSnapshot) -> RoundFinished:
    return RoundFinished(
        snapshot.session_id,
        int(row["round"]),
        int(row["task_index"] if row["task_index"] is not None else -1),
        str(row["task_name"] or ""),
        int(row["batch_size"] or 0),
        int(row["batch_failed"] or 0),
        row["best_task_latency_s"],
        row["estimated_latency_s"],
        snapshot.trials_done,
        snapshot.trials_total,
        float(row["elapsed_s"] or 0),
    )


class LiveTune(QObject):
    """A tune followed live: `control` steers it, signals report it, `finished` when its
    engine is gone (done, stopped, crashed or killed). `engine` is None when attached."""

    event = Signal(object)
    snapshot = Signal(object)
    failed = Signal(object)
    finished = Signal()

    def __init__(self, db_path: Path, engine: EngineProcess | None = None, session_id: int | None = None) -> None:
        super().__init__()
        self.db_path = Path(db_path)
        self.engine = engine
        self.session_id = session_id
        self.control = RemoteControl(self.db_path, session_id)
        token = engine.launch.token if engine is not None else None
        self.watcher = SessionWatcher(self.db_path, session_id, token)
        self.watcher.bound.connect(self._bound)
        self.watcher.event.connect(self.event)
        self.watcher.snapshot.connect(self.snapshot)
        self.watcher.ended.connect(self._watch_ended)
        self._exit_check = QTimer(self)  # an engine that dies before it opens its session
        self._exit_check.timeout.connect(self._check_engine)
        self._detached = False

    @classmethod
    def launch(cls, launch: EngineLaunch) -> LiveTune:
        return cls(Path(launch.db_path), EngineProcess(launch, ENGINE_DIR))

    @property
    def attached(self) -> bool:
        return self.engine is None

    def launch_requests(self) -> list[ControlRequest]:
        """The requests made before Tune, which the engine took with its launch (not through the
        store): it applies them at its first round boundary."""
        requests = self.engine.launch.requests if self.engine is not None else []
        return [ControlRequest(RequestKind(r["kind"]), r["args"]) for r in requests]

    def start(self) -> None:
        self.watcher.start()
        if self.engine is not None:
            self._exit_check.start(int(WATCH_INTERVAL_S * 1000))

    def _bound(self, session_id: int) -> None:
        self.session_id = session_id
        self.control.bind(session_id)

    def _check_engine(self) -> None:
        engine = self.engine
        if engine is not None and engine.exit_code() is not None and self.session_id is None:
            if self._opened_session_of(engine.launch.token):
                return  # opened and left between two polls (nothing left to tune): the watcher shows it
            self.watcher.stop()  # it never opened a session: the watcher would wait forever

    def _opened_session_of(self, token: str) -> bool:
        try:
            with closing(RecordStore(self.db_path, create=False)) as store:
                return store.session_of_launch(token) is not None
        except BcdError:
            return False

    def _watch_ended(self) -> None:
        if self._detached:
            return
        self._exit_check.stop()
        self.watcher.wait()
        if self.engine is not None:
            self.engine.wait(30)  # it wrote its final status: it is leaving
            if self.engine.exit_code() not in (0, None) or self._crashed():
                self.failed.emit(self.engine.failure())  # names its log, which stays
            else:
                self.engine.remove_files()
        self.finished.emit()

    def _crashed(self) -> bool:
        if self.session_id is None:
            return True
        with closing(RecordStore(self.db_path, create=False)) as store:
            return store.session(self.session_id)["status"] == SessionStatus.RUNNING

    def wait_for_engine(self, timeout_s: float) -> bool:
        """Block until the own engine process exits (the window closing); True if it did."""
        return self.engine is None or self.engine.wait(timeout_s)

    def detach(self) -> None:
        """Stop following; the engine (if any) goes on."""
        self._detached = True
        self._exit_check.stop()
        self.watcher.stop()
        self.watcher.wait(5000)
