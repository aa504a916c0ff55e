"""ONNX file -> TVM Relax module, with clear errors for the inputs users actually have."""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
import onnx
import tvm
from tvm import relax
from tvm.target import Target

from bcd_core.errors import DynamicShapeError, ModelLoadError, TensorSizeError, UnsupportedOperatorError
from bcd_core.fast_math import apply_fast_math
from bcd_core.layout import LayoutMode, blocked_conversion, is_blocked
from bcd_core.shape_dependence import check_fixed_shapes
from bcd_core.target import is_gpu
from bcd_core.tvm_failures import tvm_step
from bcd_core.tvm_speedups import shared_constant_builds

ONNX_DOMAINS = ("", "ai.onnx")
# Larger tensors would not fit in memory when candidates are measured (inputs, outputs and
# intermediates are allocated for every run), so such models are refused before import.
MAX_TENSOR_BYTES = 4 << 30
ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
}


class MathMode(StrEnum):
    """How erf, exp, tanh, sigmoid and softmax are computed (tuning/options.py lists the values)."""

    # Vectorizable approximations (topi's fast_erf, fast_exp, fast_tanh, fast_softmax; fast_math.py),
    # as onnxruntime's own CPU kernels approximate these functions. Exact erf and exp lower to
    # one libm call per element on CPUs, never vectorized: tens of times slower.
    FAST = "fast"
    EXACT = "exact"  # libm, per element


@dataclass(frozen=True)
class InputSpec:
    """One graph input. `shape` entries are ints, or a str/None for a dynamic dim."""

    name: str
    shape: tuple[int | str | None, ...]
    dtype: str

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d > 0 for d in self.shape)


@dataclass
class ImportedModel:
    path: Path
    sha256: str
    onnx_model: onnx.ModelProto
    inputs: list[InputSpec]
    relax_mod: tvm.IRModule  # raw from_onnx module: compile_relax must get this one
    kept_nchw: int = 0  # blocked layout: convolutions TVM could not carry blocked (layout_fallback.py)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_input_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """`["input=1,3,224,224"]` -> `{"input": (1, 3, 224, 224)}`."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
            if not shape or any(d <= 0 for d in shape):
                raise ValueError
        except ValueError:
            raise ModelLoadError(
                f"bad --input-shape {item!r}: expected NAME=D1,D2,... with positive integers"
            ) from None
        shapes[name.strip()] = shape
    return shapes


def load_onnx(path: str | Path) -> onnx.ModelProto:
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path}")
    if path.stat().st_size == 0:
        raise ModelLoadError(f"{path} is empty, not an ONNX model; choose the .onnx file your exporter wrote")
    try:
        model = onnx.load(str(path))
    except Exception as err:  # protobuf DecodeError and friends
        raise ModelLoadError(
            f"{path} is not a readable ONNX model (truncated or not ONNX): {err}; download or export it again, "
            "or choose another file"
        ) from err
    if not model.graph.node or not model.opset_import:
        raise ModelLoadError(
            f"{path} is not an ONNX model: it holds no graph (is it truncated?); download or export it again"
        )
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0]
        if "No Op registered" not in first:  # unknown ops get their own, clearer message
            raise ModelLoadError(f"{path} is not a valid ONNX model: {first}") from err
    return model


