"""Write a bottleneck ResNet that none of bcd's benchmark models resembles closely (ResNet-18 has
basic blocks, SqueezeNet fire modules): a 7x7 stride-2 stem and a 3x3 max pool, then stages of
1x1 reduce, 3x3, 1x1 expand blocks with projected shortcuts where the shape changes, on a
128x128 input, random weights (tuning does not depend on weight values).

    python experiments/make_unseen_resnet.py runs/unseen_resnet.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from onnx import helper
from onnx_builder import GraphBuilder

# (bottleneck width, output channels, blocks, stride of the first block)
STAGES = [(32, 128, 2, 1), (48, 192, 2, 2), (96, 384, 2, 2), (160, 640, 1, 2)]


class Builder(GraphBuilder):
    def weight(self, shape: tuple[int, ...]) -> str:
        return self.random_weight(shape, int(np.prod(shape[1:])))

    def conv(self, x: str, c_in: int, c_out: int, kernel: int, stride: int = 1, relu: bool = True) -> str:
        out = self.name("conv")
        inputs = [x, self.weight((c_out, c_in, kernel, kernel)), self.weight((c_out,))]
        pads = [kernel // 2] * 4
        self.nodes.append(helper.make_node("Conv", inputs, [out], pads=pads, strides=[stride] * 2))
        return self.op("Relu", [out]) if relu else out

    def bottleneck(self, x: str, c_in: int, width: int, c_out: int, stride: int) -> str:
        h = self.conv(x, c_in, width, 1)
        h = self.conv(h, width, width, 3, stride)
        h = self.conv(h, width, c_out, 1, relu=False)
        shortcut = x if stride == 1 and c_in == c_out else self.conv(x, c_in, c_out, 1, stride, relu=False)
        return self.op("Relu", [self.op("Add", [h, shortcut])])


def build(path: Path) -> Path:
    b = Builder(seed=5)
    x = b.conv("input", 3, 48, 7, 2)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 48
    for width, c_out, blocks, stride in STAGES:
        for index in range(blocks):
            x = b.bottleneck(x, channels, width, c_out, stride if index == 0 else 1)
            channels = c_out
    pooled = b.op("GlobalAveragePool", [x])
    flat = b.op("Flatten", [pooled])
    logits = b.op("Gemm", [flat, b.weight((100, channels))], transB=1)
    return b.save(path, "unseen_resnet", logits, [1, 3, 128, 128], [1, 100])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_resnet.onnx")))
