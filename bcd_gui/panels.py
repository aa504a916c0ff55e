"""The dashboard's side panels: settings, model overview, provenance, sessions, log."""

from __future__ import annotations

import html
import logging
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from bcd_core.formatting import counted, format_duration, format_flops, format_latency
from bcd_core.model_import import parse_input_shapes
from bcd_core.records.states import REMEMBERED_ORIGINS, SessionStatus
from bcd_core.session_view import (
    Provenance,
    SessionSnapshot,
    estimate_with_untuned,
    session_status_text,
    strategy_text,
)
from bcd_core.tuning.options import Option, panel_options
from bcd_core.tuning.settings import TuneSettings

DEFAULTS = TuneSettings()
PLACEHOLDERS = {
    "tracker": "HOST:PORT of python -m tvm.exec.rpc_tracker",
    "tracker_key": "the --key the RPC servers registered with",
}
REMOTE_FIELDS = ("tracker", "tracker_key")  # only meaningful with the rpc runner


def option_widget(option: Option) -> QWidget:
    """An editor for one user option of bcd_core's options table, set to its default."""
    default = getattr(DEFAULTS, option.field)
    if option.choices:
        combo = QComboBox()
        combo.addItems(list(option.choices))
        combo.setCurrentText(str(default))
        widget: QWidget = combo
    elif option.type is int:
        spin = QSpinBox()
        spin.setRange(1, 100_000)
        spin.setValue(int(default))
        widget = spin
    elif option.type is float:
        widget = rule_spin(default)
    else:
        line = QLineEdit(str(default))
        line.setPlaceholderText(PLACEHOLDERS.get(option.field, ""))
        widget = line
    widget.setToolTip(option.help)
    return widget


def rule_spin(default: float | None) -> QDoubleSpinBox:
    """A stopping rule's number (tuning/stopping.py): its lowest value reads "off", which is 0
    for most rules and None (shown one below 0) where 0 itself means something."""
    spin = QDoubleSpinBox()
    spin.setDecimals(2)
    spin.setRange(-1.0 if default is None else 0.0, 100_000.0)
    spin.setSpecialValueText("off")
    spin.setProperty("offIsNone", default is None)
    spin.setValue(spin.minimum() if default is None else float(default))
    return spin


def set_widget_value(widget: QWidget, value: Any) -> None:
    if isinstance(widget, QComboBox):
        widget.setCurrentText(str(value))
    elif isinstance(widget, QDoubleSpinBox):
        widget.setValue(widget.minimum() if value is None else float(value))
    elif isinstance(widget, QSpinBox):
        widget.setValue(int(value))
    else:
        assert isinstance(widget, QLineEdit)
        widget.setText(str(value))


def widget_value(widget: QWidget) -> Any:
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QSpinBox):
        return widget.value()
    if isinstance(widget, QDoubleSpinBox):
        off = widget.property("offIsNone") and widget.value() == widget.minimum()
        return None if off else widget.value()
    assert isinstance(widget, QLineEdit)
    return widget.text().strip()


