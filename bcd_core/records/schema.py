"""The records store's schema, versioned: its tables and indexes as data, and the one entry
point that gives a new file this schema or checks and upgrades an existing one.

SCHEMA_VERSION changes only when older bcd versions would misread a store. Additions they
read fine keep the version and are applied to existing stores in place: the viewers' indexes
(`ensure_view_indexes`, on every open) and `sessions.total_budget` (added by the store on the
first budget change, see `SessionsMixin.set_total_budget`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from bcd_core import __version__
from bcd_core.errors import StoreError
from bcd_core.records.rows import now_iso

log = logging.getLogger("bcd.records")
SCHEMA_VERSION = 1
APPLICATION_ID = 0x0BCD0001  # PRAGMA application_id: tells our files from foreign SQLite files


@dataclass(frozen=True)
class Index:
    columns: tuple[str, ...]
    unique: bool = False


@dataclass(frozen=True)
class Table:
    """A table as sqlite_utils creates it: the same calls give the same CREATE statements, so
    stores written before this module existed have exactly this schema."""

    columns: Mapping[str, type]
    pk: str = "id"
    foreign_keys: tuple[tuple[str, str, str], ...] = ()  # (column, other table, other column)
    indexes: tuple[Index, ...] = ()


# Creation order matters for foreign keys: a table comes after the tables it refers to.
TABLES: dict[str, Table] = {
    "meta": Table({"key": str, "value": str}, pk="key"),
    "sessions": Table(
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
            "stop_reason": str,  # why the session's last run ended (tuning/stopping.py)
            "time_budget_s": float,  # the clock its latest run was given (None: trials only)
            "probe_s": float,  # spent measuring the layout first (on its clock, not on a time budget)
            "probe_trials": int,  # the trials it began with as its layout probe (tuning/layout_choice.py)
        }
    ),
    "workloads": Table({"id": int, "shash": str, "workload": str}, indexes=(Index(("shash",)),)),
    "tasks": Table(
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
        foreign_keys=(("session_id", "sessions", "id"), ("workload_id", "workloads", "id")),
        indexes=(Index(("session_id", "idx"), unique=True),),
    ),
    "trials": Table(
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
        foreign_keys=(("workload_id", "workloads", "id"),),
        # (session_id, task_id) lookups use VIEW_INDEXES' covering index.
        indexes=(Index(("workload_id", "target_key", "latency_s")),),
    ),
    "timeline": Table(
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
        indexes=(Index(("session_id", "round")),),
    ),
    "cost_model_metrics": Table(
        {
            "id": int,
            "session_id": int,
            "round": int,
            "task_id": int,
            "samples": int,
            "pairwise_accuracy": float,
            "spearman": float,
            "topk_recall": float,
        }
    ),
    "events": Table({"id": int, "session_id": int, "elapsed_s": float, "kind": str, "task_id": int, "message": str}),
    # The earlier sessions a session's tuning memory drew on (bcd_core/memory), so that a
    # resume draws on exactly these. `store` is "" for the session's own store.
    "memory_used": Table(
        {"id": int, "session_id": int, "store": str, "source_session_id": int, "model_name": str},
        indexes=(Index(("session_id",)),),
    ),
    # A workload's unscheduled program timed once per target (bcd_core/untuned.py), so that the
    # speedup over untuned reads the same on every open.
    "untuned": Table(
        {"id": int, "shash": str, "target_key": str, "latency_s": float, "measured_at": str},
        indexes=(Index(("shash", "target_key")),),
    ),
    # onnxruntime's latency for a model on a target (bcd_core/reference.py): the deployment
    # alternative the dashboard and the report compare the tuned model with.
    "reference": Table(
        {"id": int, "model_hash": str, "target_key": str, "latency_s": float, "spread": float, "measured_at": str},
        indexes=(Index(("model_hash", "target_key")),),
    ),
    # Which convolution layout a model tunes in on a target (bcd_core/tuning/layout_choice.py),
    # decided once by measuring both, so that every later tune of it finds the same sessions.
    "layout_choices": Table(
        {
            "id": int,
            "model_hash": str,
            "target_key": str,
            "kernel_threads": int,
            "input_shapes": str,
            "layout": str,
            "reason": str,
            "block": int,
            "nchw_s": float,
            "blocked_s": float,
            "probe_tasks": int,
            "probe_trials": int,
            "probe_s": float,
            "measured_at": str,
            "winograd_s": float,
        },
        indexes=(Index(("model_hash", "target_key")),),
    ),
    # The whole compiled model timed while a session tunes (bcd_core/tuning/milestones.py):
    # the latency a user gets beside the estimate summed from the tasks' best programs.
    "model_latency": Table(
        {
            "id": int,
            "session_id": int,
            "milestone": str,
            "trials_done": int,
            "elapsed_s": float,
            "estimated_latency_s": float,  # summed from re-timed best programs (tuning/retime.py)
            "search_estimate_s": float,  # summed from the search's measurements of them
            "measured_latency_s": float,
            "spread": float,
            "cost_s": float,
            "measured_at": str,
        },
        indexes=(Index(("session_id",)),),
    ),
    # Trials timed again, several repeats each, at a session's milestones (tuning/retime.py):
    # a re-timed latency ranks its record wherever a best is chosen (records/retimings.py).
    "retimings": Table(
        {
            "trial_id": int,
            "session_id": int,
            "latency_s": float,
            "spread": float,
            "repeats": int,
            "measured_at": str,
        },
        pk="trial_id",
    ),
    # Requests to a running session's engine from any process (the dashboard, attached or
    # not): pause, resume, stop and steering, taken by the engine's control channel
    # (bcd_core/tuning/channel.py) and marked applied once the tuner applied them.
    "control_requests": Table(
        {
            "id": int,
            "session_id": int,
            "kind": str,
            "args": str,
            "requested_at": float,
            "applied_at": float,
        },
        indexes=(Index(("session_id", "id")),),
    ),
    # What a session's engine says of itself while it runs: paused or not, and when it last
    # spoke (a viewer tells a live engine from a killed one by it); `token` names the launch.
    "engine_state": Table(
        {"session_id": int, "token": str, "pid": int, "host": str, "paused": int, "heartbeat_at": float},
        pk="session_id",
    ),
}
# Tables added after schema v1's first release: created in older stores when they open.
TABLES_ADDED_LATER = (
    "memory_used",
    "untuned",
    "control_requests",
    "engine_state",
    "reference",
    "layout_choices",
    "model_latency",
    "retimings",
)
# Columns added to a table after its first release: added to older stores when they open.
COLUMNS_ADDED_LATER = {
    "layout_choices": ("winograd_s",),
    "model_latency": ("search_estimate_s",),
    "reference": ("spread",),
    "sessions": ("stop_reason", "time_budget_s", "probe_s", "probe_trials"),
}

# Covering indexes for what viewers read per session (session_view): trial counts and best
# latency per task without reading the trials' traces, and the latest round at once.
VIEW_INDEXES = {
    "idx_trials_session_task_latency": "session_id, task_id, latency_s, origin",
    "idx_trials_session_round": "session_id, round",
}
# A prefix of the covering index that SQLite's planner would still pick for "order by id"
# lookups, reading every trial's row (trace included) instead of the index: dropped.
SUPERSEDED_INDEXES = ("idx_trials_session_id_task_id",)


def create_or_migrate(db: sqlite_utils.Database, path: Path, read_only: bool = False) -> None:
    """Give an empty file the current schema; otherwise refuse a foreign file or another schema
    version (StoreError) and bring an existing store's tables and indexes up to date (not
    when it is opened read-only)."""
    conn = db.conn
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = set(db.table_names())
    if app_id == 0 and not tables:
        _enable_wal(db)
        if _create_schema(db, path):
            return
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = set(db.table_names())
    _check_is_current_store(db, path, app_id, tables)
    if read_only:
        return
    _enable_wal(db)
    for name in TABLES_ADDED_LATER:
        if name not in tables:
            with db.atomic():
                _create_table(db, name, TABLES[name])
    _add_later_columns(db)
    ensure_view_indexes(db, path)


def _add_later_columns(db: sqlite_utils.Database) -> None:
    for name, columns in COLUMNS_ADDED_LATER.items():
        present = db[name].columns_dict
        for column in columns:
            if column not in present:
                db[name].add_column(column, TABLES[name].columns[column])


def _enable_wal(db: sqlite_utils.Database, tries: int = 100) -> None:
    """WAL mode, waiting while another process holds a lock: switching journal modes fails at
    once instead of waiting for the busy timeout (two processes opening one new store)."""
    for attempt in range(tries):
        try:
            if db.journal_mode != "wal":
                db.enable_wal()
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or attempt == tries - 1:
                raise
            time.sleep(0.05)


def _create_schema(db: sqlite_utils.Database, path: Path) -> bool:
    """The current schema in an empty file, under SQLite's write lock: two processes opening
    one new store at once (a dashboard and the engine it launched, a viewer) would both find
    it empty and both create it. False when another process created it first."""
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")  # waits (busy timeout) while another process creates it
    try:
        if db.table_names():
            conn.execute("COMMIT")
            return False
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        _create_tables(db)
        _write_meta(db)
        ensure_view_indexes(db, path)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return True


def _check_is_current_store(db: sqlite_utils.Database, path: Path, app_id: int, tables: set[str]) -> None:
    if app_id != APPLICATION_ID or "meta" not in tables:
        raise StoreError(
            f"{path} is an SQLite file from another program, not a bcd records database; choose another --db path"
        )
    meta = {row["key"]: row["value"] for row in db["meta"].rows}
    version = int(meta.get("schema_version", 0))
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{path} uses records schema v{version}, this bcd ({__version__}) reads v{SCHEMA_VERSION}; "
            "open it with the bcd version that wrote it or export it with `bcd db export-json`"
        )


def _create_tables(db: sqlite_utils.Database) -> None:
    for name, spec in TABLES.items():
        _create_table(db, name, spec)


def _create_table(db: sqlite_utils.Database, name: str, spec: Table) -> None:
    table = db[name]
    # None, not (): sqlite_utils keeps an explicit value as the table object's default.
    table.create(dict(spec.columns), pk=spec.pk, foreign_keys=list(spec.foreign_keys) or None)
    for index in spec.indexes:
        table.create_index(list(index.columns), unique=index.unique)


def _write_meta(db: sqlite_utils.Database) -> None:
    db["meta"].insert_all(
        [
            {"key": "schema_version", "value": str(SCHEMA_VERSION)},
            {"key": "created_by", "value": f"bcd {__version__}"},
            {"key": "created_at", "value": now_iso()},
        ]
    )


def ensure_view_indexes(db: sqlite_utils.Database, path: Path) -> None:
    """Indexes that keep viewers fast on big stores (experiments/load_bench.py), added to stores
    written before them too: same schema version, since older bcd versions read them fine."""
    try:
        for name, columns in VIEW_INDEXES.items():
            db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON trials ({columns})")
        for name in SUPERSEDED_INDEXES:
            db.execute(f"DROP INDEX IF EXISTS {name}")
    except sqlite3.OperationalError as err:
        # Locked by a writer or read-only: the store still works, only slower to view.
        log.warning("could not add index to %s (%s); viewing it may be slow", path, err)
