"""Would Winograd 3x3 convolutions bring a tuned ResNet past onnxruntime on this CPU?

For each 3x3 stride-1 convolution shape of ResNet-18 (with its ReLU), three one-convolution
models: onnxruntime's (MLAS, direct NCHWc), bcd's blocked-layout tune, and Winograd F(4x4, 3x3)
on the same blocked layout (TOPI's NHWC arrangement of the transformed tiles, read from and
written to NCHW[x]c), its weights transformed ahead as FoldConstant would at export, tuned by
MetaSchedule with the same trials per task and this script's schedule rules for the two
transforms (TVM registers none for CPUs). All are checked against onnxruntime and timed in turns
(bcd_core/timing.py); one JSON line a shape. Run it on an idle machine.

    python experiments/winograd_probe.py OUT_DIR [--trials 64] [--shapes 64x56,256x14]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))

from onnx_builder import GraphBuilder  # noqa: E402

from bcd_core.bench import ONNXRUNTIME, measure_in_turns  # noqa: E402
from bcd_core.export import compile_tuned, export_library, library_runner, onnxruntime_runner  # noqa: E402
from bcd_core.layout import vector_block  # noqa: E402
from bcd_core.model_import import fuse_for_tuning  # noqa: E402
from bcd_core.target import host_target  # noqa: E402
from bcd_core.tuned_build import build_tuned  # noqa: E402
from bcd_core.tuning.measure.setup import Measurers  # noqa: E402
from bcd_core.tuning.settings import TuneSettings  # noqa: E402
from bcd_core.tuning.tune import run_session  # noqa: E402

RESNET18_3X3 = ("64x56", "128x28", "256x14", "512x7")
TILE = 4


def conv_model(path: Path, channels: int, size: int) -> tuple[Path, np.ndarray]:
    graph = GraphBuilder(seed=channels)
    weight = (graph.rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(channels * 9)).astype(np.float32)
    conv = graph.op("Conv", ["input", graph.constant(weight)], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    shape = [1, channels, size, size]
    return graph.save(path, "conv", graph.op("Relu", [conv]), shape, shape), weight


def transformed_weight(weight: np.ndarray) -> np.ndarray:
    """G w G^T for every (out, in) pair, laid out (alpha, alpha, in, out): the GEMM's output
    channels innermost, so its vectors load contiguous weights."""
    from tvm.topi.nn.winograd_util import _cook_toom_convolution, _interpolation_points

    _, _, g = _cook_toom_convolution(_interpolation_points(TILE + 2), TILE, 3)
    packed = np.einsum("ak,oikl,bl->abio", g, weight.astype(np.float64), g)
    return packed.astype(np.float32)


def nonzero_term(value: Any, coefficient: Any) -> Any:
    """value x coefficient, or -0.0 where the coefficient is zero. Once the transform's loops are
    unrolled the coefficient is a constant: a zero term then adds -0.0, which LLVM drops (x + -0.0
    is x in IEEE arithmetic), where x * 0.0 must stay (it is NaN for an infinite x). About half of
    F(4x4, 3x3)'s 36 terms per transformed value are zero."""
    from tvm import tirx

    return tirx.Select(coefficient != 0.0, value * coefficient, tirx.const(-0.0, "float32"))


def transform_tiles(tiles: Any, matrix: Any, size: int, name: str) -> Any:
    """M^T X M for every tile X = tiles[:, :, p, c]: [size, size, P, C], channels innermost. The
    block asks for this script's schedule rule of its name."""
    from tvm import te

    alpha, _, count, channels = (int(d) for d in tiles.shape)
    r_a, r_b = te.reduce_axis((0, alpha), "r_a"), te.reduce_axis((0, alpha), "r_b")
    return te.compute(
        (size, size, count, channels),
        lambda i, j, p, c: te.sum(
            nonzero_term(tiles[r_a, r_b, p, c], matrix[r_a, i] * matrix[r_b, j]), axis=[r_a, r_b]
        ),
        name=name,
        attrs={"schedule_rule": f"conv2d_nhwc_winograd_{name}"},
    )


