"""Write a CNN that none of bcd's benchmark models resembles closely, to check the tuner on a
model it was never tuned on: MobileNetV3-style inverted residual blocks (1x1 expand, 3x3 or
5x5 depthwise, hard-swish, 1x1 project, residual add where shapes allow) on a 160x160 input,
random weights (tuning does not depend on weight values).

    python experiments/make_unseen_cnn.py runs/unseen_cnn.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (expansion channels, output channels, kernel, stride)
BLOCKS = [(48, 24, 3, 2), (72, 24, 3, 1), (96, 40, 5, 2), (120, 40, 5, 1), (240, 80, 3, 2), (200, 80, 3, 1)]


class Builder:
    def __init__(self, seed: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def weight(self, shape: tuple[int, ...]) -> str:
        name = self.name("w")
        fan_in = int(np.prod(shape[1:]))
        data = (self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def conv(self, x: str, c_in: int, c_out: int, kernel: int, stride: int = 1, group: int = 1) -> str:
        w = self.weight((c_out, c_in // group, kernel, kernel))
        bias = self.weight((c_out,))
        out = self.name("conv")
        pad = kernel // 2
        self.nodes.append(
            helper.make_node("Conv", [x, w, bias], [out], pads=[pad] * 4, strides=[stride] * 2, group=group)
        )
        return out

    def op(self, kind: str, inputs: list[str]) -> str:
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out]))
        return out

    def block(self, x: str, c_in: int, expand: int, c_out: int, kernel: int, stride: int) -> str:
        h = self.op("HardSwish", [self.conv(x, c_in, expand, 1)])
        h = self.op("HardSwish", [self.conv(h, expand, expand, kernel, stride, group=expand)])
        h = self.conv(h, expand, c_out, 1)
        return self.op("Add", [x, h]) if stride == 1 and c_in == c_out else h


def build(path: Path) -> Path:
    b = Builder()
    x = b.op("HardSwish", [b.conv("input", 3, 16, 3, 2)])
    channels = 16
    for expand, c_out, kernel, stride in BLOCKS:
        x = b.block(x, channels, expand, c_out, kernel, stride)
        channels = c_out
    x = b.op("HardSwish", [b.conv(x, channels, 320, 1)])
    pooled = b.op("GlobalAveragePool", [x])
    flat = b.op("Flatten", [pooled])
    logits = b.op("Gemm", [flat, b.weight((100, 320))])
    b.nodes[-1].attribute.append(helper.make_attribute("transB", 1))
    b.nodes.append(helper.make_node("Identity", [logits], ["output"]))
    graph = helper.make_graph(
        b.nodes,
        "unseen_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 160, 160])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 100])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_cnn.onnx")))
