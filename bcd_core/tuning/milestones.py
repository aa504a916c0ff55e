"""The whole compiled model timed while a session tunes: the latency a user gets, beside the
estimate (the sum of the tasks' best programs times their weights).

The two differ: the search's estimate sums the smallest of many single measurements (an
optimistic number, tuning/retime.py), and any estimate leaves out the layout transforms, the
VM's calls between kernels and the caches a kernel finds warm or cold after its neighbours. So
at milestones (once the first full estimate exists, and when the tune ends) each task's leading
program is timed again, which gives the estimate shown from then on, and the model is compiled
with those records, written and loaded exactly as `bcd export` does, and timed as `bcd check`
times it. The tuner waits meanwhile (a candidate timed beside the model would be timed wrong),
and that time is kept out of the session's clock, so curves compare tuning time; each row
records its cost.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bcd_core.export import compile_library, library_runner, target_device
from bcd_core.formatting import format_latency
from bcd_core.model_import import random_inputs
from bcd_core.records.states import EventKind, TaskStatus
from bcd_core.timing import time_runs
from bcd_core.tuning.events import ModelMeasured
from bcd_core.tuning.retime import retime_leaders
from bcd_core.tuning.run import TuningRun, estimated_latency
from bcd_core.tuning.stand_ins import model_best

log = logging.getLogger("bcd.milestones")
FIRST_ESTIMATE = "first estimate"
FINAL = "final"
GOAL_CHECK = "goal check"  # asked by a latency goal (tuning/stopping.py)
RUNS = 20  # timed runs per pass (3 passes): a fifth of a check's, the tuner waits meanwhile
# "0" turns the timings off: a tune of a tiny model spends more time compiling it than tuning
# it (the test suite sets it, except in the tests of the timings and of what shows them).
SWITCH = "BCD_TIME_MODEL"


def timing_on() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def compile_run(run: TuningRun, out: Path) -> Path:
    """The model compiled from the run's best records (skipped tasks untuned), written to `out`;
    compiling the same records again copies the kept library (compiled_cache.py)."""
    skipped = [row["name"] for row in run.store.tasks(run.session_id) if row["status"] == TaskStatus.SKIPPED]
    path, _ = compile_library(run.database, run.prepared.imported, run.target, out, untuned_ok=skipped)
    return path


def time_compiled_model(run: TuningRun) -> tuple[float, float]:
    """(median seconds, relative spread) of the model compiled from the run's best records."""
    with tempfile.TemporaryDirectory(prefix="bcd-milestone-") as folder:
        path = compile_run(run, Path(folder) / "model.so")
        runner = library_runner(path, random_inputs(run.prepared.imported.inputs), target_device(run.target))
        timing = time_runs(runner.run, runs=RUNS)
    return timing.median_ms / 1e3, timing.spread


class Milestones:
    """Times the compiled model once the session has its first full estimate and at its end;
    `emit` tells listeners (the CLI's progress line)."""

    def __init__(self, run: TuningRun, emit: Callable[[ModelMeasured], None]) -> None:
        self.run = run
        self.emit = emit
        timed = run.store.model_latencies(run.session_id)  # by earlier runs of a resumed session
        self.done = {row["milestone"] for row in timed}
        self.last_trials = max((row["trials_done"] for row in timed), default=-1)
        self.latest: dict | None = timed[-1] if timed else None  # the last timing's row
        self.spent_s = sum(float(row["cost_s"] or 0) for row in timed)  # off the session's clock

    def after_batch(self, task_index: int, trials: list, trial_ids: list) -> None:
        if self.run.settings.layout_probe or not timing_on():  # a layout probe needs only its final model
            return
        if FIRST_ESTIMATE not in self.done and estimated_latency(self.run.tasks, model_best(self.run)) is not None:
            self.measure(FIRST_ESTIMATE)

    def at_end(self) -> None:
        if self.run.cut_reason:  # a probe that cannot win: its model is not worth compiling
            return
        new_trials = self.run.trials_done != self.last_trials
        if timing_on() and new_trials and estimated_latency(self.run.tasks, model_best(self.run)) is not None:
            self.measure(FINAL)
        elif not new_trials and self.latest is not None:  # the last milestone timed these trials
            self.run.final_estimate = self.latest["estimated_latency_s"]

    def measure(self, milestone: str) -> None:
        run, started = self.run, time.perf_counter()
        search_estimate = estimated_latency(run.tasks, model_best(run))
        self.done.add(milestone)
        try:
            estimate = self.retimed_estimate(search_estimate) or search_estimate
            seconds, spread = time_compiled_model(run)
        except Exception as err:  # a milestone must never end the tune it describes
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            run.message(EventKind.WARNING, f"could not time the compiled model ({milestone}): {first}")
            return
        finally:
            run.paused_s += time.perf_counter() - started  # off the tuning clock
            self.spent_s += time.perf_counter() - started
        cost = time.perf_counter() - started
        self.last_trials = run.trials_done
        if milestone == FINAL:
            run.final_estimate = estimate
        row = {
            "milestone": milestone,
            "trials_done": run.trials_done,
            "elapsed_s": run.elapsed(),
            "estimated_latency_s": estimate,
            "search_estimate_s": search_estimate,
            "measured_latency_s": seconds,
            "spread": spread,
            "cost_s": cost,
        }
        run.store.record_model_latency(run.session_id, row)
        self.latest = row
        run.message(
            EventKind.INFO,
            f"compiled model timed ({milestone}, {run.trials_done} trials): {format_latency(seconds)}, "
            f"{seconds / estimate:.2f}x the estimate {format_latency(estimate)} (took {cost:.0f} s)",
        )
        self.emit(ModelMeasured(run.session_id, milestone, run.trials_done, row["elapsed_s"], estimate, seconds, cost))

    def retimed_estimate(self, search: float | None) -> float | None:
        """The estimate from each task's leading program timed again (tuning/retime.py); a
        layout probe, which compares measured models only, skips it."""
        run = self.run
        if run.settings.layout_probe:
            return None
        try:
            retimed = retime_leaders(run)
        except Exception as err:  # the model is still timed, beside the search's estimate
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            run.message(EventKind.WARNING, f"could not time the best programs again: {first}")
            return None
        estimate = estimated_latency(run.tasks, {**model_best(run), **retimed.leaders})  # skipped: untuned
        if estimate is not None and search is not None:
            failed = f", {retimed.failed} did not run again" if retimed.failed else ""
            what = (
                f"best programs timed again ({retimed.programs} programs{failed}, {retimed.seconds:.0f} s)"
                if retimed.programs
                else "best programs all timed again at an earlier milestone"
            )
            run.message(
                EventKind.INFO,
                f"{what}: estimate {format_latency(estimate)}, {estimate / search:.2f}x the search's "
                f"{format_latency(search)}",
            )
        return estimate
