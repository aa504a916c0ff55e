"""Blocked data layouts for convolutions on CPUs (NCHW[x]c, as NeoCPU and onnxruntime's MLAS use).

MetaSchedule's design space for an NCHW convolution cannot vectorize over output channels with
contiguous loads: the channel is the outermost data axis. In NCHW[x]c the innermost axis holds
x channels, x the target's vector width in float32 lanes (8 with AVX2, 16 with AVX-512), so
every inner product is a vector operation on contiguous memory. Relax's `ConvertLayout` rewrites
each convolution in the widest block (x, or a half or quarter of it) its channel counts allow
(NCHW where none does) and keeps the element-wise, pooling and concatenation operators between
them blocked (clip as a minimum of a maximum, which ConvertLayout keeps blocked), so layout
transforms remain only where the graph leaves the blocked layout; the weights' transforms act on
constants and are folded at compile time (packed weights). Relax's default legalization refuses
blocked convolutions, so `blocked_conv2d` lowers them to TOPI's `conv2d_NCHWc` and
`depthwise_conv2d_NCHWc`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

import tvm
import tvm_ffi
from tvm import relax, te, topi
from tvm.relax.transform.legalize_ops.nn import _nn_conv2d
from tvm.target import Target

from bcd_core.channel_padding import pad_last_convolutions
from bcd_core.layout_fallback import convert_keeping_plain_where_needed, convolution_weights, is_kept_plain
from bcd_core.tvm_speedups import shared_constant_builds
from bcd_core.winograd import PRIMFUNC_NAME as WINOGRAD_PRIMFUNC
from bcd_core.winograd import conv2d_winograd_nchwc, transformed_weight
from bcd_core.winograd import fits as winograd_fits


class LayoutMode(StrEnum):
    PLAIN = "nchw"  # the model's own layout
    BLOCKED = "blocked"  # convolutions in NCHW[x]c, x the target's float32 vector width
    WINOGRAD = "winograd"  # blocked, and 3x3 stride-1 convolutions by Winograd (winograd.py)


def is_blocked(layout: str) -> bool:
    """Whether convolutions of `layout` run in NCHW[x]c."""
    return layout in (LayoutMode.BLOCKED, LayoutMode.WINOGRAD)


def vector_block(target: Target) -> int:
    """Float32 lanes of the target's widest vector registers: the channel block of NCHW[x]c."""
    has = tvm.target.codegen.target_has_features
    if has("avx512f", target):
        return 16
    if has("avx2", target) or has("avx", target):
        return 8
    return 4


def layout_block(target: Target, layout: str) -> int:
    """The channel block `layout` runs convolutions in on `target`, as a layout choice records
    it: 0 for NCHW."""
    return vector_block(target) if is_blocked(layout) else 0


def blocked_layout_name(target: Target) -> str:
    block = vector_block(target)
    return f"NCHW{block}c"


def blocked_conv2d(bb: relax.BlockBuilder, call: relax.Call, winograd: bool = False) -> relax.Expr:
    """Legalize a conv2d: blocked ones through TOPI's NCHWc computes (or Winograd, where asked
    and the convolution fits it), the rest as Relax does."""
    attrs = call.attrs
    if len(attrs.data_layout) == 4:
        return _nn_conv2d(bb, call)
    data, kernel = call.args
    out_dtype = str(call.ty.dtype)
    if winograd and winograd_fits(call):
        packed = bb.emit(bb.call_te(transformed_weight, kernel, primfunc_name_hint="winograd_weight"))
        out_block = int(call.ty.shape[-1])
        return bb.call_te(
            conv2d_winograd_nchwc, data, packed, attrs.padding, out_block, primfunc_name_hint=WINOGRAD_PRIMFUNC
        )
    if attrs.groups > 1:
        return bb.call_te(
            depthwise_nchwc,
            data,
            kernel,
            attrs.strides,
            attrs.padding,
            attrs.dilation,
            out_dtype,
            primfunc_name_hint="depthwise_conv2d_NCHWc",
        )
    return bb.call_te(
        topi.nn.conv2d_NCHWc, data, kernel, *conv2d_nchwc_arguments(call), primfunc_name_hint="conv2d_NCHWc"
    )


