"""The convolutions' layout is chosen by measuring both on this machine, recorded once per
model and target, kept by a resumed session; the compiled model is timed at milestones."""

import json
import time
from dataclasses import replace
from pathlib import Path

import models
import pytest
import tvm

from bcd_core.records.measured import session_layout_choice
from bcd_core.records.store import RecordStore
from bcd_core.target import host_target, target_key
from bcd_core.tuning import layout_choice
from bcd_core.tuning.layout_choice import WIN_MARGIN, ProbeRun, choose_layout
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


@pytest.fixture(scope="module")
def mobile_cnn(model_dir: Path) -> Path:
    return models.mobile_block_cnn(model_dir / "choice_cnn.onnx")


def no_probe(*args, **kwargs):
    raise AssertionError("the layouts were measured again")


def auto(**values) -> TuneSettings:
    return TuneSettings(**{"conv_layout": "auto", "trials_per_task": 2, "trials_per_round": 2, **values})


def test_no_measurement_where_the_answer_is_known(
    tmp_path: Path, tiny_mlp: Path, mobile_cnn: Path, monkeypatch
) -> None:
    monkeypatch.setattr(layout_choice, "probe_layouts", no_probe)
    store = tmp_path / "known.db"
    plain, _ = choose_layout(store, tiny_mlp, host_target(), ProbeRun(auto(), no_probe))
    assert plain.layout == "nchw" and "no convolution" in plain.reason
    stock, _ = choose_layout(store, mobile_cnn, host_target(), ProbeRun(auto(strategy="metaschedule"), no_probe))
    assert stock.layout == "nchw" and "stock" in stock.reason
    gpu = tvm.target.Target({"kind": "cuda", "arch": "sm_80"}, host="llvm")
    assert layout_choice.unmeasured_choice(auto(), gpu).layout == "nchw"
    asked, prepared = choose_layout(store, mobile_cnn, host_target(), ProbeRun(auto(conv_layout="blocked"), no_probe))
    assert asked.layout == "blocked" and asked.block in (4, 8, 16) and "as asked" in asked.reason
    assert any("NCHWc" in task.name for task in prepared.tasks)


def flip_stored_choice(store: RecordStore, model: Path, settings: TuneSettings, layout: str) -> None:
    """A newer stored choice of `layout` for the model (as if measured again since)."""
    key = target_key(host_target())
    row = {"layout": layout, "reason": "measured: flipped by the test", "block": 0}
    row |= {"model_hash": _sha(model), "target_key": key, "kernel_threads": settings.kernel_threads}
    store.record_layout_choice(row, settings.input_shapes)


def _sha(path: Path) -> str:
    from bcd_core.model_import import file_sha256

    return file_sha256(path)


