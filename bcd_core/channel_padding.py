"""Output channels of a network's last convolutions padded to a whole vector block.

A classifier's 1000 channels on AVX-512 (16 float32 lanes) are divisible by 8, not 16, so
`layout.channel_block` gives that convolution blocks of 8 and it runs on half-width vectors,
though it is often a model's largest kernel (SqueezeNet's). onnxruntime's MLAS pads such channels
to its block instead. Here the weight, a constant, gets zero filters up to the next multiple of
the block and a slice after the convolution drops them again: the convolution runs in the full
block and the slice, with the element-wise operators after it, in NCHW, one small fused kernel.
Only convolutions whose result no later convolution reads are padded: in the middle of a network
the slice would take the following layers out of the blocked layout and back in.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax


def pad_last_convolutions(mod: tvm.IRModule, block: int) -> tvm.IRModule:
    """`mod` with every padded convolution (see the module's docstring) rewritten."""
    for gvar, func in mod.functions_items():
        if not isinstance(func, relax.Function):
            continue
        padded = [call for block_ in _dataflow_blocks(func) for call in _convolutions_to_pad(block_, block)]
        if padded:
            mutator = PadOutputChannels(mod, padded, block)
            mutator.builder_.update_func(gvar, mutator.visit_expr(func))
            mod = mutator.builder_.get()
    return mod


FEWEST_BLOCKS = 4  # padding below four blocks' channels would add over a fifth of the work


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


def _convolutions_to_pad(dataflow: relax.DataflowBlock, block: int) -> list[relax.Call]:
    """The block's plain convolutions of constant weights whose channels `padded_channels` pads
    and whose result reaches no other convolution inside the block."""
    uses = relax.analysis.udchain(dataflow)
    values = {binding.var: binding.value for binding in dataflow.bindings}
    return [
        value
        for var, value in values.items()
        if _paddable(value, block) and not _reaches_convolution(var, uses, values)
    ]


def _is_conv2d(value: relax.Expr) -> bool:
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


@relax.expr_functor.mutator
class PadOutputChannels(relax.PyExprMutator):
    """Rewrites the given conv2d calls as a conv2d of zero-padded weights and a channel slice."""

    def __init__(self, mod: tvm.IRModule, calls: list[relax.Call], block: int) -> None:
        super().__init__(mod)
        self.calls = calls
        self.block = block

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        chosen = any(call.same_as(c) for c in self.calls)
        call = self.visit_expr_post_order(call)
        if not chosen:
            return call
        data, weight = call.args
        kernel = weight.value.numpy()
        channels = kernel.shape[0]
        extra = np.zeros((padded_channels(channels, self.block) - channels, *kernel.shape[1:]), kernel.dtype)
        attrs = call.attrs
        wide = relax.op.nn.conv2d(
            data,
            relax.const(np.concatenate([kernel, extra]), str(kernel.dtype)),
            attrs.strides,
            attrs.padding,
            attrs.dilation,
            attrs.groups,
            out_dtype=attrs.out_dtype,
        )
        return relax.op.strided_slice(self.builder_.emit(wide), axes=[1], begin=[0], end=[channels])
