"""Which task tunes next in a `bcd` tune: MetaSchedule's gradient rule, steered by the user.

Stock's GradientBased scheduler is the rule (the same formula, here in Python so that the
user's steering applies between rounds), with two differences: a task's trials are counted in
whole rounds, since BCD's first rounds are not all whole, and every batch is joined as soon as
it is measured, so its programs can diffuse and the cost model learns from it at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.tuning.bcd.plan import BcdPlan
from bcd_core.tuning.steering import honour_control

# MetaSchedule's GradientBased defaults.
GRADIENT_ALPHA = 0.2
GRADIENT_WINDOW = 3
NO_VALID_TIME = 1e100  # what GradientBased holds for a task with no valid measurement
PROBE_END = "a layout probe measures each task's first round, and every task has had it"


def task_gradient(history: list[float], weight: float, rounds_spent: float | None = None) -> float:
    """MetaSchedule's GradientBased priority of a task from its best latency after each of
    its rounds: the recent slope of the best latency and its best over the allocation spent
    on it, weighted by how often the model calls it. A task with no round yet comes first.

    `rounds_spent` is that allocation: the task's trials in whole rounds. Stock's rounds are
    all whole, so there it is the number of rounds (the default), as in MetaSchedule; BCD
    gives a light member half a first round, and its best over one round would rank it with
    tasks that measured twice as many programs (Ansor's rule, which MetaSchedule's follows,
    divides the best by the allocation spent on the task, in units of equal rounds)."""
    if not history:
        return math.inf
    values = [value if math.isfinite(value) else NO_VALID_TIME for value in history]
    best = values[-1]
    slope = (values[-1 - GRADIENT_WINDOW] - best) / GRADIENT_WINDOW if len(values) >= 1 + GRADIENT_WINDOW else 0.0
    spent = rounds_spent if rounds_spent else len(values)
    return (GRADIENT_ALPHA * slope + (1 - GRADIENT_ALPHA) * best / spent) * weight


def first_round_order(
    representatives: list[int], members: list[int], started: set[int], work: Mapping[int, float] | None = None
) -> list[int]:
    """The tasks still waiting for their first round: representatives before members, both in
    the clusters' order (by cost, or as the user ordered them), or, given `work` (FLOPs x
    weight), the members heaviest first: a layout probe's, so that a probe that cannot win finds
    out within its first tasks (probe_cutoff.py). A member's first round needs its
    representative's programs, nothing from other members."""
    work = work or {}
    heaviest_first = sorted(members, key=lambda index: -work.get(index, 0.0))
    return [index for index in [*representatives, *heaviest_first] if index not in started]


def next_task(plan: BcdPlan, scheduler: Any) -> int | None:
    """The next task to tune: every task's first round (representatives first), then the
    steepest gradient; None once the budget is handed out, or in a layout probe once every
    task has had its first round. A probe compares layouts at one round a task; a second round
    is an evolution (a population sampled, mutated four times and scored each time), several
    times a ranked first round's cost, and a light task that measured half a first round would
    spend one on two trials. The winning probe's tune gives those rounds where gradients say."""
    if plan.generated >= plan.total_budget:
        return None
    records = scheduler.tasks_
    for index in range(len(records)):
        scheduler.touch_task(index)  # saves finished batches: their programs can diffuse now
    alive = [i for i, record in enumerate(records) if not record.is_terminated and plan.within_budget(i)]
    owed = [i for i in alive if plan.trials_owed(i)]
    if owed and plan.total_budget - plan.generated <= sum(plan.trials_owed(i) for i in owed):
        alive = owed  # what is left of the total goes to the budgets the user set
    if not alive:
        return None
    representatives = [c.representative for c in plan.clusters]
    members = [m for c in plan.clusters for m in c.members if m != c.representative]
    work = {i: task.weighted_flops for i, task in enumerate(plan.run.tasks)} if plan.settings.layout_probe else None
    waiting = [i for i in first_round_order(representatives, members, plan.started, work) if i in alive]
    if waiting:
        choice = waiting[0]
    elif plan.settings.layout_probe:  # its rounds after the first would be evolved: left to the tune
        plan.run.end_reason = PROBE_END
        return None
    else:
        if not plan.round_robin_joined:  # as GradientBased: every first round in, then gradients
            for index, record in enumerate(records):
                if record.runner_futures is not None:
                    scheduler.join_running_task(index)
            plan.round_robin_joined = True
        choice = steepest(plan, alive)
    if records[choice].runner_futures is not None:
        scheduler.join_running_task(choice)
    plan.started.add(choice)
    return choice


def steepest(plan: BcdPlan, alive: list[int]) -> int:
    run = plan.run
    whole = plan.settings.batch_size
    gradients = [
        task_gradient(run.best_history.get(i, []), run.tasks[i].weight, run.trial_counts.get(i, 0) / whole)
        for i in alive
    ]
    top = max(gradients)
    if top == min(gradients):
        return plan.rng.choice(alive)
    return alive[gradients.index(top)]


@derived_object
class BcdScheduler(ms.task_scheduler.PyTaskScheduler):
    """MetaSchedule's gradient task scheduler, with the user's requests applied between rounds."""

    def __init__(self, plan: BcdPlan) -> None:
        super().__init__()
        self.plan = plan

    def next_task_id(self) -> int:
        plan = self.plan
        if not honour_control(plan):
            return -1
        started = time.perf_counter()
        choice = next_task(plan, self._outer())
        plan.run.bookkeeping_s += time.perf_counter() - started
        return -1 if choice is None else choice
