"""Strategy dispatch: each strategy drives MetaSchedule over a TuningRun."""

from __future__ import annotations

from bcd_core.tuning.session import TuningRun
from bcd_core.tuning.settings import PHASED


def run_strategy(run: TuningRun) -> None:
    strategy = run.settings.strategy
    if strategy == "metaschedule":
        from bcd_core.tuning.metaschedule import tune_stock

        tune_stock(run)
    elif strategy == "bcd":
        from bcd_core.tuning.seeded import tune_seeded

        tune_seeded(run)
    elif strategy == PHASED:
        from bcd_core.tuning.bcd import tune_bcd

        tune_bcd(run)
    else:
        raise ValueError(f"unknown strategy {strategy!r}")
