"""Would Winograd 3x3 convolutions bring a tuned ResNet past onnxruntime on this CPU?

For each 3x3 stride-1 convolution shape of ResNet-18 (with its ReLU), a one-convolution model
three ways: onnxruntime's (MLAS, direct NCHWc), bcd's tune in the blocked layout (direct
convolutions) and in the winograd layout (the same, with Winograd F(4x4, 3x3): winograd.py), at
the same trials per task. All are checked against onnxruntime and timed in turns
(bcd_core/timing.py); one JSON line a shape. Run it on an idle machine.

    python experiments/winograd_probe.py OUT_DIR [--trials 64] [--shapes 64x56,256x14]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))

from onnx_builder import GraphBuilder  # noqa: E402

from bcd_core.bench import ONNXRUNTIME, measure_in_turns  # noqa: E402
from bcd_core.export import compile_tuned, export_library, library_runner, onnxruntime_runner  # noqa: E402
from bcd_core.target import host_target  # noqa: E402
from bcd_core.tuning.settings import TuneSettings  # noqa: E402
from bcd_core.tuning.tune import run_session  # noqa: E402

RESNET18_3X3 = ("64x56", "128x28", "256x14", "512x7")
LAYOUTS = {"direct": "blocked", "winograd": "winograd"}  # what the JSON calls each: bcd's layout


def conv_model(path: Path, channels: int, size: int) -> Path:
    graph = GraphBuilder(seed=channels)
    weight = (graph.rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(channels * 9)).astype(np.float32)
    conv = graph.op("Conv", ["input", graph.constant(weight)], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    shape = [1, channels, size, size]
    return graph.save(path, "conv", graph.op("Relu", [conv]), shape, shape)


def tuned_library(model: Path, trials: int, work: Path, layout: str) -> Path:
    """The model tuned by bcd in `layout` at `trials` per task, compiled and exported."""
    settings = TuneSettings(trials_per_task=trials, conv_layout=layout)
    run = run_session(model, work / f"{layout}.db", host_target(), settings)
    mod = run.prepared.imported.relax_mod
    return export_library(compile_tuned(run.database, mod, run.target), work / f"{layout}.so")


def probe_shape(shape: str, trials: int, out: Path, runs: int) -> dict:
    channels, size = (int(part) for part in shape.split("x"))
    work = out / shape
    work.mkdir(parents=True, exist_ok=True)
    model = conv_model(work / "conv.onnx", channels, size)
    inputs = {"input": np.random.default_rng(0).standard_normal((1, channels, size, size)).astype(np.float32)}
    libraries = {name: tuned_library(model, trials, work, layout) for name, layout in LAYOUTS.items()}
    onnx_model = onnx.load(str(model))
    reference = onnxruntime_runner(onnx_model, inputs).outputs
    errors = {
        name: float(np.max(np.abs(library_runner(path, inputs).outputs[0] - reference[0])))
        for name, path in libraries.items()
    }
    times = measure_in_turns(libraries, onnx_model, inputs, runs, host_target())
    gflop = 2 * channels * channels * 9 * size * size / 1e9
    return {
        "shape": shape,
        "trials": trials,
        "ms": times,
        "gflops": {name: gflop / (ms / 1e3) for name, ms in times.items()},
        "max_abs_error": errors,
        "winograd / onnxruntime": times["winograd"] / times[ONNXRUNTIME],
        "direct / onnxruntime": times["direct"] / times[ONNXRUNTIME],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--shapes", default=",".join(RESNET18_3X3))
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        print(json.dumps(probe_shape(shape, args.trials, args.out, args.runs)), flush=True)


if __name__ == "__main__":
    main()
