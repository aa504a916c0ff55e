"""`bcd bench --seeds N MODEL [MODEL ...]`: a benchmark that run-to-run noise cannot fool.

For every model, N runs of stock MetaSchedule and N runs of each other strategy (seeds 0 to
N-1, taken in turns so that a slow spell of the machine falls on both sides), each in its own
store. What it reports per model and strategy, against the stock runs:
- the mean-curve speedup: the mean of the stock runs' estimated latency over time and of the
  strategy's runs; when the strategy's mean first reaches stock's final mean estimate,
  against when stock's mean did, in wall time and in measured trials;
- every cross pair (each stock run against each run of the strategy): median and range of
  the speedup where reached, and how many reached;
- final mean estimates, the time to the first full estimate (every task measured once:
  stock's gradient scheduler submits its whole first round robin before it joins any result,
  so its first estimate comes late), wall time per measured trial, the compiled models'
  measured latency, and onnxruntime probes between runs (the machine's speed).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tvm.target import Target

from bcd_core.bench import (
    COLD,
    ONNXRUNTIME,
    finish_latency_plot,
    machine_probe_ms,
    measure_in_turns,
    memory_for,
    speedup_at_equal_latency,
)
from bcd_core.errors import MissingRecordError
from bcd_core.export import compile_library
from bcd_core.formatting import format_ms
from bcd_core.memory.recall import MemoryRequest
from bcd_core.model_import import load_onnx, random_inputs, static_inputs
from bcd_core.records.timing import session_layout
from bcd_core.session_view import session_timeline, session_trial_timeline
from bcd_core.target import describe_target, host_core_count
from bcd_core.tuning.events import Listener
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

BASELINE = "metaschedule"
Curve = list[tuple[float, float]]


@dataclass
class RunResult:
    strategy: str
    seed: int
    trials: int
    elapsed_s: float
    final_estimate_s: float | None
    first_estimate_s: float | None  # time to the first full estimate
    measured_latency_ms: float | None
    timeline: Curve  # (elapsed s, estimated latency s)
    trial_timeline: Curve  # (trials measured, estimated latency s)
    layout: str = "nchw"  # the convolutions' layout the session tuned (results before layouts: nchw)
    # The compiled model as the tune timed it at its milestones, beside the estimate timed in
    # the same minute: (elapsed s, estimate s, measured s). The timings in turns after all
    # tunes compare the models; these compare a model with its own estimate, on one host speed.
    model_timings: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def seconds_per_trial(self) -> float | None:
        return self.elapsed_s / self.trials if self.trials else None


@dataclass
class Comparison:
    """One strategy against the stock runs of one model."""

    strategy: str
    mean_speedup: float | None  # wall time, mean curves; None: never reached
    mean_trial_speedup: float | None  # measured trials, mean curves
    pair_speedups: list[float | None]  # every (stock run, run) pair; None: never reached
    final_mean_s: float | None
    baseline_final_mean_s: float | None
    first_estimate_mean_s: float | None
    baseline_first_estimate_mean_s: float | None
    seconds_per_trial: float | None
    baseline_seconds_per_trial: float | None
    measured_mean_ms: float | None
    baseline_measured_mean_ms: float | None
    # (share of stock's mean tuning time, this strategy's mean-curve estimate then, stock's), s
    equal_time: list[tuple[float, float | None, float | None]] = field(default_factory=list)

    @property
    def reached(self) -> int:
        return sum(1 for s in self.pair_speedups if s)

    @property
    def final_ratio(self) -> float | None:
        """Final mean estimate against stock's (above 1: worse)."""
        if not self.final_mean_s or not self.baseline_final_mean_s:
            return None
        return self.final_mean_s / self.baseline_final_mean_s

    @property
    def trial_cost_ratio(self) -> float | None:
        if not self.seconds_per_trial or not self.baseline_seconds_per_trial:
            return None
        return self.seconds_per_trial / self.baseline_seconds_per_trial


@dataclass
class ModelMatrix:
    model: str
    runs: list[RunResult]
    onnxruntime_ms: float | None
    probes_ms: list[float] = field(default_factory=list)

    def runs_of(self, strategy: str) -> list[RunResult]:
        return [run for run in self.runs if run.strategy == strategy]

    def comparisons(self) -> list[Comparison]:
        strategies = dict.fromkeys(run.strategy for run in self.runs if run.strategy != BASELINE)
        return [compare(self.runs_of(BASELINE), self.runs_of(strategy)) for strategy in strategies]


