"""How many CPU cores bcd uses, and how many threads TVM runs compiled kernels on.

TVM's runtime runs a kernel's parallel loops on TVM_NUM_THREADS (or OMP_NUM_THREADS) threads;
when neither is set, on x86 it takes half the logical CPUs, assuming two hardware threads per
core. On a machine whose CPUs are whole cores (a 2-vCPU cloud VM, a CPU without SMT) that is
half the machine: every candidate was timed, and every compiled model ran, on one core of two,
while onnxruntime and the target's `num-cores` had both. bcd gives TVM's runtime the cores it
tunes for, in its own process and in the runner processes it starts, unless the user chose.
No TVM import here: this runs before TVM's thread pool exists.
"""

from __future__ import annotations

import os

THREADS_VARIABLES = ("TVM_NUM_THREADS", "OMP_NUM_THREADS")  # in the order TVM reads them


def host_core_count() -> int:
    """Cores this process may use (respects CPU affinity, e.g. in containers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def kernel_threads() -> int:
    """Threads TVM's runtime runs compiled kernels on in this process, as TVM reads them."""
    for name in THREADS_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return max(int(value), 1)
            except ValueError:
                return 1  # TVM's atoi reads a word as 0, then runs on one thread
    return tvm_default_threads()


def tvm_default_threads() -> int:
    """What TVM runs kernels on when nothing says otherwise."""
    return max(host_core_count() // 2, 1) if _is_x86() else host_core_count()


def use_every_core_for_kernels() -> int:
    """Run TVM's kernels on every core this process may use, unless TVM_NUM_THREADS or
    OMP_NUM_THREADS says otherwise; child processes (MetaSchedule's runners) inherit it. Call
    before the first kernel runs: TVM sizes its thread pool once."""
    if not any(os.environ.get(name, "").strip() for name in THREADS_VARIABLES):
        os.environ["TVM_NUM_THREADS"] = str(host_core_count())
    return kernel_threads()


def _is_x86() -> bool:
    return os.uname().machine.lower() in ("x86_64", "amd64", "i386", "i686")
