"""Error dialogs that say what happened and what to do; they never block the tuner."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QMessageBox, QWidget

from bcd_core.errors import (
    BcdError,
    DynamicShapeError,
    MissingRecordError,
    ModelLoadError,
    StoreError,
    TargetError,
    TensorSizeError,
    UnsupportedOperatorError,
)


@dataclass(frozen=True)
class Explanation:
    title: str
    message: str
    advice: str


def explain(error: BaseException, doing: str) -> Explanation:
    message = str(error) or type(error).__name__
    advice = {
        ModelLoadError: "Choose a valid ONNX model file (File > Open).",
        UnsupportedOperatorError: "Export the model without these operators (or with another opset) and open it again.",
        DynamicShapeError: "Enter the input's shape under Settings > Input shapes (NAME=1,3,224,224), then open or "
        "tune again.",
        TensorSizeError: "Enter a realistic input shape under Settings > Input shapes (NAME=1,3,224,224), or "
        "re-export the model.",
        TargetError: "Correct the target under Settings: 'llvm' tunes for this CPU.",
        StoreError: "Choose another records database (bcd-gui --db PATH) or close the other program using it.",
        MissingRecordError: "Tune the listed tasks first (Tune, or resume the session).",
    }
    for kind, text in advice.items():
        if isinstance(error, kind):
            return Explanation(f"Cannot {doing}", message, text)
    if isinstance(error, BcdError):
        return Explanation(f"Cannot {doing}", message, "Check the log dock for details.")
    return Explanation(
        f"Unexpected error while trying to {doing}",
        f"{type(error).__name__}: {message.splitlines()[0] if message else ''}",
        "Nothing stored was lost. The log dock has the details; please report this with the log.",
    )


def show_error(parent: QWidget, error: BaseException, doing: str) -> QMessageBox:
    """Window-modal but non-blocking: the event loop (and the tuner's updates) keep running."""
    info = explain(error, doing)
    box = QMessageBox(QMessageBox.Icon.Critical, info.title, info.message, QMessageBox.StandardButton.Ok, parent)
    box.setInformativeText(info.advice)
    box.setObjectName("errorDialog")
    box.open()
    return box
