"""Which layout a model's convolutions tune in, decided by measurement on this machine.

Blocked convolutions (bcd_core/layout.py), and Winograd ones in that layout (winograd.py),
usually tune to faster programs on CPUs, but not on every model. Neither untuned programs nor
a few programs of single tasks tell the layouts apart (a task's first dozen candidates are
noise), so the probe is a short tune of the whole model in each layout and the compiled models
are timed: the latency a user would get, each layout's faster timing of two (`quietest`); a
layout other than the model's own must win by a margin (layout_verdict.py). The probes are
sessions of their own (marked `layout_probe`, so no user's tune continues one by chance); a
stopped probe resumes with the next tune. The winner's session then becomes the tune
(`continue_probe`): its trials begin the tune's first round robin (tuning/bcd/top_up.py) and
its timed model is the first milestone, so the layout costs the tune the losing probes. The
choice is stored per model, target, thread count and input shapes, so every later tune of the
model finds it without measuring again. Stock MetaSchedule, GPU targets and models without a
convolution the block fits keep the model's layout, unmeasured."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path

from tvm.target import Target

from bcd_core.errors import ModelLoadError
from bcd_core.export import library_runner, target_device
from bcd_core.layout import LayoutMode, layout_block
from bcd_core.model_import import file_sha256, import_model, random_inputs
from bcd_core.records.measured import LayoutChoice, stored_choice
from bcd_core.records.states import EventKind
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import session_layout
from bcd_core.target import is_gpu, target_key
from bcd_core.timing import time_in_turns
from bcd_core.tuning.continuation import known_layout
from bcd_core.tuning.layout_verdict import ProbeFigures, layout_verdict
from bcd_core.tuning.milestones import FINAL, FIRST_ESTIMATE, compile_run, timing_on
from bcd_core.tuning.options import AUTO_LAYOUT, STOCK
from bcd_core.tuning.probe_cutoff import ProbeCutoff
from bcd_core.tuning.run import PreparedModel, TuningRun, estimated_latency, prepare_model
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.stand_ins import model_best
from bcd_core.winograd import PRIMFUNC_NAME as WINOGRAD_PRIMFUNC

PROBE_TRIALS_PER_TASK = 4  # or fewer, when the tune itself gives each task fewer
IN_TURNS_RUNS, IN_TURNS_PASSES = 50, 5  # both probes' models, as `bcd check` times one


@dataclass
class ProbeSessions:
    """The layout probes one tune ran: each layout's session, and when its run began and ended
    (`time.perf_counter`), so the winner's clock can be carried into the tune; and the model as
    each probe prepared it, which the tune in that layout takes instead of importing, splitting
    and clustering it again (seconds of a short tune's clock on a model of many tasks)."""

    sessions: dict[str, int] = field(default_factory=dict)
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    prepared: dict[str, PreparedModel] = field(default_factory=dict)

    def ran(self, run: TuningRun, began: float) -> None:
        layout = run.settings.conv_layout
        self.sessions[layout] = run.session_id
        self.spans[layout] = (began, time.perf_counter())
        self.prepared[layout] = run.prepared

    def losers_s(self, winner: str) -> float:
        """Wall time of the probes the tune does not continue: the price of measuring."""
        return sum(end - began for layout, (began, end) in self.spans.items() if layout != winner)


def continue_probe(store: RecordStore, probes: ProbeSessions, settings: TuneSettings) -> int | None:
    """Make the probe of `settings.conv_layout` the tune's session (store.continue_as_tune), or
    None when no probe of that layout ran in this tune. Its clock runs on from its end to now,
    since the probes shared the tune's clock (the later probe's trials are stamped after the
    earlier one's): what it shows as elapsed is the tune's, losing probe included."""
    session_id = probes.sessions.get(settings.conv_layout)
    if session_id is None:
        return None
    since_end = time.perf_counter() - probes.spans[settings.conv_layout][1]
    elapsed = float(store.session(session_id)["elapsed_s"] or 0) + since_end
    store.continue_as_tune(session_id, settings.identity(), settings.trials_per_task, elapsed)
    store.rename_milestone(session_id, FINAL, FIRST_ESTIMATE)
    return session_id


@dataclass(frozen=True)
class ProbeRun:
    """The user's settings, and how to run a probe's tune (tune.py's `run_session` for this
    model and store, with the user's listeners and control: that module imports this one)."""

    settings: TuneSettings
    tune: Callable[[TuneSettings, Callable[[TuningRun], None] | None], TuningRun]  # settings, on_open
    say: Callable[[str], None] = lambda text: None
    probes: ProbeSessions = field(default_factory=ProbeSessions)  # what `tune` ran


def probe_settings(settings: TuneSettings, layout: str) -> TuneSettings:
    trials = min(PROBE_TRIALS_PER_TASK, settings.trials_per_task)
    return replace(settings, conv_layout=layout, trials_per_task=trials, trials_per_round=trials, layout_probe=True)


def probe_figures(store: RecordStore, run: TuningRun) -> tuple[float | None, float | None]:
    """The probe's compiled model as timed at its last milestone (None: not timed), and its
    estimate (None: a task has no program)."""
    timed = store.model_latencies(run.session_id)
    estimate = estimated_latency(run.tasks, model_best(run))
    return (timed[-1]["measured_latency_s"] if timed else None), estimate


def probe_library(run: TuningRun, folder: Path) -> Path | None:
    """The probe's compiled model from the store's best records, kept to be timed beside the
    other probe's (a copy from the compiled cache where those are the records its milestone
    compiled); None when the model is not timed (milestones.timing_on), a task has no
    program, or it does not compile."""
    if not timing_on() or estimated_latency(run.tasks, model_best(run)) is None:
        return None
    try:
        return compile_run(run, folder / f"{run.settings.conv_layout}.so")
    except Exception as err:  # the probe's own timing (or estimate) still decides
        run.message(EventKind.WARNING, f"could not keep the probe's compiled model: {str(err).splitlines()[0]}")
        return None


def time_probes_in_turns(runs: dict[str, TuningRun], target: Target) -> dict[str, float]:
    """Both probes' compiled models timed in turns (`time_in_turns_s`), each compiled once both
    probes ran. The tasks the layouts share (matmuls, softmax, normalization: a transformer's
    all but its convolutions) find their best program over both probes' records in the store,
    so the models differ only where the layouts do; the first probe's model, compiled at its
    own end, had only its own programs for them, and the choice leaned to the layout probed
    second on models made mostly of such tasks."""
    with tempfile.TemporaryDirectory(prefix="bcd-probes-") as folder:
        libraries = {layout: probe_library(run, Path(folder)) for layout, run in runs.items()}
        inputs = random_inputs(next(iter(runs.values())).prepared.imported.inputs)
        return time_in_turns_s(libraries, inputs, target)


def time_in_turns_s(libraries: dict[str, Path | None], inputs: dict, target: Target) -> dict[str, float]:
    """Seconds per run of both probes' compiled models timed in turns (timing.py), so that a
    slow spell of the machine falls on both: each probe's own timing came minutes after the
    other's, and a spell can slow a model 1.5x. Empty when a library is missing."""
    if any(path is None for path in libraries.values()):
        return {}
    device = target_device(target)
    runners = {layout: library_runner(path, inputs, device) for layout, path in libraries.items() if path}
    timed = time_in_turns({layout: runner.run for layout, runner in runners.items()}, IN_TURNS_RUNS, IN_TURNS_PASSES)
    return {layout: timing.median_ms / 1e3 for layout, timing in timed.items()}


def quietest(own: dict[str, float | None], in_turns: dict[str, float]) -> dict[str, float | None]:
    """Each layout's faster timing of two: its probe's own and the one in turns. A slow spell of
    the machine only adds time, and it slows models unlike each other (kernels that stream
    memory most), so timing them in turns does not cancel it; of two timings minutes apart, the
    faster is the one a spell missed. A probe that could not time its model (None) stays so."""
    found: dict[str, float | None] = {}
    for layout, seconds in own.items():
        found[layout] = None if seconds is None else min(seconds, in_turns.get(layout, seconds))
    return found


def probe_layouts(
    target: Target, probe: ProbeRun, layouts: tuple[str, ...] = (LayoutMode.BLOCKED, LayoutMode.PLAIN)
) -> tuple[LayoutChoice | None, TuningRun]:
    """Tune the whole model briefly in each of `layouts` (sessions of their own in the store,
    which the real tune's search then starts from) and compare the compiled models timed in
    turns: (the choice, the last probe's run); no choice when the user stopped a probe. A later
    probe ends early once it cannot beat the fastest before it (probe_cutoff.py)."""
    started, seconds, runs, cut, stopped = time.perf_counter(), {}, {}, {}, None
    bars: dict[str, RivalBar | None] = {}  # what a later probe's floor is held against (probe_cutoff.py)
    try:
        for layout in layouts:
            settings = probe_settings(probe.settings, layout)
            probe.say(f"layout: probing {layout}: a round of up to {settings.trials_per_task} trials a task, timed")
            cutoff = rival_cutoff(layout, bars)
            run = runs[layout] = probe.tune(settings, cutoff.attach if cutoff else None)
            if run.control.stop_requested:
                stopped = run  # its store stays open: the caller resumes from it
                return None, run
            if cutoff and cutoff.floor_s:
                cut[layout] = run.cut_reason
            if layout in cut:
                seconds[layout] = cutoff.floor_s
            else:  # its timed model, else its estimate; a later probe's bar: rival_bar
                timed_s, estimate_s = probe_figures(run.store, run)
                seconds[layout] = timed_s if timed_s is not None else estimate_s
                bars[layout] = rival_bar(timed_s, estimate_s)
        timed = {layout: each for layout, each in runs.items() if layout not in cut}
        in_turns = time_probes_in_turns(timed, target) if len(timed) > 1 else {}
    finally:
        for each in runs.values():
            if each is not stopped:
                each.store.close()
    trials = probe_settings(probe.settings, LayoutMode.PLAIN).trials_per_task
    figures = ProbeFigures(quietest(seconds, in_turns), trials, len(run.tasks), started, cut, bool(in_turns))
    return layout_verdict(target, figures), run


@dataclass(frozen=True)
class RivalBar:
    """A finished probe's figure a later probe's floor is held against, and what it is."""

    seconds: float
    what: str  # "timed" (its compiled model) or "estimated"


def rival_bar(timed_s: float | None, estimate_s: float | None) -> RivalBar | None:
    """The probe's timed model, or its estimate where that is higher. A later probe's floor is
    a sum of programs timed alone, the estimate's kind of figure; it may stand for the compiled
    model only while models time at least about their estimates. Where a probe's model timed
    below its own estimate (a U-Net's Winograd probe ran 0.6x it, and its blocked probe was cut
    at a floor below that estimate), the later probe's estimate may read as high, so its floor
    is held against the rival's estimate: like against like."""
    known = [RivalBar(s, what) for s, what in ((timed_s, "timed"), (estimate_s, "estimated")) if s is not None]
    return max(known, key=lambda bar: bar.seconds) if known else None


def rival_cutoff(layout: str, bars: dict[str, RivalBar | None]) -> ProbeCutoff | None:
    """The cutoff for the probe of `layout` against the lowest bar of the probes before it, if any."""
    known = {each: bar for each, bar in bars.items() if bar is not None}
    if not known:
        return None
    rival = min(known, key=lambda each: known[each].seconds)
    return ProbeCutoff(layout, rival, known[rival].seconds, known[rival].what)


def unmeasured_choice(settings: TuneSettings, target: Target) -> LayoutChoice | None:
    """The layout when no measurement is needed: asked for, stock, or a GPU."""
    if settings.conv_layout != AUTO_LAYOUT:
        block = layout_block(target, settings.conv_layout)
        return LayoutChoice(settings.conv_layout, "as asked (--layout)", block)
    if settings.strategy == STOCK:
        return LayoutChoice(LayoutMode.PLAIN, "stock MetaSchedule tunes the model's own layout")
    if is_gpu(target):
        return LayoutChoice(LayoutMode.PLAIN, "blocked layouts are for CPU targets")
    return None


def known_choice(
    store_paths: Sequence[str | Path], model_path: str | Path, target: Target, settings: TuneSettings
) -> LayoutChoice:
    """What a tune would use without measuring anything: the asked or unmeasured layout, a
    choice stored in one of `store_paths`, or the model's own layout until a tune measures."""
    choice = unmeasured_choice(settings, target)
    if choice is not None:
        return choice
    key, model_hash = target_key(target), file_sha256(Path(model_path))
    for path in store_paths:
        if not Path(path).is_file():
            continue
        with closing(RecordStore(path, read_only=True)) as store:
            found = stored_choice(store.layout_choice(model_hash, key, settings.kernel_threads, settings.input_shapes))
        if found is not None:
            return found
    return LayoutChoice(LayoutMode.PLAIN, "auto: not measured yet (a tune measures both layouts first)")


def earlier_choice(store: RecordStore, target: Target, settings: TuneSettings, model_hash: str) -> LayoutChoice | None:
    """The choice stored for this model, or the layout of the session this tune continues."""
    key = target_key(target)
    found = stored_choice(store.layout_choice(model_hash, key, settings.kernel_threads, settings.input_shapes))
    if found is not None:
        return found
    known = known_layout(store, model_hash, key, settings)
    if known is None:
        return None
    block = layout_block(target, known[0])
    return LayoutChoice(known[0], known[1], block)


class ProbeStopped(Exception):
    """The user stopped a layout probe; `run` is the probe's session (a later tune resumes it)."""

    def __init__(self, run: TuningRun) -> None:
        super().__init__("layout probe stopped")
        self.run = run


def layouts_to_probe(model_path: str | Path, target: Target, settings: TuneSettings) -> tuple[str, ...]:
    """The layouts a probe measures: none when converting the model to the blocked layout
    blocks no convolution; Winograd first where a convolution fits it (the blocked probe after
    it then tunes only the convolutions the two lower differently, and a probe after a fast one
    ends the sooner), blocked, and the model's own. A model TVM cannot convert (an operator
    ConvertLayout does not know) keeps its own layout; its own import still raises whatever is
    wrong with the model itself."""
    shapes = {k: tuple(v) for k, v in settings.input_shapes.items()}
    try:
        mod = import_model(model_path, shapes, settings.math, LayoutMode.WINOGRAD, target).relax_mod
    except ModelLoadError:
        import_model(model_path, shapes, settings.math, LayoutMode.PLAIN, target)
        return ()
    names = [gv.name_hint for gv in mod.get_global_vars()]
    if not any("NCHWc" in name for name in names):
        return ()
    winograd = (LayoutMode.WINOGRAD,) if any(WINOGRAD_PRIMFUNC in name for name in names) else ()
    return (*winograd, LayoutMode.BLOCKED, LayoutMode.PLAIN)


def choose_layout(
    db_path: str | Path,
    model_path: str | Path,
    target: Target,
    probe: ProbeRun,
    resume_session_id: int | None = None,
) -> tuple[LayoutChoice, PreparedModel]:
    """The layout to tune `model_path` in, and the model prepared in it. The store at `db_path`
    is read if it exists and written (created) only once the model imported, so a model that
    fails to import leaves no store behind. ProbeStopped if the user stopped a probe."""
    settings = probe.settings
    shapes = {k: tuple(v) for k, v in settings.input_shapes.items()}

    def prepare(layout: str) -> PreparedModel:
        prepared = probe.probes.prepared.pop(layout, None)
        probe.probes.prepared.clear()  # the other layout's model is not tuned: not kept in memory
        if prepared is None:
            prepared = prepare_model(model_path, target, shapes, settings.cluster_mode, settings.math, layout)
        kept = prepared.imported.kept_nchw
        if kept and not settings.layout_probe:  # said once, by the tune
            probe.say(kept_nchw_line(kept))
        return prepared

    choice = layout_without_probe(db_path, model_path, target, settings, resume_session_id)
    if choice is not None:
        return choice, prepare(choice.layout)
    layouts = layouts_to_probe(model_path, target, settings)
    if not layouts:
        choice = LayoutChoice(LayoutMode.PLAIN, "no convolution the blocked layout applies to")
    else:
        choice, run = probe_layouts(target, probe, layouts)
        if choice is None:
            raise ProbeStopped(run)
    with closing(RecordStore(db_path)) as store:
        row = choice.row(target_key(target), settings.kernel_threads, file_sha256(Path(model_path)))
        store.record_layout_choice(row, settings.input_shapes)
    probe.say(f"layout: {choice.describe()}")
    return choice, prepare(choice.layout)


def kept_nchw_line(kept: int) -> str:
    """What the user reads when the blocked layout keeps `kept` convolutions NCHW."""
    which, its = ("1 convolution", "its") if kept == 1 else (f"{kept} convolutions", "their")
    return (
        f"layout: {which} kept NCHW: TVM cannot carry {its} blocked output through an operator after it "
        "(a mean or split over the channels, a one-channel broadcast); the other convolutions are blocked"
    )


def layout_without_probe(
    db_path: str | Path, model_path: str | Path, target: Target, settings: TuneSettings, resume_session_id: int | None
) -> LayoutChoice | None:
    """The layout when nothing needs measuring: a resumed session's, the asked or unmeasured
    one, a stored choice, or a continued session's."""
    existing = Path(db_path).is_file() and Path(model_path).is_file()
    if resume_session_id is not None and existing:  # a resumed session keeps its layout, whatever was measured since
        with closing(RecordStore(db_path)) as store:
            layout = session_layout(store.session(resume_session_id))
        block = layout_block(target, layout)
        return LayoutChoice(layout, f"as session {resume_session_id}, resumed", block)
    choice = unmeasured_choice(settings, target)
    if choice is not None or not existing:
        return choice
    with closing(RecordStore(db_path)) as store:
        return earlier_choice(store, target, settings, file_sha256(Path(model_path)))
