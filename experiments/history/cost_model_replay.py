"""How well cost-model variants rank each batch of a finished tune, replayed offline.

Every round's batch is predicted by a model trained on all earlier batches of the run (what
the search had at that moment), then added to it. Printed: mean pairwise ranking accuracy and
Spearman correlation of predicted vs measured throughput over batches of 6 or more.

    python experiments/history/cost_model_replay.py docs/bench/squeezenet-32i/bcd.db

Featurizing a SqueezeNet run (864 trials) takes about half a minute; the per-store variant
trains slowly (a few minutes per run).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import defaultdict
from typing import Any

import numpy as np
import tvm
import xgboost as xgb
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.database import TuningRecord, Workload

from bcd_core.cost_model.metrics import pairwise_accuracy, spearman
from bcd_core.cost_model.xgb import FEATURE_WIDTH, SharedXGBModel, aggregate_features
from bcd_core.records.failed_run import FAILED_RUN_SECS


def featurize(db_path: str) -> list[dict[str, Any]]:
    """Per-store features, latency, round and task of every trial of the newest session."""
    connection = sqlite3.connect(db_path)
    connection.row_factory = sqlite3.Row
    session = connection.execute("select max(id) from sessions").fetchone()[0]
    workloads = {
        row["id"]: Workload.from_json(json.loads(row["workload"]))
        for row in connection.execute("select * from workloads")
    }
    extractor = ms.feature_extractor.PerStoreFeature()
    contexts: dict[int, ms.TuneContext] = {}
    samples = []
    for row in connection.execute("select * from trials where session_id=? order by id", (session,)):
        workload = workloads[row["workload_id"]]
        if row["workload_id"] not in contexts:
            target = tvm.target.Target(json.loads(row["target_key"]))
            contexts[row["workload_id"]] = ms.TuneContext(
                mod=workload.mod, target=target, space_generator="post-order-apply", num_threads=2
            )
        run_secs = json.loads(row["run_secs"]) if row["run_secs"] else [FAILED_RUN_SECS]
        record = TuningRecord.from_json(
            [json.loads(row["trace"]), run_secs, None, json.loads(row["args_info"])], workload
        )
        features = extractor.extract_from(contexts[row["workload_id"]], [record.as_measure_candidate()])[0]
        samples.append(
            {"task": row["task_id"], "round": row["round"], "latency": row["latency_s"], "features": features.numpy()}
        )
    return samples


def normalized_throughput(tasks: list[int], latencies: list[float | None]) -> np.ndarray:
    best: dict[int, float] = {}
    for task, latency in zip(tasks, latencies):
        if latency is not None:
            best[task] = min(latency, best.get(task, latency))
    return np.array([0.0 if lat is None else best[task] / lat for task, lat in zip(tasks, latencies)])


class Aggregated:
    """bcd's own SharedXGBModel (sum/max/count of the per-store features per candidate),
    with its objective or retraining schedule changed for the variants."""

    def __init__(self, objective: str = "rank:pairwise", finetune: bool = True) -> None:
        # full_retrain_every=0: a full retrain at every update instead of continued boosting.
        self.model = SharedXGBModel(num_threads=2, full_retrain_every=8 if finetune else 0)
        self.model.params["objective"] = objective

    @property
    def booster(self) -> xgb.Booster | None:
        return self.model.booster

    @staticmethod
    def rows(features: list[np.ndarray]) -> np.ndarray:
        return np.stack([aggregate_features(f) for f in features])

    def predict(self, features: list[np.ndarray]) -> np.ndarray:
        return self.model.predict_features(self.rows(features))

    def update(self, task: int, features: list[np.ndarray], latencies: list[float | None], accuracy) -> None:
        self.model.learn(str(task), self.rows(features), latencies, accuracy)


class PerStore:
    """MetaSchedule's XGBModel: a score per store, summed per candidate, squared error."""

    def __init__(self) -> None:
        self.features: list[np.ndarray] = []
        self.tasks: list[int] = []
        self.latencies: list[float | None] = []
        self.booster: xgb.Booster | None = None

    @staticmethod
    def stores(features: list[np.ndarray]) -> tuple[xgb.DMatrix, np.ndarray]:
        rows = np.concatenate([f if f.size else np.zeros((1, FEATURE_WIDTH)) for f in features])
        counts = np.array([max(1, f.shape[0]) for f in features])
        return xgb.DMatrix(rows), np.concatenate([[0], np.cumsum(counts)[:-1]])

    def predict(self, features: list[np.ndarray]) -> np.ndarray:
        data, starts = self.stores(features)
        return np.add.reduceat(self.booster.predict(data), starts)

    def update(self, task: int, features: list[np.ndarray], latencies: list[float | None], accuracy) -> None:
        self.features += features
        self.tasks += [task] * len(latencies)
        self.latencies += latencies
        labels = normalized_throughput(self.tasks, self.latencies)
        data, starts = self.stores(self.features)
        owner = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, data.num_row())))

        def squared_error_of_sums(predictions: np.ndarray, _: Any) -> tuple[np.ndarray, np.ndarray]:
            gradient = (np.add.reduceat(predictions, starts) - labels)[owner]
            return gradient, np.ones_like(gradient)

        params = {"max_depth": 10, "gamma": 0.001, "min_child_weight": 0, "eta": 0.2, "nthread": 2}
        self.booster = xgb.train(params, data, 80, obj=squared_error_of_sums)


VARIANTS = {
    "bcd (fine-tuned, pairwise rank)": lambda: Aggregated(),
    "full retrain every round": lambda: Aggregated(finetune=False),
    "squared error, full retrain": lambda: Aggregated("reg:squarederror", finetune=False),
    "squared error, fine-tuned": lambda: Aggregated("reg:squarederror"),
    "per-store sum (MetaSchedule's)": PerStore,
}


def replay(samples: list[dict[str, Any]], model: Any) -> tuple[float, float, int]:
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for sample in samples:
        rounds[sample["round"]].append(sample)
    accuracies, correlations = [], []
    for number in sorted(rounds):
        batch = rounds[number]
        features = [s["features"] for s in batch]
        latencies = [s["latency"] for s in batch]
        accuracy = None
        if model.booster is not None and len(batch) >= 6:
            predicted = model.predict(features)
            throughput = [0.0 if lat is None else 1.0 / lat for lat in latencies]
            accuracy = pairwise_accuracy(predicted, throughput)
            correlation = spearman(predicted, throughput)
            if accuracy is not None:
                accuracies.append(accuracy)
            if correlation is not None:
                correlations.append(correlation)
        model.update(batch[0]["task"], features, latencies, accuracy)
    return float(np.mean(accuracies)), float(np.mean(correlations)), len(accuracies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", nargs="+", help="stores of finished tunes (bench folders hold bcd.db, metaschedule.db)")
    args = parser.parse_args()
    for path in args.db:
        samples = featurize(path)
        for name, make in VARIANTS.items():
            accuracy, correlation, batches = replay(samples, make())
            print(f"{path}: {name:32s} pairwise {accuracy:.3f}  spearman {correlation:.3f}  ({batches} batches)")


if __name__ == "__main__":
    main()
