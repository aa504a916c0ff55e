"""`bcd inspect`: a model's tuning tasks and how every cluster mode groups them.

`inspect_model` does the work (import, task extraction, clustering); the rest turns the
result into `bcd inspect`'s JSON payload or the rows and lines of its table view.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tvm.target import Target

from bcd_core.clustering import Cluster, cluster_of, cluster_tasks
from bcd_core.errors import BcdError
from bcd_core.formatting import format_flops
from bcd_core.memory.recall import TuningMemory, preview_memory
from bcd_core.memory.similar import RememberedTask
from bcd_core.model_import import InputSpec, import_model, parse_input_shapes
from bcd_core.target import describe_target, parse_target, target_key
from bcd_core.tasks import Task, extract_tasks
from bcd_core.tuning.layout_choice import LayoutChoice, known_choice
from bcd_core.tuning.settings import DEFAULT_CLUSTER_MODE, DEFAULT_MATH, TuneSettings, default_layout

# Coarsest key first, so the table reads from operator kind down to design-space detail.
INSPECT_MODES = ("operator", "loose-sketch", "sketch")
TABLE_HEADERS = (
    "#",
    "task",
    "weight",
    "FLOPs",
    "output",
    "operator key",
    "op cluster",
    "loose cluster",
    "sketch key",
    "sketch cluster",
)


@dataclass
class Inspection:
    model: str
    target: Target
    inputs: list[InputSpec]
    tasks: list[Task]
    by_mode: dict[str, list[Cluster]]  # clusters of every mode in INSPECT_MODES, in that order
    elapsed_s: float
    memory: TuningMemory | None = None  # what a tune would draw on from the stores named with --db
    memory_notes: list[str] = field(default_factory=list)  # why some sessions are not drawn on
    layout: LayoutChoice | None = None  # the convolutions' layout shown, and why


def inspect_model(
    model: str,
    target_spec: str,
    input_shape: list[str] | None,
    memory_stores: Sequence[str] = (),
    math: str = DEFAULT_MATH,
    layout: str | None = None,
) -> Inspection:
    """Import the model (erf, exp, tanh, softmax as `math` says, as a tune would), extract its
    tasks and cluster them in every mode; with `memory_stores`, also find what each task would
    draw on from earlier tunes there, and when, as a tune would."""
    start = time.perf_counter()
    try:  # the tuner's own checks of these settings, before the model is imported
        TuneSettings(math=math, conv_layout=layout or default_layout())
    except ValueError as err:
        raise BcdError(str(err)) from err
    target = parse_target(target_spec)
    shapes = parse_input_shapes(input_shape)
    asked = TuneSettings(math=math, conv_layout=layout or default_layout(), input_shapes=shapes)
    choice = known_choice(memory_stores, model, target, asked)
    imported = import_model(model, shapes, math, choice.layout, target)
    tasks = extract_tasks(imported.relax_mod, target)
    by_mode = {mode: cluster_tasks(tasks, mode) for mode in INSPECT_MODES}
    notes: list[str] = []
    memory = (
        preview_memory(memory_stores, target_key(target), imported.sha256, tasks, notes.append, layout=choice.layout)
        if memory_stores
        else None
    )
    return Inspection(
        model=model,
        target=target,
        inputs=imported.inputs,
        tasks=tasks,
        by_mode=by_mode,
        elapsed_s=time.perf_counter() - start,
        memory=memory,
        memory_notes=notes,
        layout=choice,
    )


# -- JSON ---------------------------------------------------------------------------------
def _json_name(mode: str) -> str:
    return mode.replace("-", "_")


def _task_json(inspection: Inspection, task: Task) -> dict[str, Any]:
    """A task's keys, then its cluster id in every mode, then whether it represents it."""
    clusters = {mode: cluster_of(found, task.index) for mode, found in inspection.by_mode.items()}
    return {
        "index": task.index,
        "name": task.name,
        "weight": task.weight,
        "flops": task.flops,
        "shapes": task.shapes,
        "operator_key": task.operator_key,
        "sketch_key": task.sketch_key,
        "loose_sketch_key": task.loose_sketch_key,
        **{f"{_json_name(mode)}_cluster": cluster.id for mode, cluster in clusters.items()},
        **{
            f"{_json_name(mode)}_representative": cluster.representative == task.index
            for mode, cluster in clusters.items()
        },
        "memory": [_remembered_json(r) for r in remembered(inspection, task)],
        "memory_when": memory_when(inspection, task),
    }


def remembered(inspection: Inspection, task: Task) -> list[RememberedTask]:
    """The earlier tunes' tasks `task` would draw programs from (none without --db)."""
    if inspection.memory is None:
        return []
    return inspection.memory.similar(task.index, task)


class MemoryWhen:
    """When a BCD tune hands a task programs from memory (tuning/bcd/plan.py `diffused`): an
    earlier tune of the very workload always first; a cluster's first task in its first round;
    a later task of a cluster in its first round too, beside its cluster-mates' programs."""

    SAME_WORKLOAD = "same-workload"
    FIRST_ROUND = "first-round"  # a cluster's first task (its representative) or a task alone
    BESIDE_CLUSTER = "beside-cluster"  # in its first round, beside its cluster-mates' programs
    NEVER = ""

    LABELS = {
        SAME_WORKLOAD: "same workload",
        FIRST_ROUND: "first round",
        BESIDE_CLUSTER: "first round, beside its cluster's",
    }


