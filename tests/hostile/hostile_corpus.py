"""Bad inputs users actually feed bcd, generated into a folder (seeded, nothing committed).

Each case pairs a way to make the input with the fragment of the message the user must get.
The fragments are the contract: the CLI prints them as `bcd: error: ...`, the dashboard shows
them in its error dialog, and docs/reliability.md lists them.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import models  # tests/models.py (tests/ is on sys.path, see tests/conftest.py)
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20261122
OPSET = 17


@dataclass(frozen=True)
class HostileCase:
    """`make(folder)` writes the bad input and returns its path; `expected` is in the message."""

    id: str
    make: Callable[[Path], Path]
    expected: str
    cli_args: tuple[str, ...] = field(default=())


def _save_graph(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


# -- bad model files ------------------------------------------------------------------------
def empty_file(folder: Path) -> Path:
    path = folder / "empty.onnx"
    path.write_bytes(b"")
    return path


def random_bytes(folder: Path) -> Path:
    path = folder / "noise.onnx"
    path.write_bytes(np.random.default_rng(SEED).bytes(4096))
    return path


def truncated_onnx(folder: Path) -> Path:
    """A real model cut in the middle of its weights (an interrupted download)."""
    whole = models.convnet(folder / "whole_convnet.onnx")
    data = whole.read_bytes()
    path = folder / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    whole.unlink()
    return path


def unsupported_operator(folder: Path) -> Path:
    return models.unsupported_op(folder / "unsupported.onnx")


def dynamic_shape(folder: Path) -> Path:
    return models.mlp(folder / "dynamic.onnx", dynamic=True)


def _elementwise(path: Path, dims: list[int], elem_type: int = TensorProto.FLOAT, op: str = "Relu") -> Path:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])],
        path.stem,
        [helper.make_tensor_value_info("x", elem_type, dims)],
        [helper.make_tensor_value_info("y", elem_type, dims)],
    )
    return _save_graph(graph, path)


def zero_size_input(folder: Path) -> Path:
    return _elementwise(folder / "zero_size.onnx", [1, 0, 8])


def zero_size_intermediate(folder: Path) -> Path:
    """A static input whose Slice leaves nothing: the zero-size tensor is inside the graph."""
    starts = numpy_helper.from_array(np.array([2], dtype=np.int64), "starts")
    ends = numpy_helper.from_array(np.array([2], dtype=np.int64), "ends")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    graph = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["empty"]),
            helper.make_node("Relu", ["empty"], ["y"]),
        ],
        "zero_size_intermediate",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 0])],
        [starts, ends, axes],
    )
    return _save_graph(graph, folder / "zero_size_intermediate.onnx")


def huge_input(folder: Path) -> Path:
    """1x3x100000x100000 float32 is 112 GiB: declaring it costs nothing, allocating it does."""
    return _elementwise(folder / "huge_input.onnx", [1, 3, 100_000, 100_000])


def huge_intermediate(folder: Path) -> Path:
    """A small input broadcast (Expand) to a 40 GB tensor halfway through the graph."""
    shape = numpy_helper.from_array(np.array([100_000, 100_000], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["wide"]), helper.make_node("Relu", ["wide"], ["y"])],
        "huge_intermediate",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100_000, 100_000])],
        [shape],
    )
    return _save_graph(graph, folder / "huge_intermediate.onnx")


def huge_constant(folder: Path) -> Path:
    """ConstantOfShape with a constant 100000x100000 shape: TVM folds constants at import, so
    only a refusal before import keeps it from allocating 40 GB."""
    shape = numpy_helper.from_array(np.array([100_000, 100_000], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["ones"]), helper.make_node("Add", ["x", "ones"], ["y"])],
        "huge_constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100_000, 100_000])],
        [shape],
    )
    return _save_graph(graph, folder / "huge_constant.onnx")


def int64_only(folder: Path) -> Path:
    return _elementwise(folder / "int64_only.onnx", [1, 16], TensorProto.INT64, op="Neg")


def bool_only(folder: Path) -> Path:
    return _elementwise(folder / "bool_only.onnx", [1, 16], TensorProto.BOOL, op="Not")


def string_input(folder: Path) -> Path:
    return _elementwise(folder / "string_input.onnx", [1, 4], TensorProto.STRING, op="Identity")


# -- bad stores -----------------------------------------------------------------------------
def corrupt_store(folder: Path) -> Path:
    """A real bcd store whose header survives but whose pages are garbage (a bad disk, a
    partial copy): SQLite recognises the file, then finds nonsense."""
    from bcd_core.records.store import RecordStore

    path = folder / "corrupt.db"
    populate_store(RecordStore(path)).close()
    for leftover in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    rng = np.random.default_rng(SEED)
    data[page_size:] = rng.bytes(len(data) - page_size)  # page 1 (header + schema) intact
    path.write_bytes(bytes(data))
    return path


def damaged_tail_store(folder: Path) -> Path:
    """A bcd store whose schema, meta and sessions read fine but whose last pages (where the
    trials live) are garbage: only a look at every page notices before writing into it."""
    from bcd_core.records.store import RecordStore, TrialRow

    path = folder / "damaged_tail.db"
    store = populate_store(RecordStore(path))
    session_id = store.sessions()[0]["id"]
    task = store.tasks(session_id)[0]
    trace = [["step", "x" * 2000]]  # big rows: the trials table spans many pages
    trials = [TrialRow(task["id"], task["workload_id"], 2, 1.0, [1e-5], None, trace, [], "{}") for _ in range(200)]
    store.record_round(session_id, trials)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    pages = len(data) // page_size
    first_bad = pages - pages // 4
    rng = np.random.default_rng(SEED + 2)
    data[first_bad * page_size :] = rng.bytes(len(data) - first_bad * page_size)
    path.write_bytes(bytes(data))
    return path


def foreign_store(folder: Path) -> Path:
    """Another program's SQLite file, e.g. a browser history or a notes app."""
    path = folder / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("create table notes (id integer primary key, text)")
    conn.execute("insert into notes (text) values ('keep me')")
    conn.commit()
    conn.close()
    return path


