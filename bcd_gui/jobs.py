"""Short engine jobs (importing, timing, exporting) in worker threads; what they report
crosses to the GUI through queued signals, so no widget is touched from a worker. Tuning
itself runs in a process of its own (live_tune.py)."""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal

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
