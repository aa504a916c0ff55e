"""Bayesian Code Diffusion over stock MetaSchedule: the `bcd` strategy.

Stock MetaSchedule is the floor. Its gradient task scheduler decides which task gets the
next round (the same formula, here in Python so the user can steer it, with a task's trials
counted in whole rounds since BCD's first rounds are not all whole), its XGBModel is the
one cost model of every task, and every round after a task's first is its EvolutionarySearch
with the stock settings. BCD adds three things:

- Each batch is joined as soon as it is measured (stock joins none before its whole first
  round robin is submitted), so its programs can diffuse and the cost model learns from it.
- A task's first round is a fresh sample of its design space, half of it the model's best
  picks and half random (first_round.py), not four generations of evolution steered by
  random scores.
- Diffusion: when a round of a task begins and other tasks of its cluster have measured
  programs faster per FLOP than the task's own best, some of the round's candidates
  (`diffusion_share` of the batch) are those programs diffused into the task (tile sizes
  adapted, provenance kept), in place of the lowest-ranked picks. Once measured they count
  for the task's best, but its evolutionary search starts only from the programs it found
  itself (`search_seeds` "own"): a diffused program that is good but not the best the task
  can reach does not hold the search in its basin, so a wrong guess costs those few trials,
  never the task's budget. A program is
  diffused into a task once, no program is measured twice for a task, a task that two
  diffused batches in a row did not improve receives no more, and a program whose diffused
  version failed to build or run (a compiler that takes minutes on a wide odd-width vector
  loop: the builder's timeout each time) is diffused nowhere again. The first round robin
  measures every cluster's representative before any member, so members already get their
  cluster's programs in their first round. For a member with less work than the model's
  average task that round is then half a round (`own_first_picks`): the first full
  estimate comes sooner and the gradient rule places the trials saved. A heavier member
  keeps a whole round of its own picks beside them, since its final sets the model's:
  when its cluster-mates' programs suit it poorly, four picks of its own found no good
  basin and its search stayed in a poor one.
- Memory (bcd_core/memory): programs of the most similar tasks of earlier tunes on this
  target, of any model, are diffused the same way and in the same share, after the
  cluster's (the nearest remembered tasks' best programs first; the rest come in later
  rounds). They take the place of a few of a task's first-round picks, beside its
  cluster's programs when those came too (`MemoryShare.beside`), but never shorten that
  round (`SeededPlan.vouched`): only its cluster's programs and an earlier tune's of this
  very workload do. The cost model learns from their measurements before the first
  round (driver.py). An earlier tune's program
  for this very workload is reused unchanged and, as MetaSchedule reuses a tuned
  workload's records, may seed the task's search.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.cold_task import ColdUntilMeasured
from bcd_core.cost_model.phased import python_model
from bcd_core.diffusion import diffuse
from bcd_core.records.failed_run import runner_latency
from bcd_core.records.states import (
    CARRIED_ORIGINS,
    REMEMBERED_ORIGINS,
    SEARCH_HIDDEN_ORIGINS,
    EventKind,
    TaskStatus,
    TrialOrigin,
)
from bcd_core.tasks import Task
from bcd_core.tuning.driver import drive
from bcd_core.tuning.first_round import module_hash, ranked_samples
from bcd_core.tuning.memory_share import MemoryShare
from bcd_core.tuning.metaschedule import evolutionary_search
from bcd_core.tuning.priors import faster_per_flop
from bcd_core.tuning.serial import SerialTwins
from bcd_core.tuning.session import TuningRun
from bcd_core.tuning.steering import ClusterSteering, honour_control

log = logging.getLogger("bcd.tuning.seeded")
# MetaSchedule's GradientBased defaults.
GRADIENT_ALPHA = 0.2
GRADIENT_WINDOW = 3
NO_VALID_TIME = 1e100  # what GradientBased holds for a task with no valid measurement
# A task stops receiving diffused programs after this many diffused batches in a row of
# which none became its best program.
DIFFUSION_MISSES = 2


def failed_sources(diffused: list[tuple[int | None, float | None]]) -> set[int]:
    """Source trial ids of (source trial id, latency) pairs of carried programs that gave no
    latency: they failed to build or run where they were diffused."""
    return {source for source, latency in diffused if source is not None and not latency}


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


def first_round_order(representatives: list[int], members: list[int], started: set[int]) -> list[int]:
    """The tasks still waiting for their first round: representatives before members."""
    return [index for index in [*representatives, *members] if index not in started]


def unseen(candidates: Sequence[ms.MeasureCandidate], seen: set[int], count: int) -> list[ms.MeasureCandidate]:
    """Up to `count` of `candidates` in order whose programs are not in `seen` (which gains them)."""
    picked: list[ms.MeasureCandidate] = []
    for candidate in candidates:
        key = module_hash(candidate.sch)
        if len(picked) < count and key not in seen:
            seen.add(key)
            picked.append(candidate)
    return picked


def own_first_picks(batch: int, diffused: int, half: bool) -> int:
    """How many of its own picks a task's first round measures beside `diffused` programs.
    A task that received programs it can trust (its cluster's, or its own workload's from
    the memory) already starts from measured ones, so with `half` its first round is half a
    batch, and never fewer own picks than diffused ones: the first round robin, and the
    first full estimate with it, ends sooner, and the trials saved go where the gradient rule
    says they pay. At 16 trials per task the first round robin is nearly the whole tune, so
    its length sets the pace."""
    if not diffused or not half:
        return max(batch - diffused, 0)
    return min(max(batch // 2 - diffused, diffused), batch - diffused)


def heavier_than_average(tasks: Sequence[Task]) -> set[int]:
    """Indices of the tasks with more work (FLOPs x weight) than the average task with work."""
    work = {index: task.weighted_flops for index, task in enumerate(tasks) if task.weighted_flops > 0}
    if not work:
        return set()
    average = sum(work.values()) / len(work)
    return {index for index, value in work.items() if value > average}


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
        self.failed: set[int] = set()  # trial ids whose diffused programs failed: never diffused again
        self.memory_share = MemoryShare(run)  # earlier tunes' programs handed out, and failed
        self.misses: dict[int, int] = {}  # task -> diffused batches in a row that gave it nothing
        self.searches: dict[int, ms.search_strategy.EvolutionarySearch] = {}  # task -> its search, once tuning
        self.reproposed = 0  # candidates the searches proposed again, dropped
        rows = run.store.tasks(run.session_id)
        self.provenance_written = {row["idx"] for row in rows if row["diffused_best_s"] is not None}
        self.heavy = heavier_than_average(run.tasks)
        self.twins = SerialTwins(run, self.score) if self.settings.serial_twins == "on" else None
        self._restore_received()
        self.recluster()
        run.batch_hooks.append(self.after_batch)

    def _restore_received(self) -> None:
        """On resume: which programs each task received already (never diffused twice), and
        how its diffused batches fared (`note_diffusion_outcome`)."""
        index_of_row = {row_id: index for index, row_id in self.run.task_row_ids.items()}
        rounds: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for trial in self.run.store.trials(self.run.session_id):
            index = index_of_row.get(trial["task_id"])
            if index is None:
                continue
            rounds.setdefault((trial["round"], index), []).append(trial)
            source = trial["source_trial_id"]
            if trial["origin"] in CARRIED_ORIGINS:
                self.failed |= failed_sources([(source, trial["latency_s"])])
            if trial["origin"] == TrialOrigin.DIFFUSED and source is not None:
                self.received.setdefault(index, set()).add(source)
            elif trial["origin"] in REMEMBERED_ORIGINS and source is not None:  # of the own store
                self.memory_share.restore(index, source)
        best: dict[int, float] = {}
        latency_of = {t["id"]: t["latency_s"] for ts in rounds.values() for t in ts}
        for (_, index), trials in sorted(rounds.items()):
            latencies = [t["latency_s"] for t in trials if t["latency_s"]]
            best[index] = min([*latencies, best.get(index, math.inf)])
            diffused = [t["latency_s"] or math.inf for t in trials if t["origin"] in CARRIED_ORIGINS]
            self.note_diffusion_outcome(index, diffused, best[index])
            if self.twins is not None:
                self.twins.restore(index, trials, latency_of)

    def note_diffusion_outcome(self, task_index: int, diffused: list[float], best: float) -> None:
        """After a batch: did one of its diffused programs (latencies) become the task's best?
        A task none of whose last DIFFUSION_MISSES diffused batches did receives no more: its
        cluster-mates' programs do not suit it (SqueezeNet's 3-channel first convolution is
        slower per FLOP than all of them, so it would take every new program of each)."""
        if not diffused:
            return
        hit = min(diffused) <= best
        self.misses[task_index] = 0 if hit else self.misses.get(task_index, 0) + 1

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
        whole = self.settings.batch_size
        gradients = [
            task_gradient(run.best_history.get(i, []), run.tasks[i].weight, run.trial_counts.get(i, 0) / whole)
            for i in alive
        ]
        top = max(gradients)
        if top == min(gradients):
            return self.rng.choice(alive)
        return alive[gradients.index(top)]

    # -- diffusion --------------------------------------------------------------------------
    def diffusion_quota(self, task_index: int, batch: int) -> int:
        share = self.settings.diffusion_share
        if share <= 0 or (self.cluster_of(task_index).size < 2 and not self.memory_share.remembers(task_index)):
            return 0
        if self.misses.get(task_index, 0) >= DIFFUSION_MISSES:
            return 0
        # The same share in a task's first round, not more: a larger one holds a task whose
        # programs are unlike its cluster-mates' (a 3-channel first convolution) in their
        # basin, where the search's random picks find faster programs; and half of a first
        # round of remembered programs made every task of a model tuned with memory measure
        # a whole first round, so its first round robin took twice as long.
        return max(1, int(batch * share))

    def mix_in_diffused(self, task_index: int, candidates: list[ms.MeasureCandidate]) -> list[ms.MeasureCandidate]:
        """The search's batch with up to a quota of its last (lowest-ranked) candidates
        replaced by programs diffused from the task's cluster. Programs measured outside
        the search (its first round, diffused ones) are not measured again: the search
        only remembers its own picks, so it proposes them again when they are good."""
        seen = self.seen.setdefault(task_index, set())
        fresh = [c for c in candidates if module_hash(c.sch) not in seen]
        self.reproposed += len(candidates) - len(fresh)
        seen.update(module_hash(c.sch) for c in fresh)
        quota = min(self.diffusion_quota(task_index, len(candidates)), len(candidates))
        seeds = self.diffused(task_index, quota, seen) if quota else []
        batch = fresh[: len(candidates) - len(seeds)] + seeds
        short = len(candidates) - len(batch)
        if short > 0 and task_index in self.searches:
            batch += self.ranked(task_index, short)
        return batch

    def with_serial_twin(
        self, task_index: int, batch: list[ms.MeasureCandidate], left: int
    ) -> list[ms.MeasureCandidate]:
        """The batch with a serial twin of one of the task's programs (tuning/serial.py) in
        place of its last own (lowest-ranked) candidate, never of a carried program; added
        instead to a batch of one (a design space of one program: a reshape) when the budget
        allows."""
        if self.twins is None or not batch:
            return batch
        seen = self.seen.setdefault(task_index, set())
        own = [i for i, c in enumerate(batch) if module_hash(c.sch) not in self.run.provenance]
        adds = len(batch) == 1 or not own
        if adds and len(batch) >= left:
            return batch
        twin = self.twins.next_twin(task_index, batch, seen)
        if twin is None:
            return batch
        if adds:
            return [*batch, twin]
        dropped = batch[own[-1]]
        seen.discard(module_hash(dropped.sch))  # not measured: the search may propose it again
        return [c for c in batch if c is not dropped] + [twin]

    def first_round(
        self, task_index: int, left: int, stock_picks: Sequence[ms.MeasureCandidate] | None = None
    ) -> list[ms.MeasureCandidate]:
        """A task's first batch (at most `left` trials): its cluster's diffused programs (up
        to the quota), then a fresh sample of its design space, half the cost model's best,
        half at random (first_round.py), or, given `stock_picks` (ranked-cold), half stock's
        own first-round picks. See `own_first_picks` for its size; with `plus` a heavier
        task's own picks are a whole batch and the diffused programs come on top."""
        batch = min(self.settings.batch_size, left)
        seen = self.seen.setdefault(task_index, set())
        quota = min(self.diffusion_quota(task_index, batch), batch)
        seeds = self.diffused(task_index, quota, seen) if quota else []
        count = own_first_picks(batch, len(seeds), self.halves_first_round(task_index) and self.vouched(seeds))
        if self.adds_to_first_round(task_index):
            count = min(batch, left - len(seeds))
        if self.memory_share.goes_beside(task_index, seeds):
            fetch = partial(self.from_memory, task_index, seen=seen)
            seeds, count = self.memory_share.beside(seeds, quota, count, batch, fetch)
        if stock_picks is None:
            return self.ranked(task_index, count, explore=count // 2) + seeds
        own = self.ranked(task_index, count - count // 2)
        own += unseen(stock_picks, seen, count - len(own))
        if len(own) < count:  # stock's picks repeated the model's
            own += self.ranked(task_index, count - len(own))
        return own + seeds

    def first_round_of(self, task_index: int) -> str:
        """How the task's first round picks its own candidates (`first_round`): with by-work,
        stock's way (cold) for a task with more work than the average, whose final sets the
        model's, and ranked fresh samples, cheaper, for the others."""
        rule = self.settings.first_round
        if rule == "by-work":
            return "cold" if task_index in self.heavy else "ranked"
        return rule

    def halves_first_round(self, task_index: int) -> bool:
        """Whether a task given diffused programs measures only half a first round
        (`member_first_round`)."""
        rule = self.settings.member_first_round
        return rule == "half" or (rule in ("by-work", "plus") and task_index not in self.heavy)

    def vouched(self, programs: Sequence[ms.MeasureCandidate]) -> bool:
        """Whether any of a task's carried programs is its cluster's (measured on this model,
        same sketch) or an earlier tune's of this very workload. Only those shorten its first
        round: other models' programs for other workloads are a guess, so they take the place
        of a few picks and the round is as long as without memory. On the shared models the
        two rules measured level within the runs' spread (docs/benchmarks.md, "Tuning
        memory"); this one is kept because a memory unlike the model then costs no more."""
        provenance = self.run.provenance
        origins = {provenance.get(module_hash(program.sch), (None,))[0] for program in programs}
        return bool(origins & {TrialOrigin.DIFFUSED, TrialOrigin.REUSED})

    def adds_to_first_round(self, task_index: int) -> bool:
        """Whether a heavier task's diffused programs come on top of a whole first round of
        its own picks (`member_first_round` plus), not in place of some of them."""
        return self.settings.member_first_round == "plus" and task_index in self.heavy

    def score(self, context: ms.TuneContext, candidates: list[ms.MeasureCandidate]) -> Any:
        """The shared cost model's scores of candidates (higher: predicted faster)."""
        return python_model(self.run.cost_model).predict(context, candidates)

    def ranked(self, task_index: int, count: int, explore: int = 0) -> list[ms.MeasureCandidate]:
        run = self.run
        search = self.searches[task_index]
        seen = self.seen.setdefault(task_index, set())
        population = self.settings.population_size
        return ranked_samples(run.contexts[task_index], search, self.score, count, population, seen, explore, self.rng)

    def diffused(self, task_index: int, count: int, seen: set[int]) -> list[ms.MeasureCandidate]:
        """Up to `count` diffused programs: an earlier tune's programs for this very workload
        first, then the cluster's, then those of the memory's most similar tasks. The
        cluster's come before other models' because they were measured on tasks of this model
        with the same sketch: MobileNetV2's depthwise convolutions given ResNet-18's and
        SqueezeNet's programs first kept most of the cluster's out of their rounds, and
        the memory's misses stopped their diffusion altogether."""
        if task_index not in self.sketches:
            return []
        programs = self.from_memory(task_index, count, seen, same_workload=True)
        if len(programs) < count and self.cluster_of(task_index).size > 1:
            programs += self.from_cluster(task_index, count - len(programs), seen)
        if len(programs) < count:
            programs += self.from_memory(task_index, count - len(programs), seen)
        return programs

    def diffusion_seed(self, task_index: int) -> int:
        return self.settings.seed * 7919 + task_index * 101 + self.run.round

    def from_memory(
        self, task_index: int, count: int, seen: set[int], same_workload: bool = False
    ) -> list[ms.MeasureCandidate]:
        """Programs of earlier tunes' most similar tasks (memory_share.py)."""
        seed = self.diffusion_seed(task_index)
        share = self.memory_share
        return share.programs_for(task_index, count, seen, self.sketches[task_index], seed, self.failed, same_workload)

    def from_cluster(self, task_index: int, count: int, seen: set[int]) -> list[ms.MeasureCandidate]:
        run = self.run
        cluster = self.cluster_of(task_index)
        received = self.received.setdefault(task_index, set())
        sources = [m for m in cluster.members if m != task_index]
        priors = faster_per_flop(run, task_index, sources, count, exclude=received | self.failed)
        if not priors:
            return []
        seed = self.diffusion_seed(task_index)
        result = diffuse(run.contexts[task_index], self.sketches[task_index], priors, count, seed, seen, spread=True)
        received.update(trial_id for trial_id, _ in priors)
        if result.matched_sketch is None and task_index not in self.unmatched:
            self.unmatched.add(task_index)
            run.message(
                EventKind.FALLBACK,
                f"{run.tasks[task_index].name}: no sketch matches its cluster's programs; MetaSchedule's search alone "
                "tunes it until one does",
                task_index,
            )
        for program in result.programs:
            run.provenance[module_hash(program.schedule)] = (
                TrialOrigin.DIFFUSED,
                program.source_trial_id,
                program.adaptation,
            )
        return [program.candidate() for program in result.programs]

    def after_batch(self, task_index: int, trials: list[Any], trial_ids: list[int]) -> None:
        """Status and provenance for the cluster tree: a task's first valid diffused program
        is what diffusion gave it (its latency then is kept beside its latency now)."""
        carried = [t for t in trials if t.origin in CARRIED_ORIGINS]
        self.failed |= failed_sources([(t.source_trial_id, t.latency_s) for t in carried])
        diffused_latencies = [t.latency_s or math.inf for t in carried]
        self.note_diffusion_outcome(task_index, diffused_latencies, self.run.best.get(task_index, math.inf))
        if task_index in self.skipped:
            return
        diffused = [(t.latency_s, t.source_trial_id) for t in carried if t.latency_s]
        fields: dict[str, Any] = {"status": TaskStatus.TUNING}
        if diffused and task_index not in self.provenance_written:
            self.provenance_written.add(task_index)
            latency, source = min(diffused, key=lambda pair: pair[0])
            fields.update(diffused_best_s=latency, diffused_from_trial_id=source, status=TaskStatus.DIFFUSED)
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
        self.rounds = 0  # batches generated in this run
        self.batch_size = plan.settings.batch_size
        self.cold_model: ColdUntilMeasured | None = None  # with first round "cold"

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        self.plan.sketches[self.task_index] = list(design_spaces)
        self.batch_size = num_trials_per_iter
        if self.plan.settings.search_seeds == "own":
            database = self.plan.run.database.without(*SEARCH_HIDDEN_ORIGINS)
        if self.plan.first_round_of(self.task_index) in ("cold", "ranked-cold"):
            measured = bool(self.plan.run.rounds_per_task.get(self.task_index))
            self.cold_model = ColdUntilMeasured(cost_model, self.plan.diffusion_seed(self.task_index), measured)
            cost_model = self.cold_model
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)
        self.plan.searches[self.task_index] = self.inner

    def post_tuning(self) -> None:
        self.plan.searches.pop(self.task_index, None)
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[ms.MeasureCandidate] | None:
        plan = self.plan
        left = plan.total_budget - plan.generated
        if self.task_index in plan.run.given_up or left <= 0:
            return None
        first = not self.rounds and not plan.run.rounds_per_task.get(self.task_index)
        self.rounds += 1
        rule = plan.first_round_of(self.task_index)
        if first and rule in ("ranked", "ranked-cold"):
            # ranked-cold: stock's first round (its search under random scores) gives half
            stock_picks = (self.inner.generate_measure_candidates() or []) if rule == "ranked-cold" else None
            batch = plan.first_round(self.task_index, left, stock_picks)
        else:
            candidates = self.inner.generate_measure_candidates()
            if candidates is None:
                return None
            started = time.perf_counter()
            batch = plan.mix_in_diffused(self.task_index, list(candidates)[:left])
            plan.run.bookkeeping_s += time.perf_counter() - started
        if not batch:
            return None
        batch = plan.with_serial_twin(self.task_index, batch, left)
        plan.generated += len(batch)
        return batch

    def notify_runner_results(self, measure_candidates, results) -> None:
        if self.cold_model is not None:
            python_model(self.cold_model).measured = True
        self.plan.memory_share.note_outcomes(measure_candidates, results)
        if self.plan.twins is not None:
            self.plan.twins.note_results(measure_candidates, [runner_latency(result) for result in results])
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
    if plan.reproposed:
        log.info("%d candidates the searches proposed again were not measured twice", plan.reproposed)
