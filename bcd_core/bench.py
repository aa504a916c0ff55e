"""`bcd bench`: stock MetaSchedule vs BCD on the same model, target and budget.

Reports the paper's metric: the baseline's final estimated
latency L_b, the time t_b it first reached it, the time t_d BCD first reached L_b, and
speedup = t_b / t_d; plus both final estimates, both compiled models' measured latency and
onnxruntime's on the same input with the same thread count. The two strategies use separate
stores so neither sees the other's records.

Two checks on the wall-clock metric come with it: the same comparison counted in measured
trials (how much of a speedup is a better search rather than cheaper trials), and a machine
speed probe (onnxruntime's latency before each tune and after both): on a shared machine one
strategy can run in a slow spell, and then its wall times say more about the neighbours than
about the tuner.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tvm.target import Target

from bcd_core.errors import MissingRecordError
from bcd_core.export import (
    compile_library,
    library_runner,
    onnxruntime_runner,
    run_onnxruntime,
    target_device,
)
from bcd_core.memory.recall import COLD, MemoryRequest
from bcd_core.model_import import InputSpec, load_onnx, random_inputs, static_inputs
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import PLAIN_LAYOUT, session_layout
from bcd_core.session_view import first_time_at_or_below, session_timeline, session_trial_timeline
from bcd_core.target import describe_target, host_core_count
from bcd_core.timing import RUNS, time_in_turns
from bcd_core.tuning.events import Listener
from bcd_core.tuning.options import STOCK
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


def memory_for(strategy: str, memory: MemoryRequest) -> MemoryRequest:
    """Stock MetaSchedule is the cold baseline: it never draws on memory."""
    return COLD if strategy == STOCK else memory


log = logging.getLogger("bcd.bench")
STRATEGY_ORDER = ("metaschedule", "bcd")
PROBE_RUNS = RUNS  # probes are timed like every other latency (bcd_core/timing.py)
# The machine's speed moves with other work on it: a spread of onnxruntime's latency past this
# within one bench makes its wall-clock comparison unreliable.
DRIFT_WARNING = 0.15


@dataclass
class StrategyResult:
    strategy: str
    session_id: int
    trials: int
    elapsed_s: float
    final_estimate_s: float | None
    measured_latency_ms: float | None
    bookkeeping_s: float  # store writes, metrics, events, scheduling decisions
    timeline: list[tuple[float, float]]  # (elapsed s, estimated latency s) where defined
    trial_timeline: list[tuple[int, float]] = field(default_factory=list)  # (trials measured, estimate s)
    layout: str = "nchw"  # the convolutions' layout the session tuned
    # The compiled model timed while it tuned (tuning/milestones.py): (elapsed s, estimate s, measured s)
    milestones: list[tuple[float, float, float]] = field(default_factory=list)


@dataclass
class BenchReport:
    model: str
    target: str
    trials_per_task: int
    trials_per_round: int
    baseline_final_s: float | None
    baseline_time_s: float | None  # t_b
    bcd_time_s: float | None  # t_d (None: BCD never reached L_b)
    speedup: float | None
    onnxruntime_ms: float | None
    threads: int
    results: dict[str, StrategyResult]
    baseline_trials: int | None = None  # trials the baseline had measured when it reached L_b
    bcd_trials: int | None = None  # trials BCD had measured when it reached L_b
    trial_speedup: float | None = None  # baseline_trials / bcd_trials
    machine_probes_ms: dict[str, float] = field(default_factory=dict)  # onnxruntime, by moment

    @property
    def machine_drift(self) -> float | None:
        """How much slower the machine ran at its slowest probe than at its fastest."""
        probes = list(self.machine_probes_ms.values())
        return max(probes) / min(probes) - 1 if len(probes) > 1 and min(probes) > 0 else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def speedup_at_equal_latency(
    baseline: Sequence[tuple[float, float]], bcd: Sequence[tuple[float, float]]
) -> tuple[float | None, float | None, float | None, float | None]:
    """(L_b, t_b, t_d, t_b / t_d)."""
    if not baseline:
        return None, None, None, None
    final = min(estimate for _, estimate in baseline)
    t_b = first_time_at_or_below(baseline, final)
    t_d = first_time_at_or_below(bcd, final)
    speedup = t_b / t_d if t_b is not None and t_d else None
    return final, t_b, t_d, speedup


def machine_probe_ms(onnx_model: Any, inputs: dict[str, Any]) -> float | None:
    """onnxruntime's median latency now: the machine's speed at this moment. A diagnostic
    only, so a model onnxruntime cannot run is tuned all the same (without probes)."""
    try:
        return run_onnxruntime(onnx_model, inputs, runs=PROBE_RUNS).median_ms
    except Exception as err:  # noqa: BLE001 - any onnxruntime failure just means no probe
        log.warning("no machine speed probe: onnxruntime failed on the model: %s", err)
        return None


ONNXRUNTIME = "onnxruntime"


def side_settings(settings: TuneSettings, strategy: str) -> TuneSettings:
    """One side's settings: stock MetaSchedule tunes the model's own layout, as a user of it gets."""
    layout = PLAIN_LAYOUT if strategy == STOCK else settings.conv_layout
    return replace(settings, strategy=strategy, conv_layout=layout)


def measure_in_turns(
    libraries: dict[str, Path], onnx_model: Any, inputs: dict[str, Any], runs: int, target: Target
) -> dict[str, float]:
    """Median latency (ms) of each compiled model and of onnxruntime (key ONNXRUNTIME), timed
    in turns after the tunes by bcd_core/timing.py: a model timed right after its own tune can
    read well above what it reads later, and one busy moment of the machine must not fall on
    one of them only."""
    device = target_device(target)
    runners = {name: library_runner(path, inputs, device).run for name, path in libraries.items()}
    try:
        runners[ONNXRUNTIME] = onnxruntime_runner(onnx_model, inputs).run
    except Exception as err:  # noqa: BLE001 - any onnxruntime failure only means no reference
        log.warning("onnxruntime cannot run the model: %s", err)
    return {name: timing.median_ms for name, timing in time_in_turns(runners, runs).items()}


def run_bench(
    model: str | Path,
    target: Target,
    settings: TuneSettings,
    out_dir: str | Path,
    listeners: Sequence[Listener] = (),
    latency_runs: int = 50,
    progress: Any = print,
    memory: MemoryRequest = COLD,
) -> BenchReport:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, StrategyResult] = {}
    libraries: dict[str, Path] = {}
    onnx_model = load_onnx(model)
    probe_inputs = random_inputs(static_inputs(onnx_model, settings.input_shapes))
    probes: dict[str, float] = {}
    prepared_inputs = None
    for strategy in STRATEGY_ORDER:
        probe = machine_probe_ms(onnx_model, probe_inputs)
        if probe is not None:
            probes[f"before {strategy}"] = probe
        progress(f"== {strategy} ==")
        results[strategy], library, prepared_inputs = _tune_strategy(
            model, target, side_settings(settings, strategy), out_dir, listeners, progress, memory
        )
        if library is not None:
            libraries[strategy] = library
    assert prepared_inputs is not None
    progress("measuring the compiled models")
    measured = measure_in_turns(libraries, onnx_model, random_inputs(prepared_inputs), latency_runs, target)
    for strategy in libraries:
        results[strategy].measured_latency_ms = measured[strategy]
    reference = measured.get(ONNXRUNTIME)
    if reference is not None:
        probes["after both"] = reference
    report = bench_report(model, target, settings, results, reference, probes)
    write_outputs(report, out_dir)
    return report


def _tune_strategy(
    model: str | Path,
    target: Target,
    settings: TuneSettings,
    out_dir: Path,
    listeners: Sequence[Listener],
    progress: Any,
    memory: MemoryRequest = COLD,
) -> tuple[StrategyResult, Path | None, list[InputSpec]]:
    """Tune with `settings.strategy` in a store of its own, then compile the tuned model:
    (the strategy's result, its compiled model or None, the model's inputs)."""
    strategy = settings.strategy
    run = run_session(
        model, out_dir / f"{strategy}.db", target, settings, listeners, memory=memory_for(strategy, memory)
    )
    session = run.store.session(run.session_id)
    imported = run.prepared.imported
    progress(f"compiling the {strategy} model")
    library = None
    try:
        library, _ = compile_library(run.database, imported, target, out_dir / f"{Path(model).stem}-{strategy}.so")
    except MissingRecordError as err:  # a budget too small to measure every task
        progress(f"{strategy}: no compiled model: {err}")
    result = stored_result(strategy, run.store, session)
    run.store.close()  # the last connection to close folds the WAL into the file
    return result, library, imported.inputs


def stored_result(strategy: str, store: RecordStore, session: dict[str, Any]) -> StrategyResult:
    """A finished (or stopped) tune's figures from its store; its compiled model's latency is
    measured later."""
    session_id = int(session["id"])
    return StrategyResult(
        strategy=strategy,
        session_id=session_id,
        trials=int(session["trials_done"] or 0),
        elapsed_s=float(session["elapsed_s"] or 0.0),
        final_estimate_s=session["estimated_latency_s"],
        measured_latency_ms=None,
        bookkeeping_s=float(session.get("bookkeeping_s") or 0.0),
        timeline=session_timeline(store, session_id),
        trial_timeline=session_trial_timeline(store, session_id),
        layout=session_layout(session),
        milestones=[
            (row["elapsed_s"], row["estimated_latency_s"], row["measured_latency_s"])
            for row in store.model_latencies(session_id)
        ],
    )


def bench_report(
    model: str | Path,
    target: Target,
    settings: TuneSettings,
    results: dict[str, StrategyResult],
    onnxruntime_ms: float | None,
    probes: dict[str, float],
) -> BenchReport:
    """Both strategies' results compared at the baseline's final latency, in time and in trials."""
    final, t_b, t_d, speedup = speedup_at_equal_latency(results["metaschedule"].timeline, results["bcd"].timeline)
    _, n_b, n_d, trial_speedup = speedup_at_equal_latency(
        results["metaschedule"].trial_timeline, results["bcd"].trial_timeline
    )
    return BenchReport(
        model=str(model),
        target=describe_target(target),
        trials_per_task=settings.trials_per_task,
        trials_per_round=settings.trials_per_round,
        baseline_final_s=final,
        baseline_time_s=t_b,
        bcd_time_s=t_d,
        speedup=speedup,
        onnxruntime_ms=onnxruntime_ms,
        threads=host_core_count(),
        results=results,
        baseline_trials=None if n_b is None else int(n_b),
        bcd_trials=None if n_d is None else int(n_d),
        trial_speedup=trial_speedup,
        machine_probes_ms=probes,
    )


def write_outputs(report: BenchReport, out_dir: Path) -> None:
    stem = Path(report.model).stem
    for name, result in report.results.items():
        with open(out_dir / f"{stem}-{name}-timeline.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["elapsed_s", "estimated_latency_ms"])
            writer.writerows((round(t, 3), round(lat * 1e3, 6)) for t, lat in result.timeline)
    (out_dir / f"{stem}-bench.json").write_text(json.dumps(report.to_json(), indent=2))
    plot_timelines(report, out_dir / f"{stem}-bench.png")


def plot_timelines(report: BenchReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5), dpi=110)
    colors = {"metaschedule": "#7f7f7f", "bcd": "#1f77b4"}
    labels = {"metaschedule": "stock MetaSchedule", "bcd": "BCD"}
    for name, result in report.results.items():
        if result.timeline:
            xs = [t / 60 for t, _ in result.timeline]
            ys = [lat * 1e3 for _, lat in result.timeline]
            axis.step(xs, ys, where="post", label=labels[name], color=colors[name], linewidth=2)
        if result.milestones:
            xs = [elapsed / 60 for elapsed, _, _ in result.milestones]
            ys = [measured * 1e3 for _, _, measured in result.milestones]
            axis.scatter(xs, ys, marker="D", color=colors[name], label=f"{labels[name]}, compiled model timed")
    if report.baseline_final_s is not None:
        axis.axhline(report.baseline_final_s * 1e3, color="#7f7f7f", linestyle=":", linewidth=1)
    if report.bcd_time_s is not None and report.baseline_time_s is not None:
        axis.axvline(report.bcd_time_s / 60, color="#1f77b4", linestyle="--", linewidth=1)
        axis.annotate(
            f"BCD reaches the baseline's final latency\nspeedup t_b / t_d = {report.speedup:.2f}x",
            (report.bcd_time_s / 60, report.baseline_final_s * 1e3),
            # Inside the axes wherever the crossing is (an offset left the text over the y label).
            xytext=(0.3, 0.75),
            textcoords="axes fraction",
            fontsize=9,
            arrowprops={"arrowstyle": "->", "color": "#1f77b4"},
        )
    title = f"{Path(report.model).name}: {report.trials_per_task} trials/task, {report.target}"
    finish_latency_plot(figure, axis, title, report.onnxruntime_ms, path)


def finish_latency_plot(figure: Any, axis: Any, title: str, onnxruntime_ms: float | None, path: Path) -> None:
    """onnxruntime's line, log latency axis, labels, legend; saved to `path` and closed."""
    import matplotlib.pyplot as plt

    if onnxruntime_ms:
        axis.axhline(onnxruntime_ms, color="#2ca02c", linestyle="-.", linewidth=1, label="onnxruntime")
    axis.set_yscale("log")
    axis.set_xlabel("tuning time (min, including import and task extraction)")
    axis.set_ylabel("estimated model latency (ms)")
    axis.set_title(title)
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def load_report(path: str | Path) -> BenchReport:
    """A report written by `run_bench` (e.g. to redraw its plot)."""
    data = json.loads(Path(path).read_text())
    data["results"] = {k: StrategyResult(**v) for k, v in data["results"].items()}
    for result in data["results"].values():
        result.timeline = [tuple(point) for point in result.timeline]
        result.trial_timeline = [tuple(point) for point in result.trial_timeline]
    return BenchReport(**data)


