"""Errors the user can act on. Every message says what went wrong and what to do."""


class BcdError(Exception):
    """Base class: the CLI prints these without a traceback and exits non-zero."""


class ModelLoadError(BcdError):
    """The file is missing, not ONNX, truncated or otherwise unreadable."""


class UnsupportedOperatorError(BcdError):
    """The model uses ONNX operators the Relax frontend cannot import."""

    def __init__(self, operators: list[str], detail: str = "") -> None:
        self.operators = sorted(set(operators))
        names = ", ".join(self.operators)
        msg = f"unsupported ONNX operator(s): {names}. TVM's Relax ONNX frontend cannot import them"
        if detail:
            msg += f" ({detail})"
        msg += "; export the model without them (or with another opset)"
        super().__init__(msg)


class DynamicShapeError(BcdError):
    """An input (or an intermediate tensor) has a dimension that is not a fixed number."""

    def __init__(self, input_name: str, dims: list[object], example: str) -> None:
        self.input_name = input_name
        super().__init__(
            f"input '{input_name}' has a dynamic shape {dims}; tuning needs static shapes. "
            f"Fix it with --input-shape {example}"
        )


class DataDependentShapeError(BcdError):
    """An operator's output shape depends on the values fed to the model, not on its shapes."""


class TensorSizeError(BcdError):
    """A tensor of the model is empty (a zero dimension) or too large to allocate."""


class TargetError(BcdError):
    """The target string, JSON or tag does not name a target TVM can build for."""


class StoreError(BcdError):
    """The records database cannot be used (foreign file, other schema version, locked)."""


class MissingRecordError(BcdError):
    """Compiling from the store would ship untuned code for some task."""

    def __init__(self, task_names: list[str]) -> None:
        self.task_names = task_names
        super().__init__(
            f"{len(task_names)} task(s) have no valid tuning record for this target: "
            f"{', '.join(task_names)}. Tune them first (bcd tune ... --db same.db)"
        )
