"""A cost model learns from stored measurements in one go: a resumed session's own trials, or
the tuning memory's before a tune's first round.

Fed one task's group at a time through `update`, MetaSchedule's XGBModel trains again after
most groups (from scratch, on all it holds), so a memory of 30 remembered tasks cost 14
trainings where the last one alone decides the model. Here it trains once, after the last
group: the same model, for a fraction of the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.warmup import collecting_only, in_warmup


@dataclass
class StoredBatch:
    """One task's stored measurements; a latency of None is a program that failed."""

    context: ms.TuneContext
    candidates: list[ms.MeasureCandidate]
    latencies: list[float | None]


def python_model(model: Any) -> Any:
    """The Python object behind a derived_object wrapper: its methods, called directly (through
    the FFI wrapper a prediction's result buffer is NULL, and isinstance fails)."""
    return getattr(model, "_inst", model)


def stored_runner_result(latency_s: float | None) -> ms.runner.RunnerResult:
    """A stored measurement as MetaSchedule's runner reported it (None: it failed)."""
    if latency_s is None:
        return ms.runner.RunnerResult(run_secs=None, error_msg="failed when it was measured")
    return ms.runner.RunnerResult(run_secs=[latency_s], error_msg=None)


def learn_stored(model: Any, batches: Iterable[StoredBatch]) -> int:
    """Feed MetaSchedule's cost model `model` every batch, then train it once; returns the
    number of samples fed."""
    model = python_model(model)
    samples = 0
    with training_deferred(model):
        for batch in batches:
            model.update(batch.context, batch.candidates, [stored_runner_result(x) for x in batch.latencies])
            samples += len(batch.candidates)
    return samples


@contextmanager
def training_deferred(model: Any) -> Iterator[None]:
    """While the block runs, MetaSchedule's XGBModel `model` only collects what `update`
    gives it; at the end it trains once on everything, unless its scores are still random
    (warmup.py): then its first batch past the warm-up trains it. Anything else passes through."""
    if not hasattr(model, "last_train_size"):
        yield
        return
    before = model.data_size
    with collecting_only(model):
        yield
    if model.data_size > before and not in_warmup(model):
        model.last_train_size = model.data_size
        train_on_everything(model)


def train_on_everything(model: Any) -> None:
    """What XGBModel.update does after adding a group (its step 5): train on every group's
    features, each labelled by its fastest latency over the program's."""
    groups = list(model.data.values())
    features = list(chain.from_iterable(group.features for group in groups))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = [np.divide(g.min_cost, g.costs, out=np.zeros_like(g.costs), where=g.costs != 0) for g in groups]
    model._train(xs=features, ys=np.concatenate(ratios, axis=0))
