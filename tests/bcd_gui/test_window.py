"""The real window driving the real engine: open, tune, pause, steer, watch, export; errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from bad_models import BAD_MODELS
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMessageBox
from window_helpers import error_dialog_text, open_and_wait

from bcd_core.records.store import RecordStore
from bcd_core.tuning.events import RoundFinished, SessionMessage
from bcd_core.tuning.settings import TuneSettings
from bcd_gui.cluster_model import ROLE_ITEM
from bcd_gui.stall import StallMeter

STALL_BOUND_MS = 1000  # generous for 2 shared cores; docs/gui.md has the measured figure


@pytest.mark.slow
def test_open_tune_pause_reprioritize_watch_and_export(qtbot, window, tiny_mlp: Path, tmp_path: Path) -> None:
    preview = open_and_wait(qtbot, window, tiny_mlp)
    assert preview.session_id == 0 and len(preview.clusters) >= 2
    assert window.tree_model.rowCount() == len(preview.clusters)
    assert window.overview.values["tasks"].text() == str(len(preview.tasks))

    rounds: list[RoundFinished] = []
    messages: list[str] = []
    window.worker = None
    meter = StallMeter()
    meter.start()
    window.start_tune(TuneSettings(trials_per_task=6, trials_per_round=2), "llvm", new_session=True)
    worker = window.worker
    assert worker is not None
    worker.event.connect(lambda e: rounds.append(e) if isinstance(e, RoundFinished) else None)
    worker.event.connect(lambda e: messages.append(e.message) if isinstance(e, SessionMessage) else None)

    # Pause after the first round: no round finishes while paused.
    qtbot.waitUntil(lambda: len(rounds) >= 1, timeout=120_000)
    window.toggle_pause()
    qtbot.waitUntil(lambda: "paused" in messages, timeout=120_000)
    paused_at = len(rounds)
    qtbot.wait(1500)
    assert len(rounds) == paused_at

    # Reprioritize while paused: shown as pending, applied at the next round.
    last_cluster = window.snapshot.clusters[-1].key
    window.select_item(("cluster", last_cluster))
    window.move_selected_cluster(-len(window.snapshot.clusters))
    assert "(+1)" in window.tree_model.index_of(("cluster", last_cluster), 4).data()  # one request pending
    tip = window.tree_model.index_of(("cluster", last_cluster)).data(Qt.ItemDataRole.ToolTipRole)
    assert "pending until the next round: reorder" in tip
    window.toggle_pause()
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000) as finished:
        pass
    meter.stop()
    assert finished.args[0] == "completed"
    assert any(m.startswith("applied priority") for m in messages)
    assert window.snapshot.clusters[0].key == last_cluster  # the tree follows the engine's order
    assert "(+" not in (window.tree_model.index(0, 4).data() or "")
    assert "pending" not in window.tree_model.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)

    # Rows and curves updated.
    assert window.snapshot.trials_done == window.snapshot.trials_total == 6 * len(preview.tasks)
    assert window.latency_plot.points() > 0
    assert window.task_plot.curves
    assert window.cost_plot.pairwise.getData()[0] is not None
    first_task = window.tree_model.index(0, 0, window.tree_model.index(0, 0))
    assert first_task.data(ROLE_ITEM)[0] == "task"
    shown = sum(int(window.tree_model.index(row, 1).data()) for row in range(window.tree_model.rowCount()))
    assert shown == window.snapshot.trials_done
    assert window.trials_label.text().startswith(f"{window.snapshot.trials_done}/")

    # The UI never froze for long while tuning.
    print(f"longest event-loop stall while tuning: {meter.longest_ms:.1f} ms over {meter.ticks} ticks")
    assert meter.ticks > 100
    assert meter.longest_ms < STALL_BOUND_MS

    # Provenance of a member (or a representative) is shown on selection.
    member = next(t for t in window.snapshot.tasks if not t.is_representative)
    window.select_item(("task", member.index))
    assert member.name in window.provenance.text.text()

    # Export the module (checked against onnxruntime) and the report.
    with qtbot.waitSignal(window.exportFinished, timeout=300_000) as exported:
        window.export_module(tmp_path / "tiny.so")
    result = exported.args[0]
    assert result.path.is_file() and result.check.matches
    with qtbot.waitSignal(window.exportFinished, timeout=120_000) as reported:
        window.export_report(tmp_path / "report")
    files = reported.args[0]
    assert "<img" in files.html.read_text()
    assert json.loads(files.json.read_text())["session"]["status"] == "completed"
    with qtbot.waitSignal(window.exportFinished, timeout=120_000) as written:
        window.export_metaschedule_json(tmp_path / "msjson")
    assert written.args[0] == 6 * len(preview.tasks)
    assert (tmp_path / "msjson" / "database_tuning_record.json").is_file()


def test_a_file_that_is_not_onnx_shows_a_dialog_and_the_app_keeps_running(
    qtbot, window, tmp_path: Path, tiny_mlp: Path
) -> None:
    bogus = tmp_path / "notes.onnx"
    bogus.write_bytes(b"this is not a model\n" * 10)
    with qtbot.waitSignal(window.errorShown, timeout=60_000):
        window.open_model(bogus)
    assert "notes.onnx" in error_dialog_text(window)
    assert "valid ONNX" in error_dialog_text(window)
    # Still usable: a good model opens afterwards.
    open_and_wait(qtbot, window, tiny_mlp)
    assert window.tree_model.rowCount() > 0


def test_a_model_with_dynamic_shapes_says_how_to_fix_it(qtbot, window, dynamic_mlp: Path) -> None:
    with qtbot.waitSignal(window.errorShown, timeout=60_000):
        window.open_model(dynamic_mlp)
    text = error_dialog_text(window)
    assert "dynamic shape" in text and "Input shapes" in text
    # Following the advice works.
    name = text.split("input '")[1].split("'")[0]
    window.settings_panel.input_shapes.setText(f"{name}=1,16")
    snapshot = open_and_wait(qtbot, window, dynamic_mlp)
    assert snapshot.tasks


@pytest.mark.parametrize("name", ["slice", "integer_pow"])
def test_a_model_tvm_cannot_take_shows_a_dialog_naming_the_operator(
    qtbot, window, tmp_path: Path, tiny_mlp: Path, name: str
) -> None:
    make, word = BAD_MODELS[name]
    with qtbot.waitSignal(window.errorShown, timeout=60_000):
        window.open_model(make(tmp_path / f"{name}.onnx"))
    text = error_dialog_text(window)
    assert word in text and "Traceback" not in text
    open_and_wait(qtbot, window, tiny_mlp)  # the app keeps running
    assert window.tree_model.rowCount() > 0


def test_recent_files_and_drag_and_drop(qtbot, window, tiny_mlp: Path, qsettings) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tiny_mlp))])
    event = QDropEvent(
        QPointF(QPoint(10, 10)), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    )
    with qtbot.waitSignal(window.modelOpened, timeout=120_000):
        window.dropEvent(event)
    assert window.recent_files()[0] == str(tiny_mlp.resolve())
    assert qsettings.value("recentFiles")  # persisted
    assert window.recent_menu.actions()[0].text().startswith("&1 tiny_mlp.onnx")


@pytest.mark.slow
def test_sessions_list_reopens_and_resumes_a_stored_session(qtbot, window, tiny_mlp: Path, tmp_path: Path) -> None:
    """A session stopped from the CLI shows up in the list and can be resumed to completion."""
    from bcd_core.target import host_target
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.tune import run_session

    settings = TuneSettings(trials_per_task=4, trials_per_round=2)
    control = TuningControl()

    def stop_after_first_round(event) -> None:
        if isinstance(event, RoundFinished):
            control.stop()

    db = tmp_path / "records.db"
    run_session(tiny_mlp, db, host_target(), settings, [stop_after_first_round], control=control)
    assert RecordStore(db).session(1)["status"] == "stopped"

    open_and_wait(qtbot, window, tiny_mlp)
    assert window.snapshot.session_id == 1  # the stored session is shown, not a blank preview
    assert window.settings_panel.trials_per_task.value() == 4  # and the settings it was tuned with
    assert window.sessions.table.rowCount() == 1
    window.sessions.table.selectRow(0)
    assert window.sessions.resume_button.isEnabled()
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000) as finished:
        window.sessions.resume_button.click()
    assert finished.args[0] == "completed"
    assert window.snapshot.session_id == 1 and window.snapshot.trials_done == 4 * len(window.snapshot.tasks)


@pytest.mark.slow
def test_resuming_a_session_killed_after_its_last_trial_completes_it(qtbot, window, tiny_mlp: Path, tmp_path):
    """An engine killed after its last trial leaves nothing to tune: resumed, its engine opens
    the session and leaves at once, quicker than the window polls; that is no crash."""
    from bcd_core.target import host_target
    from bcd_core.tuning.tune import run_session

    db = tmp_path / "records.db"
    run_session(tiny_mlp, db, host_target(), TuneSettings(trials_per_task=2, trials_per_round=2))
    with closing(RecordStore(db)) as store:
        store.db["sessions"].update(1, {"status": "interrupted"})
    open_and_wait(qtbot, window, tiny_mlp)
    window.sessions.table.selectRow(0)
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000) as finished:
        window.sessions.resume_button.click()
    assert finished.args[0] == "completed"
    assert not window.findChildren(QMessageBox, "errorDialog")


def test_launcher_parses_its_options() -> None:
    result = subprocess.run([sys.executable, "-m", "bcd_gui", "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "bcd-gui" in result.stdout
    from bcd_gui.app import build_parser

    args = build_parser().parse_args(["model.onnx", "--db", "x.db"])
    assert (args.model, args.db) == ("model.onnx", "x.db")


@pytest.mark.slow
def test_closing_while_tuning_stops_after_the_batch_and_keeps_it(qtbot, window, tiny_mlp: Path) -> None:
    open_and_wait(qtbot, window, tiny_mlp)
    window.start_tune(TuneSettings(trials_per_task=40, trials_per_round=2), "llvm", new_session=True)
    worker = window.worker
    rounds: list[RoundFinished] = []
    worker.event.connect(lambda e: rounds.append(e) if isinstance(e, RoundFinished) else None)
    qtbot.waitUntil(lambda: len(rounds) >= 1, timeout=120_000)
    window.ask_before_quitting = False
    window.close()  # returns once the batch in flight is saved (it must not deadlock)
    assert worker.engine.exit_code() == 0
    session = RecordStore(window.db_path).session(worker.session_id)
    assert session["status"] == "stopped"
    assert session["trials_done"] >= rounds[-1].trials_done


@pytest.mark.slow
def test_a_session_that_drew_on_memory_says_so(qtbot, window, tmp_path: Path) -> None:
    """The overview names the earlier tunes drawn on; a task's provenance names the model and
    task its remembered program came from."""
    import models

    from bcd_core.session_view import load_snapshot, provenance_of
    from bcd_core.target import host_target
    from bcd_core.tuning.tune import run_session

    first = models.convnet(tmp_path / "earlier_net.onnx", channels=(3, 8, 16), size=12)
    second = models.convnet(tmp_path / "later_net.onnx", channels=(3, 12, 16), size=14)
    settings = TuneSettings(trials_per_task=4, trials_per_round=2)
    db = tmp_path / "records.db"
    run_session(first, db, host_target(), settings)
    later = run_session(second, db, host_target(), settings)

    open_and_wait(qtbot, window, second)
    assert window.snapshot.session_id == later.session_id
    assert "from earlier_net" in window.overview.values["memory"].text()
    assert "earlier_net.onnx (session 1)" in window.overview.values["memory"].toolTip()
    store = RecordStore(db)
    snapshot = load_snapshot(store, later.session_id)
    # A remembered program may lose to a sibling's diffused one; the panel names the earlier tune either way.
    seeded = [t for t in snapshot.tasks if provenance_of(store, snapshot, t.index).remembered]
    assert seeded, "no task of the later model measured a program of the earlier one"
    window.select_item(("task", seeded[0].index))
    text = window.provenance.text.text()
    assert "earlier tune" in text and "earlier_net.onnx" in text


@pytest.mark.slow
def test_requests_made_before_tune_apply_when_it_starts(qtbot, window, tiny_mlp: Path, tmp_path: Path) -> None:
    """Skip a task and cap another before pressing Tune: the tune starts with both applied; the
    session exports with the skipped task untuned, and resumes to tune it."""
    preview = open_and_wait(qtbot, window, tiny_mlp)
    skipped, capped = preview.tasks[-1].index, preview.tasks[0].index
    assert window.window_actions.skip_action.isEnabled()  # steering is offered before Tune
    window.select_item(("task", skipped))
    window.skip_selected()
    window.select_item(("task", capped))
    window.steering.set_budget(2)
    assert "when tuning starts" in window.status_text.text()
    assert len(window.pending_control.pending()) == 2
    pending = window.status_line.pending_label
    assert pending.isVisible() and pending.text() == "<b>2 pending</b>"
    assert f"skip {preview.task(skipped).name}" in pending.toolTip() and "when tuning starts" in pending.toolTip()
    window.start_tune(TuneSettings(trials_per_task=8, trials_per_round=2), "llvm", new_session=True)
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000) as finished:
        pass
    assert finished.args[0] == "completed"
    assert window.pending_control.pending() == []  # the next tune starts clean
    snapshot = window.snapshot
    assert snapshot.task(skipped).status == "skipped" and snapshot.task(skipped).trials == 0
    assert snapshot.task(capped).trials <= 2 + 2  # capped at 2 (one batch of 2 may be in flight)
    assert not window.status_line.pending_label.isVisible()

    # The skipped task never measured: the model still exports, that task compiled untuned.
    with qtbot.waitSignal(window.exportFinished, timeout=300_000) as exported:
        window.export_module(tmp_path / "skipped.so")
    result = exported.args[0]
    assert result.path.is_file() and result.check.matches
    assert result.untuned == [preview.task(skipped).name]

    # ... and the finished session can be resumed to tune it.
    window.sessions.table.selectRow(0)
    assert window.sessions.resume_button.isEnabled()
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000) as resumed:
        window.sessions.resume_button.click()
    assert resumed.args[0] == "completed"
    assert window.snapshot.session_id == snapshot.session_id
    assert window.snapshot.task(skipped).trials > 0 and window.snapshot.estimated_latency_s is not None


@pytest.mark.slow
def test_onnxruntime_is_timed_as_the_reference_but_not_while_tuning(
    qtbot, window, tiny_mlp: Path, qsettings, time_model
) -> None:
    """A reference timed beside a tune would be wrong (and kept) and would slow the tune: it
    waits for the tune's end, then shows in the overview and as a line in the latency plot;
    a window that opens the store alone (no model file) shows the one kept."""
    open_and_wait(qtbot, window, tiny_mlp)
    store = RecordStore(window.db_path)
    timed_while_tuning: list[int] = []
    window.tuneFinished.connect(lambda _status: timed_while_tuning.append(store.db["reference"].count))
    window.start_tune(TuneSettings(trials_per_task=8, trials_per_round=2), "llvm", new_session=True)
    qtbot.waitUntil(lambda: bool(window.untuned), timeout=120_000)  # the untuned timing is done
    with qtbot.waitSignal(window.tuneFinished, timeout=300_000):
        pass
    assert timed_while_tuning[0] == 0
    qtbot.waitUntil(lambda: window.reference_s is not None, timeout=60_000)
    assert store.db["reference"].count == 1
    assert re.search(r"the tuned model timed \d+\.\d\dx (slower|faster)", window.overview.values["reference"].text())
    assert any(name.startswith("onnxruntime") for name in window.latency_plot.legend_names())
    assert "x the estimate at" in window.overview.values["measured"].text()
    assert window.latency_plot.MEASURED in window.latency_plot.legend_names()

    from bcd_gui.main_window import MainWindow

    attached = MainWindow(db_path=window.db_path, settings=qsettings)
    qtbot.addWidget(attached)
    attached.open_store(window.db_path)
    assert attached.reference_s == pytest.approx(window.reference_s)
    assert re.search(r"\d+\.\d\dx (slower|faster)", attached.overview.values["reference"].text())
    assert attached.overview.values["untuned"].text() == "open the model to measure it"  # nothing times it
    assert any(name.startswith("onnxruntime") for name in attached.latency_plot.legend_names())
