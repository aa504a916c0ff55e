"""Bayesian Code Diffusion over stock MetaSchedule: the `bcd` strategy.

Stock MetaSchedule is the floor. Its gradient task scheduler decides which task gets the
next round (the same formula, here in Python so the user can steer it) and every round is
its EvolutionarySearch with the stock settings. Diffusion only adds: when a round of a task
begins and other tasks of its cluster have measured programs faster per FLOP than the
task's own best, some of the round's candidates (`diffusion_share` of the batch, twice that
in the task's first round) are those programs diffused into the task (tile sizes adapted,
provenance kept), in place of the search's lowest-ranked picks. Once measured they are
records of the task, so the search's next population starts from them when they are good
(MetaSchedule seeds each search from the task's best records) and ignores them when they are
not: a wrong guess costs those few trials, never the task's budget. A program is diffused
into a task once. The first round robin measures every cluster's representative before any
member, so members already get their cluster's programs in their first round. One shared
XGBoost model ranks the candidates of every task.
"""

from __future__ import annotations

import logging
import math
import random
import time
from typing import Any

import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.diffusion import diffuse
from bcd_core.tuning.driver import drive
from bcd_core.tuning.metaschedule import evolutionary_search
from bcd_core.tuning.priors import faster_per_flop
from bcd_core.tuning.session import TuningRun
from bcd_core.tuning.steering import ClusterSteering, honour_control

log = logging.getLogger("bcd.tuning.seeded")
# MetaSchedule's GradientBased defaults.
GRADIENT_ALPHA = 0.2
GRADIENT_WINDOW = 3
NO_VALID_TIME = 1e100  # what GradientBased holds for a task with no valid measurement


def task_gradient(history: list[float], weight: float) -> float:
    """MetaSchedule's GradientBased priority of a task from its best latency after each of
    its rounds: the recent slope of the best latency and its best over its rounds, weighted
    by how often the model calls it. A task with no round yet comes first."""
    if not history:
        return math.inf
    values = [value if math.isfinite(value) else NO_VALID_TIME for value in history]
    best = values[-1]
    slope = (values[-1 - GRADIENT_WINDOW] - best) / GRADIENT_WINDOW if len(values) >= 1 + GRADIENT_WINDOW else 0.0
    return (GRADIENT_ALPHA * slope + (1 - GRADIENT_ALPHA) * best / len(values)) * weight


def first_round_order(representatives: list[int], members: list[int], started: set[int]) -> list[int]:
    """The tasks still waiting for their first round: representatives before members."""
    return [index for index in [*representatives, *members] if index not in started]