def graph_inputs(model: onnx.ModelProto) -> list[InputSpec]:
    initializers = {init.name for init in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dims: list[int | str | None] = []
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value"):
                dims.append(int(dim.dim_value))
            else:
                dims.append(dim.dim_param or None)
        dtype = ONNX_TO_NUMPY.get(tensor_type.elem_type, f"onnx-type-{tensor_type.elem_type}")
        specs.append(InputSpec(value.name, tuple(dims), dtype))
    return specs


def unsupported_operators(model: onnx.ModelProto) -> list[str]:
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    supported = _get_convert_map()
    missing = set()
    for node in model.graph.node:
        if node.domain not in ONNX_DOMAINS or node.op_type not in supported:
            missing.add(node.op_type if node.domain in ONNX_DOMAINS else f"{node.domain}.{node.op_type}")
    return sorted(missing)


def _apply_shapes(inputs: list[InputSpec], overrides: dict[str, tuple[int, ...]]) -> list[InputSpec]:
    unknown = set(overrides) - {spec.name for spec in inputs}
    if unknown:
        names = ", ".join(spec.name for spec in inputs)
        raise ModelLoadError(f"--input-shape names unknown input(s) {sorted(unknown)}; inputs are: {names}")
    fixed = []
    for spec in inputs:
        if spec.name in overrides:
            shape = overrides[spec.name]
            if len(shape) != len(spec.shape):
                raise ModelLoadError(
                    f"--input-shape for '{spec.name}' has {len(shape)} dims, the model declares {len(spec.shape)}"
                )
            spec = InputSpec(spec.name, tuple(shape), spec.dtype)
        fixed.append(spec)
    return fixed


def _check_static(inputs: list[InputSpec]) -> None:
    for spec in inputs:
        if 0 in spec.shape:  # not "dynamic": a fixed size of nothing, which tuning would divide by
            example = ",".join("N" if d == 0 else str(d) if isinstance(d, int) and d > 0 else "1" for d in spec.shape)
            raise TensorSizeError(
                f"input '{spec.name}' has a zero-size dimension in its shape {list(spec.shape)}, so there is "
                f"nothing to compute; give it its real size with --input-shape {spec.name}={example}"
            )
        if not spec.is_static:
            example = ",".join(str(d) if isinstance(d, int) and d > 0 else "1" for d in spec.shape)
            raise DynamicShapeError(spec.name, list(spec.shape), f"{spec.name}={example}")
        if spec.dtype.startswith("onnx-type"):
            type_name = onnx.TensorProto.DataType.Name(int(spec.dtype.removeprefix("onnx-type-")))
            raise ModelLoadError(
                f"input '{spec.name}' has element type {type_name}, which bcd cannot feed (it tunes numeric "
                "inputs: float, int, bool); re-export the model with a numeric input"
            )


def _tensor_bytes(value: onnx.ValueInfoProto) -> int | None:
    """Bytes of a tensor whose shape is fully known, else None."""
    tensor_type = value.type.tensor_type
    dims = tensor_type.shape.dim
    if not value.type.HasField("tensor_type") or not all(d.HasField("dim_value") for d in dims):
        return None
    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).itemsize
    except (KeyError, TypeError, ValueError):  # strings, float8 and friends: no fixed size here
        return None
    return int(np.prod([d.dim_value for d in dims], dtype=object)) * itemsize


