"""The window's central area: a welcome page, then the cluster tree beside the plots.

The tree's selection is read here too, since the steering and the task views act on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QObject, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from bcd_core.session_view import SessionSnapshot
from bcd_gui.cluster_model import COLUMNS, ROLE_ITEM, ClusterTreeModel
from bcd_gui.paths import SAMPLE_MODEL, icon
from bcd_gui.plots import CostModelPlot, ModelLatencyPlot, TaskCurvesPlot, restyle
from bcd_gui.theme import PlotColors

MIN_TASK_COLUMN_EM = 8
# The widest value each column will show while tuning: fitted before the numbers arrive, a
# column must not cut them later (the tree is not re-measured on every round).
WIDEST_VALUE = {
    "Trials": "888/888 ✗",
    "Best": "888.888 ms",
    "Speedup": "8888.8x",
    "Status": "refining (+8)",
    "Origin": "diffused",
}


class FittingTreeView(QTreeView):
    """A tree view that calls `on_resize` when its width changes: the task names' column takes
    what the other columns leave, at every window size."""

    def __init__(self) -> None:
        super().__init__()
        self.on_resize: Callable[[], None] = lambda: None

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.on_resize()

    def expand_clusters(self, keys: list[str]) -> None:
        """A cluster a move created opens like the others (the tree shows every member)."""
        model = self.model()
        for key in keys:
            self.expand(model.index_of(("cluster", key)))


class Workspace:
    """Builds and holds the central widgets; `pages` is what the window shows in the middle.
    `open_sample` and `choose_model` are what the welcome page's two buttons do; the tree model
    is parented to `parent`, the window."""

    def __init__(
        self,
        parent: QObject,
        colors: PlotColors,
        open_sample: Callable[[], None],
        choose_model: Callable[[], None],
    ) -> None:
        self.tree_model = ClusterTreeModel(parent)
        self.tree = self.build_tree(self.tree_model)
        self._names_width = 0  # what the task names need, measured once per session shown
        self.tree.on_resize = self._fit_task_column
        self.resize_columns()
        self.latency_plot = ModelLatencyPlot(colors)
        self.task_plot = TaskCurvesPlot(colors)
        self.cost_plot = CostModelPlot(colors)
        self.plot_tabs = QTabWidget()
        self.plot_tabs.addTab(self.task_plot, "Tasks")
        self.plot_tabs.addTab(self.cost_plot, "Cost model")
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.latency_plot)
        right.addWidget(self.plot_tabs)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.tree)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)  # the tree's columns through Origin fit at 1024 px
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([740, 320])
        self.welcome = self._build_welcome(open_sample, choose_model)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.splitter)

    @staticmethod
    def build_tree(model: ClusterTreeModel) -> FittingTreeView:
        tree = FittingTreeView()
        tree.setObjectName("clusterTree")
        tree.setModel(model)
        model.clustersAdded.connect(tree.expand_clusters)  # both Qt objects: gone together
        tree.setAlternatingRowColors(True)
        tree.setUniformRowHeights(True)
        tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        tree.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        tree.setDragEnabled(True)
        tree.setAcceptDrops(True)
        tree.setDropIndicatorShown(True)
        tree.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        # Interactive, not ResizeToContents: measured once per session shown (resize_columns),
        # not on every round's update.
        tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # fused_conv2d...add4_relu4: both ends tell
        header = tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        return tree

    def _build_welcome(self, open_sample: Callable[[], None], choose_model: Callable[[], None]) -> QWidget:
        welcome = QWidget()
        layout = QVBoxLayout(welcome)
        layout.addStretch()
        title = QLabel(
            "<h2>Open an ONNX model to tune</h2>"
            "<p>File &gt; Open (Ctrl+O), drop a file here, or start with the bundled sample.</p>"
        )
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        row = QHBoxLayout()
        row.addStretch()
        self.sample_button = QPushButton(icon("tune"), f"Open the sample model ({SAMPLE_MODEL.name})")
        self.sample_button.clicked.connect(open_sample)
        open_button = QPushButton(icon("open"), "Open...")
        open_button.clicked.connect(choose_model)
        row.addWidget(self.sample_button)
        row.addWidget(open_button)
        row.addStretch()
        layout.addLayout(row)
        layout.addStretch()
        return welcome

    def resize_columns(self) -> None:
        """Every column but the task names fitted to its contents (the tuner runs in another
        process, so measuring the cells costs this window little); names get what they need
        up to what the columns through Origin leave, at least a minimum, elided in the middle
        where they do not fit (the full name is the cell's tooltip)."""
        em = self.tree.fontMetrics().horizontalAdvance("M")
        self.tree.resizeColumnToContents(0)
        self._names_width = self.tree.columnWidth(0)
        cell = self.tree.fontMetrics()
        for column in range(1, len(COLUMNS)):
            self.tree.resizeColumnToContents(column)
            widest = WIDEST_VALUE.get(COLUMNS[column])
            if widest:
                needed = cell.horizontalAdvance(widest) + em  # the cell's margins
                self.tree.setColumnWidth(column, max(self.tree.columnWidth(column), needed))
        self._fit_task_column()

    def refit_status_column(self) -> None:
        """Widen the Status column to what it shows now: a pending request's status is italic,
        and may be wider than any status fitted for."""
        status = COLUMNS.index("Status")
        before = self.tree.columnWidth(status)
        self.tree.resizeColumnToContents(status)
        self.tree.setColumnWidth(status, max(before, self.tree.columnWidth(status)))
        self._fit_task_column()

    def _fit_task_column(self) -> None:
        em = self.tree.fontMetrics().horizontalAdvance("M")
        others = sum(self.tree.columnWidth(c) for c in range(1, COLUMNS.index("Origin") + 1))
        room = self.tree.viewport().width() - others
        self.tree.setColumnWidth(0, max(int(MIN_TASK_COLUMN_EM * em), min(self._names_width, room)))

    def show_results(self) -> None:
        """Leave the welcome page for the tree and plots."""
        self.pages.setCurrentWidget(self.splitter)

    def showing_results(self) -> bool:
        return self.pages.currentWidget() is self.splitter

    def restyle(self, colors: PlotColors) -> None:
        for plot in (self.latency_plot, self.task_plot, self.cost_plot):
            plot.colors = colors  # what they draw from now on (titles set per update too)
        for widget in (
            self.latency_plot.widget,
            self.task_plot.widget,
            self.cost_plot.accuracy,
            self.cost_plot.scatter_plot,
        ):
            restyle(widget, colors)

    # -- the tree's selection -------------------------------------------------------------
    def selected_items(self) -> list[tuple[str, Any]]:
        items = []
        for index in self.tree.selectionModel().selectedRows(0):
            item = index.data(ROLE_ITEM)
            if item is not None:
                items.append(tuple(item))
        return items

    def selected_tasks(self) -> list[int]:
        return [value for kind, value in self.selected_items() if kind == "task"]

    def selected_cluster(self, snapshot: SessionSnapshot | None) -> str | None:
        """The cluster selected, or the cluster of the first task selected (per `snapshot`)."""
        for kind, value in self.selected_items():
            if kind == "cluster":
                return value
            if kind == "task" and snapshot is not None:
                return snapshot.task(value).cluster_key
        return None

    def select_item(self, item: tuple[str, Any]) -> None:
        index = self.tree_model.index_of(item)
        self.tree.selectionModel().select(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.tree.setCurrentIndex(index)
