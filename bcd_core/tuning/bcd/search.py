"""A `bcd` task's search: MetaSchedule's EvolutionarySearch with the stock settings, whose
batches carry the plan's diffused programs and serial twins, and whose first batch is a ranked
fresh sample of the design space (first_round.py) instead of an evolution under random scores."""

from __future__ import annotations

import time

from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from bcd_core.records.failed_run import runner_latency
from bcd_core.records.states import SEARCH_HIDDEN_ORIGINS
from bcd_core.tuning.bcd.plan import BcdPlan
from bcd_core.tuning.bcd.top_up import probed_programs, top_up_size
from bcd_core.tuning.metaschedule import evolutionary_search


@derived_object
class BcdSearch(ms.search_strategy.PySearchStrategy):
    """MetaSchedule's EvolutionarySearch with the stock settings; each batch may carry a few
    diffused programs (BcdPlan.mix_in_diffused), and none past the session's budget. The search
    is seeded only from the programs it found itself: a diffused program competes in its share
    of a round without holding the search in its basin."""

    def __init__(self, plan: BcdPlan, task_index: int) -> None:
        super().__init__()
        self.plan = plan
        self.task_index = task_index
        self.inner = evolutionary_search(plan.run)
        self.rounds = 0  # batches generated in this run

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        """`num_trials_per_iter` is the first round's size, at most trials per task, so that
        every task has its first round within the budget. A later round draws on the pooled
        budget and evolves a population whose cost hardly depends on how many of it are
        measured, so it measures the user's whole round (`trials_per_round`): a round cut to
        a small trials-per-task paid a whole evolution for a few trials."""
        self.plan.sketches[self.task_index] = list(design_spaces)
        database = self.plan.run.database.without(*SEARCH_HIDDEN_ORIGINS)
        later_rounds = self.plan.settings.trials_per_round
        self.inner.pre_tuning(max_trials, later_rounds, design_spaces, database, cost_model)
        self.plan.searches[self.task_index] = self.inner

    def post_tuning(self) -> None:
        self.plan.searches.pop(self.task_index, None)
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[ms.MeasureCandidate] | None:
        plan = self.plan
        left = plan.trials_left_for(self.task_index, plan.total_budget - plan.generated)
        if self.task_index in plan.run.given_up or left <= 0:
            return None
        topping_up = not self.rounds and self.task_index in plan.topping_up
        first = not self.rounds and not plan.run.rounds_per_task.get(self.task_index)
        self.rounds += 1
        if topping_up:
            batch = self.top_up(left)
        elif first:
            batch = plan.first_round(self.task_index, left)
        else:
            candidates = self.inner.generate_measure_candidates()
            if candidates is None:
                return None
            started = time.perf_counter()
            batch = plan.mix_in_diffused(self.task_index, list(candidates)[:left])
            plan.run.bookkeeping_s += time.perf_counter() - started
        if not batch:
            return None
        batch = plan.with_serial_twin(self.task_index, batch, left)
        plan.generated += len(batch)
        return batch

    def top_up(self, left: int) -> list[ms.MeasureCandidate]:
        """The rest of the task's first round after its layout probe's (top_up.py)."""
        plan, index = self.plan, self.task_index
        plan.topping_up.discard(index)
        plan.seen.setdefault(index, set()).update(probed_programs(plan.run, index))
        return plan.first_round(index, min(left, top_up_size(plan.run, index)))

    def notify_runner_results(self, measure_candidates, results) -> None:
        self.plan.memory_share.note_outcomes(measure_candidates, results)
        self.plan.twins.note_results(measure_candidates, [runner_latency(result) for result in results])
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self) -> BcdSearch:
        return BcdSearch(self.plan, self.task_index)
