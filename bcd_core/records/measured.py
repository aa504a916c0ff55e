"""Whole-model measurements kept in the store: the layout each model was measured to tune
best in on a target (bcd_core/tuning/layout_choice.py), and the compiled model's latency
timed at a session's milestones (bcd_core/tuning/milestones.py)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from bcd_core.records.rows import now_iso
from bcd_core.records.store_base import StoreBase
from bcd_core.records.timing import PLAIN_LAYOUT


@dataclass(frozen=True)
class LayoutChoice:
    """The layout a model's convolutions tune in, and why (with the probe's figures when measured)."""

    layout: str
    reason: str
    block: int = 0  # channels per block when blocked
    nchw_s: float | None = None  # the probed tasks' best seconds per giga-operation, each layout
    blocked_s: float | None = None
    probe_tasks: int = 0
    probe_trials: int = 0
    probe_s: float = 0.0
    winograd_s: float | None = None  # where a convolution fits Winograd (bcd_core/winograd.py)

    def describe(self) -> str:
        return f"{self.shown()}: {self.reason}"

    def summary(self) -> str:
        """The layout and how it was decided ("measured", "as asked (--layout)"), short enough
        for a narrow panel: a measured reason names every probe's figures (describe)."""
        return f"{self.shown()}, {self.reason.split(':', 1)[0]}"

    def shown(self) -> str:
        return f"{self.layout} (NCHW{self.block}c)" if self.block else self.layout

    def row(self, key: str, threads: int, model_hash: str) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        return {**fields, "model_hash": model_hash, "target_key": key, "kernel_threads": threads}


def stored_choice(row: dict[str, Any] | None) -> LayoutChoice | None:
    if row is None:
        return None
    names = {f.name for f in dataclasses.fields(LayoutChoice)}
    return LayoutChoice(**{k: v for k, v in row.items() if k in names})


def session_layout_choice(store: Any, session: dict[str, Any]) -> LayoutChoice:
    """The layout a stored session tuned in, and why: the stored measurement when it chose it."""
    settings = json.loads(session["settings"] or "{}")
    layout = settings.get("conv_layout", PLAIN_LAYOUT)
    threads, shapes = settings.get("kernel_threads", 0), settings.get("input_shapes", {})
    found = stored_choice(store.layout_choice(session["model_hash"], session["target_key"], threads, shapes))
    if found is not None and found.layout == layout:
        return found
    if "conv_layout" not in settings:
        return LayoutChoice(layout, "tuned before layouts were chosen")
    return LayoutChoice(layout, "as asked, or as the session it continued")


def shapes_key(input_shapes: dict[str, Any]) -> str:
    """The user's input shapes as one comparable string (sorted names, plain lists)."""
    return json.dumps({name: [int(d) for d in dims] for name, dims in sorted(input_shapes.items())})


class MeasuredMixin(StoreBase):
    """Layout choices per model and target; the compiled model's latency per session."""

    def layout_choice(
        self, model_hash: str, target_key: str, kernel_threads: int, input_shapes: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The choice made for this model, target, thread count and input shapes, if any."""
        if "layout_choices" not in self.db.table_names():
            return None
        sql = (
            "select * from layout_choices where model_hash = ? and target_key = ? and kernel_threads = ? "
            "and input_shapes = ? order by id desc limit 1"
        )
        args = [model_hash, target_key, kernel_threads, shapes_key(input_shapes)]
        with self._lock:
            rows = list(self.db.query(sql, args))
        return rows[0] if rows else None

    def record_layout_choice(self, row: dict[str, Any], input_shapes: dict[str, Any]) -> None:
        if self.read_only:
            return
        with self.transaction() as db:
            db["layout_choices"].insert({**row, "input_shapes": shapes_key(input_shapes), "measured_at": now_iso()})

    def model_latencies(self, session_id: int) -> list[dict[str, Any]]:
        """The session's whole-model timings, oldest first."""
        if "model_latency" not in self.db.table_names():
            return []
        sql = "select * from model_latency where session_id = ? order by id"
        with self._lock:
            return list(self.db.query(sql, [session_id]))

    def rename_milestone(self, session_id: int, old: str, new: str) -> None:
        """Call the session's `old` whole-model timings `new` (a probe's final is its tune's first)."""
        if self.read_only or "model_latency" not in self.db.table_names():
            return
        with self.transaction() as db:
            sql = "update model_latency set milestone = ? where session_id = ? and milestone = ?"
            db.execute(sql, [new, session_id, old])

    def record_model_latency(self, session_id: int, row: dict[str, Any]) -> None:
        if self.read_only:
            return
        with self.transaction() as db:
            db["model_latency"].insert({**row, "session_id": session_id, "measured_at": now_iso()})
