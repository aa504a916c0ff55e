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
from onnx import helper
from onnx_builder import GraphBuilder

# (expansion channels, output channels, kernel, stride)
BLOCKS = [(48, 24, 3, 2), (72, 24, 3, 1), (96, 40, 5, 2), (120, 40, 5, 1), (240, 80, 3, 2), (200, 80, 3, 1)]


class Builder(GraphBuilder):
    def weight(self, shape: tuple[int, ...]) -> str:
        return self.random_weight(shape, int(np.prod(shape[1:])))

    def conv(self, x: str, c_in: int, c_out: int, kernel: int, stride: int = 1, group: int = 1) -> str:
        w = self.weight((c_out, c_in // group, kernel, kernel))
        bias = self.weight((c_out,))
        out = self.name("conv")
        pad = kernel // 2
        self.nodes.append(
            helper.make_node("Conv", [x, w, bias], [out], pads=[pad] * 4, strides=[stride] * 2, group=group)
        )
        return out

    def classifier(self, x: str, channels: int, classes: int) -> str:
        """Global average pool, flatten and a fully connected layer: the logits."""
        flat = self.op("Flatten", [self.op("GlobalAveragePool", [x])])
        return self.op("Gemm", [flat, self.weight((classes, channels))], transB=1)

    def block(self, x: str, c_in: int, expand: int, c_out: int, kernel: int, stride: int) -> str:
        h = self.op("HardSwish", [self.conv(x, c_in, expand, 1)])
        h = self.op("HardSwish", [self.conv(h, expand, expand, kernel, stride, group=expand)])
        h = self.conv(h, expand, c_out, 1)
        return self.op("Add", [x, h]) if stride == 1 and c_in == c_out else h


def build(path: Path) -> Path:
    b = Builder(seed=3)
    x = b.op("HardSwish", [b.conv("input", 3, 16, 3, 2)])
    channels = 16
    for expand, c_out, kernel, stride in BLOCKS:
        x = b.block(x, channels, expand, c_out, kernel, stride)
        channels = c_out
    x = b.op("HardSwish", [b.conv(x, channels, 320, 1)])
    return b.save(path, "unseen_cnn", b.classifier(x, 320, 100), [1, 3, 160, 160], [1, 100])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_cnn.onnx")))
