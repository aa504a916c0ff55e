import json
import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest
import tvm
import tvm_ffi
from tvm import te, topi
from tvm.s_tir import meta_schedule as ms

from bcd_core.errors import StoreError
from bcd_core.model_import import import_model
from bcd_core.programs import private_module
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.json_io import export_json, import_json
from bcd_core.records.store import SCHEMA_VERSION, RecordStore, TrialRow
from bcd_core.target import target_key
from bcd_core.tasks import design_space, extract_tasks


@pytest.fixture(scope="module")
def dense_task(tiny_mlp: Path, host):
    return next(t for t in extract_tasks(import_model(tiny_mlp).relax_mod, host) if "matmul" in t.name)


def make_record(task, host, workload, seconds: float | None, sketch: int = 0) -> ms.database.TuningRecord:
    sch = design_space(task.mod, host)[sketch]
    args = ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
    return ms.database.TuningRecord(sch.trace, workload, [seconds if seconds else 1e10], host, args)


def test_new_store_is_wal_and_versioned(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.db")
    assert store.db.journal_mode == "wal"
    assert store.meta()["schema_version"] == str(SCHEMA_VERSION)
    assert {"sessions", "tasks", "trials", "timeline", "cost_model_metrics", "workloads"} <= set(store.db.table_names())
    store.close()
    RecordStore(tmp_path / "r.db").close()  # reopens


def test_refuses_foreign_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("create table notes (text)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="another program"):
        RecordStore(path)
    assert sqlite3.connect(path).execute("select name from sqlite_master").fetchall() == [("notes",)]


def test_refuses_non_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StoreError, match="not a bcd records database"):
        RecordStore(path)


def test_refuses_other_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = RecordStore(path)
    store.db["meta"].update("schema_version", {"value": "99"})
    store.close()
    with pytest.raises(StoreError, match="schema v99"):
        RecordStore(path)


def test_sessions_are_found_by_identity(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.db")
    settings = {"trials_per_task": 4}
    sid = store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="metaschedule", settings=settings
    )
    assert store.find_session("h", "t", "metaschedule", settings)["id"] == sid
    assert store.find_session("h", "t", "metaschedule", {"trials_per_task": 5}) is None
    assert store.find_session("other", "t", "metaschedule", settings) is None


def test_database_round_trip_and_top_k(tmp_path: Path, dense_task, host) -> None:
    store = RecordStore(tmp_path / "r.db")
    database = SqliteDatabase(store, target_key(host))
    assert not database.has_workload(dense_task.mod)
    workload = database.commit_workload(dense_task.mod)
    assert database.has_workload(dense_task.mod)
    assert database.commit_workload(dense_task.mod).same_as(workload)  # same object for equal modules
    for seconds in (3e-5, 1e-5, None, 2e-5):
        database.commit_tuning_record(make_record(dense_task, host, workload, seconds))
    assert len(database) == 4
    top = database.get_top_k(workload, 2)
    assert [float(r.run_secs[0]) for r in top] == pytest.approx([1e-5, 2e-5])
    assert len(database.get_all_tuning_records()) == 4
    # A fresh database object over the reopened file sees the same records.
    store.close()
    reopened = SqliteDatabase(RecordStore(tmp_path / "r.db"), target_key(host))
    assert reopened.has_workload(dense_task.mod)
    found = reopened.query_tuning_record(dense_task.mod, host, "main")
    assert found is not None and float(found.run_secs[0]) == pytest.approx(1e-5)


def test_a_view_without_diffused_records_hides_them_from_the_search_only(tmp_path: Path, dense_task, host) -> None:
    store = RecordStore(tmp_path / "r.db")
    database = SqliteDatabase(store, target_key(host))
    workload = database.commit_workload(dense_task.mod)
    committed = [make_record(dense_task, host, workload, seconds) for seconds in (1e-5, 2e-5, 3e-5)]
    store.add_imported_trials([database.trial_from_record(committed[0], origin="diffused")])
    for record in committed[1:]:
        database.commit_tuning_record(record)
    own = database.without("diffused")
    assert [float(r.run_secs[0]) for r in database.get_top_k(workload, 5)] == pytest.approx([1e-5, 2e-5, 3e-5])
    assert [float(r.run_secs[0]) for r in own.get_top_k(workload, 5)] == pytest.approx([2e-5, 3e-5])
    assert len(own) == len(database) == 3  # still measured and counted


def test_records_of_other_targets_are_not_used(tmp_path: Path, dense_task, host) -> None:
    store = RecordStore(tmp_path / "r.db")
    mine = SqliteDatabase(store, target_key(host))
    mine.commit_tuning_record(make_record(dense_task, host, mine.commit_workload(dense_task.mod), 1e-5))
    other = SqliteDatabase(store, '{"kind": "llvm", "mcpu": "other"}')
    assert other.get_top_k(other.commit_workload(dense_task.mod), 5) == []
    assert len(SqliteDatabase(store)) == 1


def test_records_of_sessions_timed_otherwise_are_not_handed_out(tmp_path: Path, dense_task, host) -> None:
    """Warm timings read faster than flushed ones for the same program: a database for one
    timing never hands out the other's records (sessions stored before the option: warm)."""
    from bcd_core.records.timing import session_timing

    store = RecordStore(tmp_path / "r.db")
    key = target_key(host)
    database = SqliteDatabase(store, key)
    workload = database.commit_workload(dense_task.mod)
    for settings, seconds in (({}, 1e-5), ({"cpu_cache": "flushed"}, 2e-5), ({"cpu_cache": "warm"}, 3e-5)):
        sid = store.create_session(
            model_path="m", model_hash="h", target="{}", target_key=key, strategy="metaschedule", settings=settings
        )
        row = database.trial_from_record(make_record(dense_task, host, workload, seconds), origin="evolved")
        store.record_round(sid, [row], {"round": 1, "elapsed_s": 0.1, "trials_done": 1})
    store.add_imported_trials([database.trial_from_record(make_record(dense_task, host, workload, 4e-5), "imported")])

    def seconds(timing: str | None) -> list[float]:
        return [float(r.run_secs[0]) for r in SqliteDatabase(store, key, timing=timing).get_top_k(workload, 9)]

    assert seconds("flushed") == pytest.approx([2e-5, 4e-5])
    assert seconds("warm") == pytest.approx([1e-5, 3e-5, 4e-5])
    assert seconds(None) == pytest.approx([1e-5, 2e-5, 3e-5, 4e-5])
    assert [session_timing(s) for s in store.sessions()] == ["warm", "flushed", "warm"]
    gpu = {"settings": '{"cpu_cache": "flushed"}', "target_key": '{"kind": "cuda", "arch": "sm_90"}'}
    assert session_timing(gpu) == "warm", "GPU candidates are never flushed"


def test_round_is_atomic(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.db")
    sid = store.create_session(
        model_path="m", model_hash="h", target="{}", target_key="t", strategy="metaschedule", settings={}
    )
    workload_id = store.add_workload("1", ["1", "x"])
    good = TrialRow(1, workload_id, 1, 0.5, [1e-3], None, [], [], "t")
    with pytest.raises(StoreError):
        # A failing statement after a trial insert: the whole round must roll back.
        with store.transaction() as db:
            db["trials"].insert({"session_id": sid, "workload_id": workload_id, "latency_s": 1.0})
            db.execute("insert into no_such_table values (1)")
    assert store.trials(sid) == []
    store.record_round(sid, [good, good], {"round": 1, "elapsed_s": 0.5, "trials_done": 2})
    assert len(store.trials(sid)) == 2
    assert store.session(sid)["trials_done"] == 2


def test_json_database_export_and_import(tmp_path: Path, dense_task, host) -> None:
    source = RecordStore(tmp_path / "a.db")
    database = SqliteDatabase(source, target_key(host))
    workload = database.commit_workload(dense_task.mod)
    for seconds in (4e-5, 2e-5):
        database.commit_tuning_record(make_record(dense_task, host, workload, seconds))
    assert export_json(source, tmp_path / "json") == 2
    lines = (tmp_path / "json" / "database_tuning_record.json").read_text().splitlines()
    assert len(lines) == 2
    # Stock TVM reads what we wrote.
    stock = ms.database.JSONDatabase(
        path_workload=str(tmp_path / "json" / "database_workload.json"),
        path_tuning_record=str(tmp_path / "json" / "database_tuning_record.json"),
    )
    best = stock.query_tuning_record(dense_task.mod, host, "main")
    assert float(best.run_secs[0]) == pytest.approx(2e-5)
    # And we read it back into another store.
    target_store = RecordStore(tmp_path / "b.db")
    assert import_json(target_store, tmp_path / "json") == 2
    imported = SqliteDatabase(target_store, target_key(host))
    assert float(imported.query_tuning_record(dense_task.mod, host, "main").run_secs[0]) == pytest.approx(2e-5)
    assert {row["origin"] for row in target_store.all_records()} == {"imported"}
    with pytest.raises(StoreError, match="exists"):
        export_json(source, tmp_path / "json")
    with pytest.raises(StoreError, match="not found"):
        import_json(target_store, tmp_path / "nowhere")
    assert json.loads(lines[0])[0] == 0  # workload index, as stock TVM writes it


def _open_new_store_at(path: str, start: float) -> str:
    while time.time() < start:  # all processes open the file at the same moment
        pass
    try:
        RecordStore(path).close()
    except Exception as err:  # reported back to the test
        return repr(err)
    return "ok"


def test_processes_opening_one_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    """A dashboard and the engine it launches (or a viewer) may open a new store together:
    none may fail because another created the schema or switched it to WAL meanwhile."""
    context = multiprocessing.get_context("fork")  # the test module need not be importable
    with context.Pool(4) as pool:
        for attempt in range(5):
            path = str(tmp_path / f"new{attempt}.db")
            start = time.time() + 0.5
            assert pool.starmap(_open_new_store_at, [(path, start)] * 4) == ["ok"] * 4


def test_a_retimed_record_ranks_by_its_retimed_latency(tmp_path: Path, dense_task, host) -> None:
    """What the compiler applies and the search starts from follow the latest timing of a record."""
    store = RecordStore(tmp_path / "r.db")
    database = SqliteDatabase(store, target_key(host))
    workload = database.commit_workload(dense_task.mod)
    for seconds in (1e-5, 2e-5, 3e-5):
        database.commit_tuning_record(make_record(dense_task, host, workload, seconds))
    ids = [row["id"] for row in database.top_rows(database.workload_id(workload), 3)]
    store.record_retimings(1, {ids[0]: (2.5e-5, 0.01, 5)})
    ranked = database.top_rows(database.workload_id(workload), 3)
    assert [row["id"] for row in ranked] == [ids[1], ids[0], ids[2]]
    assert [row["latency_s"] for row in ranked] == pytest.approx([2e-5, 2.5e-5, 3e-5])
    applied = database.query_tuning_record(dense_task.mod, host, "main")
    assert float(applied.run_secs[0]) == pytest.approx(2e-5)
    store.record_retimings(1, {ids[0]: (1.5e-5, 0.01, 5)})  # timed again: the latest timing counts
    assert database.top_rows(database.workload_id(workload), 1)[0]["id"] == ids[0]
    assert store.retimed_latencies(ids) == {ids[0]: pytest.approx(1.5e-5)}


def test_a_store_from_before_retiming_gets_its_table_and_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    RecordStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("drop table retimings")
    conn.execute("alter table model_latency drop column search_estimate_s")
    conn.commit()
    conn.close()
    assert not RecordStore(path, read_only=True).has_retimings_table()
    store = RecordStore(path)
    assert store.has_retimings_table()
    assert "search_estimate_s" in store.db["model_latency"].columns_dict


def mean_over_rows() -> tvm.IRModule:
    """A global average pool's shape of kernel: a reduction, then a division."""
    data = te.placeholder((1, 4, 7, 7, 16), name="data")
    total = topi.sum(data, axis=[2, 3], keepdims=True)
    mean = te.compute(total.shape, lambda *i: total(*i) / 49.0, name="mean")
    return tvm.IRModule({"main": te.create_prim_func([data, mean])})


def writes_into_its_module(mod: tvm.IRModule) -> tvm.s_tir.Schedule:
    """What post-processing does to a sketch that splits no loop first (a serial twin of a
    reduction's simple sketch): annotate the root block, unannotate it, fuse loops. TVM's
    schedule then rewrites the loops of the module it was made from."""
    sch = tvm.s_tir.Schedule(mod)
    root = sch.get_sblock("root")
    sch.annotate(root, "meta_schedule.vectorize", 64)
    sch.enter_postproc()
    sch.unannotate(root, "meta_schedule.vectorize")
    sch.fuse(*sch.get_loops(sch.get_sblock("mean"))[2:])
    return sch


def test_parsing_a_stored_program_leaves_its_workload_as_stored(tmp_path: Path, host) -> None:
    mod = mean_over_rows()
    probe = mean_over_rows()
    writes_into_its_module(probe)
    assert not tvm_ffi.structural_equal(probe, mean_over_rows()), "TVM no longer writes into the module"

    database = SqliteDatabase(RecordStore(tmp_path / "r.db"), target_key(host))
    workload = database.commit_workload(mod)
    sch = writes_into_its_module(private_module(mod))
    args = ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
    database.commit_tuning_record(ms.database.TuningRecord(sch.trace, workload, [1e-6], host, args))

    fresh = SqliteDatabase(RecordStore(tmp_path / "r.db"), target_key(host))  # parses the stored trace
    (row,) = fresh.top_rows(fresh.find_workload_id(mod), 1)
    for _ in range(2):  # a second parse would replay the trace on changed loops and fail
        record = fresh.record_from_row(row)
        fresh.candidate_from_row(row)
    assert fresh.find_workload_id(mean_over_rows()) is not None, "the workload still matches its task"
    assert fresh.query_tuning_record(mean_over_rows(), host, "main") is not None
    replayed = tvm.s_tir.Schedule(mean_over_rows())
    record.trace.apply_to_schedule(replayed, remove_postproc=False)
