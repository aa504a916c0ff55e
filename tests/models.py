"""Tiny ONNX models generated on the fly (seeded), so tests need no downloads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# The sample the README's first command tunes (tests import it from here, not from a conftest:
# pytest may have another directory's conftest loaded under that name).
SAMPLE_MODEL = Path(__file__).resolve().parent.parent / "resources" / "models" / "mlp_mnist.onnx"


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _weight(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)


def mlp(path: Path, sizes: tuple[int, ...] = (16, 32, 24, 8), batch: int = 1, dynamic: bool = False) -> Path:
    """Dense layers: MatMul + Add (+ Relu between layers)."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    current = "x"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        inits += [_weight(rng, f"w{i}", (n_in, n_out)), _weight(rng, f"b{i}", (n_out,))]
        nodes += [
            helper.make_node("MatMul", [current, f"w{i}"], [f"mm{i}"]),
            helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"h{i}"]),
        ]
        current = f"h{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [current], [f"r{i}"]))
            current = f"r{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    first = "N" if dynamic else batch
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [first, sizes[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [first, sizes[-1]])],
        inits,
    )
    return _save(graph, path)


def _conv_relu_layers(rng: np.random.Generator, channels: tuple[int, ...]) -> tuple[list, list, str]:
    """3x3 Conv (padding 1) + Relu per channel step, from input "x"; returns the last output name."""
    nodes, inits = [], []
    current = "x"
    for i, (c_in, c_out) in enumerate(zip(channels, channels[1:])):
        inits += [_weight(rng, f"w{i}", (c_out, c_in, 3, 3)), _weight(rng, f"b{i}", (c_out,))]
        nodes += [
            helper.make_node("Conv", [current, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"]),
        ]
        current = f"r{i}"
    return nodes, inits, current


def convnet(path: Path, channels: tuple[int, ...] = (3, 8, 16), size: int = 12) -> Path:
    """Conv + Relu layers with different channel counts (one operator cluster)."""
    nodes, inits, current = _conv_relu_layers(np.random.default_rng(1), channels)
    return _save(_conv_graph("convnet", nodes, inits, current, channels, size), path)


def _conv_graph(name: str, nodes: list, inits: list, current: str, channels: tuple[int, ...], size: int):
    """The graph of same-size convolution layers from input "x" to output "y" (`current`)."""
    nodes = [*nodes, helper.make_node("Identity", [current], ["y"])]
    return helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels[0], size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels[-1], size, size])],
        inits,
    )


def conv_dense(path: Path, channels: int = 6, size: int = 10, outputs: int = 64) -> Path:
    """A 3x3 Conv + Relu, then a dense layer with more work: the convolution is a light task
    alone in its cluster."""
    rng = np.random.default_rng(3)
    nodes, inits, current = _conv_relu_layers(rng, (3, channels))
    features = channels * size * size
    inits += [
        _weight(rng, "wd", (features, outputs)),
        _weight(rng, "bd", (outputs,)),
        numpy_helper.from_array(np.array([1, features], dtype=np.int64), "flat"),
    ]
    nodes += [
        helper.make_node("Reshape", [current, "flat"], ["f"]),
        helper.make_node("MatMul", ["f", "wd"], ["m"]),
        helper.make_node("Add", ["m", "bd"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, outputs])],
        inits,
    )
    return _save(graph, path)


