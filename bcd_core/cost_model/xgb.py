"""One XGBoost cost model shared by all tasks: pre-trained on the representatives, then
fine-tuned by continued boosting (bcd-algorithm.md section 6).

MetaSchedule's own XGBModel predicts random scores until it has 100 samples, per tuning
run, so with small per-task budgets it never guides anything. This model is shared across
tasks, so what the representatives taught it carries over to their members.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import xgboost as xgb
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.metrics import pairwise_accuracy
from bcd_core.records.failed_run import runner_latency

log = logging.getLogger("bcd.cost_model")

FEATURE_WIDTH = 164  # MetaSchedule's per-store feature vector length


def aggregate_features(per_store: np.ndarray) -> np.ndarray:
    """[n_stores, 164] -> fixed-length vector: sum and max over stores, plus store count."""
    if per_store.size == 0:
        return np.zeros(2 * FEATURE_WIDTH + 1)
    return np.concatenate([per_store.sum(axis=0), per_store.max(axis=0), [per_store.shape[0]]])


@derived_object
class SharedXGBModel(ms.cost_model.PyCostModel):
    """Labels are per-task normalized throughput (task's best latency / latency; 0 if failed)."""

    def __init__(
        self,
        num_threads: int = 2,
        seed: int = 0,
        full_rounds: int = 80,
        finetune_rounds: int = 12,
        full_retrain_every: int = 8,
        accuracy_floor: float = 0.55,
    ) -> None:
        super().__init__()
        self.params = {
            # Only the order of candidates of one task matters to the search: learn rankings
            # within each task (one query group per task) rather than absolute scores.
            "objective": "rank:pairwise",
            "max_depth": 6,
            "eta": 0.2,
            "min_child_weight": 0,
            "subsample": 1.0,
            "nthread": num_threads,
            "seed": seed,
            "verbosity": 0,
        }
        self.full_rounds = full_rounds
        self.finetune_rounds = finetune_rounds
        self.full_retrain_every = full_retrain_every
        self.accuracy_floor = accuracy_floor
        self.extractor = ms.feature_extractor.PerStoreFeature()
        self.rng = np.random.default_rng(seed)
        self.features: list[np.ndarray] = []
        self.latencies: list[float | None] = []
        self.task_keys: list[str] = []
        self.booster: xgb.Booster | None = None
        self.updates_since_full = 0
        self.full_trainings = 0
        self.finetunings = 0

    # -- features and labels --------------------------------------------------------------
    def featurize(self, context: ms.TuneContext, candidates: Sequence[Any]) -> np.ndarray:
        if not candidates:
            return np.zeros((0, 2 * FEATURE_WIDTH + 1))
        per_candidate = self.extractor.extract_from(context, list(candidates))
        return np.stack([aggregate_features(f.numpy()) for f in per_candidate])

    def _labels(self, indices: Sequence[int]) -> np.ndarray:
        best: dict[str, float] = {}
        for key, latency in zip(self.task_keys, self.latencies):
            if latency is not None:
                best[key] = min(latency, best.get(key, latency))
        labels = []
        for i in indices:
            latency = self.latencies[i]
            labels.append(0.0 if latency is None else best[self.task_keys[i]] / latency)
        return np.asarray(labels)

    # -- training -------------------------------------------------------------------------
    def add_samples(self, task_key: str, features: np.ndarray, latencies: Sequence[float | None]) -> range:
        start = len(self.latencies)
        self.features.extend(features)
        self.latencies.extend(latencies)
        self.task_keys.extend([task_key] * len(latencies))
        return range(start, len(self.latencies))

    def _grouped(self, indices: Sequence[int]) -> xgb.DMatrix:
        """Samples sorted by task with one ranking group per task, as rank:pairwise needs."""
        ordered = sorted(indices, key=lambda i: self.task_keys[i])
        data = xgb.DMatrix(np.stack([self.features[i] for i in ordered]), label=self._labels(ordered))
        sizes: dict[str, int] = {}
        for i in ordered:
            sizes[self.task_keys[i]] = sizes.get(self.task_keys[i], 0) + 1
        data.set_group(list(sizes.values()))
        return data

    def train_full(self) -> None:
        if not any(lat is not None for lat in self.latencies):
            return
        data = self._grouped(range(len(self.latencies)))
        self.booster = xgb.train(self.params, data, num_boost_round=self.full_rounds)
        self.updates_since_full = 0
        self.full_trainings += 1

    def finetune(self, new: range) -> None:
        data = self._grouped(new)
        self.booster = xgb.train(self.params, data, num_boost_round=self.finetune_rounds, xgb_model=self.booster)
        self.updates_since_full += 1
        self.finetunings += 1

    def predict_features(self, features: np.ndarray) -> np.ndarray:
        if self.booster is None or len(features) == 0:
            return self.rng.random(len(features))
        return self.booster.predict(xgb.DMatrix(features))

    # -- PyCostModel interface ------------------------------------------------------------
    def update(self, context: ms.TuneContext, candidates: list, results: list) -> None:
        if not candidates:
            return
        features = self.featurize(context, candidates)
        latencies = [runner_latency(r) for r in results]
        accuracy = None
        if self.booster is not None:
            before = self.predict_features(features)
            new_labels = [0.0 if lat is None else 1.0 / lat for lat in latencies]
            accuracy = pairwise_accuracy(before, new_labels)
        self.learn(str(context.task_name), features, latencies, accuracy)

    def learn(
        self, task_key: str, features: np.ndarray, latencies: Sequence[float | None], accuracy: float | None
    ) -> None:
        """Add a measured batch; continue boosting on it, or retrain on everything every
        `full_retrain_every` updates and when the accuracy on the batch fell below the floor."""
        new = self.add_samples(task_key, features, latencies)
        needs_full = (
            self.booster is None
            or self.updates_since_full >= self.full_retrain_every
            or (accuracy is not None and accuracy < self.accuracy_floor)
        )
        if needs_full:
            self.train_full()
        else:
            self.finetune(new)

    def predict(self, context: ms.TuneContext, candidates: list) -> np.ndarray:
        if self.booster is None:
            return self.rng.random(len(candidates))  # no features needed
        return self.predict_features(self.featurize(context, candidates)).astype("float64")

    def pretrain(self, context: ms.TuneContext, candidates: list, latencies: Sequence[float | None]) -> None:
        """Add stored measurements (earlier runs of the session); call train_full() after."""
        self.add_samples(str(context.task_name), self.featurize(context, candidates), latencies)

    def save(self, path: str) -> None:
        with open(path, "wb") as handle:
            pickle.dump((self.features, self.latencies, self.task_keys, self.booster), handle)

    def load(self, path: str) -> None:
        with open(path, "rb") as handle:
            self.features, self.latencies, self.task_keys, self.booster = pickle.load(handle)
