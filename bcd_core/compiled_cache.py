"""Compiled models kept by what they were compiled from, so the library a tune timed is the
library export writes.

A tune compiles and times the whole model at its milestones; `bcd export` and `bcd bench`
then compiled the same records again, which costs as much again (more on a GPU) and, strictly,
hands the user a library other than the one whose latency was shown. Each compiled library is
kept under a key of everything the compiler reads: the model (its file's hash and the imported
module's structure), the target, the record applied to each task, the tasks left untuned, and
TVM's and bcd's code. A later compile with the same key copies the kept file. Only the newest
few are kept.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tvm
import tvm_ffi
from tvm.target import Target

from bcd_core.records.database import SqliteDatabase
from bcd_core.tasks import extract_tasks

KEPT = 6  # libraries kept (a big CNN's weights make each tens of MB)
SWITCH = "BCD_CACHE_DIR"  # where they are kept; the tests point it at a temporary folder


def cache_dir() -> Path:
    if os.environ.get(SWITCH):
        return Path(os.environ[SWITCH])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "bcd" / "libraries"


@lru_cache(maxsize=1)
def _code_hash() -> str:
    """bcd's own sources: a change to how a model is imported or compiled must miss the cache."""
    digest = hashlib.sha256(tvm.__version__.encode())
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class AppliedRecords:
    """What the compiler will apply: per task, the stored row of its record (None: none)."""

    rows: dict[str, dict | None]

    @property
    def missing(self) -> list[str]:
        return [name for name, row in self.rows.items() if row is None]


def applied_records(database: SqliteDatabase, raw_mod: tvm.IRModule, target: Target) -> AppliedRecords:
    rows = {}
    for task in extract_tasks(raw_mod, target):
        rows[task.name] = database.applied_row(task.mod)
    return AppliedRecords(rows)


def library_key(
    model_sha256: str, raw_mod: tvm.IRModule, target: Target, applied: AppliedRecords, untuned: Collection[str]
) -> str:
    digest = hashlib.sha256()
    for part in (model_sha256, str(tvm_ffi.structural_hash(raw_mod)), str(target), _code_hash()):
        digest.update(part.encode() + b"\0")
    for name, row in sorted(applied.rows.items()):
        record = f"{row['workload_id']}:{row['target_key']}:{row['trace']}" if row else "untuned"
        digest.update(f"{name}\0{record}\0".encode())
    digest.update("\0".join(sorted(untuned)).encode())
    return digest.hexdigest()[:32]


def kept_library(key: str) -> Path | None:
    path = cache_dir() / f"{key}.so"
    return path if path.is_file() else None


def keep_library(key: str, library: Path) -> None:
    """Copy `library` into the cache (written under a temporary name, then renamed, so a reader
    never finds half a file); drop the oldest beyond KEPT. A cache that cannot be written is
    skipped: it only saves time."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{key}.{os.getpid()}.part"
        shutil.copyfile(library, partial)
        partial.replace(folder / f"{key}.so")
        kept = sorted(folder.glob("*.so"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[KEPT:]:
            old.unlink(missing_ok=True)
    except OSError:
        return


def reuse_or_compile(key: str, out_path: Path, compile_to: Callable[[Path], Path]) -> tuple[Path, bool]:
    """Write the library for `key` to `out_path`: the kept one if there is one, else what
    `compile_to(out_path)` writes (then kept). Returns the path and whether it was reused."""
    kept = kept_library(key)
    if kept is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept, out_path)
        os.utime(kept)  # recently used: kept longer
        return out_path, True
    written = compile_to(out_path)
    keep_library(key, written)
    return written, False
