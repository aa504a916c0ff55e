"""What the dashboard remembers between runs: the theme, recent models, trials per task and
the window layout.

Everything lives in one QSettings object under the keys the dashboard has always used
("theme", "recentFiles", "geometry", "windowState"), so existing settings keep working.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow

MAX_RECENT = 8
DEFAULT_SIZE = (1400, 860)  # the first run's window size, before a layout is saved


class Preferences:
    """The dashboard's persisted choices, read and written through the given QSettings."""

    def __init__(self, qsettings: QSettings) -> None:
        self.qsettings = qsettings

    def theme(self) -> str:
        return str(self.qsettings.value("theme", "system"))

    def set_theme(self, choice: str) -> None:
        self.qsettings.setValue("theme", choice)

    def recent_files(self) -> list[str]:
        value = self.qsettings.value("recentFiles", [])
        # QSettings hands back a bare string when the list had one item.
        items = [value] if isinstance(value, str) else list(value or [])
        return [item for item in items if item]

    def remember(self, path: Path) -> None:
        """Put `path` first in the recent files, without duplicates, keeping the newest few."""
        items = [str(path)] + [p for p in self.recent_files() if p != str(path)]
        self.qsettings.setValue("recentFiles", items[:MAX_RECENT])

    def trials_per_task(self) -> int | None:
        """The Trials per task the panel had when the window last closed."""
        try:
            value = int(self.qsettings.value("trialsPerTask", 0))
        except (TypeError, ValueError):
            return None
        return value if value > 0 else None

    def set_trials_per_task(self, trials: int) -> None:
        self.qsettings.setValue("trialsPerTask", int(trials))

    def restore_layout(self, window: QMainWindow) -> bool:
        """The saved size and docks; False on the first run, which gets the defaults."""
        geometry = self.qsettings.value("geometry")
        state = self.qsettings.value("windowState")
        if isinstance(geometry, QByteArray):
            window.restoreGeometry(geometry)
        else:  # the first run: the default size, or the screen's room where it is smaller
            screen = window.screen().availableGeometry() if window.screen() else None
            width, height = DEFAULT_SIZE
            if screen is not None and screen.width() > 0 and screen.height() > 0:
                width, height = min(width, screen.width()), min(height, screen.height())
            window.resize(width, height)
        if isinstance(state, QByteArray):
            window.restoreState(state)
        return isinstance(geometry, QByteArray)

    def save_layout(self, window: QMainWindow) -> None:
        self.qsettings.setValue("geometry", window.saveGeometry())
        self.qsettings.setValue("windowState", window.saveState())
