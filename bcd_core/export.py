"""Compile a tuned model from the store, export it, and check it against onnxruntime."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import tvm
from tvm import relax
from tvm.target import Target

from bcd_core.compiled_cache import AppliedRecords, applied_records, library_key, reuse_or_compile
from bcd_core.errors import BcdError, MissingRecordError
from bcd_core.model_import import InputSpec, MathMode, file_sha256, import_model, random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.states import TaskStatus
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import session_layout, session_timing
from bcd_core.target import host_core_count, is_gpu, target_key
from bcd_core.timing import RUNS, Timing, time_in_turns, time_runs
from bcd_core.tuned_build import build_tuned
from bcd_core.tvm_speedups import load_tensor_intrinsics, shared_constant_builds

Progress = Callable[[str], None]


def missing_records(database: SqliteDatabase, raw_mod: tvm.IRModule, target: Target) -> list[str]:
    """Tasks the tuned build would find no record for (it would silently leave them untuned)."""
    return applied_records(database, raw_mod, target).missing


def check_every_task_has_a_record(missing: list[str], untuned_ok: Collection[str], target: Target) -> None:
    """Raise for a task without a record, unless the user skipped it and the target (a CPU) can
    compile it unscheduled."""
    lacking = [name for name in missing if name not in untuned_ok or is_gpu(target)]
    if lacking:
        raise MissingRecordError(lacking)


def compile_tuned(
    database: SqliteDatabase,
    raw_mod: tvm.IRModule,
    target: Target,
    progress: Progress = lambda _: None,
    untuned_ok: Collection[str] = (),
    missing: list[str] | None = None,
    vm_mode: str | None = None,
) -> relax.VMExecutable:
    """Build the whole model with the best stored program of every task.

    `raw_mod` must be the module straight from the importer: the build (tuned_build.py) fuses it
    itself, and a pre-fused module makes every lookup miss. Tasks named in `untuned_ok` (the
    user skipped them) may lack a record: on a CPU they are compiled unscheduled. `missing`:
    `missing_records` of the same module, when the caller has it already (it extracts tasks).
    `vm_mode`: the VM function's exec_mode, when not the target's (tuned_build.exec_mode)."""
    progress("checking that every task has a tuning record")
    if missing is None:
        missing = missing_records(database, raw_mod, target)
    check_every_task_has_a_record(missing, untuned_ok, target)
    load_tensor_intrinsics(target)
    progress("compiling the tuned model")
    with shared_constant_builds():
        return build_tuned(database, raw_mod, target, vm_mode)


LIBRARY_SUFFIXES = (".so", ".dylib", ".dll", ".tar")


def library_path(out: str | Path) -> Path:
    """Where a module asked to be written to `out` goes: TVM's loader picks the file format by
    suffix, so a name without one gets `.so`."""
    out = Path(out)
    return out if out.suffix in LIBRARY_SUFFIXES else out.with_name(out.name + ".so")


def export_library(executable: relax.VMExecutable, out_path: str | Path) -> Path:
    out_path = library_path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    executable.export_library(str(out_path))
    return out_path


def compile_library(
    database: SqliteDatabase,
    imported: Any,
    target: Target,
    out: str | Path,
    untuned_ok: Collection[str] = (),
    applied: AppliedRecords | None = None,
) -> tuple[Path, bool]:
    """The library of `imported` (an ImportedModel) with the database's best records, written to
    `out`: the one compiled earlier from the same model, records and code if it is kept
    (compiled_cache.py), else compiled now. Returns its path and whether it was reused.
    `applied`: `applied_records` of the same module, when the caller has it (it extracts tasks)."""
    applied = applied or applied_records(database, imported.relax_mod, target)
    key = library_key(imported.sha256, imported.relax_mod, target, applied, untuned_ok)

    def compile_to(path: Path) -> Path:
        executable = compile_tuned(database, imported.relax_mod, target, untuned_ok=untuned_ok, missing=applied.missing)
        return export_library(executable, path)

    check_every_task_has_a_record(applied.missing, untuned_ok, target)
    return reuse_or_compile(key, library_path(out), compile_to)


def _to_numpy(value: Any) -> list[np.ndarray]:
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [array for item in value for array in _to_numpy(item)]


@dataclass
class LatencyResult:
    timing: Timing
    outputs: list[np.ndarray]

    @property
    def median_ms(self) -> float:
        return self.timing.median_ms

    @property
    def runs(self) -> int:
        return self.timing.runs


def device_for(kind: str) -> tvm.runtime.Device:
    if kind == "cuda":
        if not tvm.runtime.enabled("cuda") or not tvm.cuda().exist:
            raise BcdError("no CUDA device here; run the CUDA module on a machine with an NVIDIA GPU")
        return tvm.cuda()
    return tvm.cpu()


@dataclass
class Runner:
    """One ready-to-time model: `run` does one inference (and waits for it); `outputs` are
    those of its first run, to compare."""

    run: Callable[[], None]
    outputs: list[np.ndarray]


def library_runner(library_path: str | Path, inputs: dict[str, np.ndarray], device: str = "cpu") -> Runner:
    """An exported module loaded into a VM with `inputs` (in the model's input order)."""
    library_path = Path(library_path)
    if not library_path.is_file():
        raise BcdError(f"compiled module not found: {library_path}")
    try:
        library = tvm.runtime.load_module(str(library_path))
    except Exception as err:
        raise BcdError(f"{library_path} is not a module TVM can load: {str(err).splitlines()[0]}") from err
    dev = device_for(device)
    vm = relax.VirtualMachine(library, dev)
    arguments = [tvm.runtime.tensor(array, device=dev) for array in inputs.values()]
    main = vm["main"]

    def run() -> None:
        main(*arguments)
        dev.sync()

    return Runner(run, _to_numpy(main(*arguments)))


def onnxruntime_session(model: onnx.ModelProto, threads: int, config: Mapping[str, str] | None = None) -> Any:
    """An onnxruntime CPU session of `model` with `threads` intra-op threads (0: onnxruntime's
    choice) and session config entries `config`."""
    import onnxruntime as ort

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, 10)  # onnx 1.23 writes IR 14; onnxruntime 1.31 rejects it
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])


