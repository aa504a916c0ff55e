"""What window tests share: reading the error dialog, and leaving no background work behind."""

from __future__ import annotations

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