@pytest.mark.slow
def test_a_tune_measures_its_layout_records_it_and_a_resumed_session_keeps_it(
    tmp_path: Path, mobile_cnn: Path, monkeypatch, time_model
) -> None:
    """Both layouts are probed by short tunes whose compiled models are timed; the faster (by
    the margin) is recorded and tuned; no user's tune continues a probe session; the choice is
    reused without measuring; a resumed session keeps its layout whatever was measured since."""
    db = tmp_path / "tune.db"
    settings = auto()
    budget = TuneSettings(minutes=0.1).minutes  # less than the probes take: they are not on it
    first = run_session(mobile_cnn, db, host_target(), replace(settings, minutes=budget))
    store = RecordStore(db)
    probe_s = store.session(first.session_id)["probe_s"]
    assert probe_s > budget * 60 and first.trials_done > 0, "the probe did not spend the session's time budget"
    probes = [s for s in store.sessions() if json.loads(s["settings"]).get("layout_probe")]
    assert len(probes) == 2 and first.session_id not in {s["id"] for s in probes}
    timed = [[row["milestone"] for row in store.model_latencies(s["id"])] for s in probes]
    assert timed == [["final"], ["final"]], "each probe's compiled model was timed once, at its end"
    session = store.session(first.session_id)
    chosen = json.loads(session["settings"])["conv_layout"]
    recorded = session_layout_choice(store, session)
    assert recorded.layout == chosen and recorded.reason.startswith("measured") and recorded.probe_trials == 2
    assert (chosen == "blocked") == (recorded.blocked_s < recorded.nchw_s * (1 - WIN_MARGIN))
    assert any("NCHWc" in task.name for task in first.tasks) == (chosen == "blocked")
    assert any(event["message"].startswith("layout: ") for event in store.events(first.session_id))
    monkeypatch.setattr(layout_choice, "probe_layouts", no_probe)
    again, _ = choose_layout(db, mobile_cnn, host_target(), ProbeRun(auto(trials_per_task=3), no_probe))
    assert again.layout == chosen and again.nchw_s == recorded.nchw_s  # stored, whatever the budget
    other = "nchw" if chosen == "blocked" else "blocked"
    flip_stored_choice(store, mobile_cnn, settings, other)
    resumed = run_session(mobile_cnn, db, host_target(), settings, resume_session_id=first.session_id)
    assert resumed.session_id == first.session_id
    assert json.loads(store.session(first.session_id)["settings"])["conv_layout"] == chosen
    assert any("NCHWc" in task.name for task in resumed.tasks) == (chosen == "blocked")


@pytest.mark.slow
def test_a_stopped_probe_records_no_choice_and_the_next_tune_resumes_it(
    tmp_path: Path, mobile_cnn: Path, time_model
) -> None:
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.events import RoundFinished

    db = tmp_path / "stopped.db"
    control = TuningControl()

    def stop_at_first_round(event) -> None:
        if isinstance(event, RoundFinished):
            control.stop()

    stopped = run_session(mobile_cnn, db, host_target(), auto(), [stop_at_first_round], control=control)
    store = RecordStore(db)
    assert json.loads(store.session(stopped.session_id)["settings"]).get("layout_probe")
    assert store.session(stopped.session_id)["status"] == "stopped" and len(store.sessions()) == 1
    assert store.db["layout_choices"].count == 0
    finished = run_session(mobile_cnn, db, host_target(), auto())
    assert store.session(stopped.session_id)["status"] == "completed", "the stopped probe was resumed"
    assert len(store.sessions()) == 3 and store.db["layout_choices"].count == 1
    assert finished.session_id == max(s["id"] for s in store.sessions())


@pytest.mark.slow
def test_the_compiled_model_is_timed_at_the_first_estimate_and_at_the_end(
    tmp_path: Path, tiny_convnet: Path, time_model
) -> None:
    from bcd_core.tuning.events import ModelMeasured

    seen = []
    db = tmp_path / "milestones.db"
    settings = TuneSettings(trials_per_task=3, trials_per_round=1)
    started = time.perf_counter()
    run = run_session(tiny_convnet, db, host_target(), settings, [seen.append])
    wall = time.perf_counter() - started
    rows = RecordStore(db).model_latencies(run.session_id)
    assert [row["milestone"] for row in rows] == ["first estimate", "final"]
    first, final = rows
    assert first["trials_done"] < final["trials_done"] == run.trials_done
    assert final["search_estimate_s"] <= first["search_estimate_s"]
    assert all(row["measured_latency_s"] > 0 and row["cost_s"] > 0 for row in rows)
    assert all(0.1 < row["measured_latency_s"] / row["estimated_latency_s"] < 20 for row in rows)
    measured = [event for event in seen if isinstance(event, ModelMeasured)]
    assert [event.milestone for event in measured] == ["first estimate", "final"]
    elapsed = RecordStore(db).session(run.session_id)["elapsed_s"]
    assert elapsed <= wall - sum(row["cost_s"] for row in rows) + 0.5, "timing the model is off the tuning clock"
