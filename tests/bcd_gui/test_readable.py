"""What the window draws can be read: task names and statuses whole (or the name in a tooltip),
the columns that matter on screen at 1024x700, plots fitted to each store's data, and no speedup
without the untuned estimate it divides."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication
from synthetic_store import generate_store
from window_helpers import open_and_wait

from bcd_core.tuning.control import TuningControl
from bcd_gui.cluster_model import COLUMNS

MARGIN = 6  # a cell's own padding, in pixels


def _rows(model):
    for row in range(model.rowCount()):
        cluster = model.index(row, 0)
        yield cluster
        for child in range(model.rowCount(cluster)):
            yield model.index(child, 0, cluster)


def _show_store(window, path: Path) -> None:
    window.open_store(path)
    QApplication.processEvents()
    window.tree.expandAll()
    window.workspace.resize_columns()
    QApplication.processEvents()


def _microsecond_store(path: Path) -> Path:
    """A generated store whose latencies are a thousand times smaller: an MLP's microseconds."""
    generate_store(path, trials=600, tasks=4, seed=3)
    with sqlite3.connect(path) as db:
        db.execute("update trials set latency_s = latency_s / 1000 where latency_s is not null")
        db.execute("update timeline set estimated_latency_s = estimated_latency_s / 1000")
        db.execute("update sessions set estimated_latency_s = estimated_latency_s / 1000")
    return path


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_names_and_statuses_read_whole_and_the_columns_that_matter_show(qtbot, window, tmp_path, size) -> None:
    generate_store(tmp_path / "squeezenet-like.db", trials=2000, tasks=26, seed=2)
    window.resize(*size)
    qtbot.wait(100)
    _show_store(window, tmp_path / "squeezenet-like.db")
    tree, model = window.tree, window.tree_model
    metrics = tree.fontMetrics()
    status = COLUMNS.index("Status")
    for index in _rows(model):
        shown = index.data()
        whole = metrics.horizontalAdvance(shown) + MARGIN <= tree.visualRect(index).width()
        tip = index.data(Qt.ItemDataRole.ToolTipRole) or ""
        item = index.data(Qt.ItemDataRole.UserRole + 1)
        full = model.snapshot.task(item[1]).name if item[0] == "task" else shown
        assert whole or tip.startswith(full), (shown, tip[:60])
        text = index.siblingAtColumn(status).data()
        assert metrics.horizontalAdvance(text) + MARGIN <= tree.columnWidth(status), text
    control = TuningControl()  # requests waiting for the next round: their statuses are italic
    for index in range(4):
        control.skip_task(index) if index % 2 else control.move_task(index, None)
    window.pending_control = control
    window.show_pending()
    for index in _rows(model):
        cell = index.siblingAtColumn(status)
        font = cell.data(Qt.ItemDataRole.FontRole) or tree.font()
        assert QFontMetrics(font).horizontalAdvance(cell.data()) + MARGIN <= tree.columnWidth(status), cell.data()
    viewport = tree.viewport().width()
    header = tree.header()
    for name in ("Speedup", "Status", "Origin"):
        column = COLUMNS.index(name)
        widths = [tree.columnWidth(c) for c in range(6)]
        assert header.sectionViewportPosition(column) + header.sectionSize(column) <= viewport, (name, size, widths)


def test_the_latency_plot_fits_each_store_and_never_shows_below_zero(qtbot, window, tmp_path) -> None:
    big = generate_store(tmp_path / "squeezenet-like.db", trials=2000, tasks=26, seed=2)
    small = _microsecond_store(tmp_path / "mlp-like.db")
    for path in (tmp_path / "squeezenet-like.db", small, tmp_path / "squeezenet-like.db"):
        _show_store(window, path)
        qtbot.wait(50)
        QApplication.processEvents()
        plot = window.latency_plot
        low, high = plot.widget.getPlotItem().vb.viewRange()[1]
        _, ys = plot.curve.getData()
        assert len(ys) and low >= 0, (path.name, low)
        assert low <= min(ys) and max(ys) <= high, (path.name, low, high, min(ys), max(ys))
        unit = "µs" if path == small else "ms"
        assert plot.widget.getAxis("left").labelText == f"latency ({unit})"
        assert ys[-1] == pytest.approx(window.snapshot.timeline[-1][1] * plot.scale)
    assert big.estimated_latency_s > 1e-3


def test_no_speedup_is_shown_while_the_untuned_estimate_is_unknown(qtbot, window, tmp_path) -> None:
    generate_store(tmp_path / "a.db", trials=600, tasks=6, seed=4)
    window.tree_model.set_untuned({index: 1.0 for index in range(6)})  # a previous model's, by index
    _show_store(window, tmp_path / "a.db")  # opened without its model: nothing untuned is known
    speedup = COLUMNS.index("Speedup")
    assert all(not index.siblingAtColumn(speedup).data() for index in _rows(window.tree_model))
    assert "open the model" in window.overview.values["untuned"].text()
    # A figure in the metric font, a sentence saying what is missing in the rows' own.
    metric_size = window.overview.values["estimate"].font().pixelSize()
    assert "ms" in window.overview.values["estimate"].text() and metric_size == 15
    assert window.overview.values["untuned"].font().pixelSize() != metric_size


def test_a_speedup_is_shown_only_for_the_task_that_was_timed_untuned(qtbot, window, tmp_path) -> None:
    """Untuned latencies follow the task's name: a session tuned in another layout numbers its
    tasks otherwise, and a task the timed model lacks gets no speedup."""
    generate_store(tmp_path / "a.db", trials=600, tasks=6, seed=4)
    _show_store(window, tmp_path / "a.db")
    timed = window.snapshot.tasks[2]
    window.untuned = {timed.name: 1.0, "fused_conv2d_NCHWc0_add": 1.0}
    window.show_session(window.snapshot.session_id)
    speedup = COLUMNS.index("Speedup")
    shown = {
        index.data(Qt.ItemDataRole.UserRole + 1): index.siblingAtColumn(speedup).data()
        for index in _rows(window.tree_model)
    }
    assert shown[("task", timed.index)].endswith("x")
    assert [item for item, text in shown.items() if text and item[0] == "task"] == [("task", timed.index)]


def test_steering_before_tune_shows_in_the_tree_at_once(qtbot, window, tiny_convnet: Path) -> None:
    preview = open_and_wait(qtbot, window, tiny_convnet)
    tasks = len(preview.tasks)
    window.settings_panel.trials_per_task.setValue(4)
    assert window.snapshot.trials_total == 4 * tasks  # not the default's total until Tune
    last = window.tree_model.index(window.tree_model.rowCount() - 1, 0).data(Qt.ItemDataRole.UserRole + 1)[1]
    order = [c.key for c in window.snapshot.clusters]
    window.request_priority([last, *[key for key in order if key != last]])
    assert window.snapshot.clusters[0].key == last  # moved up before Tune
    task = window.snapshot.clusters[0].members[0]
    window.workspace.select_item(("task", task))
    window.set_budget(9)
    assert window.snapshot.task(task).cap == 9 and window.snapshot.trials_total == 4 * tasks + 5
    assert window.tree_model.index_of(("task", task), COLUMNS.index("Trials")).data() == "0/9"
    window.skip_selected()
    assert window.snapshot.task(task).status == "skipped"
    window.request_move(task, None)  # out of its cluster, before Tune: a cluster of its own at once
    assert window.snapshot.task(task).cluster_key == f"single:{task}" and window.snapshot.task(task).cap == 9
