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

    def events(self, session_id: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db["events"].rows_where("session_id = ?", [session_id], order_by="id"))
