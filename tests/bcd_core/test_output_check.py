"""How `bcd check` and export's check judge a module's outputs against onnxruntime's."""

from pathlib import Path

import numpy as np
import pytest
from models import float16_mlp

from bcd_core.export import compare_outputs, export_library, library_runner, run_onnxruntime
from bcd_core.model_import import import_model, random_inputs


def judged(ours: np.ndarray, reference: np.ndarray, tolerance: float | None = None) -> bool:
    return compare_outputs([ours], [reference], tolerance).matches


def test_small_float_outputs_are_held_to_an_absolute_1e_3() -> None:
    reference = np.array([0.5, -0.25, 0.0], np.float32)
    assert judged(reference + np.float32(5e-4), reference)
    assert not judged(reference + np.float32(2e-3), reference)


def test_large_float_outputs_are_held_to_1e_3_of_their_largest_value() -> None:
    reference = np.array([30000.0, -12.0, 4.0], np.float32)
    assert judged(reference + np.float32(1.0), reference)  # float32 rounding at this size is 2e-3
    assert not judged(reference + np.float32(100.0), reference)
    assert judged(reference + np.float32(100.0), reference, tolerance=1e-2)


def test_float16_outputs_get_1e_2() -> None:
    reference = np.array([20.0, 1.0], np.float16)
    assert judged(reference + np.float16(0.125), reference)
    assert not judged(reference + np.float16(0.5), reference)


def test_integer_outputs_must_be_equal() -> None:
    reference = np.array([3, 997], np.int64)
    assert judged(reference.copy(), reference)
    assert not judged(reference + np.array([0, 1]), reference)


def test_nan_and_infinity_agree_only_with_their_like() -> None:
    reference = np.array([np.nan, np.inf, 1.0], np.float32)
    assert judged(reference.copy(), reference)
    assert not judged(np.array([0.0, np.inf, 1.0], np.float32), reference)
    assert not judged(np.array([np.nan, 1e30, 1.0], np.float32), reference)
    assert compare_outputs([np.array([0.0, np.inf, 1.0], np.float32)], [reference]).max_abs_error == np.inf
    assert not judged(np.array([np.nan, np.inf, np.nan], np.float32), reference)


def test_the_worst_output_relative_to_its_tolerance_is_reported() -> None:
    big, small = np.full(4, 1000.0, np.float32), np.zeros(4, np.float32)
    worst = compare_outputs([big + np.float32(0.5), small + np.float32(0.01)], [big, small])
    assert (worst.max_abs_error, worst.tolerance) == pytest.approx((0.01, 1e-3))
    assert not worst.matches


def test_a_float16_model_compiled_by_tvm_matches_onnxruntime(tmp_path: Path, host) -> None:
    """TVM accumulates float16 matmuls in float16, onnxruntime in float32: the outputs differ by
    more than 1e-3 but within float16's own precision, and the check says they match."""
    import tvm

    imported = import_model(float16_mlp(tmp_path / "half.onnx"))
    inputs = random_inputs(imported.inputs)
    reference = run_onnxruntime(imported.onnx_model, inputs, runs=1).outputs
    library = export_library(tvm.compile(imported.relax_mod, target=host), tmp_path / "half")
    outputs = library_runner(library, inputs).outputs
    worst = compare_outputs(outputs, reference)
    assert outputs[0].dtype == np.float16 and worst.max_abs_error > 1e-3
    assert worst.matches, worst
    assert not compare_outputs([outputs[0][:, ::-1].copy()], reference).matches  # a wrong module still differs
