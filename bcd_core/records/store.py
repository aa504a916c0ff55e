"""The SQLite records store: one file per project, WAL mode, versioned schema.

Everything a session produces lands here: its settings, its tasks and clusters, every
measured candidate (trial), a timeline point per round, cost-model metrics and events.
MetaSchedule reads and writes tuning records through `records.database.SqliteDatabase`,
which is backed by the same tables.

`RecordStore` is assembled from one part per concern: the schema (`schema`), the shared
connection (`store_base`), sessions, tasks and workloads (`sessions`), trials (`trials`, and
`trial_views` for viewers), the per-round series and events (`timeline`). Callers import
everything from here.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import sqlite_utils

from bcd_core.errors import StoreError
from bcd_core.records.control import ControlMixin
from bcd_core.records.failed_run import FAILED_RUN_SECS
from bcd_core.records.measured import MeasuredMixin
from bcd_core.records.memory import MemoryMixin
from bcd_core.records.rows import (
    TrialRow,
    now_iso,
)
from bcd_core.records.schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    SUPERSEDED_INDEXES,
    VIEW_INDEXES,
    create_or_migrate,
)
from bcd_core.records.sessions import SessionsMixin
from bcd_core.records.store_base import MAX_DAMAGE_CHARS
from bcd_core.records.timeline import TimelineMixin
from bcd_core.records.trial_views import TrialViewsMixin
from bcd_core.records.trials import TrialsMixin
from bcd_core.records.untuned import ReferenceMixin, UntunedMixin

__all__ = [
    "APPLICATION_ID",
    "BUSY_TIMEOUT_MS",
    "FAILED_RUN_SECS",
    "MAX_DAMAGE_CHARS",
    "SCHEMA_VERSION",
    "SUPERSEDED_INDEXES",
    "VIEW_INDEXES",
    "RecordStore",
    "TrialRow",
    "now_iso",
]

BUSY_TIMEOUT_MS = 5000  # read when a store opens, so tests can shorten it on this module


class RecordStore(
    SessionsMixin,
    TrialsMixin,
    TrialViewsMixin,
    TimelineMixin,
    MemoryMixin,
    UntunedMixin,
    ReferenceMixin,
    MeasuredMixin,
    ControlMixin,
):
    """Thread-safe access to one records file (one connection, serialized by a lock)."""

    def __init__(self, path: str | Path, create: bool = True, read_only: bool = False) -> None:
        """`read_only`: open an existing store without writing to it (someone else's, e.g. a
        team's tuning memory): nothing is created, upgraded or indexed."""
        self.path = Path(path)
        self.read_only = read_only
        if (read_only or not create) and not self.path.exists():
            raise StoreError(f"records database not found: {self.path}")
        if self.path.exists() and self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a records database")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            where = f"{self.path.resolve().as_uri()}?mode=ro" if read_only else str(self.path)
            conn = sqlite3.connect(where, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, uri=read_only)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db = sqlite_utils.Database(conn)
            create_or_migrate(self.db, self.path, read_only)
        except sqlite3.DatabaseError as err:
            raise StoreError(self._explain(err)) from err