class SettingsPanel(QWidget):
    """Target, input shapes and the user options of the engine's options table, with its
    defaults. Research options are not shown (docs/reference.md)."""

    def __init__(self) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.target = QLineEdit("llvm")
        self.target.setToolTip('\'llvm\' (this CPU), a JSON dict such as {"kind": "llvm", "num-cores": 4}, or a tag')
        self.input_shapes = QLineEdit()
        self.input_shapes.setPlaceholderText("only for dynamic inputs: NAME=1,3,224,224; ...")
        form.addRow("Target", self.target)
        self.fields: dict[str, QWidget] = {}
        for option in panel_options():
            widget = option_widget(option)
            self.fields[option.field] = widget
            setattr(self, option.field, widget)  # e.g. panel.trials_per_task, as the window uses them
            form.addRow(option.label, widget)
            if option.field == "trials_per_round":  # the model's own settings before where it is measured
                form.addRow("Input shapes", self.input_shapes)
        self.runner.currentTextChanged.connect(lambda _: self._enable_remote_fields(True))
        self._enable_remote_fields(True)

    def _enable_remote_fields(self, idle: bool) -> None:
        remote = self.runner.currentText() == "rpc"
        for name in REMOTE_FIELDS:
            self.fields[name].setEnabled(idle and remote)

    def runner_settings(self) -> dict[str, str]:
        """The measurement place, which is not part of a session's identity: a resumed session
        is measured where the panel says now."""
        return {name: widget_value(self.fields[name]) for name in ("runner", *REMOTE_FIELDS)}

    def shape_overrides(self) -> dict[str, tuple[int, ...]]:
        items = [part.strip() for part in self.input_shapes.text().split(";") if part.strip()]
        return parse_input_shapes(items)

    def settings(self) -> TuneSettings:
        values = {name: widget_value(widget) for name, widget in self.fields.items()}
        return TuneSettings(**values, input_shapes={k: list(v) for k, v in self.shape_overrides().items()})

    def show_session_settings(self, strategy: str, settings: dict[str, Any]) -> None:
        """A stored session's own settings (those the panel shows and the session holds), so
        that the panel says what the shown session was tuned with."""
        values = {**settings, "strategy": strategy}
        for name, widget in self.fields.items():
            if name not in ("runner", *REMOTE_FIELDS) and values.get(name) is not None:
                set_widget_value(widget, values[name])

    def set_enabled_for_tuning(self, idle: bool) -> None:
        for name, widget in self.fields.items():
            if name not in REMOTE_FIELDS:
                widget.setEnabled(idle)
        self.target.setEnabled(idle)
        self.input_shapes.setEnabled(idle)
        self._enable_remote_fields(idle)


