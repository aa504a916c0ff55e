"""A second layout probe that cannot win stops early.

The probes run one after the other (layout_choice.probe_layouts), so when the second starts the
first's compiled model has been timed. The second's estimate grows as its tasks get programs:
the tasks measured so far, weight x best, are a floor under its whole probe's estimate (a task's
later probe trials can lower its best, but a probe gives each task one round), and a compiled
model times 1.0-1.5x its estimate (layout transforms, the VM's calls, cold caches; once 0.78x).
Once the floor passes HOPELESS times the first probe's timed model (its estimate where that is
higher: layout_choice.rival_bar), the second's model would time at least 0.78 x 1.5 = 1.17x the
first's (the first wins at 1.05x): its probe ends, its model is neither compiled nor timed. A
probe measures its heaviest tasks first (scheduler.first_round_order), so the floor rises fastest.

It ends as a completed session with fewer trials, not a stopped one: a stop is the user's (the
tune that follows shares the user's control) and the next tune resumes a stopped probe.
"""

from __future__ import annotations

import math

from bcd_core.formatting import format_latency
from bcd_core.records.states import EventKind
from bcd_core.tuning.run import TuningRun

HOPELESS = 1.5  # the floor must pass this many times the rival's timed model


def measured_floor(run: TuningRun) -> tuple[float, int]:
    """(Σ weight x best over the tasks with a program so far, how many tasks that is)."""
    bests = {index: best for index, best in run.best.items() if math.isfinite(best)}
    return sum(run.tasks[index].weight * best for index, best in bests.items()), len(bests)


class ProbeCutoff:
    """Ends the probe run it is attached to once its floor makes it hopeless against
    `rival_s`, the other layout's timed model or its estimate (`rival_what` says which);
    `floor_s` is then the floor it ended at."""

    def __init__(self, layout: str, rival: str, rival_s: float, rival_what: str = "timed") -> None:
        self.layout, self.rival, self.rival_s, self.rival_what = layout, rival, rival_s, rival_what
        self.floor_s: float | None = None
        self.run: TuningRun | None = None

    def attach(self, run: TuningRun) -> None:
        self.run = run
        run.batch_hooks.append(self.after_batch)

    def after_batch(self, task_index: int, trials: list, trial_ids: list) -> None:
        run = self.run
        if run is None or run.cut_reason or run.control.stop_requested:
            return
        floor, timed = measured_floor(run)
        if floor <= self.rival_s * HOPELESS:
            return
        self.floor_s = floor
        run.cut_reason = (
            f"the {self.layout} layout cannot win: {timed} of its {len(run.tasks)} tasks' programs alone take "
            f"{format_latency(floor)}, {floor / self.rival_s:.1f}x the {self.rival} model's {self.rival_what} "
            f"{format_latency(self.rival_s)}"
        )
        run.message(EventKind.INFO, f"layout probe ended early: {run.cut_reason}")
