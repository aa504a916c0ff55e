"""Serial twins in a `bcd` tune: which one, if any, joins a task's batch, and when they stop
(the twin itself: bcd_core/programs.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tvm.s_tir.schedule import Trace

from bcd_core.programs import serial_twin
from bcd_core.records.states import TrialOrigin
from bcd_core.tuning.bcd.first_round import as_candidate, module_hash

# A task one of whose twins ran slower than (or failed where) its parallel original ran
# receives no more: threads pay there. Once this many twins of the whole model lost so and
# none won, no task does: where threads pay (many cores, big kernels) twins cost a trial or
# two, not a share of every round.
TASK_MISSES = 1
MODEL_MISSES = 8
# How many of a task's best measured programs are tried for a twin not yet handed out, and
# how many of a batch's picks are twinned for the cost model to choose from before the task
# has a measurement.
ORIGINALS_TRIED = 3
PICKS_TWINNED = 8

Score = Callable[[Any, list[Any]], Sequence[float]]  # (tune context, candidates) -> scores


@dataclass
class Original:
    """A program a twin is made of: a measured one (trial id, latency) or a pick of the
    batch the twin joins (its module hash)."""

    trace: Trace
    trial_id: int | None = None
    latency_s: float | None = None
    key: int | None = None


class SerialTwins:
    """Which serial twin, if any, joins a task's next batch: the twin of its best measured
    program that has one not yet handed out; before the task has a measurement, the twin the
    cost model ranks first among those of the batch's picks (it has learnt from the other
    tasks' twins, so a model whose small matmuls ran faster serial picks the twin of a
    program that suits one thread). A twin is the task's own program: once measured it may
    seed the task's search, whose mutations keep it serial."""

    def __init__(self, run: Any, score: Score | None = None) -> None:
        self.run = run
        self.score = score
        self.misses: dict[int, int] = {}  # task -> its twins that lost to their originals
        self.twinned: set[int] = set()  # trial ids whose twin was handed out (restored on resume)
        # twin module hash -> (task, its original: measured latency, or module hash in the batch)
        self.pending: dict[int, tuple[int, float | None, int | None]] = {}
        self.hits = 0
        self.model_misses = 0

    def active(self, task_index: int) -> bool:
        if self.hits == 0 and self.model_misses >= MODEL_MISSES:
            return False
        return self.misses.get(task_index, 0) < TASK_MISSES

    def next_twin(self, task_index: int, batch: Sequence[Any], seen: set[int]) -> Any | None:
        """A MeasureCandidate for the twin (provenance recorded), or None; `seen` (module hashes
        handed out for the task) gains it."""
        if not self.active(task_index) or task_index not in self.run.contexts:
            return None
        context = self.run.contexts[task_index]
        postprocs = list(context.space_generator.postprocs)
        measured = task_index in self.run.best
        originals = self._measured(task_index) if measured else self._picks(batch)
        twins: list[tuple[Original, Any]] = []
        for original in originals:
            if original.trial_id in self.twinned:
                continue
            twin = serial_twin(context.mod, original.trace, postprocs)
            if twin is not None and module_hash(twin) not in seen:
                twins.append((original, twin))
                if measured:
                    break  # the best measured program's twin
        if not twins:
            return None
        original, twin = twins[self._best_scored(context, [t for _, t in twins])]
        key = module_hash(twin)
        seen.add(key)
        if original.trial_id is not None:
            self.twinned.add(original.trial_id)
        self.pending[key] = (task_index, original.latency_s, original.key)
        self.run.provenance[key] = (TrialOrigin.SERIAL, original.trial_id, "serial twin")
        return as_candidate(twin)

    def _measured(self, task_index: int) -> list[Original]:
        run = self.run
        rows = run.database.top_rows(run.workload_ids[task_index], ORIGINALS_TRIED)
        return [
            Original(run.database.record_from_row(row).trace, row["id"], row["latency_s"])
            for row in rows
            if row["latency_s"]
        ]

    @staticmethod
    def _picks(batch: Sequence[Any]) -> list[Original]:
        return [Original(c.sch.trace, key=module_hash(c.sch)) for c in batch[:PICKS_TWINNED]]

    def note_results(self, candidates: Sequence[Any], latencies: Sequence[float | None]) -> None:
        """After a batch is measured (latencies in seconds, None when a candidate failed):
        each twin it carried against its original, measured before or in the same batch."""
        if not self.pending:
            return
        by_key = {module_hash(c.sch): latency for c, latency in zip(candidates, latencies)}
        for key, twin_s in by_key.items():
            if key not in self.pending:
                continue
            task_index, original_s, original_key = self.pending.pop(key)
            if original_s is None and original_key is not None:
                original_s = by_key.get(original_key)
            self.note_outcome(task_index, twin_s, original_s)

    def _best_scored(self, context: Any, twins: list[Any]) -> int:
        if len(twins) == 1 or self.score is None:
            return 0
        scores = self.score(context, [as_candidate(twin) for twin in twins])
        return max(range(len(twins)), key=lambda position: float(scores[position]))

    def restore(self, task_index: int, trials: list[dict[str, Any]], latency_of: dict[int, float | None]) -> None:
        """On resume, one stored round of a task: each twin against its original (a measured
        program's stored latency; for a twin of a pick of its own batch, the batch's best other
        program)."""
        others = [t["latency_s"] for t in trials if t["origin"] != TrialOrigin.SERIAL and t["latency_s"]]
        for twin in (t for t in trials if t["origin"] == TrialOrigin.SERIAL):
            source = twin["source_trial_id"]
            if source is not None:
                self.twinned.add(source)
            original = latency_of.get(source) if source is not None else min(others, default=None)
            self.note_outcome(task_index, twin["latency_s"], original)

    def note_outcome(self, task_index: int, twin_s: float | None, original_s: float | None) -> None:
        """A twin that ran faster than its original shows that one thread suits the task;
        one that ran slower, failed, or whose original has no time (it was not measured
        beside it) counts against twins for the task and the model."""
        if twin_s is not None and original_s is not None and twin_s < original_s:
            self.hits += 1
            self.misses[task_index] = 0
        else:
            self.model_misses += 1
            self.misses[task_index] = self.misses.get(task_index, 0) + 1
