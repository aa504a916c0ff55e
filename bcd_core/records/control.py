"""The store as the channel between a running engine and whoever steers it (any process):
requests written by the steering side, taken and marked applied by the engine, and the
engine's own state (paused, alive) for viewers."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from bcd_core.records.states import SessionStatus
from bcd_core.records.store_base import StoreBase

# A viewer takes an engine on another host (shared disk) for gone once it has not spoken for
# this long; it speaks every second or so, also while paused or measuring a long batch.
HEARTBEAT_STALE_S = 60.0


class ControlMixin(StoreBase):
    """Control requests per session and the engine's state."""

    def add_control_request(self, session_id: int, kind: str, args: dict[str, Any] | None = None) -> int:
        row = {"session_id": session_id, "kind": kind, "args": json.dumps(args or {}), "requested_at": time.time()}
        with self.transaction() as db:
            return int(db["control_requests"].insert(row).last_pk)

    def control_requests(self, session_id: int, after_id: int = 0, unapplied_only: bool = False) -> list[dict]:
        """Requests for the session with id > `after_id`, oldest first, args decoded."""
        where = "session_id = ? and id > ?" + (" and applied_at is null" if unapplied_only else "")
        with self._lock:
            rows = [
                dict(r) for r in self.db["control_requests"].rows_where(where, [session_id, after_id], order_by="id")
            ]
        for row in rows:
            row["args"] = json.loads(row["args"] or "{}")
        return rows

    def mark_requests_applied(self, request_ids: list[int]) -> None:
        if not request_ids:
            return
        marks = ", ".join("?" * len(request_ids))
        with self.transaction() as db:
            db.execute(f"update control_requests set applied_at = ? where id in ({marks})", [time.time(), *request_ids])

    def write_engine_state(self, session_id: int, token: str | None, paused: bool) -> None:
        """The engine of `session_id` is this process and is alive now (`paused` or not)."""
        row = {
            "session_id": session_id,
            "token": token,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "paused": int(paused),
            "heartbeat_at": time.time(),
        }
        with self.transaction() as db:
            db["engine_state"].upsert(row, pk="session_id")

    def engine_state(self, session_id: int) -> dict[str, Any] | None:
        with self._lock:
            rows = list(self.db["engine_state"].rows_where("session_id = ?", [session_id]))
        return rows[0] if rows else None

    def session_of_launch(self, token: str) -> int | None:
        """The session the engine launched with `token` opened, once it has."""
        with self._lock:
            rows = list(self.db["engine_state"].rows_where("token = ?", [token]))
        return int(rows[0]["session_id"]) if rows else None

    def sessions_as_they_are(self) -> list[dict[str, Any]]:
        """The sessions, those marked running whose engine is gone (killed, crashed) shown as
        interrupted, which they are: resumable; a completed one says how many of its tasks
        were skipped before a measurement (`skipped_unmeasured`: resuming tunes them)."""
        rows = self.sessions()  # type: ignore[attr-defined]
        for row in rows:
            if row["status"] == SessionStatus.RUNNING and not self.engine_running(row["id"]):
                row["status"] = SessionStatus.INTERRUPTED
            if row["status"] == SessionStatus.COMPLETED:  # resumable if a task was skipped unmeasured
                row["skipped_unmeasured"] = len(self.skipped_unmeasured_tasks(row["id"]))  # type: ignore[attr-defined]
        return rows

    def engine_running(self, session_id: int) -> bool:
        """Whether an engine is tuning the session now: it is marked running, and its engine's
        process is alive (same host) or has spoken recently (another host)."""
        session = self.session(session_id)  # type: ignore[attr-defined]
        if session["status"] != SessionStatus.RUNNING:
            return False
        state = self.engine_state(session_id)
        host = (state or session).get("host")
        pid = (state or session).get("pid")
        if host == socket.gethostname() and pid:
            return process_alive(int(pid))
        return state is not None and time.time() - float(state["heartbeat_at"] or 0) < HEARTBEAT_STALE_S


def process_alive(pid: int) -> bool:
    """Whether `pid` runs on this host. A killed engine whose parent died too stays a zombie
    until init reaps it (seconds in some containers): dead, though the pid still answers."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS) or gone meanwhile
        return False
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])  # the name may hold spaces or ")"
