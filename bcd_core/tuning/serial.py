"""A program's serial twin: the same schedule run on one thread.

MetaSchedule's CPU design space parallelises a kernel's outer loops up to a fixed extent
(`meta_schedule.parallel`, 16 jobs per core), so its fresh samples are nearly all parallel;
only its mutator reaches one thread, by chance. For a small kernel, waking the thread pool
costs more than the work it shares (on two cores a 512x512 matrix-vector product with ReLU:
10 us on one thread, 18 us or more on any parallel extent), and a search that did not meet a
serial program early evolves around parallel ones. The twin keeps every other decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tvm
from tvm.s_tir.schedule import Trace

from bcd_core.diffusion import postprocess
from bcd_core.records.states import TrialOrigin
from bcd_core.tuning.first_round import as_candidate, module_hash

PARALLEL_ANNOTATION = "meta_schedule.parallel"


def serial_trace_json(trace: Trace) -> Any | None:
    """The trace (without post-processing) as JSON without its parallel annotation, so that
    post-processing leaves every loop serial; None when it has none. (Setting the annotation
    to one thread is not enough: the post-processor still parallelises the outermost loop.)"""
    instructions, decisions = trace.as_json(remove_postproc=True)
    positions = [
        index
        for index, instruction in enumerate(instructions)
        if instruction[0] == "Annotate" and list(instruction[2]) == [PARALLEL_ANNOTATION]
    ]
    if not positions:
        return None
    dropped = set(positions)
    kept = [instruction for index, instruction in enumerate(instructions) if index not in dropped]
    # Decisions name their instruction by position: shift them past the dropped ones.
    shifted = [[index - sum(1 for p in positions if p < index), value] for index, value in decisions]
    return [kept, shifted]


def serial_twin(mod: tvm.IRModule, trace: Trace, postprocs: Sequence[Any]) -> tvm.s_tir.Schedule | None:
    """The program of `trace` on `mod` on one thread, post-processed; None when there is no
    parallel annotation to change or the twin does not apply or is rejected."""
    as_json = serial_trace_json(trace)
    if as_json is None:
        return None
    sch = tvm.s_tir.Schedule(mod)
    try:
        Trace.apply_json_to_schedule(as_json, sch)
    except Exception:
        return None
    return sch if postprocess(sch, postprocs) else None


# A task whose twins became its best in none of this many batches in a row receives no more,
# and once this many twins of the whole model have won nothing, no task does: where threads
# pay (many cores, big kernels) twins cost a few trials, not a share of every round.
TASK_MISSES = 2
MODEL_MISSES = 8
# How many of a task's best measured programs are tried for a twin not yet handed out, and
# how many of a batch's picks are twinned for the cost model to choose from before the task
# has a measurement.
ORIGINALS_TRIED = 3
PICKS_TWINNED = 8

Score = Callable[[Any, list[Any]], Sequence[float]]  # (tune context, candidates) -> scores


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
        self.misses: dict[int, int] = {}  # task -> batches in a row whose twin did not become its best
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
        originals = self._measured(task_index) if measured else [(None, c.sch.trace) for c in batch[:PICKS_TWINNED]]
        twins: list[tuple[int | None, Any]] = []
        for source_id, trace in originals:
            twin = serial_twin(context.mod, trace, postprocs)
            if twin is not None and module_hash(twin) not in seen:
                twins.append((source_id, twin))
                if measured:
                    break  # the best measured program's twin
        if not twins:
            return None
        source_id, twin = twins[self._best_scored(context, [t for _, t in twins])]
        key = module_hash(twin)
        seen.add(key)
        self.run.provenance[key] = (TrialOrigin.SERIAL, source_id, "serial twin")
        return as_candidate(twin)

    def _measured(self, task_index: int) -> list[tuple[int | None, Trace]]:
        run = self.run
        rows = run.database.top_rows(run.workload_ids[task_index], ORIGINALS_TRIED)
        return [(row["id"], run.database.record_from_row(row).trace) for row in rows if row["latency_s"]]

    def _best_scored(self, context: Any, twins: list[Any]) -> int:
        if len(twins) == 1 or self.score is None:
            return 0
        scores = self.score(context, [as_candidate(twin) for twin in twins])
        return max(range(len(twins)), key=lambda position: float(scores[position]))

    def note_outcome(self, task_index: int, twin_latencies: list[float], best: float) -> None:
        """After a batch that carried a twin (its latency, inf when it failed): did it become
        the task's best?"""
        if not twin_latencies:
            return
        if min(twin_latencies) <= best:
            self.hits += 1
            self.misses[task_index] = 0
        else:
            self.model_misses += 1
            self.misses[task_index] = self.misses.get(task_index, 0) + 1