@dataclass
class Matrix:
    target: str
    trials_per_task: int
    trials_per_round: int
    seeds: int
    threads: int
    command: str
    models: list[ModelMatrix]
    memory: list[str] = field(default_factory=list)  # stores BCD drew on (--memory); stock is cold

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# -- curves -------------------------------------------------------------------------------
def estimate_at(steps: Curve, when: float) -> float | None:
    """The best estimate a timeline had reached by `when` (None before its first)."""
    reached = [latency for t, latency in steps if t <= when]
    return min(reached) if reached else None


def time_grid(runs: Sequence[Curve], points: int = 400) -> list[float]:
    end = max((t for steps in runs for t, _ in steps), default=0.0)
    return [end * i / points for i in range(points + 1)]


def mean_curve(runs: Sequence[Curve], grid: Sequence[float]) -> Curve:
    """The mean of the runs' best estimates at each grid point where every run had one."""
    values = [(t, [estimate_at(steps, t) for steps in runs]) for t in grid]
    return [(t, statistics.fmean(v)) for t, v in values if v and all(x is not None for x in v)]


def mean_speedup(baseline: Sequence[Curve], other: Sequence[Curve]) -> float | None:
    grid = time_grid([*baseline, *other])
    return speedup_at_equal_latency(mean_curve(baseline, grid), mean_curve(other, grid))[3]


EQUAL_TIME_SHARES = (0.25, 0.5, 1.0)  # of stock's tuning time: "how good after N minutes?"


def mean_estimate_at(runs: Sequence[Curve], when: float) -> float | None:
    """The mean of the runs' best estimates at `when` (None unless every run had one)."""
    return _mean([estimate_at(steps, when) for steps in runs]) if runs else None


def equal_time_estimates(
    baseline: list[RunResult], runs: list[RunResult]
) -> list[tuple[float, float | None, float | None]]:
    """Both sides' mean-curve estimates at shares of stock's mean tuning time."""
    stock_s = statistics.fmean(b.elapsed_s for b in baseline)
    ours, stock = [r.timeline for r in runs], [b.timeline for b in baseline]
    return [
        (share, mean_estimate_at(ours, share * stock_s), mean_estimate_at(stock, share * stock_s))
        for share in EQUAL_TIME_SHARES
    ]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present and len(present) == len(values) else None


def compare(baseline: list[RunResult], runs: list[RunResult]) -> Comparison:
    pairs = [speedup_at_equal_latency(b.timeline, r.timeline)[3] for b in baseline for r in runs]
    return Comparison(
        strategy=runs[0].strategy,
        mean_speedup=mean_speedup([b.timeline for b in baseline], [r.timeline for r in runs]),
        mean_trial_speedup=mean_speedup([b.trial_timeline for b in baseline], [r.trial_timeline for r in runs]),
        pair_speedups=pairs,
        final_mean_s=_mean([r.final_estimate_s for r in runs]),
        baseline_final_mean_s=_mean([b.final_estimate_s for b in baseline]),
        first_estimate_mean_s=_mean([r.first_estimate_s for r in runs]),
        baseline_first_estimate_mean_s=_mean([b.first_estimate_s for b in baseline]),
        seconds_per_trial=_mean([r.seconds_per_trial for r in runs]),
        baseline_seconds_per_trial=_mean([b.seconds_per_trial for b in baseline]),
        measured_mean_ms=_mean([r.measured_latency_ms for r in runs]),
        baseline_measured_mean_ms=_mean([b.measured_latency_ms for b in baseline]),
        equal_time=equal_time_estimates(baseline, runs),
    )


# -- running ------------------------------------------------------------------------------
def run_matrix(
    models: Sequence[str | Path],
    target: Target,
    settings: TuneSettings,
    strategies: Sequence[str],
    seeds: int,
    out_dir: str | Path,
    command: str = "",
    listeners: Sequence[Listener] = (),
    latency_runs: int = 30,
    progress: Any = print,
    memory: MemoryRequest = COLD,
) -> Matrix:
    out_dir = Path(out_dir)
    matrix = Matrix(
        target=describe_target(target),
        trials_per_task=settings.trials_per_task,
        trials_per_round=settings.trials_per_round,
        seeds=seeds,
        threads=host_core_count(),
        command=command,
        models=[],
        memory=list(memory.stores) if memory.enabled else [],
    )
    order = [BASELINE, *[s for s in strategies if s != BASELINE]]
    for model in models:
        result = _bench_model(
            Path(model), target, settings, order, seeds, out_dir, listeners, latency_runs, progress, memory
        )
        matrix.models.append(result)
        write_matrix(matrix, out_dir)  # a long matrix keeps what it has if stopped later
    return matrix