def check_tensor_sizes(model: onnx.ModelProto, inputs: list[InputSpec], limit: int = MAX_TENSOR_BYTES) -> None:
    """Refuse a model any of whose tensors (inputs, intermediates, outputs) would exceed `limit`
    bytes, from static shapes only: nothing is allocated. Intermediates come from ONNX shape
    inference with the inputs fixed; TVM's constant folding would otherwise allocate them."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    fixed = {spec.name: spec.shape for spec in inputs}
    for value in probe.graph.input:
        if value.name in fixed:
            value.type.tensor_type.shape.ClearField("dim")
            for size in fixed[value.name]:
                value.type.tensor_type.shape.dim.add().dim_value = int(size)  # type: ignore[arg-type]
    try:
        probe = onnx.shape_inference.infer_shapes(probe, data_prop=True)
    except Exception:  # over 2 GB or not inferable: the inputs' own sizes are still checked
        pass
    producers = {out: node.op_type for node in probe.graph.node for out in node.output}
    for value in [*probe.graph.input, *probe.graph.value_info, *probe.graph.output]:
        size = _tensor_bytes(value)
        if size is None or size <= limit:
            continue
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = ONNX_TO_NUMPY.get(value.type.tensor_type.elem_type, "tensor")
        what = f"input '{value.name}'" if value.name in fixed else f"tensor '{value.name}'"
        if value.name in producers:
            what += f" (output of {producers[value.name]})"
        raise TensorSizeError(
            f"{what} would take {size / (1 << 30):,.1f} GiB ({dtype} {dims}); bcd refuses tensors over "
            f"{limit >> 30} GiB, which would not fit in memory when measuring. Use smaller input shapes "
            "(--input-shape NAME=D1,D2,...) or a smaller model"
        )


def static_inputs(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None) -> list[InputSpec]:
    """The model's inputs with the user's shape overrides, all static (else a clear error)."""
    inputs = _apply_shapes(graph_inputs(model), input_shapes or {})
    _check_static(inputs)
    return inputs


def import_model(
    path: str | Path,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    math: str = MathMode.EXACT,
    layout: str = LayoutMode.PLAIN,
    target: Target | None = None,
) -> ImportedModel:
    """Load, validate and import an ONNX model into Relax (weights bound as constants), with
    erf, exp, tanh, sigmoid and softmax as `math` (MathMode) says and convolutions in `layout`
    (LayoutMode; blocked needs the CPU `target`). Tuning, export and inspection of one session
    must import alike: the tasks differ."""
    if math not in tuple(MathMode):
        raise ValueError(f"math must be one of {', '.join(MathMode)}, not {math!r}")
    if layout not in tuple(LayoutMode):
        raise ValueError(f"layout must be one of {', '.join(LayoutMode)}, not {layout!r}")
    if is_blocked(layout) and (target is None or is_gpu(target)):
        raise ModelLoadError("the blocked layout is for CPU targets; tune a GPU with --layout nchw")
    path = Path(path)
    model = load_onnx(path)
    missing = unsupported_operators(model)
    if missing:
        raise UnsupportedOperatorError(missing)
    inputs = static_inputs(model, input_shapes)
    check_tensor_sizes(model, inputs)
    check_fixed_shapes(model)
    from tvm.relax.frontend.onnx import from_onnx

    def convert() -> tvm.IRModule:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the frontend re-runs the checker and warns loudly
            return from_onnx(
                model,
                shape_dict={spec.name: list(spec.shape) for spec in inputs},
                dtype_dict={spec.name: spec.dtype for spec in inputs},
                keep_params_in_input=False,
            )

    mod = tvm_step(f"importing {path.name}", convert)
    fast = apply_fast_math if math == MathMode.FAST else None
    kept_nchw = 0
    if is_blocked(layout):  # approximated once converted (layout.py)
        converting = "converting convolutions to the blocked layout"
        winograd = layout == LayoutMode.WINOGRAD
        blocked = tvm_step(converting, lambda: blocked_conversion(mod, target, fast, winograd), mod)
        mod, kept_nchw = blocked.mod, blocked.kept_nchw
    elif fast is not None:
        mod = tvm_step("approximating erf, exp, tanh and sigmoid", lambda: fast(mod), mod)
    return ImportedModel(path, file_sha256(path), model, inputs, mod, kept_nchw)


def fusion_passes(target: Target) -> list[tvm.transform.Pass]:
    """The passes `compile_relax` fuses a model with before it applies the database: task
    extraction and the tuned build (tuned_build.py) must both fuse exactly so, or lookups miss
    silently and ship untuned code."""
    from tvm.relax import pipeline as relax_pipeline

    try:
        dispatch = list(relax_pipeline.library_dispatch_passes(target))
    except (ValueError, AttributeError):
        dispatch = []
    return [
        *dispatch,
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]


def fuse_for_tuning(raw_mod: tvm.IRModule, target: Target) -> tvm.IRModule:
    """The model fused as `compile_relax` fuses it, so extracted tasks match its lookups."""
    with target, tvm.transform.PassContext(opt_level=3), shared_constant_builds():
        return tvm.transform.Sequential(fusion_passes(target))(raw_mod)


def random_inputs(inputs: list[InputSpec], seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for checks and latency runs; integers stay small so they are valid indices."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in inputs:
        shape = tuple(int(d) for d in spec.shape)  # type: ignore[arg-type]
        if spec.dtype == "bool":
            arrays[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif spec.dtype.startswith(("int", "uint")):
            arrays[spec.name] = rng.integers(0, 2, size=shape).astype(spec.dtype)
        else:
            arrays[spec.name] = rng.standard_normal(size=shape).astype(spec.dtype)
    return arrays
