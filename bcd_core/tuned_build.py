"""The tuned model's build: MetaSchedule's `compile_relax` pipeline, with the Relax VM's own
function compiled to machine code on CPUs.

`compile_relax` builds the VM's main function as bytecode, which an interpreter walks at every
run: each kernel call, tensor allocation and shape check is an instruction it decodes. Between
the kernels of a CPU model that is part of the time no kernel runs (docs/benchmarks.md, where
the time goes). `exec_mode="compiled"` lowers the same instructions to a TIR function built with
the kernels; the kernels, the memory plan and the outputs stay the same, and export still checks
the outputs against onnxruntime. GPU targets keep the bytecode: their launches dominate, and
the compiled mode is not checked there. `compile_relax` takes no `exec_mode`, so its pipeline is
rebuilt here from the same pass lists in the same order: the functions must be fused as task
extraction fused them, or the database finds no record for them.
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax import pipeline as relax_pipeline
from tvm.relax.transform import MetaScheduleApplyDatabase
from tvm.s_tir import dlight
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core.model_import import fusion_passes
from bcd_core.target import is_gpu

COMPILED, BYTECODE = "compiled", "bytecode"


def exec_mode(target: Target) -> str:
    """How the VM runs the model's own function on `target`."""
    return BYTECODE if is_gpu(target) else COMPILED


def gpu_fallback_schedules() -> tvm.transform.Pass:
    """What compile_relax applies on a GPU to a function no record covers."""
    rules = (dlight.gpu.Matmul(), dlight.gpu.GEMV(), dlight.gpu.Reduction(), dlight.gpu.GeneralReduction())
    return dlight.ApplyDefaultSchedule(*rules, dlight.gpu.Fallback())


def lowering_passes(target: Target) -> list[tvm.transform.Pass]:
    """compile_relax's lowering and finalizing: the target's pipeline lists, or, for a target
    whose backend has none (TVM's CPU backend), the fixed lists compile_relax falls back to."""
    try:
        return [*relax_pipeline.dataflow_lower_passes(target), *relax_pipeline.finalize_passes(target)]
    except (ValueError, AttributeError):
        transform = relax.transform
        lower = [
            transform.RewriteDataflowReshape(),
            transform.ToNonDataflow(),
            transform.RemovePurityChecking(),
            transform.CallTIRRewrite(),
        ]
        finalize = [
            transform.StaticPlanBlockMemory(),
            transform.LowerAllocTensor(),
            transform.KillAfterLastUse(),
            transform.LowerRuntimeBuiltin(),
            transform.ComputePrimValue(),
            transform.VMShapeLower(),
            transform.AttachGlobalSymbol(),
        ]
        return [*lower, *finalize]


def tuned_pipeline(target: Target) -> tvm.transform.Pass:
    """compile_relax's pipeline: fuse as task extraction does, apply the database (the one in
    the enclosing context), schedule what it does not cover on a GPU, lower and finalize."""
    fuse, lower = fusion_passes(target), lowering_passes(target)

    @tvm.transform.module_pass(opt_level=3)
    def tuned(mod: tvm.IRModule, _context: tvm.transform.PassContext) -> tvm.IRModule:
        mod = tvm.transform.Sequential(fuse)(mod)
        mod = MetaScheduleApplyDatabase()(mod)
        if is_gpu(target):
            mod = gpu_fallback_schedules()(mod)
        return tvm.transform.Sequential(lower)(mod)

    return tuned


def build_tuned(
    database: ms.Database, mod: tvm.IRModule, target: Target, mode: str | None = None
) -> relax.VMExecutable:
    """The model `mod` (straight from the importer) built with `database`'s best records, its
    VM function in `mode` (default: `exec_mode(target)`)."""
    with target, database, tvm.transform.PassContext(opt_level=3):
        pipeline = tuned_pipeline(target)
        return relax.build(mod, target=target, relax_pipeline=pipeline, exec_mode=mode or exec_mode(target))
