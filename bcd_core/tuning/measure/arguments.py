"""Input tensors for timing a candidate, made where it runs (runner worker or RPC session).

MetaSchedule fills every argument with random bits. Integer tensors are usually indices
(embedding lookups, gathers: BERT's `take`), and random indices read out of bounds, which
crashes the runner ("Subprocess terminated"), so such a task never got a measurement and
the model never an estimate. Here integer and boolean tensors are zeros, always in bounds.

Floating-point tensors get values like a model's: normal, centred on zero and small enough
that a convolution's or matmul's sums stay near 1 (TVM's fill is uniform in [1, 10], so such a
sum reaches thousands). On those sums exp underflows: a sigmoid, swish or softmax then runs on
subnormal numbers, which x86 cores handle in microcode, and the candidate is timed at up to twice
what it takes on a model's activations. The values are drawn once per shape in each runner
process: drawing them for every candidate would cost more than some runs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import tvm
from tvm.s_tir.meta_schedule.runner.utils import alloc_argument_common

RANDOM_FILL = "tvm.contrib.random.random_fill_for_measure"
VALUE_SCALE = 0.125  # a sum of 4096 products of two such values has a standard deviation of 1
NUMPY_FLOATS = ("float16", "float32", "float64")


def is_index_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint")) or dtype == "bool"


@lru_cache(maxsize=16)
def model_like_values(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape) * VALUE_SCALE).astype(dtype)


def fill_in_bounds(random_fill: Callable[[tvm.runtime.Tensor], None]) -> Callable[[tvm.runtime.Tensor], None]:
    def fill(tensor: tvm.runtime.Tensor) -> None:
        dtype = str(tensor.dtype)
        if is_index_dtype(dtype):
            tensor.copyfrom(np.zeros(tuple(tensor.shape), dtype=dtype))
        elif dtype in NUMPY_FLOATS:
            tensor.copyfrom(model_like_values(tuple(int(d) for d in tensor.shape), dtype))
        else:  # a type numpy cannot make (bfloat16, float8): TVM's fill
            random_fill(tensor)

    return fill


def local_arguments(device: tvm.runtime.Device, args_info: list, alloc_repeat: int) -> list[list[Any]]:
    """LocalRunner's `f_alloc_argument`."""
    random_fill = tvm.get_global_func(RANDOM_FILL)
    return alloc_argument_common(fill_in_bounds(random_fill), device, args_info, alloc_repeat)


def remote_arguments(session: Any, device: tvm.runtime.Device, args_info: list, alloc_repeat: int) -> list[list[Any]]:
    """RPCRunner's `f_alloc_argument`: the same, the values sent to the server."""
    random_fill = session.get_function(RANDOM_FILL)
    return alloc_argument_common(fill_in_bounds(random_fill), device, args_info, alloc_repeat)
