"""Untuned latencies kept per workload and target (bcd_core/untuned.py times them), and
onnxruntime's per model and target (bcd_core/reference.py)."""

from __future__ import annotations

from collections.abc import Sequence

from bcd_core.records.rows import now_iso
from bcd_core.records.store_base import StoreBase


class UntunedMixin(StoreBase):
    """Each workload's unscheduled latency on a target, timed once."""

    def untuned_latencies(self, shashes: Sequence[str], target_key: str) -> dict[str, float]:
        """Workload hash -> the untuned latency stored for it on `target_key`."""
        if not shashes or "untuned" not in self.db.table_names():
            return {}
        marks = ", ".join("?" * len(shashes))
        sql = f"select shash, latency_s from untuned where target_key = ? and shash in ({marks}) order by id"
        with self._lock:
            return {row["shash"]: row["latency_s"] for row in self.db.query(sql, [target_key, *shashes])}

    def record_untuned(self, latencies: dict[str, float], target_key: str) -> None:
        if self.read_only:
            return
        rows = [
            {"shash": shash, "target_key": target_key, "latency_s": latency, "measured_at": now_iso()}
            for shash, latency in latencies.items()
        ]
        with self.transaction() as db:
            db["untuned"].insert_all(rows)


class ReferenceMixin(StoreBase):
    """onnxruntime's latency per model and target, timed until two timings agree, with their
    spread. A row without a spread was timed once (by an older bcd) and is not trusted: the
    model is timed again."""

    def reference_timing(self, model_hash: str, target_key: str) -> tuple[float, float] | None:
        """(latency, spread) of the latest trusted timing, or None."""
        if "reference" not in self.db.table_names() or "spread" not in self.db["reference"].columns_dict:
            return None
        sql = (
            "select latency_s, spread from reference where model_hash = ? and target_key = ? and spread is not null "
            "order by id desc limit 1"
        )
        with self._lock:
            rows = self.db.execute(sql, [model_hash, target_key]).fetchall()
        return (float(rows[0][0]), float(rows[0][1])) if rows else None

    def reference_latency(self, model_hash: str, target_key: str) -> float | None:
        timing = self.reference_timing(model_hash, target_key)
        return None if timing is None else timing[0]

    def record_reference(self, model_hash: str, target_key: str, latency_s: float, spread: float) -> None:
        if self.read_only:
            return
        row = {
            "model_hash": model_hash,
            "target_key": target_key,
            "latency_s": latency_s,
            "spread": spread,
            "measured_at": now_iso(),
        }
        with self.transaction() as db:
            db["reference"].insert(row)
