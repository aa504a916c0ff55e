"""Reading a records store the way a crash test must: from outside the process that writes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def committed_trials(db: Path) -> list[tuple]:
    """(id, session, task, round, trace) of every committed trial; [] before the schema exists."""
    if not db.exists():
        return []
    try:
        conn = sqlite3.connect(db, timeout=5)
        rows = conn.execute("select id, session_id, task_id, round, trace from trials order by id").fetchall()
        conn.close()
        return rows
    except sqlite3.OperationalError:
        return []
