"""The status bar: a message, the trial count, elapsed time and ETA, and a progress bar."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QProgressBar, QSizePolicy, QStatusBar

from bcd_core.formatting import format_duration
from bcd_core.session_view import SessionSnapshot, eta_by_clock
from bcd_core.tuning.events import RoundFinished
from bcd_core.tuning.run import budget_offset_s


class ElidedLabel(QLabel):
    """A one-line label that ends what does not fit with "..." and shows it whole in its
    tooltip; `text()` is the whole text."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._full = ""
        self.setMinimumWidth(80)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._full = text
        self.setToolTip(text)
        self._elide()

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(0, self.contentsRect().width())
        super().setText(self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width))


class StatusLine:
    """Builds the status bar's widgets into `bar` and fills the counters from a session's state."""

    def __init__(self, bar: QStatusBar) -> None:
        self.status_text = ElidedLabel("Open a model to begin")
        self.pending_label = QLabel("")  # steering requests waiting for the next round
        self.pending_label.setObjectName("pendingRequests")
        self.pending_label.hide()
        self.trials_label = QLabel("")
        self.elapsed_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        bar.addWidget(self.status_text, 1)
        for widget in (self.pending_label, self.trials_label, self.elapsed_label, self.progress):
            bar.addPermanentWidget(widget)

    def show_counts(self, snapshot: SessionSnapshot | None, event: Any, tuning: bool, jobs_running: bool) -> None:
        """Trials, elapsed time and ETA of `snapshot`, or of the running tune's latest `event`
        (fresher than the last snapshot). The bar shows trial progress unless a job owns it."""
        if snapshot is None:
            return
        done, total = snapshot.trials_done, max(1, snapshot.trials_total)
        if isinstance(event, RoundFinished) and tuning:
            done, total = event.trials_done, max(1, event.trials_total)
        failed = f" ({snapshot.failed_trials} failed)" if snapshot.failed_trials else ""
        self.trials_label.setText(f"{done}/{total} trials{failed}")
        elapsed = float(snapshot.session.get("elapsed_s") or 0.0)
        if tuning and isinstance(event, RoundFinished):
            elapsed = event.elapsed_s
        eta = elapsed / done * (total - done) if done and tuning else None
        if tuning:  # the session's time budget, if it has one, may end it sooner
            offset = budget_offset_s(snapshot.session, snapshot.measured)
            eta = eta_by_clock(eta, elapsed, snapshot.session.get("time_budget_s"), offset)
        self.elapsed_label.setText(
            f"elapsed {format_duration(elapsed)}" + (f"  ETA {format_duration(eta)}" if eta else "")
        )
        if not jobs_running or tuning:
            if tuning and done == 0:
                self.progress.setRange(0, 0)
            else:
                self.progress.setRange(0, total)
                self.progress.setValue(min(done, total))

    def show_pending(self, descriptions: list[str], when: str) -> None:
        """How many steering requests wait, each in words in the tooltip; hidden when none."""
        if not descriptions:
            self.pending_label.hide()
            return
        self.pending_label.setText(f"<b>{len(descriptions)} pending</b>")
        self.pending_label.setToolTip(f"Applied {when}:\n" + "\n".join(descriptions))
        self.pending_label.show()

    def show_finished(self) -> None:
        """A full bar: the tune or job that drove it is over."""
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
