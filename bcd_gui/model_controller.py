"""Opening a model: importing it off the GUI thread, showing its clusters, timing it untuned."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.export import session_target
from bcd_core.records.store import RecordStore
from bcd_core.reference import known_reference, known_session_reference, reference_spread, stored_reference
from bcd_core.session_view import SessionSnapshot, default_session, preview_snapshot, untuned_of
from bcd_core.steering_preview import preview_with_requests
from bcd_core.target import parse_target
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.run import prepare_model
from bcd_core.tuning.settings import DEFAULT_CLUSTER_MODE
from bcd_core.untuned import stored_untuned
from bcd_gui.dialogs import ask_model_path, ask_store_path
from bcd_gui.host import Controller, WindowHost

DEFAULT_RUNS_DIR = Path("runs")  # the same default as `bcd tune`, so both see the same records


class ModelController(Controller):
    """Opens ONNX models for the window: sets `win.model_path`, `win.db_path` and the views."""

    def __init__(self, win: WindowHost) -> None:
        super().__init__(win)
        self._prepared: tuple[str, Any] | None = None  # the open model's name and prepared tasks
        self._target: Any = None  # the open model's target and input shapes
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._reference_waits = False  # onnxruntime is timed once the followed tune ends
        win.tuneFinished.connect(self._tune_ended)

    def choose_model(self) -> None:
        path = ask_model_path(self.window_widget)
        if path:
            self.open_model(path)

    def choose_store(self) -> None:
        path = ask_store_path(self.window_widget)
        if path:
            self.open_store(path)

    def open_store(self, path: str | Path) -> None:
        """Use `path` as the records store and show its newest session, following it live if
        an engine is tuning it now (a `bcd tune` in a terminal, another window's, a server's)."""
        win = self.win
        path = Path(path)
        if win.worker is not None:
            win.report_error(
                BcdError("a tune is being followed; stop it before opening another store"), "open the store"
            )
            return
        if not path.is_file():
            win.report_error(BcdError(f"records store not found: {path}"), "open the store")
            return
        win.fixed_db = win.db_path = path
        win.model_path = win.model_hash = None
        self._prepared = None
        win.untuned = {}
        win.overview.untuned_waiting = "open the model to measure it"
        win.reference_s = None
        win.pending_control = TuningControl()
        if not win.open_reader() or win.reader is None:
            return
        win.setWindowTitle(f"{path.name} - bcd")
        win.recent.remember(path.resolve())
        sessions = win.reader.sessions()
        if not sessions:
            win.status_text.setText(f"{path.name} holds no tuning session yet")
            win.update_actions()
            return
        running = [s["id"] for s in sessions if win.reader.engine_running(s["id"])]
        shown = default_session(sessions, running) or sessions[-1]
        win.show_session(shown["id"])
        # Without the model file nothing is timed here; a reference timed earlier is shown.
        self._reference_measured(known_session_reference(win.reader, shown))
        if not running:
            win.status_text.setText(
                f"{path.name}: {len(sessions)} session(s); open a session's model to tune or resume it"
            )
        win.update_actions()

    def open_model(self, path: str | Path) -> None:
        """Import `path` with the panel's target, shapes and cluster mode; `modelOpened` follows."""
        win = self.win
        if win.worker is not None:
            win.report_error(BcdError("a tune is running; stop it before opening another model"), "open the model")
            return
        path = Path(path)
        try:
            spec = win.settings_panel.target.text()
            target = parse_target(spec)
            shapes = win.settings_panel.shape_overrides()
        except BcdError as err:
            win.report_error(err, "open the model")
            return
        mode = DEFAULT_CLUSTER_MODE  # clustering is a research option, not in the Settings panel

        def work(progress: Any) -> Any:
            progress(0, 2, f"importing {path.name} and extracting tuning tasks")
            return prepare_model(path, target, shapes, mode)

        win.run_job(
            f"Opening {path.name}",
            work,
            lambda prepared: self._model_prepared(path, prepared, shapes),
            "open the model",
        )

    def _model_prepared(self, path: Path, prepared: Any, shapes: dict[str, tuple[int, ...]]) -> None:
        win = self.win
        win.model_path = path.resolve()
        win.model_hash = prepared.imported.sha256
        win.recent.remember(win.model_path)
        win.db_path = win.fixed_db or DEFAULT_RUNS_DIR / f"{path.stem}.db"
        win.setWindowTitle(f"{path.name} - bcd   [{win.db_path}]")
        win.untuned = {}
        win.overview.untuned_waiting = "measuring..."
        win.reference_s = None
        self._target, self._shapes = prepared.target, shapes  # for timing onnxruntime
        win.tree_model.set_untuned({})
        win.pending_control = TuningControl()  # requests for the previous model's tasks do not carry over
        if not win.open_reader():
            return
        self._prepared = (path.name, prepared)
        preview = self._preview()
        stored = [s for s in win.reader.sessions() if s["model_hash"] == win.model_hash] if win.reader else []
        win.workspace.show_results()
        shown = default_session(stored)
        if shown is not None:
            win.show_session(shown["id"])
        else:
            win.show_snapshot(preview)
        win.tree.expandAll()
        win.workspace.resize_columns()
        win.status_text.setText(
            f"{path.name}: {len(prepared.tasks)} tasks in {len(prepared.clusters)} clusters "
            f"(prepared in {prepared.prepare_s:.1f} s). Press Ctrl+R to tune."
        )
        win.update_actions()  # Tune, and steering before it, are offered at once
        win.modelOpened.emit(win.snapshot)
        win.run_job(
            "Timing the untuned tasks",
            lambda progress: self._untuned(win.db_path, prepared, progress),
            self._untuned_measured,
            "time the untuned model",
        )

    @staticmethod
    def _untuned(db_path: Path, prepared: Any, progress: Any) -> dict[int, float]:
        """Off the GUI thread, with a connection of its own: timed once per workload and target."""
        with closing(RecordStore(db_path)) as store:
            return stored_untuned(store, prepared.tasks, prepared.target, progress)

    def _untuned_measured(self, untuned: dict[int, float]) -> None:
        win = self.win
        tasks = self._prepared[1].tasks if self._prepared is not None else []
        win.untuned = {task.name: untuned[task.index] for task in tasks if task.index in untuned}
        if win.snapshot is not None:
            shown = untuned_of(win.snapshot, win.untuned)
            win.tree_model.set_untuned(shown)
            win.overview.show_snapshot(win.snapshot, shown, win.reference_s)
        if win.worker is None:
            win.status_text.setText("Ready. Press Ctrl+R to tune.")
        self.show_reference()

    def show_reference(self) -> None:
        """onnxruntime's latency for the open model: from the store, else timed in the
        background, but never while a tune is followed (both would share the cores: a wrong
        figure, kept, and a slower tune); then it is timed when the tune ends."""
        win = self.win
        model_path, model_hash, db_path = win.model_path, win.model_hash, win.db_path
        if model_path is None or model_hash is None or db_path is None or win.reader is None:
            return
        target, shapes = self._target, self._shapes
        known = known_reference(win.reader, model_hash, target)
        self._reference_waits = known is None and win.worker is not None
        if known is not None or self._reference_waits:
            self._reference_measured(known)
            return
        win.run_job(
            "Timing onnxruntime",
            lambda _progress: self._reference(db_path, model_path, model_hash, target, shapes),
            self._reference_measured,
            "time onnxruntime",
        )

    def _preview(self) -> SessionSnapshot:
        """The open model before any session, with the panel's settings and the steering
        requested so far (applied as the engine will apply them when tuning starts)."""
        assert self._prepared is not None
        name, prepared = self._prepared
        strategy = self.win.settings_panel.strategy.currentText()
        trials = self.win.settings_panel.trials_per_task.value()
        preview = preview_snapshot(name, strategy, prepared.tasks, prepared.clusters, trials)
        return preview_with_requests(preview, self.win.pending_control.pending())

    def refresh_preview(self) -> None:
        """Show the model's preview again when a setting or a request before Tune changed it."""
        win = self.win
        showing_preview = win.snapshot is not None and not win.snapshot.session_id
        if win.worker is None and self._prepared is not None and showing_preview:
            win.show_snapshot(self._preview())

    def _reference_spread(self) -> float | None:
        """How far apart the timings behind the reference shown were: the open model's, else
        the shown session's."""
        win = self.win
        if win.reader is None:
            return None
        if win.model_hash is not None and self._target is not None:
            return reference_spread(win.reader, win.model_hash, self._target)
        if win.snapshot is not None and win.snapshot.session_id:
            session = win.reader.session(win.snapshot.session_id)
            return reference_spread(win.reader, session["model_hash"], session_target(session))
        return None

    def _tune_ended(self, _status: Any) -> None:
        if self._reference_waits:
            self.show_reference()

    @staticmethod
    def _reference(db_path: Path, model_path: Path, model_hash: str, target: Any, shapes: Any) -> float | None:
        with closing(RecordStore(db_path)) as store:
            return stored_reference(store, model_path, model_hash, target, shapes)

    def _reference_measured(self, reference_s: float | None) -> None:
        win = self.win
        win.reference_s = reference_s
        win.overview.reference_spread = self._reference_spread() if reference_s is not None else None
        if win.snapshot is not None:
            win.overview.show_snapshot(win.snapshot, untuned_of(win.snapshot, win.untuned), reference_s)
            win.latency_plot.set_reference(reference_s)
        if win.worker is None and reference_s is not None:
            win.status_text.setText("Ready. Press Ctrl+R to tune.")
