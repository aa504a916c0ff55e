"""Short engine jobs (importing, timing, exporting) run off the GUI thread, with their progress shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bcd_gui.host import Controller
from bcd_gui.jobs import BackgroundJob


class JobRunner(Controller):
    """Starts BackgroundJobs for the window, tracks them in `win.jobs` and drives the status bar."""

    def run_job(self, name: str, work: Callable[..., Any], on_success: Callable[..., Any], doing: str) -> BackgroundJob:
        """Run `work(progress)` in a thread; `on_success(result)` runs on the GUI thread, and an
        error is reported as "cannot `doing`"."""
        win = self.win
        job = BackgroundJob(name, work, self.window_widget)
        if win.closed:  # nothing may outlive the window: a thread still running at exit aborts
            return job
        win.jobs.append(job)
        job.progressed.connect(self._job_progress)
        job.succeeded.connect(on_success)
        job.failed.connect(lambda err: win.report_error(err, doing))
        job.finished.connect(lambda: self._job_done(job))
        win.status_text.setText(f"{name}...")
        win.progress.setRange(0, 0)  # busy until the first progress report
        job.start()
        return job

    def _job_progress(self, step: int, total: int, text: str) -> None:
        self.win.progress.setRange(0, max(1, total))
        self.win.progress.setValue(step)
        self.win.status_text.setText(text)

    def _job_done(self, job: BackgroundJob) -> None:
        win = self.win
        if job in win.jobs:
            win.jobs.remove(job)
        if win.worker is None:
            win.status_line.show_finished()
        win.update_actions()

    def busy(self) -> bool:
        return bool(self.win.jobs) or self.win.worker is not None
