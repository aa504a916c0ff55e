"""Which remembered tasks are like a new task: pure functions over store rows and tasks."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Protocol

from bcd_core.clustering import HEAVY_PREFIX

# Remembered tasks a new task draws programs from: the nearest few (a new task's exact twin
# first, then the nearest sizes); more only adds programs that rarely win.
SIMILAR_TASKS_PER_TASK = 3


class TaskLike(Protocol):
    sketch_key: str
    loose_sketch_key: str
    flops: float
    shapes: list[list[int]]


@dataclass(frozen=True)
class RememberedTask:
    """A task of an earlier session in a memory store, with its best measured latency."""

    store_label: str  # "" for the tune's own store, else the memory store's path
    session_id: int
    task_id: int
    model_name: str
    name: str
    workload_id: int
    sketch_key: str
    loose_key: str
    flops: float
    shapes: tuple[tuple[int, ...], ...]
    best_s: float
    shash: str = ""  # the workload's structural hash: equal for the very same workload

    @classmethod
    def from_row(cls, store_label: str, row: dict[str, Any]) -> RememberedTask:
        shapes = json.loads(row["shapes"]) if isinstance(row["shapes"], str) else row["shapes"] or []
        cluster_key = row["cluster_key"] or ""
        return cls(
            store_label=store_label,
            session_id=int(row["session_id"]),
            task_id=int(row["task_id"]),
            model_name=row["model_name"] or "",
            name=row["name"],
            workload_id=int(row["workload_id"]),
            sketch_key=row["sketch_key"] or "",
            # Sessions clustered by loose sketch (the default) store that key as cluster key.
            loose_key="" if cluster_key.startswith(HEAVY_PREFIX) else cluster_key,
            flops=float(row["flops"] or 0.0),
            shapes=tuple(tuple(int(d) for d in shape) for shape in shapes),
            best_s=float(row["best_s"]),
            shash=row.get("shash") or "",
        )

    def describe(self) -> str:
        where = f", store {self.store_label}" if self.store_label else ""
        return f"{self.model_name} {self.name} (session {self.session_id}{where})"


def similarity(task: TaskLike, remembered: RememberedTask, shash: str = "") -> tuple[int, int, float] | None:
    """A sort key, smaller is more similar; None when the remembered task's programs cannot
    be replayed on `task` (another sketch). The very workload first (`shash`, the task's
    structural hash), then same shapes, then the same sketch before the same loose sketch,
    then the nearest amount of work."""
    if shash and remembered.shash == shash:
        return (-1, 0, 0.0)
    if remembered.sketch_key and remembered.sketch_key == task.sketch_key:
        level = 0
    elif task.loose_sketch_key and remembered.loose_key == task.loose_sketch_key:
        level = 1
    else:
        return None
    same_shapes = remembered.shapes == tuple(tuple(shape) for shape in task.shapes)
    size_gap = abs(math.log(max(task.flops, 1.0) / max(remembered.flops, 1.0)))
    return (0 if same_shapes else 1, level, size_gap)


def most_similar(
    task: TaskLike, remembered: list[RememberedTask], limit: int = SIMILAR_TASKS_PER_TASK, shash: str = ""
) -> list[RememberedTask]:
    """The `limit` most similar remembered tasks, one per workload (the fastest session's)."""
    scored = []
    for candidate in remembered:
        key = similarity(task, candidate, shash)
        if key is not None:
            scored.append((key, candidate.best_s, candidate.session_id, candidate.task_id, candidate))
    scored.sort(key=lambda item: item[:4])
    picked: list[RememberedTask] = []
    workloads: set[tuple[str, int]] = set()
    for *_, candidate in scored:
        workload = (candidate.store_label, candidate.workload_id)
        if workload in workloads:
            continue
        workloads.add(workload)
        picked.append(candidate)
        if len(picked) >= limit:
            break
    return picked
