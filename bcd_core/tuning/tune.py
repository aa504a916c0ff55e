"""Run one tuning session end to end: import, open or resume the store session, run its strategy.

This sits above the strategies (which build on the `TuningRun` kernel in session.py), so the
kernel never imports the strategies that use it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from tvm.target import Target

from bcd_core.memory.recall import DEFAULT_MEMORY, MemoryRequest, gather_memory, open_memory_store, recorded_memory
from bcd_core.records.measured import LayoutChoice
from bcd_core.records.states import EventKind, SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.tuning.channel import ControlChannel
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import Listener, SessionFinished, SessionMessage
from bcd_core.tuning.layout_choice import ProbeRun, ProbeSessions, ProbeStopped, choose_layout, continue_probe
from bcd_core.tuning.measure.setup import Measurers, check_runner, tune_measurers
from bcd_core.tuning.milestones import Milestones
from bcd_core.tuning.options import BCD
from bcd_core.tuning.reused import reuse_measured_tasks
from bcd_core.tuning.run import NEW_SESSION_ADVICE, TuningRun, estimated_latency
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.stand_ins import model_best
from bcd_core.tuning.stopping import StoppingRules
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
    memory: MemoryRequest = DEFAULT_MEMORY,
    engine_token: str | None = None,
    started_at: float | None = None,
    on_open: Callable[[TuningRun], None] | None = None,
    measurers: Measurers | None = None,
) -> TuningRun:
    """Import, extract, open (or resume) the session and run the chosen strategy to the end
    (or until `control` stops it). `resume_session_id` continues that session, refusing if its
    model, target, settings or tool version no longer match. `memory`: whether a new `bcd`
    session draws on earlier tunes. Any process may steer the run through the store
    (tuning/channel.py); `engine_token` names this launch there. A layout probe runs on its
    tune's clock (`started_at`, `time.perf_counter`), builder and runner (`measurers`, else the
    tune's own, for its probes and itself); `on_open` gets the run before it starts."""
    started = time.perf_counter() if started_at is None else started_at
    check_runner(settings)  # an unreachable tracker fails now, not after import and extraction
    for path in memory.stores if memory.enabled else ():
        open_memory_store(path).close()  # a missing or damaged store fails now, too
    said: list[str] = []

    def say(text: str) -> None:  # before the session exists: kept for its events, shown now
        said.append(text)
        for listener in listeners:
            listener(SessionMessage(0, EventKind.INFO, text))

    control = control or TuningControl()
    with tune_measurers(measurers) as measurers:
        probes = ProbeSessions()
        probe_tune = probe_tuner(model_path, db_path, target, listeners, control, memory, started, probes, measurers)

        try:
            probe = ProbeRun(settings, probe_tune, say, probes)
            choice, prepared = choose_layout(db_path, model_path, target, probe, resume_session_id)
        except ProbeStopped as stopped:
            return stopped.run
        settings = replace(settings, conv_layout=choice.layout)
        store = RecordStore(db_path)
        adopted = continue_probe(store, probes, settings)
        if adopted is not None:  # the winning probe's trials begin this tune's first round robin
            new_session, resume_session_id, started = False, adopted, time.perf_counter()
        run = TuningRun(store, prepared, settings, listeners, new_session, started, control, resume_session_id)
        run.measurers = measurers
        note_layout(run, choice, said, probes)
        channel = ControlChannel(db_path, run.session_id, run.control, engine_token).start()
        run.listeners.append(channel.on_event)
        try:
            return _run_opened_session(run, memory, on_open)
        finally:
            channel.close()


def probe_tuner(
    model_path: str | Path,
    db_path: str | Path,
    target: Target,
    listeners: Sequence[Listener],
    control: TuningControl,
    memory: MemoryRequest,
    started: float,
    probes: ProbeSessions,
    measurers: Measurers,
) -> Callable[[TuneSettings, Callable[[TuningRun], None] | None], TuningRun]:
    """How a tune runs its layout probes: sessions of their own on the tune's clock, with the
    user's listeners, control and the tune's builder and runner, each one's span kept in `probes`."""

    def probe_tune(probe_settings: TuneSettings, on_probe_open: Callable[[TuningRun], None] | None) -> TuningRun:
        began = time.perf_counter()
        run = run_session(
            model_path,
            db_path,
            target,
            probe_settings,
            listeners,
            control=control,
            memory=memory,
            started_at=started,
            on_open=on_probe_open,
            measurers=measurers,
        )
        probes.ran(run, began)
        return run

    return probe_tune


def note_layout(run: TuningRun, choice: LayoutChoice, said: list[str], probes: ProbeSessions) -> None:
    """The layout's lines go into the session's events, not to the listeners: they were shown as
    they came, and a listener's first event is the session's start. The losing probe's time is on
    the session's clock, as every race counts it, but not on its time budget; the winner's
    session is the run's (`continue_probe`)."""
    run.continues_probe = choice.layout in probes.sessions
    chosen = f"layout: {choice.describe()}"
    for text in said if chosen in said else [chosen, *said]:
        run.store.add_event(run.session_id, run.elapsed(), EventKind.INFO, text, None)
    if probes.sessions:
        run.store.add_probe_time(run.session_id, probes.losers_s(choice.layout))


def _run_opened_session(
    run: TuningRun, memory: MemoryRequest, on_open: Callable[[TuningRun], None] | None = None
) -> TuningRun:
    if not run.decision.tunes:
        run.message(EventKind.INFO, f"{run.decision.reason} ({NEW_SESSION_ADVICE})")
        run.emit(
            SessionFinished(
                run.session_id,
                SessionStatus.COMPLETED,
                run.trials_done,
                estimated_latency(run.tasks, model_best(run)),
                float(run.session["elapsed_s"] or 0),
            )
        )
        return run
    attach_memory(run, memory)
    milestones = Milestones(run, run.emit)
    rules = StoppingRules(run, milestones)
    run.batch_hooks += [milestones.after_batch, rules.after_batch]
    reused = reuse_measured_tasks(run)
    if on_open is not None:
        on_open(run)
    run.start()
    if reused:
        run.message(EventKind.INFO, reused)
    status = SessionStatus.FAILED
    try:
        holds = rules.before_start()
        if holds:  # e.g. the time budget spent by earlier runs: nothing measured, said why
            run.message(EventKind.INFO, f"not tuned: {holds}")
            run.control.stop(holds)
        else:
            run_strategy(run)
        milestones.at_end()
        status = SessionStatus.STOPPED if run.control.stop_requested else SessionStatus.COMPLETED
    except KeyboardInterrupt:
        status = SessionStatus.INTERRUPTED
        raise
    finally:
        run.finish(status)
    return run


def attach_memory(run: TuningRun, request: MemoryRequest) -> None:
    """Give a `bcd` run its tuning memory: gathered (and recorded) for a new session, the
    recorded one for a resumed session."""
    if run.settings.strategy != BCD or run.settings.diffusion_share <= 0:
        if request.stores:
            run.message(EventKind.INFO, f"memory: only the {BCD} strategy draws on earlier tunes; not used")
        return

    def say(text: str) -> None:
        run.message(EventKind.INFO, text)

    if run.resumed:
        run.memory = recorded_memory(run.store, run.session_id, run.target_key, run.tasks, say)
    else:
        run.memory = gather_memory(run.store, run.session, run.tasks, request, say)
    if run.memory is not None:
        seeded = sum(1 for index, task in enumerate(run.tasks) if run.memory.similar(index, task))
        say(f"memory: {seeded} of {len(run.tasks)} tasks draw on {run.memory.describe()}")