class OverviewPanel(QWidget):
    """The model at a glance: tasks, clusters, FLOPs, untuned and tuned estimates."""

    FIELDS = (
        "model",
        "tasks",
        "clusters",
        "flops",
        "untuned",
        "estimate",
        "measured",
        "reference",
        "trials",
        "session",
        "layout",
        "memory",
    )

    def __init__(self) -> None:
        super().__init__()
        grid = QGridLayout(self)
        self.values: dict[str, QLabel] = {}
        captions = {
            "model": "Model",
            "tasks": "Tasks",
            "clusters": "Clusters",
            "flops": "Total FLOPs",
            "untuned": "Untuned estimate",
            "estimate": "Tuned estimate",
            "measured": "Compiled model",
            "reference": "onnxruntime",
            "trials": "Trials",
            "session": "Session",
            "layout": "Layout",
            "memory": "Memory",
        }
        for row, name in enumerate(self.FIELDS):
            caption = QLabel(captions[name])
            caption.setObjectName("caption")
            value = QLabel("-")
            value.setObjectName("metric" if name in ("untuned", "estimate") else "")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(caption, row, 0)
            grid.addWidget(value, row, 1)
            self.values[name] = value
        grid.setColumnStretch(1, 1)
        for value in self.values.values():
            value.setWordWrap(True)  # a narrow panel wraps rather than cuts
        # What the untuned estimate reads until it is known: nothing times it for a store
        # opened without its model file.
        self.untuned_waiting = "measuring..."
        self.reference_spread: float | None = None  # how far the reference's two timings were apart
        self.paused = False  # the session shown is this window's tune, paused: the store says running

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        if paused and self.values["session"].text().endswith(", running"):
            self.values["session"].setText(self.values["session"].text().removesuffix("running") + "paused")

    def show_snapshot(
        self, snapshot: SessionSnapshot, untuned: dict[int, float], reference_s: float | None = None
    ) -> None:
        tasks = snapshot.tasks
        s = snapshot.session
        multi = sum(1 for c in snapshot.clusters if c.size > 1)
        untuned_total = (
            sum(t.weight * untuned[t.index] for t in tasks)
            if tasks and all(t.index in untuned for t in tasks)
            else None
        )
        estimate, untuned_tasks = estimate_with_untuned(snapshot, untuned)
        self.values["model"].setText(s.get("model_name", ""))
        self.values["tasks"].setText(str(len(tasks)))
        self.values["clusters"].setText(f"{len(snapshot.clusters)} ({multi} with members)")
        self.values["flops"].setText(format_flops(sum(t.flops * t.weight for t in tasks)))
        self._show_metric("untuned", self._untuned_text(tasks, untuned, untuned_total), untuned_total is not None)
        measured = sum(1 for t in tasks if t.best_s is not None)
        text = (
            format_latency(estimate)
            if estimate is not None
            else f"{measured}/{len(tasks)} tasks measured"  # known once every task is
        )
        if estimate and untuned_total:
            text += f"  ({untuned_total / estimate:.1f}x faster)"
        self._show_metric("estimate", text, estimate is not None)
        skipped = f"{len(untuned_tasks)} skipped task(s) counted untuned: {', '.join(untuned_tasks)}"
        self.values["estimate"].setToolTip(skipped if untuned_tasks else "")
        if untuned_tasks:
            self.values["estimate"].setText(f"{text}, {len(untuned_tasks)} skipped untuned")
        timed = self.show_measured(snapshot)
        self.show_reference(reference_s, timed if timed is not None else estimate, measured=timed is not None)
        layout = snapshot.layout
        self.values["layout"].setText("-" if layout is None else layout.summary())
        self.values["layout"].setToolTip("" if layout is None else layout.describe())
        failed = f", {snapshot.failed_trials} failed" if snapshot.failed_trials else ""
        self.values["trials"].setText(f"{snapshot.trials_done} / {snapshot.trials_total}{failed}")
        status = "paused" if self.paused and s.get("status") == "running" else s.get("status")
        if status == s.get("status"):
            status = session_status_text(s)
        session = "not tuned yet" if not s.get("id") else f"#{s['id']} {s['strategy']}, {status}"
        self.values["session"].setText(session)
        memory = snapshot.memory
        self.values["memory"].setText("no earlier tune drawn on" if memory is None else memory.summary())
        self.values["memory"].setToolTip("" if memory is None else memory.describe())

    def _show_metric(self, name: str, text: str, is_figure: bool) -> None:
        """A latency in the metric font; a sentence saying what is still missing in the plain
        one, as the other rows are (in the large font it read as a result)."""
        label = self.values[name]
        wanted = "metric" if is_figure else ""
        if label.objectName() != wanted:
            label.setObjectName(wanted)
            label.style().unpolish(label)
            label.style().polish(label)
        label.setText(text)

    def _untuned_text(self, tasks: list[Any], untuned: dict[int, float], total: float | None) -> str:
        if total is not None:
            return format_latency(total)
        if not untuned:
            return self.untuned_waiting
        missing = sum(1 for t in tasks if t.index not in untuned)
        return f"unknown ({missing} of {len(tasks)} tasks not timed)"

    def show_measured(self, snapshot: SessionSnapshot) -> float | None:
        """The compiled model's latency at the session's last milestone (None: not timed yet)."""
        label = self.values["measured"]
        if not snapshot.measured:
            label.setText("timed once every task is measured" if snapshot.session.get("id") else "-")
            return None
        last = snapshot.measured[-1]
        seconds, then = last["measured_latency_s"], last["estimated_latency_s"]
        ratio = f"{seconds / then:.2f}x the estimate at {last['trials_done']} trials"
        label.setText(f"{format_latency(seconds)}  ({ratio})")
        label.setToolTip(
            "the whole model compiled with the best programs so far, written and loaded as Export does, timed "
            "on this machine; the estimate beside it sums the tasks' best programs times their weights, each "
            "program timed again at that point (the search's single timings of its winners are optimistic)"
        )
        return seconds

    def show_reference(self, reference_s: float | None, estimate_s: float | None, measured: bool = False) -> None:
        """onnxruntime on this machine, and the tuned model against it in plain words."""
        label = self.values["reference"]
        if reference_s is None:
            label.setText("not timed yet" if estimate_s is not None else "-")
            label.setToolTip(
                "onnxruntime's latency for this model on this CPU: timed in the background while no tune runs "
                "(never for GPU targets)"
            )
            return
        text = format_latency(reference_s)
        if self.reference_spread is not None:
            text += f" ±{self.reference_spread * 50:.0f} %"  # half the gap between its two timings
        if estimate_s:
            ratio = estimate_s / reference_s
            words = f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"
            text += f"  (the tuned model {'timed' if measured else 'estimated'} {words})"
        label.setText(text)
        label.setToolTip(
            "onnxruntime (CPU, this machine's threads): the median of 50 runs after a warm-up, timed in turns "
            "until two timings agree within 10 %, once per model and target; ± is half their gap. The tuned "
            "figure beside it is the compiled model as timed at the last milestone, else the estimate"
        )


