"""Measures how long the GUI event loop goes without running (a frozen-UI detector)."""

from __future__ import annotations

import logging
import time

from PySide6.QtCore import QObject, QTimer

log = logging.getLogger("bcd.gui.stall")


class StallMeter(QObject):
    """A timer that should fire every `interval_ms`; any extra delay is the loop stalling."""

    def __init__(self, interval_ms: int = 10, parent: QObject | None = None, report_over_ms: float = 100.0) -> None:
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.report_over_ms = report_over_ms
        self.stalls: list[tuple[float, float]] = []  # (seconds since start, ms) over the threshold
        self._started = 0.0
        self.longest_ms = 0.0
        self.ticks = 0
        self._last = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.longest_ms, self.ticks, self.stalls = 0.0, 0, []
        self._last = self._started = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    @property
    def running(self) -> bool:
        return self._timer.isActive()

    def _tick(self) -> None:
        now = time.perf_counter()
        late_ms = (now - self._last) * 1000 - self.interval_ms
        self.longest_ms = max(self.longest_ms, late_ms)
        if late_ms > self.report_over_ms:
            self.stalls.append((now - self._started, late_ms))
            log.info("event loop stalled %.0f ms", late_ms)
        self._last = now
        self.ticks += 1
