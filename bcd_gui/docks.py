"""The window's docks (model and settings, provenance, sessions, log) and the log's feed."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QVBoxLayout, QWidget

from bcd_gui.panels import LogPanel, OverviewPanel, ProvenancePanel, QtLogHandler, SessionsPanel, SettingsPanel

LOGGERS = ("bcd", "tvm")  # what the log dock shows
LEFT_MIN_WIDTH = 240  # the model's figures and the settings' fields readable at 1024 px


class Docks:
    """Builds the panels and docks them into `window`; the dock object names key the saved layout."""

    def __init__(self, window: QMainWindow) -> None:
        self.overview = OverviewPanel()
        self.settings_panel = SettingsPanel()
        left, bottom = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.BottomDockWidgetArea
        # Scrolled, not squeezed: in a short window the docks share the height, and a page
        # squeezed below its minimum draws its fields over the next dock.
        # Settings share a tab with the provenance, so that Trials per task shows without
        # scrolling in a 700-pixel window; selecting a tuned task brings the provenance forward.
        self.model_dock = _dock(window, "Model", "modelDock", _scrolled(_stacked(self.overview), LEFT_MIN_WIDTH), left)
        settings = _scrolled(_stacked(self.settings_panel), LEFT_MIN_WIDTH)
        self.settings_dock = _dock(window, "Settings", "settingsDock", settings, left)
        self.provenance = ProvenancePanel()
        self.provenance_dock = _dock(window, "Diffusion provenance", "provenanceDock", _scrolled(self.provenance), left)
        window.tabifyDockWidget(self.settings_dock, self.provenance_dock)
        self.settings_dock.raise_()
        self.sessions = SessionsPanel()
        self.sessions_dock = _dock(window, "Sessions", "sessionsDock", self.sessions, bottom)
        self.log_panel = LogPanel()
        self.log_dock = _dock(window, "Log", "logDock", self.log_panel, bottom)
        window.tabifyDockWidget(self.sessions_dock, self.log_dock)
        self.sessions_dock.raise_()
        window.resizeDocks([self.sessions_dock], [170], Qt.Orientation.Vertical)
        window.resizeDocks([self.model_dock, self.settings_dock], [320, 320], Qt.Orientation.Horizontal)

    def fit_left(self, window: QMainWindow) -> None:
        """A first run's left docks: a fifth of the window, at least LEFT_MIN_WIDTH, so the
        settings' fields show whole on a wide screen and the tree keeps its room on a narrow one."""
        width = max(LEFT_MIN_WIDTH, window.width() // 5)
        window.resizeDocks([self.model_dock, self.settings_dock], [width, width], Qt.Orientation.Horizontal)

    def all(self) -> tuple[QDockWidget, ...]:
        """Every dock, in the order the View menu lists them."""
        return (self.model_dock, self.settings_dock, self.provenance_dock, self.sessions_dock, self.log_dock)


def _stacked(panel: QWidget) -> QWidget:
    """`panel` at the top of a page, with the room below it left empty."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.addWidget(panel)
    layout.addStretch()
    return page


def _scrolled(page: QWidget, min_width: int = 0) -> QScrollArea:
    area = QScrollArea()
    area.setMinimumWidth(min_width)
    area.setWidget(page)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area


def _dock(window: QMainWindow, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
    dock = QDockWidget(title, window)
    dock.setObjectName(name)
    dock.setWidget(widget)
    window.addDockWidget(area, dock)
    return dock


def attach_log(panel: LogPanel) -> QtLogHandler:
    """Show bcd's and TVM's log records in `panel` (at least bcd's INFO); returns the handler."""
    handler = QtLogHandler()
    handler.emitter.line.connect(panel.add_line)
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)
    bcd_logger = logging.getLogger("bcd")
    if bcd_logger.getEffectiveLevel() > logging.INFO:
        bcd_logger.setLevel(logging.INFO)
    set_tvm_details(False)
    return handler


def detach_log(handler: QtLogHandler) -> None:
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)


def set_tvm_details(on: bool) -> None:
    # MetaSchedule logs whole programs and task tables at INFO (bcd.ms.* per task): useful
    # when debugging a schedule, noise otherwise.
    for name in ("tvm", "bcd.ms"):
        logging.getLogger(name).setLevel(logging.INFO if on else logging.WARNING)
