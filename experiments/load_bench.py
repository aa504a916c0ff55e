"""How fast the dashboard opens and redraws a big store (100 000 trials, each step under a second).

    QT_QPA_PLATFORM=offscreen .venv/bin/python experiments/load_bench.py [--trials 100000] [--repeat 3]

Writes a synthetic store (`tests/synthetic_store.py`: a realistic BCD session, ~30 tasks)
into a temporary folder, then drives the real `MainWindow` on it:

- open: open the store and show its session (snapshot, cluster tree, every plot), until the
  event queue is empty, i.e. everything is painted; once with the file in the OS page cache
  (as right after a tune), once with its pages evicted first (as after a reboot);
- redraws: select 8 tasks (8 curves on the per-task plot), select a cluster, switch the theme,
  resize the window, reopen the session from the Sessions list;
- snapshot: `load_snapshot` alone, as the tuner's worker thread reads it after every round.

Each is timed `--repeat` times (median and worst). Prints a table and writes JSON to
`docs/load/load-<trials>.json`. Importing the ONNX model (TVM, seconds, independent of the
store's size) is not part of "open": the window is given the store directly, as after a
model was opened.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# The generator is test support (tests/synthetic_store.py), not part of the installed package;
# appended so that nothing in tests/ can shadow an installed module.
sys.path.append(str(REPO / "tests"))

from PySide6.QtCore import QEvent, QItemSelection, QItemSelectionModel, QObject, QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from synthetic_store import generate_store  # noqa: E402

from bcd_core.records.store import RecordStore  # noqa: E402
from bcd_core.session_view import latest_round_predictions, load_snapshot, task_best_curve  # noqa: E402

BOUND_S = 1.0  # the target for opening and for each redraw


class PaintCounter(QObject):
    """Counts paint events, to show that a timed step really drew something."""

    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def settle(app: QApplication) -> None:
    """Run the event loop until nothing is pending: queued signals, layout, then paint."""
    for _ in range(3):  # painting can post more events (pyqtgraph's deferred range updates)
        app.processEvents()


def timed(
    step: Callable[[], Any],
    app: QApplication,
    counter: PaintCounter,
    repeat: int,
    setup: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Median and worst of `repeat` runs of `step`, each until everything is painted;
    `setup` (not timed) puts the window back so each run does the same work."""
    times, paints = [], []
    for _ in range(repeat):
        if setup is not None:
            setup()
        settle(app)
        before = counter.paints
        started = time.perf_counter()
        step()
        settle(app)
        times.append(time.perf_counter() - started)
        paints.append(counter.paints - before)
    return {"median_s": statistics.median(times), "max_s": max(times), "runs": times, "paints": min(paints)}


