"""A skipped task's stand-in in the model's estimate: its untuned latency.

A task the user skipped before it was measured, or that the engine gave up on because none of
its candidates built and ran, has no best program; export compiles it unscheduled (on a CPU).
Without a stand-in the session would never have a full estimate, and so no milestone, no
timing of the compiled model and no latency goal. Its untuned latency is what export gives the
user for it, so the estimate counts that (timed once per workload and target, untuned.py).
"""

from __future__ import annotations

from typing import Any

from bcd_core.records.states import TaskStatus
from bcd_core.target import is_gpu
from bcd_core.untuned import stored_untuned


def model_best(run: Any) -> dict[int, float]:
    """Task index -> the latency the compiled model will have for it: the best measured, or for
    a skipped task never measured its untuned latency. The untuned ones are timed only once
    they complete the estimate (every other task measured); a GPU has none (untuned.py)."""
    missing = [task for task in run.tasks if task.index not in run.best]
    if not missing or is_gpu(run.target):
        return run.best
    skipped = {row["idx"] for row in run.store.tasks(run.session_id) if row["status"] == TaskStatus.SKIPPED}
    if any(task.index not in skipped for task in missing):
        return run.best
    return {**stored_untuned(run.store, missing, run.target), **run.best}
