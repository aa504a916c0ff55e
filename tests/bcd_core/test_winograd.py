"""Winograd F(4x4, 3x3) in the blocked layout: it computes the convolution for any padding and
ragged tiles, lowers only the convolutions it fits, folds its weight transform at compile time,
schedules its transforms with its own rules, and a tuned model matches onnxruntime."""

from pathlib import Path

import models
import numpy as np
import onnxruntime
import pytest
import tvm
from tvm import relax, te
from tvm_builds import builds_and_matches_onnxruntime_here

from bcd_core.export import compile_tuned
from bcd_core.model_import import fuse_for_tuning, import_model, random_inputs
from bcd_core.target import host_target
from bcd_core.tasks import design_space, extract_tasks
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session
from bcd_core.winograd import conv2d_winograd_nchwc, transformed_weight

AVX2 = tvm.target.Target({"kind": "llvm", "mcpu": "haswell", "num-cores": 2})
AVX512 = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})


def direct_convolution(data: np.ndarray, weight: np.ndarray, padding: tuple[int, int, int, int]) -> np.ndarray:
    """NCHW data, OIHW 3x3 weight, stride 1, padding (top, left, bottom, right), in float64."""
    top, left, bottom, right = padding
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    out_h, out_w = padded.shape[2] - 2, padded.shape[3] - 2
    out = np.zeros((data.shape[0], weight.shape[0], out_h, out_w))
    for kh in range(3):
        for kw in range(3):
            window = padded[:, :, kh : kh + out_h, kw : kw + out_w]
            out += np.einsum("nchw,oc->nohw", window, weight[:, :, kh, kw].astype(np.float64))
    return out


@pytest.mark.parametrize("size, padding", [(8, (1, 1, 1, 1)), (7, (0, 0, 0, 0)), (9, (1, 0, 1, 0)), (5, (2, 2, 2, 2))])
def test_the_winograd_compute_is_the_convolution(size: int, padding: tuple[int, int, int, int]) -> None:
    """Blocks of 8 in and 16 out; output sizes that are and are not multiples of the 4x4 tile."""
    rng = np.random.default_rng(size)
    in_channels, out_channels, in_block, out_block = 16, 32, 8, 16
    data = rng.standard_normal((1, in_channels, size, size)).astype(np.float32)
    weight = rng.standard_normal((out_channels, in_channels, 3, 3)).astype(np.float32)
    blocked_data = data.reshape(1, in_channels // in_block, in_block, size, size).transpose(0, 1, 3, 4, 2)
    blocked_weight = weight.reshape(out_channels // out_block, out_block, in_channels // in_block, in_block, 3, 3)
    blocked_weight = blocked_weight.transpose(0, 2, 4, 5, 3, 1)  # OIHW{i}i{o}o
    data_t = te.placeholder(blocked_data.shape, name="data")
    kernel_t = te.placeholder(blocked_weight.shape, name="kernel")
    out_t = conv2d_winograd_nchwc(data_t, transformed_weight(kernel_t), list(padding), out_block)
    built = tvm.compile(te.create_prim_func([data_t, kernel_t, out_t]), target="llvm")
    out = tvm.runtime.tensor(np.zeros([int(d) for d in out_t.shape], np.float32))
    built(tvm.runtime.tensor(blocked_data), tvm.runtime.tensor(np.ascontiguousarray(blocked_weight)), out)
    blocked_out = out.numpy()
    ours = blocked_out.transpose(0, 1, 4, 2, 3).reshape(1, out_channels, *blocked_out.shape[2:4])
    expected = direct_convolution(data, weight, padding)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))


def names(mod: tvm.IRModule) -> list[str]:
    return [gv.name_hint for gv in mod.get_global_vars()]


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_only_the_convolutions_winograd_fits_are_lowered_to_it(model_dir: Path, target) -> None:
    """The mobile block's stem (3 channels in), depthwise and 1x1 convolutions stay direct; its
    one dense 3x3 convolution of 64 channels becomes Winograd where its output has enough tiles
    (22x22: 36), for either vector width, and the weight transform is folded away before any
    task is extracted. At 6x6 (4 tiles) it stays direct too, and so it does at 32 channels."""
    model = models.mobile_block_cnn(model_dir / "winograd_mobile.onnx", width=64, size=44)
    imported = import_model(model, layout="winograd", target=target)
    winograd = [name for name in names(imported.relax_mod) if name.startswith("conv2d_winograd_NCHWc")]
    direct = [name for name in names(imported.relax_mod) if name.startswith("conv2d_NCHWc")]
    assert len(winograd) == 1 and len(direct) == 3, names(imported.relax_mod)
    fused = names(fuse_for_tuning(imported.relax_mod, target))
    assert not [name for name in fused if "winograd_weight" in name], "the weight transform is left to run"
    builds_and_matches_onnxruntime_here(imported, imported.relax_mod, target)
    small = import_model(
        models.mobile_block_cnn(model_dir / "winograd_small.onnx", width=64), layout="winograd", target=target
    )
    assert not [name for name in names(small.relax_mod) if "winograd" in name], names(small.relax_mod)
    narrow = models.mobile_block_cnn(model_dir / "winograd_narrow.onnx", width=32, size=44)
    narrow_names = names(import_model(narrow, layout="winograd", target=target).relax_mod)
    assert not [name for name in narrow_names if "winograd" in name], narrow_names


def test_the_transforms_are_scheduled_by_their_rules(model_dir: Path) -> None:
    """TVM registers no Winograd rules for CPUs: without bcd's, MetaSchedule's generic rules
    would leave the transforms unvectorized, and their coefficients unfolded where the
    transforms' positions are not unrolled."""
    target = host_target()
    model = models.convnet(model_dir / "winograd_rules.onnx", channels=(64, 64), size=24)
    tasks = extract_tasks(import_model(model, layout="winograd", target=target).relax_mod, target)
    task = next(t for t in tasks if "winograd" in t.name)
    unrolled = {"input_tile": 0, "data_pack_rows": 2, "data_pack": 2, "inverse_rows": 3, "inverse": 2}
    for sketch in design_space(task.mod, target):
        for block, positions in unrolled.items():
            loops = [sketch.get(loop) for loop in sketch.get_loops(sketch.get_sblock(block))]
            assert loops[-1].kind == tvm.tirx.ForKind.VECTORIZED, f"{block} is not vectorized"
            assert sum(loop.kind == tvm.tirx.ForKind.UNROLLED for loop in loops) == positions, block


@pytest.mark.slow
def test_a_cnn_tuned_with_winograd_matches_onnxruntime(tmp_path: Path, model_dir: Path) -> None:
    model = models.convnet(model_dir / "winograd_convnet.onnx", channels=(3, 64, 64), size=24)
    run = run_session(model, tmp_path / "w.db", host_target(), TuneSettings(trials_per_task=2, conv_layout="winograd"))
    assert any("winograd" in task.name for task in run.tasks)
    executable = compile_tuned(run.database, run.prepared.imported.relax_mod, run.target)
    inputs = random_inputs(run.prepared.imported.inputs)
    ours = relax.VirtualMachine(executable, tvm.cpu())["main"](*[tvm.runtime.tensor(v) for v in inputs.values()])
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    np.testing.assert_allclose(ours.numpy(), reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))
