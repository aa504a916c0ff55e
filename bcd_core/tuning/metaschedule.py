"""The baseline: stock MetaSchedule (evolutionary search, XGBoost cost model, gradient task
scheduler), with this project's builder, store and 2-core settings."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.target import host_core_count
from bcd_core.tuning.run import RecordTrials, TuningRun, standard_callbacks


def evolutionary_search(run: TuningRun, genetic_num_iters: int = 4) -> ms.search_strategy.EvolutionarySearch:
    population, fresh = run.settings.search_population
    return ms.search_strategy.EvolutionarySearch(
        population_size=population, init_min_unmeasured=fresh, genetic_num_iters=genetic_num_iters
    )


@derived_object
class StockSearch(ms.search_strategy.PySearchStrategy):
    """MetaSchedule's EvolutionarySearch, unchanged, except that it ends (returns no
    candidates, which makes the C++ scheduler terminate the task cleanly) once the session
    gave the task up because every candidate failed."""

    def __init__(self, run: TuningRun, task_index: int) -> None:
        super().__init__()
        self.run = run
        self.task_index = task_index
        self.inner = evolutionary_search(run)

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[ms.MeasureCandidate] | None:
        if self.task_index in self.run.given_up:
            return None
        return self.inner.generate_measure_candidates()

    def notify_runner_results(self, measure_candidates, results) -> None:
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self) -> StockSearch:
        return StockSearch(self.run, self.task_index)


@contextmanager
def _stoppable(run: TuningRun) -> Iterator[None]:
    try:
        yield
    except Exception:
        if not run.stopped_from_callback:  # a real failure, not the user's stop
            raise


def tune_stock(run: TuningRun) -> None:
    """Global budget (trials per task x tasks), no per-task cap: what `tune_relax` does."""
    budget_left = run.trials_total - run.trials_done
    if budget_left <= 0:
        return
    pending = list(run.tasks)
    contexts = [run.make_context(task, StockSearch(run, task.index)) for task in pending]
    run.cost_model = ms.cost_model.CostModel.create("xgb", num_tuning_cores=host_core_count(), tree_method="auto")
    recorder = RecordTrials(run, [task.index for task in pending])
    run.control_in_callback = True
    measurers = run.measurers.lent(run.settings, run.target)
    with tempfile.TemporaryDirectory(prefix="bcd-ms-") as work_dir, _stoppable(run), measurers as (builder, runner):
        ms.tune_tasks(
            tasks=contexts,
            task_weights=[float(task.weight) for task in pending],
            work_dir=work_dir,
            max_trials_global=budget_left,
            max_trials_per_task=budget_left,
            num_trials_per_iter=run.settings.batch_size,
            builder=builder,
            runner=runner,
            database=run.database,
            cost_model=run.cost_model,
            measure_callbacks=standard_callbacks(recorder),
            task_scheduler=ms.task_scheduler.GradientBased(seed=run.settings.seed),
        )
