"""The memory's share of a `bcd` task's diffused programs (plan.py): programs of earlier
tunes' most similar tasks, adapted to the task, each handed to a task once and, once its
adapted version failed somewhere, to no task again."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from tvm.s_tir import meta_schedule as ms

from bcd_core.diffusion import diffuse
from bcd_core.memory.recall import RememberedProgram
from bcd_core.records.states import REMEMBERED_ORIGINS, TrialOrigin
from bcd_core.tuning.bcd.first_round import module_hash
from bcd_core.tuning.run import TuningRun, gave_no_time

# A remembered program is named by its store's label and its trial id there: another store's
# trial ids are not this store's (the own store's label is "").
Source = tuple[str, int]


class MemoryShare:
    """Which earlier tunes' programs each task was handed, and which of them failed."""

    def __init__(self, run: TuningRun) -> None:
        self.run = run
        self.given: dict[int, set[Source]] = {}  # task -> remembered programs handed to it
        self.in_flight: dict[int, Source] = {}  # module hash of a handed program -> its source
        self.failed: set[Source] = set()  # adapted somewhere and failed: handed nowhere again

    def remembers(self, task_index: int) -> bool:
        memory = self.run.memory
        return memory is not None and bool(memory.similar(task_index, self.run.tasks[task_index]))

    def goes_beside(self, task_index: int, seeds: Sequence[ms.MeasureCandidate]) -> bool:
        """Whether a task's first round, which carries its cluster's programs (`seeds`) and
        none of the memory's, gets the memory's as well: drawn on only once its cluster-mates
        had too few, the memory reached only each cluster's first task."""
        if not seeds or not self.remembers(task_index):
            return False
        provenance = self.run.provenance
        return not any(provenance.get(module_hash(s.sch), (None,))[0] in REMEMBERED_ORIGINS for s in seeds)

    def beside(
        self,
        seeds: list[ms.MeasureCandidate],
        quota: int,
        count: int,
        fetch: Callable[[int], list[ms.MeasureCandidate]],
    ) -> tuple[list[ms.MeasureCandidate], int]:
        """A first round's carried programs (`seeds`, its cluster's) with the memory's added
        (`fetch(n)` diffuses up to n), and how many of its `count` own picks remain: the
        memory's take the place of own picks, all but one (where a serial twin goes), so the
        round is no longer than without them."""
        remembered = fetch(min(quota, count - 1))
        return seeds + remembered, max(count - len(remembered), 0)

    def restore(self, task_index: int, own_trial_id: int) -> None:
        """On resume: the task was handed this program of the own store already."""
        self.given.setdefault(task_index, set()).add(("", own_trial_id))

    def programs_for(
        self,
        task_index: int,
        count: int,
        seen: set[int],
        sketches: list[Any],
        seed: int,
        own_failed: set[int],
        same_workload: bool = False,
    ) -> list[ms.MeasureCandidate]:
        """Programs of the most similar tasks of earlier tunes (with `same_workload`, only of
        earlier tunes of this very workload), faster per FLOP than the task's own best,
        diffused into its design spaces (`sketches`); provenance names the session, model and
        task they came from. `own_failed`: the own store's trial ids whose diffused programs
        failed."""
        run, memory = self.run, self.run.memory
        if memory is None or count <= 0:
            return []
        task = run.tasks[task_index]
        given = self.given.setdefault(task_index, set())
        remembered = memory.programs(task_index, task, 2 * count, exclude=given)
        if same_workload:
            remembered = [p for p in remembered if memory.is_same_workload(task_index, task, p.task)]
        own = run.best.get(task_index)
        bound = own / max(task.flops, 1.0) if own else math.inf
        priors = [
            p
            for p in remembered
            if p.latency_s / max(p.task.flops, 1.0) < bound
            and (p.task.store_label, p.trial_id) not in self.failed
            and (p.task.store_label or p.trial_id not in own_failed)
        ][:count]
        given.update((p.task.store_label, p.trial_id) for p in priors)
        if not priors:
            return []
        indexed = [(position, p.trace) for position, p in enumerate(priors)]
        result = diffuse(run.contexts[task_index], sketches, indexed, count, seed, seen, spread=True)
        for program in result.programs:
            source: RememberedProgram = priors[program.source_trial_id]
            reused = program.copies_its_source and memory.is_same_workload(task_index, task, source.task)
            key = module_hash(program.schedule)
            self.in_flight[key] = (source.task.store_label, source.trial_id)
            run.provenance[key] = (
                TrialOrigin.REUSED if reused else TrialOrigin.MEMORY,
                None if source.task.store_label else source.trial_id,
                f"{program.adaptation}; from {source.task.describe()}",
            )
        return [program.candidate() for program in result.programs]

    def note_outcomes(self, candidates: Sequence[ms.MeasureCandidate], results: Sequence[Any]) -> None:
        """A remembered program whose adapted version failed to build or run in a task is
        diffused nowhere again, as a cluster-mate's program is."""
        if not self.in_flight:
            return
        for candidate, result in zip(candidates, results):
            source = self.in_flight.pop(module_hash(candidate.sch), None)
            if source is not None and gave_no_time(result):
                self.failed.add(source)
