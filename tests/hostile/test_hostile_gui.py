"""The dashboard meets the same hostile inputs: an error dialog with the engine's message, the
window keeps working (a good model opens afterwards) and no store changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import hostile_corpus as corpus
import pytest
from hostile_corpus import Case
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox
from window_helpers import error_dialog_text, finish_background_work

DIALOG_TIMEOUT_MS = 60_000
OPEN_TIMEOUT_MS = 120_000
LOCK_DIALOG_TIMEOUT_MS = 30_000  # the store gives up on a lock after 5 s


@pytest.fixture
def make_window(qtbot, tmp_path: Path) -> Iterator[Callable[[Path], object]]:
    """A real main window on the given records store (like `bcd-gui --db PATH`)."""
    from bcd_gui.main_window import MainWindow

    windows = []

    def make(db_path: Path) -> MainWindow:
        settings = QSettings(str(tmp_path / "bcd-gui.ini"), QSettings.Format.IniFormat)
        win = MainWindow(db_path=db_path, settings=settings)
        qtbot.addWidget(win)
        win.show()
        windows.append(win)
        return win

    yield make
    for win in windows:
        finish_background_work(win)  # never leave a tuner thread behind


def close_dialogs(win) -> None:
    for box in win.findChildren(QMessageBox):
        if box.objectName() == "errorDialog" and box.isVisible():
            box.accept()


def open_and_fail(qtbot, win, path: Path) -> str:
    with qtbot.waitSignal(win.errorShown, timeout=DIALOG_TIMEOUT_MS):
        win.open_model(path)
    return error_dialog_text(win)


def open_good(qtbot, win, path: Path) -> None:
    with qtbot.waitSignal(win.modelOpened, timeout=OPEN_TIMEOUT_MS):
        win.open_model(path)
    assert win.tree_model.rowCount() > 0


@pytest.mark.slow
@pytest.mark.parametrize("case", corpus.MODEL_CASES + corpus.TARGET_CASES, ids=lambda c: c.id)
def test_bad_model_or_target_shows_the_message_and_the_app_keeps_working(
    case: Case, qtbot, make_window, tmp_path: Path, existing_store: Path, good_model: Path
) -> None:
    before = corpus.store_rows(existing_store)
    win = make_window(existing_store)
    win.settings_panel.target.setText(case.target)
    text = open_and_fail(qtbot, win, case.make(tmp_path))
    assert case.expected in text
    assert win.status_text.text().startswith("Cannot open the model")
    close_dialogs(win)
    win.settings_panel.target.setText("llvm")
    open_good(qtbot, win, good_model)
    assert corpus.store_rows(existing_store) == before


@pytest.mark.slow
@pytest.mark.parametrize("case", corpus.STORE_CASES, ids=lambda c: c.id)
def test_unusable_store_shows_the_message_and_stays_untouched(
    case: Case, qtbot, make_window, tmp_path: Path, good_model: Path
) -> None:
    store = case.make(tmp_path)
    before = store.read_bytes()
    win = make_window(store)
    text = open_and_fail(qtbot, win, good_model)
    assert case.expected in text and "Choose another records database" in text
    close_dialogs(win)
    # Still alive: asking again answers again, the same way, and the file is still untouched.
    assert case.expected in open_and_fail(qtbot, win, good_model)
    assert win.isVisible() and win.worker is None
    assert store.read_bytes() == before


def test_locked_store_refuses_to_tune_within_seconds_and_keeps_its_rows(
    qtbot, make_window, locked_store: Path, good_model: Path
) -> None:
    before = corpus.store_rows(locked_store)
    win = make_window(locked_store)
    open_good(qtbot, win, good_model)  # reading a store someone else writes to is fine (WAL)
    with qtbot.waitSignal(win.errorShown, timeout=LOCK_DIALOG_TIMEOUT_MS):
        win.start_tune()
    text = error_dialog_text(win)
    assert corpus.LOCKED_STORE_MESSAGE in text and "Choose another records database" in text
    qtbot.waitUntil(lambda: win.worker is None, timeout=LOCK_DIALOG_TIMEOUT_MS)  # the tune ended, the app did not
    assert corpus.store_rows(locked_store) == before


def test_store_damaged_past_its_sessions_is_viewable_but_never_tuned_into(
    qtbot, make_window, tmp_path: Path, good_model: Path
) -> None:
    case = corpus.DAMAGED_TAIL_CASE
    store = case.make(tmp_path)
    before = store.read_bytes()
    win = make_window(store)
    open_good(qtbot, win, good_model)  # its sessions still read fine
    with qtbot.waitSignal(win.errorShown, timeout=DIALOG_TIMEOUT_MS):
        win.start_tune()
    assert case.expected in error_dialog_text(win)
    qtbot.waitUntil(lambda: win.worker is None, timeout=DIALOG_TIMEOUT_MS)
    assert store.read_bytes() == before
