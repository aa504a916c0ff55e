"""Real MetaSchedule tuning on tiny models, through the SQLite store, then export."""

import json
import subprocess
import sys
from pathlib import Path

import models
import numpy as np
import pytest
from models import SAMPLE_MODEL

from bcd_core.errors import MissingRecordError
from bcd_core.export import check_library, compile_tuned, export_library, run_onnxruntime
from bcd_core.model_import import import_model, random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import target_key
from bcd_core.tuning.events import RoundFinished, SessionFinished, SessionStarted
from bcd_core.tuning.run import estimated_latency
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, tiny_mlp: Path, host):
    db = tmp_path_factory.mktemp("tune") / "records.db"
    events = []
    settings = TuneSettings(strategy="metaschedule", trials_per_task=3, trials_per_round=3)
    run = run_session(tiny_mlp, db, host, settings, [events.append])
    return run, db, events


@pytest.mark.slow
def test_every_measured_candidate_is_recorded(tuned) -> None:
    run, db, events = tuned
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert isinstance(events[0], SessionStarted) and isinstance(events[-1], SessionFinished)
    assert events[-1].status == "completed"
    store = RecordStore(db)
    trials = store.trials(run.session_id)
    assert len(trials) == sum(e.batch_size for e in rounds) > 0
    assert {t["round"] for t in trials} == {e.round for e in rounds}
    tasks = store.tasks(run.session_id)
    assert {t["task_id"] for t in trials} <= {t["id"] for t in tasks}
    for trial in trials:
        assert trial["trace"] and trial["origin"] == "evolved"
        assert (trial["latency_s"] is None) == (trial["error"] is not None)
        if trial["latency_s"] is not None:  # warm, as stock: runner_repeat averages
            assert len(json.loads(trial["run_secs"])) == TuneSettings().runner_repeat
    # Global budget (trials per task x tasks), as stock MetaSchedule's tune_relax uses it.
    assert len(trials) <= 3 * len(tasks) + 2


def test_timeline_and_estimate(tuned) -> None:
    run, db, events = tuned
    store = RecordStore(db)
    timeline = store.timeline(run.session_id)
    assert len(timeline) == len([e for e in events if isinstance(e, RoundFinished)])
    elapsed = [p["elapsed_s"] for p in timeline]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0
    final = timeline[-1]["estimated_latency_s"]
    best = store.best_latencies(run.session_id)
    weights = {t["id"]: t["weight"] for t in store.tasks(run.session_id)}
    assert final == pytest.approx(sum(weights[k] * v for k, v in best.items()))
    assert store.session(run.session_id)["status"] == "completed"
    assert store.cost_model_metrics(run.session_id), "cost-model accuracy is recorded per round"


def test_export_matches_onnxruntime(tuned, tiny_mlp: Path, tmp_path: Path, host) -> None:
    _, db, _ = tuned
    imported = import_model(tiny_mlp)
    database = SqliteDatabase(RecordStore(db), target_key(host))
    # Without a suffix TVM could not load the file back (it picks the loader by suffix).
    library = export_library(compile_tuned(database, imported.relax_mod, host), tmp_path / "tiny")
    assert library == tmp_path / "tiny.so" and library.is_file()
    report = check_library(library, imported.inputs, imported.onnx_model, runs=3)
    assert report.matches, report.comparison
    # The check really compares: a different input gives different outputs.
    other = random_inputs(imported.inputs, seed=1)
    assert not np.allclose(run_onnxruntime(imported.onnx_model, other, runs=1).outputs[0], report.tvm.outputs[0])


def test_export_fails_loudly_when_a_task_was_never_tuned(tuned, tiny_convnet: Path, host) -> None:
    _, db, _ = tuned
    database = SqliteDatabase(RecordStore(db), target_key(host))
    with pytest.raises(MissingRecordError) as info:
        compile_tuned(database, import_model(tiny_convnet).relax_mod, host)
    assert any("conv2d" in name for name in info.value.task_names)


def test_rerun_of_a_completed_session_adds_nothing(tuned, tiny_mlp: Path, host) -> None:
    run, db, _ = tuned
    before = len(RecordStore(db).trials(run.session_id))
    settings = TuneSettings(strategy="metaschedule", trials_per_task=3, trials_per_round=3)
    again = run_session(tiny_mlp, db, host, settings)
    assert again.session_id == run.session_id and again.resumed
    assert len(RecordStore(db).trials(run.session_id)) == before
    assert len(RecordStore(db).sessions()) == 1


