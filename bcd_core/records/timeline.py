"""The store's per-round series and log: timeline points, cost-model metrics, events."""

from __future__ import annotations

from typing import Any

from bcd_core.records.store_base import StoreBase


class TimelineMixin(StoreBase):
    """Reads of what `record_round` writes per round, and the session's event log."""

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

    def events(self, session_id: int, after_id: int = 0) -> list[dict[str, Any]]:
        with self._lock:
            rows = self.db["events"].rows_where("session_id = ? and id > ?", [session_id, after_id], order_by="id")
            return list(rows)

    def latest_round(self, session_id: int) -> dict[str, Any] | None:
        """The session's newest timeline point, with its task's index and name."""
        sql = """select l.*, t.idx as task_index, t.name as task_name from timeline l
                 left join tasks t on t.id = l.task_id where l.session_id = ? order by l.round desc limit 1"""
        with self._lock:
            rows = [dict(row) for row in self.db.query(sql, [session_id])]
        return rows[0] if rows else None
