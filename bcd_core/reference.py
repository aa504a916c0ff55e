"""onnxruntime on this machine: the deployment alternative a user compares the tuned model
with. Timed once per model and target and kept in the store (`reference` table), so the
dashboard's reference line and the report's ratio read the same on every open.

CPU (llvm) targets only: onnxruntime runs here on the CPU, which says nothing about a GPU.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tvm.target import Target

from bcd_core.errors import BcdError
from bcd_core.export import run_onnxruntime, session_input_shapes, session_model_path, session_target
from bcd_core.model_import import load_onnx, random_inputs, static_inputs
from bcd_core.records.store import RecordStore
from bcd_core.target import is_gpu, target_key

log = logging.getLogger("bcd.reference")


def time_onnxruntime_s(model_path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> float:
    """Median seconds per run of onnxruntime on this CPU (host threads), timed the way every
    latency bcd prints is (bcd_core/timing.py)."""
    model = load_onnx(model_path)
    inputs = random_inputs(static_inputs(model, input_shapes))
    return run_onnxruntime(model, inputs).median_ms / 1e3


def known_reference(store: RecordStore, model_hash: str, target: Target) -> float | None:
    """onnxruntime's latency for this model on this target if the store has it (never timed)."""
    return None if is_gpu(target) else store.reference_latency(model_hash, target_key(target))


def stored_reference(
    store: RecordStore,
    model_path: str | Path,
    model_hash: str,
    target: Target,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> float | None:
    """onnxruntime's latency for this model on this machine: from the store, or timed now and
    stored. None for a GPU target, or when onnxruntime cannot run the model (said in the log)."""
    known = known_reference(store, model_hash, target)
    if known is not None or is_gpu(target):
        return known
    try:
        latency = time_onnxruntime_s(model_path, input_shapes)
    except Exception as err:  # noqa: BLE001 - any onnxruntime failure only means no reference
        log.warning("no onnxruntime reference for %s: %s", Path(model_path).name, err)
        return None
    store.record_reference(model_hash, target_key(target), latency)
    return latency


def known_session_reference(store: RecordStore, session: dict) -> float | None:
    """onnxruntime's latency for a stored session's model if the store has it (never timed)."""
    return known_reference(store, session["model_hash"], session_target(session))


def session_reference(store: RecordStore, session: dict) -> float | None:
    """onnxruntime's latency for a stored session's model: from the store, or timed now when the
    session's model file is still where it was tuned (unchanged). None when it cannot be had."""
    target = session_target(session)
    known = known_reference(store, session["model_hash"], target)
    if known is not None or is_gpu(target):
        return known
    try:
        model_path = session_model_path(session)
    except BcdError as err:
        log.info("no onnxruntime reference: %s", err)
        return None
    return stored_reference(store, model_path, session["model_hash"], target, session_input_shapes(session))