def unsupported_op(path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("FrobnicateTensor", ["h"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return _save(graph, path)


def convnet_pool(path: Path, channels: tuple[int, ...] = (3, 8, 12, 16), size: int = 10) -> Path:
    """Three conv layers of different widths (one cluster) and a global average pool."""
    nodes, inits, current = _conv_relu_layers(np.random.default_rng(2), channels)
    nodes.append(helper.make_node("GlobalAveragePool", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "convnet_pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels[0], size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels[-1], 1, 1])],
        inits,
    )
    return _save(graph, path)


def max_pool(path: Path, channels: int = 4, size: int = 8) -> Path:
    """One MaxPool: TVM annotates its block with a schedule rule no release registers."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph(
        [node],
        "max_pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, size // 2, size // 2])],
    )
    return _save(graph, path)


def embedding(path: Path, vocabulary: int = 50000, width: int = 16, tokens: int = 8) -> Path:
    """Token ids (int64) -> Gather from a large table -> MatMul: BERT's first layer in small.
    Random ids would read far outside the table."""
    rng = np.random.default_rng(0)
    inits = [_weight(rng, "table", (vocabulary, width)), _weight(rng, "w", (width, 4))]
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["vectors"], axis=0),
        helper.make_node("MatMul", ["vectors", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "embedding",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, tokens])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, tokens, 4])],
        inits,
    )
    return _save(graph, path)


def gelu_softmax(path: Path, tokens: int = 8, width: int = 16, hidden: int = 32) -> Path:
    """A transformer block in small: MatMul + Add + GELU (exact, with Erf) + MatMul + Softmax."""
    rng = np.random.default_rng(0)
    inits = [
        _weight(rng, "w1", (width, hidden)),
        _weight(rng, "b1", (hidden,)),
        _weight(rng, "w2", (hidden, width)),
        numpy_helper.from_array(np.array(2.0**-0.5, dtype=np.float32), "inv_sqrt2"),
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["mm1"]),
        helper.make_node("Add", ["mm1", "b1"], ["h"]),
        helper.make_node("Mul", ["h", "inv_sqrt2"], ["scaled"]),
        helper.make_node("Erf", ["scaled"], ["erf"]),
        helper.make_node("Add", ["erf", "one"], ["erf1"]),
        helper.make_node("Mul", ["h", "erf1"], ["gated"]),
        helper.make_node("Mul", ["gated", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["mm2"]),
        helper.make_node("Softmax", ["mm2"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "gelu_softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, tokens, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, tokens, width])],
        inits,
    )
    return _save(graph, path)


def conv_swish(path: Path, channels: tuple[int, ...] = (3, 16, 32), size: int = 10) -> Path:
    """3x3 convolutions, each followed by a swish (x * Sigmoid(x)), as EfficientNet's blocks."""
    relu_layers, inits, current = _conv_relu_layers(np.random.default_rng(2), channels)
    nodes = []
    for node in relu_layers:  # each Relu becomes a swish: the convolution gated by its own sigmoid
        if node.op_type != "Relu":
            nodes.append(node)
            continue
        conv, out = node.input[0], node.output[0]
        nodes += [
            helper.make_node("Sigmoid", [conv], [f"{out}_gate"]),
            helper.make_node("Mul", [conv, f"{out}_gate"], [out]),
        ]
    return _save(_conv_graph("conv_swish", nodes, inits, current, channels, size), path)


def swish_gate(path: Path, width: int = 32, spread: float = 12.0) -> Path:
    """MatMul + Add + swish (x * Sigmoid(x)) + a Sigmoid gate, on activations scaled to reach
    well past where sigmoid saturates both ways."""
    rng = np.random.default_rng(0)
    inits = [
        _weight(rng, "w", (width, width)),
        _weight(rng, "b", (width,)),
        numpy_helper.from_array(np.array(spread, dtype=np.float32), "spread"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["h0"]),
        helper.make_node("Mul", ["h0", "spread"], ["h"]),
        helper.make_node("Sigmoid", ["h"], ["s"]),
        helper.make_node("Mul", ["h", "s"], ["swish"]),
        helper.make_node("Sigmoid", ["swish"], ["gate"]),
        helper.make_node("Mul", ["h", "gate"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "swish_gate",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, width])],
        inits,
    )
    return _save(graph, path)


def float16_mlp(path: Path, width: int = 256, depth: int = 3) -> Path:
    """Float16 matmuls wide enough that TVM's float16 accumulation and onnxruntime's float32 one
    end more than 1e-3 apart in the outputs (whose largest values are about 10-30)."""
    rng = np.random.default_rng(0)
    nodes, inits, current = [], [], "x"
    for i in range(depth):
        weight = rng.standard_normal((width, width)) * 2 / np.sqrt(width)
        inits.append(numpy_helper.from_array(weight.astype(np.float16), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"h{i}"]))
        current = f"h{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "float16_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, width])],
        inits,
    )
    return _save(graph, path)


