"""Do `bcd check`, `bcd bench`, the dashboard and the report time things alike?

    .venv/bin/python experiments/timing_agreement.py MODULE.so MODEL.onnx [--repeat 3]

MODULE.so is a compiled model of MODEL (from `bcd tune --out` or `bcd export`). Each repetition
times, on the same machine and input:

- `bcd check MODULE --onnx MODEL`, in a process of its own, as a user runs it (onnxruntime and
  the module; `bcd export` uses the same function);
- `bcd bench`'s measurement after its tunes (`measure_in_turns`: the module and onnxruntime);
- the dashboard's and the report's onnxruntime reference (`time_onnxruntime_s`);
- `bcd bench`'s machine-speed probe (`machine_probe_ms`).

It prints one row per repetition and, per figure, the largest difference from the median of
all onnxruntime (or all module) figures. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

from bcd_core.bench import ONNXRUNTIME, machine_probe_ms, measure_in_turns
from bcd_core.model_import import load_onnx, random_inputs, static_inputs
from bcd_core.reference import time_onnxruntime_s
from bcd_core.target import host_target

CHECK_LINE = re.compile(r"^(tvm module|onnxruntime)\s+median ([0-9.]+) ms")


def bcd_check(module: Path, model: Path) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-m", "bcd_core", "check", str(module), "--onnx", str(model)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {m.group(1): float(m.group(2)) for m in map(CHECK_LINE.match, output.splitlines()) if m}
    return {"check: module": found["tvm module"], "check: onnxruntime": found["onnxruntime"]}


def in_process(module: Path, model: Path) -> dict[str, float]:
    onnx_model = load_onnx(model)
    inputs = random_inputs(static_inputs(onnx_model))
    measured = measure_in_turns({"module": module}, onnx_model, inputs, 50, host_target())
    return {
        "bench: module": measured["module"],
        "bench: onnxruntime": measured[ONNXRUNTIME],
        "dashboard/report: onnxruntime": time_onnxruntime_s(model) * 1e3,
        "bench probe: onnxruntime": machine_probe_ms(onnx_model, inputs) or float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = [bcd_check(args.module, args.model) | in_process(args.module, args.model) for _ in range(args.repeat)]
    names = list(rows[0])
    print("| repetition | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for number, row in enumerate(rows, 1):
        print(f"| {number} | " + " | ".join(f"{row[name]:.3f} ms" for name in names) + " |")
    for kind in ("module", "onnxruntime"):
        figures = [row[name] for row in rows for name in names if name.endswith(kind)]
        middle = statistics.median(figures)
        worst = max(abs(f / middle - 1) for f in figures)
        print(f"{kind}: median {middle:.3f} ms, every figure within {worst:.1%} of it")


if __name__ == "__main__":
    main()
