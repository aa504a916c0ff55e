"""Write docs/benchmarks.md from the bench results committed under docs/bench/.

    python experiments/benchmarks_doc.py           # writes docs/benchmarks.md
    python experiments/benchmarks_doc.py --check   # exit 1 if docs/benchmarks.md or README.md's table is stale
    python experiments/benchmarks_doc.py --readme  # print the README's results table

Every figure on the page is computed here from `bcd bench` JSON (read with bcd_core.bench_matrix,
so the speedups are the ones `bcd bench` prints) and from the raw outputs of the experiments it
names; the prose around them lives in this file. To add a result, commit its JSON under
docs/bench/, name it below, and run this script.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from bcd_core.bench_matrix import BASELINE, Comparison, ModelMatrix, RunResult, load_matrix

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
CPU_SET = "docs/bench/blocked-znver4"  # `bcd bench` of the current code on the 2-core CPU
# Checks of the method (timing tools, the runner's cache mode) measured with older code.
METHOD_SET = "docs/bench/method"
METHOD_CODE = "commits d7de03c and 8ccedb7"
# `bcd bench` of the current code on a second 2-core CPU, one bcd was never developed on.
SECOND_CPU_SET = "docs/bench/blocked-rocketlake"
SECOND_CPU_CODE = {
    "*": "fb052da",
    "unseen_vit": "420d2cf",
    "unseen_vit-16": "2546894",
    "resnet18": "2a1a706",
    "squeezenet1_1": "e5750e1",
    "unseen_effnet": "a49bf94",
}
# `bcd bench` on a third 2-core CPU, one with AVX2 only (8-channel blocks where the others have 16).
AVX2_CPU_SET = "docs/bench/blocked-znver3"
AVX2_CPU_CODE = {"*": "b6531e8"}
# Where a README row's model was benched, when not on the first CPU.
ELSEWHERE = {SECOND_CPU_SET: ", Intel Xeon", AVX2_CPU_SET: ", AMD EPYC (AVX2)"}
GPU_SET = "docs/bench/cuda-8-h200-current"  # the latest check of the CUDA path
GPU_RESULT = "transformer_encoder_l2-bench.json"
GPU_MILESTONES = "milestones-check.json"  # the latest code's check there
GPU_CODE = "commit bf0421e"  # the code the GPU pair was measured with
# The code each model was benched with ("*": the others).
CURRENT_CODE = {
    "*": "927ef38",
    "squeezenet1_1": "b45db27",
    "unseen_cnn": "5fc13e7",
    "mobilenet_v2": "32e49f8",
    "resnet18": "8e9cad5",
    "bert_mini_l4_h256": "bd14e57",
    "transformer_encoder_l2": "dd6368c",
}
SLOW_SPELL = 0.10  # onnxruntime this much slower in turns than alone: the host slowed meanwhile
RESNET18_GFLOP = 3.64  # `bcd inspect $MODELS/resnet18.onnx`: FLOPs per run
CLOSE_ENOUGH = 1.10  # measured / estimate the goal allows
PESSIMISTIC = 0.9  # measured / estimate below this in every run: the estimate timed something wrong
COLD_CACHES = 1.05  # kernels in the model at most this over their time alone on flushed caches


@dataclass(frozen=True)
class Model:
    stem: str  # the ONNX file's stem, as bcd bench names its outputs
    label: str
    short: str  # in sentences
    kind: str  # "cnn", "transformer" or "mlp"
    source: str  # the model's path in the commands
    result: str  # its matrix JSON under CPU_SET
    maker: str = ""  # the script that writes a generated model


MODELS = (
    Model(
        "squeezenet1_1", "SqueezeNet 1.1", "SqueezeNet", "cnn", "$MODELS/squeezenet1_1.onnx", "squeezenet1_1-32.json"
    ),
    Model("resnet18", "ResNet-18", "ResNet-18", "cnn", "$MODELS/resnet18.onnx", "resnet18-32.json"),
    Model("mobilenet_v2", "MobileNetV2", "MobileNetV2", "cnn", "$MODELS/mobilenet_v2.onnx", "mobilenet_v2-32.json"),
    Model(
        "unseen_cnn",
        "unseen CNN (MobileNetV3-style)",
        "the unseen CNN",
        "cnn",
        "runs/unseen_cnn.onnx",
        "unseen_cnn-32.json",
        "make_unseen_cnn.py",
    ),
    Model(
        "unseen_effnet",
        "unseen EfficientNet-style CNN",
        "the EfficientNet-style CNN",
        "cnn",
        "runs/unseen_effnet.onnx",
        "unseen_effnet-8.json",
        "make_unseen_effnet.py",
    ),
    Model(
        "bert_mini_l4_h256",
        "BERT-mini",
        "BERT-mini",
        "transformer",
        "$MODELS/bert_mini_l4_h256.onnx",
        "bert_mini_l4_h256-32.json",
    ),
    Model(
        "transformer_encoder_l2",
        "transformer encoder, 2 layers",
        "the transformer",
        "transformer",
        "$MODELS/transformer_encoder_l2.onnx",
        "transformer_encoder_l2-32.json",
    ),
    Model(
        "unseen_vit",
        "unseen vision transformer",
        "the unseen vision transformer",
        "transformer",
        "runs/unseen_vit.onnx",
        "unseen_vit-32.json",
        "make_unseen_vit.py",
    ),
    Model("mlp_mnist", "MNIST MLP", "the MLP", "mlp", "resources/models/mlp_mnist.onnx", "mlp_mnist-32.json"),
)


@dataclass
class Result:
    model: Model
    matrix_path: str
    trials_per_task: int
    trials_per_round: int
    seeds: int
    target: str
    threads: int
    data: ModelMatrix
    bcd: Comparison

    @property
    def out(self) -> str:
        return f"runs/bench/{self.model.stem}-{self.trials_per_task}"

    @property
    def command(self) -> str:
        return (
            f"bcd bench {self.model.source} --trials-per-task {self.trials_per_task} --seeds {self.seeds} "
            f"--out {self.out}"
        )

    @property
    def tasks(self) -> int:
        budget = max(run.trials for run in self.runs("bcd"))
        assert budget % self.trials_per_task == 0, (self.model.stem, budget)
        return budget // self.trials_per_task

    @property
    def label(self) -> str:
        return self.model.label + ("" if self.trials_per_task == 32 else f", {self.trials_per_task} trials per task")

    @property
    def short(self) -> str:
        """The model in sentences, with its budget where the page holds it at several."""
        return self.model.short + ("" if self.headline else f" at {self.trials_per_task} trials per task")

    @property
    def headline(self) -> bool:
        """The model's result the README, the gap section and the sentences about a model name."""
        return Path(self.matrix_path).name == self.model.result

    def runs(self, strategy: str) -> list[RunResult]:
        return self.data.runs_of(strategy)

    def measured(self, strategy: str) -> list[float]:
        return sorted(run.measured_latency_ms for run in self.runs(strategy) if run.measured_latency_ms)

    def median_measured(self, strategy: str) -> float:
        return statistics.median(self.measured(strategy))

    def tune_gaps(self, strategy: str) -> list[float]:
        """Measured over estimated latency as each run's tune timed them last, in one minute."""
        return [run.model_timings[-1][2] / run.model_timings[-1][1] for run in self.runs(strategy) if run.model_timings]

    def gaps(self, strategy: str | None = None) -> list[float]:
        """Measured over estimated latency, every run (of `strategy`, when given)."""
        return [
            run.measured_latency_ms / (run.final_estimate_s * 1e3)
            for run in self.data.runs
            if run.measured_latency_ms and run.final_estimate_s and strategy in (None, run.strategy)
        ]


