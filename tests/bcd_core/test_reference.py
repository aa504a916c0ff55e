"""onnxruntime as the reference: timed once per model and target with real onnxruntime, kept
in the store, shown in the report; never for a GPU target."""

from __future__ import annotations

import json
import re
from contextlib import closing
from pathlib import Path

import pytest

from bcd_core import reference
from bcd_core.model_import import import_model
from bcd_core.records.store import RecordStore
from bcd_core.reference import stored_reference
from bcd_core.report import write_report
from bcd_core.target import host_target, parse_target, target_key


def test_onnxruntime_is_timed_once_per_model_and_target(tmp_path: Path, tiny_mlp: Path, monkeypatch) -> None:
    target = host_target()
    model_hash = import_model(tiny_mlp).sha256
    with closing(RecordStore(tmp_path / "r.db")) as store:
        first = stored_reference(store, tiny_mlp, model_hash, target)
        assert first is not None and 0 < first < 1.0
        assert store.reference_latency(model_hash, target_key(target)) == first

        def not_again(*_args, **_kwargs):
            raise AssertionError("timed again")

        monkeypatch.setattr(reference, "time_reference", not_again)
        assert stored_reference(store, tiny_mlp, model_hash, target) == first
        gpu = parse_target("nvidia/nvidia-h100")
        assert stored_reference(store, tiny_mlp, model_hash, gpu) is None  # CPU onnxruntime says nothing of a GPU


def test_a_model_onnxruntime_cannot_run_has_no_reference(tmp_path: Path, tiny_mlp: Path, monkeypatch) -> None:
    def fails(*_args, **_kwargs):
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(reference, "time_reference", fails)
    with closing(RecordStore(tmp_path / "r.db")) as store:
        assert stored_reference(store, tiny_mlp, "hash", host_target()) is None
        assert store.db["reference"].count == 0


def test_a_timing_that_disagrees_with_the_second_is_timed_again(tmp_path: Path, tiny_mlp: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    medians = iter([10.0, 3.6, 3.7])  # ms: the first taken while something else ran
    calls = []

    def timed(*_args, **_kwargs):
        calls.append(1)
        return SimpleNamespace(median_ms=next(medians))

    monkeypatch.setattr(reference, "run_onnxruntime", timed)
    latency, spread = reference.time_reference(tiny_mlp)
    assert len(calls) == 3
    assert latency == pytest.approx(3.65e-3) and spread == pytest.approx(3.7 / 3.6 - 1)


def test_a_reference_timed_once_by_an_older_bcd_is_timed_again(tmp_path: Path, tiny_mlp: Path) -> None:
    target = host_target()
    with closing(RecordStore(tmp_path / "r.db")) as store:
        row = {"model_hash": "h", "target_key": target_key(target), "latency_s": 0.5, "measured_at": "then"}
        store.db["reference"].insert(row)  # no spread: one timing, perhaps of a busy machine
        assert store.reference_latency("h", target_key(target)) is None
        latency = stored_reference(store, tiny_mlp, "h", target)
        assert latency is not None and latency < 0.5
        stored, spread = store.reference_timing("h", target_key(target))
        assert stored == latency and 0 <= spread


@pytest.mark.slow
def test_the_report_compares_the_tuned_model_with_onnxruntime(tmp_path: Path, tiny_mlp: Path, time_model) -> None:
    from bcd_core.tuning.settings import TuneSettings
    from bcd_core.tuning.tune import run_session

    db = tmp_path / "r.db"
    target = host_target()
    run = run_session(tiny_mlp, db, target, TuneSettings(trials_per_task=4, trials_per_round=2))
    with closing(RecordStore(db)) as store:
        files = write_report(store, run.session_id, tmp_path / "report")  # times it: the model is there
        latency = store.reference_latency(run.prepared.imported.sha256, target_key(target))
    saved = json.loads(files.json.read_text())
    assert latency is not None and saved["onnxruntime_latency_s"] == latency
    page = files.html.read_text()
    assert "onnxruntime" in page and re.search(r"the tuned model timed \d+\.\d\dx (slower|faster)", page)
    assert saved["compiled_model_latency"] and "x the estimate then" in page
