"""The strategy registry: each strategy drives MetaSchedule over a `TuningRun`."""

from __future__ import annotations

from collections.abc import Callable

from bcd_core.tuning.bcd import tune_bcd
from bcd_core.tuning.metaschedule import tune_stock
from bcd_core.tuning.options import BCD, STOCK
from bcd_core.tuning.run import TuningRun

STRATEGY_RUNNERS: dict[str, Callable[[TuningRun], None]] = {STOCK: tune_stock, BCD: tune_bcd}


def run_strategy(run: TuningRun) -> None:
    strategy = run.settings.strategy
    if strategy not in STRATEGY_RUNNERS:
        raise ValueError(f"unknown strategy {strategy!r}")
    STRATEGY_RUNNERS[strategy](run)