def conv2d_nchwc_arguments(call: relax.Call) -> tuple:
    """What `topi.nn.conv2d_NCHWc` takes after data and kernel, from a blocked conv2d call."""
    attrs = call.attrs
    return (attrs.strides, attrs.padding, attrs.dilation, attrs.data_layout, attrs.out_layout, str(call.ty.dtype))


def depthwise_nchwc(
    data: te.Tensor, kernel: te.Tensor, strides: list, padding: list, dilation: list, out_dtype: str
) -> te.Tensor:
    """A depthwise convolution (channel multiplier 1) in NCHW[x]c: data [N, C/x, H, W, x],
    kernel [C/x, 1, KH, KW, 1, x]. TOPI declares this compute but registers no CPU one."""
    batch, chunks, height, width, block = data.shape
    _, _, kernel_h, kernel_w, _, _ = kernel.shape
    stride_h, stride_w = (int(s) for s in strides)
    dilation_h, dilation_w = (int(d) for d in dilation)
    top, left, bottom, right = (int(p) for p in padding)
    padded = topi.nn.pad(data, [0, 0, top, left, 0], [0, 0, bottom, right, 0], name="data_pad")
    out_h = (height + top + bottom - (kernel_h - 1) * dilation_h - 1) // stride_h + 1
    out_w = (width + left + right - (kernel_w - 1) * dilation_w - 1) // stride_w + 1
    rh = te.reduce_axis((0, kernel_h), name="rh")
    rw = te.reduce_axis((0, kernel_w), name="rw")
    return te.compute(
        (batch, chunks, out_h, out_w, block),
        lambda n, c, h, w, b: te.sum(
            padded[n, c, h * stride_h + rh * dilation_h, w * stride_w + rw * dilation_w, b].astype(out_dtype)
            * kernel[c, 0, rh, rw, 0, b].astype(out_dtype),
            axis=[rh, rw],
        ),
        name="depthwise_conv2d_NCHWc",
        tag="depthwise_conv2d_NCHWc",
    )


@relax.expr_functor.mutator
class ClipAsMinMax(relax.PyExprMutator):
    """`clip(x, lo, hi)` as `minimum(maximum(x, lo), hi)`, and the ONNX importer's TE calls of
    `maximum` or `minimum` with a constant scalar (its Clip with bounds as inputs, MobileNetV2's
    ReLU6) as those operators: ConvertLayout has no layout rule for either, so every ReLU6 or
    hard-swish would leave the blocked layout and come back, and the activation would not fuse
    into its convolution, while the binary element-wise operators stay blocked."""

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = self.visit_expr_post_order(call)
        if getattr(call.op, "name", "") == "relax.call_tir":
            operator = _scalar_clamp_as_operator(call)
            return call if operator is None else operator
        if getattr(call.op, "name", "") != "relax.clip":
            return call
        data, low, high = call.args
        dtype = str(data.ty.dtype)
        floor = relax.op.maximum(data, relax.const(_number(low), dtype))
        return relax.op.minimum(self.builder_.normalize(floor), relax.const(_number(high), dtype))


CLAMPS = {"maximum": relax.op.maximum, "minimum": relax.op.minimum}


def _scalar_clamp_as_operator(call: relax.Call) -> relax.Expr | None:
    """`call_tir(maximum, (x, c))` as `maximum(x, c)` when c is a constant scalar (TOPI names
    the PrimFuncs of its `maximum` and `minimum` computes so)."""
    operator = CLAMPS.get(call.args[0].name_hint.rstrip("0123456789"))
    arguments = call.args[1]
    if operator is None or not isinstance(arguments, relax.Tuple) or len(arguments.fields) != 2:
        return None
    data, bound = arguments.fields
    if not isinstance(bound, tvm.ir.expr.Constant) or bound.ty.ndim != 0:
        return None
    return operator(data, bound)


