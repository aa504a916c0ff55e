"""Programs timed again after the search measured them (bcd_core/tuning/retime.py), and the
best records chosen with those timings.

A candidate's stored latency is one measurement. The best of a task is the smallest of many
such measurements, and the smallest of many noisy numbers is an optimistic one, so a task's
leading programs are timed again with more repeats. Their re-timed latency then counts
wherever a best is chosen for use (the record the compiler applies, the estimate shown beside
the compiled model), while `latency_s` stays what the search measured: the cost model and the
curves of a race keep the same kind of number on both sides.
"""

from __future__ import annotations

from typing import Any

from bcd_core.records.rows import now_iso
from bcd_core.records.store_base import StoreBase

TABLE = "retimings"


class RetimingsMixin(StoreBase):
    """Re-timed latencies per trial (the latest timing of a trial wins)."""

    _has_retimings: bool = False

    def has_retimings_table(self) -> bool:
        """False only for a store that predates re-timing and was opened read-only (nothing
        in it was re-timed). Checked until found: a writer may add it later."""
        if not self._has_retimings:
            with self._lock:
                self._has_retimings = TABLE in self.db.table_names()
        return self._has_retimings

    def record_retimings(self, session_id: int, timings: dict[int, tuple[float, float, int]]) -> None:
        """Trial id -> (median seconds, relative spread, repeats)."""
        if self.read_only or not timings:
            return
        rows = [
            {
                "trial_id": trial_id,
                "session_id": session_id,
                "latency_s": seconds,
                "spread": spread,
                "repeats": repeats,
                "measured_at": now_iso(),
            }
            for trial_id, (seconds, spread, repeats) in timings.items()
        ]
        with self.transaction() as db:
            db[TABLE].upsert_all(rows, pk="trial_id")

    def retimed_latencies(self, trial_ids: list[int]) -> dict[int, float]:
        if not trial_ids or not self.has_retimings_table():
            return {}
        marks = ", ".join("?" * len(trial_ids))
        sql = f"select trial_id, latency_s from {TABLE} where trial_id in ({marks})"
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, trial_ids).fetchall()}

    def retimed_records(self, workload_id: int, where: str, params: list[Any]) -> list[dict[str, Any]]:
        """The workload's re-timed trials that pass the `where` filter on `trials` (alias t),
        with `latency_s` replaced by the re-timed latency."""
        if not self.has_retimings_table():
            return []
        sql = (
            f"select t.*, r.latency_s as retimed_s from trials t "
            f"join {TABLE} r on r.trial_id = t.id where t.workload_id = ? and {where}"
        )
        with self._lock:
            rows = [dict(row) for row in self.db.query(sql, [workload_id, *params])]
        for row in rows:
            row["latency_s"] = row.pop("retimed_s")
        return rows
