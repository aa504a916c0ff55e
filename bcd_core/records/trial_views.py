"""The viewers' queries on a session's trials: counts, bests, curves and provenance.

Each is one aggregate query served by the store's covering index (`VIEW_INDEXES`), so a
dashboard or a report reads a 100 000-trial session without loading its rows; origins are
named by `TrialOrigin`, never spelled out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bcd_core.records.retimings import RetimingsMixin
from bcd_core.records.states import CARRIED_ORIGINS, REMEMBERED_ORIGINS


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


class TrialViewsMixin(RetimingsMixin):
    """Read-only summaries of one session's trials for session_view.py."""

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        with self._lock:
            return self.db.execute(sql, list(params)).fetchall()

    def trial_and_failure_counts(self, session_id: int) -> dict[int, tuple[int, int]]:
        """Task row id -> (trials, trials without a valid time)."""
        sql = "select task_id, count(*), sum(latency_s is null) from trials where session_id = ? group by task_id"
        return {task_id: (int(total), int(failed or 0)) for task_id, total, failed in self._rows(sql, [session_id])}

    def best_trials(self, session_id: int) -> dict[int, tuple[float, str | None]]:
        """Task row id -> (best latency, origin of the trial that reached it; ties: the earliest).
        A re-timed trial counts at its re-timed latency (records/retimings.py), so a task's best
        is the latency of the program the compiler applies, as the session's estimate sums it.
        min() per task, then one lookup for its origin: ranking every trial with a window
        function would sort all of them."""
        if self.has_retimings_table():
            latency = "coalesce(r.latency_s, t.latency_s)"
            trials = "trials t left join retimings r on r.trial_id = t.id"
        else:  # a store from before re-timing, opened read-only
            latency, trials = "t.latency_s", "trials t"
        sql = (
            f"select b.task_id, b.latency_s, (select t.origin from {trials} where t.session_id = ?"
            f" and t.task_id = b.task_id and {latency} = b.latency_s order by t.id limit 1)"
            f" from (select t.task_id, min({latency}) as latency_s from {trials}"
            " where t.session_id = ? and t.latency_s is not null group by t.task_id) b"
        )
        return {task_id: (latency, origin) for task_id, latency, origin in self._rows(sql, [session_id, session_id])}

    def tasks_with_valid_trials_of(self, session_id: int, origins: Sequence[str]) -> int:
        """How many of the session's tasks measured a program of one of `origins` with a valid time."""
        sql = (
            f"select count(distinct task_id) from trials where session_id = ? and origin in ({_marks(origins)})"
            " and latency_s is not null"
        )
        return int(self._rows(sql, [session_id, *origins])[0][0])

    def task_latencies(self, session_id: int, task_row_id: int) -> list[float | None]:
        """Every trial's latency for the task, in measurement order (None: no valid time)."""
        sql = "select latency_s from trials where session_id = ? and task_id = ? order by id"
        return [latency for (latency,) in self._rows(sql, [session_id, task_row_id])]

    def latest_scored_round(self, session_id: int) -> list[tuple[float, float]]:
        """(predicted score, latency) of the valid trials of the latest round the cost model scored."""
        sql = (
            "select predicted_score, latency_s from trials where session_id = ? and round = ("
            " select max(round) from trials where session_id = ? and predicted_score is not null)"
            " and predicted_score is not null and latency_s is not null"
        )
        return [(float(score), float(latency)) for score, latency in self._rows(sql, [session_id, session_id])]

    def carried_trial_counts(self, session_id: int, task_row_id: int) -> dict[str, int]:
        """Origin -> trials of the task that carried another task's or an earlier tune's program."""
        sql = (
            "select origin, count(*) from trials where session_id = ? and task_id = ?"
            f" and origin in ({_marks(CARRIED_ORIGINS)}) group by origin"
        )
        return {origin: int(count) for origin, count in self._rows(sql, [session_id, task_row_id, *CARRIED_ORIGINS])}

    def fastest_trial_of(self, session_id: int, task_row_id: int, origins: Sequence[str]) -> dict[str, Any] | None:
        """The task's fastest valid trial of one of `origins` (ties: the earliest): its origin,
        source trial and adaptation."""
        sql = (
            "select origin, source_trial_id, adaptation from trials where session_id = ? and task_id = ?"
            f" and origin in ({_marks(origins)}) and latency_s is not null order by latency_s, id limit 1"
        )
        rows = self._rows(sql, [session_id, task_row_id, *origins])
        if not rows:
            return None
        origin, source, adaptation = rows[0]
        return {"origin": origin, "source_trial_id": source, "adaptation": adaptation}

    def fastest_carried_trial(self, session_id: int, task_row_id: int) -> dict[str, Any] | None:
        return self.fastest_trial_of(session_id, task_row_id, CARRIED_ORIGINS)

    def fastest_remembered_trial(self, session_id: int, task_row_id: int) -> dict[str, Any] | None:
        return self.fastest_trial_of(session_id, task_row_id, REMEMBERED_ORIGINS)

    def trial_source(self, trial_id: int) -> tuple[str, float | None] | None:
        """(task name, latency) of a trial of this store, as a diffused program's source."""
        sql = "select t.name, s.latency_s from trials s join tasks t on t.id = s.task_id where s.id = ?"
        rows = self._rows(sql, [trial_id])
        return (rows[0][0], rows[0][1]) if rows else None
