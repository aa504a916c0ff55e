"""Run one tuning session end to end: import, open or resume the store session, run its strategy.

This sits above the strategies (which build on the `TuningRun` kernel in session.py), so the
kernel never imports the strategies that use it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tvm.target import Target

from bcd_core.records.states import EventKind, SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import Listener, SessionFinished
from bcd_core.tuning.measure import check_runner
from bcd_core.tuning.session import TuningRun, estimated_latency, prepare_model
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.strategies import run_strategy


def run_session(
    model_path: str | Path,
    db_path: str | Path,
    target: Target,
    settings: TuneSettings,
    listeners: Sequence[Listener] = (),
    new_session: bool = False,
    control: TuningControl | None = None,
    resume_session_id: int | None = None,
) -> TuningRun:
    """Import, extract, open (or resume) the session and run the chosen strategy to the end
    (or until `control` stops it). `resume_session_id` continues that session, refusing if
    its model, target, settings or tool version no longer match."""
    started = time.perf_counter()
    check_runner(settings)  # an unreachable tracker fails now, not after import and extraction
    prepared = prepare_model(
        model_path,
        target,
        {k: tuple(v) for k, v in settings.input_shapes.items()},
        settings.cluster_mode,
        settings.representative_rule,
        settings.split_heavier_than,
    )
    store = RecordStore(db_path)
    run = TuningRun(store, prepared, settings, listeners, new_session, started, control, resume_session_id)
    if run.resumed and run.session["status"] == SessionStatus.COMPLETED:
        run.message(
            EventKind.INFO, f"session {run.session_id} is already complete; nothing to tune (use --new-session)"
        )
        run.emit(
            SessionFinished(
                run.session_id,
                SessionStatus.COMPLETED,
                run.trials_done,
                estimated_latency(run.tasks, run.best),
                float(run.session["elapsed_s"] or 0),
            )
        )
        return run
    run.start()
    status = SessionStatus.FAILED
    try:
        run_strategy(run)
        status = SessionStatus.STOPPED if run.control.stop_requested else SessionStatus.COMPLETED
    except KeyboardInterrupt:
        status = SessionStatus.INTERRUPTED
        raise
    finally:
        run.finish(status)
    return run
