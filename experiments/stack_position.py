"""Does a compiled model's time depend on where the calling thread's stack lies?

    .venv/bin/python experiments/stack_position.py MODEL.onnx MODULE.so [--passes 2]

TVM runs the first share of a kernel's parallel loop on the thread that called the model, and
the kernels' code keeps values it spills on that thread's stack. Where that stack lies differs
between processes (Linux places a process's stack at a random 16-byte step) and with how deep
the call is made. This script calls the module (MODULE.so, a compiled model of MODEL) and
onnxruntime from twelve stack positions (calls nested through C built-ins, each moving the
stack pointer by a fixed amount), in turns, and prints each position's offset (read with
`getcontext`) and medians. Linux on x86-64 only; run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import ctypes
from collections.abc import Callable
from pathlib import Path

from bcd_core.export import library_runner, onnxruntime_runner
from bcd_core.model_import import load_onnx, random_inputs, static_inputs
from bcd_core.timing import time_runs

UCONTEXT_BYTES = 1024  # glibc's ucontext_t is 936 bytes on x86-64
RSP_OFFSET = 160  # uc_mcontext.gregs[REG_RSP]: 40 bytes of header, then 15 registers of 8
RUNS = 40


def stack_pointer() -> int:
    libc = ctypes.CDLL(None)
    context = ctypes.create_string_buffer(UCONTEXT_BYTES)
    if libc.getcontext(context) != 0:
        raise OSError("getcontext failed")
    return int.from_bytes(context.raw[RSP_OFFSET : RSP_OFFSET + 8], "little")


def through_filter(call: Callable[[], float]) -> float:
    found: list[float] = []
    next(filter(lambda _: found.append(call()) or True, (0,)))
    return found[0]


def through_map(call: Callable[[], float]) -> float:
    return next(map(lambda _: call(), (0,)))


def nested(filters: int, maps: int, call: Callable[[], float]) -> float:
    """`call` made from `filters` + `maps` C built-ins deeper than here."""
    if filters:
        return through_filter(lambda: nested(filters - 1, maps, call))
    if maps:
        return through_map(lambda: nested(0, maps - 1, call))
    return call()


def median_ms(run: Callable[[], object]) -> float:
    """bcd's timing of one callable (timing.py), as `bcd check` times a model."""
    return time_runs(run, runs=RUNS, passes=1).median_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("module", type=Path)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    model = load_onnx(args.model)
    inputs = random_inputs(static_inputs(model))
    runners = {"module": library_runner(args.module, inputs).run, "onnxruntime": onnxruntime_runner(model, inputs).run}
    positions = [(f, m) for f in range(4) for m in range(3)]
    base = stack_pointer()
    offsets = {p: base - nested(*p, lambda: float(stack_pointer())) for p in positions}
    times: dict[tuple[int, int], dict[str, list[float]]] = {p: {name: [] for name in runners} for p in positions}
    for _ in range(args.passes):
        for position in positions:
            for name, run in runners.items():
                times[position][name].append(nested(*position, lambda run=run: median_ms(run)))
    print(f"{'stack offset':>12} {'mod 64':>6} " + " ".join(f"{name + ' ms':>16}" for name in runners))
    for position in sorted(positions, key=lambda p: offsets[p]):
        medians = " ".join(f"{min(times[position][name]):16.3f}" for name in runners)
        print(f"{offsets[position]:12.0f} {(base - offsets[position]) % 64:6.0f} {medians}")
    for name in runners:
        each = [min(times[p][name]) for p in positions]
        print(f"{name}: {min(each):.3f}-{max(each):.3f} ms over {len(positions)} stack positions", end="")
        print(f" (each the fastest of {args.passes} passes)")


if __name__ == "__main__":
    main()
