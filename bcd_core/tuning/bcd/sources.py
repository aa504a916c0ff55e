"""Which measured programs of other tasks are worth diffusing into a task."""

from __future__ import annotations

from typing import Any

from tvm.s_tir.schedule import Trace

from bcd_core.tuning.run import TuningRun

# A new best less than 1 % faster than the old one is within the timing noise of repeated
# measurements here: it does not count as progress.
MIN_IMPROVEMENT = 0.01


def distinct_programs(run: TuningRun, rows: list[dict[str, Any]], limit: int) -> list[tuple[int, Trace]]:
    """(trial id, trace) of the first `limit` rows with distinct traces."""
    programs, seen = [], set()
    for row in rows:
        if row["trace"] in seen:
            continue
        seen.add(row["trace"])
        programs.append((row["id"], run.database.record_from_row(row).trace))
        if len(programs) >= limit:
            break
    return programs


def faster_per_flop(
    run: TuningRun, task_index: int, sources: list[int], limit: int, exclude: set[int] = frozenset()
) -> list[tuple[int, Trace]]:
    """Up to `limit` distinct programs of `sources`, best time per FLOP first (tasks of one
    cluster differ in size), only those faster per FLOP than the task's own best (the others
    would not beat what it has) and not among the trial ids in `exclude`."""
    own = run.best.get(task_index)
    bound = own / max(run.tasks[task_index].flops, 1.0) * (1 - MIN_IMPROVEMENT) if own else float("inf")
    scored = []
    for source in sources:
        flops = max(run.tasks[source].flops, 1.0)
        if source not in run.best or run.best[source] / flops >= bound:
            continue  # nothing of it can qualify: spare the store a query
        for row in run.database.top_rows(run.workload_ids[source], 8 * limit):
            per_flop = row["latency_s"] / flops if row["latency_s"] else float("inf")
            if per_flop < bound and row["id"] not in exclude:
                scored.append((per_flop, row["id"], row))
    scored.sort(key=lambda item: item[:2])
    return distinct_programs(run, [row for *_, row in scored], limit)
