"""Tuning tasks: the fused subgraphs of a model, with what clustering and the UI need."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.design_space import space_generator
from bcd_core.errors import DataDependentShapeError, DynamicShapeError, TensorSizeError
from bcd_core.model_import import fuse_for_tuning
from bcd_core.tvm_failures import tvm_step
from bcd_core.tvm_rules import register_pooling_fallbacks
from bcd_core.tvm_speedups import load_tensor_intrinsics
from bcd_core.winograd import register_winograd_rules

register_pooling_fallbacks()  # before any design space is generated
register_winograd_rules()

_SUFFIX_DIGITS = re.compile(r"\d+$")
_DECISION = re.compile(r",?\s*decision=[^)]*\)")
_LV_PREFIX = re.compile(r"\blv\d+_")
_DIGITS = re.compile(r"\d+")
_NAME_ARG = re.compile(r'name="[^"]*"')
# block look-ups and inlinings in a normalized structure (see without_inlining)
_INLINING = re.compile(r"^(bN = sch\.get_sblock\(.*\)|sch\.(reverse_)?compute_inline\(.*\))$")


@dataclass
class Task:
    """One fused subgraph (MetaSchedule's ExtractedTask) and its derived keys."""

    index: int
    name: str
    weight: int
    flops: float
    shapes: list[list[int]]
    dtypes: list[str]
    operator_key: str
    sketch_key: str
    num_sketches: int
    mod: tvm.IRModule = field(repr=False)
    target: Target = field(repr=False)
    loose_sketch_key: str = ""  # sketch_key ignoring inlined blocks; "" = not computed

    @property
    def weighted_flops(self) -> float:
        return self.flops * self.weight


def operator_key(task_name: str) -> str:
    """`fused_conv2d3_add1_relu1` -> `conv2d_add_relu`: the operator chain without
    the numbering TVM adds to tell same-named functions apart."""
    name = task_name.removeprefix("fused_")
    return "_".join(_SUFFIX_DIGITS.sub("", part) for part in name.split("_") if part)


def normalize_sketch(python_trace: str) -> str:
    """Abstract a sketch trace to its structure: drop sampled decisions, block and buffer
    names (fusion renames them) and every number (loop extents, indices)."""
    text = _DECISION.sub(")", python_trace)
    text = _LV_PREFIX.sub("lv_", text)
    text = _NAME_ARG.sub('name="_"', text)
    return _DIGITS.sub("N", text)


def without_inlining(structure: str) -> str:
    """A normalized structure without its block look-ups and inlinings: two tasks that differ
    only in the element-wise blocks inlined into them (an epilogue such as a GELU) then have
    the same structure, with the same sampling instructions in the same order."""
    return "\n".join(line for line in structure.splitlines() if not _INLINING.match(line))


def design_space(mod: tvm.IRModule, target: Target) -> list[tvm.s_tir.Schedule]:
    load_tensor_intrinsics(target)
    context = ms.TuneContext(
        mod=mod,
        target=target,
        space_generator=space_generator(mod, target),
        search_strategy="evolutionary",
        num_threads=1,
    )
    return list(context.generate_design_space())


def sketch_signature(sketch: tvm.s_tir.Schedule) -> str:
    return normalize_sketch("\n".join(sketch.trace.as_python(remove_postproc=True)))


def sketch_key_of(signatures: list[str], loose: bool = False) -> str:
    """Hash of every sketch's normalized structure (`sketch_signature`), in design-space
    order; `loose`: without inlinings (see without_inlining)."""
    digest = hashlib.sha1()
    for signature in signatures:
        digest.update((without_inlining(signature) if loose else signature).encode())
        digest.update(b"\x00")
    return ("lsk-" if loose else "sk-") + digest.hexdigest()[:10]


def _static_shapes(task_name: str, mod: tvm.IRModule) -> tuple[list[list[int]], list[str]]:
    shapes, dtypes = [], []
    try:
        args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    except (TypeError, ValueError) as err:  # a buffer sized by a variable, or a scalar argument
        raise DataDependentShapeError(
            f"task {task_name} takes a tensor whose shape depends on the data fed to the model ({err}); "
            "bcd tunes fixed shapes only: make the inputs that set that shape constants of the model"
        ) from None
    for arg in args:
        dims = list(arg.shape)
        if not all(isinstance(d, tvm.tirx.IntImm) or isinstance(d, int) for d in dims):
            raise DynamicShapeError(task_name, [str(d) for d in dims], "NAME=D1,D2,... for the model input")
        shape = [int(d) for d in dims]
        if 0 in shape:  # MetaSchedule divides by loop extents: tuning this task would crash
            raise TensorSizeError(
                f"task {task_name} works on a zero-size tensor (shape {shape}): that part of the model computes "
                "nothing and cannot be tuned; re-export the model without it (look for a Slice, Reshape or Split "
                "that leaves 0 elements) or fix the input shapes with --input-shape"
            )
        shapes.append(shape)
        dtypes.append(str(arg.dtype))
    return shapes, dtypes


def extract_tasks(raw_mod: tvm.IRModule, target: Target) -> list[Task]:
    """Fuse the Relax module as `compile_relax` will and describe each tuning task."""
    fused = tvm_step("fusing operators into tuning tasks", lambda: fuse_for_tuning(raw_mod, target), raw_mod)
    extracted = tvm_step("extracting tuning tasks", lambda: ms.relax_integration.extract_tasks(fused, target))
    tasks = []
    for index, ext in enumerate(extracted):
        mod = ext.dispatched[0]
        shapes, dtypes = _static_shapes(ext.task_name, mod)
        sketches = tvm_step(
            f"generating the schedules of task {ext.task_name}", lambda mod=mod: design_space(mod, target)
        )
        signatures = [sketch_signature(sketch) for sketch in sketches]  # once for both keys
        tasks.append(
            Task(
                index=index,
                name=ext.task_name,
                weight=int(ext.weight),
                flops=float(tvm.s_tir.analysis.estimate_tir_flops(mod)),
                shapes=shapes,
                dtypes=dtypes,
                operator_key=operator_key(ext.task_name),
                sketch_key=sketch_key_of(signatures),
                num_sketches=len(sketches),
                mod=mod,
                target=ext.target,
                loose_sketch_key=sketch_key_of(signatures, loose=True),
            )
        )
    return tasks
