"""Panels on their own, fed rows as the store gives them."""

from __future__ import annotations

import dataclasses

from bcd_gui.panels import SessionsPanel


def session_row(session_id: int, status: str) -> dict:
    return {
        "id": session_id,
        "model_name": "m.onnx",
        "strategy": "bcd",
        "status": status,
        "trials_done": 8,
        "estimated_latency_s": 1e-3,
        "elapsed_s": 12.0,
        "started_at": "2026-11-25T07:00:00",
    }


def status_and_resumable(panel: SessionsPanel, session_id: int) -> tuple[str, bool]:
    row = next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == str(session_id))
    panel.table.selectRow(row)
    return panel.table.item(row, 3).text(), panel.resume_button.isEnabled()


def test_the_session_this_window_tunes_shows_paused_and_cannot_be_resumed(qtbot) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)
    panel.show_sessions([session_row(1, "stopped"), session_row(2, "running"), session_row(3, "completed")])
    assert status_and_resumable(panel, 1) == ("stopped", True)
    assert status_and_resumable(panel, 3) == ("completed", False)
    assert status_and_resumable(panel, 2) == ("running", True)  # another process's, maybe dead: resumable

    panel.set_live(2)
    assert status_and_resumable(panel, 2) == ("running", False)
    panel.set_live(2, paused=True)
    assert status_and_resumable(panel, 2) == ("paused", False)
    panel.show_sessions([session_row(1, "stopped"), session_row(2, "running")])  # a refresh keeps it
    assert status_and_resumable(panel, 2) == ("paused", False)
    panel.set_live(None)
    assert status_and_resumable(panel, 2) == ("running", True)
    assert status_and_resumable(panel, 1) == ("stopped", True)


def test_the_log_follows_the_newest_line_unless_scrolled_up(qtbot) -> None:
    from bcd_gui.panels import LogPanel

    panel = LogPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 120)
    panel.show()
    for number in range(200):
        panel.add_line(f"line {number}")
    bar = panel.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()
    bar.setValue(0)  # the user reads an older line: it stays in view
    panel.add_line("line 200")
    assert bar.value() == 0


def test_an_engine_message_reaches_the_log_once(qtbot, window, caplog) -> None:
    """The watcher logs each engine event it reads from the store (live_tune.engine_log); the
    window, told the same event, shows a warning in the status bar but does not log it again."""
    from bcd_core.tuning.events import SessionMessage
    from bcd_gui.live_tune import engine_log

    info, warning = "memory: 3 of 4 tasks draw on 1 earlier sessions", "conv2d: skipped, all 4 candidates failed"
    with caplog.at_level("INFO"):
        for kind, message in (("info", info), ("warning", warning)):
            engine_log.info("%s", message)  # as SessionWatcher.poll does
            window.tuning._on_event(SessionMessage(1, kind, message))
    for message in (info, warning):
        assert [r.name for r in caplog.records if message in r.getMessage()] == ["bcd.engine"]
        qtbot.waitUntil(lambda m=message: m in window.log_panel.toPlainText())
        assert window.log_panel.toPlainText().count(message) == 1
    assert window.status_text.text() == warning


def test_help_has_a_guide_with_the_panels_and_shortcuts(qtbot, window) -> None:
    from PySide6.QtWidgets import QMessageBox

    titles = [a.text() for a in window.menuBar().actions()]
    help_menu = window.menuBar().actions()[titles.index("&Help")].menu()
    assert "&Guide" in [a.text() for a in help_menu.actions()]
    window.window_actions.guide_action.trigger()
    box = qtbot.waitUntil(lambda: window.findChild(QMessageBox) is not None) or window.findChild(QMessageBox)
    text = box.text()
    assert "Ctrl+R" in text and "Provenance" in text and "memory" in text
    box.close()


def test_a_long_status_message_is_elided_and_whole_in_its_tooltip(qtbot) -> None:
    from bcd_gui.status import ElidedLabel

    label = ElidedLabel()
    qtbot.addWidget(label)
    label.resize(160, 20)
    label.show()
    message = "fused_conv2d_add_relu: no sketch matches its cluster's programs; MetaSchedule's search alone tunes it"
    label.setText(message)
    assert label.text() == label.toolTip() == message
    assert label.shown_text() != message and label.shown_text().endswith("…")
    label.resize(2000, 20)
    assert label.shown_text() == message


def test_provenance_says_what_a_serial_twin_is(qtbot) -> None:
    from bcd_core.session_view import Provenance, TaskView
    from bcd_gui.panels import ProvenancePanel

    def provenance(origin: str) -> Provenance:
        task = TaskView(0, 1, "layer_norm", 4, 1e5, [[128, 256]], "layer_norm", "k", 0, "k", False, None, "done")
        task.best_origin = origin
        return Provenance(task, None, None, None, None, None, 1e-5, 16, 0)

    panel = ProvenancePanel()
    qtbot.addWidget(panel)
    panel.show_provenance(provenance("serial"))
    assert "origin: serial" in panel.text.text() and "one thread" in panel.text.text()
    panel.show_provenance(provenance("evolved"))
    assert "one thread" not in panel.text.text()


