"""How a session's candidates were timed, and whose records compare with them.

A timing names the cache state candidates were timed in (warm, as stock MetaSchedule; older
stores also hold sessions timed with flushed caches) and the thread count kernels ran on
(sessions stored before it was recorded ran on TVM's default, on x86 half the logical CPUs).
Records of a session timed one way never rank against records timed another way: not in a
search's seeds, not in diffusion, not in export's choice of each task's best program, not in
the tuning memory.
"""

from __future__ import annotations

import json
from typing import Any

from bcd_core.target import is_gpu, target_of_key

WARM = "warm"
FLUSHED = "flushed"


THREADS_MARK = " x"  # "warm x2": warm caches, kernels on 2 threads
TVM_DEFAULT_THREADS = 0  # sessions stored before the thread count was: TVM's default
PLAIN_LAYOUT = "nchw"  # layout.LayoutMode.PLAIN, without importing TVM's Relax here


def timing_for(cpu_cache: str, target_key: str, kernel_threads: int = TVM_DEFAULT_THREADS) -> str:
    """GPU candidates are never flushed, and their kernels are not CPU threads."""
    target = target_of_key(target_key)
    if target is not None and is_gpu(target):
        return WARM
    return f"{cpu_cache}{THREADS_MARK}{kernel_threads}" if kernel_threads else cpu_cache


def session_timing(session: dict[str, Any]) -> str:
    """Sessions stored before the options timed warm, on TVM's default threads."""
    stored = json.loads(session["settings"] or "{}")
    return timing_for(
        stored.get("cpu_cache", WARM), session["target_key"], stored.get("kernel_threads", TVM_DEFAULT_THREADS)
    )


def session_layout(session: dict[str, Any]) -> str:
    """The layout the session's convolutions were tuned in (bcd_core/layout.py); sessions
    stored before the option tuned the model's own. Other layouts make other tasks, so the
    tuning memory never lends one layout's programs to another's."""
    return json.loads(session["settings"] or "{}").get("conv_layout", PLAIN_LAYOUT)


def timing_difference(theirs: str, ours: str) -> str:
    """How a session timed otherwise than this tune does, in words."""
    their_cache, _, their_threads = theirs.partition(THREADS_MARK)
    our_cache, _, our_threads = ours.partition(THREADS_MARK)
    if their_cache != our_cache:
        return f"timed candidates with {their_cache} caches, this tune with {our_cache} ones"

    def threads(count: str) -> str:
        if not count:
            return "TVM's default threads"
        return "1 thread" if count == "1" else f"{count} threads"

    return f"ran kernels on {threads(their_threads)}, this tune on {threads(our_threads)}"