def not_sqlite_store(folder: Path) -> Path:
    path = folder / "noise.db"
    path.write_bytes(np.random.default_rng(SEED + 1).bytes(8192))
    return path


def populate_store(store):
    """A store that already holds a session (with a task, a trial, a timeline point and an
    event), written through the engine's API: what must survive every bad input."""
    session_id = store.create_session(
        model_path="/models/existing.onnx",
        model_hash="0" * 64,
        target="llvm",
        target_key=json.dumps({"kind": "llvm"}),
        strategy="bcd",
        settings={"trials_per_task": 1},
    )
    from bcd_core.records.store import TrialRow

    workload_id = store.add_workload("shash-existing", {"mod": "existing"})
    store.add_tasks(session_id, [{"idx": 0, "name": "fused_relu", "weight": 1, "workload_id": workload_id}])
    task_id = store.tasks(session_id)[0]["id"]
    trial = TrialRow(task_id, workload_id, 1, 0.5, [1e-5], None, [["trace"]], [], json.dumps({"kind": "llvm"}))
    timeline = {"round": 1, "elapsed_s": 0.5, "task_id": task_id, "trials_done": 1, "estimated_latency_s": 1e-5}
    store.record_round(session_id, [trial], timeline=timeline)
    store.add_event(session_id, 0.5, "info", "existing session")
    store.finish_session(session_id, "completed", 0.5, 0.0)
    return store


def store_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, read without writing (read-only URI, no WAL checkpoint)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table' order by name")]
        return {t: conn.execute(f'select * from "{t}" order by rowid').fetchall() for t in tables}
    finally:
        conn.close()


# -- the corpus -----------------------------------------------------------------------------
def good_model(folder: Path) -> Path:
    return models.mlp(folder / "good_mlp.onnx")


@dataclass(frozen=True)
class Case:
    """One hostile input. `kind` says what is bad: the model file, the target or the store.
    `make(folder)` writes the bad model (kind "model") or the bad store (kind "store")."""

    id: str
    kind: str
    expected: str  # a fragment of the one-line message, the same in the CLI and the dialog
    make: Callable[[Path], Path] = good_model
    target: str = "llvm"


