"""When a tune stops before its trials are spent: the rules a user picks (TuneSettings'
`minutes`, `target_ms`, `faster_than_onnxruntime_pct`, `plateau_pct` over `plateau_minutes`),
each checked after every recorded batch. A rule stops the tune as the user's Stop does
(`TuningControl.stop`, with the rule's words): the batch in flight is saved, the session can be
resumed, and it records why it ended.

The clock is the session's own (earlier runs included, pauses not, nor a first tune's losing
layout probe) plus the time spent timing the compiled model at milestones, which the session's
clock leaves out so that curves compare tuning time, though the user waits for it too. The same
command again resumes with what is left. Latency goals are met by the compiled model as timed,
never by the estimate (the estimate leaves out layout transforms and the VM's calls: tuning/milestones.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bcd_core.formatting import format_latency
from bcd_core.records.states import EventKind
from bcd_core.reference import stored_reference
from bcd_core.tuning.milestones import GOAL_CHECK, Milestones, timing_on
from bcd_core.tuning.run import TuningRun, estimated_latency
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.stand_ins import model_best

log = logging.getLogger("bcd.stopping")
GOAL_RECHECK = 0.03  # the estimate must fall this much more before the model is timed again


@dataclass(frozen=True)
class LatencyGoal:
    seconds: float
    name: str  # what the goal is, in words: "the target 2 ms"


def format_minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.3g} min"


def time_budget_s(settings: TuneSettings) -> float | None:
    return settings.minutes * 60 if settings.minutes > 0 else None


def plateau_reason(history: Sequence[tuple[float, float]], now_s: float, percent: float, window_s: float) -> str | None:
    """Why to stop for a plateau, or None: `history` holds (session seconds, estimate) oldest
    first; the estimate must have existed `window_s` ago and improved less than `percent`
    since."""
    if percent <= 0 or not history:
        return None
    before = [estimate for elapsed, estimate in history if elapsed <= now_s - window_s]
    if not before:
        return None
    then, latest = before[-1], history[-1][1]
    gained = (then - latest) / then
    if gained >= percent / 100:
        return None
    return (
        f"plateau: the estimate improved {gained * 100:.2g} % over the last {format_minutes(window_s)} "
        f"(less than {percent:g} %)"
    )


def goal_met(goal: LatencyGoal, timed: dict | None) -> str | None:
    """Why to stop for the goal, or None: the latest timing of the compiled model met it."""
    if timed is None or timed["measured_latency_s"] > goal.seconds:
        return None
    return f"{goal.name} reached: the compiled model ran in {format_latency(timed['measured_latency_s'])}"


# The batch in flight when a batch is recorded, and the one handed out before the next check.
BATCHES_KEPT_BACK = 2


def recent_batch_s(timeline: list[dict]) -> float:
    """The longer of the last two gaps between recorded batches. A resumed session starts with
    it, so that its first check keeps the time its previous run kept: that run stopped when the
    gap before its last batch no longer fitted, and its batch in flight was recorded after."""
    times = [float(row["elapsed_s"]) for row in timeline[-3:]]
    return max((later - earlier for earlier, later in zip(times, times[1:])), default=0.0)


class StoppingRules:
    """The user's stopping rules for one run: `before_start` says whether one already holds,
    `after_batch` (a batch hook after the milestones') stops the tune once one does."""

    def __init__(self, run: TuningRun, milestones: Milestones) -> None:
        self.run = run
        self.milestones = milestones
        self.budget_s = time_budget_s(run.settings)
        self.probe_s = float(run.store.session(run.session_id).get("probe_s") or 0.0)  # not on the budget
        self.goal: LatencyGoal | None = None
        self.checked_estimate: float | None = None  # the estimate when the model was last timed for the goal
        rows = run.store.timeline(run.session_id)
        self.batch_s = recent_batch_s(rows)  # what the batch in flight may take
        self.last_batch_at: float | None = None
        self.history = [(r["elapsed_s"], r["estimated_latency_s"]) for r in rows if r["estimated_latency_s"]]

    @property
    def off(self) -> bool:
        """A layout probe is a measurement of its own, run whole; the tune's budget leaves its time out."""
        return self.run.settings.layout_probe

    def before_start(self) -> str | None:
        """Say which rules hold for this run; the reason to stop if one holds already (the
        time spent, or a goal a timing of an earlier run met)."""
        if self.off:
            return None
        run = self.run
        run.store.set_time_budget(run.session_id, self.budget_s)
        if self.budget_s is not None:
            left = max(self.budget_s - self.used_s(), 0)
            probe = f" (the layout probe's {format_minutes(self.probe_s)} not counted)" if self.probe_s else ""
            run.message(
                EventKind.INFO, f"time budget: {format_minutes(self.budget_s)}, {format_minutes(left)} left{probe}"
            )
        self.goal = self.latency_goal()
        if self.goal is not None:
            run.message(EventKind.INFO, f"stopping once the compiled model, timed, runs in {self.goal.name} or less")
        return self.time_reason() or (goal_met(self.goal, self.milestones.latest) if self.goal else None)

    def after_batch(self, task_index: int, trials: list, trial_ids: list) -> None:
        run = self.run
        if self.off or run.control.stop_requested:
            return
        estimate, now = estimated_latency(run.tasks, model_best(run)), run.elapsed()
        if estimate is not None:
            self.history.append((now, estimate))
        if self.last_batch_at is not None:
            self.batch_s = now - self.last_batch_at
        self.last_batch_at = now
        settings = run.settings
        window_s = settings.plateau_minutes * 60
        reason = (
            self.time_reason()
            or plateau_reason(self.history, now, settings.plateau_pct, window_s)
            or self.goal_reason(estimate)
        )
        if reason:
            run.message(EventKind.INFO, f"stopping: {reason}")
            run.control.stop(reason)

    # -- the clock ------------------------------------------------------------------------
    def used_s(self) -> float:
        """The session's clock and its model timings, less the layout probe: measuring the
        layout happens once per model and machine, and a short budget would be spent on it."""
        return self.run.elapsed() + self.milestones.spent_s - self.probe_s

    def time_reason(self) -> str | None:
        """Stop early enough for the batches that cannot be stopped any more and the timing that
        ends the tune, each as long as the last one took: `--minutes 3` is three minutes of the
        user's from the tune's start (Python and TVM load before it). When a batch is recorded
        the next is already in flight, and going on hands out one more before the next check,
        so two batches' time is kept back."""
        if self.budget_s is None:
            return None
        latest = self.milestones.latest
        timing = float(latest["cost_s"] or 0) if latest is not None and timing_on() else 0.0
        used = self.used_s()
        kept = BATCHES_KEPT_BACK * self.batch_s
        if used + timing + kept < self.budget_s:
            return None
        log.info(
            "time budget: %.0f s used of %.0f s, %.0f s kept for the batches in flight and %.0f s to time the model",
            used,
            self.budget_s,
            kept,
            timing,
        )
        return f"time budget of {format_minutes(self.budget_s)} spent"

    # -- latency goals --------------------------------------------------------------------
    def latency_goal(self) -> LatencyGoal | None:
        """The easier of the target and onnxruntime's latency less the margin: either stops."""
        settings, goals = self.run.settings, []
        if settings.target_ms > 0:
            goals.append(LatencyGoal(settings.target_ms / 1e3, f"the target {settings.target_ms:g} ms"))
        margin = settings.faster_than_onnxruntime_pct
        if margin is not None:
            reference = self.onnxruntime_s()
            if reference is not None:
                less = f" less {margin:g} %" if margin else ""
                name = f"onnxruntime's {format_latency(reference)}{less}"
                goals.append(LatencyGoal(reference * (1 - margin / 100), name))
        return max(goals, key=lambda goal: goal.seconds) if goals else None

    def onnxruntime_s(self) -> float | None:
        run = self.run
        imported = run.prepared.imported
        shapes = {name: tuple(shape) for name, shape in run.settings.input_shapes.items()}
        reference = stored_reference(run.store, imported.path, imported.sha256, run.target, shapes)
        if reference is None:
            run.message(
                EventKind.WARNING,
                "--faster-than-onnxruntime is off: onnxruntime cannot time this model here (a GPU target, or "
                "a model onnxruntime refuses; the log says which)",
            )
        return reference

    def goal_reason(self, estimate: float | None) -> str | None:
        """Met by the latest timing, or by one taken now because the estimate says it may be.
        A timing costs seconds to a minute, so the model is timed when the estimate, scaled by
        how the last timing compared with its estimate, reaches the goal, and again only once
        the estimate has fallen a further GOAL_RECHECK."""
        if self.goal is None or estimate is None:
            return None
        met = goal_met(self.goal, self.milestones.latest)
        if met or not self.worth_timing(estimate):
            return met
        self.checked_estimate = estimate
        self.milestones.measure(GOAL_CHECK)
        return goal_met(self.goal, self.milestones.latest)

    def worth_timing(self, estimate: float) -> bool:
        assert self.goal is not None
        latest = self.milestones.latest
        # Like with like: `estimate` is the search's, so is the one the last timing is set against.
        then = (latest.get("search_estimate_s") or latest["estimated_latency_s"]) if latest is not None else None
        ratio = latest["measured_latency_s"] / then if latest is not None and then else 1.0
        fell = self.checked_estimate is None or estimate <= self.checked_estimate * (1 - GOAL_RECHECK)
        return fell and estimate * ratio <= self.goal.seconds
