"""The library a tune compiled and timed at its last milestone is the one export writes, as long
as the records it applies are the same; a changed record compiles afresh."""

import os
import time
from pathlib import Path

import pytest

from bcd_core import compiled_cache
from bcd_core.export import export_tuned_session
from bcd_core.records.retimings import TABLE as RETIMINGS
from bcd_core.records.store import RecordStore
from bcd_core.target import host_target
from bcd_core.tuning.run import TuningRun
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

pytestmark = pytest.mark.slow


def export(store: RecordStore, session_id: int, out: Path) -> tuple[Path, list[str]]:
    steps: list[str] = []
    result = export_tuned_session(store, session_id, out, check=False, progress=lambda _s, _t, text: steps.append(text))
    return result.path, steps


def make_another_program_lead(store: RecordStore, run: TuningRun) -> None:
    """Give a task's slowest program whose schedule differs from its leader's the best time: a
    program measured twice (the same trace) or a re-timed one (ranked by its re-timed latency)
    would leave the applied records as they were."""
    for task in run.tasks:
        rows = run.database.top_rows(run.workload_ids[task.index], 100)
        others = [row for row in rows if row["trace"] != rows[0]["trace"]]
        if others:
            trial_id = others[-1]["id"]
            store.db.execute("update trials set latency_s = ? where id = ?", [1e-9, trial_id])
            if RETIMINGS in store.db.table_names():
                store.db.execute(f"delete from {RETIMINGS} where trial_id = ?", [trial_id])
            store.db.conn.commit()
            return
    raise AssertionError("no task found two different programs")


def test_export_writes_the_library_the_tune_timed_until_a_record_changes(
    tmp_path: Path, tiny_convnet: Path, time_model, monkeypatch
) -> None:
    monkeypatch.setenv(compiled_cache.SWITCH, str(tmp_path / "kept"))
    db = tmp_path / "tuned.db"
    run = run_session(tiny_convnet, db, host_target(), TuneSettings(trials_per_task=4, trials_per_round=2))
    kept = list((tmp_path / "kept").glob("*.so"))
    milestones = RecordStore(db).model_latencies(run.session_id)
    # one per milestone whose records differ: a milestone that found no better program compiles
    # the same records, so it reuses the library before it
    assert 1 <= len(kept) <= len(milestones) and len(milestones) >= 2

    store = RecordStore(db)
    path, steps = export(store, run.session_id, tmp_path / "first.so")
    assert any("reused" in step for step in steps)
    newest = max(kept, key=lambda p: p.stat().st_mtime)
    assert path.read_bytes() == newest.read_bytes(), "the exported library is the one last timed"

    make_another_program_lead(store, run)  # what the compiler applies changed
    path, steps = export(store, run.session_id, tmp_path / "second.so")
    assert not any("reused" in step for step in steps) and any("compiled" in step for step in steps)
    assert len(list((tmp_path / "kept").glob("*.so"))) == len(kept) + 1
    assert path.read_bytes() != newest.read_bytes()


def test_only_the_newest_libraries_are_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(compiled_cache.SWITCH, str(tmp_path / "kept"))
    source = tmp_path / "lib.so"
    source.write_bytes(b"library")
    now = time.time()
    for i in range(compiled_cache.KEPT + 2):
        compiled_cache.keep_library(f"key{i}", source)
        os.utime(tmp_path / "kept" / f"key{i}.so", (now - 1000 + i, now - 1000 + i))  # kept in this order
    names = {p.stem for p in (tmp_path / "kept").glob("*")}
    assert names == {f"key{i}" for i in range(2, compiled_cache.KEPT + 2)}
    assert compiled_cache.kept_library("key0") is None and compiled_cache.kept_library("key2") is not None