def load_result(model: Model, folder: str = CPU_SET, name: str | None = None) -> Result:
    path = f"{folder}/{name or model.result}"
    matrix = load_matrix(ROOT / path)
    (data,) = matrix.models
    (bcd,) = data.comparisons()
    assert bcd.strategy == "bcd" and not matrix.memory, path
    check_command(matrix.command, {"--trials-per-task": str(matrix.trials_per_task), "--seeds": str(matrix.seeds)})
    return Result(
        model,
        path,
        matrix.trials_per_task,
        matrix.trials_per_round,
        matrix.seeds,
        matrix.target,
        matrix.threads,
        data,
        bcd,
    )


def check_command(command: str, expected: dict[str, str]) -> None:
    """The recorded command ran with exactly the flags the page prints (paths aside)."""
    words = shlex.split(command)
    assert words[:2] == ["bcd", "bench"], command
    flags = dict(zip(words[3::2], words[4::2]))
    flags.pop("--out", None)
    assert flags == expected, (command, expected)


# -- formatting ---------------------------------------------------------------------------
def x(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}x"


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else milli(seconds * 1e3)


def milli(value_ms: float, digits: int = 3) -> str:
    """Milliseconds with `digits` decimals, and one more for each decade a small value lies below
    10 ** (2 - digits) ms (with 3 decimals: 0.0152, not 0.015)."""
    threshold = 10.0 ** (2 - digits)
    while value_ms and abs(value_ms) < threshold and digits < 6:
        digits, threshold = digits + 1, threshold / 10
    return f"{value_ms:.{digits}f}"


def span(values: list[float], digits: int = 2) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def ms_span(values: list[float], digits: int = 3) -> str:
    return f"{milli(min(values), digits)}-{milli(max(values), digits)}"


def percent_below(ratio: float) -> str:
    if round(abs(1 - ratio) * 100) == 0:
        return "level"
    return f"{(1 - ratio) * 100:.0f} % below" if ratio < 1 else f"{(ratio - 1) * 100:.0f} % above"


def pairs(c: Comparison) -> str:
    reached = sorted(s for s in c.pair_speedups if s)
    text = f"{c.reached} of {len(c.pair_speedups)}"
    return f"{text} ({reached[0]:.2f}-{reached[-1]:.2f}x)" if reached else text


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def words(items: list[str]) -> str:
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def seconds(values: list[float]) -> str:
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return f"{low} s" if low == high else f"{low}-{high} s"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


# -- the README's table -------------------------------------------------------------------
def reached_when(speedup: float | None) -> str:
    if speedup is None:
        return "never"
    return "in the same time" if x(speedup) == "1.00x" else f"{x(speedup)} sooner"


def readme_table(results: list[Result]) -> list[str]:
    rows = []
    for r in (r for r in results if r.headline):
        elsewhere = ELSEWHERE.get(str(Path(r.matrix_path).parent), "")
        ours, theirs = r.median_measured("bcd"), r.data.onnxruntime_ms
        tuned, ort = f"{ours:#.3g} ms", f"{theirs:#.3g} ms"
        if ours < theirs:
            tuned = f"**{tuned}**"
        else:
            ort = f"**{ort}**"
        rows.append(
            [
                r.label + elsewhere,
                reached_when(r.bcd.mean_speedup),
                f"{r.bcd.final_mean_s * 1e3:#.3g} / {r.bcd.baseline_final_mean_s * 1e3:#.3g} ms",
                tuned,
                ort,
            ]
        )
    header = [
        "model",
        "BCD reaches stock's final estimate",
        "final estimate, BCD / stock",
        "tuned model (BCD), measured",
        "onnxruntime, measured",
    ]
    return table(header, rows)


# -- sections -----------------------------------------------------------------------------
def head(results: list[Result]) -> list[str]:
    first = results[0]
    return [
        "# Benchmarks",
        "",
        "<!-- Generated by experiments/benchmarks_doc.py from the results under docs/bench/."
        " Edit the script, not this page. -->",
        "",
        "bcd's `bcd` strategy against stock MetaSchedule (the `metaschedule` strategy) on the same model,",
        "target and budget, and the compiled models against onnxruntime on the same machine. Every figure",
        "comes from a committed `bcd bench` result; `python experiments/benchmarks_doc.py` writes this page",
        "from them.",
        "",
        "## On a 2-core CPU",
        "",
        f"Machine: a 2-vCPU AMD EPYC cloud VM (`{first.target}`: Zen 4, AVX-512), each vCPU a whole core.",
        f"Kernels run on {first.threads} threads, as bcd sets them; onnxruntime runs on as many. "
        f"{first.seeds} runs a side",
        f"(seeds 0-{first.seeds - 1}, stock and BCD in turns), {first.trials_per_round} candidates per round, "
        "cold: no tuning memory,",
        "one bench at a time with nothing else running. Code: each table's last column;",
        "`experiments/strategy_parity.py` checks that a later version of the default strategy tunes the same.",
        "",
    ]