@relax.expr_functor.mutator
class ConcatIntoConsumer(relax.PyExprMutator):
    """A blocked convolution or max pool that reads a channel concatenation computes the
    concatenation itself: the tuned kernel reads each part where it lies (MetaSchedule inlines
    the concatenation into the consumer's loads) instead of the model copying every part into a
    new tensor first, a pass over memory per concatenation (SqueezeNet's fire modules, Inception
    and DenseNet blocks). A concatenation that other operators also read stays for them."""

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = self.visit_expr_post_order(call)
        name = getattr(call.op, "name", "")
        if name not in ("relax.nn.conv2d", "relax.nn.max_pool2d") or not _is_blocked(call):
            return call
        parts = self._concatenated_parts(call.args[0])
        if parts is None or (name == "relax.nn.conv2d" and call.attrs.groups > 1):
            return call
        if name == "relax.nn.max_pool2d":
            return self.builder_.call_te(_max_pool_of_concat, parts, call.attrs, primfunc_name_hint="concat_max_pool2d")
        arguments = conv2d_nchwc_arguments(call)
        return self.builder_.call_te(
            _conv2d_of_concat, parts, call.args[1], *arguments, primfunc_name_hint="concat_conv2d_NCHWc"
        )

    def _concatenated_parts(self, data: relax.Expr) -> list[relax.Expr] | None:
        bound = self.lookup_binding(data) if isinstance(data, relax.Var) else None
        if not isinstance(bound, relax.Call) or getattr(bound.op, "name", "") != "relax.concat":
            return None
        if int(bound.attrs.axis) != 1:
            return None
        parts = bound.args[0]
        if isinstance(parts, relax.Var):
            parts = self.lookup_binding(parts)
        return list(parts.fields) if isinstance(parts, relax.Tuple) else None


def _is_blocked(call: relax.Call) -> bool:
    if hasattr(call.attrs, "data_layout"):
        return len(str(call.attrs.data_layout)) > 4
    return len(str(call.attrs.layout)) > 4 and call.attrs.out_layout == call.attrs.layout


def _conv2d_of_concat(parts: list[te.Tensor], kernel: te.Tensor, *args: object) -> te.Tensor:
    return topi.nn.conv2d_NCHWc(topi.concatenate(parts, axis=1), kernel, *args)


def _max_pool_of_concat(parts: list[te.Tensor], attrs: object) -> te.Tensor:
    return topi.nn.pool2d(
        topi.concatenate(parts, axis=1),
        kernel=attrs.pool_size,
        stride=attrs.strides,
        dilation=attrs.dilation,
        padding=attrs.padding,
        pool_type="max",
        ceil_mode=attrs.ceil_mode,
        layout=attrs.layout,
    )


def _number(bound: relax.PrimValue) -> float:
    value = bound.value
    return float(getattr(value, "value", value))


def clip_as_min_max(mod: tvm.IRModule) -> tvm.IRModule:
    return _rewrite(mod, ClipAsMinMax(mod))


def concat_into_consumers(mod: tvm.IRModule) -> tvm.IRModule:
    return relax.transform.DeadCodeElimination()(_rewrite(mod, ConcatIntoConsumer(mod)))


def _rewrite(mod: tvm.IRModule, rewriter: relax.PyExprMutator) -> tvm.IRModule:
    for gvar, func in mod.functions_items():
        if isinstance(func, relax.Function):
            rewriter.builder_.update_func(gvar, rewriter.visit_expr(func))
    return rewriter.builder_.get()


MIN_BLOCK = 4  # narrower channel blocks vectorize worse than NCHW's own design space


def channel_block(channels: int, block: int) -> int | None:
    """The widest block, at most `block` and halving down to MIN_BLOCK, that divides `channels`:
    a layer of 72 channels on AVX-512 (16 lanes) runs in blocks of 8, unless it is a network's
    last convolution, which channel_padding.py pads to the whole block first."""
    while block >= MIN_BLOCK:
        if channels % block == 0:
            return block
        block //= 2
    return None


# Operators whose layout inference cannot take a blocked input (a transposed convolution's
# fails on NCHW16c: "Layouts must have the same size"): ConvertLayout is asked for their own
# layouts, so their input leaves the blocked layout before them, rather than the whole model
# staying in NCHW because one upsampling layer could not convert.
KEEP_OWN_LAYOUT = ("relax.nn.conv2d_transpose",)


