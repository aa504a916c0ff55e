"""The Bayesian Code Diffusion strategy on MetaSchedule (bcd-algorithm.md sections 3-6).

Phase 1 tunes each cluster's representative (clusters in priority order) for
min(|cluster|, 10) rounds, or, with phase-1 patience (the default), up to 10 rounds until it
stops improving. Phase 2 gives every member a diffusion round (the
representative's current best programs, remapped to the member and measured first) and a
seeded round (an evolutionary search from them, restricted to the matching sketch, with
fewer generations, half a representative's batch). All diffusion rounds come first, so that
every task has a round (and the model an estimate) as early as possible. Phase 3 then spends
the rest of the budget where the estimated model latency should drop most per trial spent
(bcd-algorithm.md section 5: "when every task has had a round"; a member's seeded round is
half a batch, so it costs half a round): a member's next round there is its seeded round,
later ones MetaSchedule's standard search over its full design space. A task whose best stopped
improving (by at least 1 %, about the timing noise) counts for less each round and searches
more widely; a member whose representative improved expects as much from its refreshed
prior.
With cluster priors (`prior_source` "cluster", or "auto", the default, on a model with a
large cluster), a task's diffusion draws on every other
task of its cluster, not only the representative: any program faster per FLOP than the task's
own best, once its sources got better since its last diffusion (the representative too, after
its phase 1).
One shared XGBoost model learns from every measurement.
Clusters under `minor_cluster_share` of the model's work (pooling, concatenation) get one
representative round and diffusion-only members.

MetaSchedule's C++ task scheduler still runs the loop (builder, runner, callbacks); this
module decides which task goes next (`BcdScheduler.next_task_id`) and what a member measures
first (`BcdSearch`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.clustering import Cluster
from bcd_core.cost_model.phased import python_model
from bcd_core.records.states import EventKind, TaskStatus, TrialOrigin
from bcd_core.tuning.driver import drive
from bcd_core.tuning.phased_priors import PlanPriors
from bcd_core.tuning.phased_restore import PlanRestore
from bcd_core.tuning.priors import MIN_IMPROVEMENT
from bcd_core.tuning.session import TuningRun
from bcd_core.tuning.steering import ClusterSteering, honour_control

log = logging.getLogger("bcd.tuning.bcd")
GRADIENT_WINDOW = 3
STOCK_GENERATIONS = 4  # EvolutionarySearch's default genetic_num_iters
MEMBER_ROUNDS = 2  # phase 2 per member: the diffusion round, then one seeded round
# Each round in a row without a better program halves a task's phase-3 gain (a search stuck
# near its seeds should not keep the budget), and from EXPLORE_AFTER_STALLS on, EXPLORE_EPS
# of its batch are unguided samples instead of the cost model's picks (any round of the
# standard search: phase 3, and a representative's later phase-1 rounds).
STALL_DECAY = 0.5
EXPLORE_AFTER_STALLS = 2
EXPLORE_EPS = 0.5
STOCK_EPS = 0.05  # EvolutionarySearch's default eps_greedy


def stalled_rounds(history: list[float]) -> int:
    """Rounds in a row, up to the last, that did not improve the task's best latency by
    MIN_IMPROVEMENT or more."""
    stalled = 0
    for before, after in zip(reversed(history[:-1]), reversed(history[1:])):
        if after < before * (1.0 - MIN_IMPROVEMENT):
            break
        stalled += 1
    return stalled


class BcdPlan(PlanRestore, PlanPriors, ClusterSteering):
    """The strategy's state: phases, priors and budgets, over the steered clusters."""

    def __init__(self, run: TuningRun) -> None:
        super().__init__(run)
        self.diffused_from: dict[int, set[int]] = {}  # member -> prior trial ids it has received
        # task -> `source_best` when it last received programs: its representative's best
        # latency, or with cluster priors its sources' best per FLOP scaled to its FLOPs
        self.representative_best_at_diffusion: dict[int, float] = {}
        self.sketches: dict[int, list[Any]] = {}
        self.searches: dict[int, BcdSearch] = {}
        self.exhausted: set[int] = set()
        self.fallbacks: set[int] = set()
        self.phase_one_cut: set[int] = set()  # representatives whose phase 1 ended on stalling
        self.last_choice: int | None = None
        self.late_model_announced = False
        self.phase_one_scale = 1.0
        self.extended_phase_one_scale = 1.0
        # The model's total work, for cluster shares: fixed, and asked for every round.
        self.total_weighted_flops = sum(task.weighted_flops for task in run.tasks)
        self._restore_from_store()
        self.recluster()
        self.announce_prior_source()
        self.fit_phase_one_to_budget()
        self._restore_phase_one_cuts()
        self._restore_representative_best_at_diffusion()
        run.batch_hooks.append(self.after_batch)

    # -- phases -----------------------------------------------------------------------------
    def is_minor(self, cluster: Cluster) -> bool:
        """A cluster too small a share of the model's work to pay full phase-1/2 rounds for."""
        total = self.total_weighted_flops
        share = sum(self.run.tasks[i].weighted_flops for i in cluster.members) / total if total > 0 else 1.0
        return share < self.settings.minor_cluster_share

    def wanted_representative_rounds(self, cluster: Cluster) -> int:
        if self.is_minor(cluster):
            return 1
        return min(cluster.size, self.settings.representative_round_cap)

    def member_rounds(self, cluster: Cluster) -> int:
        """Phase-2 rounds per member: diffusion, then a seeded round (diffusion only if minor)."""
        return 1 if self.is_minor(cluster) else MEMBER_ROUNDS

    def representative_rounds(self, cluster: Cluster) -> int:
        wanted = self.wanted_representative_rounds(cluster)
        return max(1, min(wanted, int(wanted * self.phase_one_scale)))

    def phase_one_limit(self, cluster: Cluster) -> int:
        """Most phase-1 rounds of the cluster's representative. With phase-1 patience, up to the
        round cap (10) whatever the cluster's size, ended by `in_phase_one` when it stalls:
        a small cluster's representative can carry much of the model (SqueezeNet's four 3x3
        convolutions, 45 % of its latency), and its members are only as good as its prior.
        Both are scaled to phase 1's share of a small budget (fit_phase_one_to_budget).
        Without patience, bcd-algorithm.md's min(|C|, 10)."""
        spec_rounds = self.representative_rounds(cluster)
        if not self.settings.phase_one_patience or self.is_minor(cluster):
            return spec_rounds
        return max(spec_rounds, int(self.settings.representative_round_cap * self.extended_phase_one_scale))

    def in_phase_one(self, cluster: Cluster) -> bool:
        """The cluster's representative still has phase-1 rounds to run (`phase_one_limit`),
        cut short once it has gone `phase_one_patience` rounds in a row without a better
        program. Its prior then stops moving, so more rounds there would mostly re-measure
        what the members are about to receive; phase 3 still picks it when its expected gain
        is worth a round."""
        rep = cluster.representative
        if cluster.size < 2 or rep in self.phase_one_cut:
            return False
        rounds = self.run.rounds_per_task.get(rep, 0)
        if rounds >= self.phase_one_limit(cluster):
            return False
        patience = self.settings.phase_one_patience
        if patience and stalled_rounds(self.run.best_history.get(rep, [])) >= patience:
            # Sticky: a later improvement (in phase 3) must not send it back to phase 1.
            self.phase_one_cut.add(rep)
            self.run.message(
                EventKind.INFO,
                f"{self.run.tasks[rep].name}: phase 1 ends after {rounds} of "
                f"{self.phase_one_limit(cluster)} rounds ({patience} in a row without a better "
                "program); the rest of its rounds go to phase 3",
                task_index=rep,
            )
            return False
        return True

    def fit_phase_one_to_budget(self) -> None:
        """min(|C|, 10) full rounds per representative can exceed a small budget before any
        member is measured (then the model has no estimate at all). Phase 2 is reserved
        first; phase 1 may use at most half of what is left, scaled evenly."""
        batch = self.settings.batch_size
        half = self.member_batch
        phase_two = sum(self.member_rounds(c) * half * (c.size - 1) if c.size > 1 else batch for c in self.clusters)
        wanted = sum(self.wanted_representative_rounds(c) * batch for c in self.clusters if c.size > 1)
        allowed = max(0.0, (self.total_budget - phase_two) / 2)
        self.phase_one_scale = 1.0 if wanted <= allowed or wanted == 0 else allowed / wanted
        # The same share for rounds past min(|C|, 10), which patience allows (phase_one_limit).
        extended = sum(
            self.settings.representative_round_cap * batch for c in self.clusters if c.size > 1 and not self.is_minor(c)
        )
        self.extended_phase_one_scale = 1.0 if extended <= allowed or extended == 0 else allowed / extended
        if self.phase_one_scale < 1.0:
            self.run.message(
                EventKind.WARNING,
                f"the budget ({self.total_budget} trials) cannot pay min(|cluster|, "
                f"{self.settings.representative_round_cap}) rounds per representative ({wanted} trials) and "
                f"still reach every member; representatives get {self.phase_one_scale:.0%} of those rounds "
                "(at least one). Raise the trials per task (Settings, or --trials-per-task) for the full schedule",
            )

    # -- choosing the next task -----------------------------------------------------------
    def available(self, task_index: int) -> bool:
        return task_index not in self.exhausted and self.within_budget(task_index)

    def needs_diffusion(self, task_index: int) -> bool:
        cluster = self.cluster_of(task_index)
        return cluster.size > 1 and task_index != cluster.representative and task_index not in self.diffused_from

    def in_phase_two(self, task_index: int) -> bool:
        """A member before its diffusion round and its seeded round are done."""
        cluster = self.cluster_of(task_index)
        if cluster.size < 2 or task_index == cluster.representative or task_index in self.fallbacks:
            return False
        return self.needs_diffusion(task_index) or self.run.rounds_per_task.get(task_index, 0) < self.member_rounds(
            cluster
        )

    def next_task(self) -> int | None:
        run = self.run
        if run.trials_done >= self.total_budget:
            return None
        rounds = run.rounds_per_task
        # Phase 1: representatives, clusters in priority order.
        for cluster in self.clusters:
            rep = cluster.representative
            if self.available(rep) and self.in_phase_one(cluster):
                return rep
        # Phase 2a: every member's diffusion round and every singleton's first round, so
        # that each task has a measurement (and the model an estimate) as soon as possible.
        for cluster in self.clusters:
            for index in cluster.members:
                if not self.available(index):
                    continue
                if rounds.get(index, 0) == 0 and (cluster.size == 1 or self.in_phase_two(index)):
                    return index
        # Phase 3 (every task has had a round): where the estimated model latency should drop
        # most per trial. A member chosen before its seeded round does that round first
        # (BcdSearch).
        candidates = [t.index for t in run.tasks if self.available(t.index)]
        if not candidates:
            return None
        return max(candidates, key=self.gain_per_trial)

    def gain_per_trial(self, task_index: int) -> tuple[float, float]:
        """Per trial, not per second: dividing by each task's measured seconds per trial
        starves a task whose rounds are slow (builds timing out), however much it has to
        gain."""
        never_measured, gain = self.expected_gain(task_index)
        return (never_measured, gain / self.next_round_trials(task_index))

    @property
    def member_batch(self) -> int:
        """A member's phase-2 round: half a representative's."""
        return max(1, self.settings.batch_size // 2)

    def next_round_trials(self, task_index: int) -> int:
        return self.member_batch if self.in_phase_two(task_index) else self.settings.batch_size

    def expected_gain(self, task_index: int) -> tuple[float, float]:
        """(never measured first, expected drop of the model's estimated latency).

        A task's own share is weight x best latency x the relative improvement one more round
        should bring: the recent per-round improvement (MetaSchedule's backward gradient), but
        at least 1 / (rounds + 1), the diminishing return of a search that has not converged
        (without that floor a heavy task that stalls for a few rounds starves), halved for
        every round in a row without a better program. A member whose representative improved
        since its last diffusion expects at least that relative gain: its next round diffuses
        the refreshed prior (a few cheap candidates). The members' work does not count in a
        representative's rounds: that would buy it rounds that barely improve it and do not
        help its members."""
        run = self.run
        best = run.best.get(task_index)
        if best is None:
            return (1.0, float(run.tasks[task_index].weight))
        history = run.best_history.get(task_index, [])
        recent = 0.0
        if len(history) > GRADIENT_WINDOW and history[-1 - GRADIENT_WINDOW] < float("inf"):
            past = history[-1 - GRADIENT_WINDOW]
            recent = (past - history[-1]) / past / GRADIENT_WINDOW
        rounds = run.rounds_per_task.get(task_index, 0)
        improvement = max(recent, 1.0 / (rounds + 1)) * STALL_DECAY ** stalled_rounds(history)
        work = run.tasks[task_index].weight * best
        return (0.0, max(improvement, self.refresh_improvement(task_index)) * work)

    def choose_cost_model(self, task_index: int) -> None:
        """Phase 3 ranks with MetaSchedule's model where the settings say so (phased.py)."""
        model = python_model(self.run.cost_model)
        if not hasattr(model, "late_tasks") or not self.in_phase_three(task_index):
            return
        name = self.run.tasks[task_index].name
        model.late_tasks.add(name)
        if not self.late_model_announced and model.model_for(name) is model.stock:
            self.late_model_announced = True
            self.run.message(
                EventKind.INFO,
                f"phase 3 ranks candidates with MetaSchedule's XGBModel from now on "
                f"({model.stock.data_size} samples learnt)",
                task_index,
            )

    def should_explore(self, task_index: int) -> bool:
        return stalled_rounds(self.run.best_history.get(task_index, [])) >= EXPLORE_AFTER_STALLS

    def after_batch(self, task_index: int, trials: list[Any], trial_ids: list[int]) -> None:
        diffused = [(t, i) for t, i in zip(trials, trial_ids) if t.origin == TrialOrigin.DIFFUSED]
        row_id = self.run.task_row_ids[task_index]
        if diffused:
            valid = [(t.latency_s, t.source_trial_id) for t, _ in diffused if t.latency_s is not None]
            if valid and task_index != self.cluster_of(task_index).representative:  # a member's provenance
                best_latency, source = min(valid, key=lambda pair: pair[0])
                first = self.run.store.tasks(self.run.session_id)[task_index]["diffused_best_s"] is None
                if first:
                    self.run.store.update_task(
                        row_id, diffused_best_s=best_latency, diffused_from_trial_id=source, status=TaskStatus.DIFFUSED
                    )
            return
        if task_index not in self.skipped:
            self.set_status(task_index, TaskStatus.REFINING if self.in_phase_three(task_index) else TaskStatus.TUNING)

    def in_phase_three(self, task_index: int) -> bool:
        """The task's next round is a phase-3 round: it is past its phase-2 rounds (a member)
        or its phase-1 rounds (a representative), or past its first round (a singleton, which
        has no phase 1: phase_one_limit can exceed 1 for it, so it must not be asked)."""
        cluster = self.cluster_of(task_index)
        if cluster.size < 2:
            return self.run.rounds_per_task.get(task_index, 0) >= 1
        return not self.in_phase_two(task_index) and (
            task_index != cluster.representative
            or task_index in self.phase_one_cut
            or self.run.rounds_per_task.get(task_index, 0) >= self.phase_one_limit(cluster)
        )


@derived_object
class BcdSearch(ms.search_strategy.PySearchStrategy):
    """A task's search: diffused programs first when the plan has some, then a real
    EvolutionarySearch (restricted to the matching sketch after diffusion)."""

    def __init__(self, plan: BcdPlan, task_index: int, generations: int) -> None:
        super().__init__()
        self.plan = plan
        self.task_index = task_index
        self.generations = generations
        self.eps_greedy = STOCK_EPS
        self.inner = self._new_inner()
        self.context: ms.TuneContext | None = None
        self.tuning_args: dict[str, Any] = {}
        self.seed_batch_out = False
        self.restricted = False

    @property
    def exploring(self) -> bool:
        return self.eps_greedy == EXPLORE_EPS

    def _new_inner(self) -> ms.search_strategy.EvolutionarySearch:
        settings = self.plan.settings
        return ms.search_strategy.EvolutionarySearch(
            population_size=settings.population_size,
            init_min_unmeasured=settings.init_min_unmeasured,
            genetic_num_iters=self.generations,
            eps_greedy=self.eps_greedy,
        )

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self.context = context
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        self.tuning_args = {
            "max_trials": max_trials,
            "num_trials_per_iter": num_trials_per_iter,
            "database": database,
            "cost_model": cost_model,
        }
        self.plan.sketches[self.task_index] = list(design_spaces)
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)

    def restrict_to(self, sketch_index: int) -> None:
        """Search only the member's sketch that matches the prior, with the member's generations."""
        self._restart([self.plan.sketches[self.task_index][sketch_index]], self.plan.settings.member_generations)
        self.restricted = True

    def search_full_space(self, explore: bool = False) -> None:
        """Full design space, stock generations: for phase 3, and for members that fell back.
        `explore`: a stalled task takes half its batch unguided by the cost model."""
        self._restart(self.plan.sketches[self.task_index], STOCK_GENERATIONS, EXPLORE_EPS if explore else STOCK_EPS)
        self.restricted = False

    def _restart(self, design_spaces: list[Any], generations: int, eps_greedy: float = STOCK_EPS) -> None:
        """A fresh inner search over `design_spaces` (post_tuning + pre_tuning). Records
        measured so far stay in the database, so the new search starts from them."""
        self.inner.post_tuning()
        if generations != self.generations or eps_greedy != self.eps_greedy:
            self.generations = generations
            self.eps_greedy = eps_greedy
            self.inner = self._new_inner()
            assert self.context is not None
            self.inner._initialize_with_tune_context(self.context)
        args = self.tuning_args
        self.inner.pre_tuning(
            args["max_trials"], args["num_trials_per_iter"], design_spaces, args["database"], args["cost_model"]
        )

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[ms.MeasureCandidate] | None:
        plan = self.plan
        half = plan.member_batch
        left = plan.total_budget - plan.run.trials_done  # never overshoot the budget
        plan.choose_cost_model(self.task_index)  # also for a phase-3 round of re-diffused seeds
        seeds = plan.diffusion_batch(self.task_index, max(1, min(half, left)))
        if seeds:
            self.seed_batch_out = True
            return seeds
        self.seed_batch_out = False
        seeded_round = plan.in_phase_two(self.task_index)
        if not seeded_round:  # phase 3: MetaSchedule's standard search, from all records
            explore = plan.should_explore(self.task_index)
            if self.restricted or explore != self.exploring:
                self.search_full_space(explore)
        candidates = self.inner.generate_measure_candidates()
        if candidates is None:
            plan.exhausted.add(self.task_index)
            return None
        limit = min(half, left) if seeded_round else left
        return list(candidates)[: max(1, limit)]

    def notify_runner_results(self, measure_candidates, results) -> None:
        if not self.seed_batch_out:  # seeds did not come from the inner search
            self.inner.notify_runner_results(measure_candidates, results)

    def clone(self) -> BcdSearch:
        return BcdSearch(self.plan, self.task_index, self.generations)


