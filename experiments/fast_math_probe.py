"""What exact and fast erf and softmax cost on this CPU, untuned, timed in turns.

    python experiments/fast_math_probe.py

Builds one-operator ONNX models (Erf on 128x1024, Softmax on 16x128x128), imports each with
`--math exact` and `--math fast` (bcd_core.model_import.MathMode), compiles them without
tuning and times them on standard-normal and on uniform [1, 10] inputs (the range of
MetaSchedule's runner inputs) with bcd_core/timing.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import tvm
from onnx import TensorProto, helper

from bcd_core.export import export_library, library_runner
from bcd_core.model_import import MathMode, import_model
from bcd_core.target import parse_target
from bcd_core.timing import time_in_turns

CASES = (("Erf", (128, 1024), {}), ("Softmax", (16, 128, 128), {"axis": -1}))


def one_operator_model(op: str, shape: tuple[int, ...], path: Path, **attrs: int) -> Path:
    io = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)) for name in ("x", "y")]
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], op, [io[0]], [io[1]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def main() -> None:
    target = parse_target("llvm")
    rng = np.random.default_rng(0)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for op, shape, attrs in CASES:
            path = one_operator_model(op, shape, Path(tmp) / f"{op}.onnx", **attrs)
            inputs = {"normal": rng.standard_normal(shape), "uniform 1-10": rng.uniform(1, 10, shape)}
            for math in MathMode:
                executable = tvm.compile(import_model(path, math=math).relax_mod, target=target)
                library = export_library(executable, Path(tmp) / f"{op}-{math}")
                for label, data in inputs.items():
                    runs[f"{op} {math} on {label}"] = library_runner(library, {"x": data.astype("float32")}).run
        for name, timing in time_in_turns(runs, 30).items():
            print(f"{name}: {timing.describe()}")


if __name__ == "__main__":
    main()