def equal_time_cell(c: Comparison) -> str:
    """Both mean curves read at shares of stock's mean tuning time (bench_matrix.equal_time_estimates)."""
    return "; ".join(f"{ms(ours)} ({ms(stock)})" for _, ours, stock in c.equal_time)


def half_time_line(results: list[Result]) -> str:
    """Where BCD's mean estimate stands against stock's at half of stock's time, where both have one."""
    ratios = {}
    for r in results:
        _, ours, stock = next(point for point in r.bcd.equal_time if point[0] == 0.5)
        if ours is not None and stock is not None:
            ratios[r.short] = ours / stock
    missing = [r.short for r in results if r.short not in ratios]
    spread = ", ".join(f"{name} {percent_below(ratio)}" for name, ratio in ratios.items())
    return f"- At half of stock's time BCD's mean estimate against stock's: {spread}" + (
        f" ({words(missing)}: not every run had a full estimate yet)." if missing else "."
    )


def speed_table(results: list[Result]) -> list[str]:
    rows = []
    for r in results:
        c = r.bcd
        rows.append(
            [
                r.model.label,
                str(r.tasks),
                str(r.trials_per_task),
                f"**{x(c.mean_speedup)}**",
                x(c.mean_trial_speedup),
                pairs(c),
                f"{ms(c.final_mean_s)} ({ms(c.baseline_final_mean_s)})",
                f"{c.final_ratio:.2f}",
                f"{c.first_estimate_mean_s:.0f} ({c.baseline_first_estimate_mean_s:.0f})",
                equal_time_cell(c),
                f"{c.trial_cost_ratio:.2f}",
                code_of(r),
            ]
        )
    header = [
        "model",
        "tasks",
        "trials per task",
        "BCD reaches stock's final (time)",
        "(trials)",
        "cross pairs that reached",
        "final estimate ms, BCD (stock)",
        "BCD / stock",
        "first full estimate s, BCD (stock)",
        "estimate ms at ¼, ½ and all of stock's time, BCD (stock)",
        "time per trial, BCD / stock",
        "code",
    ]
    return table(header, rows)


def speed_section(results: list[Result]) -> list[str]:
    speedups = [r.bcd.mean_speedup for r in results if r.bcd.mean_speedup]
    never = [r.short for r in results if not r.bcd.mean_speedup]
    every_pair = [r.short for r in results if r.bcd.reached == len(r.bcd.pair_speedups)]
    lower = [r for r in results if r.model.kind == "cnn" and r.bcd.final_ratio]
    others = [r for r in results if r.model.kind != "cnn" and r.bcd.final_ratio]
    assert all(run.layout == "nchw" for r in others for run in r.runs("bcd")), "a transformer tuned blocked"
    cnns = [r for r in results if r.model.kind == "cnn"]
    blocked = sum(1 for r in cnns if all(run.layout == "blocked" for run in r.runs("bcd")))
    lines = ["### BCD against stock MetaSchedule", "", *speed_table(results), ""]
    lines += [
        f"- **BCD's mean curve reaches stock's final mean estimate sooner on {len(speedups)} of {len(results)}"
        f" models, {min(speedups):.2f}-{max(speedups):.2f}x**" + (f"; never on {words(never)}." if never else "."),
        f"  All 9 cross pairs reached it on {words(every_pair)}.",
        "- Where BCD ends on the CNNs: "
        + ", ".join(f"{r.short} {percent_below(r.bcd.final_ratio)}" for r in lower)
        + f" stock's final. BCD's convolutions are blocked where its probe measured that faster ({blocked} of"
        f" {len(cnns)}",
        "  CNNs), stock's are NCHW, as stock MetaSchedule tunes them: much of that lead is the layout,",
        "  which stock's design space does not hold, not the search.",
        "- Transformers and the MLP (their tasks NCHW on both sides, so both tune the same tasks): "
        + "; ".join(
            f"{r.short}, {r.bcd.reached} of 9 pairs reached, final {ms(r.bcd.final_mean_s)} against"
            f" {ms(r.bcd.baseline_final_mean_s)} ms ({percent_below(r.bcd.final_ratio)})"
            for r in others
        )
        + ". These tasks have few structural relatives, so diffusion has less to carry; a lead there",
        "  comes from cheaper first rounds and learning from every batch.",
        half_time_line(results),
        unseen_line([r for r in results if r.model.maker and r.headline]),
        "",
    ]
    for r in results:
        plot = Path(r.matrix_path.removesuffix(".json") + "-curves.png")
        lines.append(f"![{r.model.label}]({plot.relative_to('docs')})")
    return lines + [""]


def unseen_line(generated: list[Result]) -> str:
    scripts = ", ".join(f"`python experiments/{r.model.maker}`" for r in generated)
    if len(generated) == 1:
        return f"- {capital(generated[0].short)} ({scripts}) is a model none of bcd was developed on."
    return f"- The unseen models ({scripts}) are models none of bcd was developed on."


def code_of(r: Result) -> str:
    """The commit a result's tuning code is (`STEM-TPT` before `STEM` before every model's)."""
    folder = str(Path(r.matrix_path).parent)
    codes = {SECOND_CPU_SET: SECOND_CPU_CODE, AVX2_CPU_SET: AVX2_CPU_CODE}.get(folder, CURRENT_CODE)
    for key in (f"{r.model.stem}-{r.trials_per_task}", r.model.stem):
        if key in codes:
            return codes[key]
    return codes["*"]


def reproduce_section(results: list[Result]) -> list[str]:
    hours = sum(run.elapsed_s for r in results for run in r.data.runs) / 3600
    return [
        "## Reproduce",
        "",
        "`MODELS` below is a folder holding the benchmark ONNX files: standard architectures (SqueezeNet 1.1,",
        "ResNet-18, MobileNetV2, BERT-mini with 4 layers of width 256, a 2-layer transformer encoder of width",
        "256) exported at batch 1 with random weights; tuning does not depend on weight values. The MLP is the",
        "bundled sample, and the unseen models are written by scripts. On an otherwise idle machine (these are",
        "wall-clock benchmarks), from the repository root:",
        "",
        "```sh",
        *[f"python experiments/{r.model.maker} {r.model.source}" for r in results if r.model.maker and r.headline],
        *[r.command for r in results],
        "```",
        "",
        f"The {len(results)} benches took {hours:.1f} hours of tuning on the 2-core VM. Each writes `matrix.json`, one",
        "plot and every run's store and compiled module under its `--out` folder;",
        "`python experiments/matrix_table.py runs/bench/squeezenet1_1-32/matrix.json --reach` prints a",
        "bench's table and when its mean curves reach stock's figures. To update this page, copy a",
        f"bench's `matrix.json` over its file in `{CPU_SET}/` (and its plot beside it), then run",
        "`python experiments/benchmarks_doc.py`.",
        "",
    ]