def _bench_model(
    model: Path,
    target: Target,
    settings: TuneSettings,
    strategies: Sequence[str],
    seeds: int,
    out_dir: Path,
    listeners: Sequence[Listener],
    latency_runs: int,
    progress: Any,
    memory: MemoryRequest = COLD,
) -> ModelMatrix:
    folder = out_dir / model.stem
    folder.mkdir(parents=True, exist_ok=True)
    onnx_model = load_onnx(model)
    probe_inputs = random_inputs(static_inputs(onnx_model, settings.input_shapes))
    result = ModelMatrix(model=str(model), runs=[], onnxruntime_ms=None)
    libraries: dict[str, Path] = {}
    inputs = None
    for seed in range(seeds):
        for strategy in strategies:
            probe = machine_probe_ms(onnx_model, probe_inputs)
            if probe is not None:
                result.probes_ms.append(probe)
            name = f"{strategy}-seed{seed}"
            progress(f"== {model.name}: {name} ==")
            run = run_session(
                model,
                folder / f"{name}.db",
                target,
                replace(settings, strategy=strategy, seed=seed),
                listeners,
                memory=memory_for(strategy, memory),
            )
            inputs = run.prepared.imported.inputs
            try:
                imported = run.prepared.imported
                libraries[name], _ = compile_library(run.database, imported, target, folder / f"{model.stem}-{name}.so")
            except MissingRecordError as err:
                progress(f"{name}: no compiled model: {err}")
            result.runs.append(_run_result(run, strategy, seed))
            run.store.close()
    progress(f"== {model.name}: measuring the compiled models ==")
    measured = measure_in_turns(libraries, onnx_model, random_inputs(inputs), latency_runs, target) if inputs else {}
    for run_result in result.runs:
        run_result.measured_latency_ms = measured.get(f"{run_result.strategy}-seed{run_result.seed}")
    result.onnxruntime_ms = measured.get(ONNXRUNTIME)
    return result


def _run_result(run: Any, strategy: str, seed: int) -> RunResult:
    session = run.store.session(run.session_id)
    timeline = session_timeline(run.store, run.session_id)
    return RunResult(
        strategy=strategy,
        seed=seed,
        trials=int(session["trials_done"] or 0),
        elapsed_s=float(session["elapsed_s"] or 0.0),
        final_estimate_s=session["estimated_latency_s"],
        first_estimate_s=timeline[0][0] if timeline else None,
        measured_latency_ms=None,
        timeline=timeline,
        trial_timeline=session_trial_timeline(run.store, run.session_id),
        layout=session_layout(session),
        model_timings=model_timings(run.store, run.session_id),
    )


def model_timings(store: Any, session_id: int) -> list[tuple[float, float, float]]:
    """A session's whole-model timings: (elapsed s, estimate s, measured s)."""
    rows = store.model_latencies(session_id)
    return [
        (r["elapsed_s"], r["estimated_latency_s"], r["measured_latency_s"]) for r in rows if r["measured_latency_s"]
    ]


