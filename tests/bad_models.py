"""ONNX models bcd cannot tune, each for its own reason: shapes set by the values fed to the
model (through many operators), and operators TVM fails to lower. Generated on the fly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx import helper as h

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi = h.make_tensor_value_info


def _save(path: Path, nodes: list, inputs: list, outputs: list, inits: tuple = (), opset: int = 17) -> Path:
    graph = h.make_graph(nodes, path.stem, inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 17 else 10
    onnx.save(model, str(path))
    return path


def _one(op: str, inputs: list, rank: int, **attrs: object) -> Callable[[Path], Path]:
    """A model of one `op` node over graph `inputs`, with an output of `rank` symbolic dims."""

    def make(path: Path) -> Path:
        node = h.make_node(op, [value.name for value in inputs], ["y"], **attrs)
        return _save(path, [node], inputs, [vi("y", F, [f"d{i}" for i in range(rank)])])

    return make


def _slice_of_computed_start(path: Path) -> Path:
    """Slice's start is computed (Add) from a graph input: the dependence goes through a chain."""
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    nodes = [h.make_node("Add", ["st", "one"], ["st1"]), h.make_node("Slice", ["x", "st1", "en"], ["y"])]
    inputs = [vi("x", F, [4, 6]), vi("st", I64, [1]), vi("en", I64, [1])]
    return _save(path, nodes, inputs, [vi("y", F, ["a", "b"])], inits=(one,))


def _integer_pow(path: Path) -> Path:
    node = h.make_node("Pow", ["x", "e"], ["y"])
    ints = [vi("x", TensorProto.INT32, [2, 3]), vi("e", TensorProto.INT32, [2, 3])]
    return _save(path, [node], ints, [vi("y", TensorProto.INT32, [2, 3])])


def _rms_norm_over_axis_0(path: Path) -> Path:
    node = h.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=0)
    inputs = [vi("x", F, [2, 3]), vi("scale", F, [2, 3])]
    return _save(path, [node], inputs, [vi("y", F, [2, 3])], opset=23)


# name -> (generator, a word the error must hold): shapes that depend on data, one per operator
DATA_DEPENDENT: dict[str, tuple[Callable[[Path], Path], str]] = {
    "compress": (_one("Compress", [vi("x", F, [4, 3]), vi("c", BOOL, [4])], 2, axis=0), "Compress"),
    "nms": (_one("NonMaxSuppression", [vi("b", F, [1, 6, 4]), vi("s", F, [1, 1, 6])], 2), "NonMaxSuppression"),
    "slice": (_one("Slice", [vi("x", F, [4, 6]), vi("st", I64, [1]), vi("en", I64, [1])], 2), "'st'"),
    "slice_chain": (_slice_of_computed_start, "'st'"),
    "tile": (_one("Tile", [vi("x", F, [2, 3]), vi("r", I64, [2])], 2), "Tile"),
    "unsqueeze": (_one("Unsqueeze", [vi("x", F, [2, 3]), vi("a", I64, [1])], 3), "Unsqueeze"),
    "squeeze": (_one("Squeeze", [vi("x", F, [1, 3]), vi("a", I64, [1])], 1), "Squeeze"),
    "expand": (_one("Expand", [vi("x", F, [1, 3]), vi("s", I64, [2])], 2), "Expand"),
    "constant_of_shape": (_one("ConstantOfShape", [vi("s", I64, [2])], 2), "ConstantOfShape"),
    "range": (_one("Range", [vi("a", F, []), vi("b", F, []), vi("d", F, [])], 1), "Range"),
    "reshape": (_one("Reshape", [vi("x", F, [2, 3]), vi("s", I64, [2])], 2), "Reshape"),
}
# name -> (generator, word): operators TVM cannot lower as the model uses them
TVM_FAILURES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "integer_pow": (_integer_pow, "power"),
    "rms_norm_axis_0": (_rms_norm_over_axis_0, "rms_norm"),
}
BAD_MODELS = {**DATA_DEPENDENT, **TVM_FAILURES}
