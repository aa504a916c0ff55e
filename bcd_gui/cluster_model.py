"""The cluster tree: cluster -> representative -> members, over the engine's session view.

Updates keep the view's selection and expansion: when only numbers change the model emits
dataChanged; when clusters are reordered or tasks move, persistent indexes are remapped.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QByteArray, QMimeData, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont

from bcd_core.formatting import counted, format_flops, format_latency
from bcd_core.records.states import BUSY_TASK_STATES, TaskStatus
from bcd_core.session_view import SessionSnapshot, TaskView, cluster_titles
from bcd_core.tuning.control import ControlRequest, RequestKind

COLUMNS = ("Task", "Trials", "Best", "Speedup", "Status", "Origin", "Weight", "FLOPs", "Shapes", "Key")
COL_STATUS = COLUMNS.index("Status")
NUMERIC_COLUMNS = {COLUMNS.index(name) for name in ("Trials", "Best", "Speedup", "Weight", "FLOPs")}
STATUS_COLORS = {
    TaskStatus.TUNING: "#2f80ed",
    TaskStatus.REFINING: "#2f80ed",
    TaskStatus.DIFFUSED: "#9b51e0",
    TaskStatus.DONE: "#27ae60",
    TaskStatus.SKIPPED: "#8a8f98",
    TaskStatus.FALLBACK: "#e67e22",
    TaskStatus.STOPPED: "#8a8f98",
}
STATUS_ROOM = 13  # characters: a status with its pending request beyond this counts them instead
MIME_TYPE = "application/x-bcd-tree-item"
Index = QModelIndex | QPersistentModelIndex
ROOT = QModelIndex()  # the invisible root, as a default argument
ROLE_ITEM = Qt.ItemDataRole.UserRole + 1  # ("cluster", key) or ("task", index)


def request_words(request: ControlRequest) -> str:
    """A pending request in a few words, as its row shows it."""
    args = request.args
    return {
        RequestKind.PRIORITY: "reorder",
        RequestKind.TASK_BUDGET: f"budget {args.get('trials')}",
        RequestKind.CLUSTER_BUDGET: f"budget {args.get('trials')}",
        RequestKind.TOTAL_BUDGET: f"total budget {args.get('trials')}",
        RequestKind.SKIP: "skip",
        RequestKind.UNSKIP: "un-skip",
        RequestKind.MOVE: "move",
        RequestKind.REPRESENTATIVE: "new representative",
    }.get(request.kind, str(request.kind))


def describe_pending(request: ControlRequest, snapshot: SessionSnapshot | None) -> str:
    """What a pending request will do, naming its task or cluster: for the status bar."""
    args = request.args
    subject = ""
    if "task" in args and snapshot is not None:
        try:
            subject = f" {snapshot.task(int(args['task'])).name}"
        except KeyError:
            subject = f" task {args['task']}"
    elif args.get("cluster"):
        subject = f" cluster {args['cluster']}"
    if request.kind == RequestKind.MOVE:
        return f"move{subject} to {args.get('cluster') or 'a cluster of its own'}"
    return f"{request_words(request)}{subject}"


def status_text(status: str, pending: list[str] | None) -> str:
    """A status and what is pending for it, short enough to read in a narrow column: "queued
    (skip)", or "tuning (+2)" when the requests' words would not fit (the tooltip has them)."""
    if not pending:
        return status
    words = f"{status} ({', '.join(sorted(set(pending)))})"
    return words if len(words) <= STATUS_ROOM else f"{status} (+{len(pending)})"


