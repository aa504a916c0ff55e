"""The menu bar, the toolbar and the recent-files menu, laid out from the window's actions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QMenuBar

from bcd_gui.actions import WindowActions
from bcd_gui.preferences import Preferences
from bcd_gui.theme import THEME_CHOICES


def build_menu_bar(
    window: QMainWindow,
    actions: WindowActions,
    docks: Sequence[QDockWidget],
    theme: str,
    set_theme: Callable[[str], None],
) -> QMenu:
    """File, Tune, Steer, View and Help; returns File > Open recent, to be filled by RecentFiles.
    `theme` is the current theme choice, `set_theme` what choosing another one does."""
    bar = window.menuBar()
    recent_menu = _file_menu(bar, actions)
    tune_menu = bar.addMenu("&Tune")
    for action in (actions.tune_action, actions.pause_action, actions.stop_action):
        tune_menu.addAction(action)
    steer = bar.addMenu("&Steer")
    for action in actions.steering:
        steer.addAction(action)
    view = bar.addMenu("&View")
    _theme_menu(window, view.addMenu("&Theme"), theme, set_theme)
    view.addAction(actions.tvm_log_action)
    view.addSeparator()
    for dock in docks:
        view.addAction(dock.toggleViewAction())
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(actions.guide_action)
    help_menu.addAction(actions.about_action)
    return recent_menu


def _file_menu(bar: QMenuBar, actions: WindowActions) -> QMenu:
    file_menu = bar.addMenu("&File")
    file_menu.addAction(actions.open_action)
    file_menu.addAction(actions.sample_action)
    file_menu.addAction(actions.open_store_action)
    recent_menu = file_menu.addMenu("Open &recent")
    file_menu.addSeparator()
    for action in (actions.export_module_action, actions.export_report_action, actions.export_json_action):
        file_menu.addAction(action)
    file_menu.addSeparator()
    file_menu.addAction(actions.quit_action)
    return recent_menu


def _theme_menu(window: QMainWindow, menu: QMenu, theme: str, set_theme: Callable[[str], None]) -> None:
    group = QActionGroup(window)  # exclusive: one theme is checked
    for choice in THEME_CHOICES:
        action = QAction(choice.capitalize(), window, checkable=True)
        action.setChecked(choice == theme)
        action.triggered.connect(lambda _c=False, choice=choice: set_theme(choice))
        group.addAction(action)
        menu.addAction(action)


def build_toolbar(window: QMainWindow, actions: WindowActions) -> None:
    toolbar = window.addToolBar("Main")
    toolbar.setObjectName("mainToolbar")
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    for action in (
        actions.open_action,
        None,
        actions.tune_action,
        actions.pause_action,
        actions.stop_action,
        None,
        actions.up_action,
        actions.down_action,
        actions.skip_action,
        None,
        actions.export_module_action,
        actions.export_report_action,
    ):
        if action is None:
            toolbar.addSeparator()
        else:
            toolbar.addAction(action)


class RecentFiles:
    """File > Open recent: the models opened last (kept in `preferences`), newest first."""

    def __init__(self, menu: QMenu, preferences: Preferences, open_model: Callable[[str], None]) -> None:
        self.menu = menu
        self.preferences = preferences
        self.open_model = open_model

    def remember(self, path: Path) -> None:
        self.preferences.remember(path)
        self.refresh()

    def refresh(self) -> None:
        self.menu.clear()
        items = self.preferences.recent_files()
        for number, item in enumerate(items, start=1):
            action = self.menu.addAction(f"&{number} {Path(item).name}  ({Path(item).parent})")
            action.triggered.connect(lambda _c=False, item=item: self.open_model(item))
        self.menu.setEnabled(bool(items))
