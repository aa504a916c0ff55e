"""What counts as a failed run: the one definition the store, the tuner and the cost model share.

MetaSchedule gives a candidate that built or ran badly a sentinel run time instead of none:
its databases and runners hold `[1e10]` seconds for it. A sentinel stored as float32 is still
exactly 1e10 (9765625 * 2**10 fits a float32 mantissa), so comparing with it is safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FAILED_RUN_SECS = 1e10  # what MetaSchedule stores for a failed candidate, and what we write back


def is_failed_run(run_secs: Sequence[float] | None) -> bool:
    """True when a measurement gives no usable time: no run times at all, or any run at the
    sentinel (one failed repeat makes the mean meaningless, so the candidate counts as failed)."""
    return not run_secs or any(secs >= FAILED_RUN_SECS for secs in run_secs)


def runner_seconds(result: Any) -> list[float] | None:
    """A MetaSchedule runner result's seconds per repeat; None when it has an error or no valid
    time (`is_failed_run`)."""
    if result.error_msg or result.run_secs is None:
        return None
    secs = [float(getattr(s, "value", s)) for s in result.run_secs]
    return None if is_failed_run(secs) else secs


def runner_latency(result: Any) -> float | None:
    """A MetaSchedule runner result's mean run time in seconds, as the store keeps it; None
    when it has an error or no valid time."""
    secs = runner_seconds(result)
    return sum(secs) / len(secs) if secs else None