def columns_section() -> list[str]:
    return [
        "## What the columns mean",
        "",
        "- **Estimate**: the sum over tasks of weight x best measured latency, each task's programs timed",
        "  alone by MetaSchedule's runner. It exists once every task has a measurement: the **first full",
        "  estimate**. **Measured**: the compiled model run end to end.",
        "- **BCD reaches stock's final**: the mean over runs of each side's best estimate at every moment",
        "  (the thick curves of the plots); t_stock is when stock's mean curve first reaches its final value,",
        "  t_bcd when BCD's does; the figure is t_stock / t_bcd, in wall time (import and extraction",
        "  included), and in measured trials beside it.",
        "- **Cross pairs**: the same for each stock run against each BCD run (9 pairs): how many reached,",
        "  and the range of those that did.",
        "- **Estimate at ¼, ½ and all of stock's time**: both mean curves read at those shares of stock's",
        "  mean tuning time: how good each side's model is after that long (n/a: not every run had its",
        "  first full estimate yet). At all of it, stock's figure is above its final where some stock runs",
        "  took longer than the mean.",
        "- **Time per trial**: wall time per measured trial, BCD's over stock's.",
        "",
    ]


def quiet_gaps(folder: str = CPU_SET) -> list[tuple[str, dict[str, float]]]:
    """(model stem, e2e_gap.py's figures) per model: of its runs, the quietest (fastest end to end)."""
    found = []
    for model in MODELS:
        runs = gap_runs(model.stem, folder)
        if runs:
            found.append((model.stem, min(runs, key=lambda g: g["end_to_end_us"])))
    return found


def gap_runs(stem: str, folder: str = CPU_SET) -> list[dict[str, float]]:
    """e2e_gap.py's figures for one model, every run kept under `folder`/gap/."""
    return [parse_gap(p.read_text()) for p in sorted(Path(ROOT, folder, "gap").glob(f"gap-{stem}-*.txt"))]


def gap_row(label: str, gap: dict[str, float]) -> list[str]:
    tiny = gap["estimate_us"] < 100  # too short to time a program alone against
    return [
        label,
        milli(gap["estimate_us"] / 1e3),
        milli(gap["end_to_end_us"] / 1e3),
        f"{gap['measured']:.2f}",
        f"{gap['kernels']:.2f}",
        *(["(too small)"] * 2 if tiny else [f"{gap['warm']:.2f}", f"{gap['cold']:.2f}"]),
        f"{outside_us(gap):.0f} us",
        left_over(gap),
    ]


GAP_HEADER = [
    "model (BCD seed 0)",
    "estimate ms",
    "end to end ms",
    "measured / estimate",
    "kernels in the model / estimate",
    "kernels in the model / alone, warm",
    "/ alone, caches flushed",
    "outside the kernels",
    "what is left beyond 10 %",
]


def parse_gap(text: str) -> dict[str, float]:
    def number(pattern: str) -> float:
        found = re.search(pattern, text)
        assert found, pattern
        return float(found.group(1))

    inside = warm = cold = 0.0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 7 and all(re.fullmatch(r"-?[\d.]+", f) for f in fields[1:]):
            inside, warm, cold = inside + float(fields[3]), warm + float(fields[5]), cold + float(fields[6])
    return {
        "measured": number(r"measured / estimate ([\d.]+)"),
        "kernels": number(r"\(([\d.]+) x estimate\)"),
        "estimate_us": number(r"estimate \(sum of weight x applied\)\s+([\d.]+) us"),
        "end_to_end_us": number(r"measured end to end \(no instrument\)\s+([\d.]+) us"),
        "kernels_us": number(r"tasks' kernels inside the model\s+([\d.]+) us"),
        "alone_warm_us": warm,
        "warm": inside / warm,
        "cold": inside / cold,
    }


def paired_ratio(text: str) -> dict[str, float]:
    """paired_retime.py's summary: the median new / old ratio over passes, its interval, the passes."""
    found = re.search(r"median ([\d.]+) \(95 % interval ([\d.]+)-([\d.]+)\)", text)
    passes = re.search(r"(\d+) passes of", text)
    assert found and passes
    low, high = float(found.group(2)), float(found.group(3))
    return {"median": float(found.group(1)), "low": low, "high": high, "passes": int(passes.group(1))}


def agreement_spans() -> tuple[list[float], list[float]]:
    """Every timing of the module and of onnxruntime in the timing-agreement outputs."""
    module, ort = [], []
    for path in sorted(Path(ROOT, METHOD_SET).glob("timing_agreement-*.txt")):
        for line in path.read_text().splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 7 and cells[0].isdigit():
                values = [float(c.split()[0]) for c in cells[1:]]
                module += [values[0], values[2]]
                ort += [values[1], *values[3:]]
    return module, ort


