"""The settings panel's runner, tracker and key, and how a bad tracker reaches the user."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from window_helpers import open_and_wait

from bcd_gui.panels import SettingsPanel


def test_runner_fields_reach_the_settings(qtbot) -> None:
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    local = panel.settings()
    assert local.runner == "local" and not panel.tracker.isEnabled() and not panel.tracker_key.isEnabled()

    panel.runner.setCurrentText("rpc")
    assert panel.tracker.isEnabled() and panel.tracker_key.isEnabled()
    panel.tracker.setText(" 10.0.0.2:9190 ")
    panel.tracker_key.setText("rasp4")
    remote = panel.settings()
    assert (remote.runner, remote.tracker, remote.tracker_key) == ("rpc", "10.0.0.2:9190", "rasp4")
    assert remote.identity() == local.identity(), "where candidates run does not make another session"

    panel.set_enabled_for_tuning(False)  # while tuning: nothing editable
    assert not panel.runner.isEnabled() and not panel.tracker.isEnabled()
    panel.set_enabled_for_tuning(True)
    assert panel.tracker.isEnabled()

    panel.tracker.setText("10.0.0.2")
    with pytest.raises(ValueError, match="HOST:PORT"):
        panel.settings()


def test_the_panel_shows_the_user_options_of_the_table_only(qtbot) -> None:
    from PySide6.QtWidgets import QFormLayout, QLabel

    from bcd_core.tuning.options import Level, flagged_options, panel_options

    panel = SettingsPanel()
    qtbot.addWidget(panel)
    form = panel.layout()
    assert isinstance(form, QFormLayout)
    captions = [form.itemAt(row, QFormLayout.ItemRole.LabelRole).widget() for row in range(form.rowCount())]
    texts = [label.text() for label in captions if isinstance(label, QLabel)]
    assert texts[0] == "Target" and "Input shapes" in texts
    assert [o.label for o in panel_options()] == [t for t in texts if t not in ("Target", "Input shapes")]
    for option in flagged_options(Level.RESEARCH):
        assert not hasattr(panel, option.field), option.field
    assert panel.settings() == type(panel.settings())()  # the engine's defaults


def test_an_unreachable_tracker_shows_a_dialog(qtbot, window, tiny_mlp: Path) -> None:
    open_and_wait(qtbot, window, tiny_mlp)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    panel = window.settings_panel
    panel.runner.setCurrentText("rpc")
    panel.tracker.setText(address)
    panel.tracker_key.setText("rasp4")
    with qtbot.waitSignal(window.errorShown, timeout=60_000):
        window.start_tune()
    boxes = [b for b in window.findChildren(QMessageBox) if b.objectName() == "errorDialog" and b.isVisible()]
    assert boxes and f"cannot reach the RPC tracker at {address}" in boxes[-1].text() + boxes[-1].informativeText()
    qtbot.waitUntil(lambda: window.worker is None, timeout=30_000)  # the app is ready for the next try
    assert panel.runner.isEnabled() and panel.tracker.isEnabled()
