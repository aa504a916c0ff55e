"""Write an EfficientNet-style CNN of more than 50 tuning tasks, to check the tuner at small
budgets on a model it was never tuned on: MBConv blocks (1x1 expand, 3x3 or 5x5 depthwise,
squeeze-and-excitation, 1x1 project, residual add where shapes allow) with swish (x * sigmoid(x))
activations, on a 128x128 input, random weights (tuning does not depend on weight values).

    python experiments/make_unseen_effnet.py runs/unseen_effnet.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_unseen_cnn import Builder as CnnBuilder

# (expansion factor, output channels, kernel, stride, repeats): EfficientNet-B0's stages, narrower.
STAGES = [(1, 16, 3, 1, 1), (6, 24, 3, 2, 2), (6, 40, 5, 2, 2), (6, 80, 3, 2, 3), (6, 112, 5, 1, 2), (6, 192, 5, 2, 2)]
SE_RATIO = 0.25


class Builder(CnnBuilder):
    """make_unseen_cnn.py's convolutions, with swish and squeeze-and-excitation."""

    def swish(self, x: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def squeeze_excite(self, x: str, channels: int, squeezed: int) -> str:
        s = self.op("GlobalAveragePool", [x])
        s = self.swish(self.conv(s, channels, squeezed, 1))
        s = self.op("Sigmoid", [self.conv(s, squeezed, channels, 1)])
        return self.op("Mul", [x, s])

    def block(self, x: str, c_in: int, expand: int, c_out: int, kernel: int, stride: int) -> str:
        mid = c_in * expand
        h = self.swish(self.conv(x, c_in, mid, 1)) if expand != 1 else x
        h = self.swish(self.conv(h, mid, mid, kernel, stride, group=mid))
        h = self.squeeze_excite(h, mid, max(1, int(c_in * SE_RATIO)))
        h = self.conv(h, mid, c_out, 1)
        return self.op("Add", [x, h]) if stride == 1 and c_in == c_out else h


def build(path: Path) -> Path:
    b = Builder(seed=5)
    x = b.swish(b.conv("input", 3, 32, 3, 2))
    channels = 32
    for expand, c_out, kernel, stride, repeats in STAGES:
        for index in range(repeats):
            x = b.block(x, channels, expand, c_out, kernel, stride if index == 0 else 1)
            channels = c_out
    x = b.swish(b.conv(x, channels, 640, 1))
    return b.save(path, "unseen_effnet", b.classifier(x, 640, 100), [1, 3, 128, 128], [1, 100])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_effnet.onnx")))
