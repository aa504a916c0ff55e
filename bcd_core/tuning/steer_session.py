"""Steering a session from outside its engine, as `bcd steer` does.

A session an engine tunes now gets each request through the store, exactly as the dashboard
sends it (channel.RemoteControl); the engine applies it at its next round boundary. A session
no engine runs has its stored skips and budgets changed instead, which resuming it tunes
with, as the dashboard's requests made before Tune are: un-skipping a task of a completed
session, or raising its total past what it measured, makes it resumable again. Flow (pause,
resume, stop) and the cluster changes (order, move, representative) need a running tune.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.records.states import SessionStatus, TaskStatus
from bcd_core.records.store import RecordStore
from bcd_core.tuning.channel import RemoteControl
from bcd_core.tuning.options import STOCK

SINGLETON = "single"  # `move TASK single`: the task becomes a cluster of its own


class Action(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    SKIP = "skip"
    UNSKIP = "unskip"
    BUDGET = "budget"
    CLUSTER_BUDGET = "cluster-budget"
    TOTAL = "total"
    ORDER = "order"
    MOVE = "move"
    REPRESENTATIVE = "representative"


FLOW_ACTIONS = (Action.PAUSE, Action.RESUME, Action.STOP)
# What also applies to a session no engine runs (its stored task rows and budget).
STORED_ACTIONS = (Action.SKIP, Action.UNSKIP, Action.BUDGET, Action.CLUSTER_BUDGET, Action.TOTAL)


@dataclass(frozen=True)
class SteerRequest:
    action: Action
    tasks: tuple[str, ...] = ()  # task names or indices
    clusters: tuple[str, ...] = ()  # cluster keys, or tasks standing for their clusters
    trials: int | None = None


def pick_session(store: RecordStore, session_id: int | None) -> dict[str, Any]:
    """The named session, or else the one an engine tunes now (a clear error if none or several)."""
    if session_id is not None:
        return store.session(session_id)
    live = [s for s in store.sessions() if s["status"] == SessionStatus.RUNNING and store.engine_running(s["id"])]
    if len(live) == 1:
        return live[0]
    if not live:
        raise BcdError(
            f"no tune is running on {store.path}; `bcd db sessions --db {store.path}` lists its sessions: name "
            "one with --session ID to change a stored session's skips and budgets"
        )
    ids = ", ".join(str(s["id"]) for s in live)
    raise BcdError(f"sessions {ids} are being tuned on {store.path} now: choose one with --session ID")


class SteeredSession:
    """One session of a store and its tasks, as `steer` acts on it."""

    def __init__(self, store: RecordStore, session_id: int | None = None) -> None:
        self.store = store
        self.session = pick_session(store, session_id)
        self.id = int(self.session["id"])
        self.live = store.engine_running(self.id)
        self.tasks = store.tasks(self.id)

    def task(self, text: str) -> dict[str, Any]:
        """A task by name, or by index (the engine's, as `bcd db tasks` lists them)."""
        for row in self.tasks:
            if row["name"] == text or (text.strip().isdigit() and row["idx"] == int(text)):
                return row
        raise BcdError(
            f"session {self.id} has no task {text!r}; `bcd db tasks --db {self.store.path} --session {self.id}` "
            "lists its tasks (index, name, cluster)"
        )

    def cluster(self, text: str) -> str:
        """A cluster by its key, or by one of its tasks."""
        if any(row["cluster_key"] == text for row in self.tasks):
            return text
        try:
            return str(self.task(text)["cluster_key"])
        except BcdError:
            raise BcdError(
                f"session {self.id} has no cluster or task {text!r}; `bcd db tasks --db {self.store.path} "
                f"--session {self.id}` lists its tasks and their clusters"
            ) from None

    def describe(self, row: dict[str, Any]) -> str:
        return f"task {row['idx']} ({row['name']})"

    def status(self) -> str:
        """As the dashboard lists it: a session marked running whose engine is gone is interrupted."""
        status = self.store.session(self.id)["status"]
        return SessionStatus.INTERRUPTED if status == SessionStatus.RUNNING and not self.live else status

    def steer(self, request: SteerRequest) -> list[str]:
        """Send or apply the request; what happened, a line each."""
        self._check(request)
        if request.action in FLOW_ACTIONS:
            return self._flow(request.action)
        return self._send(request) if self.live else self._edit(request)

    def _check(self, request: SteerRequest) -> None:
        if request.action not in FLOW_ACTIONS and self.session["strategy"] == STOCK:
            raise BcdError(
                f"session {self.id} tunes with stock MetaSchedule ({STOCK}), whose task scheduler cannot be "
                "steered: it takes pause, resume and stop only"
            )
        if not self.live and request.action not in STORED_ACTIONS:
            raise BcdError(
                f"session {self.id} is {self.status()}: no engine tunes it now, and {request.action} needs a running "
                f"tune (`bcd tune --resume {self.id}` resumes it); skip, unskip, budget, cluster-budget and "
                "total change a stored session"
            )
        if request.trials is not None and request.trials < (1 if request.action == Action.TOTAL else 0):
            raise BcdError(f"{request.action}: the number of trials must be at least 0 (1 for a total)")

    def _flow(self, action: Action) -> list[str]:
        control = RemoteControl(self.store.path, self.id)
        {Action.PAUSE: control.pause, Action.RESUME: control.resume, Action.STOP: control.stop}[action]()
        when = {
            Action.PAUSE: "it pauses after its batch in flight",
            Action.RESUME: "it goes on",
            Action.STOP: "it stops after its batch in flight, everything measured saved",
        }[action]
        return [f"session {self.id}: {action} sent to its engine; {when}"]

    def _send(self, request: SteerRequest) -> list[str]:
        """To the engine, through the store: every name is resolved before anything is sent."""
        rows = [self.task(text) for text in request.tasks]
        control = RemoteControl(self.store.path, self.id)
        trials = int(request.trials or 0)
        sent = []
        action = request.action
        if action in (Action.SKIP, Action.UNSKIP, Action.BUDGET):
            sent = [self._send_for_task(control, action, row, trials) for row in rows]
        elif action == Action.CLUSTER_BUDGET:
            key = self.cluster(request.clusters[0])
            control.set_cluster_budget(key, trials)
            sent.append(f"budget of every task of cluster {key}: {trials} trials")
        elif action == Action.TOTAL:
            control.set_total_budget(trials)
            sent.append(f"total budget {trials} trials")
        else:
            sent.append(self._send_cluster_change(control, request))
        return [f"session {self.id}: {line}; its engine applies it at its next round" for line in sent]

    def _send_for_task(self, control: RemoteControl, action: Action, row: dict[str, Any], trials: int) -> str:
        if action == Action.SKIP:
            control.skip_task(row["idx"])
            return f"skip {self.describe(row)}"
        if action == Action.UNSKIP:
            control.unskip_task(row["idx"])
            return f"un-skip {self.describe(row)}"
        control.set_task_budget(row["idx"], trials)
        return f"budget of {self.describe(row)}: {trials} trials"

    def _send_cluster_change(self, control: RemoteControl, request: SteerRequest) -> str:
        if request.action == Action.ORDER:
            order = list(dict.fromkeys(self.cluster(text) for text in request.clusters))
            control.set_cluster_priority(order)
            return f"clusters tuned in the order {', '.join(order)} (the others after)"
        row = self.task(request.tasks[0])
        if request.action == Action.REPRESENTATIVE:
            control.set_representative(str(row["cluster_key"]), row["idx"])
            return f"{self.describe(row)} represents its cluster {row['cluster_key']}"
        destination = request.clusters[0]
        key = None if destination == SINGLETON else self.cluster(destination)
        control.move_task(row["idx"], key)
        return f"{self.describe(row)} moved to " + (f"cluster {key}" if key else "a cluster of its own")

    def _edit(self, request: SteerRequest) -> list[str]:
        """A session no engine runs: its stored rows, which a resume tunes with."""
        action, trials = request.action, int(request.trials or 0)
        rows = [self.task(text) for text in request.tasks]  # all resolved before anything changes
        done = []
        if action == Action.UNSKIP:
            reopened = self.store.reopen_tasks(self.id, [row["id"] for row in rows])
            done.append(
                f"{reopened} of {len(rows)} task(s) un-skipped"
                + (" (the others were not skipped)" if reopened < len(rows) else "")
            )
        elif action == Action.SKIP:
            for row in rows:
                self.store.update_task(row["id"], status=TaskStatus.SKIPPED)
                done.append(f"{self.describe(row)} skipped")
        elif action == Action.BUDGET:
            self._set_budgets(rows, trials)
            done += [f"{self.describe(row)}: budget {trials} trials" for row in rows]
        elif action == Action.CLUSTER_BUDGET:
            key = self.cluster(request.clusters[0])
            self._set_budgets([r for r in self.tasks if r["cluster_key"] == key], trials)
            done.append(f"every task of cluster {key}: budget {trials} trials")
        else:
            self.store.set_total_budget(self.id, trials)
            done.append(f"total budget {trials} trials")
        status = self.status()
        lines = [f"session {self.id} ({status}): {line}" for line in done]
        if status == SessionStatus.COMPLETED:
            lines.append("it stays complete: un-skip a task or raise its total (`total N`) to tune it further")
        else:
            lines.append(f"`bcd tune --resume {self.id}` (or Resume in the dashboard) tunes it so")
        return lines

    def _set_budgets(self, rows: list[dict[str, Any]], trials: int) -> None:
        """As the engine does (tuning/steering.py): a task's budget is the trials it gets, so the
        session's total moves by the difference from what each task had, never below what it
        spent; a completed session given more becomes resumable."""
        per_task = int(json.loads(self.session["settings"] or "{}").get("trials_per_task") or 0)
        total = int(self.session.get("total_budget") or per_task * len(self.tasks))
        for row in rows:
            total += trials - int(row["budget"] if row["budget"] is not None else per_task)
            self.store.update_task(row["id"], budget=trials)
        spent = int(self.store.session(self.id)["trials_done"] or 0)
        self.store.set_total_budget(self.id, max(total, spent))
        self.session = self.store.session(self.id)


def steer(store: RecordStore, session_id: int | None, request: SteerRequest) -> list[str]:
    """`bcd steer`: the request for the named (or the running) session of `store`."""
    return SteeredSession(store, session_id).steer(request)
