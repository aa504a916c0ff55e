"""What the dashboard remembers between runs: the theme, recent models and the window layout.

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

    def restore_layout(self, window: QMainWindow) -> None:
        geometry = self.qsettings.value("geometry")
        state = self.qsettings.value("windowState")
        if isinstance(geometry, QByteArray):
            window.restoreGeometry(geometry)
        else:
            window.resize(*DEFAULT_SIZE)
        if isinstance(state, QByteArray):
            window.restoreState(state)

    def save_layout(self, window: QMainWindow) -> None:
        self.qsettings.setValue("geometry", window.saveGeometry())
        self.qsettings.setValue("windowState", window.saveState())
