"""Exporting a tuned session off the GUI thread: the compiled module, the report, the JSON records."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.export import export_tuned_session
from bcd_core.records.json_io import export_json
from bcd_core.records.store import RecordStore
from bcd_core.report import write_report
from bcd_gui.dialogs import ask_module_path, ask_new_folder, show_module_exported
from bcd_gui.host import Controller

log = logging.getLogger("bcd.gui")


def describe_export(result: Any) -> str:
    """What an exported module's check found, for the dialog (first line: where it went)."""
    text = f"Exported {result.path}"
    if result.untuned:
        text += f"\nUntuned (skipped before any measurement): {', '.join(result.untuned)}"
    check = result.check
    if check is not None:
        text += f"\nTVM module: {check.tvm.timing.describe()}"
        if check.onnxruntime is not None:
            verdict = "match" if check.matches else "DIFFER"
            text += (
                f"\nonnxruntime: {check.onnxruntime.timing.describe()}\nOutputs {verdict} onnxruntime's\n"
                f"{check.comparison.describe()}"
            )
    return text


class ExportController(Controller):
    """Each export runs as a job on its own store connection and ends with `win.exportFinished`."""

    def _session_id(self) -> int | None:
        snapshot = self.win.snapshot
        if snapshot is None or not snapshot.session_id:
            self.win.report_error(BcdError("nothing is tuned yet: tune the model (Ctrl+R) or open a session"), "export")
            return None
        return snapshot.session_id

    def choose_export_module(self) -> None:
        model_path = self.win.model_path
        if self._session_id() is None or model_path is None:
            return
        path = ask_module_path(self.window_widget, str(Path.cwd() / f"{model_path.stem}-tuned.so"))
        if path:
            self.export_module(path)

    def export_module(self, path: str | Path, check: bool = True) -> None:
        """Compile the session's best schedules into `path` (a .so); `check` times it and
        compares its outputs with onnxruntime's."""
        session_id = self._session_id()
        if session_id is None or self.win.db_path is None:
            return
        db_path, model = self.win.db_path, self.win.model_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)
            try:
                return export_tuned_session(store, session_id, path, model, check=check, progress=progress)
            finally:
                store.close()

        self.win.run_job("Exporting the compiled module", work, self._module_exported, "export the module")

    def _module_exported(self, result: Any) -> None:
        text = describe_export(result)
        log.info(text.replace("\n", "; "))
        self.win.status_text.setText(text.splitlines()[0])
        show_module_exported(self.window_widget, text)
        self.win.exportFinished.emit(result)

    def choose_export_report(self) -> None:
        if self._session_id() is None:
            return
        folder = ask_new_folder(self.window_widget, "Folder for the report (created if new)", "bcd-report")
        if folder:
            self.export_report(folder)

    def export_report(self, folder: str | Path) -> None:
        session_id = self._session_id()
        if session_id is None or self.win.db_path is None:
            return
        db_path = self.win.db_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)
            try:
                return write_report(store, session_id, folder, progress)
            finally:
                store.close()

        def done(files: Any) -> None:
            log.info("report written: %s", files.html)
            self.win.status_text.setText(f"Report written to {files.html}")
            self.win.exportFinished.emit(files)

        self.win.run_job("Writing the report", work, done, "write the report")

    def choose_export_json(self) -> None:
        if self.win.db_path is None:
            return
        folder = ask_new_folder(self.window_widget, "Folder for the MetaSchedule JSON database", "metaschedule-db")
        if folder:
            self.export_metaschedule_json(folder)

    def export_metaschedule_json(self, folder: str | Path) -> None:
        db_path = self.win.db_path

        def work(progress: Any) -> Any:
            store = RecordStore(db_path, create=False)  # type: ignore[arg-type]
            try:
                progress(0, 1, "writing the MetaSchedule JSON database")
                return export_json(store, folder)
            finally:
                store.close()

        def done(count: int) -> None:
            log.info("wrote %d records to %s", count, folder)
            self.win.status_text.setText(f"Wrote {count} records to {folder}")
            self.win.exportFinished.emit(count)

        self.win.run_job("Exporting MetaSchedule JSON", work, done, "export the JSON database")
