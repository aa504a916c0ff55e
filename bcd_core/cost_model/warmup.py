"""MetaSchedule's XGBoost cost model, first trained when its scores start to count.

XGBModel scores every candidate at random until it holds `num_warmup_samples` measurements,
yet its adaptive rule trains it again whenever its data grew by a fifth, warm-up or not: a
layout probe's rounds of 4 trials trained it a dozen times for scores nobody read, on a tune's
clock. `WarmupXGBModel` only collects batches until the warm-up is over, then trains on all
it holds and goes on as stock's model does. Its scores are random exactly where stock's are;
the model it first ranks with has learnt from every batch so far (stock's may be one trained a
few batches before, by its adaptive rule).

While the scores are random, a ranked first round (tuning/bcd/first_round.py) needs no large
population to rank: `scores_are_random` tells it so.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

# MetaSchedule's XGBModel returns random scores until it has this many samples (its default).
STOCK_WARMUP_SAMPLES = 100


def in_warmup(model: Any) -> bool:
    """Whether XGBModel `model` holds too few samples for its scores to count yet."""
    return model.data_size < model.num_warmup_samples


def scores_are_random(model: Any) -> bool:
    """Whether MetaSchedule's XGBModel `model` (the Python object) predicts random scores: it
    is in its warm-up, or has not been trained. Any other model is taken at its word."""
    if not hasattr(model, "num_warmup_samples"):
        return False
    return in_warmup(model) or model.booster is None


@contextmanager
def collecting_only(model: Any) -> Iterator[None]:
    """While the block runs, XGBModel `model`'s `update` only adds the batch to its data:
    its adaptive rule skips training while the data grew by less than a fifth of the size it
    last trained at, and with that size huge it always does. Its settings are put back."""
    adaptive, last = model.adaptive_training, model.last_train_size
    model.adaptive_training, model.last_train_size = True, sys.maxsize
    try:
        yield
    finally:
        model.adaptive_training, model.last_train_size = adaptive, last


@derived_object
class WarmupXGBModel(ms.cost_model.XGBModel._cls):  # type: ignore[name-defined]
    """Stock's XGBModel, untrained while its scores would be random anyway."""

    def update(self, context: ms.TuneContext, candidates: list, results: list) -> None:
        if self.data_size + len(candidates) >= self.num_warmup_samples:  # scores count from now on
            super().update(context, candidates, results)
            return
        with collecting_only(self):
            super().update(context, candidates, results)