def onnxruntime_runner(model: onnx.ModelProto, inputs: dict[str, np.ndarray], threads: int | None = None) -> Runner:
    """onnxruntime on the CPU with the same inputs and thread count: the deployment alternative."""
    session = onnxruntime_session(model, threads or host_core_count())
    return Runner(lambda: session.run(None, inputs), [np.asarray(o) for o in session.run(None, inputs)])


def run_onnxruntime(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray], runs: int = RUNS, threads: int | None = None
) -> LatencyResult:
    """onnxruntime on `inputs`, timed the same way as a module."""
    runner = onnxruntime_runner(model, inputs, threads)
    return LatencyResult(time_runs(runner.run, runs), runner.outputs)


# The error allowed in a float output, relative to its largest magnitude (at least 1): 16-bit
# floats round at about 1e-3 of a value and TVM accumulates them in their own precision where
# onnxruntime uses float32, so they get ten times the room. Integer and boolean outputs must be
# equal.
TOLERANCE = 1e-3
HALF_PRECISION_TOLERANCE = 1e-2


@dataclass
class OutputComparison:
    """An output against onnxruntime's: its largest absolute error (inf where only one side is
    NaN or infinite), and the absolute error its tolerance allows."""

    max_abs_error: float
    tolerance: float

    @property
    def excess(self) -> float:
        """The error as a multiple of what is allowed (over 1: the outputs differ)."""
        if self.tolerance > 0:
            return self.max_abs_error / self.tolerance
        return 0.0 if self.max_abs_error == 0 else float("inf")

    @property
    def matches(self) -> bool:
        return self.excess <= 1

    def describe(self) -> str:
        return f"max abs error {self.max_abs_error:.3g} (tolerance {self.tolerance:.3g})"


@dataclass
class CheckReport:
    tvm: LatencyResult
    onnxruntime: LatencyResult | None
    comparison: OutputComparison | None

    @property
    def matches(self) -> bool | None:
        return None if self.comparison is None else self.comparison.matches


def allowed_error(reference: np.ndarray, tolerance: float | None = None) -> float:
    """The absolute error allowed in an output like `reference`: for floats `tolerance` (by
    default by precision) times its largest finite magnitude or 1, whichever is larger."""
    if reference.dtype.kind != "f":
        return 0.0
    if tolerance is None:
        tolerance = HALF_PRECISION_TOLERANCE if reference.dtype.itemsize == 2 else TOLERANCE
    finite = np.abs(reference[np.isfinite(reference)].astype(np.float64))
    return tolerance * max(1.0, float(finite.max()) if finite.size else 0.0)


