"""Steering a tune from another process, through its records store.

Every engine (a `bcd tune` in a terminal, the dashboard's engine process, a server sharing
the disk) runs a `ControlChannel`: a thread that hands requests written to the store's
`control_requests` table to the run's in-process `TuningControl` (applied at the next round
boundary, as before), marks them applied once the tuner took them, and keeps the store's
`engine_state` row (paused, heartbeat) fresh. `RemoteControl` is the other end: the same
steering methods as `TuningControl` (both are `SteeringRequests`), for any process that can
open the store.
"""

from __future__ import annotations

import logging
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.records.store import RecordStore
from bcd_core.tuning.control import ControlRequest, RequestKind, SteeringRequests, TuningControl
from bcd_core.tuning.events import SessionPaused, TuneEvent

log = logging.getLogger("bcd.tuning")
POLL_S = 0.5  # how soon a request from another process reaches the engine's queue

# Flow requests, applied by the channel at once (pause and stop take effect at the next round
# boundary, as from the terminal).
PAUSE, RESUME, STOP = "pause", "resume", "stop"
FLOW_KINDS = (PAUSE, RESUME, STOP)


class ControlChannel:
    """The engine's end: a daemon thread polling the store for one session's requests."""

    def __init__(self, db_path: str | Path, session_id: int, control: TuningControl, token: str | None = None):
        self.db_path = Path(db_path)
        self.session_id = session_id
        self.control = control
        self.token = token
        self._in_queue: dict[int, ControlRequest] = {}  # store id -> request not yet applied
        self._last_id = 0
        self._paused_at_boundary = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bcd-control-channel", daemon=True)

    def start(self) -> ControlChannel:
        with closing(RecordStore(self.db_path, create=False)) as store:
            # Requests written before this run (while no engine ran) are not replayed: a
            # stopped session resumed later must not stop again at once.
            stale = store.control_requests(self.session_id, unapplied_only=True)
            store.mark_requests_applied([row["id"] for row in stale])
            self._last_id = max([row["id"] for row in store.control_requests(self.session_id)], default=0)
            store.write_engine_state(self.session_id, self.token, False)
        self._thread.start()
        return self

    def on_event(self, event: TuneEvent) -> None:
        """A run listener: the store says 'paused' only once the tuner actually waits."""
        if isinstance(event, SessionPaused) and event.session_id == self.session_id:
            self._paused_at_boundary = event.paused

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        try:
            with closing(RecordStore(self.db_path, create=False)) as store:
                while not self._done.wait(POLL_S):
                    self.poll(store)
        except Exception:  # a broken channel must not end the tune; the terminal still steers
            log.exception("control channel stopped")

    def poll(self, store: RecordStore) -> None:
        applied = []
        for row in store.control_requests(self.session_id, self._last_id):
            self._last_id = row["id"]
            if row["kind"] in FLOW_KINDS:
                {PAUSE: self.control.pause, RESUME: self.control.resume, STOP: self.control.stop}[row["kind"]]()
                applied.append(row["id"])
                continue
            try:
                request = ControlRequest(RequestKind(row["kind"]), row["args"], row["requested_at"])
            except ValueError:
                log.warning("ignoring unknown control request %r from the store", row["kind"])
                applied.append(row["id"])
                continue
            self._in_queue[row["id"]] = self.control.submit(request)
        still_pending = {id(request) for request in self.control.pending()}
        for row_id, request in list(self._in_queue.items()):
            if id(request) not in still_pending:
                applied.append(row_id)
                del self._in_queue[row_id]
        store.mark_requests_applied(applied)
        store.write_engine_state(self.session_id, self.token, self._paused_at_boundary)


class RemoteControl(SteeringRequests):
    """Steer the session an engine runs, from any process, through the store. Until `bind`
    names the session (the engine has not opened it yet) requests wait here."""

    def __init__(self, db_path: str | Path, session_id: int | None = None) -> None:
        self.db_path = Path(db_path)
        self.session_id: int | None = None
        self._waiting: list[tuple[str, dict[str, Any]]] = []
        self._paused = False
        if session_id is not None:
            self.bind(session_id)

    def bind(self, session_id: int) -> None:
        self.session_id = session_id
        with closing(RecordStore(self.db_path, create=False)) as store:
            state = store.engine_state(session_id)
            paused = bool(state and state["paused"])
            for kind, args in self._waiting:
                store.add_control_request(session_id, kind, args)
                paused = {PAUSE: True, RESUME: False}.get(kind, paused)  # the user's latest word stands
            self._paused = paused
        self._waiting = []

    def _send(self, kind: str, args: dict[str, Any] | None = None) -> None:
        if self.session_id is None:
            self._waiting.append((kind, dict(args or {})))
            return
        try:
            with closing(RecordStore(self.db_path, create=False)) as store:
                store.add_control_request(self.session_id, kind, args)
        except BcdError as err:
            raise BcdError(f"cannot send '{kind}' to the tune: {err}") from err

    # -- flow -------------------------------------------------------------------------------
    def pause(self) -> None:
        self._paused = True
        self._send(PAUSE)

    def resume(self) -> None:
        self._paused = False
        self._send(RESUME)

    def stop(self) -> None:
        self._send(STOP)

    @property
    def paused(self) -> bool:
        """Whether the user asked for a pause (the engine pauses at its next round boundary)."""
        return self._paused

    # -- steering (SteeringRequests' methods send through the store) --------------------------
    def _request(self, kind: RequestKind, **args: Any) -> ControlRequest:
        self._send(str(kind), args)
        return ControlRequest(kind, args)

    def pending(self) -> list[ControlRequest]:
        """Steering requests the engine has not applied yet."""
        waiting = [ControlRequest(RequestKind(kind), args) for kind, args in self._waiting if kind not in FLOW_KINDS]
        if self.session_id is None:
            return waiting
        try:
            with closing(RecordStore(self.db_path, create=False)) as store:
                rows = store.control_requests(self.session_id, unapplied_only=True)
        except BcdError:
            return waiting
        steering = [r for r in rows if r["kind"] not in FLOW_KINDS]
        return [ControlRequest(RequestKind(r["kind"]), r["args"], r["requested_at"]) for r in steering]
