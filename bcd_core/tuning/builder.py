"""Build function for MetaSchedule's LocalBuilder workers.

It must stay importable cheaply: every builder worker process unpickles it. The stock
default imports all tensor intrinsics in each fresh worker (about 20 s on 2 cores), which
made most candidates time out; CPU targets do not need them.
"""

from __future__ import annotations

import tvm
from tvm.target import Target


def build_candidate(mod: tvm.IRModule, target: Target, _params: object = None) -> tvm.runtime.Module:
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    if target.kind.name != "llvm":  # GPU schedules may use tensor-core intrinsics
        from bcd_core.tvm_speedups import load_tensor_intrinsics

        load_tensor_intrinsics(target)
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm.driver.build(mod, target=target)