MODEL_CASES = [
    Case("empty-file", "model", "empty.onnx is empty, not an ONNX model; choose the .onnx file", empty_file),
    Case(
        "random-bytes",
        "model",
        "noise.onnx is not a readable ONNX model (truncated or not ONNX)",
        random_bytes,
    ),
    Case(
        "truncated-onnx",
        "model",
        "truncated.onnx is not a readable ONNX model (truncated or not ONNX): Error parsing message",
        truncated_onnx,
    ),
    Case(
        "unsupported-operator",
        "model",
        "unsupported ONNX operator(s): FrobnicateTensor. TVM's Relax ONNX frontend cannot import them; "
        "export the model without them",
        unsupported_operator,
    ),
    Case(
        "dynamic-shape",
        "model",
        "input 'x' has a dynamic shape ['N', 16]; tuning needs static shapes. Fix it with --input-shape x=1,16",
        dynamic_shape,
    ),
    Case(
        "zero-size-input",
        "model",
        "input 'x' has a zero-size dimension in its shape [1, 0, 8], so there is nothing to compute; "
        "give it its real size with --input-shape x=1,N,8",
        zero_size_input,
    ),
    Case(
        "zero-size-intermediate",
        "model",
        "task fused_strided_slice_relu works on a zero-size tensor (shape [1, 0])",
        zero_size_intermediate,
    ),
    Case(
        "huge-input",
        "model",
        "input 'x' would take 111.8 GiB (float32 [1, 3, 100000, 100000]); bcd refuses tensors over 4 GiB",
        huge_input,
    ),
    Case(
        "huge-intermediate",
        "model",
        "tensor 'wide' (output of Expand) would take 37.3 GiB (float32 [100000, 100000])",
        huge_intermediate,
    ),
    Case(
        "huge-constant",
        "model",
        "tensor 'ones' (output of ConstantOfShape) would take 37.3 GiB (float32 [100000, 100000])",
        huge_constant,
    ),
    Case(
        "string-input",
        "model",
        "input 'x' has element type STRING, which bcd cannot feed (it tunes numeric inputs: float, int, bool)",
        string_input,
    ),
]

TARGET_CASES = [
    Case(
        "unknown-target",
        "target",
        "unknown or malformed target 'nosuch': Target kind \"nosuch\" is not defined. Use 'llvm' for this CPU",
        target="nosuch",
    ),
    Case(
        "unknown-target-kind-json",
        "target",
        'unknown or malformed target \'{"kind": "nosuch"}\': Target kind "nosuch" is not defined. Use \'llvm\'',
        target='{"kind": "nosuch"}',
    ),
    Case(
        "malformed-target-json",
        "target",
        'target is not valid JSON (Expecting \',\' delimiter at column 16): {"kind": "llvm"; write a complete JSON',
        target='{"kind": "llvm"',
    ),
    Case(
        "unknown-cpu",
        "target",
        "LLVM does not know the CPU mcpu='nosuchcpu'; leave mcpu out",
        target='{"kind": "llvm", "mcpu": "nosuchcpu"}',
    ),
    Case(
        "negative-cores",
        "target",
        'num-cores=-3 in target \'{"kind": "llvm", "num-cores": -3}\' is not a number of CPU cores',
        target='{"kind": "llvm", "num-cores": -3}',
    ),
]

# Refused as soon as they are opened, by readers (`bcd db sessions`, the dashboard) too.
STORE_CASES = [
    Case("corrupt-store", "store", "corrupt.db is damaged (database disk image is malformed)", corrupt_store),
    Case(
        "foreign-store",
        "store",
        "foreign.db is an SQLite file from another program, not a bcd records database; choose another --db path",
        foreign_store,
    ),
    Case(
        "not-sqlite-store",
        "store",
        "noise.db is not an SQLite file, so not a bcd records database (file is not a database)",
        not_sqlite_store,
    ),
]

# Readable (sessions, schema) but damaged further in: refused when a tune is about to write.
DAMAGED_TAIL_CASE = Case(
    "damaged-tail-store",
    "store",
    "damaged_tail.db is damaged (database disk image is malformed: ",
    damaged_tail_store,
)

LOCKED_STORE_MESSAGE = "locked.db is locked: another process (another bcd or bcd-gui, or an SQLite tool) holds a write"

# Not hostile: models whose only inputs are integers or booleans tune like any other.
ACCEPTED_NON_FLOAT = [("int64-only", int64_only, "tir_negative"), ("bool-only", bool_only, "tir_logical_not")]


LOCKER_CODE = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")  # held until this process is killed
print("locked", flush=True)
time.sleep(600)
"""


def hold_exclusive_lock(path: Path) -> subprocess.Popen:
    """Another process that holds an exclusive transaction on `path` until it is killed."""
    locker = subprocess.Popen([sys.executable, "-c", LOCKER_CODE, str(path)], stdout=subprocess.PIPE, text=True)
    assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
    return locker
