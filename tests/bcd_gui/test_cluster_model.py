"""The cluster tree model on hand-built session views (no engine needed for widget logic)."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt
from PySide6.QtWidgets import QTreeView

from bcd_core.session_view import SessionSnapshot, TaskView, clusters_of
from bcd_core.tuning.control import TuningControl
from bcd_gui.cluster_model import COL_STATUS, COLUMNS, MIME_TYPE, ROLE_ITEM, ClusterTreeModel
from bcd_gui.workspace import Workspace


def task(index: int, cluster: str, position: int, representative: bool = False, **extra) -> TaskView:
    values = dict(
        index=index,
        row_id=index + 1,
        name=f"task{index}",
        weight=1,
        flops=1e6,
        shapes=[[1, 8]],
        operator_key=cluster,
        sketch_key=cluster,
        cluster_position=position,
        cluster_key=cluster,
        is_representative=representative,
        cap=None,
        status="queued",
    )
    values.update(extra)
    return TaskView(**values)


def snapshot(tasks: list[TaskView]) -> SessionSnapshot:
    session = {"id": 1, "model_name": "m.onnx", "strategy": "bcd", "status": "running", "elapsed_s": 1.0}
    return SessionSnapshot(session=session, tasks=tasks, clusters=clusters_of(tasks), timeline=[], metrics=[])


def three_clusters() -> list[TaskView]:
    return [
        task(0, "conv", 0, representative=True),
        task(1, "conv", 0),
        task(2, "conv", 0),
        task(3, "dense", 1),
        task(4, "pool", 2),
    ]


def column(name: str) -> int:
    return COLUMNS.index(name)


def test_tree_shows_clusters_with_the_representative_first(qtbot) -> None:
    tasks = three_clusters()
    tasks[0] = replace(tasks[0], index=0)
    model = ClusterTreeModel()
    model.set_snapshot(snapshot([tasks[1], tasks[0], *tasks[2:]]))
    assert model.rowCount() == 3
    conv = model.index(0, 0)
    assert model.rowCount(conv) == 3
    head = model.index(0, 0, conv)
    assert head.data() == tasks[0].name.removeprefix("fused_")  # no role suffix: the role is its weight and tooltip
    assert head.data(Qt.ItemDataRole.ToolTipRole).startswith(tasks[0].name + "\n")
    assert (
        head.data(Qt.ItemDataRole.FontRole).bold() and not model.index(1, 0, conv).data(Qt.ItemDataRole.FontRole).bold()
    )
    assert "representative of its cluster" in head.data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(0, 0, conv).data(ROLE_ITEM) == ("task", 0)
    assert model.index(1, 0).data(ROLE_ITEM) == ("cluster", "dense")


def test_updates_keep_selection_and_expansion_even_when_clusters_reorder(qtbot) -> None:
    model = ClusterTreeModel()
    view = QTreeView()
    qtbot.addWidget(view)
    view.setModel(model)
    tasks = three_clusters()
    model.set_snapshot(snapshot(tasks))
    view.expandAll()
    selected = model.index_of(("task", 2))
    view.selectionModel().select(selected, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    # Numbers change only: same structure.
    measured = [replace(t, trials=4, best_s=1e-4, status="tuning") for t in tasks]
    model.set_snapshot(snapshot(measured))
    assert [ix.data(ROLE_ITEM) for ix in view.selectionModel().selectedIndexes()] == [("task", 2)]
    assert model.index_of(("task", 2), column("Trials")).data() == "4"

    # The engine applied a new priority: pool first, conv last.
    reordered = [replace(t, cluster_position={"pool": 0, "dense": 1, "conv": 2}[t.cluster_key]) for t in measured]
    model.set_snapshot(snapshot(reordered))
    assert model.index(0, 0).data(ROLE_ITEM) == ("cluster", "pool")
    assert [ix.data(ROLE_ITEM) for ix in view.selectionModel().selectedIndexes()] == [("task", 2)]
    assert view.isExpanded(model.index_of(("cluster", "conv")))


def test_pending_requests_show_until_the_next_round(qtbot) -> None:
    model = ClusterTreeModel()
    model.set_snapshot(snapshot(three_clusters()))
    control = TuningControl()
    control.skip_task(3)
    control.set_cluster_priority(["pool", "conv", "dense"])
    model.set_pending(control.pending())
    status = model.index_of(("task", 3), COL_STATUS).data()
    assert status == "queued (skip)"  # short: the Status column shows it whole
    assert "pending until the next round: skip" in model.index_of(("task", 3)).data(Qt.ItemDataRole.ToolTipRole)
    assert model.index_of(("task", 3)).data(Qt.ItemDataRole.FontRole).italic()
    assert model.index_of(("cluster", "pool"), COL_STATUS).data() == "queued (+1)"  # its words: the tooltip
    assert "pending until the next round: reorder" in model.index_of(("cluster", "pool")).data(
        Qt.ItemDataRole.ToolTipRole
    )
    model.set_pending(control.take_pending()[:0])  # applied: nothing pending any more
    assert model.index_of(("task", 3), COL_STATUS).data() == "queued"


def test_dragging_a_cluster_requests_a_new_priority_and_a_task_a_move(qtbot) -> None:
    model = ClusterTreeModel()
    model.set_snapshot(snapshot(three_clusters()))
    with qtbot.waitSignal(model.priorityRequested) as reorder:
        data = model.mimeData([model.index_of(("cluster", "pool"))])
        model.dropMimeData(data, Qt.DropAction.MoveAction, 0, 0, QModelIndex())
    assert reorder.args[0] == ["pool", "conv", "dense"]
    with qtbot.waitSignal(model.moveRequested) as move:
        data = model.mimeData([model.index_of(("task", 1))])
        assert data.hasFormat(MIME_TYPE)
        model.dropMimeData(data, Qt.DropAction.MoveAction, -1, 0, model.index_of(("cluster", "dense")))
    assert move.args == [1, "dense"]


def test_speedup_over_untuned_and_cluster_totals(qtbot) -> None:
    tasks = [replace(t, best_s=1e-4, trials=8) for t in three_clusters()]
    model = ClusterTreeModel()
    model.set_snapshot(snapshot(tasks))
    model.set_untuned({t.index: 1e-3 for t in tasks})
    assert model.index_of(("task", 0), column("Speedup")).data() == "10.0x"
    assert model.index_of(("cluster", "conv"), column("Trials")).data() == "24"
    assert model.index_of(("cluster", "conv"), column("Best")).data() == "300.0 us"


def test_clusters_of_one_operator_chain_get_distinct_names(qtbot) -> None:
    tasks = [
        task(0, "sketch-1x1", 0, representative=True, operator_key="conv2d_add_relu"),
        task(1, "sketch-3x3", 1, representative=True, operator_key="conv2d_add_relu"),
        task(2, "pool", 2, operator_key="max_pool2d"),
    ]
    model = ClusterTreeModel()
    model.set_snapshot(snapshot(tasks))
    names = [model.index(row, 0).data() for row in range(model.rowCount())]
    assert len(set(names)) == 3
    assert names[0].startswith("1. conv2d_add_relu (1 of 2)") and names[1].startswith("2. conv2d_add_relu (2 of 2)")
    assert names[2] == "3. max_pool2d (1 task)"


def test_a_cluster_a_move_creates_opens_like_the_others(qtbot) -> None:
    """Moved out of its cluster, a task heads a cluster of its own: that row opens, as every
    cluster row does when a session is shown, and the rows that were open stay open."""
    model = ClusterTreeModel()
    tree = Workspace.build_tree(model)  # the dashboard's tree, without the rest of the window
    qtbot.addWidget(tree)
    model.set_snapshot(snapshot(three_clusters()))
    tree.expandAll()
    moved = three_clusters()
    moved[2] = replace(moved[2], cluster_key="singleton-2", cluster_position=3)
    model.set_snapshot(snapshot(moved))
    for key in ("conv", "dense", "pool", "singleton-2"):
        assert tree.isExpanded(model.index_of(("cluster", key))), key