def limits_section(results: list[Result]) -> list[str]:
    elsewhere = current_results(SECOND_CPU_SET)
    others = "Other CPUs: below." if current_results(AVX2_CPU_SET) else "A second CPU: below."
    smallest = min(results + elsewhere, key=lambda r: (r.trials_per_task, -r.tasks))
    where = " (second CPU)" if Path(smallest.matrix_path).parent == Path(SECOND_CPU_SET) else ""
    smallest_stock_s = [run.elapsed_s for run in smallest.runs(BASELINE)]
    flushed = paired_ratio(Path(ROOT, METHOD_SET, "paired-mobilenet_v2-flushed.txt").read_text())
    all_gaps = [g for r in results for g in r.gaps()]
    spreads = [
        (
            r.short,
            max(run.final_estimate_s for run in r.runs("bcd")) / min(run.final_estimate_s for run in r.runs("bcd")),
        )
        for r in results
        if r.model.kind == "cnn"
    ]
    widest = max(spreads, key=lambda s: s[1])
    probe_spread = max(results, key=lambda r: max(r.data.probes_ms) / min(r.data.probes_ms))
    module, ort = agreement_spans()
    return [
        "## What limits these figures",
        "",
        "- **A small machine and three seeds.** Two cores make every trial dear, and at 16-32 trials per task",
        "  the heavy tasks' searches depend on their first samples: BCD's final estimates spread up to",
        f"  {(widest[1] - 1) * 100:.0f} % between seeds ({widest[0]}). Three runs a side separate the mean curves,",
        "  not final means a few per cent apart.",
        "- **Slow-host episodes.** On this VM any figure taken on two threads, ours or onnxruntime's, can",
        "  read up to about 1.5x slower for seconds to a minute at a time. Most likely the host moves the two",
        "  vCPUs apart or runs both on one physical core; the guest cannot see it (steal time stays 0).",
        "  `python experiments/core_distance.py MODEL.onnx MODULE.so` times onnxruntime and a module beside a",
        "  cache line's round trip between the two CPUs, which shows such episodes. Figures taken at the",
        "  same moment agree; figures a minute apart may not. That is why `bcd bench` times all modules and",
        "  onnxruntime in turns and records its probes (it warns when they spread more than 15 %;",
        f"  {probe_spread.short}'s spread {span(probe_spread.data.probes_ms)} ms). Three runs of",
        "  `python experiments/timing_agreement.py runs/bench/squeezenet1_1-32/squeezenet1_1/squeezenet1_1-bcd-seed1.so"
        " $MODELS/squeezenet1_1.onnx --repeat 3`",
        "  (`bcd check`, the bench's measurement, the dashboard's onnxruntime reference and the bench's",
        f"  probe, three times each; {METHOD_CODE}) read the module at {span(module, 3)} ms and onnxruntime at",
        f"  {span(ort, 3)} ms (`{METHOD_SET}/timing_agreement-*.txt`).",
        f"- **The estimate is optimistic.** The compiled models measured {span(all_gaps)}x their estimates in",
        "  these benches' final timings (slow episodes included); where the time goes is above.",
        "  Timing candidates with flushed caches instead made the estimates honest but tuned no faster models:",
        f"  three BCD tunes of MobileNetV2 timed so ran {flushed['median']:.3f}x the time of the bench's"
        f" warm-tuned modules ({flushed['passes']}",
        f"  passes in turns, 95 % interval {flushed['low']:.3f}-{flushed['high']:.3f};"
        f" `{METHOD_SET}/paired-mobilenet_v2-flushed.txt`, {METHOD_CODE}).",
        "  So the runner times warm, as stock does; both strategies' estimates follow the same rule.",
        "- **Small budgets.** The first full estimate needs every task measured once, and stock measures its",
        f"  whole first round robin before it learns from any of it. At {smallest.trials_per_task} trials per task"
        " that is much of",
        f"  stock's tune: on {smallest.short}{where} its first full estimate came after"
        f" {smallest.bcd.baseline_first_estimate_mean_s:.0f} s of {seconds(smallest_stock_s)}."
        " BCD took",
        f"  {smallest.bcd.trial_cost_ratio:.2f}x stock's time per trial there, and not in its own rounds: in one"
        " cProfiled tune a side, both",
        "  blocked, 8 trials per task, no probe (`experiments/round_profile.py`), BCD took 0.47 s a trial and stock",
        "  0.61 (stock's first round robin evolves under random scores, which skip the cost model's features).",
        "  What costs is the layout: blocked candidates are dearer (the bench's stock, NCHW: 0.52-0.54 s a",
        "  trial), and the losing probe stays on BCD's clock (a first round a task: 156-182 trials, about",
        "  100 s). BCD's later rounds measure the whole round (16), not trials per task (8): cut to 8, they",
        "  made its time per trial 1.81x stock's for the same final estimate. A losing probe ends early once",
        "  its heaviest tasks show it cannot win (design.md). Models of few structural relatives",
        "  (BERT-mini's 14 tasks, the MLP's 4) gain less from diffusion.",
        "- **Not covered here.** These are cold tunes: the tuning memory's gain (`bcd bench --memory STORE`",
        "  lets BCD draw on earlier tunes while stock stays cold) is not part of this set, and neither are",
        "  larger budgets." + (f" {others}" if elsewhere else ""),
        "",
    ]


def second_cpu_section() -> list[str]:
    """The same benches on a CPU bcd was never developed on: whether its results travel."""
    results = current_results(SECOND_CPU_SET)
    if not results:
        return []
    first = results[0]
    reached = [f"{r.short} {x(r.bcd.mean_speedup)}" for r in results]
    against = [f"{r.short} {r.median_measured('bcd') / r.data.onnxruntime_ms:.2f}x" for r in results]
    lines = [
        "## On a second CPU",
        "",
        f"Machine: a 2-vCPU Intel Xeon KVM guest (`{first.target}`: LLVM takes it for Rocket Lake; its flags",
        "show AVX-512 and AMX, 2 MiB of L2 a core), each vCPU a whole core. No setting of bcd was tuned",
        "to it, though some later changes were first measured here (the layout probe's, the VM build).",
        f"The settings above ({first.seeds} runs a side, {first.trials_per_round} candidates"
        " per round, cold, in turns):",
        "",
        "```sh",
        *[f"python experiments/{r.model.maker} {r.model.source}" for r in results if r.model.maker and r.headline],
        *[r.command for r in results],
        "```",
        "",
        *against_onnxruntime_table(results),
        "",
        *speed_table(results),
        "",
        f"- Stock's time to its final mean estimate over BCD's: {words(reached)}.",
        f"- BCD's compiled model in the time of onnxruntime's, both timed in turns: {words(against)}.",
        *slower_than_onnxruntime(results),
        "",
        *second_cpu_gaps(results),
    ]
    for r in results:
        plot = Path(r.matrix_path.removesuffix(".json") + "-curves.png")
        lines.append(f"![{r.label} on the second CPU]({plot.relative_to('docs')})")
    return lines + [""]