def test_provenance_names_the_earlier_tune_even_when_a_siblings_program_won(qtbot) -> None:
    """A member measured remembered programs, but its fastest carried program is its
    representative's: the panel says so and still names the earlier tune drawn on."""
    from bcd_core.session_view import Provenance, TaskView
    from bcd_gui.panels import ProvenancePanel

    task = TaskView(1, 2, "conv2d_add_relu", 4, 1e6, [[1, 8, 12, 12]], "conv", "k", 0, "k", False, None, "done")
    remembered = "copy; from earlier_net.onnx fused_conv2d1 (session 1)"
    beaten = Provenance(task, "conv2d_rep", 7, 2e-5, "copy", 3e-5, 2e-5, 4, 1, "diffused", 2, remembered)
    panel = ProvenancePanel()
    qtbot.addWidget(panel)
    panel.show_provenance(beaten)
    text = panel.text.text()
    assert "Seeded by <b>conv2d_rep</b>" in text
    assert "Also measured 2 programs of earlier tunes" in text and "earlier_net.onnx" in text
    panel.show_provenance(Provenance(task, "conv2d_rep", 7, 2e-5, "copy", 3e-5, 2e-5, 4, 1, "diffused"))
    assert "earlier" not in panel.text.text()


def test_stopping_rules_are_set_beside_trials_per_task_and_read_off_when_off(qtbot) -> None:
    from bcd_gui.panels import SettingsPanel

    panel = SettingsPanel()
    qtbot.addWidget(panel)
    defaults = panel.settings()
    assert (defaults.minutes, defaults.target_ms, defaults.faster_than_onnxruntime_pct, defaults.plateau_pct) == (
        0,
        0,
        None,
        0,
    )
    assert panel.minutes.text() == "off" and panel.faster_than_onnxruntime_pct.text() == "off"
    panel.minutes.setValue(3)
    panel.faster_than_onnxruntime_pct.setValue(0)  # as fast as onnxruntime: not off
    chosen = panel.settings()
    assert chosen.minutes == 3 and chosen.faster_than_onnxruntime_pct == 0
    assert chosen.identity() == defaults.identity(), "the rules never start a session of their own"


def test_a_session_stopped_by_a_rule_says_why(qtbot) -> None:
    from bcd_gui.panels import OverviewPanel

    panel = SessionsPanel()
    qtbot.addWidget(panel)
    row = {**session_row(1, "stopped"), "stop_reason": "time budget of 3 min spent"}
    panel.show_sessions([row, session_row(2, "completed")])
    assert status_and_resumable(panel, 1) == ("stopped", True)
    assert panel.table.item(1, 3).toolTip() == "stopped: time budget of 3 min spent"  # newest first

    from bcd_core.session_view import SessionSnapshot

    overview = OverviewPanel()
    qtbot.addWidget(overview)
    overview.show_snapshot(SessionSnapshot(session=row, tasks=[], clusters=[], timeline=[], metrics=[]), {})
    assert overview.values["session"].text() == "#1 bcd, stopped: time budget of 3 min spent"


def test_the_overview_names_the_layout_and_keeps_the_probes_figures_for_its_tooltip(qtbot) -> None:
    """A measured reason names three probes' figures: wrapped in the panel's narrow column it
    would stand taller than the rest of the overview."""
    from bcd_core.records.measured import LayoutChoice
    from bcd_core.session_view import SessionSnapshot
    from bcd_gui.panels import OverviewPanel

    reason = "measured: a round of up to 4 trials a task, ran 0.122 ms blocked with Winograd, 0.0879 ms blocked"
    choice = LayoutChoice("blocked", reason, block=8, nchw_s=0.3, blocked_s=0.09, winograd_s=0.12)
    overview = OverviewPanel()
    qtbot.addWidget(overview)
    snapshot = SessionSnapshot(session=session_row(1, "completed"), tasks=[], clusters=[], timeline=[], metrics=[])
    overview.show_snapshot(dataclasses.replace(snapshot, layout=choice), {})
    assert overview.values["layout"].text() == "blocked (NCHW8c), measured"
    assert overview.values["layout"].toolTip() == f"blocked (NCHW8c): {reason}"
    asked = LayoutChoice("nchw", "as asked (--layout)")
    overview.show_snapshot(dataclasses.replace(snapshot, layout=asked), {})
    assert overview.values["layout"].text() == "nchw, as asked (--layout)"


def test_the_sessions_list_tells_a_layout_probe_and_the_tune_that_went_on_from_one(qtbot) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)
    probe = {**session_row(1, "completed"), "settings": '{"conv_layout": "nchw", "layout_probe": true}'}
    tune = {**session_row(2, "running"), "settings": '{"conv_layout": "blocked"}', "probe_trials": 8}
    panel.show_sessions([probe, tune, session_row(3, "stopped")])
    strategies = {panel.table.item(r, 0).text(): panel.table.item(r, 2).text() for r in range(3)}
    assert strategies == {"1": "bcd, nchw layout probe", "2": "bcd, went on from its blocked probe", "3": "bcd"}