def winograd_nchwc(data: Any, packed: Any) -> Any:
    """ReLU(3x3 convolution, stride 1, padding 1) by Winograd F(4x4, 3x3) on NCHW[x]c data
    [N, C/x, H, W, x] into NCHW[x]c: NHWC's arrangement of the transformed tiles (channels
    innermost in the data pack, the GEMM and the inverse), read from and written to the blocked
    layout by index arithmetic, so no layout transform is added around it."""
    from tvm import te, topi
    from tvm.topi.nn.winograd_util import winograd_transform_matrices

    batch, chunks, height, width, block = (int(d) for d in data.shape)
    alpha, _, in_channels, out_channels = (int(d) for d in packed.shape)
    a_matrix, b_matrix, _ = winograd_transform_matrices(TILE, 3, "float32")
    tiles_h, tiles_w = (height + TILE - 1) // TILE, (width + TILE - 1) // TILE
    tiles = batch * tiles_h * tiles_w
    extra_h, extra_w = tiles_h * TILE + 2 - (height + 2), tiles_w * TILE + 2 - (width + 2)
    padded = topi.nn.pad(data, (0, 0, 1, 1, 0), (0, 0, 1 + extra_h, 1 + extra_w, 0), name="data_pad")

    def tile_origin(p: Any) -> tuple[Any, Any, Any]:
        return p // (tiles_h * tiles_w), (p // tiles_w) % tiles_h * TILE, p % tiles_w * TILE

    input_tile = te.compute(
        (alpha, alpha, tiles, in_channels),
        lambda eps, nu, p, ci: padded[
            tile_origin(p)[0], ci // block, tile_origin(p)[1] + eps, tile_origin(p)[2] + nu, ci % block
        ],
        name="input_tile",
        attrs={"schedule_rule": "None"},
    )
    data_pack = transform_tiles(input_tile, b_matrix, alpha, "data_pack")
    ci = te.reduce_axis((0, in_channels), "ci")
    bgemm = te.compute(
        (alpha, alpha, tiles, out_channels),
        lambda eps, nu, p, co: te.sum(data_pack[eps, nu, p, ci] * packed[eps, nu, ci, co], axis=[ci]),
        name="bgemm",
    )
    inverse = transform_tiles(bgemm, a_matrix, TILE, "inverse")
    return te.compute(
        (batch, out_channels // block, height, width, block),
        lambda n, c, h, w, b: te.max(
            inverse[h % TILE, w % TILE, n * tiles_h * tiles_w + h // TILE * tiles_w + w // TILE, c * block + b],
            te.const(0.0, "float32"),
        ),
        name="conv2d_winograd_relu",
    )


def _inline_producer(sch: Any, block: Any) -> Any:
    """The block's one non-constant producer, after inlining the transform matrices (their
    values are Selects on the loop indices, which fold once the loops are unrolled)."""
    producers = sch.get_producers(block)
    kept = []
    for producer in producers:
        if sch.get(producer).name_hint in ("A", "B", "G"):
            sch.compute_inline(producer)
        else:
            kept.append(producer)
    assert len(kept) == 1, [sch.get(p).name_hint for p in kept]
    return kept[0]


def _vector_lanes(channels: int) -> int:
    return next(lanes for lanes in (16, 8, 4, 2, 1) if channels % lanes == 0)


def _tile_unroll_vectorize(sch: Any, block: Any, unrolled: tuple[int, ...]) -> Any:
    """Loops (i, j, p, c, r_a, r_b) of a transform: tile p, unroll the 6x6 (or 4x4) transform
    and vectorize over a vector of channels innermost (channels are contiguous in every tensor
    the transforms read and write). Returns the loop at which one tile's inputs are needed."""
    loops = sch.get_loops(block)
    tile_outer, tile_inner = sch.split(loops[2], sch.sample_perfect_tile(loops[2], n=2, max_innermost_factor=16))
    lanes = _vector_lanes(int(sch.get(loops[3]).extent))
    channel_outer, channel_inner = sch.split(loops[3], [None, lanes])
    sch.reorder(tile_outer, channel_outer, tile_inner, *(loops[index] for index in unrolled), channel_inner)
    for index in unrolled:
        sch.unroll(loops[index])
    sch.vectorize(channel_inner)
    return tile_inner


def _data_pack_rule(sch: Any, data_pack: Any) -> list[Any]:
    """Loops (eps, nu, p, ci, r_a, r_b); each tile's 6x6 inputs for a vector of channels are
    gathered (vectorized) where they are transformed."""
    input_tile = _inline_producer(sch, data_pack)
    data_pad = _inline_producer(sch, input_tile)
    tile_loop = _tile_unroll_vectorize(sch, data_pack, (0, 1, 4, 5))
    sch.compute_at(input_tile, tile_loop, preserve_unit_loops=True)
    sch.set_scope(input_tile, 0, "local")
    sch.compute_inline(data_pad)
    sch.vectorize(sch.get_loops(input_tile)[-1])
    return [sch]


def _inverse_rule(sch: Any, inverse: Any) -> list[Any]:
    """Loops (vh, vw, p, co, r_a, r_b)."""
    _inline_producer(sch, inverse)
    _tile_unroll_vectorize(sch, inverse, (0, 1, 4, 5))
    return [sch]


def register_winograd_rules() -> None:
    import tvm_ffi

    for name, rule in (("data_pack", _data_pack_rule), ("inverse", _inverse_rule)):
        tvm_ffi.register_global_func(f"s_tir.meta_schedule.cpu.conv2d_nhwc_winograd_{name}", rule, override=True)


def winograd_library(weight: np.ndarray, size: int, trials: int, work: Path) -> Path:
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    channels = weight.shape[0]
    block = vector_block(host_target())
    builder = relax.BlockBuilder()
    data = relax.Var("input", relax.TensorType((1, channels, size, size), "float32"))
    with builder.function("main", [data]):
        with builder.dataflow():
            blocked = builder.emit(
                relax.op.layout_transform(data, index_map=lambda n, c, h, w: (n, c // block, h, w, c % block))
            )
            conv = builder.emit_te(winograd_nchwc, blocked, relax.const(transformed_weight(weight)))
            plain = relax.op.layout_transform(conv, index_map=lambda n, c, h, w, b: (n, c * block + b, h, w))
            out = builder.emit_output(builder.emit(plain))
        builder.emit_func_output(out)
    register_winograd_rules()
    target = host_target()
    mod = builder.get()
    fused = fuse_for_tuning(mod, target)  # the build fuses (and annotates) so before its lookups
    settings = TuneSettings(builder_timeout_s=60)  # unrolled transforms build slower than a convolution
    with Measurers().lent(settings, target) as (measure_builder, measure_runner):
        database = ms.relax_integration.tune_relax(
            fused,
            params={},
            target=target,
            work_dir=str(work),
            max_trials_global=trials * 3,
            max_trials_per_task=trials,
            num_trials_per_iter=16,
            strategy=ms.search_strategy.EvolutionarySearch(
                population_size=settings.population_size, init_min_unmeasured=settings.init_min_unmeasured
            ),
            builder=measure_builder,
            runner=measure_runner,
        )
    executable = build_tuned(database, mod, target)
    assert isinstance(executable, tvm.relax.VMExecutable)
    return export_library(executable, work / "winograd.so")


def direct_library(model: Path, trials: int, work: Path) -> Path:
    settings = TuneSettings(trials_per_task=trials, conv_layout="blocked")
    run = run_session(model, work / "direct.db", host_target(), settings)
    return export_library(compile_tuned(run.database, run.prepared.imported.relax_mod, run.target), work / "direct.so")


def probe_shape(shape: str, trials: int, out: Path, runs: int) -> dict:
    channels, size = (int(part) for part in shape.split("x"))
    work = out / shape
    work.mkdir(parents=True, exist_ok=True)
    model, weight = conv_model(work / "conv.onnx", channels, size)
    inputs = {"input": np.random.default_rng(0).standard_normal((1, channels, size, size)).astype(np.float32)}
    libraries = {
        "direct": direct_library(model, trials, work),
        "winograd": winograd_library(weight, size, trials, work),
    }
    onnx_model = onnx.load(str(model))
    reference = onnxruntime_runner(onnx_model, inputs).outputs
    errors = {
        name: float(np.max(np.abs(library_runner(path, inputs).outputs[0] - reference[0])))
        for name, path in libraries.items()
    }
    times = measure_in_turns(libraries, onnx_model, inputs, runs, host_target())
    gflop = 2 * channels * channels * 9 * size * size / 1e9
    return {
        "shape": shape,
        "trials": trials,
        "ms": times,
        "gflops": {name: gflop / (ms / 1e3) for name, ms in times.items()},
        "max_abs_error": errors,
        "winograd / onnxruntime": times["winograd"] / times[ONNXRUNTIME],
        "direct / onnxruntime": times["direct"] / times[ONNXRUNTIME],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--shapes", default=",".join(RESNET18_3X3))
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        print(json.dumps(probe_shape(shape, args.trials, args.out, args.runs)), flush=True)


if __name__ == "__main__":
    main()