def avx2_cpu_section() -> list[str]:
    """The same benches on a CPU with AVX2 only: its blocks are 8 channels, not 16, and its
    register tiles have 16 vector registers, not 32."""
    results = current_results(AVX2_CPU_SET)
    if not results:
        return []
    first = results[0]
    against = [f"{r.short} {r.median_measured('bcd') / r.data.onnxruntime_ms:.2f}x" for r in results]
    lines = [
        "## On an AVX2 CPU",
        "",
        f"Machine: a 2-vCPU AMD EPYC cloud VM (`{first.target}`: LLVM takes it for Zen 3; AVX2, no AVX-512, so",
        "the blocked layout's blocks are 8 channels), each vCPU a whole core. The settings above"
        f" ({first.seeds} runs a side, {first.trials_per_round} candidates per round, cold, in turns): "
        + "; ".join(f"`{r.command}`" for r in results)
        + ".",
        "",
        *against_onnxruntime_table(results),
        "",
        *speed_table(results),
        "",
        f"- BCD's compiled model in the time of onnxruntime's, both timed in turns: {words(against)}"
        + (" (slower: a miss)." if slower_results(results) else "."),
        "",
    ]
    for r in results:
        plot = Path(r.matrix_path.removesuffix(".json") + "-curves.png")
        lines.append(f"![{r.label} on the AVX2 CPU]({plot.relative_to('docs')})")
    return lines + [""]


def slower_results(results: list[Result]) -> list[Result]:
    """The models whose BCD model measured slower than onnxruntime: misses of the goal."""
    return [r for r in results if r.median_measured("bcd") > r.data.onnxruntime_ms]


def slower_than_onnxruntime(results: list[Result]) -> list[str]:
    """The misses of the goal of matching onnxruntime, said as misses."""
    slower = slower_results(results)
    if not slower:
        return []
    named = words([f"{r.short} ({r.median_measured('bcd') / r.data.onnxruntime_ms:.2f}x)" for r in slower])
    return [
        f"- Slower than onnxruntime here, a miss: {named}; the first CPU's figure is in the table above,"
        " and where the time goes is below."
    ]


def second_cpu_gaps(results: list[Result]) -> list[str]:
    """Where the second CPU's models spend the time their estimates leave out (e2e_gap.py on
    BCD's seed 0, the quietest of its runs)."""
    quiet = dict(quiet_gaps(SECOND_CPU_SET))
    shown = [r for r in results if r.headline and r.model.stem in quiet]
    if not shown:
        return []
    lines = [
        "Where the time goes (as above, `e2e_gap.py ... --alone` on BCD's seed 0; ResNet-18's from its"
        " bench at 6ff40d1, before the probes were shortened, which changes no kernel's code; outputs under"
        f" `{SECOND_CPU_SET}/gap/`):",
        "",
        *table(GAP_HEADER, [gap_row(r.model.label, quiet[r.model.stem]) for r in shown]),
        "",
    ]
    return lines + [
        "- On this CPU the estimate (each kernel timed alone and warm, as stock times it) reads further below",
        "  the compiled model than on the first; the dashboard, the progress line and the report show both.",
        "",
    ]


def gpu_section() -> list[str]:
    data = json.loads(Path(ROOT, GPU_SET, GPU_RESULT).read_text())
    stock, bcd = data["results"][BASELINE], data["results"]["bcd"]
    tpt, per_round = data["trials_per_task"], data["trials_per_round"]
    command = (
        f"bcd bench $MODELS/transformer_encoder_l2.onnx --target nvidia/nvidia-h100 --trials-per-task {tpt} "
        f"--trials-per-round {per_round} --out runs/bench/cuda-transformer_encoder_l2-{tpt}"
    )

    def row(name: str, run: dict) -> list[str]:
        first_s, first = run["timeline"][0]
        return [
            name,
            str(run["trials"]),
            f"{first_s:.0f} s, {ms(first)} ms",
            f"{ms(run['final_estimate_s'])} ms",
            f"{run['measured_latency_ms']:.3f} ms",
            f"{run['elapsed_s'] / 60:.1f} min",
        ]

    ratio = bcd["final_estimate_s"] / stock["final_estimate_s"]
    lines = [
        "## On an NVIDIA GPU",
        "",
        f"One pair on an H200 (`{data['target']}`, the `nvidia/nvidia-h100` tag), {tpt} trials per task: a check",
        f"that the CUDA path works, not a speed result. Code: {GPU_CODE}, the same design with one difference:",
        "the gradient task scheduler then counted a task's rounds, where it now counts its trials.",
        "",
        "```sh",
        command,
        "```",
        "",
        *table(
            ["strategy", "trials", "first full estimate", "final estimate", "measured (GPU)", "time"],
            [row("stock MetaSchedule", stock), row("BCD", bcd)],
        ),
        "",
        f"- BCD's first full estimate came sooner and lower, but it ended {percent_below(ratio)} stock's final and",
        f"  never reached it. At {tpt} trials per task each task gets one round, so one lucky program decides",
        "  it (here one matmul of the feed-forward layer). Tunes, exports and the compiled models ran on the",
        "  GPU. Which strategy is faster on a GPU needs budgets this check did not have.",
        "",
        f"![{MODELS[5].label} on an H200, {tpt} trials per task]"
        f"(bench/{Path(GPU_SET).name}/{GPU_RESULT.replace('.json', '.png')})",
        "",
        *gpu_milestones_check(),
    ]
    return lines


def gpu_milestones_check() -> list[str]:
    """The latest code's check on the same GPU: tests, and the milestones (re-timing and the
    compiled model's timing) that the pair above predates."""
    data = json.loads(Path(ROOT, GPU_SET, GPU_MILESTONES).read_text())
    stock, bcd = data["sides"][BASELINE], data["sides"]["bcd"]
    costs = [m["cost_s"] for side in (stock, bcd) for m in side["milestones"]]
    ratios = [m["measured_latency_s"] / m["estimated_latency_s"] for m in stock["milestones"] + bcd["milestones"]]
    first_stock, first_bcd = stock["milestones"][0], bcd["milestones"][0]
    stock_share = sum(m["cost_s"] for m in stock["milestones"]) / stock["elapsed_s"]
    return [
        f"**The current code on an H200** (commit {data['code']}, within {data['deadline_s']} s): `{data['command']}`",
        "",
        f"- The CUDA tests pass ({data['tests']['passed']}, the diffused programs computed on the GPU included).",
        "- The compiled model is timed on the GPU at milestones: measured / estimate "
        f"{min(ratios):.2f}-{max(ratios):.2f}.",
        f"  Stock's tune: {stock['trials_done']} trials in {stock['elapsed_s']:.0f} s of tuning, "
        f"{ms(stock['milestones'][-1]['estimated_latency_s'])} ms estimated, "
        f"{ms(stock['milestones'][-1]['measured_latency_s'])} ms measured.",
        f"- Each milestone cost {min(costs):.0f}-{max(costs):.0f} s, most of it re-timing the leading programs",
        "  (about 2 s a program on this GPU, 0.5-0.7 s on a 2-core CPU). Stock's two took "
        f"{stock_share:.0%} of its tuning time",
        "  at this budget, so the check ran out of time during BCD's last milestone. By then BCD had its",
        f"  {bcd['trials_done']} trials in {bcd['elapsed_s']:.0f} s, its first full estimate at "
        f"{first_bcd['elapsed_s']:.0f} s against stock's {first_stock['elapsed_s']:.0f} s,",
        f"  and a search estimate of {ms(bcd['search_estimate_s_at_end'])} ms against stock's "
        f"{ms(stock['search_estimate_s_at_end'])} ms.",
    ]


