"""Does every operator a CNN puts after a convolution survive the blocked layout? For each of
three dozen ONNX operator patterns, a model `conv -> pattern [-> conv]` is converted to NCHW[x]c
for this CPU (`import_model(..., layout="blocked")`), compiled untuned and compared with
onnxruntime. With `--channels 72` (not a multiple of AVX-512's 16) the last convolutions are
padded (channel_padding.py) and the chain after them is checked too.

    python experiments/blocked_op_sweep.py [--channels 32]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import relax

from bcd_core.model_import import import_model, random_inputs
from bcd_core.target import host_target

SIZE = 8
RNG = np.random.default_rng(0)


def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)


def const(name: str, values: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values), name)


def node(kind: str, inputs: list[str], outputs: list[str] | None = None, **attrs: object) -> onnx.NodeProto:
    return helper.make_node(kind, inputs, outputs or ["b"], **attrs)


def patterns(c: int) -> dict[str, tuple[list, list, tuple[int, ...], bool]]:
    """name: (nodes from `a` to `b`, their constants, b's shape, whether a convolution follows)."""
    s, i64 = SIZE, np.int64
    scale = const("sc", np.array([1, 1, 2, 2], np.float32))
    return {
        "softmax over channels": ([node("Softmax", ["a"], axis=1)], [], (1, c, s, s), False),
        "mean over channels": ([node("ReduceMean", ["a"], axes=[1], keepdims=1)], [], (1, 1, s, s), False),
        "spatial attention (max over channels)": (
            [
                node("ReduceMax", ["a"], ["m"], axes=[1], keepdims=1),
                node("Sigmoid", ["m"], ["g"]),
                node("Mul", ["a", "g"]),
            ],
            [],
            (1, c, s, s),
            True,
        ),
        "sum over space": (
            [node("ReduceSum", ["a", "ax"], keepdims=1)],
            [const("ax", np.array([2, 3], i64))],
            (1, c, 1, 1),
            True,
        ),
        "split channels, add halves": (
            [node("Split", ["a", "sp"], ["l", "r"], axis=1), node("Add", ["l", "r"])],
            [const("sp", np.array([c // 2, c - c // 2], i64))],
            (1, c // 2, s, s),
            False,
        ),
        "shuffle unit": (
            [
                node("Split", ["a", "sp"], ["l", "r"], axis=1),
                node("Conv", ["r", "wr"], ["rc"]),
                node("Relu", ["rc"], ["rr"]),
                node("Concat", ["l", "rr"], axis=1),
            ],
            [const("sp", np.array([c // 2, c - c // 2], i64)), weight("wr", (c - c // 2, c - c // 2, 1, 1))],
            (1, c, s, s),
            True,
        ),
        "channel shuffle": (
            [
                node("Reshape", ["a", "s1"], ["r1"]),
                node("Transpose", ["r1"], ["t1"], perm=[0, 2, 1, 3, 4]),
                node("Reshape", ["t1", "s2"]),
            ],
            [const("s1", np.array([1, 2, c // 2, s, s], i64)), const("s2", np.array([1, c, s, s], i64))],
            (1, c, s, s),
            True,
        ),
        "slice of channels": (
            [node("Slice", ["a", "st", "en", "axs"])],
            [const("st", np.array([4], i64)), const("en", np.array([20], i64)), const("axs", np.array([1], i64))],
            (1, 16, s, s),
            False,
        ),
        "transpose to NHWC": ([node("Transpose", ["a"], perm=[0, 2, 3, 1])], [], (1, s, s, c), False),
        "flatten": ([node("Flatten", ["a"])], [], (1, c * s * s), False),
        "classifier (pool, flatten, gemm)": (
            [
                node("GlobalAveragePool", ["a"], ["p"]),
                node("Flatten", ["p"], ["f"]),
                node("Gemm", ["f", "wg", "bg"], transB=1),
            ],
            [weight("wg", (10, c)), weight("bg", (10,))],
            (1, 10),
            False,
        ),
        "pad channels": (
            [node("Pad", ["a", "pd"])],
            [const("pd", np.array([0, 2, 0, 0, 0, 2, 0, 0], i64))],
            (1, c + 4, s, s),
            True,
        ),
        "pad space": (
            [node("Pad", ["a", "pd"])],
            [const("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], i64))],
            (1, c, s + 2, s + 2),
            True,
        ),
        "batch norm": (
            [node("BatchNormalization", ["a", "g", "bt", "mu", "var"])],
            [weight("g", (c,)), weight("bt", (c,)), weight("mu", (c,)), const("var", np.full(c, 0.7, np.float32))],
            (1, c, s, s),
            True,
        ),
        "instance norm": (
            [node("InstanceNormalization", ["a", "g", "bt"])],
            [weight("g", (c,)), weight("bt", (c,))],
            (1, c, s, s),
            True,
        ),
        "multiply by per-channel constant": (
            [node("Mul", ["a", "m"])],
            [weight("m", (1, c, 1, 1))],
            (1, c, s, s),
            True,
        ),
        "add a one-channel mask": ([node("Add", ["a", "m"])], [weight("m", (1, 1, s, s))], (1, c, s, s), True),
        "hard swish": ([node("HardSwish", ["a"])], [], (1, c, s, s), True),
        "leaky relu": ([node("LeakyRelu", ["a"], alpha=0.1)], [], (1, c, s, s), True),
        "prelu per channel": ([node("PRelu", ["a", "sl"])], [weight("sl", (c, 1, 1))], (1, c, s, s), True),
        "clip": (
            [node("Clip", ["a", "lo", "hi"])],
            [const("lo", np.float32(0)), const("hi", np.float32(0.5))],
            (1, c, s, s),
            True,
        ),
        "average pool": ([node("AveragePool", ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], [], (1, c, s, s), True),
        "max pool, ceil mode": (
            [node("MaxPool", ["a"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
            [],
            (1, c, 4, 4),
            True,
        ),
        "global max pool": ([node("GlobalMaxPool", ["a"])], [], (1, c, 1, 1), True),
        "resize, nearest": ([node("Resize", ["a", "", "sc"], mode="nearest")], [scale], (1, c, 2 * s, 2 * s), True),
        "resize, linear": ([node("Resize", ["a", "", "sc"], mode="linear")], [scale], (1, c, 2 * s, 2 * s), True),
        "transposed convolution": (
            [node("ConvTranspose", ["a", "wt"], strides=[2, 2])],
            [weight("wt", (c, 16, 2, 2))],
            (1, 16, 2 * s, 2 * s),
            True,
        ),
        "depth to space": ([node("DepthToSpace", ["a"], blocksize=2)], [], (1, c // 4, 2 * s, 2 * s), False),
        "local response norm": ([node("LRN", ["a"], size=3)], [], (1, c, s, s), True),
        "swish": ([node("Sigmoid", ["a"], ["g"]), node("Mul", ["a", "g"])], [], (1, c, s, s), True),
        "squeeze-and-excitation": (
            [
                node("GlobalAveragePool", ["a"], ["p"]),
                node("Conv", ["p", "wse"], ["q"]),
                node("Sigmoid", ["q"], ["r"]),
                node("Mul", ["a", "r"]),
            ],
            [weight("wse", (c, c, 1, 1))],
            (1, c, s, s),
            True,
        ),
        "grouped convolution": (
            [node("Conv", ["a", "wg"], group=4, pads=[1, 1, 1, 1])],
            [weight("wg", (c, c // 4, 3, 3))],
            (1, c, s, s),
            True,
        ),
        "dilated convolution": (
            [node("Conv", ["a", "wd"], dilations=[2, 2], pads=[2, 2, 2, 2])],
            [weight("wd", (c, c, 3, 3))],
            (1, c, s, s),
            True,
        ),
        "strided, asymmetric padding": (
            [node("Conv", ["a", "wd"], strides=[2, 2], pads=[0, 0, 1, 1])],
            [weight("wd", (c, c, 3, 3))],
            (1, c, 4, 4),
            True,
        ),
        "depthwise, channel multiplier 2": (
            [node("Conv", ["a", "wm"], group=c, pads=[1, 1, 1, 1])],
            [weight("wm", (2 * c, 1, 3, 3))],
            (1, 2 * c, s, s),
            False,
        ),
    }


def pattern_model(
    name: str, channels: int, nodes: list, inits: list, shape: tuple[int, ...], then_conv: bool
) -> onnx.ModelProto:
    graph_nodes = [node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["a"]), *nodes]
    graph_inits = [weight("w0", (channels, 3, 3, 3)), *inits]
    if then_conv:
        graph_nodes.append(node("Conv", ["b", "w9"], ["y"], pads=[1, 1, 1, 1]))
        graph_inits.append(weight("w9", (16, shape[1], 3, 3)))
        shape = (1, 16, shape[2], shape[3])
    out = "y" if then_conv else "b"
    graph = helper.make_graph(
        graph_nodes,
        name.replace(" ", "_"),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(shape))],
        graph_inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def check(model: onnx.ModelProto, folder: Path) -> str:
    path = folder / f"{model.graph.name}.onnx"
    onnx.save(model, str(path))
    target = host_target()
    imported = import_model(path, layout="blocked", target=target)
    blocked = sum("NCHWc" in gv.name_hint for gv in imported.relax_mod.get_global_vars())
    machine = relax.VirtualMachine(tvm.compile(imported.relax_mod, target), tvm.cpu())
    inputs = random_inputs(imported.inputs)
    ours = machine["main"](*[tvm.runtime.tensor(v) for v in inputs.values()]).numpy()
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    error = float(np.abs(ours - reference).max() / (np.abs(reference).max() + 1e-12))
    verdict = "ok" if ours.shape == reference.shape and error < 1e-4 else "MISMATCH"
    return f"{verdict}: {blocked} blocked function(s), relative error {error:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=32)
    channels = parser.parse_args().channels
    with tempfile.TemporaryDirectory() as folder:
        for name, (nodes, inits, shape, then_conv) in patterns(channels).items():
            try:
                outcome = check(pattern_model(name, channels, nodes, inits, shape, then_conv), Path(folder))
            except Exception as err:  # noqa: BLE001 - the sweep reports every failure and goes on
                outcome = f"ERROR {type(err).__name__}: {str(err).strip().splitlines()[-1][:150]}"
            print(f"{name:40} {outcome}", flush=True)


if __name__ == "__main__":
    main()
