"""What does each choice of the register-tiled sketch cost on this CPU?

For a one-convolution model (ResNet-18's 3x3 shapes, `winograd_probe.conv_model`) in the blocked
layout, every column count x channel-block count of `bcd_core/design_space.py`'s register tile,
at each unroll depth MetaSchedule samples, is built from the sketch's own trace, checked against
the unscheduled program and timed (TVM's time evaluator, warm, best of 5); onnxruntime's time for
the same model follows. One line a program, sorted, then onnxruntime. Run it on an idle machine.

    python experiments/register_tile_sweep.py 512x7 [--blocks 1,2,4] [--unroll 0,3]

How a design-space change shows in tunes: the same model tuned by two versions of bcd in turns,
`bcd tune OUT/512x7/conv.onnx --layout blocked --trials-per-task 32 --seed S --no-memory`, seeds
0-2 a side (an editable install's finder takes precedence over PYTHONPATH, so run the other
version from its own environment).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime
import tvm
from tvm.s_tir import meta_schedule as ms

sys.path.insert(0, str(Path(__file__).parent))

from winograd_probe import conv_model  # noqa: E402

from bcd_core.design_space import TILE_COLUMNS, is_column_choice, is_register_tiled, space_generator  # noqa: E402
from bcd_core.programs import postprocess  # noqa: E402
from bcd_core.target import host_target  # noqa: E402
from bcd_core.tuning.run import prepare_model  # noqa: E402


def decided(trace: tvm.s_tir.Trace, kind: str) -> tvm.s_tir.Instruction:
    """The trace's first sampling of `kind` other than the column count: its channel-block tile
    (SamplePerfectTile) or its unroll depth (SampleCategorical)."""
    return next(i for i in trace.insts if i.kind.name == kind and not is_column_choice(i))


def time_program(mod: tvm.IRModule, target: tvm.target.Target, arguments: list[np.ndarray]) -> tuple[float, np.ndarray]:
    library = tvm.compile(mod, target=target).mod
    device = tvm.cpu()
    tensors = [tvm.runtime.tensor(a, device) for a in arguments]
    library["main"](*tensors)
    evaluator = library.time_evaluator("main", device, number=10, repeat=5, min_repeat_ms=50)
    return min(evaluator(*tensors).results) * 1e3, tensors[-1].numpy()


def onnxruntime_ms(model: Path, shape: tuple[int, ...]) -> float:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = int(host_target().attrs.get("num-cores", 2))
    session = onnxruntime.InferenceSession(str(model), options)
    feed = {"input": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    for _ in range(20):
        session.run(None, feed)
    passes = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(20):
            session.run(None, feed)
        passes.append((time.perf_counter() - start) / 20 * 1e3)
    return min(passes)


def sweep(shape: str, out: Path, blocks: list[int], unroll: list[int]) -> None:
    channels, size = (int(part) for part in shape.split("x"))
    (out / shape).mkdir(parents=True, exist_ok=True)
    model = conv_model(out / shape / "conv.onnx", channels, size)
    target = host_target()
    task = max(prepare_model(model, target, layout="blocked").tasks, key=lambda t: t.flops)
    context = ms.TuneContext(mod=task.mod, target=target, space_generator=space_generator(task.mod, target))
    (trace,) = [s.trace for s in context.generate_design_space() if is_register_tiled(s.trace)]
    rng = np.random.default_rng(0)
    arguments = [
        rng.standard_normal([int(d) for d in a.shape]).astype(a.dtype)
        for a in ms.arg_info.ArgInfo.from_prim_func(task.mod["main"])
    ]
    expected = time_program(task.mod, target, arguments)[1]
    chunks = int(task.shapes[-1][1])
    results = []
    columns = [i for i, count in enumerate(TILE_COLUMNS) if count <= size]
    for column, block, depth in itertools.product(columns, [b for b in blocks if chunks % b == 0], unroll):
        program_trace = trace.with_decision(next(i for i in trace.insts if is_column_choice(i)), column, True)
        program_trace = program_trace.with_decision(decided(trace, "SamplePerfectTile"), [chunks // block, block], True)
        program_trace = program_trace.with_decision(decided(trace, "SampleCategorical"), depth, True)
        program = tvm.s_tir.Schedule(task.mod)
        program_trace.apply_to_schedule(program, remove_postproc=True)
        if not postprocess(program, context.space_generator.postprocs):
            continue
        ms_, got = time_program(program.mod, target, arguments)
        correct = bool(np.allclose(got, expected, rtol=1e-3, atol=1e-3))
        choice = f"columns {TILE_COLUMNS[column]:2d} blocks {block} unroll {depth}"
        gflops = task.flops / ms_ / 1e6
        results.append((ms_, f"{choice}: {ms_:.3f} ms, {gflops:.0f} GFLOP/s, correct {correct}"))
    for _, line in sorted(results):
        print(line)
    print(f"onnxruntime: {onnxruntime_ms(model, (1, channels, size, size)):.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", help="CHANNELSxSIZE, e.g. 512x7")
    parser.add_argument("--out", type=Path, default=Path("runs/register_tile_sweep"))
    parser.add_argument("--blocks", default="1,2,4")
    parser.add_argument("--unroll", default="0,3", help="indices into MetaSchedule's unroll depths (0, 16, 64, 512)")
    args = parser.parse_args()
    sweep(args.shape, args.out, [int(b) for b in args.blocks.split(",")], [int(u) for u in args.unroll.split(",")])


if __name__ == "__main__":
    main()
