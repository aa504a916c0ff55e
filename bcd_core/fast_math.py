"""The `fast` math mode: every exp-based function of a model computed by a vectorizable
approximation instead of one libm call per element.

TVM's own pass (relax.transform.FastMathTransform) rewrites softmax, exp, erf and tanh to topi's
fast versions, but leaves sigmoid to `tir.sigmoid`, which LLVM lowers to 1 / (1 + expf(-x)) with
one scalar libm call per element: a convolution whose epilogue is a swish (SiLU) or a
squeeze-and-excitation gate then spends most of its time in that call, whatever the schedule.
Here float32 sigmoid becomes 0.5 + 0.5 * fast_tanh(x / 2): topi's fast_tanh is a clamped
rational polynomial (as onnxruntime's MLAS computes its logistic), vectorizes with the rest of
the epilogue and never produces the subnormal numbers an exp of a large negative number does.
"""

from __future__ import annotations

import tvm
from tvm import relax, te, topi

HALF = 0.5


def fast_sigmoid(x: te.Tensor) -> te.Tensor:
    half = tvm.tirx.const(HALF, x.dtype)
    halved = te.compute(x.shape, lambda *i: x(*i) * half, name="T_half", tag=topi.tag.ELEMWISE)
    tanh = topi.fast_tanh(halved)
    return te.compute(x.shape, lambda *i: half + half * tanh(*i), name="T_fast_sigmoid", tag=topi.tag.ELEMWISE)


@relax.expr_functor.mutator
class _FastSigmoid(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        op = call.op
        if isinstance(op, tvm.ir.Op) and op.name == "relax.sigmoid" and getattr(call.ty, "dtype", None) == "float32":
            return self.builder_.call_te(fast_sigmoid, self.visit_expr(call.args[0]))
        return super().visit_call_(call)


def fast_sigmoids(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` with every float32 sigmoid of its Relax functions computed by `fast_sigmoid`."""
    mutator = _FastSigmoid(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            mutator.builder_.update_func(gv, mutator.visit_expr(func))
    return mutator.builder_.get()


def apply_fast_math(mod: tvm.IRModule) -> tvm.IRModule:
    """Sigmoid here, then TVM's pass for softmax, exp, erf and tanh."""
    return relax.transform.FastMathTransform()(fast_sigmoids(mod))
