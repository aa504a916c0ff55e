"""MetaSchedule's Database interface over the SQLite records store.

`tune_tasks` and `compile_relax` read and write tuning records through this class, so the
records the user sees in the store are exactly the ones the compiler uses.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import tvm
import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.database import TuningRecord, Workload
from tvm.s_tir.schedule import Schedule, Trace

from bcd_core.programs import private_module
from bcd_core.records.failed_run import FAILED_RUN_SECS, is_failed_run
from bcd_core.records.store import RecordStore, TrialRow
from bcd_core.target import target_key as make_target_key

# Parsed records kept for `get_top_k`: a few tasks' best records between rounds, at a few KB each.
PARSED_RECORDS_KEPT = 4096


def workload_shash(mod: tvm.IRModule) -> str:
    """The structural hash a workload is stored and looked up by (the `shash` column)."""
    return str(tvm_ffi.structural_hash(mod))


def run_secs_of(record: TuningRecord) -> list[float] | None:
    """Seconds per run, or None for a failed candidate."""
    if record.run_secs is None:
        return None
    secs = [float(s) for s in record.run_secs]
    return None if is_failed_run(secs) else secs


@derived_object
class SqliteDatabase(ms.database.PyDatabase):
    """Workloads match by structural hash plus structural equality; records are filtered
    to one target when `target_key` is given (a store may hold several targets)."""

    def __init__(
        self,
        store: RecordStore,
        target_key: str | None = None,
        exclude_origins: tuple[str, ...] = (),
        timing: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.target_key = target_key
        # Records of these origins are kept and counted but never handed out as a search's
        # best records (`without`).
        self.exclude_origins = exclude_origins
        # With `timing` (records/timing.py), records of sessions timed otherwise are never
        # handed out either: their latencies do not compare.
        self.timing = timing
        self.exclude_sessions = store.sessions_timed_otherwise(timing) if timing else ()
        self._lock = threading.RLock()
        self._workloads: dict[int, Workload] = {}  # id -> Workload
        self._ids_by_hash: dict[str, list[int]] = {}
        self._records: dict[int, TuningRecord] = {}  # trial id -> parsed record (trials never change)

    # -- workload identity ----------------------------------------------------------------
    def _load_hash(self, shash: str) -> list[int]:
        if shash not in self._ids_by_hash:
            ids = []
            for row in self.store.workloads_with_hash(shash):
                self._workloads[row["id"]] = Workload.from_json(json.loads(row["workload"]))
                ids.append(row["id"])
            self._ids_by_hash[shash] = ids
        return self._ids_by_hash[shash]

    def find_workload_id(self, mod: tvm.IRModule) -> int | None:
        with self._lock:
            for workload_id in self._load_hash(workload_shash(mod)):
                if tvm_ffi.structural_equal(self._workloads[workload_id].mod, mod):
                    return workload_id
        return None

    def workload_id(self, workload: Workload) -> int:
        """Id of a workload handed out by this database (or an equal one)."""
        found = self.find_workload_id(workload.mod)
        if found is None:
            return self.commit_workload_id(workload.mod)
        return found

    def commit_workload_id(self, mod: tvm.IRModule) -> int:
        with self._lock:
            found = self.find_workload_id(mod)
            if found is not None:
                return found
            workload = Workload(mod)
            shash = workload_shash(mod)
            workload_id = self.store.add_workload(shash, workload.as_json())
            self._workloads[workload_id] = workload
            self._ids_by_hash.setdefault(shash, []).append(workload_id)
            return workload_id

    # -- PyDatabase interface -------------------------------------------------------------
    def has_workload(self, mod: tvm.IRModule) -> bool:
        return self.find_workload_id(mod) is not None

    def commit_workload(self, mod: tvm.IRModule) -> Workload:
        workload_id = self.commit_workload_id(mod)
        return self._workloads[workload_id]

    def commit_tuning_record(self, record: TuningRecord) -> None:
        self.store.add_imported_trials([self.trial_from_record(record, origin="committed")])

    def trial_from_record(self, record: TuningRecord, origin: str) -> TrialRow:
        trace_json, _run_secs, target_json, args_json = record.as_json()
        secs = run_secs_of(record)
        key = make_target_key(record.target) if record.target is not None else (self.target_key or "")
        del target_json  # the key is the canonical form of the same target
        return TrialRow(
            task_id=None,
            workload_id=self.workload_id(record.workload),
            round=0,
            elapsed_s=0.0,
            run_secs=secs,
            error=None if secs else "failed (no valid run time)",
            trace=trace_json,
            args_info=args_json,
            target_key=key,
            origin=origin,
        )

    def workload_of(self, workload_id: int) -> Workload:
        workload = self._workloads.get(workload_id)
        if workload is None:
            self._load_hash(self.store.workload(workload_id)["shash"])
            workload = self._workloads[workload_id]
        return workload

    def candidate_from_row(self, row: dict[str, Any]) -> ms.MeasureCandidate:
        """A stored program as a candidate (to learn from), its trace replayed once: parsing a
        TuningRecord replays it, and its `as_measure_candidate` replays it again."""
        module = private_module(self.workload_of(row["workload_id"]).mod)  # see record_from_row
        sch = Schedule(module, debug_mask=0, error_render_level="detail")
        Trace.apply_json_to_schedule(json.loads(row["trace"]), sch)
        return ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))

    def record_from_row(self, row: dict[str, Any]) -> TuningRecord:
        """The stored trial as a record of its (shared) workload. Parsing replays the trace, on
        a private copy of the module: a replay can write into the module (programs.py,
        `private_module`), and this workload is what every later lookup compares with."""
        workload = self.workload_of(row["workload_id"])
        run_secs = json.loads(row["run_secs"]) if row["run_secs"] else [FAILED_RUN_SECS]
        target = json.loads(row["target_key"]) if row["target_key"] else None
        as_json = [json.loads(row["trace"]), run_secs, target, json.loads(row["args_info"])]
        parsed = TuningRecord.from_json(as_json, Workload(private_module(workload.mod)))
        return TuningRecord(parsed.trace, workload, parsed.run_secs, parsed.target, parsed.args_info)

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        workload_id = self.find_workload_id(workload.mod)
        if workload_id is None or top_k <= 0:
            return []
        rows = self.store.top_records(workload_id, self.target_key, top_k, self.exclude_origins, self.exclude_sessions)
        return [self._parsed_once(row) for row in rows]

    def applied_row(self, mod: tvm.IRModule) -> dict[str, Any] | None:
        """The stored row of the record the compiler applies to workload `mod` (get_top_k's first)."""
        workload_id = self.find_workload_id(mod)
        if workload_id is None:
            return None
        rows = self.store.top_records(workload_id, self.target_key, 1, self.exclude_origins, self.exclude_sessions)
        return rows[0] if rows else None

    def _parsed_once(self, row: dict[str, Any]) -> TuningRecord:
        """A search asks for its task's best records every round, mostly the same ones, and
        parsing one replays its trace (about 5 ms): each stored trial is parsed once."""
        with self._lock:
            record = self._records.get(row["id"])
        if record is None:
            record = self.record_from_row(row)
            with self._lock:
                if len(self._records) >= PARSED_RECORDS_KEPT:
                    self._records.clear()
                self._records[row["id"]] = record
        return record

    def top_rows(self, workload_id: int, k: int) -> list[dict[str, Any]]:
        """The best stored rows of a workload on this target and timing, of every origin."""
        return self.store.top_records(workload_id, self.target_key, k, exclude_sessions=self.exclude_sessions)

    def without(self, *origins: str) -> SqliteDatabase:
        """The same records, except that `get_top_k` (what an EvolutionarySearch seeds its
        population from) leaves out records of `origins`."""
        return SqliteDatabase(self.store, self.target_key, (*self.exclude_origins, *origins), self.timing)

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return [self.record_from_row(row) for row in self.store.all_records(self.target_key)]

    def __len__(self) -> int:
        return self.store.count_records(self.target_key)
