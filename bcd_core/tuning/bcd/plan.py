"""What a `bcd` tune adds to stock MetaSchedule's rounds: which programs are diffused into a
task's batch, how large its first round is, and what the cluster tree shows of it.

A program is diffused into a task once, only while it is faster per FLOP than the task's own
best, in place of the search's lowest-ranked picks (`diffusion_share` of a round); no program is
measured twice for a task; a task that two diffused batches in a row did not improve receives
no more; and a program whose diffused version failed to build or run is diffused nowhere again,
so a wrong guess costs a few trials, never the task's budget. The first round robin measures
every cluster's representative before its members, so members get their cluster's programs in
their first round; a member with less work than the model's average task then measures half a
round, so the first full estimate comes sooner, while a heavier one, whose final sets the
model's, keeps a whole round of its own picks beside them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import partial
from typing import Any

from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.stored import python_model
from bcd_core.cost_model.warmup import scores_are_random
from bcd_core.diffusion import diffuse
from bcd_core.records.states import CARRIED_ORIGINS, REMEMBERED_ORIGINS, EventKind, TaskStatus, TrialOrigin
from bcd_core.tasks import Task
from bcd_core.tuning.bcd.first_round import module_hash, random_picks, ranked_samples
from bcd_core.tuning.bcd.memory_share import MemoryShare
from bcd_core.tuning.bcd.serial import SerialTwins
from bcd_core.tuning.bcd.sources import faster_per_flop
from bcd_core.tuning.bcd.top_up import probe_only_tasks
from bcd_core.tuning.run import TuningRun
from bcd_core.tuning.steering import ClusterSteering

# A task stops receiving diffused programs after this many diffused batches in a row of
# which none became its best program.
DIFFUSION_MISSES = 2


def failed_sources(diffused: list[tuple[int | None, float | None]]) -> set[int]:
    """Source trial ids of (source trial id, latency) pairs of carried programs that gave no
    latency: they failed to build or run where they were diffused."""
    return {source for source, latency in diffused if source is not None and not latency}


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


class BcdPlan(ClusterSteering):
    """Who goes next (MetaSchedule's gradient rule, steered by the user) and which diffused
    programs join a task's round."""

    def __init__(self, run: TuningRun) -> None:
        super().__init__(run)
        self.generated = run.trials_done  # trials handed to the builder, in flight included
        self.topping_up = probe_only_tasks(run)  # their next round completes the probe's (top_up.py)
        self.started = {index for index, rounds in run.rounds_per_task.items() if rounds > 0} - self.topping_up
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
        self.twins = SerialTwins(run, self.score)
        self._restore_received()
        self.recluster()
        run.batch_hooks.append(self.after_batch)

    def returned_trials(self, count: int) -> None:
        self.generated -= count  # measured, but not recorded: the total hands them out again

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
        if not batch:
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

    def first_round(self, task_index: int, left: int) -> list[ms.MeasureCandidate]:
        """A task's first batch (at most `left` trials): its cluster's diffused programs (up
        to the quota), the memory's beside them in place of own picks (memory_share.py), then a
        fresh sample of its design space, half the cost model's best, half at random
        (first_round.py). See `own_first_picks` for its size."""
        batch = min(self.settings.batch_size, left)
        seen = self.seen.setdefault(task_index, set())
        quota = min(self.diffusion_quota(task_index, batch), batch)
        seeds = self.diffused(task_index, quota, seen) if quota else []
        count = own_first_picks(batch, len(seeds), self.halves_first_round(task_index) and self.vouched(seeds))
        if self.memory_share.goes_beside(task_index, seeds):
            fetch = partial(self.from_memory, task_index, seen=seen)
            seeds, count = self.memory_share.beside(seeds, quota, count, fetch)
        return self.ranked(task_index, count, explore=count // 2) + seeds

    def halves_first_round(self, task_index: int) -> bool:
        """Whether a task given diffused programs measures only half a first round: one with
        less work than the model's average task; a heavier one's final sets the model's."""
        return task_index not in self.heavy

    def vouched(self, programs: Sequence[ms.MeasureCandidate]) -> bool:
        """Whether any of a task's carried programs is its cluster's (measured on this model,
        same sketch) or an earlier tune's of this very workload. Only those shorten its first
        round: other models' programs for other workloads are a guess, so they take the place
        of a few picks and the round is as long as without memory."""
        provenance = self.run.provenance
        origins = {provenance.get(module_hash(program.sch), (None,))[0] for program in programs}
        return bool(origins & {TrialOrigin.DIFFUSED, TrialOrigin.REUSED})

    def score(self, context: ms.TuneContext, candidates: list[ms.MeasureCandidate]) -> Any:
        """The shared cost model's scores of candidates (higher: predicted faster)."""
        return python_model(self.run.cost_model).predict(context, candidates)

    def ranked(self, task_index: int, count: int, explore: int = 0) -> list[ms.MeasureCandidate]:
        run = self.run
        search = self.searches[task_index]
        seen = self.seen.setdefault(task_index, set())
        population, _ = self.settings.search_population
        if scores_are_random(python_model(run.cost_model)):
            return random_picks(search, count, population, seen, self.rng)
        return ranked_samples(run.contexts[task_index], search, self.score, count, population, seen, explore, self.rng)

    def diffused(self, task_index: int, count: int, seen: set[int]) -> list[ms.MeasureCandidate]:
        """Up to `count` diffused programs: an earlier tune's programs for this very workload
        first, then the cluster's, then those of the memory's most similar tasks. The
        cluster's come before other models' because they were measured on tasks of this model
        with the same sketch: other models' programs first would keep the cluster's out of a
        task's rounds, and their misses would stop its diffusion altogether."""
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
