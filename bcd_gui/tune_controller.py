"""Tuning: a session runs in an engine process of its own (or one the window attached to);
this launches it, follows it through the store, pauses it and stops it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.formatting import format_duration, format_latency
from bcd_core.records.states import EventKind, SessionStatus
from bcd_core.session_view import SessionSnapshot
from bcd_core.target import parse_target, target_key
from bcd_core.tuning.continuation import SessionDecision, decide_session, wish_of
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.engine_process import EngineLaunch
from bcd_core.tuning.events import RoundFinished, SessionFinished, SessionMessage, SessionPaused, SessionStarted
from bcd_core.tuning.settings import TuneSettings
from bcd_gui import dialogs
from bcd_gui.host import Controller, WindowHost
from bcd_gui.live_tune import LiveTune


class TuneController(Controller):
    """Starts or attaches `win.worker` (a LiveTune) and shows what it reports: status text,
    snapshots, the final status."""

    def __init__(self, win: WindowHost) -> None:
        super().__init__(win)
        self.started_at: float | None = None
        self.last_event: Any = None  # the running tune's latest event: fresher counts than its snapshot
        # Asked when the session a Tune would continue is complete: start a new one? (True: yes)
        self.ask_new_session: Callable[[str], bool] = lambda reason: dialogs.ask_new_session(self.window_widget, reason)

    def start_tune(
        self,
        settings: TuneSettings | None = None,
        target_spec: str | None = None,
        new_session: bool | None = None,
        resume_session_id: int | None = None,
    ) -> None:
        """Tune the open model (with the panel's settings and target unless given); a no-op while
        a tune runs or before a model is open. Which session it continues, if any, is the
        engine's decision (tuning/continuation.py); where that session is complete, a new one
        starts only if the user says so."""
        win = self.win
        if win.worker is not None or win.model_path is None or win.db_path is None:
            return
        try:
            settings = settings or win.settings_panel.settings()
            target_spec = target_spec if target_spec is not None else win.settings_panel.target.text()
            key = target_key(parse_target(target_spec))
            decision = self.decide(settings, key, bool(new_session), resume_session_id)
        except (BcdError, ValueError) as err:
            win.report_error(err, "start tuning")
            return
        if decision is not None and not decision.tunes:
            if not self.ask_new_session(decision.reason):
                win.status_text.setText(f"Not tuned: {decision.reason}")
                return
            new_session, resume_session_id = True, None
        launch = EngineLaunch.of(
            win.model_path,
            win.db_path,
            target_spec,
            settings,
            bool(new_session),
            resume_session_id,
            win.pending_control.pending(),
        )
        try:
            worker = LiveTune.launch(launch)
        except OSError as err:
            win.report_error(BcdError(f"cannot start the tuning engine: {err}"), "start tuning")
            return
        win.pending_control = TuningControl()  # the next tune starts with its own requests
        which = f", {decision.reason}" if decision is not None and not new_session else ""
        self._begin(worker, f"Tuning {win.model_path.name} with {settings.strategy}{which}: importing the model...")

    def decide(
        self, settings: TuneSettings, key: str, new_session: bool, resume_session_id: int | None
    ) -> SessionDecision | None:
        """What the engine will do with the open store; None before the store or the model's
        hash is known (the engine then decides alone, by the same rule)."""
        win = self.win
        if win.reader is None or not win.model_hash:
            return None
        wish = wish_of(new_session, resume_session_id)
        return decide_session(win.reader, win.model_hash, key, settings, wish, resume_session_id)

    def attach(self, session_id: int) -> None:
        """Follow (and steer) a session an engine elsewhere is tuning now: a `bcd tune` in a
        terminal, another window's engine, a server sharing the disk."""
        win = self.win
        if win.worker is not None or win.db_path is None:
            return
        self._begin(LiveTune(win.db_path, None, session_id), f"Following session {session_id}, tuned elsewhere...")
        win.sessions.set_live(session_id)

    def _begin(self, worker: LiveTune, status: str) -> None:
        win = self.win
        win.worker = worker
        self._follow(worker)
        self.started_at = time.monotonic()
        self.last_event = None
        win.settings_panel.set_enabled_for_tuning(False)
        win.status_text.setText(status)
        win.progress.setRange(0, 0)
        worker.start()
        win.update_actions()

    def _follow(self, worker: LiveTune) -> None:
        worker.event.connect(self._on_event)
        worker.snapshot.connect(self._on_worker_snapshot)
        worker.failed.connect(self._tune_failed)
        worker.failed.connect(self.win.tuneFinished.emit)
        worker.finished.connect(self._tune_finished)

    def _on_event(self, event: Any) -> None:
        self.last_event = event
        status_text = self.win.status_text
        if isinstance(event, SessionStarted):
            self.win.sessions.set_live(event.session_id)
            verb = "Started" if not event.resumed else "Resuming"
            if event.continues_probe:
                verb = "Tuning on from the layout probe in"
            status_text.setText(
                f"{verb} session {event.session_id}: {event.num_tasks} tasks, {event.trials_total} trials"
            )
        elif isinstance(event, RoundFinished):
            paused = self.win.worker is not None and self.win.worker.control.paused
            state = "Pausing after this batch" if paused else "Tuning"
            status_text.setText(
                f"{state}: round {event.round}, {event.task_name}: best {format_latency(event.best_task_latency_s)}; "
                f"model {format_latency(event.estimated_latency_s)}"
            )
        elif isinstance(event, SessionMessage):  # the engine logged it already: the log shows it once
            if event.kind in (EventKind.FALLBACK, EventKind.WARNING):
                status_text.setText(event.message)
        elif isinstance(event, SessionPaused):
            self.win.sessions.set_live(self.win.worker.session_id if self.win.worker else None, event.paused)
            self.win.window_actions.show_paused(event.paused)
            self.win.overview.set_paused(event.paused)
            if event.paused:
                status_text.setText("Paused. Press Space to resume.")
        elif isinstance(event, SessionFinished):
            why = f" ({event.stop_reason})" if event.stop_reason and event.status != SessionStatus.COMPLETED else ""
            status_text.setText(
                f"Session {event.session_id} {event.status}{why}: {event.trials_done} trials, model "
                f"{format_latency(event.estimated_latency_s)} after {format_duration(event.elapsed_s)}"
            )
        self.win.update_status()

    def _on_worker_snapshot(self, snapshot: SessionSnapshot) -> None:
        win = self.win
        if not win.workspace.showing_results():
            win.workspace.show_results()
        first = win.snapshot is None or win.snapshot.session_id != snapshot.session_id
        win.show_snapshot(snapshot, staged=not first)
        if first:
            win.tree.expandAll()
            win.workspace.resize_columns()
        if win.reader is not None:  # the running session's trials and estimate, too
            win.sessions.show_sessions(win.reader.sessions_as_they_are())

    def _tune_failed(self, error: BaseException) -> None:
        self.win.report_error(error, "tune")

    def _tune_finished(self) -> None:
        win = self.win
        worker = win.worker
        win.worker = None
        win.settings_panel.set_enabled_for_tuning(True)
        win.status_line.show_finished()
        win.sessions.set_live(None)
        win.overview.paused = False
        if win.reader is not None:
            win.sessions.show_sessions(win.reader.sessions_as_they_are())
            if worker is not None and worker.session_id is not None:
                win.show_session(worker.session_id)
        win.update_actions()
        event = self.last_event
        win.tuneFinished.emit(event.status if isinstance(event, SessionFinished) else None)

    def toggle_pause(self) -> None:
        win = self.win
        if win.worker is None:
            return
        control = win.worker.control
        if control.paused:
            control.resume()
            win.status_text.setText("Resumed")
            win.window_actions.show_paused(False)
        else:
            control.pause()
            win.status_text.setText("Pausing after the batch in flight (nothing measured is lost)...")
            win.window_actions.show_paused(True)

    def stop_tune(self) -> None:
        if self.win.worker is None:
            return
        self.win.worker.control.stop()  # a paused session wakes up to stop
        self.win.window_actions.show_paused(False)
        self.win.status_text.setText("Stopping after the batch in flight; everything measured is saved...")

    def stop_and_wait(self, timeout_s: float = 300.0) -> None:
        """Stop the window's own tune after its batch in flight and wait for its engine to
        leave (closing the window); an attached tune is left running."""
        worker = self.win.worker
        if worker is None:
            return
        if not worker.attached:
            worker.control.stop()
            worker.wait_for_engine(timeout_s)
        worker.detach()

    def detach(self) -> None:
        """Stop following the tune; its engine goes on (closing the window, keeping it running)."""
        if self.win.worker is not None:
            self.win.worker.detach()