class SeededPlan(ClusterSteering):
    """Who goes next (MetaSchedule's gradient rule, steered by the user) and which diffused
    programs join a task's round."""

    def __init__(self, run: TuningRun) -> None:
        super().__init__(run)
        self.generated = run.trials_done  # trials handed to the builder, in flight included
        self.started = {index for index, rounds in run.rounds_per_task.items() if rounds > 0}
        self.round_robin_joined = False
        self.rng = random.Random(run.settings.seed)
        self.sketches: dict[int, list[Any]] = {}
        self.received: dict[int, set[int]] = {}  # task -> trial ids diffused into it
        self.seen: dict[int, set[int]] = {}  # task -> module hashes it was handed this run
        self.unmatched: set[int] = set()  # tasks told that no sketch matched
        rows = run.store.tasks(run.session_id)
        self.provenance_written = {row["idx"] for row in rows if row["diffused_best_s"] is not None}
        self._restore_received()
        self.recluster()
        run.batch_hooks.append(self.after_batch)

    def _restore_received(self) -> None:
        """On resume: which programs each task received already (never diffused twice)."""
        index_of_row = {row_id: index for index, row_id in self.run.task_row_ids.items()}
        for trial in self.run.store.trials(self.run.session_id):
            if trial["origin"] == "diffused" and trial["source_trial_id"] is not None:
                self.received.setdefault(index_of_row[trial["task_id"]], set()).add(trial["source_trial_id"])

    # -- choosing the next task -------------------------------------------------------------
    def next_task(self, scheduler: Any) -> int | None:
        if self.generated >= self.total_budget:
            return None
        records = scheduler.tasks_
        for index in range(len(records)):
            scheduler.touch_task(index)  # saves finished batches: their programs can diffuse now
        alive = [i for i, record in enumerate(records) if not record.is_terminated and self.within_budget(i)]
        if not alive:
            return None
        waiting = [i for i in self.first_round_waiting() if i in alive]
        if waiting:
            choice = waiting[0]
        else:
            if not self.round_robin_joined:  # as GradientBased: every first round in, then gradients
                for index, record in enumerate(records):
                    if record.runner_futures is not None:
                        scheduler.join_running_task(index)
                self.round_robin_joined = True
            choice = self.steepest(alive)
        if records[choice].runner_futures is not None:
            scheduler.join_running_task(choice)
        self.started.add(choice)
        return choice

    def first_round_waiting(self) -> list[int]:
        representatives = [c.representative for c in self.clusters]
        members = [m for c in self.clusters for m in c.members if m != c.representative]
        return first_round_order(representatives, members, self.started)

    def steepest(self, alive: list[int]) -> int:
        run = self.run
        gradients = [task_gradient(run.best_history.get(i, []), run.tasks[i].weight) for i in alive]
        top = max(gradients)
        if top == min(gradients):
            return self.rng.choice(alive)
        return alive[gradients.index(top)]

    # -- diffusion --------------------------------------------------------------------------
    def diffusion_quota(self, task_index: int, batch: int) -> int:
        share = self.settings.diffusion_share
        if share <= 0 or self.cluster_of(task_index).size < 2:
            return 0
        if self.run.rounds_per_task.get(task_index, 0) == 0:
            share = min(0.5, 2 * share)  # nothing of its own to search from yet
        return max(1, int(batch * share))

    def mix_in_diffused(self, task_index: int, candidates: list[ms.MeasureCandidate]) -> list[ms.MeasureCandidate]:
        """The search's batch with up to a quota of its last (lowest-ranked) candidates
        replaced by programs diffused from the task's cluster."""
        seen = self.seen.setdefault(task_index, set())
        seen.update(int(tvm_ffi.structural_hash(c.sch.mod)) for c in candidates)
        quota = min(self.diffusion_quota(task_index, len(candidates)), len(candidates))
        seeds = self.diffused(task_index, quota, seen) if quota else []
        return candidates[: len(candidates) - len(seeds)] + seeds

    def diffused(self, task_index: int, count: int, seen: set[int]) -> list[ms.MeasureCandidate]:
        run = self.run
        cluster = self.cluster_of(task_index)
        received = self.received.setdefault(task_index, set())
        sources = [m for m in cluster.members if m != task_index]
        priors = faster_per_flop(run, task_index, sources, count, exclude=received)
        if not priors or task_index not in self.sketches:
            return []
        seed = self.settings.seed * 7919 + task_index * 101 + run.round
        result = diffuse(run.contexts[task_index], self.sketches[task_index], priors, count, seed, seen, spread=True)
        received.update(trial_id for trial_id, _ in priors)
        if result.matched_sketch is None and task_index not in self.unmatched:
            self.unmatched.add(task_index)
            run.message(
                "fallback",
                f"{run.tasks[task_index].name}: no sketch matches its cluster's programs; MetaSchedule's search alone "
                "tunes it until one does",
                task_index,
            )
        for program in result.programs:
            run.provenance[int(tvm_ffi.structural_hash(program.schedule.mod))] = (
                program.source_trial_id,
                program.adaptation,
            )
        return [program.candidate() for program in result.programs]

    def after_batch(self, task_index: int, trials: list[Any], trial_ids: list[int]) -> None:
        """Status and provenance for the cluster tree: a task's first valid diffused program
        is what diffusion gave it (its latency then is kept beside its latency now)."""
        if task_index in self.skipped:
            return
        diffused = [(t.latency_s, t.source_trial_id) for t in trials if t.origin == "diffused" and t.latency_s]
        fields: dict[str, Any] = {"status": "tuning"}
        if diffused and task_index not in self.provenance_written:
            self.provenance_written.add(task_index)
            latency, source = min(diffused, key=lambda pair: pair[0])
            fields.update(diffused_best_s=latency, diffused_from_trial_id=source, status="diffused")
        self.run.store.update_task(self.run.task_row_ids[task_index], **fields)


@derived_object
class SeededSearch(ms.search_strategy.PySearchStrategy):
    """MetaSchedule's EvolutionarySearch with the stock settings; each batch may carry a few
    diffused programs (SeededPlan.mix_in_diffused), and none past the session's budget."""

    def __init__(self, plan: SeededPlan, task_index: int) -> None:
        super().__init__()
        self.plan = plan
        self.task_index = task_index
        self.inner = evolutionary_search(plan.run)

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        self.plan.sketches[self.task_index] = list(design_spaces)
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[ms.MeasureCandidate] | None:
        plan = self.plan
        left = plan.total_budget - plan.generated
        if self.task_index in plan.run.given_up or left <= 0:
            return None
        candidates = self.inner.generate_measure_candidates()
        if candidates is None:
            return None
        started = time.perf_counter()
        batch = plan.mix_in_diffused(self.task_index, list(candidates)[:left])
        plan.run.bookkeeping_s += time.perf_counter() - started
        plan.generated += len(batch)
        return batch

    def notify_runner_results(self, measure_candidates, results) -> None:
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self) -> SeededSearch:
        return SeededSearch(self.plan, self.task_index)


@derived_object
class SteeredGradientScheduler(ms.task_scheduler.PyTaskScheduler):
    """MetaSchedule's gradient task scheduler, with the user's requests applied between rounds."""

    def __init__(self, plan: SeededPlan) -> None:
        super().__init__()
        self.plan = plan

    def next_task_id(self) -> int:
        plan = self.plan
        if not honour_control(plan):
            return -1
        started = time.perf_counter()
        choice = plan.next_task(self._outer())
        plan.run.bookkeeping_s += time.perf_counter() - started
        return -1 if choice is None else choice


def tune_seeded(run: TuningRun) -> None:
    if run.trials_done >= run.trials_total:
        return
    plan = SeededPlan(run)
    contexts = [run.make_context(task, SeededSearch(plan, task.index)) for task in run.tasks]
    drive(run, contexts, SteeredGradientScheduler(plan))