# -- saving and reading -------------------------------------------------------------------
def write_matrix(matrix: Matrix, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "matrix.json"
    path.write_text(json.dumps(matrix.to_json(), indent=1))
    for model in matrix.models:
        if model.runs:
            plot_model(model, matrix, out_dir / f"{Path(model.model).stem}-curves.png")
    return path


COLORS = {"metaschedule": "#7f7f7f", "bcd": "#1f77b4"}


def strategy_label(strategy: str, matrix: Matrix) -> str:
    """A strategy's name in tables and plots; "with memory" where it drew on --memory stores."""
    return f"{strategy} with memory" if matrix.memory and strategy != BASELINE else strategy


def plot_model(model: ModelMatrix, matrix: Matrix, path: Path) -> None:
    """Every run's estimated latency over time (thin) and each strategy's mean curve (thick)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5), dpi=110)
    grid = time_grid([run.timeline for run in model.runs if run.timeline])
    for strategy in dict.fromkeys(run.strategy for run in model.runs):
        color = COLORS.get(strategy, "#2ca02c")
        runs = [run.timeline for run in model.runs_of(strategy) if run.timeline]
        for steps in runs:
            axis.step([t / 60 for t, _ in steps], [v * 1e3 for _, v in steps], where="post", color=color, alpha=0.3)
        mean = mean_curve(runs, grid)
        if mean:
            label = f"{strategy_label(strategy, matrix)} (mean of {len(runs)})"
            axis.plot([t / 60 for t, _ in mean], [v * 1e3 for _, v in mean], color=color, linewidth=2.5, label=label)
    title = f"{Path(model.model).name}: {matrix.trials_per_task} trials/task, {matrix.seeds} seeds, {matrix.target}"
    finish_latency_plot(figure, axis, title, model.onnxruntime_ms, path)


def load_matrix(path: str | Path) -> Matrix:
    data = json.loads(Path(path).read_text())
    models = []
    for model in data.pop("models"):
        runs = [RunResult(**run) for run in model.pop("runs")]
        for run in runs:
            run.timeline = [tuple(p) for p in run.timeline]
            run.trial_timeline = [tuple(p) for p in run.trial_timeline]
            run.model_timings = [tuple(p) for p in run.model_timings]
        models.append(ModelMatrix(runs=runs, **model))
    return Matrix(models=models, **data)


def _speed(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}x"


def _pairs(comparison: Comparison) -> str:
    reached = sorted(s for s in comparison.pair_speedups if s)
    if not reached:
        return f"0/{len(comparison.pair_speedups)}"
    # Pairs that never reach count as 0 so the median says "never" when most of them never do.
    middle = statistics.median([s or 0.0 for s in comparison.pair_speedups])
    count = f"{comparison.reached}/{len(comparison.pair_speedups)}"
    return f"{count}, median {_speed(middle or None)} ({reached[0]:.2f}-{reached[-1]:.2f}x)"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _first(comparison: Comparison) -> str:
    ours, stock = comparison.first_estimate_mean_s, comparison.baseline_first_estimate_mean_s
    return "n/a" if ours is None or stock is None else f"{ours:.0f} / {stock:.0f}"


def _measured(comparison: Comparison) -> str:
    ours, stock = comparison.measured_mean_ms, comparison.baseline_measured_mean_ms
    return "n/a" if ours is None or stock is None else f"{ours:.3f} / {stock:.3f}"


def equal_time_text(comparison: Comparison) -> str:
    """`0.25: 3.10 / 4.02, ...`: the strategy's mean estimate (ms) and stock's at shares of stock's time."""
    cells = [f"{share:g}: {format_ms(ours)} / {format_ms(stock)}" for share, ours, stock in comparison.equal_time]
    return ", ".join(cells)


def markdown_table(matrix: Matrix) -> str:
    """The matrix as a Markdown table, one row per model and strategy against stock."""
    lines = [
        f"{matrix.seeds} seeds a side, {matrix.trials_per_task} trials per task, {matrix.trials_per_round} per round, "
        f"{matrix.target}, {matrix.threads} threads. Command: `{matrix.command}`",
        "",
        "| model | strategy | mean-curve speedup (time) | (trials) | cross pairs reached | final mean est. ms "
        "(stock) | final / stock | first full est. s (stock) | s per trial / stock | measured ms (stock) | "
        "onnxruntime ms | est. ms at shares of stock's time (stock) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model in matrix.models:
        for c in model.comparisons():
            lines.append(
                f"| {Path(model.model).stem} | {strategy_label(c.strategy, matrix)} | {_speed(c.mean_speedup)} | "
                f"{_speed(c.mean_trial_speedup)} | {_pairs(c)} | "
                f"{format_ms(c.final_mean_s)} ({format_ms(c.baseline_final_mean_s)})"
                f" | {_ratio(c.final_ratio)} | {_first(c)} | {_ratio(c.trial_cost_ratio)} | {_measured(c)} | "
                f"{'n/a' if model.onnxruntime_ms is None else f'{model.onnxruntime_ms:.3f}'} | {equal_time_text(c)} |"
            )
    return "\n".join(lines)
