"""Guards against a Qt binding that corrupts Python's None (PySide6 6.12.0 on Python 3.11)."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal from Python 3.12")
def test_void_methods_keep_the_reference_count_of_none(qtbot) -> None:
    label, font = QLabel(), QFont()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(500):
        font.setBold(True)
        label.setText("x")
    # A broken binding loses one reference per call (1000 here) and soon aborts the app.
    assert sys.getrefcount(None) - before > -50
