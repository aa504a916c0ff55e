"""Move records between the SQLite store and MetaSchedule's JSON database
(`database_workload.json` + `database_tuning_record.json`), using TVM's own reader and
writer so the files are exactly what stock TVM produces and accepts."""

from __future__ import annotations

from pathlib import Path

from tvm.s_tir import meta_schedule as ms

from bcd_core.errors import StoreError
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"


def _json_paths(directory: Path) -> tuple[Path, Path]:
    return directory / WORKLOAD_FILE, directory / RECORD_FILE


def export_json(store: RecordStore, directory: str | Path, target_key: str | None = None) -> int:
    """Write every record (of one target, if given) to a MetaSchedule JSON database."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    workload_path, record_path = _json_paths(directory)
    for path in (workload_path, record_path):
        if path.exists():
            raise StoreError(f"{path} exists; export into an empty directory")
    source = SqliteDatabase(store, target_key)
    destination = ms.database.JSONDatabase(
        path_workload=str(workload_path), path_tuning_record=str(record_path), allow_missing=True
    )
    count = 0
    for record in source.get_all_tuning_records():
        workload = destination.commit_workload(record.workload.mod)
        destination.commit_tuning_record(
            ms.database.TuningRecord(record.trace, workload, record.run_secs, record.target, record.args_info)
        )
        count += 1
    return count


def import_json(store: RecordStore, directory: str | Path) -> int:
    """Add every record of a MetaSchedule JSON database to the store (origin 'imported')."""
    workload_path, record_path = _json_paths(Path(directory))
    for path in (workload_path, record_path):
        if not path.is_file():
            raise StoreError(f"{path} not found: expected a MetaSchedule JSON database directory")
    try:
        source = ms.database.JSONDatabase(
            path_workload=str(workload_path), path_tuning_record=str(record_path), allow_missing=False
        )
        records = source.get_all_tuning_records()
    except Exception as err:
        raise StoreError(f"cannot read the MetaSchedule JSON database in {directory}: {err}") from err
    destination = SqliteDatabase(store)
    trials = [destination.trial_from_record(record, origin="imported") for record in records]
    return store.add_imported_trials(trials)
