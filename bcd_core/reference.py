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


AGREEMENT = 0.10  # two timings within this fraction of each other agree
MOST_TIMINGS = 4


def time_reference(
    model_path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None
) -> tuple[float, float]:
    """onnxruntime's latency, timed in turns until two timings agree: (the mean of the two
    fastest, their spread as a fraction of the faster). A timing taken while something else
    ran is slow; one second timing says whether to trust the first."""
    model = load_onnx(model_path)
    inputs = random_inputs(static_inputs(model, input_shapes))
    timings: list[float] = []
    while len(timings) < MOST_TIMINGS:
        timings = sorted([*timings, run_onnxruntime(model, inputs).median_ms / 1e3])
        if len(timings) >= 2 and timings[1] <= timings[0] * (1 + AGREEMENT):
            break
    fastest, second = timings[0], timings[1]
    if second > fastest * (1 + AGREEMENT):
        log.warning(
            "onnxruntime timings of %s disagree by %.0f %% (another process running?); kept the fastest pair",
            Path(model_path).name,
            (second / fastest - 1) * 100,
        )
    return (fastest + second) / 2, second / fastest - 1


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
        latency, spread = time_reference(model_path, input_shapes)
    except Exception as err:  # noqa: BLE001 - any onnxruntime failure only means no reference
        log.warning("no onnxruntime reference for %s: %s", Path(model_path).name, err)
        return None
    store.record_reference(model_hash, target_key(target), latency, spread)
    return latency


def reference_spread(store: RecordStore, model_hash: str, target: Target) -> float | None:
    """How far the two timings behind the stored reference were apart (a fraction)."""
    timing = None if is_gpu(target) else store.reference_timing(model_hash, target_key(target))
    return None if timing is None else timing[1]


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