def mobile_block_cnn(path: Path, width: int = 16, size: int = 12) -> Path:
    """A small CNN with what a CPU CNN holds between its convolutions: a 3-channel stem, a
    depthwise 3x3 with a hard-swish and a pointwise 1x1 convolution, a residual add, a max pool,
    a concatenation of two branches and a global average pool; channel counts are multiples of 16."""
    rng = np.random.default_rng(5)
    inits = [
        _weight(rng, "w_stem", (width, 3, 3, 3)),
        _weight(rng, "b_stem", (width,)),
        _weight(rng, "w_dw", (width, 1, 3, 3)),
        _weight(rng, "w_pw", (width, width, 1, 1)),
        _weight(rng, "w_a", (width, width, 3, 3)),
        _weight(rng, "w_b", (width, width, 1, 1)),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(6.0, np.float32), "six"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w_stem", "b_stem"], ["stem"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem"], ["s"]),
        helper.make_node("Conv", ["s", "w_dw"], ["dw"], pads=[1, 1, 1, 1], group=width),
        helper.make_node("HardSwish", ["dw"], ["d"]),  # a clip, which ConvertLayout has no rule for
        helper.make_node("Conv", ["d", "w_pw"], ["pw"]),
        helper.make_node("Clip", ["pw", "zero", "six"], ["pw6"]),  # the importer's TE maximum and minimum
        helper.make_node("Add", ["pw6", "s"], ["res"]),
        helper.make_node("MaxPool", ["res"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w_a"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "w_b"], ["b"]),
        helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
        helper.make_node("Relu", ["cat"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mobile_block_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * width, 1, 1])],
        inits,
    )
    return _save(graph, path)


