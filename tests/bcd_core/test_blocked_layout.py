"""Convolutions in NCHW[x]c on CPUs: the block follows the target's vector width, the result
matches onnxruntime, and layout transforms stay at the graph's boundaries."""

import gc
from pathlib import Path

import models
import numpy as np
import onnxruntime
import pytest
import tvm
from tvm import relax
from tvm_builds import builds_and_matches_onnxruntime_here

from bcd_core import layout_fallback
from bcd_core.layout import blocked_conversion, convert_to_blocked, vector_block
from bcd_core.model_import import import_model, random_inputs
from bcd_core.target import host_target

AVX2 = tvm.target.Target({"kind": "llvm", "mcpu": "haswell", "num-cores": 2})
AVX512 = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})


@pytest.fixture(scope="module")
def mobile_cnn(model_dir: Path) -> Path:
    return models.mobile_block_cnn(model_dir / "mobile_block_cnn.onnx")


def test_the_block_is_the_targets_float32_vector_width() -> None:
    assert vector_block(AVX512) == 16
    assert vector_block(AVX2) == 8
    assert vector_block(tvm.target.Target({"kind": "llvm", "mcpu": "x86-64"})) == 4


def tir_calls(mod: tvm.IRModule) -> list[tuple[str, relax.Call]]:
    """(callee, call) of every call_tir in the entry function."""
    found = []

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
            found.append((expr.args[0].name_hint, expr))

    relax.analysis.post_order_visit(mod["main"].body, visit)
    return found


def activation_transforms(mod: tvm.IRModule, target) -> list[str]:
    """The layout transforms left in the entry function once constants are folded, as the
    compiler folds them: the weights' are gone (packed at compile time), the data's remain."""
    with target:
        mod = relax.transform.FoldConstant()(mod)
    return [
        name
        for name, call in tir_calls(mod)
        if name.startswith("te_layout_transform") and not isinstance(call.args[1].fields[0], tvm.ir.expr.Constant)
    ]


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_a_blocked_cnn_transforms_layouts_only_at_its_boundaries(mobile_cnn: Path, target) -> None:
    blocked = convert_to_blocked(import_model(mobile_cnn).relax_mod, target)
    names = {gv.name_hint for gv in blocked.get_global_vars()}
    block = vector_block(target)
    assert {"conv2d_NCHWc", "depthwise_conv2d_NCHWc"} <= {_without_digits(name) for name in names}
    assert "conv2d" not in {_without_digits(name) for name in names}, "a convolution stayed NCHW"
    assert len(activation_transforms(blocked, target)) == 2, "the input and the output only"
    convolutions = [call for name, call in tir_calls(blocked) if "conv2d_NCHWc" in name]
    assert len(convolutions) == 5 and {int(call.ty.shape[-1]) for call in convolutions} == {block}
    tvm.compile(blocked, target)  # builds for either ISA, whichever this machine runs


def test_a_blocked_cnn_with_swish_keeps_its_layout_and_computes_sigmoid_without_libm(model_dir: Path) -> None:
    """Fast math rewrites sigmoid once the layout is converted: rewritten before, ConvertLayout
    would not see through it and would leave the blocked layout around every swish."""
    model, target = models.conv_swish(model_dir / "conv_swish.onnx"), host_target()
    fast = import_model(model, layout="blocked", target=target, math="fast")
    exact = import_model(model, layout="blocked", target=target, math="exact")
    assert len(activation_transforms(fast.relax_mod, target)) == 2, "the input and the output only"
    names = {_without_digits(gv.name_hint) for gv in fast.relax_mod.get_global_vars()}
    assert "fast_sigmoid" in names and "tir_sigmoid" not in names
    assert "tir_sigmoid" in {_without_digits(gv.name_hint) for gv in exact.relax_mod.get_global_vars()}
    machine = relax.VirtualMachine(tvm.compile(fast.relax_mod, target), tvm.cpu())
    inputs = random_inputs(fast.inputs)
    ours = machine["main"](*[tvm.runtime.tensor(v) for v in inputs.values()]).numpy()
    session = onnxruntime.InferenceSession(fast.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))


def _without_digits(name: str) -> str:
    return name.rstrip("0123456789")


