"""Test support: count what TVM's `tirx.build` is asked to build (also used by
experiments/fold_builds.py), and build a converted module and compare it with onnxruntime."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import onnxruntime
import tvm
from tvm import relax

from bcd_core.layout import vector_block
from bcd_core.model_import import random_inputs
from bcd_core.target import host_target


@contextlib.contextmanager
def counted_builds() -> Iterator[list[object]]:
    """TVM's `tirx.build`, recording each function or module it is asked to build."""
    stock = tvm.get_global_func("tirx.build")
    built: list[object] = []

    def counting(mod: object, target: object = None, pipeline: object = "default") -> object:
        built.append(mod)
        return stock(mod, target, pipeline)

    tvm.register_global_func("tirx.build", counting, override=True)
    try:
        yield built
    finally:
        tvm.register_global_func("tirx.build", stock, override=True)


def builds_and_matches_onnxruntime_here(imported, blocked: tvm.IRModule, target) -> None:
    """`blocked` compiles for `target` and, where this machine can run that target's code, its
    output matches onnxruntime's."""
    executable = tvm.compile(blocked, target)
    if vector_block(target) > vector_block(host_target()):
        return  # an AVX-512 module builds on an AVX2 machine but cannot run there
    inputs = random_inputs(imported.inputs)
    ours = relax.VirtualMachine(executable, tvm.cpu())["main"](*[tvm.runtime.tensor(v) for v in inputs.values()])
    session = onnxruntime.InferenceSession(imported.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    np.testing.assert_allclose(ours.numpy(), reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))