def outside_us(gap: dict[str, float]) -> float:
    """End to end minus the kernels as the instrumented run timed them: the VM's own calls and
    dispatch (none where the instrumented kernels took longer than the plain run)."""
    return max(0.0, gap["end_to_end_us"] - gap["kernels_us"])


def left_over(gap: dict[str, float]) -> str:
    """Why a model's measured time stays above its estimate, from its quietest run."""
    if gap["measured"] <= CLOSE_ENOUGH:
        return "within 10 %"
    if outside_us(gap) >= 0.2 * gap["end_to_end_us"]:
        return "the VM's calls between kernels"
    if gap["cold"] <= COLD_CACHES:
        return "cold caches: the kernels run as alone with flushed arguments"
    return "not explained by these columns"


def time_goes_section(results: list[Result]) -> list[str]:
    quiet = dict(quiet_gaps())
    if not quiet:
        return []
    results = [r for r in results if r.headline]
    labels = {r.model.stem: r.short for r in results}
    why: dict[str, list[str]] = {}
    for stem, gap in quiet.items():
        why.setdefault(left_over(gap), []).append(labels.get(stem, stem))
    runs = {stem: gap_runs(stem) for stem in quiet}
    slow = [max(g["end_to_end_us"] for g in found) / quiet[stem]["end_to_end_us"] for stem, found in runs.items()]
    alone = [max(g["alone_warm_us"] for g in found) / min(g["alone_warm_us"] for g in found) for found in runs.values()]
    resnet = quiet.get("resnet18")
    lines = [
        "## Where a model's time goes",
        "",
        "Each model's BCD tune of seed 0 above, compiled with the VM's function as bytecode (whose calls the",
        "VM's instrument can time; export compiles it on CPUs since 6ff40d1, 0-4 % faster on the second CPU) and taken",
        f"apart call by call, {min(len(r) for r in runs.values())}-{max(len(r) for r in runs.values())} runs a"
        " model a few minutes apart, the quietest (fastest end to end) kept; its outputs are under",
        f"`{CPU_SET}/gap/`:",
        "",
        "```sh",
        "python experiments/e2e_gap.py runs/bench/MODEL-32/MODEL/bcd-seed0.db $MODELS/MODEL.onnx --alone",
        "```",
        "",
        *table(GAP_HEADER, [gap_row(r.model.label, quiet[r.model.stem]) for r in results if r.model.stem in quiet]),
        "",
    ]
    lines += [f"- {reason[0].upper()}{reason[1:]}: {words(models)}." for reason, models in why.items()]
    lines += [
        "  The estimate sums each task's programs timed alone with warm caches, as stock MetaSchedule's",
        "  runner times them; inside the model a kernel reads weights and activations its neighbours",
        "  evicted, and onnxruntime's kernels meet the same. Timing candidates with flushed caches made the",
        '  estimate honest but tuned no faster models (below, "What limits these figures").',
    ]
    if resnet:
        gflops = RESNET18_GFLOP / (resnet["end_to_end_us"] * 1e-6)
        lines += [
            f"- ResNet-18 ({RESNET18_GFLOP} GFLOP a run, `bcd inspect`) runs end to end at {gflops:.0f} GFLOP/s.",
            "  A Zen 4 core does 32 float32 FLOP a cycle (two 256-bit FMA pipes), so two at 3.5-3.7 GHz peak at",
            "  224-237 GFLOP/s: its convolutions run at the machine's peak, as onnxruntime's direct NCHWc ones",
            "  do, and neither pulls ahead by more than the noise. Only fewer FLOPs would: Winograd for the",
            "  3x3 convolutions, which bcd now measures as a third layout (docs/design.md), after these runs.",
        ]
    lines += [
        f"- The slowest run of each model read {span(slow)}x the quietest end to end, while the same",
        f"  processes timed each program alone within {span(alone)}x: in the host's slow episodes (below) the",
        "  kernels slow down inside the model, not alone, so such episodes fall on whole-model timings,",
        "  ours and onnxruntime's, and the bench times those in turns.",
        "",
    ]
    return lines


def current_results(folder: str = CPU_SET) -> list[Result]:
    """Every model's headline result in `folder`, then its results at other budgets
    (`STEM-TPT.json`), most trials first."""
    found = []
    for model in MODELS:
        names = [model.result] if (ROOT / folder / model.result).is_file() else []
        others = [p.name for p in (ROOT / folder).glob(f"{model.stem}-*.json") if p.name != model.result]
        names += sorted(others, key=lambda name: -int(name.removesuffix(".json").rsplit("-", 1)[1]))
        found += [load_result(model, folder, name) for name in names]
    return found


def current_row(r: Result) -> list[str]:
    bcd, stock = r.measured("bcd"), r.measured(BASELINE)
    estimates = [run.final_estimate_s * 1e3 for run in r.runs("bcd") if run.final_estimate_s]
    layouts = sorted({run.layout for run in r.runs("bcd")})
    return [
        r.label,
        str(r.tasks),
        "/".join(layouts),
        f"{milli(r.data.onnxruntime_ms)} ({ms_span(r.data.probes_ms, 2)})",
        f"{milli(statistics.median(stock))} ({ms_span(stock)})",
        f"{milli(statistics.mean(estimates))}",
        f"{milli(statistics.median(bcd))} ({ms_span(bcd)})",
        f"**{statistics.median(bcd) / r.data.onnxruntime_ms:.2f}**",
        span(r.gaps("bcd")),
        span(r.tune_gaps("bcd")) if r.tune_gaps("bcd") else "not kept",
        code_of(r),
    ]


