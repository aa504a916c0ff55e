"""TVM's failures while importing and lowering a model, turned into errors a user can act on.

TVM's ONNX frontend prints the operator it failed on to stdout, its C++ side warns on stderr
when a half-built module is destroyed, and what it raises is a deep traceback naming neither
the ONNX operator nor the fix. Each step that hands a model to TVM runs through `tvm_step`:
what it prints is kept back unless the user asked for more output (`bcd -v`), and a failure
becomes one ModelLoadError naming the operator and what to do.
"""

from __future__ import annotations

import gc
import io
import logging
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable
from contextlib import nullcontext, redirect_stdout
from typing import TypeVar

import tvm
from tvm import relax

from bcd_core.errors import BcdError, ModelLoadError

log = logging.getLogger("bcd.tvm")
T = TypeVar("T")
_FRONTEND_OPERATOR = re.compile(r"Error converting operator (\w+)")
ADVICE = "run with -v to see TVM's own error"


def verbose() -> bool:
    """Whether the user asked for more output: TVM's prints and tracebacks are then shown."""
    return logging.getLogger("bcd").isEnabledFor(logging.INFO)


class MutedStderr:
    """File descriptor 2 pointed at a scratch file while TVM works: its C++ warnings bypass
    Python's sys.stderr. What was written there is passed on afterwards unless discarded."""

    def __init__(self) -> None:
        self._saved: int | None = None
        self._scratch = tempfile.TemporaryFile()
        self.discard = False

    def __enter__(self) -> MutedStderr:
        sys.stderr.flush()
        self._saved = os.dup(2)
        os.dup2(self._scratch.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            os.dup2(self._saved, 2)
            os.close(self._saved)
        if not self.discard:
            self._scratch.seek(0)
            sys.stderr.write(self._scratch.read().decode(errors="replace"))
        self._scratch.close()


def error_summary(err: BaseException) -> str:
    """The line of a TVM error that says what failed (a failed check, else the first line)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    for line in lines:
        if "Check failed" in line:
            return line.split("Check failed:", 1)[1].strip().split(" is false: ")[-1]
    if lines:
        return lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return type(err).__name__


def failing_operator(mod: tvm.IRModule) -> tuple[str, str] | None:
    """The first Relax operator of `mod` that TVM cannot lower on its own, with TVM's reason.

    Each call is legalized alone in a scratch function, so a whole-module pass that failed
    somewhere can be traced to the one operator (say `power` on integers) the user can change."""
    for func in mod.functions.values():
        if not isinstance(func, relax.Function) or not isinstance(func.body, relax.SeqExpr):
            continue
        for block in func.body.blocks:
            for binding in block.bindings:
                call = binding.value
                if not isinstance(call, relax.Call) or not isinstance(call.op, tvm.ir.Op):
                    continue
                legalize = call.op.get_attr("FLegalize")
                if legalize is None:
                    continue
                builder = relax.BlockBuilder()
                try:
                    with builder.function("probe", []):
                        builder.emit_func_output(builder.emit(legalize(builder, call)))
                except Exception as err:  # noqa: BLE001 - TVM raises many kinds; each is the answer here
                    return call.op.name.removeprefix("relax."), error_summary(err)
    return None


def _describe(what: str, err: BaseException, printed: str, mod: tvm.IRModule | None) -> str:
    frontend_op = _FRONTEND_OPERATOR.search(printed)
    if frontend_op:
        return (
            f"TVM's ONNX importer cannot convert this model's {frontend_op.group(1)} operator: "
            f"{error_summary(err)}. Export the model without it, with another opset, or with its "
            f"shape arguments as constants ({ADVICE})"
        )
    operator = failing_operator(mod) if mod is not None else None
    if operator:
        name, reason = operator
        return (
            f"TVM cannot compile this model's {name} operator ({reason}) while {what}. Export the model "
            f"without it or with other element types (most TVM operators want float tensors) ({ADVICE})"
        )
    return f"TVM failed while {what}: {error_summary(err)} ({ADVICE})"


def tvm_step(what: str, step: Callable[[], T], mod: tvm.IRModule | None = None) -> T:
    """Run `step` (which hands a model to TVM); a failure becomes a ModelLoadError saying what
    failed while `what` ("importing the ONNX graph"), naming the operator where one of `mod`'s
    (the module `step` lowers) fails alone. bcd's own errors pass through unchanged."""
    loud = verbose()
    printed = io.StringIO()
    muted = MutedStderr()
    with nullcontext() if loud else muted:
        try:
            with redirect_stdout(printed):
                return step()
        except BcdError:
            raise
        except Exception as err:  # noqa: BLE001 - whatever TVM raises, the user gets one clear line
            if loud:
                log.info("TVM's error while %s:\n%s", what, "".join(traceback.format_exception(err)))
            message = _describe(what, err, printed.getvalue(), mod)
        finally:
            if loud:
                sys.stdout.write(printed.getvalue())
        gc.collect()  # TVM's half-built objects `err` held are freed while its warnings are muted
        muted.discard = True
    raise ModelLoadError(message)