def ragged_cnn(path: Path, size: int = 10) -> Path:
    """A CNN whose channel counts a 16-lane block does not divide (24 and 40, and 10 classes
    that no block of 4 or more divides), as real models have (1000 classes, 72 or 120 channels)."""
    rng = np.random.default_rng(7)
    inits = [
        _weight(rng, "w_stem", (24, 3, 3, 3)),
        _weight(rng, "w_dw", (24, 1, 3, 3)),
        _weight(rng, "w_pw", (40, 24, 1, 1)),
        _weight(rng, "b_pw", (40,)),
        _weight(rng, "w_head", (10, 40, 1, 1)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w_stem"], ["stem"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem"], ["s"]),
        helper.make_node("Conv", ["s", "w_dw"], ["dw"], pads=[1, 1, 1, 1], group=24),
        helper.make_node("Conv", ["dw", "w_pw", "b_pw"], ["pw"]),
        helper.make_node("Relu", ["pw"], ["p"]),
        helper.make_node("Conv", ["p", "w_head"], ["head"]),
        helper.make_node("GlobalAveragePool", ["head"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ragged_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    return _save(graph, path)


def wide_head_cnn(path: Path, channels: int = 72, size: int = 6, features_out: bool = False) -> Path:
    """A CNN whose three convolutions have 72 output channels, which blocks of 8 divide and
    blocks of 16 do not; the last (with a bias, as a classifier's) feeds no other convolution.
    `features_out`: its activation is a second output of the graph, beside the pooled one."""
    rng = np.random.default_rng(11)
    inits = [
        _weight(rng, "w_stem", (channels, 3, 3, 3)),
        _weight(rng, "w_mid", (channels, channels, 1, 1)),
        _weight(rng, "w_head", (channels, channels, 1, 1)),
        _weight(rng, "b_head", (channels,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w_stem"], ["stem"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem"], ["s"]),
        helper.make_node("Conv", ["s", "w_mid"], ["mid"]),
        helper.make_node("Relu", ["mid"], ["m"]),
        helper.make_node("Conv", ["m", "w_head", "b_head"], ["head"]),
        helper.make_node("Relu", ["head"], ["h"]),
        helper.make_node("GlobalAveragePool", ["h"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "wide_head_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels])]
        + ([helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, channels, size, size])] if features_out else []),
        inits,
    )
    return _save(graph, path)


def fire_cnn(path: Path, width: int = 16, size: int = 10) -> Path:
    """SqueezeNet's fire module twice: two expand convolutions concatenated, the first
    concatenation read by a convolution, the second by a max pool."""
    rng = np.random.default_rng(9)
    inits = [_weight(rng, "w_stem", (width, 3, 3, 3))]
    nodes = [helper.make_node("Conv", ["x", "w_stem"], ["h0"], pads=[1, 1, 1, 1])]
    for fire in (1, 2):
        inputs = width if fire == 1 else 2 * width
        inits += [
            _weight(rng, f"w_sq{fire}", (width, inputs, 1, 1)),
            _weight(rng, f"w_e1_{fire}", (width, width, 1, 1)),
            _weight(rng, f"w_e3_{fire}", (width, width, 3, 3)),
        ]
        nodes += [
            helper.make_node("Conv", [f"h{fire - 1}", f"w_sq{fire}"], [f"sq{fire}"]),
            helper.make_node("Relu", [f"sq{fire}"], [f"s{fire}"]),
            helper.make_node("Conv", [f"s{fire}", f"w_e1_{fire}"], [f"e1_{fire}"]),
            helper.make_node("Conv", [f"s{fire}", f"w_e3_{fire}"], [f"e3_{fire}"], pads=[1, 1, 1, 1]),
            helper.make_node("Concat", [f"e1_{fire}", f"e3_{fire}"], [f"h{fire}"], axis=1),
        ]
    nodes.append(helper.make_node("MaxPool", ["h2"], ["y"], kernel_shape=[2, 2], strides=[2, 2]))
    graph = helper.make_graph(
        nodes,
        "fire_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * width, size // 2, size // 2])],
        inits,
    )
    return _save(graph, path)


def upsampling_cnn(path: Path, width: int = 16, size: int = 8) -> Path:
    """A U-Net's decoder step: a convolution, a transposed convolution that doubles the size,
    and a convolution after it."""
    rng = np.random.default_rng(13)
    inits = [
        _weight(rng, "w_enc", (width, 3, 3, 3)),
        _weight(rng, "w_up", (width, width, 2, 2)),  # ConvTranspose weights: in, out, kh, kw
        _weight(rng, "w_dec", (width, width, 3, 3)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w_enc"], ["enc"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["enc"], ["e"]),
        helper.make_node("ConvTranspose", ["e", "w_up"], ["up"], strides=[2, 2]),
        helper.make_node("Conv", ["up", "w_dec"], ["y"], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "upsampling_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width, 2 * size, 2 * size])],
        inits,
    )
    return _save(graph, path)


def channel_mean_cnn(path: Path, width: int = 16, size: int = 8) -> Path:
    """A spatial attention between two convolutions: the first's activation scaled by the
    sigmoid of its mean over the channels (a reduction TVM cannot take in a blocked layout)."""
    rng = np.random.default_rng(17)
    inits = [_weight(rng, "w_first", (width, 3, 3, 3)), _weight(rng, "w_second", (width, width, 3, 3))]
    nodes = [
        helper.make_node("Conv", ["x", "w_first"], ["first"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["first"], ["f"]),
        helper.make_node("ReduceMean", ["f"], ["mean"], axes=[1], keepdims=1),
        helper.make_node("Sigmoid", ["mean"], ["attention"]),
        helper.make_node("Mul", ["f", "attention"], ["attended"]),
        helper.make_node("Conv", ["attended", "w_second"], ["y"], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "channel_mean_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width, size, size])],
        inits,
    )
    return _save(graph, path)
