"""Input tensors for timing a candidate, made where it runs (runner worker or RPC session).

MetaSchedule fills every argument with random bits. Integer tensors are usually indices
(embedding lookups, gathers: BERT's `take`), and random indices read out of bounds, which
crashes the runner ("Subprocess terminated"), so such a task never got a measurement and
the model never an estimate. Here integer and boolean tensors are zeros, always in bounds;
floating-point ones stay random.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tvm
from tvm.s_tir.meta_schedule.runner.utils import alloc_argument_common

RANDOM_FILL = "tvm.contrib.random.random_fill_for_measure"


def is_index_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint")) or dtype == "bool"


def fill_in_bounds(random_fill: Callable[[tvm.runtime.Tensor], None]) -> Callable[[tvm.runtime.Tensor], None]:
    def fill(tensor: tvm.runtime.Tensor) -> None:
        dtype = str(tensor.dtype)
        if is_index_dtype(dtype):
            tensor.copyfrom(np.zeros(tuple(tensor.shape), dtype=dtype))
        else:
            random_fill(tensor)

    return fill


def local_arguments(device: tvm.runtime.Device, args_info: list, alloc_repeat: int) -> list[list[Any]]:
    """LocalRunner's `f_alloc_argument`."""
    random_fill = tvm.get_global_func(RANDOM_FILL)
    return alloc_argument_common(fill_in_bounds(random_fill), device, args_info, alloc_repeat)


def remote_arguments(session: Any, device: tvm.runtime.Device, args_info: list, alloc_repeat: int) -> list[list[Any]]:
    """RPCRunner's `f_alloc_argument`: the same, with the server's random fill."""
    random_fill = session.get_function(RANDOM_FILL)
    return alloc_argument_common(fill_in_bounds(random_fill), device, args_info, alloc_repeat)
