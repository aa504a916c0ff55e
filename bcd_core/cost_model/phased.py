"""BCD's cost model by phase: the shared model while tasks have few samples, MetaSchedule's
own XGBModel for a task's later (phase-3) rounds once that model has learnt enough.

Both learn from every measured batch. The shared model (xgb.py) ranks well with few samples,
and what the representatives taught it carries over to their members: phase 1 and 2.
MetaSchedule's XGBModel (one prediction per buffer store, summed) predicts random scores
until it has `num_warmup_samples` samples, but with hundreds of samples from every task it
guides the members' own rounds better. Neither suffices alone: the XGBModel would rank the
representatives' rounds, tuned before it has data, at random.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.xgb import SharedXGBModel

# MetaSchedule's XGBModel returns random scores until it has this many samples (its default).
STOCK_WARMUP_SAMPLES = 100


def python_model(model: Any) -> Any:
    """The Python object behind a derived_object wrapper: its methods, called directly (through
    the FFI wrapper a prediction's result buffer is NULL, and isinstance fails)."""
    return getattr(model, "_inst", model)


@derived_object
class PhasedCostModel(ms.cost_model.PyCostModel):
    """Ranks a task's candidates with MetaSchedule's model when the task is in `late_tasks`
    (names, kept by the BCD plan) and that model is past its warm-up; otherwise with the
    shared model."""

    def __init__(self, shared: SharedXGBModel, stock: ms.cost_model.XGBModel) -> None:
        super().__init__()
        self.shared = python_model(shared)
        self.stock = python_model(stock)
        self.late_tasks: set[str] = set()

    @classmethod
    def for_host(cls, num_threads: int, seed: int) -> PhasedCostModel:
        shared = SharedXGBModel(num_threads=num_threads, seed=seed)
        stock = ms.cost_model.XGBModel(
            num_warmup_samples=STOCK_WARMUP_SAMPLES, num_tuning_cores=num_threads, tree_method="auto"
        )
        return cls(shared, stock)

    def stock_ready(self) -> bool:
        return self.stock.booster is not None and self.stock.data_size >= self.stock.num_warmup_samples

    def model_for(self, task_name: str) -> Any:
        return self.stock if task_name in self.late_tasks and self.stock_ready() else self.shared

    def update(self, context: ms.TuneContext, candidates: list, results: list) -> None:
        self.shared.update(context, candidates, results)
        self.stock.update(context, candidates, results)

    def predict(self, context: ms.TuneContext, candidates: list) -> np.ndarray:
        return self.model_for(str(context.task_name)).predict(context, candidates)

    def pretrain(self, context: ms.TuneContext, candidates: list, latencies: list[float | None]) -> None:
        """Stored measurements (a resumed session); call train_full() after every task's."""
        self.shared.pretrain(context, candidates, latencies)
        self.stock.update(context, candidates, [stored_runner_result(latency) for latency in latencies])

    def train_full(self) -> None:
        self.shared.train_full()


def stored_runner_result(latency_s: float | None) -> ms.runner.RunnerResult:
    """A stored measurement as MetaSchedule's runner reported it (None: it failed)."""
    if latency_s is None:
        return ms.runner.RunnerResult(run_secs=None, error_msg="failed when it was measured")
    return ms.runner.RunnerResult(run_secs=[latency_s], error_msg=None)
