"""The window's dialogs: errors that say what happened and what to do, and the questions it asks.

Error and information boxes are opened, not exec'd: they never block the tuner's updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from bcd_core import __version__
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


def show_module_exported(parent: QWidget, text: str) -> None:
    """What an export wrote and how its check went; non-blocking, like the error dialog."""
    box = QMessageBox(QMessageBox.Icon.Information, "Module exported", text, QMessageBox.StandardButton.Ok, parent)
    box.open()


def show_about(parent: QWidget) -> None:
    QMessageBox.about(
        parent,
        "About bcd",
        f"<b>bcd {__version__}</b><br>Auto-tunes ONNX models with TVM MetaSchedule and Bayesian Code Diffusion."
        "<br>Every measurement is kept in SQLite; the same engine runs headless as <code>bcd</code>.",
    )


GUIDE = """<h3>What bcd does</h3>
<p>It tunes an ONNX model's kernels for this machine with TVM MetaSchedule. The model is split
into <b>tasks</b> (fused subgraphs) grouped in <b>clusters</b> of alike tasks. The <code>bcd</code>
strategy runs stock MetaSchedule and adds <b>diffusion</b>: programs measured for one task are
adapted to the other tasks of its cluster, and programs of earlier tunes on this machine
(<b>memory</b>) to the new model's tasks. Every measurement is saved: a stopped tune resumes.
The tune runs in a process of its own: closing the window can leave it running, and opening
its records store (File &gt; Open records store) follows it again, as it does a tune started
with <code>bcd tune</code> in a terminal.</p>
<h3>The panels</h3>
<ul>
<li><b>Clusters</b>: each cluster, its representative (bold) and members, with trials, best
latency, speedup over the untuned program, status and where the best program came from.</li>
<li><b>Model</b>: tasks, the untuned and tuned estimates, the memory drawn on; the settings of
the next tune below.</li>
<li><b>Provenance</b>: for the selected task, which program seeded it and how it fared.</li>
<li><b>Plots</b>: the model's estimated latency over time (with a stock run when there is one),
the selected tasks' best latency, and how well the cost model ranks each new batch.</li>
<li><b>Sessions</b>: every tune in the store; open one, resume a stopped one, or compare one
with the shown session in the latency plot.</li>
</ul>
<h3>Shortcuts</h3>
<table>
<tr><td>Ctrl+O</td><td>open a model (or drop a file on the window)</td></tr>
<tr><td>Ctrl+Shift+O</td><td>open a records store: its sessions, and the tune running in it</td></tr>
<tr><td>Ctrl+R</td><td>tune</td></tr><tr><td>Space</td><td>pause / resume</td></tr>
<tr><td>Ctrl+.</td><td>stop after the batch in flight</td></tr>
<tr><td>Ctrl+Up / Ctrl+Down</td><td>tune the selected cluster sooner / later (or drag it)</td></tr>
<tr><td>Ctrl+B</td><td>budget of the selected task or cluster</td></tr>
<tr><td>Ctrl+K / Ctrl+Shift+K</td><td>skip / un-skip the selected task</td></tr>
<tr><td>Ctrl+M</td><td>move the selected task to another cluster (or drag it)</td></tr>
<tr><td>Ctrl+Shift+R</td><td>make the selected task its cluster's representative</td></tr>
<tr><td>Ctrl+E / Ctrl+Shift+E</td><td>export the compiled model / the report</td></tr>
</table>
<p>Everything here has a command-line twin: <code>bcd --help</code>.</p>"""


def show_guide(parent: QWidget) -> None:
    box = QMessageBox(parent)
    box.setWindowTitle("bcd guide")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(GUIDE)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    box.open()  # not modal to the tune: it keeps running while the guide is read


KEEP_TUNING, STOP_TUNING = "keep", "stop"


def ask_keep_or_stop_tuning(parent: QWidget) -> str | None:
    """Asked when the window closes while its tune runs: KEEP_TUNING, STOP_TUNING or None
    (cancel)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Tuning is running")
    box.setText("Keep tuning after the window closes?")
    box.setInformativeText(
        "The tune runs in a process of its own: it can go on without the window (open its records "
        "store again to watch and steer it), or stop after the batch in flight. Everything measured is saved."
    )
    keep = box.addButton("Keep tuning", QMessageBox.ButtonRole.AcceptRole)
    stop = box.addButton("Stop tuning", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.exec()
    clicked = box.clickedButton()
    return KEEP_TUNING if clicked is keep else STOP_TUNING if clicked is stop else None


def ask_new_session(parent: QWidget, reason: str) -> bool:
    """Asked when Tune finds the session it would continue complete (`reason` says which):
    True to start a new session with the same settings."""
    box = QMessageBox(parent)
    box.setObjectName("newSessionQuestion")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Session complete")
    box.setText(f"{reason[:1].upper()}{reason[1:]}.")
    box.setInformativeText("Start a new session with the same settings? The complete one stays in the store.")
    new = box.addButton("New session", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(new)
    box.exec()
    return box.clickedButton() is new


def ask_model_path(parent: QWidget) -> str:
    """An ONNX model to open, or "" if the user cancels."""
    path, _ = QFileDialog.getOpenFileName(
        parent, "Open an ONNX model", str(Path.cwd()), "ONNX models (*.onnx);;All files (*)"
    )
    return path


def ask_store_path(parent: QWidget) -> str:
    """A records store to open, or "" if the user cancels."""
    path, _ = QFileDialog.getOpenFileName(
        parent, "Open a records store", str(Path.cwd()), "bcd records (*.db);;All files (*)"
    )
    return path


def ask_module_path(parent: QWidget, default: str) -> str:
    """Where to save the compiled module, or "" if the user cancels."""
    path, _ = QFileDialog.getSaveFileName(parent, "Export compiled module", default, "Shared library (*.so)")
    return path


def ask_new_folder(parent: QWidget, title: str, default_name: str) -> str:
    """A folder to write into, which need not exist yet (the export creates it), or "" if the
    user cancels: a save dialog, since a folder chooser only picks folders that exist."""
    path, _ = QFileDialog.getSaveFileName(
        parent,
        title,
        str(Path.cwd() / default_name),
        "Folder (*)",
        options=QFileDialog.Option.DontConfirmOverwrite,
    )
    return path


def ask_budget(parent: QWidget, what: str, current: int) -> int | None:
    """A trial budget for `what` (e.g. "2 task(s)"), or None if the user cancels."""
    trials, ok = QInputDialog.getInt(parent, "Trial budget", f"Trials for {what}:", current, 0, 1_000_000)
    return trials if ok else None


def ask_cluster(parent: QWidget, labels: list[str]) -> str | None:
    """One of the cluster `labels` to move tasks to, or None if the user cancels."""
    choice, ok = QInputDialog.getItem(parent, "Move task", "Move to cluster:", labels, 0, False)
    return choice if ok else None