def memory_when(inspection: Inspection, task: Task) -> str:
    """A MemoryWhen value for `task` in the default clustering mode's clusters."""
    found = remembered(inspection, task)
    if not found or inspection.memory is None:
        return MemoryWhen.NEVER
    if any(inspection.memory.is_same_workload(task.index, task, r) for r in found):
        return MemoryWhen.SAME_WORKLOAD
    cluster = cluster_of(inspection.by_mode[DEFAULT_CLUSTER_MODE], task.index)
    if cluster.representative == task.index:
        return MemoryWhen.FIRST_ROUND
    return MemoryWhen.BESIDE_CLUSTER


def _remembered_json(task: RememberedTask) -> dict[str, Any]:
    return {
        "store": task.store_label,
        "session": task.session_id,
        "model": task.model_name,
        "task": task.name,
        "best_s": task.best_s,
    }


def _cluster_json(cluster: Cluster) -> dict[str, Any]:
    return {"id": cluster.id, "key": cluster.key, "members": cluster.members, "representative": cluster.representative}


def inspection_json(inspection: Inspection) -> dict[str, Any]:
    """`bcd inspect --json`'s payload."""
    return {
        "model": str(inspection.model),
        "target": json.loads(str(inspection.target)),
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in inspection.inputs],
        "tasks": [_task_json(inspection, t) for t in inspection.tasks],
        "clusters": {mode: [_cluster_json(c) for c in clusters] for mode, clusters in inspection.by_mode.items()},
        "layout": dataclasses.asdict(inspection.layout) if inspection.layout else None,
    }


# -- table view ---------------------------------------------------------------------------
def summary_lines(inspection: Inspection) -> list[str]:
    """Model and inputs, target, and the task count and total work."""
    tasks = inspection.tasks
    inputs = ", ".join(f"{s.name} {list(s.shape)} {s.dtype}" for s in inspection.inputs)
    weights = sum(t.weight for t in tasks)
    total_flops = sum(t.flops * t.weight for t in tasks)
    return [
        f"model   {inspection.model}  ({inputs})",
        f"target  {describe_target(inspection.target)}",
        f"tasks   {len(tasks)} (sum of weights {weights}), {format_flops(total_flops)}FLOP per run",
        *([f"layout  {inspection.layout.describe()}"] if inspection.layout else []),
    ]


def _cluster_cell(inspection: Inspection, mode: str, index: int) -> str:
    """`C<id>`, starred where the task represents a cluster with other members."""
    cluster = cluster_of(inspection.by_mode[mode], index)
    return f"C{cluster.id}{'*' if cluster.representative == index and cluster.size > 1 else ''}"


def task_rows(inspection: Inspection) -> list[list[Any]]:
    """One row per task, in TABLE_HEADERS' columns."""
    return [
        [
            t.index,
            t.name,
            t.weight,
            format_flops(t.flops),
            "x".join(str(d) for d in t.shapes[-1]) if t.shapes else "",
            t.operator_key,
            _cluster_cell(inspection, "operator", t.index),
            _cluster_cell(inspection, "loose-sketch", t.index),
            t.sketch_key,
            _cluster_cell(inspection, "sketch", t.index),
        ]
        for t in inspection.tasks
    ]


def cluster_lines(inspection: Inspection, mode: str) -> list[str]:
    """A mode's heading (after a blank line), then one line per cluster."""
    clusters = inspection.by_mode[mode]
    lines = [
        f"\n{mode} clustering: {len(clusters)} clusters "
        f"({sum(1 for c in clusters if c.size > 1)} with members; * marks the representative)"
    ]
    lines += [
        f"  C{cluster.id:<3} {cluster.key:<28} size {cluster.size:<3} "
        f"representative #{cluster.representative} {inspection.tasks[cluster.representative].name}"
        for cluster in clusters
    ]
    return lines


def memory_lines(inspection: Inspection) -> list[str]:
    """Per task, the earlier tunes' tasks it would draw on (with --db)."""
    lines = ["\nmemory: what each task would draw on from earlier tunes on this target", *inspection.memory_notes]
    counts = dict.fromkeys(MemoryWhen.LABELS, 0)
    for task in inspection.tasks:
        found = remembered(inspection, task)
        sources = "; ".join(f"{r.model_name} {r.name} ({r.best_s * 1e6:.1f} us, session {r.session_id})" for r in found)
        when = memory_when(inspection, task)
        if when:
            counts[when] += 1
        label = f"[{MemoryWhen.LABELS[when]}] " if when else ""
        lines.append(f"  #{task.index:<3} {task.name:<36} {label}{sources or 'nothing similar'}")
    lines.append(
        f"  {sum(counts.values())} of {len(inspection.tasks)} tasks would draw on memory: "
        f"{counts[MemoryWhen.SAME_WORKLOAD]} tuned before as the same workload, "
        f"{counts[MemoryWhen.FIRST_ROUND]} in their first round (the first of their cluster), "
        f"{counts[MemoryWhen.BESIDE_CLUSTER]} in their first round beside their cluster-mates' programs"
    )
    return lines
