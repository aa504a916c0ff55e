from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from window_helpers import finish_background_work


@pytest.fixture
def qsettings(tmp_path: Path) -> QSettings:
    """Each test gets its own settings file: no recent files or layout leak between tests."""
    return QSettings(str(tmp_path / "bcd-gui.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, tmp_path: Path, qsettings: QSettings):
    from bcd_gui.main_window import MainWindow

    win = MainWindow(db_path=tmp_path / "records.db", settings=qsettings)
    qtbot.addWidget(win)
    win.show()
    yield win
    finish_background_work(win)  # never leave a tuner thread behind
