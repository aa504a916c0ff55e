"""Random scores for a task until it has measurements of its own, as in stock MetaSchedule.

Stock's gradient scheduler joins no batch before its whole first round robin is submitted,
so every task's first round is evolved under its XGBModel's warm-up scores, which are
random. `bcd` learns from each batch as soon as it is measured, so a later task's first
round would be steered by a model that has seen only other tasks. This wrapper gives one
task's search stock's view: random scores until the task's own first batch is back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.phased import python_model


@derived_object
class ColdUntilMeasured(ms.cost_model.PyCostModel):
    """`shared`'s predictions for a task that has measurements, random ones before. Updates
    go to the shared model through the tuning loop's callback, not through this wrapper."""

    def __init__(self, shared: Any, seed: int, measured: bool) -> None:
        super().__init__()
        self.shared = python_model(shared)
        self.rng = np.random.default_rng(seed)
        self.measured = measured

    def load(self, path: str) -> None:
        self.shared.load(path)

    def save(self, path: str) -> None:
        self.shared.save(path)

    def update(self, context: ms.TuneContext, candidates: list, results: list) -> None:
        self.measured = True

    def predict(self, context: ms.TuneContext, candidates: list) -> np.ndarray:
        if self.measured:
            return np.asarray(self.shared.predict(context, candidates), dtype="float64")
        return self.rng.uniform(0.0, 1.0, size=len(candidates)).astype("float64")
