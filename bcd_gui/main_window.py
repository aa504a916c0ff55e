"""The dashboard window: open a model, tune it, watch it, steer it, export it."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QItemSelectionModel, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QDragEnterEvent, QDropEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from bcd_core import __version__
from bcd_core.errors import BcdError
from bcd_core.export import export_tuned_session
from bcd_core.formatting import format_duration, format_latency
from bcd_core.records.json_io import export_json
from bcd_core.records.store import RecordStore
from bcd_core.report import write_report
from bcd_core.session_view import (
    Baseline,
    SessionSnapshot,
    baseline_for,
    first_time_at_or_below,
    latest_round_predictions,
    load_snapshot,
    preview_snapshot,
    provenance_of,
    task_best_curve,
)
from bcd_core.target import parse_target, target_key
from bcd_core.tuning.events import RoundFinished, SessionFinished, SessionMessage, SessionStarted
from bcd_core.tuning.session import prepare_model, settings_of_session
from bcd_core.tuning.settings import TuneSettings
from bcd_core.untuned import measure_untuned
from bcd_gui.cluster_model import COLUMNS, ROLE_ITEM, ClusterTreeModel
from bcd_gui.dialogs import show_error
from bcd_gui.jobs import BackgroundJob, TuneWorker
from bcd_gui.panels import LogPanel, OverviewPanel, ProvenancePanel, QtLogHandler, SessionsPanel, SettingsPanel
from bcd_gui.paths import SAMPLE_MODEL, icon
from bcd_gui.plots import CostModelPlot, ModelLatencyPlot, TaskCurvesPlot, restyle
from bcd_gui.theme import THEME_CHOICES, apply_theme

log = logging.getLogger("bcd.gui")
MAX_RECENT = 8
GIL_SWITCH_INTERVAL_S = 0.001
COLUMN_WIDTHS_EM = {
    "Task": 22,
    "Trials": 5,
    "Best": 6,
    "Speedup": 5.5,
    "Status": 6.5,
    "Origin": 6,
    "Weight": 5,
    "FLOPs": 5.5,
    "Shapes": 16,
    "Key": 12,
}
DEFAULT_RUNS_DIR = Path("runs")  # the same default as `bcd tune`, so both see the same records


class MainWindow(QMainWindow):
    modelOpened = Signal(object)  # the preview or stored SessionSnapshot
    snapshotShown = Signal(object)
    tuneFinished = Signal(object)  # final status (str) or the exception
    exportFinished = Signal(object)  # ExportResult / ReportFiles / int (records written)
    errorShown = Signal(str)

    def __init__(self, db_path: str | Path | None = None, settings: QSettings | None = None) -> None:
        super().__init__()
        self.setWindowTitle("bcd: Bayesian Code Diffusion tuner")
        self.setWindowIcon(icon("app"))
        self.setAcceptDrops(True)
        self.qsettings = settings or QSettings("bcd", "bcd-gui")
        self.fixed_db = Path(db_path) if db_path else None
        self.db_path: Path | None = self.fixed_db
        self.model_path: Path | None = None
        self.model_hash: str | None = None
        self.reader: RecordStore | None = None
        self.snapshot: SessionSnapshot | None = None
        self.untuned: dict[int, float] = {}
        self.worker: TuneWorker | None = None
        self.jobs: list[BackgroundJob] = []
        self.colors = apply_theme(QApplication.instance(), self.theme_choice())  # type: ignore[arg-type]
        self._tune_started_at: float | None = None
        self._last_event: Any = None
        self._baselines: dict[tuple[str, int], Baseline | None] = {}
        self.ask_before_quitting = True  # a running tune is stopped (saved) only if the user agrees
        # The tuner thread runs Python too (search callbacks, cost model, records). With the
        # default 5 ms switch interval every paint (a Python call per cell) can wait 5 ms per
        # call for the GIL; 1 ms keeps the window responsive at a small cost to the tuner.
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)

        self._build_central()
        self._build_docks()
        self._build_actions()
        self._build_menus_and_toolbar()
        self._build_status_bar()
        self._attach_log()
        self._restore_layout()
        self._update_actions()
        self._clock = QTimer(self)  # elapsed/ETA tick between rounds
        self._clock.timeout.connect(self._update_status)
        self._clock.start(1000)

    # -- construction ---------------------------------------------------------------------
    def _build_central(self) -> None:
        self.tree_model = ClusterTreeModel(self)
        self.tree_model.priorityRequested.connect(self.request_priority)
        self.tree_model.moveRequested.connect(self.request_move)
        self.tree = QTreeView()
        self.tree.setObjectName("clusterTree")
        self.tree.setModel(self.tree_model)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.tree.setDragEnabled(True)
        self.tree.setAcceptDrops(True)
        self.tree.setDropIndicatorShown(True)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        # Interactive, not ResizeToContents: measuring contents calls data() for every row on
        # every update, and each call needs the GIL that the tuner thread is using.
        header = self.tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.tree.selectionModel().selectionChanged.connect(self._selection_changed)
        self._resize_columns()

        self.latency_plot = ModelLatencyPlot(self.colors)
        self.task_plot = TaskCurvesPlot(self.colors)
        self.cost_plot = CostModelPlot(self.colors)
        self.plot_tabs = QTabWidget()
        self.plot_tabs.addTab(self.task_plot, "Tasks")
        self.plot_tabs.addTab(self.cost_plot, "Cost model")
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.latency_plot)
        right.addWidget(self.plot_tabs)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.tree)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([640, 440])

        self.welcome = QWidget()
        layout = QVBoxLayout(self.welcome)
        layout.addStretch()
        title = QLabel(
            "<h2>Open an ONNX model to tune</h2>"
            "<p>File &gt; Open (Ctrl+O), drop a file here, or start with the bundled sample.</p>"
        )
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        row = QHBoxLayout()
        row.addStretch()
        self.sample_button = QPushButton(icon("tune"), f"Open the sample model ({SAMPLE_MODEL.name})")
        self.sample_button.clicked.connect(lambda: self.open_model(SAMPLE_MODEL))
        open_button = QPushButton(icon("open"), "Open...")
        open_button.clicked.connect(self.choose_model)
        row.addWidget(self.sample_button)
        row.addWidget(open_button)
        row.addStretch()
        layout.addLayout(row)
        layout.addStretch()
        self.pages = QStackedWidget()
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.splitter)
        self.setCentralWidget(self.pages)

    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_docks(self) -> None:
        self.overview = OverviewPanel()
        self.settings_panel = SettingsPanel()
        model_page = QWidget()
        layout = QVBoxLayout(model_page)
        layout.addWidget(self.overview)
        layout.addWidget(QLabel("<b>Settings</b>"))
        layout.addWidget(self.settings_panel)
        layout.addStretch()
        self.model_dock = self._dock("Model", "modelDock", model_page, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.provenance = ProvenancePanel()
        self.provenance_dock = self._dock(
            "Diffusion provenance", "provenanceDock", self.provenance, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.sessions = SessionsPanel()
        self.sessions.openRequested.connect(self.show_session)
        self.sessions.resumeRequested.connect(self.resume_session)
        self.sessions_dock = self._dock(
            "Sessions", "sessionsDock", self.sessions, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.log_panel = LogPanel()
        self.log_dock = self._dock("Log", "logDock", self.log_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.sessions_dock, self.log_dock)
        self.sessions_dock.raise_()
        self.resizeDocks([self.sessions_dock], [170], Qt.Orientation.Vertical)
        self.resizeDocks([self.model_dock], [330], Qt.Orientation.Horizontal)

    def _action(self, text: str, slot: Any, shortcut: Any = None, icon_name: str | None = None) -> QAction:
        action = QAction(text, self)
        if icon_name:
            action.setIcon(icon(icon_name))
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _build_actions(self) -> None:
        a = self._action
        self.open_action = a("&Open model...", self.choose_model, QKeySequence.StandardKey.Open, "open")
        self.sample_action = a("Open &sample model", lambda: self.open_model(SAMPLE_MODEL))
        self.export_module_action = a("Export compiled &module (.so)...", self.choose_export_module, "Ctrl+E", "export")
        self.export_report_action = a(
            "Export &report (HTML, CSV, JSON)...", self.choose_export_report, "Ctrl+Shift+E", "report"
        )
        self.export_json_action = a("Export MetaSchedule &JSON database...", self.choose_export_json)
        self.quit_action = a("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.tune_action = a("&Tune", self.start_tune, "Ctrl+R", "tune")
        self.pause_action = a("&Pause", self.toggle_pause, "Space", "pause")
        self.stop_action = a("&Stop", self.stop_tune, "Ctrl+.", "stop")
        self.up_action = a("Move cluster &up", lambda: self.move_selected_cluster(-1), "Ctrl+Up", "up")
        self.down_action = a("Move cluster &down", lambda: self.move_selected_cluster(1), "Ctrl+Down", "down")
        self.budget_action = a("Set &budget...", self.choose_budget, "Ctrl+B")
        self.skip_action = a("S&kip task", self.skip_selected, "Ctrl+K", "skip")
        self.move_action = a("&Move task to cluster...", self.choose_move_target, "Ctrl+M")
        self.singleton_action = a("Make task a s&ingleton", lambda: self.move_selected_task(None))
        self.representative_action = a("Make &representative", self.make_selected_representative, "Ctrl+Shift+R")
        for action in (
            self.up_action,
            self.down_action,
            self.budget_action,
            self.skip_action,
            self.move_action,
            self.singleton_action,
            self.representative_action,
        ):
            self.tree.addAction(action)

    def _build_menus_and_toolbar(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.open_action)
        file_menu.addAction(self.sample_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        file_menu.addSeparator()
        for action in (self.export_module_action, self.export_report_action, self.export_json_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        tune_menu = bar.addMenu("&Tune")
        for action in (self.tune_action, self.pause_action, self.stop_action):
            tune_menu.addAction(action)
        steer = bar.addMenu("&Steer")
        for action in (
            self.up_action,
            self.down_action,
            self.budget_action,
            self.skip_action,
            self.move_action,
            self.singleton_action,
            self.representative_action,
        ):
            steer.addAction(action)
        view = bar.addMenu("&View")
        theme_menu = view.addMenu("&Theme")
        group = QActionGroup(self)
        for choice in THEME_CHOICES:
            action = QAction(choice.capitalize(), self, checkable=True)
            action.setChecked(choice == self.theme_choice())
            action.triggered.connect(lambda _c=False, choice=choice: self.set_theme(choice))
            group.addAction(action)
            theme_menu.addAction(action)
        self.tvm_log_action = QAction("TVM &details in the log", self, checkable=True)
        self.tvm_log_action.setToolTip("MetaSchedule's per-round task tables and info lines")
        self.tvm_log_action.toggled.connect(self._set_tvm_details)
        view.addAction(self.tvm_log_action)
        view.addSeparator()
        for dock in (self.model_dock, self.provenance_dock, self.sessions_dock, self.log_dock):
            view.addAction(dock.toggleViewAction())
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self._action("&About bcd", self.show_about))
        self._refresh_recent_menu()

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for action in (
            self.open_action,
            None,
            self.tune_action,
            self.pause_action,
            self.stop_action,
            None,
            self.up_action,
            self.down_action,
            self.skip_action,
            None,
            self.export_module_action,
            self.export_report_action,
        ):
            if action is None:
                toolbar.addSeparator()
            else:
                toolbar.addAction(action)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda _scheme: self.set_theme(self.theme_choice()))

    def _build_status_bar(self) -> None:
        status = self.statusBar()
        self.status_text = QLabel("Open a model to begin")
        self.trials_label = QLabel("")
        self.elapsed_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        status.addWidget(self.status_text, 1)
        for widget in (self.trials_label, self.elapsed_label, self.progress):
            status.addPermanentWidget(widget)

    def _attach_log(self) -> None:
        self.log_handler = QtLogHandler()
        self.log_handler.emitter.line.connect(self.log_panel.add_line)
        for name in ("bcd", "tvm"):
            logging.getLogger(name).addHandler(self.log_handler)
        bcd_logger = logging.getLogger("bcd")
        if bcd_logger.getEffectiveLevel() > logging.INFO:
            bcd_logger.setLevel(logging.INFO)
        self._set_tvm_details(False)

    @staticmethod
    def _set_tvm_details(on: bool) -> None:
        # MetaSchedule logs whole programs and task tables at INFO (bcd.ms.* per task): useful
        # when debugging a schedule, noise otherwise.
        for name in ("tvm", "bcd.ms"):
            logging.getLogger(name).setLevel(logging.INFO if on else logging.WARNING)

    def _restore_layout(self) -> None:
        geometry = self.qsettings.value("geometry")
        state = self.qsettings.value("windowState")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 860)
        if isinstance(state, QByteArray):
            self.restoreState(state)

    # -- settings: theme, recent files ------------------------------------------------------
    def theme_choice(self) -> str:
        return str(self.qsettings.value("theme", "system"))

    def set_theme(self, choice: str) -> None:
        self.qsettings.setValue("theme", choice)
        self.colors = apply_theme(QApplication.instance(), choice)  # type: ignore[arg-type]
        for widget in (
            self.latency_plot.widget,
            self.task_plot.widget,
            self.cost_plot.accuracy,
            self.cost_plot.scatter_plot,
        ):
            restyle(widget, self.colors)

    def recent_files(self) -> list[str]:
        value = self.qsettings.value("recentFiles", [])
        items = [value] if isinstance(value, str) else list(value or [])
        return [item for item in items if item]

    def _remember(self, path: Path) -> None:
        items = [str(path)] + [p for p in self.recent_files() if p != str(path)]
        self.qsettings.setValue("recentFiles", items[:MAX_RECENT])
        self._refresh_recent_menu()

    def _refresh_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = self.recent_files()
        for number, item in enumerate(items, start=1):
            action = self.recent_menu.addAction(f"&{number} {Path(item).name}  ({Path(item).parent})")
            action.triggered.connect(lambda _c=False, item=item: self.open_model(item))
        self.recent_menu.setEnabled(bool(items))

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.worker is not None and self.ask_before_quitting:
            answer = QMessageBox.question(
                self,
                "Tuning is running",
                "Stop tuning after the batch in flight and quit? Everything measured is "
                "saved; reopen the model to resume.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
        if self.worker is not None:
            self.worker.control.stop()
            self.worker.control.resume()
            self.worker.thread.wait()
        for job in list(self.jobs):  # short jobs (timing, export): let them finish cleanly
            job.wait()
        self.qsettings.setValue("geometry", self.saveGeometry())
        self.qsettings.setValue("windowState", self.saveState())
        for logger in ("bcd", "tvm"):
            logging.getLogger(logger).removeHandler(self.log_handler)
        super().closeEvent(event)

    # -- errors and jobs ------------------------------------------------------------------
    def report_error(self, error: BaseException, doing: str) -> None:
        log.error("cannot %s: %s", doing, error)
        box = show_error(self, error, doing)
        self.status_text.setText(f"Cannot {doing}: {str(error).splitlines()[0] if str(error) else error}")
        self.errorShown.emit(box.text())

    def run_job(self, name: str, work: Any, on_success: Any, doing: str) -> BackgroundJob:
        job = BackgroundJob(name, work, self)
        self.jobs.append(job)
        job.progressed.connect(self._job_progress)
        job.succeeded.connect(on_success)
        job.failed.connect(lambda err: self.report_error(err, doing))
        job.finished.connect(lambda: self._job_done(job))
        self.status_text.setText(f"{name}...")
        self.progress.setRange(0, 0)  # busy until the first progress report
        job.start()
        return job

    def _job_progress(self, step: int, total: int, text: str) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(step)
        self.status_text.setText(text)

    def _job_done(self, job: BackgroundJob) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
        if self.worker is None:
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
        self._update_actions()

    def busy(self) -> bool:
        return bool(self.jobs) or self.worker is not None

    # -- opening a model ------------------------------------------------------------------
    def choose_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open an ONNX model", str(Path.cwd()), "ONNX models (*.onnx);;All files (*)"
        )
        if path:
            self.open_model(path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.open_model(files[0])

    def open_model(self, path: str | Path) -> None:
        if self.worker is not None:
            self.report_error(BcdError("a tune is running; stop it before opening another model"), "open the model")
            return
        path = Path(path)
        try:
            spec = self.settings_panel.target.text()
            target = parse_target(spec)
            shapes = self.settings_panel.shape_overrides()
        except BcdError as err:
            self.report_error(err, "open the model")
            return
        mode = self.settings_panel.cluster_mode.currentText()

        def work(progress: Any) -> Any:
            progress(0, 2, f"importing {path.name} and extracting tuning tasks")
            return prepare_model(path, target, shapes, mode)

        self.run_job(
            f"Opening {path.name}", work, lambda prepared: self._model_prepared(path, prepared), "open the model"
        )

    def _model_prepared(self, path: Path, prepared: Any) -> None:
        self.model_path = path.resolve()
        self.model_hash = prepared.imported.sha256
        self._remember(self.model_path)
        self.db_path = self.fixed_db or DEFAULT_RUNS_DIR / f"{path.stem}.db"
        self.setWindowTitle(f"{path.name} - bcd   [{self.db_path}]")
        self.untuned = {}
        self.tree_model.set_untuned({})
        if not self._open_reader():
            return
        settings = self.settings_panel.settings()
        preview = preview_snapshot(
            path.name, settings.strategy, prepared.tasks, prepared.clusters, settings.trials_per_task
        )
        stored = [s for s in self.reader.sessions() if s["model_hash"] == self.model_hash] if self.reader else []
        self.pages.setCurrentWidget(self.splitter)
        if stored:
            self.show_session(stored[-1]["id"])
        else:
            self.show_snapshot(preview)
        self.tree.expandAll()
        self._resize_columns()
        self.status_text.setText(
            f"{path.name}: {len(prepared.tasks)} tasks in {len(prepared.clusters)} clusters "
            f"(prepared in {prepared.prepare_s:.1f} s). Press Ctrl+R to tune."
        )
        self.modelOpened.emit(self.snapshot)
        self.run_job(
            "Timing the untuned tasks",
            lambda progress: measure_untuned(prepared.tasks, prepared.target, progress),
            self._untuned_measured,
            "time the untuned model",
        )

    def _untuned_measured(self, untuned: dict[int, float]) -> None:
        self.untuned = untuned
        self.tree_model.set_untuned(untuned)
        if self.snapshot is not None:
            self.overview.show_snapshot(self.snapshot, self.untuned)
        if self.worker is None:
            self.status_text.setText("Ready. Press Ctrl+R to tune.")

    def _open_reader(self) -> bool:
        if self.reader is not None and self.reader.path == self.db_path:
            return True
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        try:
            self.reader = RecordStore(self.db_path)  # type: ignore[arg-type]
        except BcdError as err:
            self.report_error(err, "open the records database")
            return False
        self.sessions.show_sessions(self.reader.sessions())
        return True

    def _resize_columns(self) -> None:
        """Widths from the font, not from the contents: measuring contents calls data() for
        every cell, and each call waits for the GIL while the tuner thread runs Python."""
        em = self.tree.fontMetrics().horizontalAdvance("M")
        for column, name in enumerate(COLUMNS):
            self.tree.setColumnWidth(column, int(COLUMN_WIDTHS_EM.get(name, 8) * em))

    # -- showing a session ----------------------------------------------------------------
    def show_session(self, session_id: int) -> None:
        if self.reader is None:
            return
        try:
            self.show_snapshot(load_snapshot(self.reader, session_id))
        except BcdError as err:
            self.report_error(err, "open the session")
            return
        self.pages.setCurrentWidget(self.splitter)
        self.tree.expandAll()

    def show_snapshot(self, snapshot: SessionSnapshot) -> None:
        self.snapshot = snapshot
        self.tree_model.set_snapshot(snapshot)
        if self.worker is not None:
            self.tree_model.set_pending(self.worker.control.pending())
        self.overview.show_snapshot(snapshot, self.untuned)
        baseline = self._baseline(snapshot)
        self.latency_plot.update_view(snapshot, baseline)
        predictions = latest_round_predictions(self.reader, snapshot.session_id) if self.reader else []
        self.cost_plot.update_view(snapshot.metrics, predictions)
        self._refresh_task_views()
        self._update_status()
        self.snapshotShown.emit(snapshot)

    def _baseline(self, snapshot: SessionSnapshot) -> Baseline | None:
        """The stock run to compare with; looked up once per session (it may sit in another store)."""
        if self.reader is None or not snapshot.session_id:
            return None
        key = (str(self.reader.path), snapshot.session_id)
        if key not in self._baselines:
            self._baselines[key] = baseline_for(self.reader, snapshot)
        found = self._baselines[key]
        if found is None:
            return None
        return replace(found, reached_at_s=first_time_at_or_below(snapshot.timeline, found.final_latency_s))

    def selected_items(self) -> list[tuple[str, Any]]:
        items = []
        for index in self.tree.selectionModel().selectedRows(0):
            item = index.data(ROLE_ITEM)
            if item is not None:
                items.append(tuple(item))
        return items

    def selected_tasks(self) -> list[int]:
        return [value for kind, value in self.selected_items() if kind == "task"]

    def selected_cluster(self) -> str | None:
        for kind, value in self.selected_items():
            if kind == "cluster":
                return value
            if kind == "task" and self.snapshot is not None:
                return self.snapshot.task(value).cluster_key
        return None

    def select_item(self, item: tuple[str, Any]) -> None:
        index = self.tree_model.index_of(item)
        self.tree.selectionModel().select(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.tree.setCurrentIndex(index)

    def _selection_changed(self, *_args: Any) -> None:
        self._refresh_task_views()
        self._update_actions()

    def _refresh_task_views(self) -> None:
        snapshot = self.snapshot
        if snapshot is None:
            return
        tasks = self.selected_tasks()
        if not tasks:
            for cluster in [c for k, c in self.selected_items() if k == "cluster"]:
                tasks += next((c.members for c in snapshot.clusters if c.key == cluster), [])
        if not tasks:  # nothing selected: the tasks that weigh most
            ranked = sorted((t for t in snapshot.tasks if t.best_s), key=lambda t: -(t.weight * (t.best_s or 0)))
            tasks = [t.index for t in ranked[:4]]
        curves = {}
        if self.reader is not None and snapshot.session_id:
            for index in tasks[: TaskCurvesPlot.MAX_CURVES]:
                task = snapshot.task(index)
                curves[task.name] = task_best_curve(self.reader, snapshot.session_id, task.row_id)
        self.task_plot.show_curves(curves)
        chosen = self.selected_tasks()
        if chosen and self.reader is not None and snapshot.session_id:
            self.provenance.show_provenance(provenance_of(self.reader, snapshot, chosen[0]))
        else:
            self.provenance.show_provenance(None)

    # -- tuning ---------------------------------------------------------------------------
    def start_tune(
        self,
        settings: TuneSettings | None = None,
        target_spec: str | None = None,
        new_session: bool | None = None,
        resume_session_id: int | None = None,
    ) -> None:
        if self.worker is not None or self.model_path is None or self.db_path is None:
            return
        try:
            settings = settings or self.settings_panel.settings()
            target_spec = target_spec if target_spec is not None else self.settings_panel.target.text()
            target = parse_target(target_spec)
        except (BcdError, ValueError) as err:
            self.report_error(err, "start tuning")
            return
        if new_session is None and self.reader is not None and self.model_hash:
            # A finished session with the same settings is not re-tuned: start a fresh one.
            existing = self.reader.find_session(
                self.model_hash, target_key(target), settings.strategy, settings.identity()
            )
            new_session = existing is not None and existing["status"] == "completed"
        self.worker = TuneWorker(
            self.model_path, self.db_path, target_spec, settings, bool(new_session), resume_session_id
        )
        self.worker.event.connect(self._on_event)
        self.worker.snapshot.connect(self._on_worker_snapshot)
        # A bound method, not a lambda: the worker lives in its own thread, so a lambda would run
        # there and build the error dialog off the GUI thread (Qt refuses to parent it).
        self.worker.failed.connect(self._tune_failed)
        self.worker.failed.connect(self.tuneFinished.emit)
        self.worker.finished.connect(self._tune_finished)
        self._tune_started_at = time.monotonic()
        self._last_event = None
        self.settings_panel.set_enabled_for_tuning(False)
        self.status_text.setText(
            f"Tuning {self.model_path.name} with {settings.strategy}: importing and extracting tasks..."
        )
        self.progress.setRange(0, 0)
        self.worker.start()
        self._update_actions()

    def resume_session(self, session_id: int) -> None:
        if self.reader is None:
            return
        session = self.reader.session(session_id)
        if self.model_path is None or session["model_hash"] != self.model_hash:
            self.report_error(
                BcdError(f"session {session_id} tuned {session['model_name']}; open that model first to resume it"),
                "resume the session",
            )
            return
        # The session's own settings and target; the engine refuses, with a dialog, if the
        # model, target or tool version no longer match.
        try:  # measured where the panel says now (here or remote): not part of the identity
            stored = settings_of_session(session, TuneSettings(**self.settings_panel.runner_settings()))
        except ValueError as err:
            self.report_error(err, "resume the session")
            return
        self.start_tune(stored, session["target"], new_session=False, resume_session_id=session_id)

    def _on_event(self, event: Any) -> None:
        self._last_event = event
        if isinstance(event, SessionStarted):
            verb = "Resuming" if event.resumed else "Started"
            self.status_text.setText(
                f"{verb} session {event.session_id}: {event.num_tasks} tasks, {event.trials_total} trials"
            )
        elif isinstance(event, RoundFinished):
            paused = self.worker is not None and self.worker.control.paused
            state = "Pausing after this batch" if paused else "Tuning"
            self.status_text.setText(
                f"{state}: round {event.round}, {event.task_name}: best {format_latency(event.best_task_latency_s)}; "
                f"model {format_latency(event.estimated_latency_s)}"
            )
        elif isinstance(event, SessionMessage):
            log.info("session %s: %s", event.kind, event.message)
            if event.message == "paused" or event.kind == "paused":
                self.status_text.setText("Paused. Press Space to resume.")
            elif event.kind in ("fallback", "warning"):
                self.status_text.setText(event.message)
        elif isinstance(event, SessionFinished):
            self.status_text.setText(
                f"Session {event.session_id} {event.status}: {event.trials_done} trials, model "
                f"{format_latency(event.estimated_latency_s)} after {format_duration(event.elapsed_s)}"
            )
        self._update_status()

    def _on_worker_snapshot(self, snapshot: SessionSnapshot) -> None:
        if self.pages.currentWidget() is not self.splitter:
            self.pages.setCurrentWidget(self.splitter)
        first = self.snapshot is None or self.snapshot.session_id != snapshot.session_id
        self.show_snapshot(snapshot)
        if first:
            self.tree.expandAll()
        if self.reader is not None:  # the running session's trials and estimate, too
            self.sessions.show_sessions(self.reader.sessions())

    def _tune_failed(self, error: BaseException) -> None:
        self.report_error(error, "tune")

    def _tune_finished(self) -> None:
        worker = self.worker
        self.worker = None
        self.settings_panel.set_enabled_for_tuning(True)
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        if self.reader is not None:
            self.sessions.show_sessions(self.reader.sessions())
            if worker is not None and worker.session_id is not None:
                self.show_session(worker.session_id)
        self._update_actions()
        event = self._last_event
        self.tuneFinished.emit(event.status if isinstance(event, SessionFinished) else None)

    def toggle_pause(self) -> None:
        if self.worker is None:
            return
        control = self.worker.control
        if control.paused:
            control.resume()
            self.status_text.setText("Resumed")
            self.pause_action.setText("&Pause")
            self.pause_action.setIcon(icon("pause"))
        else:
            control.pause()
            self.status_text.setText("Pausing after the batch in flight (nothing measured is lost)...")
            self.pause_action.setText("&Resume")
            self.pause_action.setIcon(icon("tune"))

    def stop_tune(self) -> None:
        if self.worker is None:
            return
        self.worker.control.stop()
        self.worker.control.resume()  # a paused session must wake up to stop
        self.status_text.setText("Stopping after the batch in flight; everything measured is saved...")

    # -- steering (through the engine's control API; applied at the next round) ------------
    def _steer(self, describe: str, request: Any) -> None:
        if self.worker is None:
            self.report_error(BcdError("steering needs a running tune; press Ctrl+R first"), describe)
            return
        request()
        self.tree_model.set_pending(self.worker.control.pending())
        self.status_text.setText(f"{describe}: applies at the next round")
        log.info("requested: %s (applies at the next round)", describe)

    def request_priority(self, order: list[str]) -> None:
        self._steer("reorder clusters", lambda: self.worker.control.set_cluster_priority(order))  # type: ignore[union-attr]

    def request_move(self, task_index: int, cluster_key: str | None) -> None:
        self._steer("move a task", lambda: self.worker.control.move_task(task_index, cluster_key))  # type: ignore[union-attr]

    def move_selected_cluster(self, offset: int) -> None:
        key = self.selected_cluster()
        if key is None or self.snapshot is None:
            return
        keys = [c.key for c in self.snapshot.clusters]
        position = keys.index(key)
        target = max(0, min(len(keys) - 1, position + offset))
        if target != position:
            keys.insert(target, keys.pop(position))
            self.request_priority(keys)

    def choose_budget(self) -> None:
        if self.snapshot is None:
            return
        tasks, cluster = self.selected_tasks(), self.selected_cluster()
        cap = self.snapshot.task(tasks[0]).cap if tasks else None
        current = cap if cap is not None else self.settings_panel.trials_per_task.value()
        what = f"{len(tasks)} task(s)" if tasks else f"every task of cluster {cluster}"
        trials, ok = QInputDialog.getInt(self, "Trial budget", f"Trials for {what}:", current, 0, 1_000_000)
        if ok:
            self.set_budget(trials)

    def set_budget(self, trials: int) -> None:
        tasks, cluster = self.selected_tasks(), self.selected_cluster()
        if tasks:
            for index in tasks:
                self._steer("change a task's budget", lambda i=index: self.worker.control.set_task_budget(i, trials))  # type: ignore[union-attr]
        elif cluster:
            self._steer("change a cluster's budget", lambda: self.worker.control.set_cluster_budget(cluster, trials))  # type: ignore[union-attr]

    def skip_selected(self) -> None:
        for index in self.selected_tasks():
            self._steer("skip a task", lambda i=index: self.worker.control.skip_task(i))  # type: ignore[union-attr]

    def choose_move_target(self) -> None:
        if self.snapshot is None or not self.selected_tasks():
            return
        labels = [f"{c.position + 1}. {c.key}" for c in self.snapshot.clusters]
        choice, ok = QInputDialog.getItem(self, "Move task", "Move to cluster:", labels, 0, False)
        if ok:
            self.move_selected_task(self.snapshot.clusters[labels.index(choice)].key)

    def move_selected_task(self, cluster_key: str | None) -> None:
        for index in self.selected_tasks():
            self.request_move(index, cluster_key)

    def make_selected_representative(self) -> None:
        tasks = self.selected_tasks()
        if tasks and self.snapshot is not None:
            task = self.snapshot.task(tasks[0])
            self._steer(
                "choose a representative", lambda: self.worker.control.set_representative(task.cluster_key, task.index)
            )  # type: ignore[union-attr]

    # -- export ---------------------------------------------------------------------------
    def _export_session_id(self) -> int | None:
        if self.snapshot is None or not self.snapshot.session_id:
            self.report_error(BcdError("nothing is tuned yet: tune the model (Ctrl+R) or open a session"), "export")
            return None
        return self.snapshot.session_id

    def choose_export_module(self) -> None:
        if self._export_session_id() is None or self.model_path is None:
            return
        default = str(Path.cwd() / f"{self.model_path.stem}-tuned.so")
        path, _ = QFileDialog.getSaveFileName(self, "Export compiled module", default, "Shared library (*.so)")
        if path:
            self.export_module(path)

    def export_module(self, path: str | Path, check: bool = True) -> None:
        session_id = self._export_session_id()
        if session_id is None or self.db_path is None:
            return
        db_path, model = self.db_path, self.model_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)
            try:
                return export_tuned_session(store, session_id, path, model, check=check, progress=progress)
            finally:
                store.close()

        self.run_job("Exporting the compiled module", work, self._module_exported, "export the module")

    def _module_exported(self, result: Any) -> None:
        text = f"Exported {result.path}"
        check = result.check
        if check is not None:
            text += f"\nTVM module: {check.tvm.median_ms:.3f} ms (median of {check.tvm.runs} runs)"
            if check.onnxruntime is not None:
                verdict = "match" if check.matches else "DIFFER"
                text += (
                    f"\nonnxruntime: {check.onnxruntime.median_ms:.3f} ms\nOutputs {verdict} onnxruntime's "
                    f"(max abs error {check.max_abs_error:.3g})"
                )
        log.info(text.replace("\n", "; "))
        self.status_text.setText(text.splitlines()[0])
        box = QMessageBox(QMessageBox.Icon.Information, "Module exported", text, QMessageBox.StandardButton.Ok, self)
        box.open()
        self.exportFinished.emit(result)

    def choose_export_report(self) -> None:
        if self._export_session_id() is None:
            return
        folder = QFileDialog.getExistingDirectory(self, "Folder for the report", str(Path.cwd()))
        if folder:
            self.export_report(folder)

    def export_report(self, folder: str | Path) -> None:
        session_id = self._export_session_id()
        if session_id is None or self.db_path is None:
            return
        db_path = self.db_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)
            try:
                return write_report(store, session_id, folder, progress)
            finally:
                store.close()

        def done(files: Any) -> None:
            log.info("report written: %s", files.html)
            self.status_text.setText(f"Report written to {files.html}")
            self.exportFinished.emit(files)

        self.run_job("Writing the report", work, done, "write the report")

    def choose_export_json(self) -> None:
        if self.db_path is None:
            return
        folder = QFileDialog.getExistingDirectory(self, "Folder for the MetaSchedule JSON database", str(Path.cwd()))
        if folder:
            self.export_metaschedule_json(folder)

    def export_metaschedule_json(self, folder: str | Path) -> None:
        db_path = self.db_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)  # type: ignore[arg-type]
            try:
                progress(0, 1, "writing the MetaSchedule JSON database")
                return export_json(store, folder)
            finally:
                store.close()

        def done(count: int) -> None:
            log.info("wrote %d records to %s", count, folder)
            self.status_text.setText(f"Wrote {count} records to {folder}")
            self.exportFinished.emit(count)

        self.run_job("Exporting MetaSchedule JSON", work, done, "export the JSON database")

    # -- status ---------------------------------------------------------------------------
    def _update_status(self) -> None:
        snapshot = self.snapshot
        if snapshot is None:
            return
        done, total = snapshot.trials_done, max(1, snapshot.trials_total)
        event = self._last_event
        if isinstance(event, RoundFinished) and self.worker is not None:
            done, total = event.trials_done, max(1, event.trials_total)
        failed = f" ({snapshot.failed_trials} failed)" if snapshot.failed_trials else ""
        self.trials_label.setText(f"{done}/{total} trials{failed}")
        elapsed = float(snapshot.session.get("elapsed_s") or 0.0)
        if self.worker is not None and isinstance(event, RoundFinished):
            elapsed = event.elapsed_s
        eta = elapsed / done * (total - done) if done and self.worker is not None else None
        self.elapsed_label.setText(
            f"elapsed {format_duration(elapsed)}" + (f"  ETA {format_duration(eta)}" if eta else "")
        )
        if not self.jobs or self.worker is not None:
            if self.worker is not None and done == 0:
                self.progress.setRange(0, 0)
            else:
                self.progress.setRange(0, total)
                self.progress.setValue(min(done, total))

    def _update_actions(self) -> None:
        has_model = self.model_path is not None
        tuning = self.worker is not None
        tuned = self.snapshot is not None and bool(self.snapshot.session_id)
        self.tune_action.setEnabled(has_model and not tuning)
        self.pause_action.setEnabled(tuning)
        self.stop_action.setEnabled(tuning)
        for action in (
            self.up_action,
            self.down_action,
            self.budget_action,
            self.skip_action,
            self.move_action,
            self.singleton_action,
            self.representative_action,
        ):
            action.setEnabled(tuning)
        self.export_module_action.setEnabled(tuned and not tuning)
        self.export_report_action.setEnabled(tuned)
        self.export_json_action.setEnabled(tuned)
        self.open_action.setEnabled(not tuning)
        if not tuning:
            self.pause_action.setText("&Pause")
            self.pause_action.setIcon(icon("pause"))

    def show_about(self) -> None:
        QMessageBox.about(
            self,
            "About bcd",
            f"<b>bcd {__version__}</b><br>Auto-tunes ONNX models with TVM MetaSchedule and Bayesian Code Diffusion."
            "<br>Every measurement is kept in SQLite; the same engine runs headless as <code>bcd</code>.",
        )
