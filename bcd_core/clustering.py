"""Group tasks that can share schedules, and pick each group's representative: the task most
similar to the others (mean cosine similarity of their buffer shapes), tuned first so that its
programs can be diffused into the rest. Pure functions over plain task descriptions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np


class ClusterMode(StrEnum):
    OPERATOR = "operator"
    SKETCH = "sketch"
    LOOSE_SKETCH = "loose-sketch"  # sketch, ignoring inlined element-wise blocks (epilogues)


# The key of a member that an earlier version split off for being much heavier than its
# representative: stores may hold such clusters.
HEAVY_PREFIX = "heavy:"


class TaskLike(Protocol):
    index: int
    weight: int
    flops: float
    shapes: list[list[int]]
    operator_key: str
    sketch_key: str
    loose_sketch_key: str


@dataclass
class Cluster:
    id: int
    key: str
    members: list[int]  # task indices, representative included
    representative: int  # a task index

    @property
    def size(self) -> int:
        return len(self.members)

    def followers(self) -> list[int]:
        """Members other than the representative: the tasks that receive diffusion."""
        return [m for m in self.members if m != self.representative]


def cluster_key(task: TaskLike, mode: ClusterMode | str) -> str:
    mode = ClusterMode(mode)
    if mode is ClusterMode.OPERATOR:
        return task.operator_key
    if mode is ClusterMode.LOOSE_SKETCH:
        return task.loose_sketch_key or task.sketch_key
    return task.sketch_key


def shape_vectors(shape_lists: Sequence[Sequence[Sequence[int]]]) -> np.ndarray:
    """One row per task: all its buffer dims flattened, zero-padded to a common length."""
    flat = [[float(d) for shape in shapes for d in shape] for shapes in shape_lists]
    width = max((len(row) for row in flat), default=0)
    matrix = np.zeros((len(flat), width))
    for i, row in enumerate(flat):
        matrix[i, : len(row)] = row
    return matrix


def cosine_similarity_matrix(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    return unit @ unit.T


def choose_representative(shape_lists: Sequence[Sequence[Sequence[int]]], flops: Sequence[float]) -> int:
    """Position of the task most similar (mean cosine over the others) to the rest.
    Ties go to the larger FLOP count, then to the first."""
    count = len(shape_lists)
    if count == 0:
        raise ValueError("cannot choose a representative of an empty cluster")
    if count == 1:
        return 0
    similarity = cosine_similarity_matrix(shape_vectors(shape_lists))
    mean_to_others = (similarity.sum(axis=1) - np.diag(similarity)) / (count - 1)
    # Round so float noise does not break ties that are exact in the shapes.
    scores = np.round(mean_to_others, 12)
    return min(range(count), key=lambda i: (-scores[i], -flops[i], i))


def cluster_tasks(
    tasks: Sequence[TaskLike],
    mode: ClusterMode | str,
    moved: dict[int, str] | None = None,
    representative_overrides: dict[str, int] | None = None,
) -> list[Cluster]:
    """Clusters in priority order (descending FLOPs x weight of the whole cluster).

    `moved` maps a task index to the key of the cluster the user put it in (a fresh key
    makes it a singleton); `representative_overrides` maps a cluster key to a task index.
    """
    moved = moved or {}
    overrides = representative_overrides or {}
    groups: dict[str, list[TaskLike]] = {}
    for task in tasks:
        key = moved[task.index] if task.index in moved else cluster_key(task, mode)
        groups.setdefault(key, []).append(task)

    def pick_representative(key: str, members: list[TaskLike]) -> int:
        indices = [t.index for t in members]
        if key in overrides and overrides[key] in indices:
            return overrides[key]
        return indices[choose_representative([t.shapes for t in members], [t.flops for t in members])]

    representatives = {key: pick_representative(key, members) for key, members in groups.items()}

    def cost(members: list[TaskLike]) -> float:
        return sum(work(t) for t in members)

    ordered = sorted(groups.items(), key=lambda item: (-cost(item[1]), item[1][0].index))
    return [
        Cluster(id=cluster_id, key=key, members=[t.index for t in members], representative=representatives[key])
        for cluster_id, (key, members) in enumerate(ordered)
    ]


def work(task: TaskLike) -> float:
    """A task's share of the model's work: FLOPs x how often the model calls it."""
    return task.flops * task.weight


def cluster_of(clusters: Sequence[Cluster], task_index: int) -> Cluster:
    for cluster in clusters:
        if task_index in cluster.members:
            return cluster
    raise KeyError(task_index)