class ProvenancePanel(QWidget):
    """Where the selected member's programs came from."""

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        self.text = QLabel("Select a task to see where its best program came from.")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.text)

    def show_provenance(self, info: Provenance | None) -> None:
        if info is None:
            self.text.setText("Select a task to see where its best program came from.")
            return
        task = info.task
        lines = [f"<b>{task.name}</b> ({task.status}, {info.trials} trials)"]
        if info.origin in REMEMBERED_ORIGINS:
            earlier = "Reused unchanged" if info.origin == "reused" else "Seeded"
            lines.append(
                f"{earlier} from an earlier tune on this machine: <i>{html.escape(info.adaptation or 'n/a')}</i>; "
                f"{info.memory_trials} remembered and {info.diffused_trials} diffused candidates measured."
            )
            lines.append(self._after_seeding(info))
        elif task.is_representative:
            lines.append("Representative of its cluster: tuned first; its best programs seed the members.")
        elif info.source_trial_id is None:
            if task.fallback:
                lines.append("No sketch matched its representative's: it searched the full space (fallback).")
            else:
                lines.append("Not diffused (yet): a singleton or waiting for its representative.")
        else:
            lines.append(
                f"Seeded by <b>{info.representative}</b>, program #{info.source_trial_id} "
                f"({format_latency(info.source_latency_s)} there), tiles adapted by "
                f"<i>{info.adaptation or 'n/a'}</i>; {info.diffused_trials} diffused candidates measured."
            )
            lines.append(self._after_seeding(info))
        if info.remembered and info.origin not in REMEMBERED_ORIGINS:  # drawn on, but beaten by a sibling's
            lines.append(
                f"Also measured {counted(info.memory_trials, 'program')} of earlier tunes on this machine "
                f"(fastest: <i>{html.escape(info.remembered)}</i>)."
            )
        lines.append(f"Best program's origin: {task.best_origin or 'none yet'}")
        if task.best_origin == "serial":
            lines.append("A serial twin: one of its programs run on one thread, faster here than in parallel.")
        self.text.setText("<br>".join(lines))

    @staticmethod
    def _after_seeding(info: Provenance) -> str:
        gain = f" ({info.diffused_best_s / info.best_s:.2f}x better)" if info.diffused_best_s and info.best_s else ""
        return (
            f"Best right after diffusion: <b>{format_latency(info.diffused_best_s)}</b>; "
            f"now: <b>{format_latency(info.best_s)}</b>{gain}"
        )


