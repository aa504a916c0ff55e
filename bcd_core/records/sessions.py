"""The store's sessions, their tasks and the workloads the tasks tune."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

from bcd_core import __version__
from bcd_core.errors import StoreError
from bcd_core.records.control import process_alive
from bcd_core.records.rows import now_iso
from bcd_core.records.states import SessionStatus, TaskStatus
from bcd_core.records.store_base import StoreBase
from bcd_core.records.timing import session_timing


class SessionsMixin(StoreBase):
    """Sessions (who tunes what, with which settings, and how it ended), workloads, tasks."""

    # -- sessions -------------------------------------------------------------------------
    def create_session(
        self,
        *,
        model_path: str,
        model_hash: str,
        target: str,
        target_key: str,
        strategy: str,
        settings: dict[str, Any],
    ) -> int:
        self.check_integrity()  # a tune starts writing here: never into a damaged file
        with self.transaction() as db:
            table = db["sessions"].insert(
                {
                    "model_path": model_path,
                    "model_name": Path(model_path).name,
                    "model_hash": model_hash,
                    "target": target,
                    "target_key": target_key,
                    "strategy": strategy,
                    "settings": json.dumps(settings, sort_keys=True),
                    "tool_version": __version__,
                    "started_at": now_iso(),
                    "status": SessionStatus.RUNNING,
                    "elapsed_s": 0.0,
                    "trials_done": 0,
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                }
            )
            return int(table.last_pk)

    def session(self, session_id: int) -> dict[str, Any]:
        with self._lock:
            try:
                return self.db["sessions"].get(session_id)
            except sqlite_utils.db.NotFoundError:
                raise StoreError(f"no session {session_id} in {self.path}") from None

    def sessions(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["sessions"].rows_where(order_by="id"))

    def sessions_timed_otherwise(self, timing: str) -> tuple[int, ...]:
        """Ids of the sessions that timed their candidates otherwise than `timing` says."""
        return tuple(session["id"] for session in self.sessions() if session_timing(session) != timing)

    def find_session(self, model_hash: str, target_key: str, strategy: str, settings: dict[str, Any]) -> dict | None:
        """The newest session of exactly this model, target, strategy and settings."""
        with self._lock:
            rows = list(
                self.db["sessions"].rows_where(
                    "model_hash = ? and target_key = ? and strategy = ? and settings = ?",
                    [model_hash, target_key, strategy, json.dumps(settings, sort_keys=True)],
                    order_by="id desc",
                    limit=1,
                )
            )
        return rows[0] if rows else None

    def claim_session(self, session_id: int) -> None:
        """Mark a session as run by this process; refuse if another live process runs it."""
        self.check_integrity()  # a resumed tune starts writing here: never into a damaged file
        with self.transaction() as db:
            row = db["sessions"].get(session_id)
            if row["status"] == SessionStatus.RUNNING and row["pid"] != os.getpid() and _process_alive(row):
                raise StoreError(
                    f"session {session_id} is being tuned right now by process {row['pid']} on "
                    f"{row['host']}; stop it first or use another --db"
                )
            db["sessions"].update(
                session_id,
                {
                    "status": SessionStatus.RUNNING,
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "ended_at": None,
                    "stop_reason": None,
                },
            )

    def skipped_unmeasured_tasks(self, session_id: int) -> list[dict[str, Any]]:
        """Task rows the user skipped before they had a measurement."""
        sql = """select t.* from tasks t where t.session_id = ? and t.status = ? and not exists
                 (select 1 from trials r where r.session_id = t.session_id and r.task_id = t.id)"""
        with self._lock:
            return [dict(row) for row in self.db.query(sql, [session_id, TaskStatus.SKIPPED])]

    def reopen_skipped_tasks(self, session_id: int) -> int:
        """Make a finished session's skipped, unmeasured tasks tunable again (`reopen_tasks`).
        Returns how many."""
        return self.reopen_tasks(session_id, [task["id"] for task in self.skipped_unmeasured_tasks(session_id)])

    def reopen_tasks(self, session_id: int, task_ids: Iterable[int]) -> int:
        """Un-skip these tasks (row ids) of a session no engine runs, so that resuming it tunes
        them: queued again (tuning, if measured). A completed session spent its budget, so what
        they have left of theirs is added to its total and it becomes stopped (resumable).
        Returns how many were skipped."""
        wanted = set(task_ids)
        tasks = [t for t in self.tasks(session_id) if t["id"] in wanted and t["status"] == TaskStatus.SKIPPED]
        if not tasks:
            return 0
        session = self.session(session_id)
        sql = "select task_id, count(*) from trials where session_id = ? group by task_id"
        with self._lock:
            measured = dict(self.db.execute(sql, [session_id]).fetchall())
        changes: dict[str, Any] = {}
        if session["status"] == SessionStatus.COMPLETED:
            per_task = int(json.loads(session["settings"] or "{}").get("trials_per_task") or 0)
            total = session.get("total_budget") or per_task * len(self.tasks(session_id))
            total += sum(max(0, int(t["budget"] or per_task) - measured.get(t["id"], 0)) for t in tasks)
            changes = {"total_budget": total, "status": SessionStatus.STOPPED}
        with self.transaction() as db:
            for task in tasks:
                status = TaskStatus.TUNING if measured.get(task["id"]) else TaskStatus.QUEUED
                db["tasks"].update(task["id"], {"status": status})
            if changes:
                db["sessions"].update(session_id, changes, alter=True)
        return len(tasks)

    def set_total_budget(self, session_id: int, trials: int) -> None:
        """The session's total trial budget as the user changed it (a resume keeps it); a
        completed session given more than it measured becomes stopped, so that resuming it
        tunes the rest. Stores made before this column get it here."""
        session = self.session(session_id)
        changes: dict[str, Any] = {"total_budget": trials}
        if session["status"] == SessionStatus.COMPLETED and trials > int(session["trials_done"] or 0):
            changes["status"] = SessionStatus.STOPPED
        with self.transaction() as db:
            db["sessions"].update(session_id, changes, alter=True)

    def set_time_budget(self, session_id: int, seconds: float | None) -> None:
        """The clock the session's current run was given (ETAs and the report read it)."""
        with self.transaction() as db:
            db["sessions"].update(session_id, {"time_budget_s": seconds})

    def add_probe_time(self, session_id: int, seconds: float) -> None:
        """Time a run of the session spent measuring the layout before it (tuning/layout_choice.py)."""
        with self.transaction() as db:
            before = db["sessions"].get(session_id).get("probe_s") or 0.0
            db["sessions"].update(session_id, {"probe_s": before + seconds})

    def continue_as_tune(
        self, session_id: int, settings: dict[str, Any], trials_per_task: int, elapsed_s: float
    ) -> None:
        """A layout probe's session becomes the tune it measured for (tuning/layout_choice.py):
        the tune's identity and per-task budget, its clock so far (`elapsed_s`), and stopped,
        so that the tune continues it like any stopped session. `probe_trials` keeps how many of
        its trials the probe measured, so viewers can tell it from a tune resumed by a user. The
        probe's total (its tasks not reused, tuning/reused.py) gives way to the tune's."""
        changes = {"settings": json.dumps(settings, sort_keys=True), "status": SessionStatus.STOPPED}
        with self.transaction() as db:
            probe = db["sessions"].get(session_id)
            changes |= {"elapsed_s": elapsed_s, "stop_reason": None, "probe_trials": probe["trials_done"]}
            if probe.get("total_budget") is not None:
                changes["total_budget"] = None
            db["sessions"].update(session_id, changes)
            db.execute("update tasks set budget = ? where session_id = ?", [trials_per_task, session_id])

    def finish_session(
        self,
        session_id: int,
        status: str,
        elapsed_s: float,
        bookkeeping_s: float,
        estimate_s: float | None = None,
        stop_reason: str | None = None,
    ) -> None:
        """`estimate_s`: the final estimate from re-timed programs, when the tune ended with one
        (it replaces the search's, which each round wrote). `stop_reason`: why the run ended."""
        ended = {
            "status": status,
            "ended_at": now_iso(),
            "elapsed_s": elapsed_s,
            "bookkeeping_s": bookkeeping_s,
            "stop_reason": stop_reason,
        }
        if estimate_s is not None:
            ended["estimated_latency_s"] = estimate_s
        with self.transaction() as db:
            db["sessions"].update(session_id, ended)

    # -- workloads ------------------------------------------------------------------------
    def workloads_with_hash(self, shash: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["workloads"].rows_where("shash = ?", [shash], order_by="id"))

    def add_workload(self, shash: str, workload_json: Any) -> int:
        with self.transaction() as db:
            return int(db["workloads"].insert({"shash": shash, "workload": json.dumps(workload_json)}).last_pk)

    def workload(self, workload_id: int) -> dict[str, Any]:
        with self._lock:
            return self.db["workloads"].get(workload_id)

    # -- tasks ----------------------------------------------------------------------------
    def add_tasks(self, session_id: int, rows: Iterable[dict[str, Any]]) -> None:
        with self.transaction() as db:
            db["tasks"].insert_all({**row, "session_id": session_id} for row in rows)

    def update_task(self, task_id: int, **values: Any) -> None:
        with self.transaction() as db:
            db["tasks"].update(task_id, values)

    def tasks(self, session_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["tasks"].rows_where("session_id = ?", [session_id], order_by="idx"))


def _process_alive(row: dict[str, Any]) -> bool:
    if row.get("host") != socket.gethostname() or not row.get("pid"):
        return False  # another machine: we cannot tell, let the user resume
    return process_alive(int(row["pid"]))