def conv2d_layouts(call: relax.Call, block: int) -> list[str]:
    """Data, weight and output layouts of one convolution. Every convolution is named one,
    NCHW where no block fits: without a desired layout ConvertLayout would pass a blocked input
    straight to it, which it cannot do."""
    plain = ["NCHW", "OIHW", "NCHW"]
    channels = int(call.args[0].ty.shape[1])
    outputs = int(call.args[1].ty.shape[0])
    out_block = channel_block(outputs, block)
    if call.attrs.groups > 1:
        if call.attrs.groups != channels or outputs != channels or out_block is None:
            return plain  # a grouped convolution, a channel multiplier, or ragged channels
        return [f"NCHW{out_block}c", f"OIHW1i{out_block}o", f"NCHW{out_block}c"]
    in_block = channel_block(channels, block) or (channels if channels < block else None)
    if out_block is None or in_block is None:  # a stem's 3 channels are one block of 3
        return plain
    return [f"NCHW{in_block}c", f"OIHW{in_block}i{out_block}o", f"NCHW{out_block}c"]


@dataclass(frozen=True)
class BlockedModule:
    """A module converted to the blocked layout, and how many of its convolutions stay NCHW
    because TVM cannot carry their blocked output (layout_fallback.py): a user is told."""

    mod: tvm.IRModule
    kept_nchw: int


def convert_to_blocked(
    mod: tvm.IRModule, target: Target, before_legalizing: Callable[[tvm.IRModule], tvm.IRModule] | None = None
) -> tvm.IRModule:
    """`mod` (as imported) with its convolutions in NCHW[x]c for `target`, legalized
    (`blocked_conversion`'s module)."""
    return blocked_conversion(mod, target, before_legalizing).mod


def blocked_conversion(
    mod: tvm.IRModule,
    target: Target,
    before_legalizing: Callable[[tvm.IRModule], tvm.IRModule] | None = None,
    winograd: bool = False,
) -> BlockedModule:
    """`mod` (as imported) with its convolutions in NCHW[x]c for `target`, legalized: both
    task extraction and `compile_relax` then see the same module. `before_legalizing` rewrites
    the converted module first (the fast-math approximations: ConvertLayout knows Relax's
    operators, not their TE rewrites, and would leave the blocked layout around each). Where
    TVM cannot carry a blocked tensor through an operator, the convolutions that reach it stay
    NCHW (layout_fallback.py). With `winograd`, the 3x3 stride-1 convolutions Winograd fits
    (winograd.py) are lowered to it."""
    block = vector_block(target)
    with target, shared_constant_builds():
        mod = relax.transform.FoldConstant()(mod)  # clip bounds the importer computes from constants
    mod = clip_as_min_max(pad_last_convolutions(mod, block))

    def convert(plain: list[relax.Expr]) -> tvm.IRModule:
        return _converted(mod, target, block, plain, before_legalizing, winograd)

    key = (tvm_ffi.structural_hash(mod), str(target), getattr(before_legalizing, "__qualname__", None), winograd)
    converted, plain = convert_keeping_plain_where_needed(convolution_weights(mod), convert, key)
    return BlockedModule(converted, len(plain))


def _converted(
    mod: tvm.IRModule,
    target: Target,
    block: int,
    plain: list[relax.Expr],
    before_legalizing: Callable[[tvm.IRModule], tvm.IRModule] | None,
    winograd: bool,
) -> tvm.IRModule:
    """`mod` converted and legalized with the convolutions whose weights are in `plain` NCHW."""

    def layouts(call: relax.Call) -> dict[str, list[str]]:
        name = getattr(call.op, "name", "")
        if name == "relax.nn.conv2d":
            return {name: ["NCHW", "OIHW", "NCHW"] if is_kept_plain(call, plain) else conv2d_layouts(call, block)}
        if name in KEEP_OWN_LAYOUT:
            return {name: [str(call.attrs.data_layout), str(call.attrs.kernel_layout), str(call.attrs.out_layout)]}
        return {}

    mod = relax.transform.ConvertLayout({}, layouts)(mod)
    mod = relax.transform.EliminateCommonSubexpr()(relax.transform.Normalize()(mod))
    with target:
        mod = concat_into_consumers(mod)
        if before_legalizing is not None:
            mod = before_legalizing(mod)
        legalize = partial(blocked_conv2d, winograd=winograd)
        return relax.transform.LegalizeOps({"relax.nn.conv2d": legalize})(mod)
