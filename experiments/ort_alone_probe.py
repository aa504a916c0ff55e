"""Do slow episodes need TVM's thread pool in the process? Times onnxruntime alone, or
onnxruntime and a compiled module in turns, in chunks of 20 calls for SECONDS, and prints each
chunk's median (ms). Run the two modes one after another on an idle machine.

    python experiments/ort_alone_probe.py ort 40 ../shared/models/squeezenet1_1.onnx
    python experiments/ort_alone_probe.py mixed 40 ../shared/models/squeezenet1_1.onnx MODULE.so
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bcd_core.export import library_runner, onnxruntime_runner
from bcd_core.model_import import load_onnx, random_inputs, static_inputs


def chunk_median_ms(run: Callable[[], object], calls: int = 20) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("ort", "mixed"))
    parser.add_argument("seconds", type=float)
    parser.add_argument("model", type=Path)
    parser.add_argument("module", type=Path, nargs="?")
    args = parser.parse_args()
    if args.mode == "mixed" and args.module is None:
        parser.error("mixed needs a compiled MODULE.so")
    model = load_onnx(args.model)  # no Relax import: the process should hold as little TVM as it can
    inputs = random_inputs(static_inputs(model))
    ort = onnxruntime_runner(model, inputs)
    module = library_runner(args.module, inputs) if args.mode == "mixed" else None
    chunks = []
    end = time.time() + args.seconds
    while time.time() < end:
        ort_ms = chunk_median_ms(ort.run)
        chunks.append(f"{ort_ms:.2f}/{chunk_median_ms(module.run):.2f}" if module else f"{ort_ms:.2f}")
    print(args.mode, " ".join(chunks))


if __name__ == "__main__":
    main()
