from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings


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
    if win.worker is not None:  # never leave a tuner thread behind
        win.worker.control.stop()
        win.worker.control.resume()
        win.worker.thread.wait(60_000)
    for job in list(win.jobs):
        job.wait(60_000)


def open_and_wait(qtbot, win, path: Path, timeout_ms: int = 120_000):
    with qtbot.waitSignal(win.modelOpened, timeout=timeout_ms) as blocker:
        win.open_model(path)
    return blocker.args[0]
