"""Where the bundled resources live (icons, style sheets, the sample model)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtGui import QIcon

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SAMPLE_MODEL = RESOURCES / "models" / "mlp_mnist.onnx"


@cache
def icon(name: str) -> QIcon:
    return QIcon(str(RESOURCES / "icons" / f"{name}.svg"))


def style_sheet(theme: str) -> str:
    path = RESOURCES / "style" / f"{theme}.qss"
    return path.read_text() if path.is_file() else ""
