"""What the tuner tells its observers (CLI progress bar, GUI, tests) after each round."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SessionStarted:
    session_id: int
    resumed: bool
    num_tasks: int
    trials_total: int
    trials_done: int
    elapsed_s: float
    # What a time budget adds to the session's clock (tuning/stopping.py): earlier runs' timings
    # of the compiled model, less the layout probe.
    budget_offset_s: float = 0.0
    continues_probe: bool = False  # the session is the layout probe this tune continues


@dataclass(frozen=True)
class RoundFinished:
    session_id: int
    round: int
    task_index: int
    task_name: str
    batch_size: int
    batch_failed: int
    best_task_latency_s: float | None
    estimated_latency_s: float | None  # None until every task has a valid measurement
    trials_done: int
    trials_total: int
    elapsed_s: float


@dataclass(frozen=True)
class SessionMessage:
    session_id: int
    kind: str  # "info", "warning", "fallback", ...
    message: str
    task_index: int | None = None


@dataclass(frozen=True)
class SessionPaused:
    """The tuner stopped at a round boundary because the user paused it (paused), or went on."""

    session_id: int
    paused: bool


@dataclass(frozen=True)
class SessionFinished:
    session_id: int
    status: str
    trials_done: int
    estimated_latency_s: float | None
    elapsed_s: float
    stop_reason: str = ""  # why it ended (tuning/stopping.py); "" when not said


@dataclass(frozen=True)
class ModelMeasured:
    """The whole compiled model was timed at a milestone of the session (tuning/milestones.py)."""

    session_id: int
    milestone: str
    trials_done: int
    elapsed_s: float
    estimated_latency_s: float
    measured_latency_s: float
    cost_s: float


TuneEvent = SessionStarted | RoundFinished | SessionMessage | SessionPaused | SessionFinished | ModelMeasured
Listener = Callable[[TuneEvent], None]
