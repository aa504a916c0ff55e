"""Output channels of a network's last convolutions padded to a whole vector block.

A classifier's 1000 channels on AVX-512 (16 float32 lanes) are divisible by 8, not 16, so
`layout.channel_block` gives that convolution blocks of 8 and it runs on half-width vectors,
though it is often a model's largest kernel (SqueezeNet's). onnxruntime's MLAS pads such channels
to its block instead. Here the weight, a constant, gets zero filters up to the next multiple of
the block, and the operators after the convolution that act on each channel alone (a bias, an
activation, a spatial pooling) run on the padded channels too, their per-channel constants
padded alike; a slice after the last of them drops the extra channels, where the tensor is
smallest (after a global pooling, one value a channel). Only convolutions whose result no later
convolution reads are padded: in the middle of a network the slice would take the following
layers out of the blocked layout and back in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax


def pad_last_convolutions(mod: tvm.IRModule, block: int) -> tvm.IRModule:
    """`mod` with every padded convolution (see the module's docstring) rewritten."""
    for gvar, func in mod.functions_items():
        if not isinstance(func, relax.Function):
            continue
        heads = [head for dataflow in _dataflow_blocks(func) for head in _heads_to_pad(dataflow, block)]
        if heads:
            mutator = PadOutputChannels(mod, heads, block)
            mutator.builder_.update_func(gvar, mutator.visit_expr(func))
            mod = mutator.builder_.get()
    return mod


FEWEST_BLOCKS = 4  # from four blocks on, the padding adds under a quarter of the work (65 -> 80)


def padded_channels(channels: int, block: int) -> int | None:
    """Output channels to pad a convolution's `channels` to, or None where it needs no padding
    (a whole number of blocks) or the padding would be much of the work (a 10-class head)."""
    if channels % block == 0 or channels < FEWEST_BLOCKS * block:
        return None
    return -(-channels // block) * block


def _dataflow_blocks(func: relax.Function) -> list[relax.DataflowBlock]:
    body = func.body
    blocks = body.blocks if isinstance(body, relax.SeqExpr) else []
    return [b for b in blocks if isinstance(b, relax.DataflowBlock)]


UNARY = {"relax.nn.relu", "relax.sigmoid", "relax.tanh", "relax.clip", "relax.nn.silu", "relax.nn.gelu", "relax.exp"}
BINARY_FILL = {"relax.add": 0.0, "relax.subtract": 0.0, "relax.multiply": 0.0, "relax.divide": 1.0}
BINARY_FILL |= {"relax.maximum": 0.0, "relax.minimum": 0.0}
SPATIAL = {"relax.mean", "relax.max", "relax.sum"}  # reductions, over height and width only
POOLS = {"relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d"}


@dataclass(frozen=True)
class Head:
    """A convolution to pad (members[0]) and the per-channel operators after it, in order."""

    members: list[relax.Var]
    channels: int


def _heads_to_pad(dataflow: relax.DataflowBlock, block: int) -> list[Head]:
    """The block's plain convolutions of constant weights whose channels `padded_channels` pads
    and whose result reaches no other convolution inside the block, with their chains."""
    uses = relax.analysis.udchain(dataflow)
    values = {binding.var: binding.value for binding in dataflow.bindings}
    heads = []
    for var, value in values.items():
        if _paddable(value, block) and not _reaches_convolution(var, uses, values):
            channels = int(value.args[1].value.shape[0])
            heads.append(Head([var, *_channel_chain(var, uses, values, channels)], channels))
    return heads


def _channel_chain(var: relax.Var, uses: dict, values: dict, channels: int) -> list[relax.Var]:
    """The operators after `var`, each its predecessor's only user, that act on each channel alone."""
    chain = []
    while isinstance(var, relax.DataflowVar) and len(uses.get(var, [])) == 1:  # a block's output ends it
        user = uses[var][0]
        if not _acts_per_channel(values.get(user), var, channels):
            break
        chain.append(user)
        var = user
    return chain


def _acts_per_channel(value: relax.Expr | None, data: relax.Var, channels: int) -> bool:
    if not isinstance(value, relax.Call) or not value.args or not value.args[0].same_as(data):
        return False
    name = getattr(value.op, "name", "")
    if name in UNARY:
        return True
    if name in BINARY_FILL:
        return len(value.args) == 2 and _per_channel_constant(value.args[1], channels)
    if name in SPATIAL:  # keeping the dimensions keeps the channels where the constants expect them
        axes = value.attrs.axis
        return axes is not None and value.attrs.keepdims and {int(a) % 4 for a in axes} <= {2, 3}
    return name in POOLS and value.attrs.layout == "NCHW" and value.attrs.out_layout == "NCHW"


def _per_channel_constant(expr: relax.Expr, channels: int) -> bool:
    """A constant that broadcasts over an NCHW tensor as one value, or one value a channel."""
    if not isinstance(expr, tvm.ir.expr.Constant):
        return False
    shape = tuple(int(d) for d in expr.value.shape)
    return all(d == 1 for d in shape) or shape in ((1, channels, 1, 1), (channels, 1, 1))


def _is_conv2d(value: relax.Expr | None) -> bool:
    return isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.nn.conv2d"


def _paddable(value: relax.Expr, block: int) -> bool:
    if not _is_conv2d(value):
        return False
    attrs = value.attrs
    weight = value.args[1]
    plain = (attrs.data_layout, attrs.kernel_layout, attrs.out_layout) == ("NCHW", "OIHW", "NCHW")
    if not plain or attrs.groups != 1 or not isinstance(weight, tvm.ir.expr.Constant):
        return False
    return padded_channels(int(weight.value.shape[0]), block) is not None


def _reaches_convolution(start: relax.Var, uses: dict, values: dict) -> bool:
    seen, pending = set(), [start]
    while pending:
        for user in uses.get(pending.pop(), []):
            if user in seen:
                continue
            if _is_conv2d(values.get(user)):
                return True
            seen.add(user)
            pending.append(user)
    return False


def _widened(array: np.ndarray, axis: int, wide: int, fill: float) -> relax.Expr:
    """`array` as a constant, its `axis` extended to `wide` entries of `fill`."""
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, wide - array.shape[axis])
    return relax.const(np.pad(array, widths, constant_values=fill), str(array.dtype))


def _padded_constant(constant: relax.Expr, wide: int, fill: float) -> relax.Expr:
    """A per-channel constant with channels of `fill` up to `wide` (a scalar as is)."""
    array = constant.value.numpy()
    if array.ndim < 3 or array.shape[-3] == 1:
        return constant
    return _widened(array, array.ndim - 3, wide, fill)


@relax.expr_functor.mutator
class PadOutputChannels(relax.PyExprMutator):
    """Rewrites each head's convolution with zero-padded weights and its chain on the padded
    channels, and binds the chain's last variable to a slice of the original channels."""

    def __init__(self, mod: tvm.IRModule, heads: list[Head], block: int) -> None:
        super().__init__(mod)
        self.heads = heads
        self.block = block
        self.widened: dict[tuple[int, int], relax.Var] = {}  # (head, member) -> its padded variable

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        found = [
            (h, i)
            for h, head in enumerate(self.heads)
            for i, var in enumerate(head.members)
            if var.same_as(binding.var)
        ]
        if not found:
            super().visit_var_binding_(binding)
            return
        number, index = found[0]
        head = self.heads[number]
        wide = padded_channels(head.channels, self.block)
        if index == 0:
            value = self._wide_convolution(binding.value, wide)
        else:
            value = self._wide_operator(binding.value, self.widened[number, index - 1], wide)
        self.widened[number, index] = self.builder_.emit(value)
        if index == len(head.members) - 1:
            sliced = relax.op.strided_slice(self.widened[number, index], axes=[1], begin=[0], end=[head.channels])
            self.builder_.emit_normalized(relax.VarBinding(binding.var, self.builder_.normalize(sliced)))

    def _wide_convolution(self, call: relax.Call, wide: int) -> relax.Expr:
        attrs = call.attrs
        return relax.op.nn.conv2d(
            self.visit_expr(call.args[0]),
            _widened(call.args[1].value.numpy(), 0, wide, 0.0),  # zero filters
            attrs.strides,
            attrs.padding,
            attrs.dilation,
            attrs.groups,
            out_dtype=attrs.out_dtype,
        )

    def _wide_operator(self, call: relax.Call, data: relax.Var, wide: int) -> relax.Expr:
        fill = BINARY_FILL.get(call.op.name, 0.0)
        rest = [_padded_constant(a, wide, fill) if isinstance(a, tvm.ir.expr.Constant) else a for a in call.args[1:]]
        return relax.Call(call.op, [data, *rest], call.attrs, call.ty_args)
