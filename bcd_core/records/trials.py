"""The store's trials: one row per measured candidate, written a round at a time, and the
queries the tuner, MetaSchedule's database and the viewers read them with."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils

from bcd_core.records.retimings import RetimingsMixin
from bcd_core.records.rows import TrialRow, now_iso


class TrialsMixin(RetimingsMixin):
    """Trials written by rounds or imported, and per-session and per-workload queries."""

    # -- writes ---------------------------------------------------------------------------
    def record_round(
        self,
        session_id: int,
        trials: list[TrialRow],
        timeline: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
        bookkeeping_s: float | None = None,
    ) -> list[int]:
        """One measured batch, its timeline point and metrics, committed atomically."""
        created = now_iso()
        with self.transaction() as db:
            ids = [int(db["trials"].insert(_session_trial(session_id, t, created)).last_pk) for t in trials]
            if timeline is not None:
                _add_timeline_point(db, session_id, timeline, bookkeeping_s)
            if metrics is not None:
                db["cost_model_metrics"].insert({**metrics, "session_id": session_id})
        return ids

    def add_imported_trials(self, trials: list[TrialRow]) -> int:
        """Records from outside any session (e.g. a MetaSchedule JSON database)."""
        with self.transaction() as db:
            db["trials"].insert_all(
                {
                    "workload_id": t.workload_id,
                    "latency_s": t.latency_s,
                    "run_secs": json.dumps(t.run_secs) if t.run_secs else None,
                    "error": t.error,
                    "trace": json.dumps(t.trace),
                    "args_info": json.dumps(t.args_info),
                    "target_key": t.target_key,
                    "origin": t.origin,
                    "created_at": now_iso(),
                }
                for t in trials
            )
        return len(trials)

    # -- per-session queries --------------------------------------------------------------
    def trials(self, session_id: int | None = None, task_id: int | None = None) -> list[dict[str, Any]]:
        where, params = [], []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if task_id is not None:
            where.append("task_id = ?")
            params.append(task_id)
        with self._lock:
            return list(self.db["trials"].rows_where(" and ".join(where) or None, params, order_by="id"))

    def trial_counts(self, session_id: int) -> dict[int, int]:
        sql = "select task_id, count(*) from trials where session_id = ? group by task_id"
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def best_latencies(self, session_id: int) -> dict[int, float]:
        sql = (
            "select task_id, min(latency_s) from trials where session_id = ? and latency_s is not null group by task_id"
        )
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def round_counts(self, session_id: int) -> dict[int, int]:
        sql = "select task_id, count(distinct round) from trials where session_id = ? group by task_id"
        with self._lock:
            return {row[0]: row[1] for row in self.db.execute(sql, [session_id]).fetchall()}

    def best_history(self, session_id: int) -> dict[int, list[float]]:
        """Per task, its best latency after each of its rounds (for gradient scheduling)."""
        sql = (
            "select task_id, round, min(latency_s) from trials where session_id = ? "
            "group by task_id, round order by task_id, round"
        )
        history: dict[int, list[float]] = {}
        with self._lock:
            for task_id, _round, best in self.db.execute(sql, [session_id]).fetchall():
                series = history.setdefault(task_id, [])
                previous = series[-1] if series else float("inf")
                series.append(min(previous, best if best is not None else float("inf")))
        return history

    def last_round(self, session_id: int) -> int:
        sql = "select coalesce(max(round), 0) from trials where session_id = ?"
        with self._lock:
            return int(self.db.execute(sql, [session_id]).fetchone()[0])

    # -- per-workload queries (MetaSchedule's database) -----------------------------------
    def top_records(
        self,
        workload_id: int,
        target_key: str | None,
        k: int,
        exclude_origins: tuple[str, ...] = (),
        exclude_sessions: tuple[int, ...] = (),
    ) -> list[dict[str, Any]]:
        """The workload's k best valid records, a re-timed one ranked by its re-timed latency
        (records/retimings.py): every re-timed record, and the k best others by the search's
        measurements, merged. Re-timed records are few (a task's leaders at milestones), so this
        keeps the index walk that stops after k rows."""
        where, params = "t.latency_s is not null", []
        if target_key is not None:
            where += " and t.target_key = ?"
            params.append(target_key)
        if exclude_origins:
            where += f" and t.origin not in ({', '.join('?' * len(exclude_origins))})"
            params += list(exclude_origins)
        if exclude_sessions:  # records imported from JSON belong to no session and stay
            where += f" and coalesce(t.session_id, -1) not in ({', '.join('?' * len(exclude_sessions))})"
            params += list(exclude_sessions)
        retimed = {row["id"]: row for row in self.retimed_records(workload_id, where, params)}
        sql = f"select * from trials t where t.workload_id = ? and {where} order by t.latency_s, t.id limit ?"
        with self._lock:  # k rows besides the re-timed ones, which may lead the search's order
            searched = [dict(row) for row in self.db.query(sql, [workload_id, *params, k + len(retimed)])]
        merged = [*retimed.values(), *(row for row in searched if row["id"] not in retimed)]
        return sorted(merged, key=lambda row: (row["latency_s"], row["id"]))[:k]

    def all_records(self, target_key: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            if target_key is None:
                return list(self.db["trials"].rows_where(order_by="id"))
            return list(self.db["trials"].rows_where("target_key = ?", [target_key], order_by="id"))

    def count_records(self, target_key: str | None = None) -> int:
        with self._lock:
            if target_key is None:
                return self.db["trials"].count
            return int(self.db.execute("select count(*) from trials where target_key = ?", [target_key]).fetchone()[0])


def _session_trial(session_id: int, trial: TrialRow, created: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "task_id": trial.task_id,
        "workload_id": trial.workload_id,
        "round": trial.round,
        "elapsed_s": trial.elapsed_s,
        "latency_s": trial.latency_s,
        "run_secs": json.dumps(trial.run_secs) if trial.run_secs else None,
        "error": trial.error,
        "trace": json.dumps(trial.trace),
        "args_info": json.dumps(trial.args_info),
        "target_key": trial.target_key,
        "origin": trial.origin,
        "source_trial_id": trial.source_trial_id,
        "adaptation": trial.adaptation,
        "predicted_score": trial.predicted_score,
        "created_at": created,
    }


def _add_timeline_point(
    db: sqlite_utils.Database, session_id: int, timeline: dict[str, Any], bookkeeping_s: float | None
) -> None:
    """The round's timeline point, and the session's progress it implies."""
    db["timeline"].insert({**timeline, "session_id": session_id})
    db["sessions"].update(
        session_id,
        {
            "elapsed_s": timeline["elapsed_s"],
            "trials_done": timeline["trials_done"],
            "estimated_latency_s": timeline.get("estimated_latency_s"),
            **({"bookkeeping_s": bookkeeping_s} if bookkeeping_s is not None else {}),
        },
    )
