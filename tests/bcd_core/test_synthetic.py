"""The synthetic store generator, and the view queries and indexes that keep big stores fast."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from synthetic_store import generate_store

from bcd_core.records import store as store_module
from bcd_core.records.store import SUPERSEDED_INDEXES, VIEW_INDEXES, RecordStore, TrialRow
from bcd_core.session_view import latest_round_predictions, load_snapshot, task_best_curve


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory):
    return generate_store(tmp_path_factory.mktemp("synthetic") / "small.db", trials=3000, tasks=12, seed=3)


def per_trial_curve(latencies: list[float | None]) -> list[tuple[int, float]]:
    """The reference: one point per trial once a valid one exists (what viewers drew before)."""
    curve, best = [], float("inf")
    for number, latency in enumerate(latencies, start=1):
        if latency is not None and latency < best:
            best = latency
        if best < float("inf"):
            curve.append((number, best))
    return curve


def index_names(store: RecordStore) -> set[str]:
    return {row[0] for row in store.db.execute("select name from sqlite_master where type = 'index'").fetchall()}


def test_generator_writes_a_realistic_bcd_session(small_store) -> None:
    store = RecordStore(small_store.path, create=False)
    sid = small_store.session_id
    session = store.session(sid)
    assert session["status"] == "completed" and session["strategy"] == "bcd"
    assert session["trials_done"] == small_store.trials == 3000
    trials = store.trials(sid)
    assert len(trials) == 3000
    assert sum(t["latency_s"] is None for t in trials) == small_store.failed > 0
    assert all(t["error"] for t in trials if t["latency_s"] is None)
    assert sum(t["origin"] == "diffused" for t in trials) == small_store.diffused > 0
    by_id = {t["id"]: t for t in trials}
    tasks = {t["id"]: t for t in store.tasks(sid)}
    for trial in (t for t in trials if t["origin"] == "diffused"):
        source = by_id[trial["source_trial_id"]]  # seeded by its cluster's representative
        assert tasks[source["task_id"]]["is_representative"] == 1
        assert tasks[source["task_id"]]["cluster_key"] == tasks[trial["task_id"]]["cluster_key"]
        assert trial["adaptation"] in ("copy", "scale", "random")
    assert sum(t["fallback"] for t in tasks.values()) == 1
    assert len(store.timeline(sid)) == len(store.cost_model_metrics(sid)) == small_store.rounds
    rounds = [t["round"] for t in trials]
    assert rounds == sorted(rounds)  # trials are written round after round, as a tune does
    # Latencies improve over each task's trials: its second half beats its first.
    for task_id in tasks:
        valid = [t["latency_s"] for t in trials if t["task_id"] == task_id and t["latency_s"] is not None]
        half = len(valid) // 2
        assert min(valid[half:]) < min(valid[:half])
    store.close()


def test_snapshot_and_curves_match_a_per_trial_reading(small_store) -> None:
    store = RecordStore(small_store.path, create=False)
    sid = small_store.session_id
    snapshot = load_snapshot(store, sid)
    assert snapshot.trials_done == small_store.trials
    assert snapshot.failed_trials == small_store.failed
    assert {t.index: t.trials for t in snapshot.tasks} == small_store.trials_per_task
    assert {t.index: t.best_s for t in snapshot.tasks} == small_store.best_per_task
    assert snapshot.estimated_latency_s == pytest.approx(small_store.estimated_latency_s)
    for task in snapshot.tasks:
        latencies = [t["latency_s"] for t in store.trials(sid, task_id=task.row_id)]
        corners = task_best_curve(store, sid, task.row_id)
        reference = per_trial_curve(latencies)
        assert len(corners) < len(reference)
        # Same picture: the corners are points of the reference, the first and last among them,
        # and between two corners the reference runs flat or drops from one trial to the next.
        assert set(corners) <= set(reference)
        assert corners[0] == reference[0] and corners[-1] == reference[-1]
        for (n1, v1), (n2, v2) in zip(corners, corners[1:]):
            assert v1 == v2 or n2 == n1 + 1
            assert all(v == v1 for n, v in reference if n1 <= n < n2)
    predictions = latest_round_predictions(store, sid)
    assert predictions and all(throughput > 0 for _, throughput in predictions)
    store.close()


def test_best_trial_ties_go_to_the_earliest(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.db")
    sid = store.create_session(
        model_path="m.onnx", model_hash="h", target="llvm", target_key="k", strategy="bcd", settings={}
    )
    store.add_tasks(sid, [{"idx": 0, "name": "t0", "weight": 1, "flops": 1.0}])
    task_id = store.tasks(sid)[0]["id"]

    def trial(latency: float | None, origin: str) -> TrialRow:
        return TrialRow(task_id, 1, 1, 0.0, [latency] if latency else None, None, [], [], "k", origin)

    store.record_round(sid, [trial(2e-3, "evolved"), trial(None, "evolved"), trial(1e-3, "evolved")])
    store.record_round(sid, [trial(1e-3, "diffused"), trial(3e-3, "diffused")])
    task = load_snapshot(store, sid).tasks[0]
    assert (task.trials, task.failed, task.best_s, task.best_origin) == (5, 1, 1e-3, "evolved")
    assert task_best_curve(store, sid, task_id) == [(1, 2e-3), (2, 2e-3), (3, 1e-3), (5, 1e-3)]
    store.close()


def test_view_indexes_are_added_to_older_stores_and_used(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    fresh = RecordStore(path)
    assert VIEW_INDEXES.keys() <= index_names(fresh)
    fresh.close()
    conn = sqlite3.connect(path)  # make it look like a store written before the view indexes
    for name in VIEW_INDEXES:
        conn.execute(f"drop index {name}")
    conn.execute("create index idx_trials_session_id_task_id on trials (session_id, task_id)")
    conn.commit()
    conn.close()
    store = RecordStore(path)
    names = index_names(store)
    assert VIEW_INDEXES.keys() <= names and not names & set(SUPERSEDED_INDEXES)
    plan = " ".join(
        row[3]
        for row in store.db.execute(
            "explain query plan select task_id, count(*), sum(latency_s is null) from trials"
            " where session_id = 1 group by task_id"
        ).fetchall()
    )
    assert "COVERING INDEX idx_trials_session_task_latency" in plan
    store.close()


def test_a_locked_older_store_still_opens_without_the_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.db"
    RecordStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute(f"drop index {next(iter(VIEW_INDEXES))}")
    writer.execute("begin immediate")  # a tune of an older bcd holds the write lock
    writer.execute("insert into events (session_id, kind) values (1, 'x')")
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)
    with caplog.at_level(logging.WARNING, logger="bcd.records"):
        store = RecordStore(path)
    assert store.sessions() == []
    assert "could not add index" in caplog.text
    store.close()
    writer.execute("rollback")
    writer.close()


def test_generator_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"")
    with pytest.raises(FileExistsError):
        generate_store(path, trials=100, tasks=4)
