"""The window on a big store: the right counts and curves (timings: experiments/load_bench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelection, QItemSelectionModel
from PySide6.QtWidgets import QApplication
from synthetic_store import generate_store

from bcd_core.formatting import format_latency
from bcd_core.records.store import RecordStore
from bcd_gui.cluster_model import COLUMNS, ROLE_ITEM
from bcd_gui.plots import TaskCurvesPlot

TRIALS = 20_000


@pytest.fixture
def big_window(window, tmp_path: Path):
    """The window showing a generated 20 000-trial session, as after opening its model."""
    generated = generate_store(window.db_path, trials=TRIALS, tasks=30, seed=1)
    assert window.open_reader()  # what opening the model does once it is imported
    window.show_session(generated.session_id)
    QApplication.processEvents()
    return window, generated


def test_a_big_store_shows_every_trial_in_tree_status_and_overview(big_window) -> None:
    window, generated = big_window
    model = window.tree_model
    trials_column, best_column = COLUMNS.index("Trials"), COLUMNS.index("Best")
    assert window.snapshot.trials_done == TRIALS
    assert window.trials_label.text().startswith(f"{TRIALS}/") and f"({generated.failed} failed)" in (
        window.trials_label.text()
    )
    assert window.overview.values["trials"].text().startswith(f"{TRIALS} / ")
    assert sum(int(model.index(row, trials_column).data()) for row in range(model.rowCount())) == TRIALS
    seen = 0
    for row in range(model.rowCount()):
        cluster = model.index(row, 0)
        for child in range(model.rowCount(cluster)):
            index = model.index(child, 0, cluster).data(ROLE_ITEM)[1]
            text = model.index(child, trials_column, cluster).data()
            assert text.split()[0] == str(generated.trials_per_task[index])
            best = model.index(child, best_column, cluster).data()
            assert best == format_latency(generated.best_per_task[index])
            seen += 1
    assert seen == len(generated.trials_per_task)
    assert window.sessions.table.rowCount() == 1


def test_a_big_store_draws_the_best_so_far_curves(big_window) -> None:
    window, generated = big_window
    # Model latency: a staircase ending at the final estimate, one corner per improvement.
    xs, ys = window.latency_plot.curve.getData()
    assert ys[-1] == pytest.approx(generated.estimated_latency_s * 1e3)
    assert list(ys) == sorted(ys, reverse=True)
    assert xs[-1] == pytest.approx(window.snapshot.timeline[-1][0] / 60)
    assert 0 < len(xs) < 2 * len(window.snapshot.timeline)

    # Nothing selected: the heaviest tasks, each curve ending at its best after all its trials.
    by_name = {task.name: task for task in window.snapshot.tasks}
    assert len(window.task_plot.curves) == 4
    for name, item in window.task_plot.curves.items():
        xs, ys = item.xData, item.yData  # as given: getData() is log10 on this log-scale plot
        task = by_name[name]
        assert xs[-1] == generated.trials_per_task[task.index]
        assert ys[-1] == pytest.approx(generated.best_per_task[task.index] * 1e3)
        assert list(ys) == sorted(ys, reverse=True)

    # Select more tasks than the plot shows: it draws its maximum, the ones selected first.
    chosen = window.snapshot.tasks[: TaskCurvesPlot.MAX_CURVES + 2]
    selection = QItemSelection()
    for task in chosen:
        index = window.tree_model.index_of(("task", task.index))
        selection.select(index, index)
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    window.tree.selectionModel().select(selection, flags)
    QApplication.processEvents()
    assert len(window.task_plot.curves) == TaskCurvesPlot.MAX_CURVES
    assert set(window.task_plot.curves) <= {task.name for task in chosen}

    # Cost model: a point per round, and the latest round's predictions.
    assert len(window.cost_plot.pairwise.getData()[0]) == generated.rounds
    assert len(window.cost_plot.scatter.data) > 0


def test_theme_switch_and_reopening_keep_the_same_view(big_window) -> None:
    window, generated = big_window
    before = window.latency_plot.curve.getData()[1].tolist()
    window.set_theme("dark")
    window.sessions.openRequested.emit(generated.session_id)  # double-click in the Sessions list
    QApplication.processEvents()
    assert window.latency_plot.curve.getData()[1].tolist() == before
    assert window.snapshot.trials_done == TRIALS
    store = RecordStore(window.db_path, create=False)
    assert store.trial_counts(generated.session_id) == {task.row_id: task.trials for task in window.snapshot.tasks}
    store.close()
