"""Each task's leading program timed again before the estimate sums it.

The search measures a candidate once (one repeat of at least 20 ms of calls), and a task's best
is the smallest of tens or hundreds of such measurements: the winner is partly the candidate
that happened to be timed at a quiet moment, so the sum over a model's tasks promises less
than the compiled model delivers. At milestones the program the compiler would apply for each
task is built again and timed with several repeats; its median is stored beside the search's
measurement (records/retimings.py) and ranks the record from then on. Where a leader re-times
slower than a program not yet re-timed, that one is timed next, for a few rounds, so the
program finally applied has, as a rule, a latency that was timed twice.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

from tvm.s_tir import meta_schedule as ms

from bcd_core.export import target_device
from bcd_core.records.failed_run import runner_seconds
from bcd_core.timing import Timing
from bcd_core.tuning.measure.setup import make_builder, make_runner

REPEATS = 5  # repeats of the runner's timing (each at least its min_repeat_ms of calls)
ROUNDS = 3  # leaders timed again per task at most, when each one re-times behind the next


@dataclass(frozen=True)
class Retimed:
    """What one re-timing pass found: per task index, the leading record's latency after it."""

    leaders: dict[int, float]
    programs: int  # programs timed again
    failed: int  # of those, how many did not build or run again
    seconds: float


def retime_leaders(run: Any) -> Retimed:
    """Time each task's leading record again (the one `compile_tuned` would apply), until every
    task's leader has a re-timing or ROUNDS are done; store the timings. A leader re-timed at an
    earlier milestone is not timed again: a second median of the same program corrects no
    selection, and a later milestone then costs only the tasks whose leader changed."""
    started = time.perf_counter()
    leaders = _leading_rows(run)
    timed: set[int] = set(run.store.retimed_latencies([row["id"] for row in leaders.values()]))
    programs = failed = 0
    builder = make_builder(run.settings, run.target)  # its workers start at the first build
    runner = None  # a local runner starts a worker as it is made: only when a program is pending
    with closing(builder):
        for _ in range(ROUNDS):
            pending = [row for row in leaders.values() if row["id"] not in timed]
            if not pending:
                break
            runner = runner or make_runner(replace(run.settings, runner_repeat=REPEATS), run.target)
            timings = _time_again(run, builder, runner, pending)
            run.store.record_retimings(run.session_id, timings)
            timed.update(row["id"] for row in pending)
            programs += len(pending)
            failed += len(pending) - len(timings)
            leaders = _leading_rows(run)  # a leader that re-timed slower gives way
    latencies = {index: row["latency_s"] for index, row in leaders.items()}
    return Retimed(latencies, programs, failed, time.perf_counter() - started)


def _leading_rows(run: Any) -> dict[int, dict[str, Any]]:
    """Task index -> the record the compiler would apply for it now."""
    leaders = {}
    for task in run.tasks:
        rows = run.database.top_rows(run.workload_ids[task.index], 1)
        if rows:
            leaders[task.index] = rows[0]
    return leaders


def _time_again(run: Any, builder: Any, runner: Any, rows: list[dict[str, Any]]) -> dict[int, tuple[float, float, int]]:
    """Trial id -> (median seconds, relative spread, repeats) of the rows that built and ran."""
    candidates = [run.database.candidate_from_row(row) for row in rows]
    built = builder.build([ms.builder.BuilderInput(c.sch.mod, run.target) for c in candidates])
    ready = [(row, c, b) for row, c, b in zip(rows, candidates, built) if b.error_msg is None]
    inputs = [ms.runner.RunnerInput(b.artifact_path, target_device(run.target), c.args_info) for _, c, b in ready]
    timings: dict[int, tuple[float, float, int]] = {}
    try:
        results = [future.result() for future in runner.run(inputs)] if inputs else []
    finally:
        for _, _, b in ready:
            ms.utils.remove_build_dir(b.artifact_path)
    for (row, _, _), result in zip(ready, results):
        seconds = runner_seconds(result)
        if seconds:
            timing = Timing.of([s * 1e3 for s in seconds])
            timings[row["id"]] = (timing.median_ms / 1e3, timing.spread, len(seconds))
    return timings
