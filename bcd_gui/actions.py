"""The window's actions: their texts, shortcuts and icons, what they trigger, when they are enabled."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence

from bcd_gui.paths import SAMPLE_MODEL, icon


class Commands(Protocol):
    """What the actions trigger: the main window's public methods."""

    def choose_model(self) -> None: ...
    def choose_store(self) -> None: ...
    def open_model(self, path: str | Path) -> None: ...
    def choose_export_module(self) -> None: ...
    def choose_export_report(self) -> None: ...
    def choose_export_json(self) -> None: ...
    def close(self) -> bool: ...
    def start_tune(self) -> None: ...
    def toggle_pause(self) -> None: ...
    def stop_tune(self) -> None: ...
    def move_selected_cluster(self, offset: int) -> None: ...
    def choose_budget(self) -> None: ...
    def skip_selected(self) -> None: ...
    def unskip_selected(self) -> None: ...
    def choose_move_target(self) -> None: ...
    def move_selected_task(self, cluster_key: str | None) -> None: ...
    def make_selected_representative(self) -> None: ...
    def show_about(self) -> None: ...

    def show_guide(self) -> None: ...


def make_action(
    parent: QObject, text: str, slot: Callable[[], Any], shortcut: Any = None, icon_name: str | None = None
) -> QAction:
    """An action calling `slot()` (without Qt's `checked` argument); its shortcut works anywhere in the window."""
    action = QAction(text, parent)
    if icon_name:
        action.setIcon(icon(icon_name))
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.triggered.connect(lambda _checked=False: slot())
    return action


class WindowActions:
    """Every action of the menus, toolbar and tree, owned by `parent` and triggering `commands`."""

    def __init__(self, parent: QObject, commands: Commands) -> None:
        a, c = partial(make_action, parent), commands
        self.open_action = a("&Open model...", c.choose_model, QKeySequence.StandardKey.Open, "open")
        self.sample_action = a("Open &sample model", lambda: c.open_model(SAMPLE_MODEL))
        self.open_store_action = a("Open records &store...", c.choose_store, "Ctrl+Shift+O")
        self.open_store_action.setToolTip("Show the sessions of a records store; follow and steer one being tuned now")
        self.export_module_action = a("Export compiled &module (.so)...", c.choose_export_module, "Ctrl+E", "export")
        self.export_report_action = a(
            "Export &report (HTML, CSV, JSON)...", c.choose_export_report, "Ctrl+Shift+E", "report"
        )
        self.export_json_action = a("Export MetaSchedule &JSON database...", c.choose_export_json)
        self.quit_action = a("&Quit", c.close, QKeySequence.StandardKey.Quit)
        self.tune_action = a("&Tune", c.start_tune, "Ctrl+R", "tune")
        self.pause_action = a("&Pause", c.toggle_pause, "Space", "pause")
        self.stop_action = a("&Stop", c.stop_tune, "Ctrl+.", "stop")
        self.up_action = a("Move cluster &up", lambda: c.move_selected_cluster(-1), "Ctrl+Up", "up")
        self.down_action = a("Move cluster &down", lambda: c.move_selected_cluster(1), "Ctrl+Down", "down")
        self.budget_action = a("Set &budget...", c.choose_budget, "Ctrl+B")
        self.skip_action = a("S&kip task", c.skip_selected, "Ctrl+K", "skip")
        self.unskip_action = a("&Un-skip task", c.unskip_selected, "Ctrl+Shift+K")
        self.move_action = a("&Move task to cluster...", c.choose_move_target, "Ctrl+M")
        self.singleton_action = a("Make task a s&ingleton", lambda: c.move_selected_task(None))
        self.representative_action = a("Make &representative", c.make_selected_representative, "Ctrl+Shift+R")
        self.tvm_log_action = QAction("TVM &details in the log", parent, checkable=True)
        self.tvm_log_action.setToolTip("MetaSchedule's per-round task tables and info lines")
        self.guide_action = a("&Guide", c.show_guide, QKeySequence.StandardKey.HelpContents)
        self.about_action = a("&About bcd", c.show_about)

    @property
    def steering(self) -> tuple[QAction, ...]:
        """The actions that steer a running tune: the Steer menu and the tree's context menu."""
        return (
            self.up_action,
            self.down_action,
            self.budget_action,
            self.skip_action,
            self.unskip_action,
            self.move_action,
            self.singleton_action,
            self.representative_action,
        )

    def update(self, has_model: bool, tuning: bool, tuned: bool) -> None:
        """Enable what makes sense now: steering once a model is open (before Tune its requests wait for
        the tune), exports once a session exists."""
        self.tune_action.setEnabled(has_model and not tuning)
        self.pause_action.setEnabled(tuning)
        self.stop_action.setEnabled(tuning)
        for action in self.steering:  # before Tune too (the requests apply when it starts), and attached
            action.setEnabled(has_model or tuning)
        self.export_module_action.setEnabled(tuned and not tuning)
        self.export_report_action.setEnabled(tuned)
        self.export_json_action.setEnabled(tuned)
        self.open_action.setEnabled(not tuning)
        self.open_store_action.setEnabled(not tuning)
        if not tuning:
            self.show_paused(False)

    def show_paused(self, paused: bool) -> None:
        """The pause action offers to resume while paused."""
        if paused:
            self.pause_action.setText("&Resume")
            self.pause_action.setIcon(icon("tune"))
        else:
            self.pause_action.setText("&Pause")
            self.pause_action.setIcon(icon("pause"))
