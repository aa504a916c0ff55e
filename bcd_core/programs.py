"""Programs of a task from traces: post-processing, and a program's serial twin (the same
schedule run on one thread).

MetaSchedule's CPU design space parallelises a kernel's outer loops up to a fixed extent
(`meta_schedule.parallel`, 16 jobs per core), so its fresh samples are nearly all parallel;
only its mutator reaches one thread, by chance. For a small kernel, waking the thread pool
costs more than the work it shares (on two cores a 512x512 matrix-vector product with ReLU:
10 us on one thread, 18 us or more on any parallel extent). A twin keeps every other decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tvm
from tvm.s_tir.schedule import Trace
from tvm_ffi.serialization import from_json_graph_str


def postprocess(sch: tvm.s_tir.Schedule, postprocs: Sequence[Any]) -> bool:
    """Run the member space's post-processors; False when any rejects the program."""
    sch.enter_postproc()
    for postproc in postprocs:
        try:
            if not postproc.apply(sch):
                return False
        except Exception:
            return False
    return True


def private_module(mod: tvm.IRModule) -> tvm.IRModule:
    """A deep copy of `mod` to apply a trace to. TVM's schedule can write into the module it
    was made from: after the root block is annotated and unannotated (what post-processing does
    to a sketch that splits no loop first, e.g. a serial twin of a reduction's simple sketch), a
    `fuse` rewrites the source's loops in place. A shared task or workload module changed so no
    longer matches its records, and the compiled model finds none for it. The JSON is this
    TVM's own, so it is read back without `tvm.ir.load_json`'s upgrade of older TVMs' graphs (a
    parse and an indented re-dump in Python: a SqueezeNet task's copy takes 4 ms without it,
    10 ms with it)."""
    return from_json_graph_str(tvm.ir.save_json(mod))


PARALLEL_ANNOTATION = "meta_schedule.parallel"


def serial_trace_json(trace: Trace) -> Any | None:
    """The trace (without post-processing) as JSON without its parallel annotation, so that
    post-processing leaves every loop serial; None when it has none. (Setting the annotation
    to one thread is not enough: the post-processor still parallelises the outermost loop.)"""
    instructions, decisions = trace.as_json(remove_postproc=True)
    positions = [
        index
        for index, instruction in enumerate(instructions)
        if instruction[0] == "Annotate" and list(instruction[2]) == [PARALLEL_ANNOTATION]
    ]
    if not positions:
        return None
    dropped = set(positions)
    kept = [instruction for index, instruction in enumerate(instructions) if index not in dropped]
    # Decisions name their instruction by position: shift them past the dropped ones.
    shifted = [[index - sum(1 for p in positions if p < index), value] for index, value in decisions]
    return [kept, shifted]


def serial_twin(mod: tvm.IRModule, trace: Trace, postprocs: Sequence[Any]) -> tvm.s_tir.Schedule | None:
    """The program of `trace` on `mod` on one thread, post-processed; None when there is no
    parallel annotation to change or the twin does not apply or is rejected."""
    as_json = serial_trace_json(trace)
    if as_json is None:
        return None
    sch = tvm.s_tir.Schedule(private_module(mod))
    try:
        Trace.apply_json_to_schedule(as_json, sch)
    except Exception:
        return None
    return sch if postprocess(sch, postprocs) else None


def has_parallel_annotation(trace: Trace) -> bool:
    """Whether the trace (post-processing aside) carries MetaSchedule's parallel annotation:
    CPU sketches do, GPU ones and serial twins do not."""
    instructions, _ = trace.as_json(remove_postproc=True)
    return any(i[0] == "Annotate" and list(i[2]) == [PARALLEL_ANNOTATION] for i in instructions)
