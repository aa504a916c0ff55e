"""The SQLite records store: one file per project, WAL mode, versioned schema.

Everything a session produces lands here: its settings, its tasks and clusters, every
measured candidate (trial), a timeline point per round, cost-model metrics and events.
MetaSchedule reads and writes tuning records through `records.database.SqliteDatabase`,
which is backed by the same tables.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from bcd_core import __version__
from bcd_core.errors import StoreError
from bcd_core.records.failed_run import FAILED_RUN_SECS as FAILED_RUN_SECS  # re-exported for callers

log = logging.getLogger("bcd.records")
SCHEMA_VERSION = 1
APPLICATION_ID = 0x0BCD0001  # PRAGMA application_id: tells our files from foreign SQLite files
BUSY_TIMEOUT_MS = 5000
MAX_DAMAGE_CHARS = 160  # of SQLite's description of what is damaged where
# Covering indexes for what viewers read per session (session_view): trial counts and best
# latency per task without reading the trials' traces, and the latest round at once.
VIEW_INDEXES = {
    "idx_trials_session_task_latency": "session_id, task_id, latency_s, origin",
    "idx_trials_session_round": "session_id, round",
}
# A prefix of the covering index that SQLite's planner would still pick for "order by id"
# lookups, reading every trial's row (trace included) instead of the index: dropped.
SUPERSEDED_INDEXES = ("idx_trials_session_id_task_id",)

SESSION_RUNNING = "running"
SESSION_INTERRUPTED = "interrupted"
SESSION_COMPLETED = "completed"
SESSION_FAILED = "failed"
SESSION_STOPPED = "stopped"  # stopped by the user at a round boundary: resumable


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())


@dataclass
class TrialRow:
    """One measured candidate, as the tuner hands it to the store."""

    task_id: int | None
    workload_id: int
    round: int
    elapsed_s: float
    run_secs: list[float] | None  # None when the candidate failed
    error: str | None
    trace: Any  # Trace JSON (a list), as MetaSchedule serializes it
    args_info: Any
    target_key: str
    origin: str = "evolved"
    source_trial_id: int | None = None
    adaptation: str | None = None
    predicted_score: float | None = None

    @property
    def latency_s(self) -> float | None:
        if not self.run_secs:
            return None
        return sum(self.run_secs) / len(self.run_secs)


class RecordStore:
    """Thread-safe access to one records file (one connection, serialized by a lock)."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"records database not found: {self.path}")
        if self.path.exists() and self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a records database")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db = sqlite_utils.Database(conn)
            self._open_or_create()
        except sqlite3.DatabaseError as err:
            raise StoreError(self._explain(err)) from err

    def _explain(self, err: sqlite3.DatabaseError) -> str:
        text = str(err)
        if "locked" in text or "busy" in text:
            return (
                f"{self.path} is locked: another process (another bcd or bcd-gui, or an SQLite tool) holds a write "
                "lock on it; wait for it to finish or close it, or use another --db"
            )
        if "not a database" in text:
            return f"{self.path} is not an SQLite file, so not a bcd records database ({text}); use another --db path"
        if "malformed" in text or "corrupt" in text:
            return (
                f"{self.path} is damaged ({text}); bcd does not write to a damaged store. Restore it from a "
                "backup, or use another --db path"
            )
        return f"cannot use records database {self.path}: {text}"

    # -- schema ---------------------------------------------------------------------------
    def _open_or_create(self) -> None:
        conn = self.db.conn
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = set(self.db.table_names())
        if app_id == 0 and not tables:
            self.db.enable_wal()
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            with self.db.atomic():
                self._create_schema()
                self._ensure_view_indexes()
            return
        if app_id != APPLICATION_ID or "meta" not in tables:
            raise StoreError(
                f"{self.path} is an SQLite file from another program, not a bcd records database; "
                "choose another --db path"
            )
        version = int(self.meta().get("schema_version", 0))
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} uses records schema v{version}, this bcd ({__version__}) reads v{SCHEMA_VERSION}; "
                "open it with the bcd version that wrote it or export it with `bcd db export-json`"
            )
        if self.db.journal_mode != "wal":
            self.db.enable_wal()
        self._ensure_view_indexes()

    def _ensure_view_indexes(self) -> None:
        """Indexes that keep viewers fast on big stores (docs/load_bench.py), added to stores
        written before them too: same schema version, since older bcd versions read them fine."""
        try:
            for name, columns in VIEW_INDEXES.items():
                self.db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON trials ({columns})")
            for name in SUPERSEDED_INDEXES:
                self.db.execute(f"DROP INDEX IF EXISTS {name}")
        except sqlite3.OperationalError as err:
            # Locked by a writer or read-only: the store still works, only slower to view.
            log.warning("could not add index to %s (%s); viewing it may be slow", self.path, err)

    def _create_schema(self) -> None:
        db = self.db
        db["meta"].create({"key": str, "value": str}, pk="key")
        db["meta"].insert_all(
            [
                {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                {"key": "created_by", "value": f"bcd {__version__}"},
                {"key": "created_at", "value": now_iso()},
            ]
        )
        db["sessions"].create(
            {
                "id": int,
                "model_path": str,
                "model_name": str,
                "model_hash": str,
                "target": str,
                "target_key": str,
                "strategy": str,
                "settings": str,
                "tool_version": str,
                "started_at": str,
                "ended_at": str,
                "status": str,
                "elapsed_s": float,
                "trials_done": int,
                "estimated_latency_s": float,
                "bookkeeping_s": float,
                "pid": int,
                "host": str,
                "total_budget": int,  # the user's total trials, when changed while tuning
            },
            pk="id",
        )
        db["workloads"].create({"id": int, "shash": str, "workload": str}, pk="id")
        db["workloads"].create_index(["shash"])
        db["tasks"].create(
            {
                "id": int,
                "session_id": int,
                "idx": int,
                "name": str,
                "weight": int,
                "flops": float,
                "shapes": str,
                "dtypes": str,
                "operator_key": str,
                "sketch_key": str,
                "num_sketches": int,
                "cluster_id": int,
                "cluster_key": str,
                "is_representative": int,
                "workload_id": int,
                "budget": int,
                "status": str,
                "diffused_from_trial_id": int,
                "diffused_best_s": float,
                "fallback": int,
            },
            pk="id",
            foreign_keys=[("session_id", "sessions", "id"), ("workload_id", "workloads", "id")],
        )
        db["tasks"].create_index(["session_id", "idx"], unique=True)
        db["trials"].create(
            {
                "id": int,
                "session_id": int,
                "task_id": int,
                "workload_id": int,
                "round": int,
                "elapsed_s": float,
                "latency_s": float,
                "run_secs": str,
                "error": str,
                "trace": str,
                "args_info": str,
                "target_key": str,
                "origin": str,
                "source_trial_id": int,
                "adaptation": str,
                "predicted_score": float,
                "created_at": str,
            },
            pk="id",
            foreign_keys=[("workload_id", "workloads", "id")],
        )
        db["trials"].create_index(["workload_id", "target_key", "latency_s"])
        # (session_id, task_id) lookups use VIEW_INDEXES' covering index, added by _ensure_view_indexes.
        db["timeline"].create(
            {
                "id": int,
                "session_id": int,
                "round": int,
                "elapsed_s": float,
                "task_id": int,
                "trials_done": int,
                "batch_size": int,
                "batch_failed": int,
                "best_task_latency_s": float,
                "estimated_latency_s": float,
            },
            pk="id",
        )
        db["timeline"].create_index(["session_id", "round"])
        db["cost_model_metrics"].create(
            {
                "id": int,
                "session_id": int,
                "round": int,
                "task_id": int,
                "samples": int,
                "pairwise_accuracy": float,
                "spearman": float,
                "topk_recall": float,
            },
            pk="id",
        )
        db["events"].create(
            {"id": int, "session_id": int, "elapsed_s": float, "kind": str, "task_id": int, "message": str},
            pk="id",
        )

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {row["key"]: row["value"] for row in self.db["meta"].rows}

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """All writes inside commit together or not at all."""
        with self._lock:
            try:
                with self.db.atomic():
                    yield self.db
            except sqlite3.OperationalError as err:
                raise StoreError(self._explain(err)) from err

    def check_integrity(self) -> None:
        """Refuse a damaged file before writing to it (writes would spread the damage). Reads
        every page (about a second per 500 MB), so tunes pay it once at the start, viewers never."""
        with self._lock:
            try:
                problems = [str(row[0]) for row in self.db.execute("PRAGMA quick_check(1)").fetchall()]
            except sqlite3.DatabaseError as err:
                raise StoreError(self._explain(err)) from err
        if problems != ["ok"]:
            first = problems[0].replace("\n", " ")[:MAX_DAMAGE_CHARS]
            raise StoreError(self._explain(sqlite3.DatabaseError(f"database disk image is malformed: {first}")))

    def close(self) -> None:
        with self._lock:
            self.db.close()

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
                    "status": SESSION_RUNNING,
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
            if row["status"] == SESSION_RUNNING and row["pid"] != os.getpid() and _process_alive(row):
                raise StoreError(
                    f"session {session_id} is being tuned right now by process {row['pid']} on "
                    f"{row['host']}; stop it first or use another --db"
                )
            db["sessions"].update(
                session_id,
                {"status": SESSION_RUNNING, "pid": os.getpid(), "host": socket.gethostname(), "ended_at": None},
            )

    def set_total_budget(self, session_id: int, trials: int) -> None:
        """The session's total trial budget as the user changed it (a resume keeps it).
        Stores made before this column get it here."""
        with self.transaction() as db:
            db["sessions"].update(session_id, {"total_budget": trials}, alter=True)

    def finish_session(self, session_id: int, status: str, elapsed_s: float, bookkeeping_s: float) -> None:
        with self.transaction() as db:
            db["sessions"].update(
                session_id,
                {"status": status, "ended_at": now_iso(), "elapsed_s": elapsed_s, "bookkeeping_s": bookkeeping_s},
            )

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

    # -- trials ---------------------------------------------------------------------------
    def record_round(
        self,
        session_id: int,
        trials: list[TrialRow],
        timeline: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
        bookkeeping_s: float | None = None,
    ) -> list[int]:
        """One measured batch, its timeline point and metrics, committed atomically."""
        created = now_iso()
        with self.transaction() as db:
            ids = []
            for trial in trials:
                row = {
                    "session_id": session_id,
                    "task_id": trial.task_id,
                    "workload_id": trial.workload_id,
                    "round": trial.round,
                    "elapsed_s": trial.elapsed_s,
                    "latency_s": trial.latency_s,
                    "run_secs": json.dumps(trial.run_secs) if trial.run_secs else None,
                    "error": trial.error,
                    "trace": json.dumps(trial.trace),
                    "args_info": json.dumps(trial.args_info),
                    "target_key": trial.target_key,
                    "origin": trial.origin,
                    "source_trial_id": trial.source_trial_id,
                    "adaptation": trial.adaptation,
                    "predicted_score": trial.predicted_score,
                    "created_at": created,
                }
                ids.append(int(db["trials"].insert(row).last_pk))
            if timeline is not None:
                db["timeline"].insert({**timeline, "session_id": session_id})
                db["sessions"].update(
                    session_id,
                    {
                        "elapsed_s": timeline["elapsed_s"],
                        "trials_done": timeline["trials_done"],
                        "estimated_latency_s": timeline.get("estimated_latency_s"),
                        **({"bookkeeping_s": bookkeeping_s} if bookkeeping_s is not None else {}),
                    },
                )
            if metrics is not None:
                db["cost_model_metrics"].insert({**metrics, "session_id": session_id})
        return ids

    def add_imported_trials(self, trials: list[TrialRow]) -> int:
        """Records from outside any session (e.g. a MetaSchedule JSON database)."""
        with self.transaction() as db:
            db["trials"].insert_all(
                {
                    "workload_id": t.workload_id,
                    "latency_s": t.latency_s,
                    "run_secs": json.dumps(t.run_secs) if t.run_secs else None,
                    "error": t.error,
                    "trace": json.dumps(t.trace),
                    "args_info": json.dumps(t.args_info),
                    "target_key": t.target_key,
                    "origin": t.origin,
                    "created_at": now_iso(),
                }
                for t in trials
            )
        return len(trials)

    def trials(self, session_id: int | None = None, task_id: int | None = None) -> list[dict[str, Any]]:
        where, params = [], []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if task_id is not None:
            where.append("task_id = ?")
            params.append(task_id)
        with self._lock:
            return list(self.db["trials"].rows_where(" and ".join(where) or None, params, order_by="id"))

    def trial_counts(self, session_id: int) -> dict[int, int]:
        sql = "select task_id, count(*) from trials where session_id = ? group by task_id"
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def best_latencies(self, session_id: int) -> dict[int, float]:
        sql = (
            "select task_id, min(latency_s) from trials where session_id = ? and latency_s is not null group by task_id"
        )
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def round_counts(self, session_id: int) -> dict[int, int]:
        sql = "select task_id, count(distinct round) from trials where session_id = ? group by task_id"
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def best_history(self, session_id: int) -> dict[int, list[float]]:
        """Per task, its best latency after each of its rounds (for gradient scheduling)."""
        sql = (
            "select task_id, round, min(latency_s) from trials where session_id = ? "
            "group by task_id, round order by task_id, round"
        )
        history: dict[int, list[float]] = {}
        with self._lock:
            for task_id, _round, best in self.db.execute(sql, [session_id]).fetchall():
                series = history.setdefault(task_id, [])
                previous = series[-1] if series else float("inf")
                series.append(min(previous, best if best is not None else float("inf")))
        return history

    def last_round(self, session_id: int) -> int:
        sql = "select coalesce(max(round), 0) from trials where session_id = ?"
        with self._lock:
            return int(self.db.execute(sql, [session_id]).fetchone()[0])

    def top_records(self, workload_id: int, target_key: str | None, k: int) -> list[dict[str, Any]]:
        sql = "select * from trials where workload_id = ? and latency_s is not null"
        params: list[Any] = [workload_id]
        if target_key is not None:
            sql += " and target_key = ?"
            params.append(target_key)
        sql += " order by latency_s, id limit ?"
        params.append(k)
        with self._lock:
            return [dict(row) for row in self.db.query(sql, params)]

    def all_records(self, target_key: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            if target_key is None:
                return list(self.db["trials"].rows_where(order_by="id"))
            return list(self.db["trials"].rows_where("target_key = ?", [target_key], order_by="id"))

    def count_records(self, target_key: str | None = None) -> int:
        with self._lock:
            if target_key is None:
                return self.db["trials"].count
            return int(self.db.execute("select count(*) from trials where target_key = ?", [target_key]).fetchone()[0])

    # -- timeline, metrics, events --------------------------------------------------------
    def timeline(self, session_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["timeline"].rows_where("session_id = ?", [session_id], order_by="round"))

    def cost_model_metrics(self, session_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["cost_model_metrics"].rows_where("session_id = ?", [session_id], order_by="round"))

    def add_event(self, session_id: int, elapsed_s: float, kind: str, message: str, task_id: int | None = None) -> None:
        with self.transaction() as db:
            db["events"].insert(
                {"session_id": session_id, "elapsed_s": elapsed_s, "kind": kind, "task_id": task_id, "message": message}
            )

    def events(self, session_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["events"].rows_where("session_id = ?", [session_id], order_by="id"))


def _process_alive(row: dict[str, Any]) -> bool:
    if row.get("host") != socket.gethostname() or not row.get("pid"):
        return False  # another machine: we cannot tell, let the user resume
    try:
        os.kill(int(row["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
