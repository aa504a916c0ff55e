"""The cost model learns from the memory before a tune's first round: the measured programs of
the remembered tasks most similar to the model's tasks."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.cost_model.stored import StoredBatch, learn_stored
from bcd_core.memory.recall import TuningMemory
from bcd_core.memory.similar import RememberedTask, TaskLike

# Per remembered task, programs spread over its whole range of latencies (a ranking model
# learns from slow programs as much as from fast ones), and a cap on the total so that
# pre-training stays a matter of seconds.
SAMPLES_PER_TASK = 48
MAX_SAMPLES = 1536
TRIALS_READ_PER_TASK = 512


def spread(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`count` rows evenly spaced over `rows` (sorted by latency), first and last included."""
    if len(rows) <= count:
        return rows
    step = (len(rows) - 1) / (count - 1)
    return [rows[round(i * step)] for i in range(count)]


def remembered_for(memory: TuningMemory, tasks: Sequence[TaskLike]) -> list[RememberedTask]:
    """Every remembered task similar to one of `tasks`, nearest tasks' first, once each."""
    picked: dict[tuple[str, int, int], RememberedTask] = {}
    for index, task in enumerate(tasks):
        for remembered in memory.similar(index, task):
            picked.setdefault((remembered.store_label, remembered.session_id, remembered.task_id), remembered)
    return list(picked.values())


def remembered_batches(memory: TuningMemory, tasks: Sequence[TaskLike], target: Target) -> Iterator[StoredBatch]:
    """The remembered measurements to learn from, one batch per remembered task, up to
    MAX_SAMPLES in all."""
    samples = 0
    for remembered in remembered_for(memory, tasks):
        if samples >= MAX_SAMPLES:
            return
        source = memory.sources[remembered.store_label]
        rows = source.store.task_trials(remembered.session_id, remembered.task_id, TRIALS_READ_PER_TASK)
        rows = spread(rows, min(SAMPLES_PER_TASK, MAX_SAMPLES - samples))
        if not rows:
            continue
        mod = source.database.workload_of(rows[0]["workload_id"]).mod
        # A name of its own: the shared model groups samples by task name, and another
        # model's task may be named like one of this model's.
        name = f"memory {remembered.store_label}#{remembered.session_id}/{remembered.name}"
        context = ms.TuneContext(mod=mod, target=target, task_name=name)
        candidates = [source.database.candidate_from_row(row) for row in rows]
        yield StoredBatch(context, candidates, [row["latency_s"] for row in rows])
        samples += len(rows)


def pretrain_from_memory(
    memory: TuningMemory, tasks: Sequence[TaskLike], target: Target, model: ms.cost_model.CostModel
) -> tuple[int, float]:
    """Teach the model the remembered measurements before the first round; returns
    (samples, seconds)."""
    started = time.perf_counter()
    samples = learn_stored(model, remembered_batches(memory, tasks, target))
    return samples, time.perf_counter() - started
