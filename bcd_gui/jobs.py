"""Short engine jobs (importing, timing, exporting) in worker threads, their progress in the
status bar; what they report crosses to the GUI through queued signals, so no widget is
touched from a worker. Tuning itself runs in a process of its own (live_tune.py)."""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal

from bcd_gui.host import Controller

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


class JobRunner(Controller):
    """Starts BackgroundJobs for the window, tracks them in `win.jobs` and drives the status bar."""

    def run_job(self, name: str, work: Callable[..., Any], on_success: Callable[..., Any], doing: str) -> BackgroundJob:
        """Run `work(progress)` in a thread; `on_success(result)` runs on the GUI thread, and an
        error is reported as "cannot `doing`"."""
        win = self.win
        job = BackgroundJob(name, work, self.window_widget)
        if win.closed:  # nothing may outlive the window: a thread still running at exit aborts
            return job
        win.jobs.append(job)
        job.progressed.connect(self._job_progress)
        job.succeeded.connect(on_success)
        job.failed.connect(lambda err: win.report_error(err, doing))
        job.finished.connect(lambda: self._job_done(job))
        win.status_text.setText(f"{name}...")
        win.progress.setRange(0, 0)  # busy until the first progress report
        job.start()
        return job

    def _job_progress(self, step: int, total: int, text: str) -> None:
        self.win.progress.setRange(0, max(1, total))
        self.win.progress.setValue(step)
        self.win.status_text.setText(text)

    def _job_done(self, job: BackgroundJob) -> None:
        win = self.win
        if job in win.jobs:
            win.jobs.remove(job)
        if win.worker is None:
            win.status_line.show_finished()
        win.update_actions()
