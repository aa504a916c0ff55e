"""Showing sessions: the records store, a session's snapshot in the tree and plots, resuming one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QTimer

from bcd_core.errors import BcdError
from bcd_core.records.store import RecordStore
from bcd_core.session_view import (
    Baseline,
    SessionSnapshot,
    baseline_for,
    first_time_at_or_below,
    latest_round_predictions,
    load_snapshot,
    provenance_of,
    session_status_text,
    session_timeline,
    task_best_curve,
    untuned_of,
)
from bcd_core.tuning.run import settings_of_session
from bcd_core.tuning.settings import TuneSettings
from bcd_gui.cluster_model import describe_pending
from bcd_gui.host import Controller, WindowHost
from bcd_gui.plots import TaskCurvesPlot

STAGE_MS = 25  # between the staged plot updates of a live round: each gets a repaint of its own


class SessionController(Controller):
    """Reads the window's records store (`win.reader`) and shows what it holds."""

    def __init__(self, win: WindowHost) -> None:
        super().__init__(win)
        # The stock run each session is compared with, by (store path, session id).
        self.baselines: dict[tuple[str, int], Baseline | None] = {}
        self.overlays: list[int] = []  # sessions of the open store drawn beside the shown one
        self._generation = 0  # counts snapshots shown, so a staged plot drawn late is skipped

    def toggle_overlay(self, session_id: int) -> None:
        """Draw (or stop drawing) a session's estimate in the latency plot, to compare runs."""
        if session_id in self.overlays:
            self.overlays.remove(session_id)
        else:
            self.overlays.append(session_id)
        self.show_overlays()

    def show_overlays(self) -> None:
        win = self.win
        if win.reader is None:
            return
        shown = win.snapshot.session_id if win.snapshot is not None else None
        timelines = {}
        for session_id in self.overlays:
            if session_id != shown:
                session = win.reader.session(session_id)
                name = f"#{session_id} {session['strategy']} ({session['model_name']})"
                timelines[name] = session_timeline(win.reader, session_id)
        win.latency_plot.set_overlays(timelines)

    def open_reader(self) -> bool:
        """Open `win.db_path` unless it is open already, and list its sessions; False (after a
        dialog) if it cannot be opened."""
        win = self.win
        if win.reader is not None and win.reader.path == win.db_path:
            return True
        self.overlays = []  # another store's sessions
        if win.reader is not None:
            win.reader.close()
            win.reader = None
        try:
            win.reader = RecordStore(win.db_path)  # type: ignore[arg-type]
        except BcdError as err:
            win.report_error(err, "open the records database")
            return False
        win.sessions.show_sessions(win.reader.sessions_as_they_are())
        return True

    def show_session(self, session_id: int) -> None:
        win = self.win
        if win.reader is None:
            return
        try:
            snapshot = load_snapshot(win.reader, session_id)
        except BcdError as err:
            win.report_error(err, "open the session")
            return
        self.show_snapshot(snapshot)
        if win.worker is None:  # while tuning, the panel holds the running tune's settings
            win.settings_panel.show_session_settings(str(snapshot.session["strategy"]), snapshot.settings)
        win.workspace.show_results()
        win.tree.expandAll()
        win.workspace.resize_columns()
        if win.worker is None and win.reader.engine_running(session_id):
            win.attach(session_id)  # tuned right now elsewhere: follow it live
        elif win.worker is None:  # what the status bar said of another session is not this one's
            session = snapshot.session
            win.status_text.setText(
                f"Session {session_id} of {session.get('model_name', 'the model')} ({session['strategy']}, "
                f"{session_status_text(session)}): {snapshot.trials_done} trials"
            )

    def show_snapshot(self, snapshot: SessionSnapshot, staged: bool = False) -> None:
        """Show a snapshot everywhere. `staged` (a live tune's rounds): the tree, panels and
        status now, each plot in a later turn of the event loop, so no single turn has to
        repaint the whole window (which, on 2 cores shared with the engine, took over 100 ms)."""
        win = self.win
        win.snapshot = snapshot
        untuned = untuned_of(snapshot, win.untuned)  # by the shown session's own task numbering
        win.tree_model.untuned = untuned
        win.tree_model.set_snapshot(snapshot)
        self.show_pending()
        win.overview.show_snapshot(snapshot, untuned, win.reference_s)
        win.update_status()
        self._generation += 1
        stages = (self._draw_latency, self._draw_cost_model, self.refresh_task_views)
        for position, draw in enumerate(stages, 1):
            if staged:
                generation = self._generation
                QTimer.singleShot(position * STAGE_MS, lambda d=draw, g=generation: self._draw_if_current(d, g))
            else:
                draw()
        win.snapshotShown.emit(snapshot)

    def _draw_if_current(self, draw: Callable[[], None], generation: int) -> None:
        if generation == self._generation:  # a newer snapshot has its own turns coming
            draw()

    def _draw_latency(self) -> None:
        win = self.win
        if win.snapshot is None:
            return
        win.latency_plot.set_reference(win.reference_s)
        win.latency_plot.update_view(win.snapshot, self.baseline(win.snapshot))
        if self.overlays:
            self.show_overlays()

    def _draw_cost_model(self) -> None:
        win = self.win
        if win.snapshot is None:
            return
        predictions = latest_round_predictions(win.reader, win.snapshot.session_id) if win.reader else []
        win.cost_plot.update_view(win.snapshot.metrics, predictions)

    def show_pending(self) -> None:
        """The steering requests not applied yet: on their rows, and counted in the status bar."""
        win = self.win
        tuning = win.worker is not None
        requests = (win.worker.control if tuning else win.pending_control).pending()
        if tuning and (win.snapshot is None or win.snapshot.trials_done == 0):
            requests = win.worker.launch_requests() + requests  # made before Tune, not applied before a round
        win.tree_model.set_pending(requests)
        if requests:
            win.workspace.refit_status_column()
        descriptions = [describe_pending(request, win.snapshot) for request in requests]
        win.status_line.show_pending(descriptions, "at the next round" if tuning else "when tuning starts")

    def baseline(self, snapshot: SessionSnapshot) -> Baseline | None:
        """The stock run to compare with; looked up once per session (it may sit in another store)."""
        reader = self.win.reader
        if reader is None or not snapshot.session_id:
            return None
        key = (str(reader.path), snapshot.session_id)
        if key not in self.baselines:
            self.baselines[key] = baseline_for(reader, snapshot)
        found = self.baselines[key]
        if found is None:
            return None
        return replace(found, reached_at_s=first_time_at_or_below(snapshot.timeline, found.final_latency_s))

    def refresh_task_views(self) -> None:
        """Curves of the selected tasks (or clusters' members, or the heaviest tasks), and the
        provenance of the first task selected."""
        win = self.win
        snapshot = win.snapshot
        if snapshot is None:
            return
        tasks = win.selected_tasks()
        if not tasks:
            for cluster in [c for k, c in win.selected_items() if k == "cluster"]:
                tasks += next((c.members for c in snapshot.clusters if c.key == cluster), [])
        if not tasks:  # nothing selected: the tasks that weigh most
            ranked = sorted((t for t in snapshot.tasks if t.best_s), key=lambda t: -(t.weight * (t.best_s or 0)))
            tasks = [t.index for t in ranked[:4]]
        curves = {}
        if win.reader is not None and snapshot.session_id:
            for index in tasks[: TaskCurvesPlot.MAX_CURVES]:
                task = snapshot.task(index)
                curves[task.name] = task_best_curve(win.reader, snapshot.session_id, task.row_id)
        win.task_plot.show_curves(curves)
        chosen = win.selected_tasks()
        if chosen and win.reader is not None and snapshot.session_id:
            win.provenance.show_provenance(provenance_of(win.reader, snapshot, chosen[0]))
            win.docks.provenance_dock.raise_()  # a tuned task was chosen: where its best came from
        else:
            win.provenance.show_provenance(None)

    def resume_session(self, session_id: int) -> None:
        """Tune a stored session further, with its own settings and target; only for the open model."""
        win = self.win
        if win.reader is None:
            return
        session = win.reader.session(session_id)
        if win.model_path is None or session["model_hash"] != win.model_hash:
            win.report_error(
                BcdError(f"session {session_id} tuned {session['model_name']}; open that model first to resume it"),
                "resume the session",
            )
            return
        # The session's own settings and target; the engine refuses, with a dialog, if the
        # model, target or tool version no longer match, and decides what resuming does (a
        # complete session's tasks skipped unmeasured are tuned now: tuning/continuation.py).
        try:  # measured where the panel says now (here or remote): not part of the identity
            stored = settings_of_session(session, TuneSettings(**win.settings_panel.runner_settings()))
        except (BcdError, ValueError) as err:
            win.report_error(err, "resume the session")
            return
        win.start_tune(stored, session["target"], new_session=False, resume_session_id=session_id)
