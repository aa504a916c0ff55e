"""Values the store's parts and its callers share: timestamps, trial rows (statuses: states.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())


@dataclass
class TrialRow:
    """One measured candidate, as the tuner hands it to the store."""

    task_id: int | None
    workload_id: int
    round: int
    elapsed_s: float
    run_secs: list[float] | None  # None when the candidate failed
    error: str | None
    trace: Any  # Trace JSON (a list), as MetaSchedule serializes it
    args_info: Any
    target_key: str
    origin: str = "evolved"
    source_trial_id: int | None = None
    adaptation: str | None = None
    predicted_score: float | None = None

    @property
    def latency_s(self) -> float | None:
        if not self.run_secs:
            return None
        return sum(self.run_secs) / len(self.run_secs)
