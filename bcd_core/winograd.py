"""Winograd F(4x4, 3x3) for blocked 3x3 convolutions on CPUs.

A direct 3x3 convolution multiplies 9 times per output and input channel; Winograd's minimal
filtering transforms 6x6 input tiles and the filters so that a batched GEMM of 2.25
multiplications per output and input channel yields 4x4 outputs (Lavin and Gray). Where blocked
direct convolutions already run at the cores' FLOP peak, as onnxruntime's do, fewer
multiplications are what remains to gain. The transformed tiles keep the channels innermost
(TOPI's NHWC arrangement), so every stage vectorizes over contiguous channels, and are gathered
from and written to NCHW[x]c by index arithmetic: no layout transform is added. The filters'
transform is a call of its own on the constant weights, which FoldConstant folds at compile
time. TVM registers no Winograd schedule rules for CPUs, so the two transforms carry rules of
their own here (tile the tiles, unroll the transform, vectorize over a vector of channels; the
tile split is a sampled decision the search and diffusion treat as any other); the GEMM is
MetaSchedule's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm_ffi
from tvm import te, tirx, topi
from tvm.topi.nn.winograd_util import _cook_toom_convolution, _interpolation_points, winograd_transform_matrices

TILE = 4  # outputs per tile side: F(4x4, 3x3), 6x6 input tiles
ALPHA = TILE + 2
# Winograd saves multiplications but moves more data: the transformed input tiles and the GEMM's
# output are 2.25 times the input and output, written and read again. Per tile it saves about
# 216 x C_in x C_out FLOPs for some 288 x (C_in + C_out) extra bytes, about 0.4 C FLOPs a byte
# with C channels in and out. Inside a model those tiles come from memory, not from the caches
# of a task timed alone, and below 64 channels the saving does not pay for the traffic: models
# estimated faster with Winograd ran slower than their direct ones (docs/design.md).
MIN_CHANNELS = 64
# The transformed filters are four times the direct ones (6x6 against 3x3) and the GEMM uses
# each of them once per tile: 2 FLOPs per tile for every 4 bytes, where a direct convolution
# uses each filter value once per output pixel. At batch 1 in a whole model the filters come
# from memory, not the caches of a task timed alone, and below a few dozen tiles (14x14
# outputs have 16) the GEMM waits on them: its tuned time is then not what the model gets
# (docs/design.md, "Convolution layouts").
MIN_TILES = 32
DATA_PACK_RULE, INVERSE_RULE = "bcd_winograd_data_pack", "bcd_winograd_inverse"
PRIMFUNC_NAME = "conv2d_winograd_NCHWc"  # "NCHWc" marks a blocked convolution (layout_choice.py)


def fits(call: Any) -> bool:
    """Whether a blocked conv2d call is one Winograd F(4x4, 3x3) computes and can repay: 3x3,
    stride 1, dilation 1, no groups, float32, at least MIN_CHANNELS channels in and out and
    MIN_TILES tiles of output."""
    attrs, kernel = call.attrs, call.args[1]
    if attrs.groups != 1 or str(call.ty.dtype) != "float32" or len(str(attrs.data_layout)) <= 4:
        return False
    if [int(s) for s in attrs.strides] != [1, 1] or [int(d) for d in attrs.dilation] != [1, 1]:
        return False
    shape = [int(d) for d in kernel.ty.shape]  # [O/o, I/i, KH, KW, i, o]
    in_channels, out_channels = shape[1] * shape[4], shape[0] * shape[5]
    batch, _, out_h, out_w, _ = (int(d) for d in call.ty.shape)
    tiles = batch * -(-out_h // TILE) * -(-out_w // TILE)
    return shape[2:4] == [3, 3] and min(in_channels, out_channels) >= MIN_CHANNELS and tiles >= MIN_TILES


def transformed_weight(kernel: te.Tensor) -> te.Tensor:
    """G w G^T of every (out, in) filter of a blocked kernel [O/o, I/i, 3, 3, i, o], laid out
    (alpha, alpha, in, out): the GEMM's output channels innermost, contiguous for its vectors."""
    out_chunks, in_chunks, _, _, in_block, out_block = (int(d) for d in kernel.shape)
    _, _, g = winograd_transform_matrices(TILE, 3, "float32")
    r_h, r_w = te.reduce_axis((0, 3), "r_h"), te.reduce_axis((0, 3), "r_w")
    return te.compute(
        (ALPHA, ALPHA, in_chunks * in_block, out_chunks * out_block),
        lambda a, b, ci, co: te.sum(
            g[a, r_h] * kernel[co // out_block, ci // in_block, r_h, r_w, ci % in_block, co % out_block] * g[b, r_w],
            axis=[r_h, r_w],
        ),
        name="winograd_weight",
    )


def _transform_matrix(which: int) -> np.ndarray:
    """F(4x4, 3x3)'s output (0: A, 6x4) or input (1: B, 6x6) transform matrix, as TOPI's
    Winograd computes them (Cook-Toom on its interpolation points)."""
    return np.asarray(_cook_toom_convolution(_interpolation_points(ALPHA), TILE, 3)[which], dtype=np.float64)


def _combination(values: list[Any], coefficients: np.ndarray) -> Any:
    """sum(values[k] x coefficients[k]), its nonzero terms only: a zero coefficient drops the
    term and a coefficient of one needs no multiplication."""
    total = None
    for value, coefficient in zip(values, coefficients, strict=True):
        if coefficient == 0.0:
            continue
        term = value if coefficient == 1.0 else value * tirx.const(float(coefficient), "float32")
        total = term if total is None else total + term
    return total if total is not None else tirx.const(0.0, "float32")


def _chosen_by(index: Any, choices: list[Any]) -> Any:
    """choices[index] for a loop index that the schedule unrolls: a Select chain that folds to
    one choice in each unrolled copy."""
    chosen = choices[-1]
    for position in reversed(range(len(choices) - 1)):
        chosen = tirx.Select(index == position, choices[position], chosen)
    return chosen


def input_transform(tiles: te.Tensor) -> te.Tensor:
    """B^T X B for every tile X = tiles[:, :, p, c]: [6, 6, P, C], channels innermost, in two
    passes (B^T X, then (B^T X) B) of six sums of at most five terms each. Each sum is written
    out with its constant coefficients, chosen by the transformed row or column, so that once
    the schedule rule unrolls the loops each copy keeps only its own terms: a reduction over
    the matrix's entries (TOPI's form) leaves the build thousands of Selects on the loop
    indices to fold, and the transform written out whole (36 sums of up to 25 terms) makes
    every feature extraction of the tuner simplify hundreds of terms."""
    _, _, count, channels = (int(d) for d in tiles.shape)
    matrix = _transform_matrix(1)
    size = matrix.shape[1]

    def rows_value(eps: Any, column: Any, p: Any, c: Any) -> Any:
        values = [tiles[tirx.const(r, str(p.ty)), column, p, c] for r in range(size)]
        return _chosen_by(eps, [_combination(values, matrix[:, k]) for k in range(size)])

    rows = te.compute((size, size, count, channels), rows_value, name="data_pack_rows", attrs={"schedule_rule": "None"})

    def value(eps: Any, nu: Any, p: Any, c: Any) -> Any:
        values = [rows[eps, tirx.const(column, str(p.ty)), p, c] for column in range(size)]
        return _chosen_by(nu, [_combination(values, matrix[:, k]) for k in range(size)])

    attrs = {"schedule_rule": DATA_PACK_RULE}
    return te.compute((size, size, count, channels), value, name="data_pack", attrs=attrs)


def _entry(matrix: np.ndarray, row: Any, column: Any) -> Any:
    """matrix[row, column] for loop indices the schedule unrolls: Selects on one index each,
    which the analyzer handles in a few steps where TOPI's `const_matrix` (one Select per
    entry, on both indices modulo the shape) costs every simplification of the tuner's
    feature extraction a chain of dozens of compound conditions."""
    values = [[tirx.const(float(v), "float32") for v in line] for line in matrix]
    return _chosen_by(row, [_chosen_by(column, line) for line in values])


def _is_nonzero(matrix: np.ndarray, row: Any, column: Any) -> Any:
    """Whether matrix[row, column] is nonzero, as a condition on the indices."""
    condition = tirx.const(True, "bool")
    for index, line in enumerate(matrix):
        if np.all(line != 0.0):
            continue
        allowed = [column == k for k in np.flatnonzero(line)]  # tirx.any of one is that one
        outside = row != index
        condition = tirx.all(condition, tirx.any(outside, tirx.any(*allowed)) if allowed else outside)
    return condition


def output_transform(tiles: te.Tensor) -> te.Tensor:
    """A^T X A for every tile X = tiles[:, :, p, c]: [4, 4, P, C], in two passes as the input
    transform. The first (A^T X) is a reduction over X's rows, not written out as the input
    transform is: MetaSchedule's multi-level tiling of the GEMM that X comes from fails on a
    consumer that reads X at constant positions. A term whose coefficient is zero adds -0.0,
    which LLVM drops once the loops are unrolled (x + -0.0 is x in IEEE arithmetic), where
    x * 0.0 must stay (it is NaN for an infinite x)."""
    _, _, count, channels = (int(d) for d in tiles.shape)
    a_matrix = _transform_matrix(0)
    r_a = te.reduce_axis((0, ALPHA), "r_a")

    def term(i: Any, b: Any, p: Any, c: Any) -> Any:
        coefficient = _entry(a_matrix, r_a, i)
        nonzero = _is_nonzero(a_matrix, r_a, i)
        return tirx.Select(nonzero, tiles[r_a, b, p, c] * coefficient, tirx.const(-0.0, "float32"))

    rows = te.compute(
        (TILE, ALPHA, count, channels),
        lambda i, b, p, c: te.sum(term(i, b, p, c), axis=[r_a]),
        name="inverse_rows",
        attrs={"schedule_rule": "None"},
    )

    def value(i: Any, j: Any, p: Any, c: Any) -> Any:
        values = [rows[i, tirx.const(b, str(p.ty)), p, c] for b in range(ALPHA)]
        return _chosen_by(j, [_combination(values, a_matrix[:, k]) for k in range(TILE)])

    return te.compute((TILE, TILE, count, channels), value, name="inverse", attrs={"schedule_rule": INVERSE_RULE})


def conv2d_winograd_nchwc(data: te.Tensor, packed: te.Tensor, padding: list, out_block: int) -> te.Tensor:
    """A 3x3, stride 1 convolution of NCHW[i]c data [N, C/i, H, W, i] with transformed weights
    (`transformed_weight`) into NCHW[o]c, padding (top, left, bottom, right)."""
    batch, _, height, width, in_block = (int(d) for d in data.shape)
    _, _, in_channels, out_channels = (int(d) for d in packed.shape)
    top, left, bottom, right = (int(p) for p in padding)
    out_h, out_w = height + top + bottom - 2, width + left + right - 2
    tiles_h, tiles_w = -(-out_h // TILE), -(-out_w // TILE)
    per_image = tiles_h * tiles_w
    extra_h, extra_w = tiles_h * TILE + 2 - (height + top), tiles_w * TILE + 2 - (width + left)
    padded = topi.nn.pad(data, (0, 0, top, left, 0), (0, 0, extra_h, extra_w, 0), name="data_pad")

    def input_value(eps: Any, nu: Any, p: Any, ci: Any) -> Any:
        row, column = (p % per_image) // tiles_w * TILE + eps, p % tiles_w * TILE + nu
        return padded[p // per_image, ci // in_block, row, column, ci % in_block]

    shape = (ALPHA, ALPHA, batch * per_image, in_channels)
    input_tile = te.compute(shape, input_value, name="input_tile", attrs={"schedule_rule": "None"})
    data_pack = input_transform(input_tile)
    ci = te.reduce_axis((0, in_channels), "ci")
    bgemm = te.compute(
        (ALPHA, ALPHA, batch * per_image, out_channels),
        lambda eps, nu, p, co: te.sum(data_pack[eps, nu, p, ci] * packed[eps, nu, ci, co], axis=[ci]),
        name="bgemm",
    )
    inverse = output_transform(bgemm)
    return te.compute(
        (batch, out_channels // out_block, out_h, out_w, out_block),
        lambda n, c, h, w, b: inverse[
            h % TILE, w % TILE, n * per_image + h // TILE * tiles_w + w // TILE, c * out_block + b
        ],
        name="conv2d_winograd_NCHWc",
        tag="conv2d_winograd_NCHWc",
    )


def _only_producer(sch: Any, block: Any) -> Any:
    producers = sch.get_producers(block)
    if len(producers) != 1:
        raise RuntimeError(f"a Winograd transform reads {len(producers)} tensors, not one")
    return producers[0]


def _vector_lanes(channels: int) -> int:
    return next(lanes for lanes in (16, 8, 4, 2, 1) if channels % lanes == 0)


def _tile_unroll_vectorize(sch: Any, block: Any) -> Any:
    """Loops (i, j, p, c[, r_a, r_b]) of a transform: tile p, unroll the transform's positions
    (and its reduction) and vectorize over a vector of channels innermost (channels are
    contiguous in every tensor the transforms read and write). Returns the loop at which one
    tile's inputs are needed."""
    i, j, tiles, channels, *reduction = sch.get_loops(block)
    tile_outer, tile_inner = sch.split(tiles, sch.sample_perfect_tile(tiles, n=2, max_innermost_factor=16))
    channel_outer, channel_inner = sch.split(channels, [None, _vector_lanes(int(sch.get(channels).extent))])
    sch.reorder(tile_outer, channel_outer, tile_inner, i, j, *reduction, channel_inner)
    for loop in (i, j, *reduction):
        sch.unroll(loop)
    sch.vectorize(channel_inner)
    return tile_inner


def _in_registers(sch: Any, block: Any, tile_loop: Any) -> list[Any]:
    """A transform's first pass computed per tile in a local buffer; returns its loops."""
    sch.compute_at(block, tile_loop, preserve_unit_loops=True)
    sch.set_scope(block, 0, "local")
    return sch.get_loops(block)


def _data_pack_rule(sch: Any, data_pack: Any) -> list[Any]:
    """Each tile's 6x6 inputs for a vector of channels gathered (vectorized) and transformed
    in registers, both passes unrolled."""
    rows = _only_producer(sch, data_pack)
    input_tile = _only_producer(sch, rows)
    data_pad = _only_producer(sch, input_tile)
    tile_loop = _tile_unroll_vectorize(sch, data_pack)
    eps, column, _, channel = _in_registers(sch, rows, tile_loop)[-4:]
    sch.unroll(eps)
    sch.unroll(column)
    sch.vectorize(channel)
    sch.compute_at(input_tile, tile_loop, preserve_unit_loops=True)
    sch.set_scope(input_tile, 0, "local")
    sch.compute_inline(data_pad)
    sch.vectorize(sch.get_loops(input_tile)[-1])
    return [sch]


def _inverse_rule(sch: Any, inverse: Any) -> list[Any]:
    """Both passes unrolled, the first in registers (its coefficients fold once unrolled)."""
    rows = _only_producer(sch, inverse)
    i, b, _, channel, r_a = _in_registers(sch, rows, _tile_unroll_vectorize(sch, inverse))[-5:]
    sch.reorder(i, b, r_a, channel)
    for loop in (i, b, r_a):
        sch.unroll(loop)
    sch.vectorize(channel)
    return [sch]


def register_winograd_rules() -> None:
    """Idempotent: MetaSchedule's ApplyCustomRule finds them by the blocks' annotation."""
    for name, rule in ((DATA_PACK_RULE, _data_pack_rule), (INVERSE_RULE, _inverse_rule)):
        tvm_ffi.register_global_func(f"s_tir.meta_schedule.cpu.{name}", rule, override=True)
