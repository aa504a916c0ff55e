"""Test support: count what TVM's `tirx.build` is asked to build (also used by
experiments/fold_builds.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tvm


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
