"""Starting the dashboard: `bcd-gui [MODEL.onnx] [--db PATH]` or `python -m bcd_gui`."""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from bcd_core import __version__
from bcd_core.records.states import SessionStatus
from bcd_gui.platform_check import xcb_problem


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bcd-gui", description="The bcd tuning dashboard.")
    parser.add_argument("model", nargs="?", help="an ONNX model to open (default: offer the bundled sample)")
    parser.add_argument(
        "--db",
        help="records database (default runs/MODEL.db, as `bcd tune`); alone, show its sessions and "
        "follow the one being tuned now",
    )
    parser.add_argument("--tune", action="store_true", help="start tuning as soon as the model is open")
    parser.add_argument("--trials-per-task", type=int, help="budget setting to start with (default 32)")
    parser.add_argument(
        "--quit-when-done",
        action="store_true",
        default=os.environ.get("BCD_GUI_QUIT_WHEN_DONE") == "1",
        help="with --tune: quit when the tune ends (exit 0 if it completed); also BCD_GUI_QUIT_WHEN_DONE=1",
    )
    parser.add_argument("--theme", choices=["system", "light", "dark"], help="override the saved theme")
    parser.add_argument("--screenshot", metavar="PNG", help="save a picture of the window, then quit (for docs)")
    parser.add_argument(
        "--screenshot-after",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds after start for --screenshot (default 60)",
    )
    parser.add_argument(
        "--measure-stalls", action="store_true", help="print the longest event-loop stall when the app quits"
    )
    parser.add_argument("--version", action="version", version=f"bcd-gui {__version__}")
    return parser


def _report_stalls(meter: Any) -> None:
    if meter is not None:
        meter.stop()  # closing waits for the batch in flight: not a stall users see while tuning
        print(f"longest event-loop stall: {meter.longest_ms:.1f} ms over {meter.ticks} ticks", file=sys.stderr)
        when = ", ".join(f"{ms:.0f} ms at {at:.0f} s" for at, ms in meter.stalls[:20])
        print(f"stalls over {meter.report_over_ms:.0f} ms: {len(meter.stalls)} ({when or 'none'})", file=sys.stderr)
        # What the window itself took from the cores the engine tunes on.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"dashboard process CPU: {usage.ru_utime + usage.ru_stime:.1f} s", file=sys.stderr)


def _screenshot_and_quit(window: Any, path: str, meter: Any = None) -> None:
    snapshot = window.snapshot
    if snapshot is not None:  # show a diffused member's provenance, the view people ask about
        diffused = [t for t in snapshot.tasks if t.diffused_best_s is not None and t.best_s]
        if diffused:
            window.select_item(("task", max(diffused, key=lambda t: t.weight * t.best_s).index))
    QApplication.processEvents()
    window.grab().save(path)
    print(f"screenshot: {path}", file=sys.stderr)
    _report_stalls(meter)
    window.ask_before_quitting = False  # a running tune stops after its batch; all of it is saved
    window.close()
    QApplication.instance().quit()


def _nothing_to_tune(reason: str, finish: Any) -> bool:
    """Unattended (--quit-when-done), a complete session is not tuned again: as `bcd tune`
    does, say so and exit 0."""
    print(f"{reason}; nothing tuned", file=sys.stderr)
    QTimer.singleShot(0, lambda: finish(0))
    return False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    problem = xcb_problem()
    if problem:
        print(f"bcd-gui: error: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setOrganizationName("bcd")
    app.setApplicationName("bcd-gui")
    app.setApplicationVersion(__version__)
    from bcd_gui.main_window import MainWindow  # after QApplication: it styles the app

    window = MainWindow(db_path=args.db)
    if args.theme:
        window.set_theme(args.theme)
    if args.trials_per_task:
        window.settings_panel.trials_per_task.setValue(args.trials_per_task)
    window.show()
    meter = None
    if args.measure_stalls:
        from bcd_gui.stall import StallMeter

        meter = StallMeter(parent=window)
        meter.start()
    outcome = {"status": 0}
    if args.quit_when_done:

        def finish(status: int) -> None:
            outcome["status"] = status
            _report_stalls(meter)
            window.ask_before_quitting = False
            window.close()
            app.quit()

        window.tuneFinished.connect(lambda result: finish(0 if result == SessionStatus.COMPLETED else 1))
        window.errorShown.connect(lambda _text: finish(1))
        window.tuning.ask_new_session = lambda reason: _nothing_to_tune(reason, finish)
    if args.screenshot:
        QTimer.singleShot(
            int(args.screenshot_after * 1000), lambda: _screenshot_and_quit(window, args.screenshot, meter)
        )
    if args.model:
        if args.tune:
            window.modelOpened.connect(lambda _snapshot: window.start_tune())
        window.open_model(Path(args.model))
    elif args.db and Path(args.db).is_file():
        window.open_store(args.db)
    code = app.exec()
    if meter is not None and meter.running:
        _report_stalls(meter)
    return outcome["status"] if args.quit_when_done else code
