"""What every part of the records store shares: one connection, serialized by a lock, with
transactions and an integrity check that turn SQLite's errors into StoreErrors."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from bcd_core.errors import StoreError

MAX_DAMAGE_CHARS = 160  # of SQLite's description of what is damaged where


class StoreBase:
    """The connection and its lock; `RecordStore.__init__` opens them."""

    path: Path
    db: sqlite_utils.Database
    _lock: threading.RLock

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

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {row["key"]: row["value"] for row in self.db["meta"].rows}

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """All writes inside commit together or not at all. The write lock is taken at the
        start (BEGIN IMMEDIATE), waiting up to the busy timeout for other writers (the engine,
        its control channel, a dashboard sending requests): a deferred transaction that reads
        before it writes fails at once when another connection committed in between."""
        with self._lock:
            conn = self.db.conn
            try:
                if conn.in_transaction:  # nested: a savepoint
                    with self.db.atomic():
                        yield self.db
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.db
                except BaseException:
                    conn.rollback()
                    raise
                conn.execute("COMMIT")
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
