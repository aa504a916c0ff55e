"""Tasks a layout probe does not tune: workloads the store already holds measured programs of.

The two layouts' models share every task outside the convolutions' reach (a transformer's
matmuls, softmax and normalization; a CNN's classifier), and both probes' models are compiled
from the store's best program of each workload (layout_choice.time_probes_in_turns). Tuning a
shared task again in the second probe tells the layouts no more apart; on a model made mostly
of such tasks it is most of that probe's time, and it changes the first probe's records, so
that probe's model must be compiled again. So a new probe session gives such a task no trials (a
budget of 0) and counts the store's best program in its estimate, as the compiled model does.
A tune that continues the winning probe (`continue_as_tune` gives every task the tune's
budget) tunes those tasks from its first round on, and counts the store's best for a task until
the task has a measurement of its own, so its estimate stays whole.
"""

from __future__ import annotations

from typing import Any

from bcd_core.tuning.run import TuningRun


def stored_best(run: TuningRun, task_index: int) -> float | None:
    """The latency of the program the compiled model takes for the task: the store's best
    for its workload on this target and timing (any session's), None when there is none."""
    row = run.database.applied_row(run.tasks[task_index].mod)
    return None if row is None else row.get("latency_s")


def reuses(run: TuningRun) -> bool:
    """A layout probe, or a tune that continues one."""
    return run.settings.layout_probe or run.session.get("probe_trials") is not None


def reuse_measured_tasks(run: TuningRun) -> str | None:
    """In a new layout probe session: the tasks whose workload has a measured program in the
    store get no trials. In a probe or a tune continuing one: each task not measured in the
    session counts the store's best. Called before the run starts, so that its start counts
    only the trials it tunes; returns what to say once it started (None: nothing reused)."""
    if not reuses(run):
        return None
    bests = {task.index: stored_best(run, task.index) for task in run.tasks if task.index not in run.best}
    stored = {index: latency for index, latency in bests.items() if latency is not None}
    run.best.update(stored)
    return give_no_trials(run, set(stored)) if run.settings.layout_probe and not run.resumed else None


def give_no_trials(run: TuningRun, reused: set[int]) -> str | None:
    """Budget 0 for the `reused` tasks of a new probe session, and its total the rest's."""
    if not reused:
        return None
    rows: list[dict[str, Any]] = run.store.tasks(run.session_id)
    for row in rows:
        if row["idx"] in reused:
            run.store.update_task(row["id"], budget=0)
    run.trials_total = run.settings.trials_per_task * (len(rows) - len(reused))
    run.store.set_total_budget(run.session_id, run.trials_total)
    return (
        f"layout probe: {len(reused)} of {len(rows)} tasks have measured programs in this store "
        "(the other layout's probe, or an earlier tune): not tuned again, their best counted"
    )