class ClusterTreeModel(QAbstractItemModel):
    priorityRequested = Signal(list)  # cluster keys in the new order
    moveRequested = Signal(int, str)  # task index, target cluster key
    clustersAdded = Signal(list)  # keys of clusters a new structure brought (a move made them)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.snapshot: SessionSnapshot | None = None
        self.untuned: dict[int, float] = {}
        self._pending_task: dict[int, list[str]] = {}
        self._pending_cluster: dict[str, list[str]] = {}
        self._structure: list[tuple[str, tuple[int, ...]]] = []
        self._titles: dict[str, str] = {}

    # -- feeding --------------------------------------------------------------------------
    def set_snapshot(self, snapshot: SessionSnapshot) -> None:
        structure = [(c.key, tuple(c.members)) for c in snapshot.clusters]
        self._titles = cluster_titles(snapshot)
        if self.snapshot is None or not self._structure:
            self.beginResetModel()
            self.snapshot, self._structure = snapshot, structure
            self.endResetModel()
        elif structure == self._structure:
            self.snapshot = snapshot
            self._all_changed()
        else:
            self.layoutAboutToBeChanged.emit()
            before = self.persistentIndexList()
            identities = [(self.item_at(ix), ix.column()) for ix in before]
            known = {key for key, _ in self._structure}
            self.snapshot, self._structure = snapshot, structure
            after = [self.index_of(item, column) if item else QModelIndex() for item, column in identities]
            self.changePersistentIndexList(before, after)
            self.layoutChanged.emit()
            added = [key for key, _ in structure if key not in known]
            if added:
                self.clustersAdded.emit(added)

    def set_untuned(self, untuned: dict[int, float]) -> None:
        self.untuned = dict(untuned)
        self._all_changed()

    def set_pending(self, requests: list[ControlRequest]) -> None:
        """Requests queued for the next round, shown on the rows they will change."""
        tasks: dict[int, list[str]] = {}
        clusters: dict[str, list[str]] = {}
        for request in requests:
            args = request.args
            text = request_words(request)
            if "task" in args:
                tasks.setdefault(args["task"], []).append(text)
            if "cluster" in args and args["cluster"]:
                clusters.setdefault(args["cluster"], []).append(text)
            if request.kind == RequestKind.PRIORITY:
                for key in args.get("order", []):
                    clusters.setdefault(key, []).append(text)
        if (tasks, clusters) == (self._pending_task, self._pending_cluster):
            return  # nothing to redraw: this runs on every round
        self._pending_task, self._pending_cluster = tasks, clusters
        self._all_changed()

    def _all_changed(self) -> None:
        rows = self.rowCount()
        if rows == 0:
            return
        last = len(COLUMNS) - 1
        self.dataChanged.emit(self.index(0, 0), self.index(rows - 1, last))
        for row in range(rows):
            parent = self.index(row, 0)
            children = self.rowCount(parent)
            if children:
                self.dataChanged.emit(self.index(0, 0, parent), self.index(children - 1, last, parent))

    # -- addressing -----------------------------------------------------------------------
    # internalId 0 marks a cluster row; n > 0 marks a task row under cluster row n - 1.
    def index(self, row: int, column: int, parent: Index = ROOT) -> QModelIndex:
        if self.snapshot is None or not self.hasIndex(row, column, parent):
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, 0)
        return self.createIndex(row, column, parent.row() + 1)

    def parent(self, index: Index = ROOT) -> QModelIndex:  # type: ignore[override]
        if not index.isValid() or index.internalId() == 0:
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, 0)

    def rowCount(self, parent: Index = ROOT) -> int:
        if self.snapshot is None:
            return 0
        if not parent.isValid():
            return len(self.snapshot.clusters)
        if parent.internalId() == 0 and parent.column() == 0:
            return self.snapshot.clusters[parent.row()].size
        return 0

    def columnCount(self, parent: Index = ROOT) -> int:
        return len(COLUMNS)

    def item_at(self, index: Index) -> tuple[str, Any] | None:
        if self.snapshot is None or not index.isValid():
            return None
        if index.internalId() == 0:
            return ("cluster", self.snapshot.clusters[index.row()].key)
        cluster = self.snapshot.clusters[index.internalId() - 1]
        return ("task", cluster.members[index.row()])

    def index_of(self, item: tuple[str, Any], column: int = 0) -> QModelIndex:
        if self.snapshot is None:
            return QModelIndex()
        kind, value = item
        for position, cluster in enumerate(self.snapshot.clusters):
            if kind == "cluster" and cluster.key == value:
                return self.index(position, column)
            if kind == "task" and value in cluster.members:
                return self.index(cluster.members.index(value), column, self.index(position, 0))
        return QModelIndex()

    # -- contents -------------------------------------------------------------------------
    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        item = self.item_at(index)
        if item is None or self.snapshot is None:
            return None
        if role == ROLE_ITEM:
            return item
        if item[0] == "cluster":
            return self._cluster_data(item[1], index.row(), index.column(), role)
        return self._task_data(self.snapshot.task(item[1]), index.column(), role)

    def _speedup(self, tasks: list[TaskView]) -> str:
        if not tasks or any(t.best_s is None or t.index not in self.untuned for t in tasks):
            return ""
        tuned = sum(t.weight * (t.best_s or 0) for t in tasks)
        untuned = sum(t.weight * self.untuned[t.index] for t in tasks)
        if tuned <= 0:
            return ""
        ratio = untuned / tuned
        return f"{ratio:.1f}x" if ratio < 100 else f"{ratio:,.0f}x"

    def _task_data(self, task: TaskView, column: int, role: int) -> Any:
        pending = self._pending_task.get(task.index)
        if role == Qt.ItemDataRole.DisplayRole:
            values = (
                task.name.removeprefix("fused_"),  # TVM's prefix on every fused task: noise in a narrow column
                str(task.trials) + (f"/{task.cap}" if task.cap is not None else "") + (" ✗" if task.failed else ""),
                format_latency(task.best_s) if task.best_s is not None else "",
                self._speedup([task]),
                status_text(task.status, pending),
                task.best_origin or "",
                str(task.weight),
                format_flops(task.flops),
                task.shapes_text,
                task.operator_key,
            )
            return values[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            part = "the representative of its cluster" if task.is_representative else "a member of its cluster"
            tip = f"{task.name}\n{part} (representatives are bold)\ncluster key {task.cluster_key}"
            tip += f"\nsketch {task.sketch_key}"
            if task.fallback:
                tip += "\nno sketch matched its representative's: searched the full space (fallback)"
            if task.failed:
                tip += f"\n✗: {task.failed} of its trials failed to build or run"
            if pending:
                tip += "\npending until the next round: " + ", ".join(pending)
            return tip
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(task.is_representative and column == 0)
            font.setItalic(bool(pending))
            return font
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_STATUS and task.status in STATUS_COLORS:
            return QBrush(QColor(STATUS_COLORS[task.status]))
        if role == Qt.ItemDataRole.TextAlignmentRole and column in NUMERIC_COLUMNS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _cluster_data(self, key: str, row: int, column: int, role: int) -> Any:
        assert self.snapshot is not None
        cluster = self.snapshot.clusters[row]
        tasks = [self.snapshot.task(i) for i in cluster.members]
        pending = self._pending_cluster.get(key)
        if role == Qt.ItemDataRole.DisplayRole:
            trials = sum(t.trials for t in tasks)
            best = sum(t.weight * (t.best_s or 0) for t in tasks) if all(t.best_s for t in tasks) else None
            status = _cluster_status(tasks)
            values = (
                self.cluster_title(key, row),
                str(trials),
                format_latency(best) if best is not None else "",
                self._speedup(tasks),
                status_text(status, pending),
                "",
                str(sum(t.weight for t in tasks)),
                format_flops(sum(t.flops * t.weight for t in tasks)),
                "",
                key,
            )
            return values[column]
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(column == 0)
            font.setItalic(bool(pending))
            return font
        if role == Qt.ItemDataRole.ToolTipRole:
            shapes = tasks[0].shapes_text
            tip = (
                f"{self.cluster_title(key, row)}\ncluster {key}: {cluster.size} tasks, the first with shapes "
                f"{shapes}; weighted best latency shown; drag to reprioritize"
            )
            return tip + ("\npending until the next round: " + ", ".join(pending) if pending else "")
        if role == Qt.ItemDataRole.TextAlignmentRole and column in NUMERIC_COLUMNS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def cluster_title(self, key: str, row: int) -> str:
        """The cluster row's text, e.g. "2. conv2d_add_relu (2 of 2) (14 tasks)"."""
        assert self.snapshot is not None
        cluster = self.snapshot.clusters[row]
        title = self._titles.get(key, self.snapshot.task(cluster.members[0]).operator_key)
        return f"{row + 1}. {title} ({counted(cluster.size, 'task')})"

    # -- drag and drop: reorder clusters, move tasks between clusters ----------------------
    def flags(self, index: Index) -> Qt.ItemFlag:
        base = super().flags(index)
        if not index.isValid():
            return base | Qt.ItemFlag.ItemIsDropEnabled
        if index.internalId() == 0:
            return base | Qt.ItemFlag.ItemIsDragEnabled | Qt.ItemFlag.ItemIsDropEnabled
        return base | Qt.ItemFlag.ItemIsDragEnabled

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE]

    def mimeData(self, indexes: list[QModelIndex]) -> QMimeData:
        data = QMimeData()
        item = self.item_at(indexes[0]) if indexes else None
        if item is not None:
            data.setData(MIME_TYPE, QByteArray(f"{item[0]}:{item[1]}".encode()))
        return data

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: Index) -> bool:
        if self.snapshot is None or not data.hasFormat(MIME_TYPE):
            return False
        kind, _, value = bytes(data.data(MIME_TYPE).data()).decode().partition(":")
        keys = [c.key for c in self.snapshot.clusters]
        if kind == "cluster" and not parent.isValid():
            position = row if row >= 0 else len(keys)
            order = [k for k in keys[:position] if k != value] + [value] + [k for k in keys[position:] if k != value]
            if order != keys:
                self.priorityRequested.emit(order)
            return False  # the engine reorders; the next snapshot shows it
        target = self.item_at(parent)
        if kind == "task" and target is not None and target[0] == "cluster":
            task = int(value)
            if self.snapshot.task(task).cluster_key != target[1]:
                self.moveRequested.emit(task, target[1])
        return False


def _cluster_status(tasks: list[TaskView]) -> str:
    states = {t.status for t in tasks}
    if states <= {TaskStatus.DONE, TaskStatus.SKIPPED}:
        return TaskStatus.DONE
    for busy in (*BUSY_TASK_STATES, TaskStatus.STOPPED):
        if busy in states:
            return busy
    return TaskStatus.QUEUED
