from pathlib import Path

import models
import pytest

from bcd_core.errors import DynamicShapeError, ModelLoadError, UnsupportedOperatorError
from bcd_core.model_import import graph_inputs, import_model, load_onnx, parse_input_shapes, random_inputs


def test_imports_a_static_model(tiny_mlp: Path) -> None:
    model = import_model(tiny_mlp)
    assert [(s.name, s.shape, s.dtype) for s in model.inputs] == [("x", (1, 16), "float32")]
    assert "main" in [gv.name_hint for gv in model.relax_mod.get_global_vars()]
    assert len(model.sha256) == 64


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        import_model(tmp_path / "nope.onnx")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelLoadError, match="empty"):
        load_onnx(path)


def test_random_bytes_are_not_onnx(tmp_path: Path) -> None:
    path = tmp_path / "noise.onnx"
    path.write_bytes(bytes(range(256)) * 7)
    with pytest.raises(ModelLoadError, match="not"):
        load_onnx(path)


def test_text_file_is_not_onnx(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n")
    with pytest.raises(ModelLoadError):
        load_onnx(path)


def test_truncated_model(tiny_convnet: Path, tmp_path: Path) -> None:
    data = tiny_convnet.read_bytes()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="truncated|not"):
        load_onnx(path)


def test_unsupported_operator_is_named(unsupported_model: Path) -> None:
    with pytest.raises(UnsupportedOperatorError) as info:
        import_model(unsupported_model)
    assert info.value.operators == ["FrobnicateTensor"]
    assert "FrobnicateTensor" in str(info.value)


def test_dynamic_shape_names_the_input_and_the_fix(dynamic_mlp: Path) -> None:
    with pytest.raises(DynamicShapeError) as info:
        import_model(dynamic_mlp)
    assert info.value.input_name == "x"
    assert "--input-shape x=1,16" in str(info.value)


def test_input_shape_option_fixes_dynamic_dims(dynamic_mlp: Path) -> None:
    model = import_model(dynamic_mlp, parse_input_shapes(["x=4,16"]))
    assert model.inputs[0].shape == (4, 16)


@pytest.mark.parametrize("bad", ["x", "x=", "=1,2", "x=1,a", "x=0,3"])
def test_bad_input_shape_syntax(bad: str) -> None:
    with pytest.raises(ModelLoadError, match="--input-shape"):
        parse_input_shapes([bad])


def test_input_shape_for_unknown_input(dynamic_mlp: Path) -> None:
    with pytest.raises(ModelLoadError, match="unknown input"):
        import_model(dynamic_mlp, {"nope": (1, 16)})


def test_random_inputs_follow_specs(tiny_mlp: Path) -> None:
    specs = graph_inputs(load_onnx(tiny_mlp))
    arrays = random_inputs(specs, seed=3)
    assert arrays["x"].shape == (1, 16) and arrays["x"].dtype.name == "float32"
    assert (random_inputs(specs, seed=3)["x"] == arrays["x"]).all()


def test_fast_math_replaces_libm_functions_and_keeps_onnxruntimes_outputs(gelu_model: Path, host, tmp_path) -> None:
    import tvm

    from bcd_core.export import compare_outputs, export_library, library_runner, run_onnxruntime

    exact = import_model(gelu_model)
    fast = import_model(gelu_model, math="fast")
    assert "R.erf" in exact.relax_mod.script() and "R.nn.softmax" in exact.relax_mod.script()
    assert "R.erf" not in fast.relax_mod.script() and "R.nn.softmax" not in fast.relax_mod.script()
    inputs = random_inputs(exact.inputs)
    reference = run_onnxruntime(exact.onnx_model, inputs, runs=1).outputs
    for label, imported in (("exact", exact), ("fast", fast)):
        library = export_library(tvm.compile(imported.relax_mod, target=host), tmp_path / label)
        assert compare_outputs(library_runner(library, inputs).outputs, reference).max_abs_error < 1e-5, label


def test_fast_math_computes_sigmoid_without_libm_and_keeps_onnxruntimes_outputs(
    model_dir: Path, host, tmp_path
) -> None:
    """TVM's fast-math pass leaves sigmoid to one libm call per element; bcd's does not."""
    import tvm

    from bcd_core.export import compare_outputs, export_library, library_runner, run_onnxruntime

    model = models.swish_gate(model_dir / "swish_gate.onnx")
    exact, fast = import_model(model), import_model(model, math="fast")
    assert exact.relax_mod.script().count("R.sigmoid") == 2
    assert "R.sigmoid" not in fast.relax_mod.script() and "fast_sigmoid" in fast.relax_mod.script()
    lowered = tvm.relax.transform.LegalizeOps()(fast.relax_mod).script()
    assert "T.sigmoid" not in lowered and "T.exp" not in lowered
    inputs = random_inputs(exact.inputs)
    reference = run_onnxruntime(exact.onnx_model, inputs, runs=1).outputs
    assert abs(reference[0]).max() > 10, "the activations do not reach where sigmoid saturates"
    for label, imported in (("exact", exact), ("fast", fast)):
        library = export_library(tvm.compile(imported.relax_mod, target=host), tmp_path / label)
        assert compare_outputs(library_runner(library, inputs).outputs, reference).max_abs_error < 1e-4, label


def test_unknown_math_is_refused(tiny_mlp: Path) -> None:
    with pytest.raises(ValueError, match="fast, exact"):
        import_model(tiny_mlp, math="sloppy")
