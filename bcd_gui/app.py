"""Starting the dashboard: `bcd-gui [MODEL.onnx] [--db PATH]` or `python -m bcd_gui`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from bcd_core import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bcd-gui", description="The bcd tuning dashboard.")
    parser.add_argument("model", nargs="?", help="an ONNX model to open (default: offer the bundled sample)")
    parser.add_argument("--db", help="records database (default runs/MODEL.db, as `bcd tune`)")
    parser.add_argument("--tune", action="store_true", help="start tuning as soon as the model is open")
    parser.add_argument("--version", action="version", version=f"bcd-gui {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setOrganizationName("bcd")
    app.setApplicationName("bcd-gui")
    app.setApplicationVersion(__version__)
    from bcd_gui.main_window import MainWindow  # after QApplication: it styles the app

    window = MainWindow(db_path=args.db)
    window.show()
    if args.model:
        if args.tune:
            window.modelOpened.connect(lambda _snapshot: window.start_tune())
        window.open_model(Path(args.model))
    return app.exec()