def machine_drift(results: list[Result]) -> list[str]:
    """A slow spell of the host while the compiled models were timed: onnxruntime, the same
    program every time, read slower in turns than alone before the tunes. It falls on both sides
    of BCD / onnxruntime, but only on the measured side of measured / estimate."""
    ratios = [(r.short, r.data.onnxruntime_ms / min(r.data.probes_ms)) for r in results if r.data.probes_ms]
    slow = words([f"{name} {ratio:.2f}x" for name, ratio in ratios if ratio > 1 + SLOW_SPELL])
    if not slow:
        return []
    return [
        f"- The host ran slower while the compiled models were timed than during the tunes: onnxruntime read {slow}",
        "  its fastest time alone before the tunes. BCD / onnxruntime holds (both timed in turns), measured /",
        "  estimate in turns does not (the estimates were timed during the tunes), so it reads high by about as",
        "  much; the column beside it, the tune's own last timing of its model, is free of that.",
    ]


def below_estimate(results: list[Result]) -> list[str]:
    """Models whose compiled model ran well below the estimate: the runner timed some of their
    kernels on inputs that made them slower than on a model's activations."""
    found = [r for r in results if max(r.gaps("bcd")) < PESSIMISTIC]
    if not found:
        return []
    named = [f"{r.short} ({span(r.gaps('bcd'))}x)" for r in found]
    return [
        f"- Measured below the estimate: {words(named)}. Its swish and sigmoid",
        "  kernels were timed on TVM's fill (uniform in [1, 10]), on which their exp underflows to subnormal",
        "  numbers, at about twice their time inside the model (`python experiments/e2e_gap.py STORE MODEL",
        "  --alone`). The runner now fills with values like a model's (bcd_core/tuning/measure/arguments.py);",
        "  this bench ran before that, so its estimates and its tunes' choices among those kernels were skewed.",
        "  Its sigmoids also ran as one libm call per element then; fast math now computes them with a",
        "  vectorized tanh (bcd_core/fast_math.py). Both change this row; it is to be benched again.",
    ]


def disturbed_timings(results: list[Result]) -> list[str]:
    """Runs whose tune's last timing of its model and the timing in turns of the same model
    disagree by more than half: one of the two caught the host in a slow spell."""
    found = []
    for r in results:
        for run in r.runs("bcd"):
            if not run.model_timings or not run.measured_latency_ms:
                continue
            _, estimate, tuned = run.model_timings[-1]
            in_turns = run.measured_latency_ms / 1e3
            if max(tuned, in_turns) > 1.5 * min(tuned, in_turns):
                found.append(
                    f"{r.short}'s seed {run.seed} ({tuned / estimate:.2f}x in the tune, "
                    f"{in_turns / estimate:.2f}x in turns)"
                )
    if not found:
        return []
    return [
        f"- Timings of one model that disagree, so the host slowed during one of them: {words(found)}.",
    ]


def uncompiled_runs(results: list[Result]) -> list[str]:
    """Runs whose tune ended without a compiled model: left out of the measured columns."""
    missing = [
        f"{r.short}'s {run.strategy} seed {run.seed}"
        for r in results
        for run in r.data.runs
        if not run.measured_latency_ms
    ]
    if not missing:
        return []
    return [
        f"- No compiled model, so not in the measured columns: {words(missing)} (its bench log says why).",
    ]


def against_onnxruntime_table(results: list[Result]) -> list[str]:
    header = [
        "model",
        "tasks (BCD)",
        "BCD's layout",
        "onnxruntime ms, in turns (alone before each tune)",
        "stock MetaSchedule ms, measured, median (range)",
        "BCD estimate ms, mean",
        "BCD ms, measured, median (range)",
        "BCD / onnxruntime",
        "BCD measured / estimate, in turns",
        "the same, as the tune timed it last",
        "code",
    ]
    return table(header, [current_row(r) for r in results])


def current_section(results: list[Result]) -> list[str]:
    if not results:
        return []
    first = results[0]
    behind = [r for r in results if r.median_measured("bcd") > r.data.onnxruntime_ms]
    return [
        "### Against onnxruntime",
        "",
        f"{first.seeds} runs a side at 32 trials per task unless the model's name says otherwise; the commands are"
        " under Reproduce. BCD runs",
        "as a user gets it: `--layout auto` times both layouts' short probe tunes and keeps the faster",
        '(design.md, "Convolution layouts"; the probes count in its time, and the winning probe is the',
        "tune's first round robin); the stock side tunes the model's NCHW convolutions, as stock",
        "MetaSchedule does. All compiled models and onnxruntime are timed in turns after the tunes (50 runs",
        "each, the median); BCD's estimate is each session's final, re-timed one. The tune's own last timing",
        "of its model is taken in the same minute as that estimate (design.md, milestones).",
        "",
        *against_onnxruntime_table(results),
        "",
        f"- Still slower than onnxruntime: {words([r.short for r in behind]) or 'none of these'}.",
        *machine_drift(results),
        *disturbed_timings(results),
        *below_estimate(results),
        *uncompiled_runs(results),
        "",
    ]


def document() -> tuple[str, list[str]]:
    results = current_results()
    lines = [
        *head(results),
        *current_section(results),
        *speed_section(results),
        *time_goes_section(results),
        *reproduce_section(results),
        *columns_section(),
        *limits_section(results),
        *second_cpu_section(),
        *avx2_cpu_section(),
        *gpu_section(),
    ]
    elsewhere = current_results(SECOND_CPU_SET) + current_results(AVX2_CPU_SET)
    return "\n".join(lines).rstrip("\n") + "\n", readme_table(results + elsewhere)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if stale")
    parser.add_argument("--readme", action="store_true", help="print the README's results table")
    args = parser.parse_args()
    text, readme = document()
    if args.readme:
        print("\n".join(readme))
        return 0
    if not args.check:
        DOC.write_text(text)
        return 0
    stale = []
    if DOC.read_text() != text:
        stale.append(f"{DOC.relative_to(ROOT)} differs from what this script writes")
    if "\n".join(readme) not in README.read_text():
        stale.append("README.md's results table differs from `--readme`")
    for problem in stale:
        print(problem, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
