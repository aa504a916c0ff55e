"""Thread-safe steering of a running tune, in its process (the store carries requests from
others: tuning/channel.py).

Requests are queued and applied by the scheduler at the next round boundary, so a batch in
flight is never disturbed and nothing measured is lost. Pause and stop also take effect at
the next boundary. Every applied request is recorded in the session's events.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

USER_STOP = "stopped by the user"
SINGLETON_PREFIX = "single:"  # the cluster key of a task moved out on its own


class RequestKind(StrEnum):
    PRIORITY = "priority"
    TASK_BUDGET = "task_budget"
    CLUSTER_BUDGET = "cluster_budget"
    TOTAL_BUDGET = "total_budget"
    SKIP = "skip"
    MOVE = "move"
    REPRESENTATIVE = "representative"
    UNSKIP = "unskip"


@dataclass(frozen=True)
class ControlRequest:
    kind: RequestKind
    args: dict[str, Any] = field(default_factory=dict)
    requested_at: float = field(default_factory=time.time)

    def describe(self) -> str:
        details = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.kind}({details})"


class SteeringRequests:
    """The steering requests a tune takes, one method each; `_request` says where they go (the
    in-process queue of TuningControl, or the store for RemoteControl)."""

    def _request(self, kind: RequestKind, **args: Any) -> ControlRequest:
        raise NotImplementedError

    def set_cluster_priority(self, cluster_keys: list[str]) -> ControlRequest:
        """Clusters in the order to tune them (keys not listed keep their relative order after)."""
        return self._request(RequestKind.PRIORITY, order=list(cluster_keys))

    def set_task_budget(self, task_index: int, trials: int) -> ControlRequest:
        return self._request(RequestKind.TASK_BUDGET, task=task_index, trials=int(trials))

    def set_cluster_budget(self, cluster_key: str, trials: int) -> ControlRequest:
        """Per-task trial cap for every task of the cluster."""
        return self._request(RequestKind.CLUSTER_BUDGET, cluster=cluster_key, trials=int(trials))

    def set_total_budget(self, trials: int) -> ControlRequest:
        return self._request(RequestKind.TOTAL_BUDGET, trials=int(trials))

    def skip_task(self, task_index: int) -> ControlRequest:
        return self._request(RequestKind.SKIP, task=task_index)

    def unskip_task(self, task_index: int) -> ControlRequest:
        """Tune a skipped task again, within its budget."""
        return self._request(RequestKind.UNSKIP, task=task_index)

    def move_task(self, task_index: int, cluster_key: str | None) -> ControlRequest:
        """Put a task into another cluster; None makes it a singleton."""
        return self._request(RequestKind.MOVE, task=task_index, cluster=cluster_key)

    def set_representative(self, cluster_key: str, task_index: int) -> ControlRequest:
        return self._request(RequestKind.REPRESENTATIVE, cluster=cluster_key, task=task_index)


class TuningControl(SteeringRequests):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._running.set()
        self._stop = threading.Event()
        self._pending: list[ControlRequest] = []
        self._stop_reason: str | None = None

    # -- flow -----------------------------------------------------------------------------
    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self, reason: str | None = None) -> None:
        """Finish the batch in flight, save it, and end the session (resumable later).
        `reason`: a stopping rule's (tuning/stopping.py); none when the user stops."""
        with self._lock:
            if not self._stop.is_set():
                self._stop_reason = reason
        self._stop.set()
        self._running.set()  # a paused tuner must wake up to stop

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    @property
    def stop_reason(self) -> str:
        """Why the tune stops (or stopped): a rule's words, or the user's stop."""
        return self._stop_reason or USER_STOP

    @property
    def stopped_by_rule(self) -> bool:
        return self._stop.is_set() and self._stop_reason is not None

    def wait_while_paused(self, poll_s: float = 0.2) -> float:
        """Block while paused; returns the seconds spent waiting."""
        start = time.perf_counter()
        while not self._running.wait(poll_s):
            if self._stop.is_set():
                break
        return time.perf_counter() - start

    # -- steering requests ----------------------------------------------------------------
    def _request(self, kind: RequestKind, **args: Any) -> ControlRequest:
        return self.submit(ControlRequest(kind, args))

    def submit(self, request: ControlRequest) -> ControlRequest:
        """Queue a request made elsewhere (another process, through the store)."""
        with self._lock:
            self._pending.append(request)
        return request

    def pending(self) -> list[ControlRequest]:
        with self._lock:
            return list(self._pending)

    def take_pending(self) -> list[ControlRequest]:
        with self._lock:
            taken, self._pending = self._pending, []
        return taken