class SessionsPanel(QWidget):
    """The store's sessions; open one to see it, resume an interrupted one."""

    openRequested = Signal(int)
    resumeRequested = Signal(int)
    overlayRequested = Signal(int)  # show or hide the session beside the one shown
    HEADERS = ("id", "model", "strategy", "status", "trials", "est. latency", "elapsed", "started")

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, len(self.HEADERS))
        self.table.setHorizontalHeaderLabels(list(self.HEADERS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _col: self.openRequested.emit(self._id(row)))
        buttons = QHBoxLayout()
        self.open_button = QPushButton("Open")
        self.resume_button = QPushButton("Resume")
        self.overlay_button = QPushButton("Compare")
        self.overlay_button.setToolTip("Draw this session's estimate beside the shown one (again: remove it)")
        self.open_button.clicked.connect(lambda: self._emit(self.openRequested))
        self.resume_button.clicked.connect(lambda: self._emit(self.resumeRequested))
        self.overlay_button.clicked.connect(lambda: self._emit(self.overlayRequested))
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.resume_button)
        buttons.addWidget(self.overlay_button)
        buttons.addStretch()
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        rows = self.fontMetrics().height() + 8
        self.table.verticalHeader().setDefaultSectionSize(rows)
        self.table.setMinimumHeight(self.table.horizontalHeader().sizeHint().height() + 3 * rows + 4)  # 3 rows show
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self._sessions: list[dict[str, Any]] = []
        self._live: tuple[int, bool] | None = None  # (session tuning in this window, paused)
        self._update_buttons()

    def _id(self, row: int) -> int:
        return int(self._sessions[row]["id"])

    def _emit(self, signal: Any) -> None:
        row = self.table.currentRow()
        if 0 <= row < len(self._sessions):
            signal.emit(self._id(row))

    def _update_buttons(self) -> None:
        row = self.table.currentRow()
        selected = self._sessions[row] if 0 <= row < len(self._sessions) else None
        self.open_button.setEnabled(selected is not None)
        self.overlay_button.setEnabled(selected is not None)
        # Nothing to resume in a finished session (unless a task was skipped before it was
        # measured: resuming tunes it), nor in the one this window is tuning.
        live = self._live is not None and selected is not None and selected["id"] == self._live[0]
        unfinished = selected is not None and (
            selected["status"] != SessionStatus.COMPLETED or bool(selected.get("skipped_unmeasured"))
        )
        self.resume_button.setEnabled(unfinished and not live)
        if selected is not None and selected.get("skipped_unmeasured"):
            self.resume_button.setToolTip("Tune the tasks skipped before they were measured")
        else:
            self.resume_button.setToolTip("")

    def set_live(self, session_id: int | None, paused: bool = False) -> None:
        """The session this window is tuning (None: none), and whether it is paused."""
        self._live = None if session_id is None else (session_id, paused)
        self.show_sessions(list(reversed(self._sessions)))

    def _status_text(self, session: dict[str, Any]) -> str:
        if self._live is not None and session["id"] == self._live[0] and self._live[1]:
            return "paused"  # the store says running: the process is, waiting for the user
        return str(session["status"])

    def show_sessions(self, sessions: list[dict[str, Any]]) -> None:
        grew = len(sessions) > len(self._sessions)
        self._sessions = list(reversed(sessions))  # newest first
        self.table.setRowCount(len(self._sessions))
        for row, s in enumerate(self._sessions):
            values = (
                s["id"],
                s["model_name"],
                strategy_text(s),
                self._status_text(s),
                s["trials_done"],
                format_latency(s["estimated_latency_s"]),
                format_duration(s["elapsed_s"]),
                (s["started_at"] or "").replace("T", " "),
            )
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(str(value)))
            self.table.item(row, 3).setToolTip(session_status_text(s))  # why it ended, too long for the column
        self.table.resizeColumnsToContents()
        if grew:
            self.table.scrollToTop()  # a new session is the first row: it must not sit above the view
        self._update_buttons()


class LogEmitter(QObject):
    line = Signal(str, int)  # text, logging level


class QtLogHandler(logging.Handler):
    """Forwards log records from any thread to the GUI (queued signal)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.emitter = LogEmitter()
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.emitter.line.emit(self.format(record), record.levelno)
        except RuntimeError:  # the window is gone (application shutting down)
            pass


class LogPanel(QPlainTextEdit):
    MAX_LINES = 5000

    def __init__(self) -> None:
        super().__init__()
        self.setReadOnly(True)
        self.setMaximumBlockCount(self.MAX_LINES)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)

    def add_line(self, text: str, level: int = logging.INFO) -> None:
        """Append a line; the view follows the newest line unless the user scrolled up."""
        bar = self.verticalScrollBar()
        following = bar.value() >= bar.maximum() - 1
        self.appendPlainText(text)
        if following:
            bar.setValue(bar.maximum())
