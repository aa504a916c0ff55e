"""The clusters of a running tune and the user's steering of them, shared by the strategies
that diffuse: moves, representatives, cluster order, budgets, skips.

Requests arrive through `TuningControl` and are applied between rounds (`honour_control`);
every change is written to the store's task rows, so a stopped or crashed session resumes
with what the user did.
"""

from __future__ import annotations

import time

from bcd_core.clustering import Cluster, cluster_key, cluster_of, cluster_tasks
from bcd_core.records.states import EventKind, TaskStatus
from bcd_core.tuning.control import SINGLETON_PREFIX, ControlRequest, RequestKind
from bcd_core.tuning.run import TuningRun


class ClusterSteering:
    """Clusters (the model's own, changed by the user's moves, representatives and order),
    per-task budgets and skips, restored from the store on resume."""

    def __init__(self, run: TuningRun) -> None:
        self.run = run
        self.settings = run.settings
        self.moved: dict[int, str] = {}
        self.representative_overrides: dict[str, int] = {}
        self.priority: list[str] = []  # user's cluster order (keys); empty = by cost
        self.task_caps: dict[int, int] = {}
        self.skipped: set[int] = set()
        self.total_budget = run.trials_total
        self.clusters: list[Cluster] = []  # filled by recluster()
        self._restore_budgets_and_skips()
        self._restore_cluster_changes()
        run.admit_batch = self.admit_batch

    def _restore_budgets_and_skips(self) -> None:
        for row in self.run.store.tasks(self.run.session_id):
            if row["status"] == TaskStatus.SKIPPED:
                self.skipped.add(row["idx"])
            if row["budget"] is not None and row["budget"] != self.settings.trials_per_task:
                self.task_caps[row["idx"]] = row["budget"]  # a budget the user changed earlier

    def _restore_cluster_changes(self) -> None:
        """On resume: the clusters as the session left them (recluster writes them to the task
        rows), so a task the user moved, a representative the user chose and the user's
        cluster order survive a stop or a crash."""
        rows = [row for row in self.run.store.tasks(self.run.session_id) if row["cluster_key"] is not None]
        if not rows:
            return  # a new session
        mode = self.settings.cluster_mode
        for row in rows:
            if row["cluster_key"] != cluster_key(self.run.tasks[row["idx"]], mode):
                self.moved[row["idx"]] = row["cluster_key"]
            if row["is_representative"]:
                self.representative_overrides[row["cluster_key"]] = row["idx"]
        self.priority = list(dict.fromkeys(row["cluster_key"] for row in sorted(rows, key=lambda r: r["cluster_id"])))

    def recluster(self) -> None:
        # Keep representatives that were already chosen (moving a member out must not
        # re-elect a representative whose members were tuned from another); the user's
        # explicit choices win.
        sticky = {c.key: c.representative for c in self.clusters}
        overrides = {**sticky, **self.representative_overrides}
        clusters = cluster_tasks(self.run.tasks, self.settings.cluster_mode, self.moved, overrides)
        if self.priority:
            rank = {key: i for i, key in enumerate(self.priority)}
            clusters.sort(key=lambda c: (rank.get(c.key, len(rank)), c.id))
        self.clusters = clusters
        with self.run.store.transaction() as db:
            for position, cluster in enumerate(clusters):
                for index in cluster.members:
                    db["tasks"].update(
                        self.run.task_row_ids[index],
                        {
                            "cluster_id": position,
                            "cluster_key": cluster.key,
                            "is_representative": int(index == cluster.representative and cluster.size > 1),
                        },
                    )

    def cluster_of(self, task_index: int) -> Cluster:
        return cluster_of(self.clusters, task_index)

    # -- requests ---------------------------------------------------------------------------
    def apply(self, request: ControlRequest) -> None:
        args = request.args
        if request.kind == RequestKind.PRIORITY:
            self.priority = list(args["order"])
            self.recluster()
        elif request.kind == RequestKind.TASK_BUDGET:
            self.set_task_cap(args["task"], args["trials"])
        elif request.kind == RequestKind.CLUSTER_BUDGET:
            cluster = next((c for c in self.clusters if c.key == args["cluster"]), None)
            for index in cluster.members if cluster else []:
                self.set_task_cap(index, args["trials"])
        elif request.kind == RequestKind.TOTAL_BUDGET:
            self.total_budget = self.run.trials_total = args["trials"]  # progress shows the new total
            self.run.store.set_total_budget(self.run.session_id, args["trials"])
        elif request.kind == RequestKind.SKIP:
            self.skipped.add(args["task"])
            self.set_status(args["task"], TaskStatus.SKIPPED)
        elif request.kind == RequestKind.UNSKIP:
            self.skipped.discard(args["task"])
            measured = self.run.trial_counts.get(args["task"], 0) > 0
            self.set_status(args["task"], TaskStatus.TUNING if measured else TaskStatus.QUEUED)
        elif request.kind == RequestKind.MOVE:
            key = args["cluster"] or f"{SINGLETON_PREFIX}{args['task']}"
            self.moved[args["task"]] = key
            self.recluster()
        elif request.kind == RequestKind.REPRESENTATIVE:
            self.representative_overrides[args["cluster"]] = args["task"]
            self.recluster()
        else:
            raise ValueError(f"unknown control request {request.kind}")
        self.run.message(EventKind.CONTROL, f"applied {request.describe()}")

    def set_task_cap(self, task_index: int, trials: int) -> None:
        """A task's budget is the trials it gets: the session's total moves by the difference
        from what the task had (its budget, else trials per task), never below what is spent,
        and the scheduler keeps enough of the total for it (`owed`)."""
        previous = self.task_caps.get(task_index, self.settings.trials_per_task)
        self.task_caps[task_index] = trials
        self.run.store.update_task(self.run.task_row_ids[task_index], budget=trials)  # what viewers show
        if trials != previous:
            total = max(self.total_budget + trials - previous, self.run.trials_done)
            self.total_budget = self.run.trials_total = total
            self.run.store.set_total_budget(self.run.session_id, total)

    def trials_owed(self, task_index: int) -> int:
        """Trials a task with a budget of the user's still has to get (0 when none is set)."""
        cap = self.task_caps.get(task_index)
        if cap is None or task_index in self.skipped or task_index in self.run.given_up:
            return 0
        return max(cap - self.run.trial_counts.get(task_index, 0), 0)

    def admit_batch(self, task_index: int, measured: int) -> int:
        """How many of a task's batch, measured while the user skipped the task or lowered its
        budget (sent while paused, or mid-round), to record: none once skipped, what the budget
        leaves otherwise. The trials not recorded go back to the total."""
        keep = measured
        if task_index in self.skipped:
            keep = 0
        elif task_index in self.task_caps:
            keep = min(measured, self.trials_owed(task_index))
        self.returned_trials(measured - keep)
        return keep

    def returned_trials(self, count: int) -> None:
        """Trials handed out but not recorded (a strategy that counts what it hands out
        takes them back)."""

    def trials_left_for(self, task_index: int, left: int) -> int:
        """Of `left` trials still to hand out, what one batch of the task may take: no more than
        its budget leaves, and none that other tasks' budgets are owed."""
        owed_elsewhere = sum(self.trials_owed(i) for i in self.task_caps if i != task_index)
        mine = left - owed_elsewhere if task_index not in self.task_caps else self.trials_owed(task_index)
        return max(min(left, mine), 0)

    def set_status(self, task_index: int, status: str) -> None:
        self.run.store.update_task(self.run.task_row_ids[task_index], status=status)

    def within_budget(self, task_index: int) -> bool:
        """Not skipped, not given up, and under the trial cap the user set (if any)."""
        if task_index in self.skipped or task_index in self.run.given_up:
            return False
        cap = self.task_caps.get(task_index)
        return cap is None or self.run.trial_counts.get(task_index, 0) < cap


def honour_control(steering: ClusterSteering) -> bool:
    """At a round boundary: wait while paused, apply the user's pending requests. False when
    the user asked to stop, or the run was cut short. Time spent here, less the pause, counts
    as bookkeeping."""
    run = steering.run
    if run.cut_reason:
        return False
    started = time.perf_counter()
    control = run.control
    started += run.wait_while_paused()  # waiting is not bookkeeping
    if control.stop_requested:
        run.message(EventKind.INFO, f"{control.stop_reason}: stopped at a round boundary")
        return False
    for request in control.take_pending():
        try:
            steering.apply(request)
        except Exception as err:  # a bad request must not end the session
            run.message(EventKind.WARNING, f"could not apply {request.describe()}: {err}")
    run.bookkeeping_s += time.perf_counter() - started
    return True
