"""The untuned baseline: each task built without a schedule and timed on the target.

What the dashboard's "speedup over untuned" compares against. LLVM targets only: a GPU
kernel without thread bindings is not a valid program, so GPU tasks report no figure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import tvm
from tvm.target import Target

from bcd_core.records.database import workload_shash
from bcd_core.records.store import RecordStore
from bcd_core.target import target_key
from bcd_core.tasks import Task

log = logging.getLogger("bcd.untuned")


def standard_normal_arguments(task: Task, device: tvm.runtime.Device) -> list[tvm.runtime.Tensor]:
    """The task's buffers: floats standard normal (as activations are), integers zero (in bounds)."""
    rng = np.random.default_rng(task.index)
    arguments = []
    for shape, dtype in zip(task.shapes, task.dtypes):  # the PrimFunc's buffers, in order
        if dtype.startswith("float"):
            array = rng.standard_normal(shape).astype(dtype)
        else:
            array = np.zeros(shape, dtype=dtype)
        arguments.append(tvm.runtime.tensor(array, device=device))
    return arguments


def measure_task_untuned(task: Task, target: Target, repeat: int = 3) -> float:
    """Seconds per call of the task's unscheduled program (median of `repeat`)."""
    library = tvm.compile(task.mod, target=target).mod  # the runtime module behind the Executable
    device = tvm.cpu(0)
    timer = library.time_evaluator("main", device, number=1, repeat=repeat)
    return float(np.median(timer(*standard_normal_arguments(task, device)).results))


def measure_untuned(
    tasks: Sequence[Task],
    target: Target,
    progress: Callable[[int, int, str], None] = lambda step, total, text: None,
) -> dict[int, float]:
    """Task index -> untuned seconds for every task that builds and runs (others are left out)."""
    if target.kind.name != "llvm":
        return {}
    results = {}
    for position, task in enumerate(tasks):
        progress(position, len(tasks), f"timing untuned {task.name}")
        try:
            results[task.index] = measure_task_untuned(task, target)
        except Exception as err:  # one odd task must not hide the others' figures
            log.warning("could not time untuned %s: %s", task.name, str(err).splitlines()[0] if str(err) else err)
    progress(len(tasks), len(tasks), "untuned latency measured")
    return results


def stored_untuned(
    store: RecordStore,
    tasks: Sequence[Task],
    target: Target,
    progress: Callable[[int, int, str], None] = lambda step, total, text: None,
) -> dict[int, float]:
    """`measure_untuned`, but each workload is timed once per target: what the store holds
    is read back, only what it lacks is measured (and kept), so the figure does not move
    between opens of the same model."""
    key = target_key(target)
    hashes = {task.index: workload_shash(task.mod) for task in tasks}
    stored = store.untuned_latencies(sorted(set(hashes.values())), key)
    missing = [task for task in tasks if hashes[task.index] not in stored]
    measured = measure_untuned(missing, target, progress) if missing else {}
    store.record_untuned({hashes[index]: latency for index, latency in measured.items()}, key)
    found = {task.index: stored[hashes[task.index]] for task in tasks if hashes[task.index] in stored}
    return {**found, **measured}
