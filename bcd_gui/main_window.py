"""The dashboard window: open a model, tune it, watch it, steer it, export it.

MainWindow composes the parts and is their public face: the central area (workspace.py), the
docks (docks.py), actions, menus and toolbar (actions.py, menus.py), the status bar
(status.py), and controllers for opening models, sessions, tuning, steering, exporting and
background jobs (*_controller.py, jobs.py). It holds the state they share: the open
model, its records store, the snapshot shown and the running tune.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import QApplication, QMainWindow

from bcd_core.records.store import RecordStore
from bcd_core.session_view import SessionSnapshot
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.settings import TuneSettings
from bcd_gui import dialogs
from bcd_gui.actions import WindowActions
from bcd_gui.docks import Docks, attach_log, detach_log, set_tvm_details
from bcd_gui.export_controller import ExportController
from bcd_gui.jobs import BackgroundJob, JobRunner
from bcd_gui.live_tune import LiveTune
from bcd_gui.menus import RecentFiles, build_menu_bar, build_toolbar
from bcd_gui.model_controller import ModelController
from bcd_gui.paths import SAMPLE_MODEL, icon
from bcd_gui.preferences import Preferences
from bcd_gui.session_controller import SessionController
from bcd_gui.status import StatusLine
from bcd_gui.steer_controller import SteerController
from bcd_gui.theme import apply_theme
from bcd_gui.tune_controller import TuneController
from bcd_gui.workspace import Workspace

log = logging.getLogger("bcd.gui")
GIL_SWITCH_INTERVAL_S = 0.001
MIN_WIDTH, MIN_HEIGHT = 1024, 700


STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


class MainWindow(QMainWindow):
    """The dashboard's main window, on the records store `db_path` (default: runs/MODEL.db per
    model) and remembering its choices in `settings` (default: the user's bcd-gui settings)."""

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
        self.preferences = Preferences(self.qsettings)
        self.fixed_db = Path(db_path) if db_path else None
        self.db_path: Path | None = self.fixed_db
        self.model_path: Path | None = None
        self.model_hash: str | None = None
        self.reader: RecordStore | None = None
        self.snapshot: SessionSnapshot | None = None
        self.untuned: dict[str, float] = {}
        self.reference_s: float | None = None  # onnxruntime on this machine, for the open model
        self.worker: LiveTune | None = None  # the tune followed live (launched here or attached)
        self.pending_control = TuningControl()
        self.jobs: list[BackgroundJob] = []
        self.closed = False  # set once the window has accepted to close
        self.colors = apply_theme(QApplication.instance(), self.theme_choice())  # type: ignore[arg-type]
        self.ask_before_quitting = True  # closing while tuning asks whether to keep the tune running
        # Background jobs (import, timing, the store watcher) run Python too. With the default
        # 5 ms switch interval every paint (a Python call per cell) can wait 5 ms per call for
        # the GIL; 1 ms keeps the window responsive.
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)

        self.job_runner = JobRunner(self)
        self.models = ModelController(self)
        self.session_view = SessionController(self)
        self.tuning = TuneController(self)
        self.steering = SteerController(self)
        self.exporting = ExportController(self)
        self._build_ui()
        self._connect()
        self.setMinimumSize(MIN_WIDTH, MIN_HEIGHT)  # the layout holds from here up (tests/bcd_gui/test_layout.py)
        if not self.preferences.restore_layout(self):
            QTimer.singleShot(0, lambda: self.docks.fit_left(self))  # once shown, at its size
        remembered = self.preferences.trials_per_task()
        if remembered:
            self.settings_panel.trials_per_task.setValue(remembered)
        self.update_actions()
        self._clock = QTimer(self)  # elapsed/ETA tick between rounds
        self._clock.timeout.connect(self.update_status)
        self._clock.start(1000)

    # -- construction ---------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.workspace = ws = Workspace(self, self.colors, lambda: self.open_model(SAMPLE_MODEL), self.choose_model)
        self.setCentralWidget(ws.pages)
        self.docks = docks = Docks(self)
        self.window_actions = WindowActions(self, self)
        for action in self.window_actions.steering:
            ws.tree.addAction(action)
        self.recent_menu = build_menu_bar(self, self.window_actions, docks.all(), self.theme_choice(), self.set_theme)
        self.recent = RecentFiles(self.recent_menu, self.preferences, self.open_recent)
        self.recent.refresh()
        build_toolbar(self, self.window_actions)
        self.status_line = StatusLine(self.statusBar())
        self.log_handler = attach_log(docks.log_panel)
        # The widgets controllers and tests reach directly, under their long-standing names.
        self.tree, self.tree_model, self.pages, self.splitter = ws.tree, ws.tree_model, ws.pages, ws.splitter
        self.latency_plot, self.task_plot, self.cost_plot = ws.latency_plot, ws.task_plot, ws.cost_plot
        self.overview, self.settings_panel = docks.overview, docks.settings_panel
        self.provenance, self.sessions, self.log_panel = docks.provenance, docks.sessions, docks.log_panel
        self.status_text, self.trials_label = self.status_line.status_text, self.status_line.trials_label
        self.elapsed_label, self.progress = self.status_line.elapsed_label, self.status_line.progress

    def _connect(self) -> None:
        self.tree_model.priorityRequested.connect(self.request_priority)
        self.tree_model.moveRequested.connect(self.request_move)
        self.tree.selectionModel().selectionChanged.connect(self._selection_changed)
        self.settings_panel.trials_per_task.valueChanged.connect(self.refresh_preview)
        self.settings_panel.strategy.currentTextChanged.connect(self.refresh_preview)
        self.sessions.openRequested.connect(self.show_session)
        self.sessions.resumeRequested.connect(self.resume_session)
        self.sessions.overlayRequested.connect(self.session_view.toggle_overlay)
        self.window_actions.tvm_log_action.toggled.connect(set_tvm_details)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda _scheme: self.set_theme(self.theme_choice()))

    # -- settings: theme, recent files ----------------------------------------------------
    def theme_choice(self) -> str:
        return self.preferences.theme()

    def set_theme(self, choice: str) -> None:
        self.preferences.set_theme(choice)
        self.colors = apply_theme(QApplication.instance(), choice)  # type: ignore[arg-type]
        self.workspace.restyle(self.colors)

    def recent_files(self) -> list[str]:
        return self.preferences.recent_files()

    # -- window events --------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """A tune this window launched is stopped after its batch in flight, or left running
        if the user says so (reopen the store to follow it again); an attached one runs on."""
        choice = dialogs.KEEP_TUNING if self.worker is not None and self.worker.attached else dialogs.STOP_TUNING
        if self.worker is not None and not self.worker.attached and self.ask_before_quitting:
            choice = dialogs.ask_keep_or_stop_tuning(self)
        if choice is None:
            event.ignore()
            return
        if choice == dialogs.KEEP_TUNING:
            self.tuning.detach()
        else:
            self.tuning.stop_and_wait()
        self.closed = True  # no new background job from here on
        for job in list(self.jobs):  # short jobs (timing, export): let them finish cleanly
            job.wait()
        self.preferences.save_layout(self)
        self.preferences.set_trials_per_task(self.settings_panel.trials_per_task.value())
        detach_log(self.log_handler)
        super().closeEvent(event)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.open_model(files[0])

    # -- shared services: errors, jobs, enabled actions, status bar -----------------------
    def report_error(self, error: BaseException, doing: str) -> None:
        """Log it, show a non-blocking dialog saying what to do, and say it in the status bar."""
        log.error("cannot %s: %s", doing, error)
        box = dialogs.show_error(self, error, doing)
        self.status_text.setText(f"Cannot {doing}: {str(error).splitlines()[0] if str(error) else error}")
        self.errorShown.emit(box.text())

    def run_job(self, name: str, work: Callable[..., Any], on_success: Callable[..., Any], doing: str) -> BackgroundJob:
        return self.job_runner.run_job(name, work, on_success, doing)

    def update_actions(self) -> None:
        tuned = self.snapshot is not None and bool(self.snapshot.session_id)
        self.window_actions.update(has_model=self.model_path is not None, tuning=self.worker is not None, tuned=tuned)

    def update_status(self) -> None:
        tuning, jobs_running = self.worker is not None, bool(self.jobs)
        self.status_line.show_counts(self.snapshot, self.tuning.last_event, tuning, jobs_running)

    def show_about(self) -> None:
        dialogs.show_about(self)

    def show_guide(self) -> None:
        dialogs.show_guide(self)

    # -- opening models and showing sessions (model_controller, session_controller) --------
    def choose_model(self) -> None:
        self.models.choose_model()

    def open_model(self, path: str | Path) -> None:
        self.models.open_model(path)

    def open_recent(self, path: str | Path) -> None:
        """A recent file: a records store (opened to show its sessions) or a model."""
        if Path(path).suffix.lower() in STORE_SUFFIXES:
            self.open_store(path)
        else:
            self.open_model(path)

    def open_reader(self) -> bool:
        return self.session_view.open_reader()

    def show_session(self, session_id: int) -> None:
        self.session_view.show_session(session_id)

    def show_pending(self) -> None:
        self.session_view.show_pending()

    def refresh_preview(self, *_args: Any) -> None:
        self.models.refresh_preview()

    def attach(self, session_id: int) -> None:
        self.tuning.attach(session_id)

    def choose_store(self) -> None:
        self.models.choose_store()

    def open_store(self, path: str | Path) -> None:
        self.models.open_store(path)

    def show_snapshot(self, snapshot: SessionSnapshot, staged: bool = False) -> None:
        self.session_view.show_snapshot(snapshot, staged)

    def resume_session(self, session_id: int) -> None:
        self.session_view.resume_session(session_id)

    def _selection_changed(self, *_args: Any) -> None:
        self.session_view.refresh_task_views()
        self.update_actions()

    # -- the tree's selection (workspace) -------------------------------------------------
    def selected_items(self) -> list[tuple[str, Any]]:
        return self.workspace.selected_items()

    def selected_tasks(self) -> list[int]:
        return self.workspace.selected_tasks()

    def selected_cluster(self) -> str | None:
        return self.workspace.selected_cluster(self.snapshot)

    def select_item(self, item: tuple[str, Any]) -> None:
        self.workspace.select_item(item)

    # -- tuning (tune_controller) ---------------------------------------------------------
    def start_tune(
        self,
        settings: TuneSettings | None = None,
        target_spec: str | None = None,
        new_session: bool | None = None,
        resume_session_id: int | None = None,
    ) -> None:
        self.tuning.start_tune(settings, target_spec, new_session, resume_session_id)

    def toggle_pause(self) -> None:
        self.tuning.toggle_pause()

    def stop_tune(self) -> None:
        self.tuning.stop_tune()

    # -- steering (steer_controller; applied at the next round) ---------------------------
    def request_priority(self, order: list[str]) -> None:
        self.steering.request_priority(order)

    def request_move(self, task_index: int, cluster_key: str | None) -> None:
        self.steering.request_move(task_index, cluster_key)

    def move_selected_cluster(self, offset: int) -> None:
        self.steering.move_selected_cluster(offset)

    def choose_budget(self) -> None:
        self.steering.choose_budget()

    def set_budget(self, trials: int) -> None:
        self.steering.set_budget(trials)

    def skip_selected(self) -> None:
        self.steering.skip_selected()

    def unskip_selected(self) -> None:
        self.steering.unskip_selected()

    def choose_move_target(self) -> None:
        self.steering.choose_move_target()

    def move_selected_task(self, cluster_key: str | None) -> None:
        self.steering.move_selected_task(cluster_key)

    def make_selected_representative(self) -> None:
        self.steering.make_selected_representative()

    # -- export (export_controller) -------------------------------------------------------
    def choose_export_module(self) -> None:
        self.exporting.choose_export_module()

    def export_module(self, path: str | Path, check: bool = True) -> None:
        self.exporting.export_module(path, check)

    def choose_export_report(self) -> None:
        self.exporting.choose_export_report()

    def export_report(self, folder: str | Path) -> None:
        self.exporting.export_report(folder)

    def choose_export_json(self) -> None:
        self.exporting.choose_export_json()

    def export_metaschedule_json(self, folder: str | Path) -> None:
        self.exporting.export_metaschedule_json(folder)
