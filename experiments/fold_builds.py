"""Task extraction with and without shared constant-folding builds, per model.

    python experiments/fold_builds.py $MODELS/*.onnx runs/unseen_cnn.onnx

For every model: the seconds `extract_tasks` takes with TVM's own builds (one LLVM module per
folded expression) and with `shared_constant_builds` (one per distinct function), how many
builds each made, and whether both gave the same tasks (names, weights, sketch keys and
structural hashes). The first model also pays one-time loading on its first, unshared, pass.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import tvm_ffi

import bcd_core.model_import
from bcd_core.model_import import import_model
from bcd_core.target import host_target
from bcd_core.tasks import extract_tasks
from bcd_core.tvm_speedups import shared_constant_builds

# The build counter is test support (tests/tvm_builds.py), not part of the installed package;
# appended so that nothing in tests/ can shadow an installed module.
sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
from tvm_builds import counted_builds  # noqa: E402


def extraction(path: str, sharing: bool) -> tuple[float, int, list[tuple]]:
    """(seconds, builds, task identities) of one extraction of `path`."""
    bcd_core.model_import.shared_constant_builds = shared_constant_builds if sharing else contextlib.nullcontext
    raw = import_model(path).relax_mod
    with counted_builds() as built:
        started = time.perf_counter()
        tasks = extract_tasks(raw, host_target())
        seconds = time.perf_counter() - started
    identities = [(t.name, t.weight, t.sketch_key, int(tvm_ffi.structural_hash(t.mod))) for t in tasks]
    return seconds, len(built), identities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    print("| model | extraction, TVM's builds | shared | builds, TVM's / shared | same tasks |")
    print("|---|---|---|---|---|")
    for path in args.models:
        plain_s, plain_builds, plain_tasks = extraction(path, sharing=False)
        shared_s, shared_builds, shared_tasks = extraction(path, sharing=True)
        same = "yes" if plain_tasks == shared_tasks else "**no**"
        name = path.rsplit("/", 1)[-1]
        print(f"| {name} | {plain_s:.2f} s | {shared_s:.2f} s | {plain_builds} / {shared_builds} | {same} |")


if __name__ == "__main__":
    main()
