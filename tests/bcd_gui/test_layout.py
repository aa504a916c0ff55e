"""The window's layout holds from its minimum size (1024x700) up: no widget drawn over another,
no field squeezed below its own minimum, the tree's numbers not cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTreeView,
    QWidget,
)
from window_helpers import open_and_wait

LEAVES = (QLabel, QLineEdit, QAbstractSpinBox, QComboBox, QPushButton, QTableWidget, QTreeView)


def _visible_rect(widget: QWidget, window: QWidget) -> QRect:
    """The part of `widget` on screen (clipped by its parents), in window coordinates."""
    region = widget.visibleRegion().boundingRect()
    if region.isEmpty():
        return QRect()
    return QRect(widget.mapTo(window, region.topLeft()), region.size())


def _leaves(window: QWidget) -> list[QWidget]:
    found = []
    for widget in window.findChildren(QWidget):
        if not isinstance(widget, LEAVES) or not widget.isVisible():
            continue
        if any(isinstance(parent, LEAVES) for parent in _ancestors(widget)):
            continue  # a part of a composite widget (a spin box's line edit, a table's header)
        found.append(widget)
    return found


def _ancestors(widget: QWidget) -> list[QWidget]:
    chain, parent = [], widget.parentWidget()
    while parent is not None:
        chain.append(parent)
        parent = parent.parentWidget()
    return chain


def overlaps(window: QWidget) -> list[str]:
    shown = [(w, _visible_rect(w, window)) for w in _leaves(window)]
    shown = [(w, r) for w, r in shown if not r.isEmpty()]
    found = []
    for i, (a, ra) in enumerate(shown):
        for b, rb in shown[i + 1 :]:
            if ra.intersects(rb) and ra.intersected(rb).width() > 1 and ra.intersected(rb).height() > 1:
                found.append(
                    f"{type(a).__name__} {a.objectName() or _text(a)!r} {ra} x {type(b).__name__} {_text(b)!r} {rb}"
                )
    return found


def squeezed(window: QWidget) -> list[str]:
    """Input fields shown shorter than they need (their text would be cut)."""
    found = []
    for widget in _leaves(window):
        if isinstance(widget, QLineEdit | QAbstractSpinBox | QComboBox | QPushButton):
            if widget.height() < widget.minimumSizeHint().height() - 2:  # scrolled out of view is fine
                found.append(f"{type(widget).__name__} {_text(widget)!r}: {widget.height()} px")
    return found


def _text(widget: QWidget) -> str:
    text = getattr(widget, "text", None)
    return str(text())[:30] if callable(text) else ""


@pytest.mark.parametrize("size", [(1024, 700), (1600, 1000)])
def test_no_widget_overlaps_another_from_the_minimum_size_up(
    qtbot, window, tiny_convnet: Path, size: tuple[int, int]
) -> None:
    open_and_wait(qtbot, window, tiny_convnet)
    window.resize(*size)
    qtbot.wait(200)
    QApplication.processEvents()
    assert (window.width(), window.height()) == size
    assert overlaps(window) == []
    assert squeezed(window) == []


def test_the_window_cannot_be_made_smaller_than_its_layout_holds(qtbot, window) -> None:
    window.resize(600, 400)
    QApplication.processEvents()
    assert window.width() >= 1024 and window.height() >= 700


def test_the_trees_numbers_are_not_cut_at_the_minimum_size(qtbot, window, tiny_convnet: Path) -> None:
    open_and_wait(qtbot, window, tiny_convnet)
    window.resize(1024, 700)
    qtbot.wait(200)
    tree = window.tree
    window.workspace.resize_columns()
    metrics = tree.fontMetrics()
    model = window.tree_model
    for column in (1, 2, 3):  # Trials, Best, Speedup: fitted to what they hold
        texts = [str(model.headerData(column, 1) or "")]
        for row in range(model.rowCount()):
            parent = model.index(row, 0)
            texts.append(str(model.index(row, column).data() or ""))
            texts += [str(model.index(r, column, parent).data() or "") for r in range(model.rowCount(parent))]
        widest = max(metrics.horizontalAdvance(text) for text in texts)
        assert tree.columnWidth(column) >= widest, (column, texts)


def test_columns_fitted_before_tuning_hold_the_numbers_that_come(qtbot, window, tiny_convnet: Path) -> None:
    """Columns are fitted when a model opens (no numbers yet) and not re-measured each round:
    a best latency and a speedup that arrive later must still fit."""
    open_and_wait(qtbot, window, tiny_convnet)
    window.resize(1024, 700)
    qtbot.wait(200)
    window.workspace.resize_columns()
    metrics = window.tree.fontMetrics()
    for column, text in ((2, "123.456 ms"), (3, "1234.5x"), (1, "1024")):
        assert window.tree.columnWidth(column) >= metrics.horizontalAdvance(text), (column, text)
