"""What the window's controllers may use of it, and the controllers' common base.

Controllers receive the window as a `WindowHost` instead of importing `main_window`, so no
module imports it back and a controller's needs are written down in one place. The bcd
modules named here are imported for annotations only, so importing this loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from PySide6.QtCore import QThread, SignalInstance
    from PySide6.QtWidgets import QLabel, QProgressBar, QTreeView

    from bcd_core.records.store import RecordStore
    from bcd_core.session_view import SessionSnapshot
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.settings import TuneSettings
    from bcd_gui.actions import WindowActions
    from bcd_gui.cluster_model import ClusterTreeModel
    from bcd_gui.docks import Docks
    from bcd_gui.live_tune import LiveTune
    from bcd_gui.menus import RecentFiles
    from bcd_gui.panels import OverviewPanel, ProvenancePanel, SessionsPanel, SettingsPanel
    from bcd_gui.plots import CostModelPlot, ModelLatencyPlot, TaskCurvesPlot
    from bcd_gui.status import StatusLine
    from bcd_gui.workspace import Workspace


class WindowHost(Protocol):
    """The main window as its controllers see it: the open model and session, the widgets they
    update, and the services they share. Implemented by `MainWindow`, a QMainWindow."""

    # The open model, its records store and what is shown; controllers read and replace these.
    fixed_db: Path | None  # the --db given at start, or None for runs/MODEL.db
    db_path: Path | None
    model_path: Path | None
    model_hash: str | None
    reader: RecordStore | None
    snapshot: SessionSnapshot | None
    untuned: dict[str, float]  # the open model's untuned latency per task name
    reference_s: float | None
    worker: LiveTune | None  # the tune followed live: launched by the window or attached
    pending_control: TuningControl  # requests made before Tune, handed to the next tune
    jobs: list[QThread]  # the BackgroundJobs running (jobs.py, which builds on this module)
    closed: bool  # the window accepted to close: no new background job

    # Widgets and their builders.
    workspace: Workspace
    tree: QTreeView
    tree_model: ClusterTreeModel
    latency_plot: ModelLatencyPlot
    task_plot: TaskCurvesPlot
    cost_plot: CostModelPlot
    overview: OverviewPanel
    settings_panel: SettingsPanel
    provenance: ProvenancePanel
    sessions: SessionsPanel
    status_line: StatusLine
    status_text: QLabel
    progress: QProgressBar
    window_actions: WindowActions
    recent: RecentFiles
    docks: Docks

    # The window's signals, as instances.
    modelOpened: SignalInstance
    snapshotShown: SignalInstance
    tuneFinished: SignalInstance
    exportFinished: SignalInstance

    def setWindowTitle(self, title: str) -> None: ...
    def report_error(self, error: BaseException, doing: str) -> None: ...
    def run_job(self, name: str, work: Callable[..., Any], on_success: Callable[..., Any], doing: str) -> QThread: ...
    def update_actions(self) -> None: ...
    def update_status(self) -> None: ...
    def open_reader(self) -> bool: ...
    def show_session(self, session_id: int) -> None: ...
    def attach(self, session_id: int) -> None: ...
    def show_pending(self) -> None: ...
    def refresh_preview(self) -> None: ...
    def show_snapshot(self, snapshot: SessionSnapshot, staged: bool = False) -> None: ...
    def selected_items(self) -> list[tuple[str, Any]]: ...
    def selected_tasks(self) -> list[int]: ...
    def selected_cluster(self) -> str | None: ...
    def start_tune(
        self,
        settings: TuneSettings | None = None,
        target_spec: str | None = None,
        new_session: bool | None = None,
        resume_session_id: int | None = None,
    ) -> None: ...


class Controller(QObject):
    """One part of the window's behaviour, acting on the window through `win`. It is a QObject
    child of the window, so it lives on the GUI thread: a worker thread's signal connected to one
    of its methods runs that method there, where widgets may be touched (a lambda would run in
    the sender's thread: for a background job, a worker thread)."""

    def __init__(self, win: WindowHost) -> None:
        window = cast(QWidget, win)  # WindowHost is implemented by the QMainWindow itself
        super().__init__(window)
        self.win = win
        self.window_widget = window  # the parent of the dialogs it opens