def test_a_blocked_cnn_matches_onnxruntime_on_this_machine(mobile_cnn: Path) -> None:
    imported = import_model(mobile_cnn)
    target = host_target()
    blocked = convert_to_blocked(imported.relax_mod, target)
    machine = relax.VirtualMachine(tvm.compile(blocked, target), tvm.cpu())
    inputs = random_inputs(imported.inputs)
    ours = machine["main"](*[tvm.runtime.tensor(v) for v in inputs.values()]).numpy()
    session = onnxruntime.InferenceSession(imported.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_channels_the_block_does_not_divide_take_a_narrower_block_or_stay_nchw(model_dir: Path, target) -> None:
    """24 and 40 channels run in blocks of 8 on either ISA; 10 classes, which no block of 4 or
    more divides, stay NCHW; the model builds, and on this machine matches onnxruntime."""
    imported = import_model(models.ragged_cnn(model_dir / "ragged_cnn.onnx"))
    blocked = convert_to_blocked(imported.relax_mod, target)
    convolutions = {_without_digits(name): call for name, call in tir_calls(blocked) if "conv2d" in name}
    assert set(convolutions) == {"conv2d_NCHWc", "depthwise_conv2d_NCHWc", "conv2d"}
    blocks = {int(call.ty.shape[-1]) for name, call in tir_calls(blocked) if "NCHWc" in name}
    assert blocks == {8}
    builds_and_matches_onnxruntime_here(imported, blocked, target)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_a_last_convolution_the_block_does_not_divide_is_padded_to_it(model_dir: Path, target) -> None:
    """72 channels: blocks of 8 divide them (AVX2: nothing padded); with AVX-512's 16 lanes the
    last convolution computes 80 in blocks of 16, its bias, activation and global pooling too, and
    a slice of the pooled values keeps 72, while the convolutions another one reads stay in blocks
    of 8. The model matches onnxruntime on this machine."""
    imported = import_model(models.wide_head_cnn(model_dir / "wide_head_cnn.onnx"))
    blocked = convert_to_blocked(imported.relax_mod, target)
    shapes = [tuple(int(d) for d in call.ty.shape) for name, call in tir_calls(blocked) if "conv2d_NCHWc" in name]
    if vector_block(target) == 16:
        assert shapes == [(1, 9, 6, 6, 8), (1, 9, 6, 6, 8), (1, 5, 6, 6, 16)]
        slices = [call for name, call in tir_calls(blocked) if name.startswith("strided_slice")]
        assert [tuple(int(d) for d in c.args[1].fields[0].ty.shape) for c in slices] == [(1, 80, 1, 1)]
    else:
        assert shapes == [(1, 9, 6, 6, 8)] * 3
    builds_and_matches_onnxruntime_here(imported, blocked, target)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_a_transposed_convolution_takes_its_input_unblocked_and_the_convolutions_stay_blocked(
    model_dir: Path, target
) -> None:
    """TVM's layout inference for a transposed convolution fails on a blocked input; asked for
    its own layout it gets NCHW, and the convolutions before and after it stay blocked."""
    imported = import_model(models.upsampling_cnn(model_dir / "upsampling_cnn.onnx"))
    blocked = convert_to_blocked(imported.relax_mod, target)
    names = [_without_digits(name) for name, _ in tir_calls(blocked)]
    assert names.count("conv2d_NCHWc") == 2 and names.count("conv2d_transpose") == 1
    transposed = next(call for name, call in tir_calls(blocked) if name.startswith("conv2d_transpose"))
    assert len(transposed.args[1].fields[0].ty.shape) == 4
    builds_and_matches_onnxruntime_here(imported, blocked, target)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_a_convolution_whose_blocked_output_tvm_cannot_carry_stays_nchw_and_the_next_is_blocked(
    model_dir: Path, target, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A mean over the channels of the first convolution's activation fails TVM's legalization in
    the blocked layout; that convolution stays NCHW, the second is blocked, and the model
    matches onnxruntime on this machine. TVM's warnings about the refused attempts are not
    printed."""
    imported = import_model(models.channel_mean_cnn(model_dir / "channel_mean_cnn.onnx"))
    monkeypatch.setattr(layout_fallback, "_FOUND", {})  # the search runs, not a remembered answer
    conversion = blocked_conversion(imported.relax_mod, target)
    gc.collect()
    assert "BlockBuilder" not in capfd.readouterr().err
    blocked = conversion.mod
    assert conversion.kept_nchw == 1
    assert [_without_digits(name) for name, _ in tir_calls(blocked) if "conv2d" in name] == ["conv2d", "conv2d_NCHWc"]
    builds_and_matches_onnxruntime_here(imported, blocked, target)


def test_a_padded_convolution_whose_activation_is_also_an_output_gives_both_unpadded(model_dir: Path) -> None:
    """The slice comes where the activation leaves for the graph's output, so both outputs keep
    their 72 channels and match onnxruntime (where this machine runs AVX-512 code)."""
    path = models.wide_head_cnn(model_dir / "features_out.onnx", features_out=True)
    imported = import_model(path)
    blocked = convert_to_blocked(imported.relax_mod, AVX512)
    slices = [call for name, call in tir_calls(blocked) if name.startswith("strided_slice")]
    assert [tuple(int(d) for d in c.args[1].fields[0].ty.shape) for c in slices] == [(1, 80, 6, 6)]
    executable = tvm.compile(blocked, AVX512)
    if vector_block(host_target()) < 16:
        return  # an AVX-512 module builds on an AVX2 machine but cannot run there
    inputs = random_inputs(imported.inputs)
    ours = relax.VirtualMachine(executable, tvm.cpu())["main"](*[tvm.runtime.tensor(v) for v in inputs.values()])
    session = onnxruntime.InferenceSession(imported.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    for mine, reference in zip(ours, session.run(None, inputs), strict=True):
        np.testing.assert_allclose(mine.numpy(), reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))


def test_a_concatenation_is_computed_by_the_convolution_or_pool_that_reads_it(model_dir: Path) -> None:
    """No kernel copies the parts into a new tensor: the consumer reads each where it lies."""
    imported = import_model(models.fire_cnn(model_dir / "fire_cnn.onnx"))
    target = host_target()
    blocked = convert_to_blocked(imported.relax_mod, target)
    names = [_without_digits(name) for name, _ in tir_calls(blocked)]
    assert "concatenate" not in names
    assert names.count("concat_conv2d_NCHWc") == 1 and names.count("concat_max_pool2d") == 1
    inputs = random_inputs(imported.inputs)
    machine = relax.VirtualMachine(tvm.compile(blocked, target), tvm.cpu())
    ours = machine["main"](*[tvm.runtime.tensor(v) for v in inputs.values()]).numpy()
    session = onnxruntime.InferenceSession(imported.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))


@pytest.mark.slow
def test_a_session_tuned_blocked_records_resumes_and_exports_its_layout(tmp_path: Path, mobile_cnn: Path) -> None:
    """The layout names the session (a re-run with the other layout is another session), a
    resumed session keeps it, its tasks are blocked convolutions, and export compiles the same
    blocked model, which matches onnxruntime."""
    from bcd_core.export import export_tuned_session
    from bcd_core.records.store import RecordStore
    from bcd_core.records.timing import session_layout
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.settings import TuneSettings
    from bcd_core.tuning.tune import run_session

    db = tmp_path / "blocked.db"
    settings = TuneSettings(trials_per_task=2, trials_per_round=2, conv_layout="blocked")
    control = TuningControl()
    stopped = run_session(mobile_cnn, db, host_target(), settings, [_stop_after_round(control, 2)], control=control)
    assert any("NCHWc" in task.name for task in stopped.tasks)
    resumed = run_session(mobile_cnn, db, host_target(), settings)
    assert resumed.session_id == stopped.session_id and resumed.resumed
    store = RecordStore(db)
    session = store.session(resumed.session_id)
    assert session_layout(session) == "blocked" and session["status"] == "completed"
    plain_settings = TuneSettings(trials_per_task=1, trials_per_round=1, conv_layout="nchw")
    plain = run_session(mobile_cnn, db, host_target(), plain_settings)
    assert plain.session_id != resumed.session_id and session_layout(store.session(plain.session_id)) == "nchw"
    result = export_tuned_session(store, resumed.session_id, tmp_path / "blocked", runs=3)
    assert result.check is not None and result.check.matches, result.check
    assert result.untuned == []


def _stop_after_round(control, rounds: int):
    def listener(event) -> None:
        from bcd_core.tuning.events import RoundFinished

        if isinstance(event, RoundFinished) and event.round >= rounds:
            control.stop()

    return listener
