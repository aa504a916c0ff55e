"""Keep TVM's one-time start-up costs out of the user's way.

`TuneContext` imports `tvm.s_tir.tensor_intrin`, which parses several hundred TVMScript
functions for every backend (CUDA, ROCm, Hexagon, ...): about 20 s on a 2-core machine, paid
by `bcd inspect` before it can show anything. A CPU target only needs the intrinsics of its
own architecture, so for LLVM we register just those (0.2 s).

Relax's `FoldConstant` builds one LLVM module per constant call it folds, keyed by the
function object, not its structure: MobileNetV2's clip bounds and bias reshapes are 193
builds of 16 distinct functions, 5 s of every tune's and export's start-up. Inside
`shared_constant_builds` equal functions share one build (0.45 s).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import platform
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import tvm
import tvm_ffi
from tvm.target import Target

_PACKAGE = "tvm.s_tir.tensor_intrin"
_lock = threading.Lock()
_BUILD_FUNC = "tirx.build"
_builds_lock = threading.Lock()
_builds_users = 0
Builder = Callable[..., "tvm.runtime.Module"]  # tirx.build(mod, target, pipeline)
# (structural hash, target, pipeline, pass settings) -> [(function, its module)]
_BuildCache = dict[tuple[int, str, str, str], list[tuple[object, "tvm.runtime.Module"]]]
_stock_build: Builder | None = None  # TVM's `tirx.build` while shared_constant_builds replaces it


def _cpu_intrinsic_modules() -> list[str]:
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return ["arm_cpu"]
    if machine.startswith("riscv"):
        return ["riscv_cpu"]
    return ["x86"]


@contextmanager
def _fast_stack() -> Iterator[None]:
    """TVMScript's parser calls inspect.stack() per function; without source context
    (context=0) it skips reading every source file, 3x faster, same result."""
    original = inspect.stack
    inspect.stack = lambda context=1: original(0)  # type: ignore[assignment]
    try:
        yield
    finally:
        inspect.stack = original  # type: ignore[assignment]


def load_tensor_intrinsics(target: Target) -> None:
    """Register the tensor intrinsics `target` can use, as cheaply as possible. Idempotent."""
    with _lock:
        loaded = sys.modules.get(_PACKAGE)
        full = loaded is not None and not getattr(loaded, "_bcd_partial", False)
        if full:
            return
        if target.kind.name == "llvm":
            if loaded is None:
                spec = importlib.util.find_spec(_PACKAGE)
                assert spec is not None and spec.submodule_search_locations is not None
                package = types.ModuleType(_PACKAGE)
                package.__path__ = list(spec.submodule_search_locations)
                package.__spec__ = spec
                package.__file__ = spec.origin
                package._bcd_partial = True  # type: ignore[attr-defined]
                sys.modules[_PACKAGE] = package
            with _fast_stack():
                for name in _cpu_intrinsic_modules():
                    importlib.import_module(f"{_PACKAGE}.{name}")
            return
        # GPU and other targets: the full set (tensor cores, etc.).
        if loaded is not None:
            del sys.modules[_PACKAGE]
        with _fast_stack():
            importlib.import_module(_PACKAGE)


def _sharing_build(stock: Builder, cache: _BuildCache) -> Builder:
    """`tirx.build`, but a PrimFunc structurally equal to one built before, for the same target,
    pipeline and pass settings, gets that build's module. Equality covers the function's
    attributes (its global symbol too), and a built module holds no state between calls."""

    def build(mod: object, target: object = None, pipeline: object = "default") -> tvm.runtime.Module:
        if not isinstance(mod, tvm.tirx.PrimFunc) or target is None:  # None: the current target
            return stock(mod, target, pipeline)
        settings = str(tvm.transform.PassContext.current().config)
        key = (int(tvm_ffi.structural_hash(mod)), str(target), str(pipeline), settings)
        with _builds_lock:
            for built, module in cache.get(key, ()):
                if tvm_ffi.structural_equal(built, mod):
                    return module
        module = stock(mod, target, pipeline)
        with _builds_lock:
            cache.setdefault(key, []).append((mod, module))
        return module

    return build


@contextmanager
def shared_constant_builds() -> Iterator[None]:
    """Share LLVM builds of equal functions (constant folding) while the context is open.
    Nested and concurrent uses share one cache; the last to leave restores TVM's builder.
    TVM's builder is global: other threads build through the shared one meanwhile."""
    global _builds_users, _stock_build
    with _builds_lock:
        if _builds_users == 0:
            _stock_build = tvm.get_global_func(_BUILD_FUNC)
            tvm.register_global_func(_BUILD_FUNC, _sharing_build(_stock_build, {}), override=True)
        _builds_users += 1
    try:
        yield
    finally:
        with _builds_lock:
            _builds_users -= 1
            if _builds_users == 0:
                tvm.register_global_func(_BUILD_FUNC, _stock_build, override=True)
                _stock_build = None
