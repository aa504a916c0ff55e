"""The words the store keeps for states: a session's status, a task's status, a trial's origin.

They are `StrEnum`s, so a member is the very string stored in SQLite and compares equal to it:
old stores read the same, and code names a state instead of spelling it.
"""

from __future__ import annotations

from enum import StrEnum


class SessionStatus(StrEnum):
    RUNNING = "running"
    INTERRUPTED = "interrupted"  # the process ended (Ctrl+C, a kill) mid-tune: resumable
    COMPLETED = "completed"
    FAILED = "failed"
    STOPPED = "stopped"  # stopped by the user at a round boundary: resumable


class TaskStatus(StrEnum):
    QUEUED = "queued"
    TUNING = "tuning"
    DIFFUSED = "diffused"  # its best so far came from another task's program
    REFINING = "refining"
    DONE = "done"
    SKIPPED = "skipped"
    FALLBACK = "fallback"  # no sketch matched its cluster's programs: searched on its own

    @property
    def is_busy(self) -> bool:
        return self in BUSY_TASK_STATES


BUSY_TASK_STATES = (TaskStatus.TUNING, TaskStatus.REFINING, TaskStatus.DIFFUSED, TaskStatus.FALLBACK)


class TrialOrigin(StrEnum):
    EVOLVED = "evolved"  # proposed by the search
    DIFFUSED = "diffused"  # another task's program, adapted
    COMMITTED = "committed"  # written through MetaSchedule's database interface
    IMPORTED = "imported"  # from a MetaSchedule JSON database


class EventKind(StrEnum):
    """What a session event (the store's events table, the log) is about."""

    INFO = "info"
    WARNING = "warning"
    FALLBACK = "fallback"
    CONTROL = "control"  # a steering request was applied
