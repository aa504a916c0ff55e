"""Models bcd cannot tune end in one clear line naming the operator, never a traceback."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from bad_models import BAD_MODELS, DATA_DEPENDENT
from onnx import TensorProto, helper, numpy_helper

from bcd_core.errors import DataDependentShapeError
from bcd_core.model_import import import_model
from bcd_core.shape_dependence import shape_dependences


def inspect(path: Path, *flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "bcd_core", *flags, "inspect", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", sorted(BAD_MODELS))
def test_inspect_names_the_operator_in_one_line_and_nothing_of_tvm(tmp_path: Path, name: str) -> None:
    make, word = BAD_MODELS[name]
    result = inspect(make(tmp_path / f"{name}.onnx"))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bcd: error:"), result.stderr
    assert word in lines[0], lines[0]
    if name in DATA_DEPENDENT:
        assert "depends on" in lines[0]


def test_verbose_shows_tvms_own_error(tmp_path: Path) -> None:
    make, _ = BAD_MODELS["integer_pow"]
    result = inspect(make(tmp_path / "pow.onnx"), "-v")
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "power only applies to float" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("bcd: error:")


@pytest.mark.parametrize("name", ["slice", "compress"])
def test_the_engine_raises_the_named_error(tmp_path: Path, name: str) -> None:
    make, word = DATA_DEPENDENT[name]
    with pytest.raises(DataDependentShapeError, match=word):
        import_model(make(tmp_path / f"{name}.onnx"))


def _model(nodes: list, inputs: list, inits: list) -> onnx.ModelProto:
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])
    graph = helper.make_graph(nodes, "g", inputs, [output], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shapes_computed_from_fixed_shapes_or_constants_do_not_depend_on_data() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    pick = numpy_helper.from_array(np.array([0, 1], np.int64), "pick")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),  # values of a fixed shape: fixed
        helper.make_node("Gather", ["shape", "pick"], ["two"]),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Reshape", ["r", "two"], ["flat"]),
        helper.make_node("Slice", ["flat", "starts", "ends"], ["y"]),  # constants: fixed
    ]
    starts = numpy_helper.from_array(np.array([0], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([1], np.int64), "ends")
    assert shape_dependences(_model(nodes, [x], [pick, starts, ends])) == []


def test_a_shape_read_from_a_data_sized_tensor_depends_on_data() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"]),
        helper.make_node("Shape", ["where"], ["shape"]),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    found = shape_dependences(_model(nodes, [x], []))
    assert [(f.op_type, f.argument) for f in found] == [("Reshape", "shape")]