@pytest.mark.slow
def test_cli_tune_then_export_sample_model(tmp_path: Path) -> None:
    """The acceptance path: bcd tune (metaschedule, 4 trials per task) then bcd export + check."""
    db, out = tmp_path / "mlp.db", tmp_path / "mlp.so"
    tune = subprocess.run(
        [
            sys.executable,
            "-m",
            "bcd_core",
            "tune",
            str(SAMPLE_MODEL),
            "--strategy",
            "metaschedule",
            "--trials-per-task",
            "4",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tune.returncode == 0, tune.stderr
    assert "completed" in tune.stderr
    store = RecordStore(db)
    session = store.sessions()[-1]
    rounds = store.timeline(session["id"])
    assert len(store.trials(session["id"])) == sum(r["batch_size"] for r in rounds) == session["trials_done"]
    export = subprocess.run(
        [sys.executable, "-m", "bcd_core", "export", "--db", str(db), "--out", str(out), "--runs", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert export.returncode == 0, export.stderr + export.stdout
    assert "outputs match" in export.stdout
    check = subprocess.run(
        [sys.executable, "-m", "bcd_core", "check", str(out), "--onnx", str(SAMPLE_MODEL), "--runs", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0 and "outputs match" in check.stdout


@pytest.mark.slow
def test_a_model_with_token_ids_is_measured_and_exported(tmp_path: Path, host) -> None:
    """Random int64 token ids index far outside the embedding table and crashed the runner,
    so the lookup task had no measurement and the model no estimate (BERT's `take`)."""
    model = models.embedding(tmp_path / "embedding.onnx")
    db = tmp_path / "embedding.db"
    run = run_session(model, db, host, TuneSettings(strategy="bcd", trials_per_task=2, trials_per_round=2))
    store = RecordStore(db)
    trials = store.trials(run.session_id)
    lookup = [t for t in store.tasks(run.session_id) if "take" in t["name"]]
    assert lookup, "the model has no lookup task any more: the test no longer tests the fix"
    assert all(t["latency_s"] is not None for t in trials if t["task_id"] == lookup[0]["id"])
    assert estimated_latency(run.tasks, run.best) is not None
    imported = import_model(model)
    database = SqliteDatabase(store, target_key(host))
    library = export_library(compile_tuned(database, imported.relax_mod, host), tmp_path / "embedding")
    report = check_library(library, imported.inputs, imported.onnx_model, runs=3)
    assert report.matches, report.comparison


@pytest.mark.slow
def test_a_task_skipped_before_any_measurement_is_exported_untuned(tmp_path: Path, tiny_mlp: Path, host) -> None:
    """Skipping a task before its first round must not strand the session: the export
    compiles it unscheduled (CPU), says so, and still matches onnxruntime."""
    from bcd_core.export import export_tuned_session
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.run import prepare_model

    last = prepare_model(tiny_mlp, host).tasks[-1]
    control = TuningControl()
    control.skip_task(last.index)  # requested before the tune starts: applied before any round
    db = tmp_path / "skipped.db"
    run = run_session(tiny_mlp, db, host, TuneSettings(trials_per_task=4, trials_per_round=2), control=control)
    store = RecordStore(db)
    row = next(r for r in store.tasks(run.session_id) if r["idx"] == last.index)
    assert row["status"] == "skipped" and not store.trials(run.session_id, task_id=row["id"])
    result = export_tuned_session(store, run.session_id, tmp_path / "skipped.so", runs=3)
    assert result.untuned == [last.name]
    assert result.path.is_file() and result.check is not None and result.check.matches


@pytest.mark.slow
def test_a_fast_math_session_exports_with_the_import_it_was_tuned_with(tmp_path: Path, gelu_model: Path, host) -> None:
    """Tunes import erf and softmax as fast approximations by default; export must import the
    same way, or the tasks holding them would miss their records."""
    from bcd_core.export import export_tuned_session, missing_records, session_math

    settings = TuneSettings(strategy="metaschedule", trials_per_task=2, trials_per_round=2)
    run = run_session(gelu_model, tmp_path / "gelu.db", host, settings)
    store = RecordStore(tmp_path / "gelu.db")
    assert session_math(store.session(run.session_id)) == "fast"
    database = SqliteDatabase(store, target_key(host))
    assert missing_records(database, import_model(gelu_model).relax_mod, host), "exact tasks differ"
    result = export_tuned_session(store, run.session_id, tmp_path / "gelu", runs=3)
    assert result.check is not None and result.check.matches, result.check


def test_a_session_timed_with_flushed_caches_is_kept_apart_from_warm_ones(tmp_path: Path, tiny_mlp: Path, host) -> None:
    """Older stores may hold sessions whose candidates were timed with flushed caches: their
    records never rank against a warm session's in the same store, and a warm tune does not
    continue one."""
    import sqlite3

    from bcd_core.cores import kernel_threads
    from bcd_core.records.timing import session_timing

    db = tmp_path / "both.db"
    warm = TuneSettings(strategy="metaschedule", trials_per_task=2, trials_per_round=2)
    older = run_session(tiny_mlp, db, host, warm)
    with sqlite3.connect(db) as connection:  # as an earlier version stored a flushed session
        stored = json.loads(connection.execute("select settings from sessions").fetchone()[0])
        connection.execute("update sessions set settings = ?", [json.dumps({**stored, "cpu_cache": "flushed"})])
    run = run_session(tiny_mlp, db, host, warm)
    store = RecordStore(db)
    assert run.session_id != older.session_id, "the timing is part of the session's identity"
    threads = kernel_threads()
    timings = [session_timing(store.session(sid)) for sid in (older.session_id, run.session_id)]
    assert timings == [f"flushed x{threads}", f"warm x{threads}"]
    assert set(run.database.exclude_sessions) == {older.session_id}
