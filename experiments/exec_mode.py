"""Does the Relax VM's compiled mode cut the time a model spends between its kernels?

    python experiments/exec_mode.py STORE MODEL [--layout blocked|nchw]

Compiles the store's tuned model twice, with the VM's bytecode interpreted (`exec_mode=
"bytecode"`, what bcd exported before bcd_core/tuned_build.py) and compiled to TIR
(`exec_mode="compiled"`, what it exports on CPUs now), and times both in turns (100 runs a
pass, 5 passes). Run it alone: wall-clock figures.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bcd_core import export
from bcd_core.model_import import import_model, random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_target, target_key
from bcd_core.timing import time_in_turns
from bcd_core.tuned_build import BYTECODE, COMPILED

MODES = (BYTECODE, COMPILED)


def build_library(database: SqliteDatabase, imported, mode: str, out: Path) -> Path:
    executable = export.compile_tuned(database, imported.relax_mod, host_target(), vm_mode=mode)
    return export.export_library(executable, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("model")
    parser.add_argument("--layout", default="blocked", choices=("blocked", "nchw"))
    args = parser.parse_args()
    target = host_target()
    database = SqliteDatabase(RecordStore(args.store), target_key(target))
    imported = import_model(args.model, {}, "fast", args.layout, target)
    folder = Path(tempfile.mkdtemp(prefix="bcd-exec-mode-"))
    libraries = {mode: build_library(database, imported, mode, folder / f"{mode}.so") for mode in MODES}
    inputs, device = random_inputs(imported.inputs), export.target_device(target)
    runners = {mode: export.library_runner(path, inputs, device) for mode, path in libraries.items()}
    timed = time_in_turns({mode: runner.run for mode, runner in runners.items()}, 100, 5)
    for mode, timing in timed.items():
        print(f"{mode:9} {timing.median_ms:.4f} ms")


if __name__ == "__main__":
    main()
