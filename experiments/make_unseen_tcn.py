"""Write a keyword-spotting network that none of bcd's benchmark models resembles closely, to
check the tuner on a model it was never tuned on: a temporal convolution network over 40 mel
bands and 400 frames (a 1-D input of 1x40x400), a stride-2 1-D stem convolution to 64 channels,
four residual blocks of two dilated 1-D convolutions (kernel 3, dilation 1, 2, 4 and 8, ReLU),
mean pooling over time and a 12-way classifier. Random weights (tuning does not depend on
weight values). None of the shared models has a 1-D or a dilated convolution.

    python experiments/make_unseen_tcn.py runs/unseen_tcn.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

from onnx_builder import GraphBuilder

BANDS, FRAMES, WIDTH, DILATIONS, CLASSES = 40, 400, 64, (1, 2, 4, 8), 12


class Builder(GraphBuilder):
    def conv1d(self, x: str, c_in: int, c_out: int, kernel: int, dilation: int = 1, stride: int = 1) -> str:
        w = self.random_weight((c_out, c_in, kernel), c_in * kernel)
        pad = dilation * (kernel - 1) // 2
        return self.op(
            "Conv", [x, w, self.random_weight((c_out,), c_in)], pads=[pad, pad], dilations=[dilation], strides=[stride]
        )

    def residual_block(self, x: str, dilation: int) -> str:
        h = self.op("Relu", [self.conv1d(x, WIDTH, WIDTH, 3, dilation)])
        h = self.conv1d(h, WIDTH, WIDTH, 3, dilation)
        return self.op("Relu", [self.op("Add", [x, h])])


def build(path: Path) -> Path:
    b = Builder(seed=13)
    x = b.op("Relu", [b.conv1d("input", BANDS, WIDTH, 5, stride=2)])
    for dilation in DILATIONS:
        x = b.residual_block(x, dilation)
    pooled = b.op("ReduceMean", [x], axes=[2], keepdims=0)
    weight, bias = b.random_weight((CLASSES, WIDTH), WIDTH), b.random_weight((CLASSES,), WIDTH)
    logits = b.op("Gemm", [pooled, weight, bias], transB=1)
    return b.save(path, "unseen_tcn", logits, [1, BANDS, FRAMES], [1, CLASSES])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_tcn.onnx")))
