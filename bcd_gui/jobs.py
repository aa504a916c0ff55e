"""The bridge between the engine and the GUI thread.

The engine runs in worker threads; everything it reports crosses to the GUI through queued
signals, so no widget is touched from a worker and the event loop never waits on tuning.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from bcd_core.records.store import RecordStore
from bcd_core.session_view import load_snapshot
from bcd_core.target import parse_target
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import RoundFinished, SessionFinished, SessionStarted, TuneEvent
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

log = logging.getLogger("bcd.gui")
ENGINE_NICENESS = 5  # engine threads (and the processes and threads they start) yield to the GUI


def yield_cpu_to_the_gui() -> None:
    """Lower this thread's scheduling priority. On 2 cores the tuner's search threads and
    build workers otherwise keep the GUI thread waiting for a core for 100+ ms. Linux
    applies nice per thread, and threads and processes started from here inherit it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), ENGINE_NICENESS)
    except (AttributeError, OSError):  # not Linux, or not permitted: only responsiveness suffers
        pass


class BackgroundJob(QThread):
    """Runs `work(progress)` off the GUI thread; `progress(step, total, text)` is forwarded."""

    progressed = Signal(int, int, str)
    succeeded = Signal(object)
    failed = Signal(object)  # the exception

    def __init__(
        self, name: str, work: Callable[[Callable[[int, int, str], None]], Any], parent: QObject | None = None
    ):
        super().__init__(parent)
        self.name = name
        self._work = work

    def run(self) -> None:
        yield_cpu_to_the_gui()
        try:
            result = self._work(lambda step, total, text: self.progressed.emit(step, total, text))
        except Exception as err:  # reported to the user as a dialog; the app keeps running
            log.debug("%s failed:\n%s", self.name, traceback.format_exc())
            self.failed.emit(err)
        else:
            self.succeeded.emit(result)


class TuneWorker(QObject):
    """Runs one tuning session (new or resumed) in its own QThread."""

    event = Signal(object)  # a TuneEvent
    snapshot = Signal(object)  # a SessionSnapshot after each round
    failed = Signal(object)  # the exception
    finished = Signal()

    def __init__(
        self,
        model_path: str | Path,
        db_path: str | Path,
        target_spec: str,
        settings: TuneSettings,
        new_session: bool = False,
        resume_session_id: int | None = None,
        control: TuningControl | None = None,
    ) -> None:
        super().__init__()
        self.model_path = Path(model_path)
        self.resume_session_id = resume_session_id
        self.db_path = Path(db_path)
        self.target_spec = target_spec
        self.settings = settings
        self.new_session = new_session
        # Thread-safe: the GUI steers through it directly; it may hold requests made before Tune.
        self.control = control or TuningControl()
        self.session_id: int | None = None
        self._reader: RecordStore | None = None
        self.thread = QThread()
        self.moveToThread(self.thread)
        self.thread.started.connect(self.run)
        # Direct: the GUI thread may be blocked in thread.wait() (closing) and could not run a
        # queued quit; QThread.quit is thread-safe.
        self.finished.connect(self.thread.quit, Qt.ConnectionType.DirectConnection)

    def start(self) -> None:
        self.thread.start()

    @Slot()
    def run(self) -> None:
        yield_cpu_to_the_gui()
        try:
            target = parse_target(self.target_spec)
            run_session(
                self.model_path,
                self.db_path,
                target,
                self.settings,
                [self._on_event],
                self.new_session,
                self.control,
                self.resume_session_id,
            )
        except Exception as err:
            log.debug("tuning failed:\n%s", traceback.format_exc())
            self.failed.emit(err)
        finally:
            if self._reader is not None:
                self._reader.close()
            self.finished.emit()

    def _on_event(self, event: TuneEvent) -> None:
        self.event.emit(event)
        if isinstance(event, SessionStarted | RoundFinished | SessionFinished):
            self.session_id = event.session_id
            # Read the snapshot here, in the worker, so the GUI thread only draws it.
            if self._reader is None:
                self._reader = RecordStore(self.db_path, create=False)
            self.snapshot.emit(load_snapshot(self._reader, event.session_id))
