"""How well each cost model ranks a task's candidates before that task has been measured.

Both models learn from the same samples: every trial a finished BCD run measured before the
probed task's first trial (every other task's, as the run's model had them). They then rank
the probed task's candidates as a run of stock MetaSchedule measured them (its store), and are
scored against those measurements: pairwise ranking accuracy, Spearman, recall of the 8 best
among the model's top 16, and the measured latency of the model's top pick and of the best
of its top 16 (what one round would find), each divided by the best measured.

    python experiments/history/model_probe.py ../shared/models/squeezenet1_1.onnx docs/bench/squeezenet-32v \
        fused_conv2d17_add9_relu9

BCD's model is bcd_core's SharedXGBModel (pre-trained, then fully trained); MetaSchedule's is
its XGBModel, fed the same batches task by task. No timing: safe beside other work, though
XGBoost training takes a minute or two on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.cost_model.metrics import pairwise_accuracy, spearman
from bcd_core.cost_model.phased import STOCK_WARMUP_SAMPLES, stored_runner_result
from bcd_core.cost_model.xgb import SharedXGBModel
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_core_count
from bcd_core.tuning.session import prepare_model

ROUND = 16  # candidates a round measures
BEST = 8  # recall of the 8 truly best among the model's top ROUND


def newest_session(store: RecordStore, strategy: str) -> dict[str, Any]:
    sessions = [s for s in store.sessions() if s["strategy"] == strategy]
    if not sessions:
        sys.exit(f"no {strategy} session in {store.path}")
    return sessions[-1]


def training_batches(bench: Path, probed: str) -> tuple[Target, list[tuple[str, list, list]]]:
    """(task name, candidates, latencies) per task and round of the BCD run, before `probed`'s first trial."""
    store = RecordStore(bench / "bcd.db")
    session = newest_session(store, "bcd")
    database = SqliteDatabase(store, session["target_key"])
    names = {row["id"]: row["name"] for row in store.tasks(session["id"])}
    trials = store.trials(session["id"])
    first = min(t["id"] for t in trials if names[t["task_id"]] == probed)
    batches: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for t in trials:
        if t["id"] < first and t["trace"]:
            batches[(t["round"], t["task_id"])].append(t)
    out = []
    for (_, task_id), rows in sorted(batches.items()):
        candidates = [database.record_from_row(r).as_measure_candidate() for r in rows]
        out.append((names[task_id], candidates, [r["latency_s"] for r in rows]))
    return Target(json.loads(session["target"])), out


def probe_set(bench: Path, probed: str) -> tuple[list, np.ndarray]:
    """The probed task's candidates and latencies as the stock run measured them (valid ones)."""
    store = RecordStore(bench / "metaschedule.db")
    session = newest_session(store, "metaschedule")
    database = SqliteDatabase(store, session["target_key"])
    task_id = next(row["id"] for row in store.tasks(session["id"]) if row["name"] == probed)
    rows = [t for t in store.trials(session["id"]) if t["task_id"] == task_id and t["latency_s"]]
    return [database.record_from_row(r).as_measure_candidate() for r in rows], np.array([r["latency_s"] for r in rows])


def scores(predicted: np.ndarray, latencies: np.ndarray) -> dict[str, float | None]:
    throughput = 1.0 / latencies
    order = np.argsort(-predicted)
    best = latencies.min()
    return {
        "pairwise_accuracy": pairwise_accuracy(predicted, throughput),
        "spearman": spearman(predicted, throughput),
        f"recall_best{BEST}_in_top{ROUND}": _recall(predicted, latencies),
        "top1_over_best": float(latencies[order[0]] / best),
        f"best_of_top{ROUND}_over_best": float(latencies[order[:ROUND]].min() / best),
    }


def _recall(predicted: np.ndarray, latencies: np.ndarray) -> float:
    truly_best = set(np.argsort(latencies)[:BEST])
    return len(truly_best & set(np.argsort(-predicted)[:ROUND])) / BEST


def probe(mods: dict[str, Any], bench: Path, probed: str) -> dict[str, Any]:
    """`mods`: the model's task modules by name (`task_modules`)."""
    target, batches = training_batches(bench, probed)
    shared = SharedXGBModel(num_threads=host_core_count(), seed=0)
    stock = ms.cost_model.XGBModel(
        num_warmup_samples=STOCK_WARMUP_SAMPLES, num_tuning_cores=host_core_count(), tree_method="auto"
    )
    for name, candidates, latencies in batches:
        context = ms.TuneContext(mod=mods[name], target=target, task_name=name)
        shared.pretrain(context, candidates, latencies)
        stock.update(context, candidates, [stored_runner_result(lat) for lat in latencies])
    shared.train_full()
    candidates, latencies = probe_set(bench, probed)
    context = ms.TuneContext(mod=mods[probed], target=target, task_name=probed)
    return {
        "bench": str(bench),
        "task": probed,
        "training_samples": sum(len(b[2]) for b in batches),
        "probe_candidates": len(candidates),
        "random": _random_baseline(latencies),
        "bcd shared model": scores(np.asarray(shared.predict(context, candidates)), latencies),
        "metaschedule XGBModel": scores(np.asarray(stock.predict(context, candidates)), latencies),
    }


def task_modules(model: Path, bench: Path) -> dict[str, Any]:
    """The model's task modules by name, extracted once for the BCD run's target."""
    store = RecordStore(bench / "bcd.db")
    target = Target(json.loads(newest_session(store, "bcd")["target"]))
    return {task.name: task.mod for task in prepare_model(model, target).tasks}


def _random_baseline(latencies: np.ndarray, draws: int = 200) -> dict[str, float]:
    """What a random ranking scores on average (the recall and best-of-16 to expect by chance)."""
    rng = np.random.default_rng(0)
    results = [scores(rng.random(len(latencies)), latencies) for _ in range(draws)]
    return {key: float(np.mean([r[key] for r in results if r[key] is not None])) for key in results[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("bench", type=Path, help="a bench folder with bcd.db and metaschedule.db")
    parser.add_argument("tasks", nargs="+", help="task names to probe")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = []
    mods = task_modules(args.model, args.bench)
    for task in args.tasks:
        result = probe(mods, args.bench, task)
        figures.append(result)
        print(f"{task} ({result['training_samples']} training samples, {result['probe_candidates']} candidates)")
        for name in ("random", "bcd shared model", "metaschedule XGBModel"):
            cells = ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} n/a" for k, v in result[name].items())
            print(f"  {name:22s} {cells}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
