"""Does picking each task's program by its time with cold caches make the compiled model faster?

MetaSchedule's runner times candidates with warm caches, and export compiles every task's best
program by that timing. Inside a model a kernel's weights come cold from memory (docs/
benchmarks.md, "The end-to-end gap"). This takes a tuned session, times each task's K best
programs alone with every argument but the first flushed before each call (as
`flush_rerank_probe.py` does), compiles the model with the runner's picks and with the
flushed picks (with --compiled-vm, also with the runner's picks and the VM's bytecode compiled
to native code) and times the models in turns, `--passes` times, with TVM's VM as `bcd check` does.

    python experiments/rerank_probe.py STORE ../shared/models/mobilenet_v2.onnx [--top 4]

Result on 2026-11-26 (2-core znver5), a 32-trial BCD session of MobileNetV2: runner's picks
7.418 ms, flushed picks 7.322 ms (inside the timings' spread), compiled VM 7.647 ms; neither
was built into export (experiments/README.md).

Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse
import functools
from contextlib import closing
from pathlib import Path

import tvm
from e2e_gap import library_us, open_session, print_models_in_turns, record_library  # e2e_gap.py --alone's timing
from tvm import relax
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.database import TuningRecord

from bcd_core.export import compile_tuned
from bcd_core.model_import import random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.tasks import extract_tasks
from bcd_core.untuned import standard_normal_arguments

REPEAT = 20


def flushed_picks(database: SqliteDatabase, mod: tvm.IRModule, target, top: int) -> ms.database.MemoryDatabase:
    """A database holding, per task, the one of its `top` best records that runs fastest flushed."""
    picked = ms.database.MemoryDatabase()
    changed = 0
    tasks = extract_tasks(mod, target)
    for task in tasks:
        records = database.get_top_k(database.commit_workload(task.mod), top)
        if not records:
            continue
        arguments = standard_normal_arguments(task, tvm.cpu())
        cold = []
        for record in records:
            cold.append(library_us(record_library(task, record, target), arguments, True, REPEAT))
        best = min(range(len(cold)), key=cold.__getitem__)
        changed += best != 0
        print(f"{task.name[:48]:48} x{task.weight:<3} flushed #0 {cold[0]:8.1f} us, pick #{best} {cold[best]:8.1f} us")
        record = records[best]
        workload = picked.commit_workload(task.mod)
        picked.commit_tuning_record(TuningRecord(record.trace, workload, [1.0], record.target, record.args_info))
    print(f"{changed} of {len(tasks)} tasks pick another program")
    return picked


def compile_with_compiled_vm(database: SqliteDatabase, mod: tvm.IRModule, target) -> relax.VMExecutable:
    """`compile_tuned` with the Relax VM's bytecode compiled to native code instead of interpreted
    (`compile_relax` imports `tvm.relax.build` when called, so a wrapper set there takes effect)."""
    build = relax.build
    relax.build = functools.partial(build, exec_mode="compiled")
    try:
        return compile_tuned(database, mod, target)
    finally:
        relax.build = build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--compiled-vm", action="store_true", help="also the runner's picks with exec_mode='compiled'")
    args = parser.parse_args()
    with closing(RecordStore(args.store, create=False)) as store:
        _, target, imported, database = open_session(store, args.model)
        plain = compile_tuned(database, imported.relax_mod, target)
        picked = flushed_picks(database, imported.relax_mod, target, args.top)
        reranked = ms.relax_integration.compile_relax(picked, imported.relax_mod, target, params={})
        compiled_vm = compile_with_compiled_vm(database, imported.relax_mod, target) if args.compiled_vm else None
    dev = tvm.cpu()
    arguments = [tvm.runtime.tensor(a, device=dev) for a in random_inputs(imported.inputs).values()]
    vms = {"runner's picks": relax.VirtualMachine(plain, dev), "flushed picks": relax.VirtualMachine(reranked, dev)}
    if compiled_vm is not None:
        vms["runner's picks, compiled VM"] = relax.VirtualMachine(compiled_vm, dev)
    print_models_in_turns(vms, arguments, args.passes)


if __name__ == "__main__":
    main()
