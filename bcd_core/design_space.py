"""The design space a task is tuned in: MetaSchedule's, plus a register tile for blocked convolutions.

MetaSchedule's multi-level tiling can express NeoCPU's schedule of an NCHW[x]c convolution
(output rows in registers, the channel block as the vector, the input-channel block innermost
of the reduction) but only as one point of a space of millions, which a random first population
and a cost model trained on a few dozen measurements seldom reach within the budgets users run.
`RegisterTiledConvolution` adds that schedule as a sketch of its own beside MetaSchedule's, with
its two free choices sampled (how many output columns and channel blocks stay in registers), so
the evolutionary search, the cost model and diffusion treat it as any other sketch and the
measurements decide between them. The channel blocks are a tile size, which MetaSchedule's
mutator varies; the columns are a choice from a list, which MetaSchedule's mutators leave alone,
so `MutateTileColumns` varies them. Blocks the tile does not fit, and
every task outside the blocked layout, keep exactly MetaSchedule's space.
"""

from __future__ import annotations

import random
from typing import Any

import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.mutator import PyMutator
from tvm.s_tir.meta_schedule.schedule_rule import PyScheduleRule
from tvm.target import Target

# Accumulators a register tile may hold: AVX2 has 16 vector registers, AVX-512 32; a tile of
# columns x channel blocks beyond what fits spills, which the measurements then reject.
# The column counts need not divide the image's width: the last tile of a row is the remainder,
# split off as a loop of its own (MLAS's kernels do the same). With only divisors, a 7-wide row
# offers 1 or 7 columns and a 14-wide one 1, 2, 7 or 14, where 3 or 4 columns of 4 or 2 channel
# blocks fit the registers best; on AVX2 such tiles ran 1.15-1.35x faster than the best divisor
# tile timed beside them at 28x28, 14x14 and 7x7. One list for every task keeps a decision's
# meaning when diffusion or the memory carries it to another task.
TILE_COLUMNS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
# The channel blocks are a perfect tile of the output's block count, so only its divisors up to
# this many are drawn. Each input value loaded feeds one multiply-add per channel block, and with
# one block the tile waits on its loads: 1000 output channels make 125 blocks of 8, whose only
# divisor up to 4 is 1, and a 13x13 1x1 convolution of them ran 2.05 ms at its best one-block
# tile against 1.33 ms with 5 blocks x 2 columns (AVX2; onnxruntime 1.50). Seven blocks of two
# columns, with a weight and an input vector, still fit AVX2's 16 registers; block counts that
# are powers of two (most models' channels) draw from 1, 2 and 4 as before.
MAX_TILE_CHANNEL_BLOCKS = 7
_SPATIAL, _REDUCE = 0, 2


def _iter_types(sch: tvm.s_tir.Schedule, block: Any) -> list[int]:
    return [int(var.iter_type) for var in sch.get(block).iter_vars]


def _fuse_epilogue(sch: tvm.s_tir.Schedule, block: Any, loop: Any) -> None:
    """The fused element-wise tail (bias, activation) computed per register tile, while the
    accumulators are still in registers."""
    consumers = sch.get_consumers(block)
    if len(consumers) == 1:
        sch.reverse_compute_at(consumers[0], loop, preserve_unit_loops=True)


def _pad_before_the_tile(sch: tvm.s_tir.Schedule, block: Any) -> None:
    """The padded input is written whole before the convolution runs, as NeoCPU does, rather than
    at a sampled place inside the tile. Inlined, each of the tile's input reads tests the image's
    border; computed inside the reduction, the padding is redone for every input-channel block.
    Timed at every place for three tiles of a 64-channel 56x56 convolution (AVX2), those places ran
    1.3-50x slower than the padding written first, which came within 12 % of each tile's best
    place: not worth the trials a search spends finding it among a dozen places."""
    for producer in sch.get_producers(block):
        _no_other_rule(sch, producer)


def _no_other_rule(sch: tvm.s_tir.Schedule, block: Any) -> None:
    """MetaSchedule's rules skip a block annotated so (its parallel, vectorize and unroll
    post-processing still apply)."""
    sch.annotate(block, "schedule_rule", "None")


def _split_columns(sch: tvm.s_tir.Schedule, ow: Any) -> tuple[Any, Any]:
    """The row's columns as (tiles, columns in registers), the count sampled from TILE_COLUMNS
    (counts wider than the row are never drawn), the remainder partitioned off so that the full
    tiles run without a bounds test."""
    width = int(sch.get(ow).extent)
    fits = [count <= width for count in TILE_COLUMNS]
    probs = [float(fit) / sum(fits) for fit in fits]
    columns = sch.sample_categorical(candidates=list(TILE_COLUMNS), probs=probs)
    ow_outer, ow_inner = sch.split(ow, [None, columns])
    sch.annotate(ow_outer, "pragma_loop_partition_hint", 1)
    return ow_outer, ow_inner


