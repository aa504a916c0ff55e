"""The `bcd` strategy: stock MetaSchedule with Bayesian Code Diffusion added.

Stock MetaSchedule is the floor: its gradient rule picks the task of every round
(scheduler.py), its XGBModel is the one cost model of every task (tuning/driver.py) and every
round after a task's first is its EvolutionarySearch (search.py). BCD adds what plan.py holds:
each batch is learnt from as soon as it is measured; a task's first round is a ranked fresh
sample (first_round.py), and a light member's is half a round; programs of cluster-mates and of
earlier tunes (memory_share.py) faster per FLOP are diffused into a task's rounds, tile sizes
adapted (bcd_core/diffusion.py); and serial twins (serial.py) try kernels without threads.
docs/design.md tells the whole story.
"""

from __future__ import annotations

import logging

from bcd_core.tuning.bcd.plan import BcdPlan
from bcd_core.tuning.bcd.scheduler import BcdScheduler
from bcd_core.tuning.bcd.search import BcdSearch
from bcd_core.tuning.driver import drive
from bcd_core.tuning.run import TuningRun

log = logging.getLogger("bcd.tuning.bcd")


def tune_bcd(run: TuningRun) -> None:
    if run.trials_done >= run.trials_total:
        return
    plan = BcdPlan(run)
    contexts = [run.make_context(task, BcdSearch(plan, task.index)) for task in run.tasks]
    drive(run, contexts, BcdScheduler(plan))
    if plan.reproposed:
        log.info("%d candidates the searches proposed again were not measured twice", plan.reproposed)
