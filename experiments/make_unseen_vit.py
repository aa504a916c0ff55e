"""Write a vision transformer that none of bcd's benchmark models resembles closely, to check
the tuner on a model it was never tuned on: a 16x16 patch embedding (a strided convolution) of
a 3x128x128 image into 64 tokens of width 192, four pre-norm encoder layers (3 heads of 64,
ONNX LayerNormalization, softmax attention, a GELU feed-forward of 576 written with Erf), mean
pooling over the tokens and a 100-way classifier. Random weights (tuning does not depend on
weight values). Widths, token count and feed-forward ratio differ from the shared transformers
(256 or 128 wide, 4x feed-forward, 128 tokens).

    python experiments/make_unseen_vit.py runs/unseen_vit.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from onnx_builder import GraphBuilder

IMAGE, PATCH, WIDTH, HEADS, HIDDEN, LAYERS, CLASSES = 128, 16, 192, 3, 576, 4, 100
TOKENS = (IMAGE // PATCH) ** 2


class Builder(GraphBuilder):
    def weight(self, shape: tuple[int, ...]) -> str:
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
        return self.random_weight(shape, fan_in, stem="c")

    def dense(self, x: str, n_in: int, n_out: int) -> str:
        return self.op("Add", [self.op("MatMul", [x, self.weight((n_in, n_out))]), self.weight((n_out,))])

    def layer_norm(self, x: str) -> str:
        scale, bias = np.ones(WIDTH, np.float32), np.zeros(WIDTH, np.float32)
        return self.op("LayerNormalization", [x, self.constant(scale), self.constant(bias)], axis=-1)

    def heads(self, x: str) -> str:
        """[1, T, W] -> [1, H, T, W/H]"""
        shape = self.constant(np.array([1, TOKENS, HEADS, WIDTH // HEADS], np.int64))
        return self.op("Transpose", [self.op("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def attention(self, x: str) -> str:
        q, k, v = (self.heads(self.dense(x, WIDTH, WIDTH)) for _ in range(3))
        scores = self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scale = self.constant(np.array(1.0 / np.sqrt(WIDTH // HEADS), np.float32))
        weights = self.op("Softmax", [self.op("Mul", [scores, scale])], axis=-1)
        merged = self.op("Transpose", [self.op("MatMul", [weights, v])], perm=[0, 2, 1, 3])
        merged = self.op("Reshape", [merged, self.constant(np.array([1, TOKENS, WIDTH], np.int64))])
        return self.dense(merged, WIDTH, WIDTH)

    def gelu(self, x: str) -> str:
        half, root = self.constant(np.array(0.5, np.float32)), self.constant(np.array(np.sqrt(2.0), np.float32))
        erf = self.op("Erf", [self.op("Div", [x, root])])
        one = self.constant(np.array(1.0, np.float32))
        return self.op("Mul", [self.op("Mul", [x, half]), self.op("Add", [erf, one])])

    def encoder(self, x: str) -> str:
        x = self.op("Add", [x, self.attention(self.layer_norm(x))])
        h = self.dense(self.gelu(self.dense(self.layer_norm(x), WIDTH, HIDDEN)), HIDDEN, WIDTH)
        return self.op("Add", [x, h])


def build(path: Path) -> Path:
    b = Builder(seed=5)
    w = b.constant((b.rng.standard_normal((WIDTH, 3, PATCH, PATCH)) / np.sqrt(3 * PATCH * PATCH)).astype(np.float32))
    patches = b.op("Conv", ["input", w, b.weight((WIDTH,))], strides=[PATCH, PATCH])
    tokens = b.op("Reshape", [patches, b.constant(np.array([1, WIDTH, TOKENS], np.int64))])
    x = b.op("Add", [b.op("Transpose", [tokens], perm=[0, 2, 1]), b.weight((1, TOKENS, WIDTH))])
    for _ in range(LAYERS):
        x = b.encoder(x)
    pooled = b.op("ReduceMean", [b.layer_norm(x)], axes=[1], keepdims=0)
    logits = b.dense(pooled, WIDTH, CLASSES)
    return b.save(path, "unseen_vit", logits, [1, 3, IMAGE, IMAGE], [1, CLASSES])


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/unseen_vit.onnx")))
