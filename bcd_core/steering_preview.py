"""What steering requests made before Tune will do, shown on the model's preview at once.

Before a session exists nothing applies requests: the engine receives them when tuning starts
(tuning/steering.py applies them then). The preview applies the same rules to the queued model
so the user sees the order, budgets, skips, totals, moves and representatives they asked for
before pressing Tune. Moves and representatives re-cluster as the engine does: the clusters as
they are, the moves on top, chosen representatives kept, clusters ordered by their work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bcd_core.clustering import cluster_tasks
from bcd_core.records.states import TaskStatus
from bcd_core.session_view import SessionSnapshot, TaskView, clusters_of
from bcd_core.tuning.control import SINGLETON_PREFIX, ControlRequest, RequestKind
from bcd_core.tuning.settings import DEFAULT_CLUSTER_MODE


def _ordered(tasks: list[TaskView], order: list[str]) -> list[TaskView]:
    """Tasks with their clusters' positions in `order` (clusters it does not name keep theirs, after)."""
    rank = {key: position for position, key in enumerate(order)}
    now = {t.cluster_key: t.cluster_position for t in tasks}
    keys = sorted(now, key=lambda key: (rank.get(key, len(rank)), now[key]))
    position = {key: index for index, key in enumerate(keys)}
    return [replace(t, cluster_position=position[t.cluster_key]) for t in tasks]


class PreviewClusters:
    """The preview's clusters as the engine's steering changes them (tuning/steering.py's
    `recluster`): every task keeps its cluster unless moved, representatives stay."""

    def __init__(self, preview: SessionSnapshot) -> None:
        self.moved = {t.index: t.cluster_key for t in preview.tasks}  # every task's key: no mode re-keys one
        self.representatives = {c.key: c.representative for c in preview.clusters if c.representative is not None}
        self.changed = False

    def apply(self, request: ControlRequest) -> None:
        args = request.args
        if request.kind == RequestKind.MOVE and args["task"] in self.moved:
            self.moved[args["task"]] = args["cluster"] or f"{SINGLETON_PREFIX}{args['task']}"
        elif request.kind == RequestKind.REPRESENTATIVE:
            self.representatives[args["cluster"]] = args["task"]
        else:
            return
        self.changed = True

    def regrouped(self, tasks: list[TaskView]) -> list[TaskView]:
        clusters = cluster_tasks(tasks, DEFAULT_CLUSTER_MODE, self.moved, self.representatives)
        placed = {}
        for position, cluster in enumerate(clusters):
            for index in cluster.members:
                lead = index == cluster.representative and cluster.size > 1
                placed[index] = (cluster.key, position, lead)
        return [
            replace(
                t,
                cluster_key=placed[t.index][0],
                cluster_position=placed[t.index][1],
                is_representative=placed[t.index][2],
            )
            for t in tasks
        ]


def preview_with_requests(preview: SessionSnapshot, requests: Sequence[ControlRequest]) -> SessionSnapshot:
    """`preview` (a model not tuned yet) as it will start once `requests` apply, in their order:
    a task budget is the trials that task gets and moves the total by the difference, as in
    the engine; a cluster budget is each member's; a skip marks the task skipped."""
    per_task = int(preview.settings.get("trials_per_task") or 0)
    tasks = {t.index: replace(t) for t in preview.tasks}
    total = per_task * len(tasks)
    order: list[str] | None = None
    clusters = PreviewClusters(preview)
    for request in requests:
        args = request.args
        clusters.apply(request)
        if request.kind == RequestKind.PRIORITY:
            order = list(args["order"])
        elif request.kind in (RequestKind.TASK_BUDGET, RequestKind.CLUSTER_BUDGET):
            chosen = (
                [args["task"]] if "task" in args else [i for i, t in tasks.items() if t.cluster_key == args["cluster"]]
            )
            for index in chosen:
                previous = tasks[index].cap if tasks[index].cap is not None else per_task
                tasks[index].cap = int(args["trials"])
                total = max(total + int(args["trials"]) - previous, 0)
        elif request.kind == RequestKind.TOTAL_BUDGET:
            total = int(args["trials"])
        elif request.kind in (RequestKind.SKIP, RequestKind.UNSKIP) and args["task"] in tasks:
            skip = request.kind == RequestKind.SKIP
            tasks[args["task"]].status = TaskStatus.SKIPPED if skip else TaskStatus.QUEUED
    views = list(tasks.values())
    if clusters.changed:
        views = clusters.regrouped(views)
    if order is not None:
        views = _ordered(views, order)
    session = dict(preview.session, total_budget=total)
    return replace(preview, session=session, tasks=views, clusters=clusters_of(views), _by_index=None)