@derived_object
class BcdScheduler(ms.task_scheduler.PyTaskScheduler):
    """Chooses the next task by phase; applies control requests between rounds."""

    def __init__(self, plan: BcdPlan) -> None:
        super().__init__()
        self.plan = plan

    def next_task_id(self) -> int:
        plan, run = self.plan, self.plan.run
        scheduler = self._outer()
        last = plan.last_choice
        if last is not None and not scheduler.tasks_[last].is_terminated:
            scheduler.join_running_task(last)  # measure callbacks run here: the batch is saved
        plan.last_choice = None
        for index, record in enumerate(scheduler.tasks_):
            if record.is_terminated:
                plan.exhausted.add(index)
        if not honour_control(plan):
            return -1
        started = time.perf_counter()
        choice = plan.next_task()
        run.bookkeeping_s += time.perf_counter() - started
        if choice is None:
            return -1
        plan.last_choice = choice
        return choice


def tune_bcd(run: TuningRun) -> None:
    if run.trials_done >= run.trials_total:
        return
    plan = BcdPlan(run)
    contexts = []
    for task in run.tasks:
        cluster = plan.cluster_of(task.index)
        is_member = cluster.size > 1 and task.index != cluster.representative
        generations = run.settings.member_generations if is_member else STOCK_GENERATIONS
        search = BcdSearch(plan, task.index, generations)
        plan.searches[task.index] = search
        contexts.append(run.make_context(task, search))
    drive(run, contexts, BcdScheduler(plan))
