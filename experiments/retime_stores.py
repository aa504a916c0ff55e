"""Recompile each store's newest session and time the models as `bcd bench` does (in turns
with onnxruntime), twice, then once without onnxruntime (a check of one bench reading; on
a GPU store it times on the GPU).

    python experiments/retime_stores.py MODEL.onnx runs/bench-MODEL/metaschedule.db runs/bench-MODEL/bcd.db
"""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path

from e2e_gap import open_session

from bcd_core.bench import measure_in_turns
from bcd_core.export import compile_tuned, export_library, library_runner, target_device
from bcd_core.model_import import load_onnx, random_inputs
from bcd_core.records.store import RecordStore
from bcd_core.timing import time_in_turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("stores", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path("/tmp"), help="folder for the compiled models")
    args = parser.parse_args()
    libraries = {}
    for store_path in args.stores:
        with closing(RecordStore(store_path, create=False)) as store:
            _, target, imported, database = open_session(store, args.model)
            executable = compile_tuned(database, imported.relax_mod, target)
        libraries[store_path.stem] = export_library(executable, args.out / f"{store_path.stem}.so")
    inputs = random_inputs(imported.inputs)
    onnx_model = load_onnx(args.model)
    for _ in range(2):
        medians = measure_in_turns(libraries, onnx_model, inputs, 50, target)
        print("with onnxruntime in turns:", {name: round(ms, 4) for name, ms in medians.items()})
    runners = {name: library_runner(path, inputs, target_device(target)).run for name, path in libraries.items()}
    alone = time_in_turns(runners, 50)
    print("modules alone in turns:", {name: round(timing.median_ms, 4) for name, timing in alone.items()})


if __name__ == "__main__":
    main()
