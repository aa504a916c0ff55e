"""Tuning targets: the host CPU by default, or any TVM target dict, JSON or tag."""

from __future__ import annotations

import json
from typing import Any

from tvm.target import Target, codegen

from bcd_core.cores import host_core_count
from bcd_core.errors import TargetError

HOST_ALIASES = {"", "llvm", "cpu", "host"}
MAX_DETAIL_CHARS = 200  # of TVM's own explanation, which can list every option of a kind


def host_target(num_cores: int | None = None) -> Target:
    """LLVM for this machine's CPU. Without `mcpu` LLVM emits generic x86-64 code
    (about 2x slower tuned programs), so the host CPU model is always given."""
    config = {
        "kind": "llvm",
        "mcpu": codegen.llvm_get_system_cpu(),
        "num-cores": num_cores or host_core_count(),
    }
    return Target(config)


def _with_llvm_host(target: Target) -> Target:
    """GPU targets need a host for the CPU-side code; default it to this machine."""
    if target.kind.name in ("cuda", "rocm", "vulkan", "metal", "opencl") and target.host is None:
        return Target(target, host_target())
    return target


def parse_target(spec: str | dict[str, Any] | None, num_cores: int | None = None) -> Target:
    """Turn what a user typed into a Target.

    Accepted: nothing / "llvm" (the host CPU), a JSON dict
    ('{"kind": "llvm", "num-cores": 4}'), a tag ("nvidia/nvidia-h100") or a plain kind
    name ("cuda").
    """
    if spec is None or (isinstance(spec, str) and spec.strip() in HOST_ALIASES):
        return host_target(num_cores)
    config: str | dict[str, Any] = spec
    if isinstance(spec, str) and spec.strip().startswith("{"):
        try:
            config = json.loads(spec)
        except json.JSONDecodeError as err:
            raise TargetError(
                f"target is not valid JSON ({err.msg} at column {err.colno}): {spec}; write a complete JSON dict "
                'such as \'{"kind": "llvm", "num-cores": 4}\' (in single quotes in the shell)'
            ) from err
    try:
        target = Target(config)
    except Exception as err:  # TVM raises ValueError / TVMError with long texts
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        # TVM appends "Target creation from ... failed: <the spec again>" and may list every option.
        first_line = first_line.split(" Target creation from")[0].rstrip(".")[:MAX_DETAIL_CHARS]
        raise TargetError(
            f"unknown or malformed target {spec!r}: {first_line}. Use 'llvm' for this CPU, "
            'a JSON dict such as \'{"kind": "llvm", "num-cores": 4}\', or a tag such as nvidia/nvidia-h100'
        ) from err
    if target.kind.name == "llvm":
        mcpu = target.attrs.get("mcpu")
        triple = target.attrs.get("mtriple") or codegen.llvm_get_system_triple()
        if mcpu and not codegen.llvm_is_valid_cpu(str(mcpu), str(triple)):
            raise TargetError(
                f"LLVM does not know the CPU mcpu={mcpu!r}; leave mcpu out (or use --target llvm for this "
                "CPU), or name a CPU that `llc -mcpu=help` lists"
            )
        cores = target.attrs.get("num-cores")
        if cores is not None and int(cores) < 1:
            raise TargetError(
                f"num-cores={int(cores)} in target {spec!r} is not a number of CPU cores; give a positive "
                "number such as 4, or use --target llvm for all of this CPU"
            )
    return _with_llvm_host(target)


def target_key(target: Target) -> str:
    """A stable text form, used to tell records of different targets apart in the store."""
    return json.dumps(target_to_dict(target), sort_keys=True)


def device_key(key: str) -> str:
    """The part of a stored target key that decides how a tuned kernel runs: the whole key
    for a CPU; for a GPU the key without its host CPU, which only runs the calls between the
    kernels. Memory compares these, so a GPU's tunes made from another host are drawn on."""
    try:
        config = json.loads(key)
    except json.JSONDecodeError:
        return key
    if not isinstance(config, dict) or "gpu" not in config.get("keys", []):
        return key
    config.pop("host", None)
    return json.dumps(config, sort_keys=True)


def target_of_key(key: str) -> Target | None:
    """The target a stored key names; None for a key of another tool version or unknown kind."""
    try:
        return Target(json.loads(key))
    except Exception:  # noqa: BLE001 - whatever TVM raises on a key it cannot read
        return None


def target_to_dict(target: Target) -> dict[str, Any]:
    return json.loads(str(target))  # str(Target) is its canonical JSON


def describe_target(target: Target) -> str:
    """Short human label, e.g. 'llvm znver4 x2' or 'cuda sm_90a'."""
    attrs = target.attrs
    if target.kind.name == "llvm":
        return f"llvm {attrs.get('mcpu', 'generic')} x{attrs.get('num-cores', '?')}"
    if target.kind.name == "cuda":
        return f"cuda {attrs.get('arch', '')}".strip()
    return target.kind.name


def is_gpu(target: Target) -> bool:
    return "gpu" in [str(k) for k in target.keys]
