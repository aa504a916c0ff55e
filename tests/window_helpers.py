"""What window tests share: opening a model and waiting, reading the error dialog, and leaving no
background work behind. Kept out of conftest.py: several test folders have one, and a test that
imports `conftest` gets whichever pytest loaded last."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox


def error_dialog_text(win) -> str:
    boxes = [b for b in win.findChildren(QMessageBox) if b.objectName() == "errorDialog" and b.isVisible()]
    assert boxes, "no error dialog is shown"
    return boxes[-1].text() + "\n" + boxes[-1].informativeText()


def finish_background_work(win) -> None:
    """Stop a running tune (after its batch) and wait for every background job."""
    if win.worker is not None:
        win.tuning.stop_and_wait(60)
    for job in list(win.jobs):
        job.wait(60_000)


def open_and_wait(qtbot, win, path: Path, timeout_ms: int = 120_000):
    with qtbot.waitSignal(win.modelOpened, timeout=timeout_ms) as blocker:
        win.open_model(path)
    return blocker.args[0]