def largest_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max |ours - reference|, where NaNs and infinities agree only with their like."""
    a, b = ours.astype(np.float64), reference.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    agree = (a == b) | (np.isnan(a) & np.isnan(b))
    return float(np.nan_to_num(np.where(agree, 0.0, diff), nan=np.inf, posinf=np.inf).max())


def compare_outputs(
    ours: list[np.ndarray], reference: list[np.ndarray], tolerance: float | None = None
) -> OutputComparison:
    """The output furthest from onnxruntime's, relative to what its tolerance allows."""
    if len(ours) != len(reference):
        raise BcdError(f"the module returns {len(ours)} outputs, onnxruntime {len(reference)}")
    comparisons = []
    for a, b in zip(ours, reference):
        if a.shape != b.shape:
            raise BcdError(f"output shape {a.shape} differs from onnxruntime's {b.shape}")
        if a.size:
            comparisons.append(OutputComparison(largest_error(a, b), allowed_error(b, tolerance)))
    return max(comparisons, key=lambda c: c.excess) if comparisons else OutputComparison(0.0, TOLERANCE)


def check_library(
    library_path: str | Path,
    inputs_spec: list[InputSpec],
    onnx_model: onnx.ModelProto | None,
    runs: int = RUNS,
    seed: int = 0,
    tolerance: float | None = None,
    device: str = "cpu",
) -> CheckReport:
    """Run the module and (given the model) onnxruntime on the same random input: compare the
    outputs, and time both in turns (bcd_core/timing.py)."""
    inputs = random_inputs(inputs_spec, seed)
    ours = library_runner(library_path, inputs, device)
    if onnx_model is None:
        return CheckReport(LatencyResult(time_runs(ours.run, runs), ours.outputs), None, None)
    theirs = onnxruntime_runner(onnx_model, inputs)
    timings = time_in_turns({"tvm": ours.run, "onnxruntime": theirs.run}, runs)
    return CheckReport(
        LatencyResult(timings["tvm"], ours.outputs),
        LatencyResult(timings["onnxruntime"], theirs.outputs),
        compare_outputs(ours.outputs, theirs.outputs, tolerance),
    )


def target_device(target: Target) -> str:
    return "cuda" if is_gpu(target) and target.kind.name == "cuda" else "cpu"


def session_model_path(session: dict[str, Any], model: str | Path | None = None) -> Path:
    """The ONNX file a session tuned (or `model` in its place), checked to be the same file."""
    model_path = Path(model) if model else Path(session["model_path"])
    if not model_path.is_file():
        raise BcdError(f"the session's model {model_path} is gone; pass its new location with --model")
    if file_sha256(model_path) != session["model_hash"]:
        raise BcdError(f"{model_path} is not the model session {session['id']} tuned (its contents differ)")
    return model_path


def session_target(session: dict[str, Any]) -> Target:
    return Target(json.loads(session["target"]))


def session_input_shapes(session: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    settings = json.loads(session["settings"] or "{}")
    return {k: tuple(v) for k, v in settings.get("input_shapes", {}).items()}


def session_math(session: dict[str, Any]) -> str:
    """How the session's model was imported (sessions stored before the option: exact)."""
    return json.loads(session["settings"] or "{}").get("math", MathMode.EXACT)


@dataclass
class ExportResult:
    path: Path
    session_id: int
    check: CheckReport | None
    untuned: list[str] = field(default_factory=list)  # skipped before any measurement: compiled unscheduled


EXPORT_STEPS = 4  # import, compile, write, check


def export_tuned_session(
    store: RecordStore,
    session_id: int,
    out: str | Path,
    model: str | Path | None = None,
    check: bool = True,
    runs: int = RUNS,
    progress: Callable[[int, int, str], None] = lambda step, total, text: None,
) -> ExportResult:
    """Compile a session's model with its best records, write the shared library, and (with
    `check`) run it against onnxruntime on the same random input. `progress(step, total, text)`
    is called before each step."""
    session = store.session(session_id)
    model_path = session_model_path(session, model)
    target = session_target(session)
    progress(0, EXPORT_STEPS, f"importing {model_path.name}")
    imported = import_model(
        model_path, session_input_shapes(session), session_math(session), session_layout(session), target
    )
    database = SqliteDatabase(store, target_key(target), timing=session_timing(session))
    progress(1, EXPORT_STEPS, "compiling the tuned model")
    skipped = [row["name"] for row in store.tasks(session_id) if row["status"] == TaskStatus.SKIPPED]
    applied = applied_records(database, imported.relax_mod, target)
    untuned = [name for name in applied.missing if name in skipped]
    path, reused = compile_library(database, imported, target, out, untuned_ok=skipped, applied=applied)
    done = "compiled" if not reused else "reused: compiled before from the same records (a tune's last milestone)"
    progress(2, EXPORT_STEPS, f"wrote {path.name} ({done})")
    report = None
    if check:
        progress(3, EXPORT_STEPS, "checking the module against onnxruntime")
        report = check_library(path, imported.inputs, imported.onnx_model, runs=runs, device=target_device(target))
    progress(EXPORT_STEPS, EXPORT_STEPS, f"exported {path.name}")
    return ExportResult(path, session_id, report, untuned)
