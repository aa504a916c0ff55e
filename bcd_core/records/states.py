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
    STOPPED = "stopped"  # by the user or a stopping rule, at a round boundary: resumable


class TaskStatus(StrEnum):
    QUEUED = "queued"
    TUNING = "tuning"
    DIFFUSED = "diffused"  # its best so far came from another task's program
    REFINING = "refining"
    DONE = "done"
    SKIPPED = "skipped"
    FALLBACK = "fallback"  # no sketch matched its cluster's programs: searched on its own
    STOPPED = "stopped"  # shown, never stored: was being tuned when its session stopped


# A task being tuned now: its cluster shows the first of these its members are in.
BUSY_TASK_STATES = (TaskStatus.TUNING, TaskStatus.REFINING, TaskStatus.DIFFUSED, TaskStatus.FALLBACK)


class TrialOrigin(StrEnum):
    EVOLVED = "evolved"  # proposed by the search
    DIFFUSED = "diffused"  # another task's program, adapted
    MEMORY = "memory"  # a program of an earlier tune's task (any model, same target), adapted
    REUSED = "reused"  # an earlier tune's program for this very workload, unchanged
    SERIAL = "serial"  # one of the task's programs run on one thread (tuning/bcd/serial.py)
    COMMITTED = "committed"  # written through MetaSchedule's database interface
    IMPORTED = "imported"  # from a MetaSchedule JSON database


# Programs that came from another task: they count for a task's best latency.
CARRIED_ORIGINS = (TrialOrigin.DIFFUSED, TrialOrigin.MEMORY, TrialOrigin.REUSED)
# Those that never seed a task's evolutionary search: another
# task's program adapted to this one can hold the search in its basin. A reused program is
# this workload's own, as MetaSchedule reuses a tuned workload's records.
SEARCH_HIDDEN_ORIGINS = (TrialOrigin.DIFFUSED, TrialOrigin.MEMORY)
# Programs from earlier tunes (bcd_core/memory).
REMEMBERED_ORIGINS = (TrialOrigin.MEMORY, TrialOrigin.REUSED)


class EventKind(StrEnum):
    """What a session event (the store's events table, the log) is about."""

    INFO = "info"
    WARNING = "warning"
    FALLBACK = "fallback"
    CONTROL = "control"  # a steering request was applied
