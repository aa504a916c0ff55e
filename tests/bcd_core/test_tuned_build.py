"""The tuned build: the VM's own function compiled on CPUs, the model's outputs unchanged."""

from pathlib import Path

import numpy as np
import pytest
import tvm

from bcd_core.export import compare_outputs, compile_tuned, export_library, library_runner, run_onnxruntime
from bcd_core.model_import import import_model, random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import target_key
from bcd_core.tuned_build import BYTECODE, COMPILED, exec_mode
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


def vm_mode_of(executable) -> str:
    """The VM's listing names a compiled main function `vm_tir_func`; bytecode lists its calls."""
    return COMPILED if "vm_tir_func" in executable.as_text() else BYTECODE


def test_cpus_compile_the_vm_function_and_gpus_keep_its_bytecode(host) -> None:
    assert exec_mode(host) == COMPILED
    assert exec_mode(tvm.target.Target({"kind": "cuda", "arch": "sm_80"}, host="llvm")) == BYTECODE


@pytest.mark.slow
def test_both_modes_run_the_tuned_model_alike_and_match_onnxruntime(tmp_path: Path, tiny_convnet: Path, host) -> None:
    db = tmp_path / "tuned.db"
    settings = TuneSettings(trials_per_task=4, trials_per_round=2)
    run_session(tiny_convnet, db, host, settings)
    database = SqliteDatabase(RecordStore(db), target_key(host))
    imported = import_model(tiny_convnet, math=settings.math)
    inputs = random_inputs(imported.inputs)
    executables = {mode: compile_tuned(database, imported.relax_mod, host, vm_mode=mode) for mode in (BYTECODE, None)}
    assert vm_mode_of(executables[BYTECODE]) == BYTECODE
    assert vm_mode_of(executables[None]) == COMPILED, "export does not compile the VM function on this CPU"
    outputs = {
        mode: library_runner(export_library(executable, tmp_path / str(mode)), inputs).outputs
        for mode, executable in executables.items()
    }
    reference = run_onnxruntime(imported.onnx_model, inputs, runs=1).outputs
    assert compare_outputs(outputs[None], reference).matches
    np.testing.assert_array_equal(outputs[None][0], outputs[BYTECODE][0])