def format_report(report: BenchReport) -> str:
    def ms(seconds: float | None) -> str:
        return "n/a" if seconds is None else f"{seconds * 1e3:.3f} ms"

    def minutes(seconds: float | None) -> str:
        return "never" if seconds is None else f"{seconds / 60:.1f} min"

    lines = [
        f"model {report.model}, target {report.target}, {report.trials_per_task} trials/task, "
        f"{report.trials_per_round} per round",
        f"{'strategy':<14}{'layout':>8}{'trials':>8}{'time':>11}{'final est.':>13}{'measured':>12}{'bookkeeping':>13}",
    ]
    for name, result in report.results.items():
        measured = "n/a" if result.measured_latency_ms is None else f"{result.measured_latency_ms:.3f} ms"
        share = result.bookkeeping_s / result.elapsed_s if result.elapsed_s else 0.0
        lines.append(
            f"{name:<14}{result.layout:>8}{result.trials:>8}{minutes(result.elapsed_s):>11}{ms(result.final_estimate_s):>13}"
            f"{measured:>12}{share:>12.2%}"
        )
    if report.onnxruntime_ms is not None:
        lines.append(f"onnxruntime ({report.threads} threads): {report.onnxruntime_ms:.3f} ms")
    lines.append(
        f"baseline final {ms(report.baseline_final_s)} reached at {minutes(report.baseline_time_s)}; "
        f"BCD reached it at {minutes(report.bcd_time_s)}; "
        f"speedup {'n/a' if report.speedup is None else f'{report.speedup:.2f}x'}"
    )
    if report.baseline_trials is not None:
        lines.append(
            f"in measured trials: baseline {report.baseline_trials}, BCD "
            f"{'never' if report.bcd_trials is None else report.bcd_trials}; "
            f"{'n/a' if report.trial_speedup is None else f'{report.trial_speedup:.2f}x'}"
        )
    lines.extend(machine_lines(report))
    return "\n".join(lines)


def machine_lines(report: BenchReport) -> list[str]:
    """The speed probes, and a warning when the machine's speed moved during the bench."""
    drift = report.machine_drift
    if drift is None:
        return []
    probes = ", ".join(f"{ms:.2f} ms {moment}" for moment, ms in report.machine_probes_ms.items())
    lines = [f"machine speed (onnxruntime): {probes}; spread {drift:.0%}"]
    if drift > DRIFT_WARNING:
        lines.append(
            f"warning: the machine ran {drift:.0%} slower at times than at others during this bench; "
            "its wall-clock comparison is unreliable (other work on the machine?). The comparison "
            "in measured trials is less affected; rerun on an idle machine for timings"
        )
    return lines
