"""Write a segmentation network that none of bcd's benchmark models resembles closely, to check
the tuner on a model it was never tuned on: a three-level U-Net on a 3x128x128 image (two 3x3
convolutions with ReLU per level, 16/32/64 channels, max-pool down), a decoder that goes up once
with a 2x2 stride-2 ConvTranspose and once with a bilinear Resize followed by a 1x1 convolution,
skip connections by Concat, and a 1x1 head with a channel Softmax over 5 classes. Random
weights (tuning does not depend on weight values). None of the shared models has a transposed
convolution, a resize, or a convolution over concatenated features.

    python experiments/make_unseen_unet.py runs/unseen_unet.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from onnx_builder import GraphBuilder

IMAGE, WIDTHS, CLASSES = 128, (16, 32, 64), 5


class Builder(GraphBuilder):
    def conv(self, x: str, c_in: int, c_out: int, kernel: int = 3) -> str:
        w = self.random_weight((c_out, c_in, kernel, kernel), c_in * kernel * kernel)
        return self.op("Conv", [x, w, self.random_weight((c_out,), c_in)], pads=[kernel // 2] * 4)

    def double_conv(self, x: str, c_in: int, c_out: int) -> str:
        h = self.op("Relu", [self.conv(x, c_in, c_out)])
        return self.op("Relu", [self.conv(h, c_out, c_out)])

    def transposed_up(self, x: str, c_in: int, c_out: int) -> str:
        w = self.random_weight((c_in, c_out, 2, 2), c_in * 4)
        return self.op("ConvTranspose", [x, w, self.random_weight((c_out,), c_in)], strides=[2, 2])

    def resized_up(self, x: str, c_in: int, c_out: int) -> str:
        scales = self.constant(np.array([1, 1, 2, 2], np.float32), "scales")
        up = self.op("Resize", [x, "", scales], mode="linear", coordinate_transformation_mode="half_pixel")
        return self.conv(up, c_in, c_out, kernel=1)


def build(path: Path) -> Path:
    b = Builder(seed=11)
    c1, c2, c3 = WIDTHS
    skip1 = b.double_conv("input", 3, c1)
    skip2 = b.double_conv(b.op("MaxPool", [skip1], kernel_shape=[2, 2], strides=[2, 2]), c1, c2)
    bottom = b.double_conv(b.op("MaxPool", [skip2], kernel_shape=[2, 2], strides=[2, 2]), c2, c3)
    up2 = b.op("Concat", [b.transposed_up(bottom, c3, c2), skip2], axis=1)
    dec2 = b.double_conv(up2, 2 * c2, c2)
    up1 = b.op("Concat", [b.resized_up(dec2, c2, c1), skip1], axis=1)
    dec1 = b.double_conv(up1, 2 * c1, c1)
    probs = b.op("Softmax", [b.conv(dec1, c1, CLASSES, kernel=1)], axis=1)
    return b.save(path, "unseen_unet", probs, [1, 3, IMAGE, IMAGE], [1, CLASSES, IMAGE, IMAGE])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_unet.onnx")))
