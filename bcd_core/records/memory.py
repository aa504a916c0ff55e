"""What tuning memory (bcd_core/memory) reads from a store, and what a session records of it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bcd_core.records.store_base import StoreBase


class MemoryMixin(StoreBase):
    """Earlier sessions' tasks with their best latency, and the memory a session drew on."""

    def remembered_tasks(self, session_ids: Sequence[int]) -> list[dict[str, Any]]:
        """Every task of `session_ids` that has a valid measurement, with its session's model
        and its best latency (one covering-index lookup per task, so fast on big stores)."""
        if not session_ids:
            return []
        marks = ", ".join("?" * len(session_ids))
        sql = f"""
            select t.id as task_id, t.session_id, s.model_name, s.target_key, t.name, t.workload_id,
                   t.sketch_key, t.cluster_key, t.flops, t.shapes, w.shash,
                   (select min(r.latency_s) from trials r
                     where r.session_id = t.session_id and r.task_id = t.id and r.latency_s is not null) as best_s
            from tasks t join sessions s on s.id = t.session_id join workloads w on w.id = t.workload_id
            where t.session_id in ({marks})
            order by t.session_id, t.idx"""
        with self._lock:
            rows = [dict(row) for row in self.db.query(sql, list(session_ids))]
        return [row for row in rows if row["best_s"] is not None]

    def task_trials(self, session_id: int, task_id: int, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` valid trials of one task of one session, fastest first."""
        sql = (
            "select * from trials where session_id = ? and task_id = ? and latency_s is not null "
            "order by latency_s, id limit ?"
        )
        with self._lock:
            return [dict(row) for row in self.db.query(sql, [session_id, task_id, limit])]

    def record_memory_used(self, session_id: int, sources: Iterable[dict[str, Any]]) -> None:
        """`sources`: rows of store ("" for this store), source_session_id, model_name."""
        with self.transaction() as db:
            db["memory_used"].insert_all({**row, "session_id": session_id} for row in sources)

    def memory_used(self, session_id: int) -> list[dict[str, Any]]:
        if "memory_used" not in self.db.table_names():
            return []  # an older store opened read-only
        with self._lock:
            return list(self.db["memory_used"].rows_where("session_id = ?", [session_id], order_by="id"))
