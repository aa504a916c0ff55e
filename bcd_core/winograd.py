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
MIN_CHANNELS = 16  # below this, a GEMM over the channels is too short to repay the transforms
DATA_PACK_RULE, INVERSE_RULE = "bcd_winograd_data_pack", "bcd_winograd_inverse"
PRIMFUNC_NAME = "conv2d_winograd_NCHWc"  # "NCHWc" marks a blocked convolution (layout_choice.py)


def fits(call: Any) -> bool:
    """Whether a blocked conv2d call is one Winograd F(4x4, 3x3) computes: 3x3, stride 1,
    dilation 1, no groups, float32, at least MIN_CHANNELS channels in and out."""
    attrs = call.attrs
    data, kernel = call.args
    if attrs.groups != 1 or str(call.ty.dtype) != "float32" or len(str(attrs.data_layout)) <= 4:
        return False
    if [int(s) for s in attrs.strides] != [1, 1] or [int(d) for d in attrs.dilation] != [1, 1]:
        return False
    shape = [int(d) for d in kernel.ty.shape]  # [O/o, I/i, KH, KW, i, o]
    in_channels, out_channels = shape[1] * shape[4], shape[0] * shape[5]
    return shape[2:4] == [3, 3] and min(in_channels, out_channels) >= MIN_CHANNELS


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


def _input_matrix() -> np.ndarray:
    """F(4x4, 3x3)'s input transform matrix B (6x6), as TOPI's Winograd computes it (Cook-Toom
    on its interpolation points)."""
    _, b_matrix, _ = _cook_toom_convolution(_interpolation_points(ALPHA), TILE, 3)
    return np.asarray(b_matrix, dtype=np.float64)


def _transformed(tiles: te.Tensor, matrix: np.ndarray, row: int, column: int, p: Any, c: Any) -> Any:
    """(M^T X M)[row, column] of the tile X = tiles[:, :, p, c], its nonzero terms written out:
    about half of F(4x4, 3x3)'s 36 terms per transformed value are zero, and a coefficient of
    one needs no multiplication."""
    total = None
    for a in range(matrix.shape[0]):
        for b in range(matrix.shape[0]):
            coefficient = float(matrix[a, row] * matrix[b, column])
            if coefficient == 0.0:
                continue
            value = tiles[tirx.const(a, str(p.ty)), tirx.const(b, str(p.ty)), p, c]  # index types alike
            term = value if coefficient == 1.0 else value * tirx.const(coefficient, "float32")
            total = term if total is None else total + term
    return total if total is not None else tirx.const(0.0, "float32")


def input_transform(tiles: te.Tensor) -> te.Tensor:
    """B^T X B for every tile X = tiles[:, :, p, c]: [6, 6, P, C], channels innermost. Each of
    the 6x6 values is its own expression, chosen by the value's position: once the schedule rule
    unrolls those two loops, each copy keeps only its own sum of constant-coefficient terms,
    where a reduction over the matrix entries (TOPI's form) leaves the build thousands of
    Select chains on the loop indices to fold."""
    _, _, count, channels = (int(d) for d in tiles.shape)
    matrix = _input_matrix()
    size = matrix.shape[1]

    def value(i: Any, j: Any, p: Any, c: Any) -> Any:
        chosen = _transformed(tiles, matrix, size - 1, size - 1, p, c)
        for row in reversed(range(size)):
            for column in reversed(range(size)):
                if (row, column) != (size - 1, size - 1):
                    here = tirx.all(i == row, j == column)
                    chosen = tirx.Select(here, _transformed(tiles, matrix, row, column, p, c), chosen)
        return chosen

    attrs = {"schedule_rule": DATA_PACK_RULE}
    return te.compute((size, size, count, channels), value, name="data_pack", attrs=attrs)


def nonzero_term(value: Any, coefficient: Any) -> Any:
    """value x coefficient, or -0.0 where the coefficient is zero: once the loops are unrolled
    the coefficient is a constant, and a zero term then adds -0.0, which LLVM drops (x + -0.0 is
    x in IEEE arithmetic), where x * 0.0 must stay (it is NaN for an infinite x)."""
    return tirx.Select(coefficient != 0.0, value * coefficient, tirx.const(-0.0, "float32"))


def output_transform(tiles: te.Tensor) -> te.Tensor:
    """A^T X A for every tile X = tiles[:, :, p, c]: [4, 4, P, C], as a reduction over X's 6x6
    values. Not written out as the input transform is: MetaSchedule's multi-level tiling of the
    GEMM that X comes from fails on a consumer that reads X at constant positions."""
    _, _, count, channels = (int(d) for d in tiles.shape)
    a_matrix, _, _ = winograd_transform_matrices(TILE, 3, "float32")
    r_a, r_b = te.reduce_axis((0, ALPHA), "r_a"), te.reduce_axis((0, ALPHA), "r_b")

    def term(i: Any, j: Any, p: Any, c: Any) -> Any:
        return nonzero_term(tiles[r_a, r_b, p, c], a_matrix[r_a, i] * a_matrix[r_b, j])

    return te.compute(
        (TILE, TILE, count, channels),
        lambda i, j, p, c: te.sum(term(i, j, p, c), axis=[r_a, r_b]),
        name="inverse",
        attrs={"schedule_rule": INVERSE_RULE},
    )


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


def _data_pack_rule(sch: Any, data_pack: Any) -> list[Any]:
    """Each tile's 6x6 inputs for a vector of channels gathered (vectorized) where transformed."""
    input_tile = _only_producer(sch, data_pack)
    data_pad = _only_producer(sch, input_tile)
    tile_loop = _tile_unroll_vectorize(sch, data_pack)
    sch.compute_at(input_tile, tile_loop, preserve_unit_loops=True)
    sch.set_scope(input_tile, 0, "local")
    sch.compute_inline(data_pad)
    sch.vectorize(sch.get_loops(input_tile)[-1])
    return [sch]


def _inverse_rule(sch: Any, inverse: Any) -> list[Any]:
    """A inlined (its Selects on the loop indices fold once the loops are unrolled)."""
    for producer in sch.get_producers(inverse):
        if sch.get(producer).name_hint == "A":
            sch.compute_inline(producer)
    _tile_unroll_vectorize(sch, inverse)
    return [sch]


def register_winograd_rules() -> None:
    """Idempotent: MetaSchedule's ApplyCustomRule finds them by the blocks' annotation."""
    for name, rule in ((DATA_PACK_RULE, _data_pack_rule), (INVERSE_RULE, _inverse_rule)):
        tvm_ffi.register_global_func(f"s_tir.meta_schedule.cpu.{name}", rule, override=True)