def evict_from_page_cache(path: Path) -> None:
    """Drop this one file's pages from the OS cache (as after a reboot), touching no other
    file. The hypervisor's own cache, if any, may still hold them."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, help="JSON result (default docs/load/load-TRIALS.json)")
    parser.add_argument("--label", default="", help="a note stored with the result (e.g. before/after)")
    args = parser.parse_args(argv)
    out = args.out or REPO / "docs" / "load" / f"load-{args.trials}.json"
    load_at_start = os.getloadavg()[0]  # 1-minute load average: was anything else running?

    with tempfile.TemporaryDirectory(prefix="bcd-load-") as folder:
        db = Path(folder) / "big.db"
        generated = generate_store(db, trials=args.trials, tasks=args.tasks)
        size_mb = db.stat().st_size / 1e6
        print(
            f"generated {generated.trials} trials ({generated.failed} failed, {generated.diffused} diffused, "
            f"{generated.rounds} rounds, {len(generated.trials_per_task)} tasks) in {generated.generate_s:.1f} s: "
            f"{size_mb:.0f} MB",
            file=sys.stderr,
        )
        results = measure(db, generated.session_id, args.repeat)

    summary = {
        "label": args.label,
        "trials": generated.trials,
        "tasks": len(generated.trials_per_task),
        "rounds": generated.rounds,
        "failed": generated.failed,
        "diffused": generated.diffused,
        "generate_s": round(generated.generate_s, 2),
        "file_mb": round(size_mb, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg()[0],
        **results,
    }
    print_table(summary)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    steps = [v for v in results["window"].values() if isinstance(v, dict)]
    return 0 if all(step["max_s"] < BOUND_S for step in steps) else 1


def measure(db: Path, session_id: int, repeat: int) -> dict[str, Any]:
    # Engine side first, without Qt: what each query of the view costs.
    store = RecordStore(db, create=False)
    engine: dict[str, Any] = {}
    started = time.perf_counter()
    snapshot = load_snapshot(store, session_id)
    engine["snapshot_first_s"] = time.perf_counter() - started
    snapshot_times = []
    for _ in range(repeat):
        started = time.perf_counter()
        load_snapshot(store, session_id)
        snapshot_times.append(time.perf_counter() - started)
    engine["snapshot_median_s"] = statistics.median(snapshot_times)
    started = time.perf_counter()
    curves = [task_best_curve(store, session_id, task.row_id) for task in snapshot.tasks]
    engine["all_task_curves_s"] = time.perf_counter() - started
    engine["curve_points_per_task"] = round(statistics.mean(len(c) for c in curves), 1)
    started = time.perf_counter()
    latest_round_predictions(store, session_id)
    engine["predictions_s"] = time.perf_counter() - started
    store.close()

    from bcd_gui.main_window import MainWindow  # after the QApplication exists

    app = QApplication.instance() or QApplication(["load_bench"])
    counter = PaintCounter()
    app.installEventFilter(counter)
    settings_dir = tempfile.TemporaryDirectory(prefix="bcd-load-settings-")
    qsettings = QSettings(str(Path(settings_dir.name) / "gui.ini"), QSettings.Format.IniFormat)
    window = MainWindow(db_path=db, settings=qsettings)
    window.ask_before_quitting = False
    window.set_theme("light")
    window.resize(1400, 860)
    window.show()
    settle(app)

    def close_store() -> None:
        if window.reader is not None:
            window.reader.close()
            window.reader = None
        window.session_view.baselines.clear()  # a fresh window looks the baseline up once

    def open_store() -> None:
        # What the window does once a model is open (_model_prepared): open its store, show its newest session.
        window.open_reader()
        window.show_session(session_id)

    def close_and_evict() -> None:
        close_store()
        evict_from_page_cache(db)

    timings: dict[str, Any] = {
        "open_store_and_show": timed(open_store, app, counter, repeat, setup=close_store),
        "open_cold_file": timed(open_store, app, counter, repeat, setup=close_and_evict),
    }
    tree, model = window.tree, window.tree_model
    heavy = sorted(window.snapshot.tasks, key=lambda t: -t.weight * (t.best_s or 0))[:8]

    def select_tasks() -> None:
        selection = QItemSelection()
        for task in heavy:
            index = model.index_of(("task", task.index))
            selection.select(index, index)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        tree.selectionModel().select(selection, flags)

    clear = tree.selectionModel().clearSelection  # back to the default curves (the 4 heaviest tasks)
    timings["select_8_tasks"] = timed(select_tasks, app, counter, repeat, setup=clear)
    curves_shown = {name: len(item.getData()[0]) for name, item in window.task_plot.curves.items()}
    timings["select_a_cluster"] = timed(
        lambda: window.select_item(("cluster", window.snapshot.clusters[0].key)), app, counter, repeat, setup=clear
    )
    themes = iter(["dark", "light"] * repeat)
    timings["switch_theme"] = timed(lambda: window.set_theme(next(themes)), app, counter, repeat)
    sizes = iter([(1100, 700), (1400, 860)] * repeat)
    timings["resize_window"] = timed(lambda: window.resize(*next(sizes)), app, counter, repeat)
    reopen = window.sessions.openRequested  # what a double-click in the Sessions list emits
    timings["reopen_from_sessions_list"] = timed(lambda: reopen.emit(session_id), app, counter, repeat)

    shown = {
        "trials_label": window.trials_label.text(),
        "tree_trials": sum(int(model.index(r, 1).data()) for r in range(model.rowCount())),
        "latency_plot_points": window.latency_plot.points(),
        "task_curve_points": curves_shown,
        "cost_model_points": len(window.cost_plot.pairwise.getData()[0]),
    }
    window.close()
    settings_dir.cleanup()
    return {"engine": engine, "window": timings, "shown": shown}


def print_table(summary: dict[str, Any]) -> None:
    print(
        f"\n{summary['trials']} trials, {summary['tasks']} tasks, {summary['rounds']} rounds; "
        f"store {summary['file_mb']} MB, generated in {summary['generate_s']} s ({summary['machine']})"
    )
    print(f"{'step':32} {'median':>9} {'worst':>9} {'paints':>7}")
    for name, step in summary["window"].items():
        print(f"{name:32} {step['median_s'] * 1e3:7.0f} ms {step['max_s'] * 1e3:7.0f} ms {step['paints']:7d}")
    engine = {k: v * 1e3 if k.endswith("_s") else v for k, v in summary["engine"].items()}  # ms
    print(
        f"load_snapshot: first {engine['snapshot_first_s']:.0f} ms, then {engine['snapshot_median_s']:.0f} ms;"
        f" all {summary['tasks']} task curves {engine['all_task_curves_s']:.0f} ms"
        f" ({engine['curve_points_per_task']} points each); latest-round predictions {engine['predictions_s']:.0f} ms"
    )
    print(f"shown: {summary['shown']}")


if __name__ == "__main__":
    raise SystemExit(main())