def tile_conv2d_nchwc(sch: tvm.s_tir.Schedule, block: Any) -> None:
    """n, oc_chunk, oh, ow, oc_block (spatial) x ic, kh, kw (reduction), as TOPI's
    `conv2d_NCHWc` computes it: ic runs over all input channels, block by block."""
    n, oc_chunk, oh, ow, oc_block, ic, kh, kw = sch.get_loops(block)
    ic_block = int(sch.get(block).reads[0].source.shape[-1])
    ow_outer, ow_inner = _split_columns(sch, ow)
    oc_outer, oc_inner = sch.split(
        oc_chunk, sch.sample_perfect_tile(oc_chunk, n=2, max_innermost_factor=MAX_TILE_CHANNEL_BLOCKS)
    )
    ic_outer, ic_inner = sch.split(ic, [None, ic_block])
    sch.reorder(n, oc_outer, oh, ow_outer, ic_outer, kh, kw, ic_inner, oc_inner, ow_inner, oc_block)
    _fuse_epilogue(sch, block, ow_outer)
    _pad_before_the_tile(sch, block)
    # The tile parallelizes its own outer loops (image, channel blocks, rows) rather than leave
    # it to MetaSchedule's parallel annotation, which a serial twin (programs.py) drops: in a
    # ResNet-18 tune such a twin of a 28x28 convolution won, its mutations stayed serial, and
    # the task ended at twice the time of the parallel tiles.
    sch.parallel(sch.fuse(n, oc_outer, oh))
    sch.unroll(ow_inner)
    sch.unroll(oc_inner)
    sch.vectorize(oc_block)
    _no_other_rule(sch, block)


def tile_depthwise_nchwc(sch: tvm.s_tir.Schedule, block: Any) -> None:
    """n, chunk, oh, ow, block (spatial) x kh, kw (reduction)."""
    n, chunk, oh, ow, lanes, kh, kw = sch.get_loops(block)
    ow_outer, ow_inner = _split_columns(sch, ow)
    sch.reorder(n, chunk, oh, ow_outer, kh, kw, ow_inner, lanes)
    _fuse_epilogue(sch, block, ow_outer)
    _pad_before_the_tile(sch, block)
    sch.parallel(sch.fuse(n, chunk, oh))  # as tile_conv2d_nchwc does
    sch.unroll(ow_inner)
    sch.vectorize(lanes)
    _no_other_rule(sch, block)


# block name -> (iteration types it must have, the tile)
TILES = {
    "conv2d_NCHWc": ([_SPATIAL] * 5 + [_REDUCE] * 3, tile_conv2d_nchwc),
    "depthwise_conv2d_NCHWc": ([_SPATIAL] * 5 + [_REDUCE] * 2, tile_depthwise_nchwc),
}


@derived_object
class RegisterTiledConvolution(PyScheduleRule):
    """For a blocked convolution: MetaSchedule's sketch, and the register-tiled one beside it."""

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        pass

    def clone(self) -> RegisterTiledConvolution:
        return RegisterTiledConvolution()

    def apply(self, sch: tvm.s_tir.Schedule, block: Any) -> list[tvm.s_tir.Schedule]:
        fit = TILES.get(sch.get(block).name_hint)
        if fit is None or _iter_types(sch, block) != fit[0]:
            return [sch]
        tiled = sch.copy()
        try:
            fit[1](tiled, block)
        except RuntimeError:  # ScheduleError and TVM's other failures: MetaSchedule's sketch alone
            return [sch]
        return [sch, tiled]


def is_column_choice(inst: tvm.s_tir.Instruction) -> bool:
    """Whether a trace's instruction samples a register tile's column count."""
    return inst.kind.name == "SampleCategorical" and tuple(int(c) for c in inst.attrs[0]) == TILE_COLUMNS


@derived_object
class MutateTileColumns(PyMutator):
    """Another column count for a register tile: MetaSchedule's mutators vary tile sizes, unroll
    depths, compute locations and parallel extents, not a choice from a list, so without this
    the evolution would keep each program's first column count."""

    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def _initialize_with_tune_context(self, context: ms.TuneContext) -> None:
        self._random = random.Random(int(context.rand_state))

    def clone(self) -> MutateTileColumns:
        return MutateTileColumns(self._random.randrange(2**31))

    def apply(self, trace: tvm.s_tir.Trace, _: Any) -> tvm.s_tir.Trace | None:
        choices = [inst for inst in trace.insts if is_column_choice(inst)]
        if not choices:
            return None
        inst = self._random.choice(choices)
        current = int(trace.decisions[inst])
        others = [i for i, prob in enumerate(inst.attrs[1]) if float(prob) > 0 and i != current]
        if not others:
            return None
        return trace.with_decision(inst, self._random.choice(others), remove_postproc=True)


def _has_register_tile(mod: tvm.IRModule) -> bool:
    sch = tvm.s_tir.Schedule(mod)
    for name in TILES:
        try:
            sch.get_sblock(name)
            return True
        except (RuntimeError, ValueError):  # no block of that name
            continue
    return False


def space_generator(mod: tvm.IRModule, target: Target) -> ms.space_generator.PostOrderApply:
    """MetaSchedule's post-order space for `target` with the register tile after inlining (the
    epilogue it fuses is then one block) and before multi-level tiling. A task the tile may fit
    also mutates its column counts, as often as MetaSchedule mutates tile sizes."""
    default = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply").space_generator
    rules = list(default.sch_rules)
    after_inlining = next((i + 1 for i, rule in enumerate(rules) if isinstance(rule, ms.schedule_rule.AutoInline)), 0)
    rules.insert(after_inlining, RegisterTiledConvolution())
    mutators = dict(default.mutator_probs)
    if _has_register_tile(mod):
        tile_sizes = next((prob for m, prob in mutators.items() if isinstance(m, ms.mutator.MutateTileSize)), 0.9)
        mutators[MutateTileColumns()] = float(tile_sizes)
    return ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=list(default.postprocs), mutator_probs=mutators)


def is_register_tiled(trace: tvm.s_tir.Trace) -> bool:
    """Whether a program (its trace) comes from the register-tiled sketch."""
    return any(inst.kind.name == "Annotate" and str(inst.attrs[0]) == "schedule_rule" for inst in trace.insts)
