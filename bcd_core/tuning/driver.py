"""MetaSchedule's tuning loop as the `bcd` strategy drives it: its own task scheduler and
searches, one XGBoost cost model shared by every task of the model (trained again from the
store when a session resumes), this project's builder, runner and store."""

from __future__ import annotations

import tempfile
from typing import Any

from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.features import RememberedFeatures
from bcd_core.cost_model.stored import StoredBatch, learn_stored, python_model
from bcd_core.cost_model.warmup import STOCK_WARMUP_SAMPLES, WarmupXGBModel, in_warmup
from bcd_core.memory.pretrain import pretrain_from_memory
from bcd_core.records.states import EventKind
from bcd_core.target import host_core_count
from bcd_core.tuning.run import RecordTrials, TuningRun, standard_callbacks


def make_cost_model() -> ms.cost_model.CostModel:
    """Stock's own model, MetaSchedule's XGBModel, one for every task of the model as in
    `tune_tasks`; it learns from each batch as soon as it is measured, so that it ranks later
    tasks' first rounds (once past its warm-up) and guides every later round as stock's does.
    Its features are stock's, each program's extracted once (cost_model/features.py); it is
    not trained during its warm-up, when its scores are random (cost_model/warmup.py)."""
    return WarmupXGBModel(
        extractor=RememberedFeatures(),
        num_warmup_samples=STOCK_WARMUP_SAMPLES,
        num_tuning_cores=host_core_count(),
        tree_method="auto",
    )


def retrain_from_store(run: TuningRun, model: ms.cost_model.PyCostModel) -> None:
    """A resumed session's cost model learns again from everything the session measured."""
    by_task: dict[int, list[dict[str, Any]]] = {}
    row_to_index = {row_id: index for index, row_id in run.task_row_ids.items()}
    for trial in run.store.trials(run.session_id):
        if trial["task_id"] in row_to_index:
            by_task.setdefault(row_to_index[trial["task_id"]], []).append(trial)
    batches = (
        StoredBatch(
            run.contexts[index],
            [run.database.candidate_from_row(t) for t in trials],
            [t["latency_s"] for t in trials],
        )
        for index, trials in by_task.items()
    )
    samples = learn_stored(model, batches)
    if in_warmup(python_model(model)):
        run.message(EventKind.INFO, f"cost model: {samples} stored trials kept, too few to train it on yet")
    else:
        run.message(EventKind.INFO, f"cost model retrained on {samples} stored trials")


UNLIMITED = 10**9


def drive(run: TuningRun, contexts: list[ms.TuneContext], scheduler: ms.task_scheduler.PyTaskScheduler) -> None:
    """Run `ms.tune_tasks` over every task of `run` with `scheduler` choosing the rounds; the
    scheduler enforces the (user-changeable) budget."""
    cost_model = make_cost_model()
    run.cost_model = cost_model
    if run.memory is not None:
        samples, seconds = pretrain_from_memory(run.memory, run.tasks, run.target, cost_model)
        what = "given" if in_warmup(python_model(cost_model)) else "pre-trained on"  # too few: trained later
        run.message(EventKind.INFO, f"memory: cost model {what} {samples} remembered trials in {seconds:.1f} s")
    if run.resumed:
        retrain_from_store(run, cost_model)
    recorder = RecordTrials(run, [task.index for task in run.tasks])
    with tempfile.TemporaryDirectory(prefix="bcd-") as work_dir, run.measurers.lent(run.settings, run.target) as kit:
        builder, runner = kit
        ms.tune_tasks(
            tasks=contexts,
            task_weights=[float(task.weight) for task in run.tasks],
            work_dir=work_dir,
            max_trials_global=UNLIMITED,
            max_trials_per_task=UNLIMITED,
            num_trials_per_iter=run.settings.batch_size,
            builder=builder,
            runner=runner,
            database=run.database,
            cost_model=cost_model,
            measure_callbacks=standard_callbacks(recorder),
            task_scheduler=scheduler,
        )
