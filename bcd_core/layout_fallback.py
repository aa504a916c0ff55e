"""Which convolutions stay NCHW because TVM cannot carry their blocked output further.

TVM's layout inference knows most operators in a blocked layout, but not all: a mean over the
channel axis, a split along it, or a broadcast of a one-channel tensor (a spatial mask) makes
`ConvertLayout` or the legalization after it raise. Rather than leave the whole model NCHW for
one such operator, the convolutions whose blocked output reaches it stay NCHW (layout transforms
then surround only that region). They are found by bisection over the convolutions in graph
order: with every convolution after position k kept NCHW the conversion either works or not,
and the first k at which it stops working names one culprit; the search goes on after it. Each
culprit costs about log2(convolutions) conversions, and a model TVM converts whole costs none.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import tvm
from tvm import relax

from bcd_core.tvm_failures import MutedStderr, verbose

Converted = TypeVar("Converted")
# What TVM raises where its layout inference or legalization cannot take a blocked tensor.
CONVERSION_ERRORS = (RuntimeError, ValueError, TypeError)


def convolution_weights(mod: tvm.IRModule) -> list[relax.Expr]:
    """The weight argument of every 2-d convolution of `mod`'s entry function, in graph order:
    what names a convolution to ConvertLayout's callback, which sees the calls rewritten."""
    found: list[relax.Expr] = []

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.nn.conv2d":
            found.append(expr.args[1])

    relax.analysis.post_order_visit(mod["main"].body, visit)
    return found


def is_kept_plain(call: relax.Call, plain: Sequence[relax.Expr]) -> bool:
    return any(call.args[1].same_as(weight) for weight in plain)


# Positions of the convolutions found to stay NCHW, by the conversion's key: a tune imports its
# model several times (each layout probe, the tune, its milestones' compiles), each the same.
_FOUND: dict[Hashable, list[int]] = {}


def convert_keeping_plain_where_needed(
    convolutions: Sequence[relax.Expr], convert: Callable[[list[relax.Expr]], Converted], key: Hashable = None
) -> tuple[Converted, list[relax.Expr]]:
    """`convert(plain)` (the module with the convolutions in `plain` NCHW, the others blocked)
    with as few convolutions NCHW as the search finds, and those. The error of converting every
    convolution is raised when even the model with all of them NCHW does not convert. `key`
    names the module and conversion, so that the same one converts at once the next time."""

    def convert_at(positions: list[int]) -> Converted:
        return convert([convolutions[position] for position in positions])

    if key is not None and key in _FOUND:
        positions = _FOUND[key]
        return convert_at(positions), [convolutions[position] for position in positions]
    converted, positions = _search(len(convolutions), convert_at)
    if key is not None:
        _FOUND[key] = positions
    return converted, [convolutions[position] for position in positions]


def _search(count: int, convert_at: Callable[[list[int]], Converted]) -> tuple[Converted, list[int]]:
    """The conversion with the fewest convolutions (by position) kept NCHW that the search
    finds, and their positions."""
    plain: list[int] = []
    start = 0  # invariant: the conversion works with the convolutions from `start` on kept NCHW
    while True:
        converted, error = _attempt(convert_at, plain)
        if error is None:
            return converted, plain  # type: ignore[return-value]
        if start >= count or (not plain and not _works(convert_at, list(range(count)))):
            raise error  # not one that keeping convolutions NCHW mends
        culprit = _first_failing(count, plain, start, convert_at)
        plain.append(culprit)
        start = culprit + 1


def _first_failing(count: int, plain: list[int], start: int, convert_at: Callable[[list[int]], object]) -> int:
    """The position k >= start of a convolution whose blocking breaks the conversion: it works
    with the convolutions from k on kept NCHW (besides `plain`), not with those from k + 1 on.
    The conversion works with those from `start` on NCHW and not with none of them."""
    low, high = start, count
    while high - low > 1:
        middle = (low + high) // 2
        if _works(convert_at, plain + list(range(middle, count))):
            low = middle
        else:
            high = middle
    return low


def _works(convert_at: Callable[[list[int]], object], plain: list[int]) -> bool:
    return _attempt(convert_at, plain)[1] is None


def _attempt(
    convert_at: Callable[[list[int]], Converted], plain: list[int]
) -> tuple[Converted | None, Exception | None]:
    """`convert_at(plain)`, or TVM's error where it refuses. A refused conversion leaves
    half-built BlockBuilders behind, and TVM warns on stderr when they are destroyed; the search
    expects refusals, so they are freed here and those warnings discarded (unless the user asked
    for TVM's output) rather than printed later among the tune's own lines."""
    with MutedStderr() as muted:
        try:
            return convert_at(plain), None
        except CONVERSION_ERRORS as caught:
            error = caught.with_traceback(None)  # the frames hold the half-built objects
        gc.collect()
        muted.discard = not verbose()
    return None, error
