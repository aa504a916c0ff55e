"""The register-tiled sketch of blocked convolutions: it sits beside MetaSchedule's sketches, a
program sampled from it computes what the convolution computes, and a task outside the blocked
layout keeps MetaSchedule's space unchanged."""

from pathlib import Path

import models
import numpy as np
import pytest
import tvm
from tvm.s_tir import meta_schedule as ms

from bcd_core.design_space import TILE_COLUMNS, is_column_choice, is_register_tiled, space_generator
from bcd_core.layout import LayoutMode
from bcd_core.model_import import import_model
from bcd_core.programs import postprocess, serial_twin
from bcd_core.target import host_target
from bcd_core.tasks import Task, design_space, extract_tasks, sketch_signature
from bcd_core.untuned import standard_normal_arguments

TARGET = host_target(2)


@pytest.fixture(scope="module")
def mobile_cnn(model_dir: Path) -> Path:
    return models.mobile_block_cnn(model_dir / "mobile_block_cnn.onnx")


def tasks_in(path: Path, layout: str) -> list[Task]:
    return extract_tasks(import_model(path, layout=layout, target=TARGET).relax_mod, TARGET)


def metaschedule_space(task: Task) -> list[tvm.s_tir.Schedule]:
    context = ms.TuneContext(mod=task.mod, target=TARGET, space_generator="post-order-apply", num_threads=1)
    return list(context.generate_design_space())


def test_each_blocked_convolution_gets_one_register_tiled_sketch_more(mobile_cnn: Path) -> None:
    tasks = tasks_in(mobile_cnn, LayoutMode.BLOCKED)
    convolutions = [t for t in tasks if "conv2d_NCHWc" in t.name]
    assert any("depthwise" in t.name for t in convolutions) and any("depthwise" not in t.name for t in convolutions)
    for task in tasks:
        ours = design_space(task.mod, TARGET)
        tiled = [sketch for sketch in ours if is_register_tiled(sketch.trace)]
        assert len(tiled) == (1 if task in convolutions else 0), task.name
        assert len(ours) == len(metaschedule_space(task)) + len(tiled), task.name


def test_a_task_outside_the_blocked_layout_keeps_metaschedules_space(mobile_cnn: Path) -> None:
    for task in tasks_in(mobile_cnn, LayoutMode.PLAIN):
        ours = [sketch_signature(s) for s in design_space(task.mod, TARGET)]
        assert ours == [sketch_signature(s) for s in metaschedule_space(task)], task.name


def run(library: tvm.runtime.Module, task: Task) -> np.ndarray:
    arguments = standard_normal_arguments(task, tvm.cpu(0))
    library["main"](*arguments)
    return arguments[-1].numpy()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_register_tiled_programs_compute_the_convolution(mobile_cnn: Path, seed: int) -> None:
    """Sampled tiles (columns and channel blocks in registers, the fused epilogue per tile) after
    MetaSchedule's post-processing build and give the unscheduled program's output."""
    for task in [t for t in tasks_in(mobile_cnn, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name]:
        context = ms.TuneContext(
            mod=task.mod,
            target=TARGET,
            space_generator=space_generator(task.mod, TARGET),
            rand_state=seed,
            num_threads=1,
        )
        (tiled,) = [s for s in context.generate_design_space() if is_register_tiled(s.trace)]
        for postproc in context.space_generator.postprocs:
            assert postproc.apply(tiled), (task.name, postproc)
        assert outermost_loop_kind(tiled, task.name) == tvm.tirx.ForKind.PARALLEL, task.name
        expected = run(tvm.compile(task.mod, target=TARGET).mod, task)
        got = run(tvm.compile(tiled.mod, target=TARGET).mod, task)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=task.name)


def test_a_register_tiled_programs_serial_twin_stays_parallel(mobile_cnn: Path) -> None:
    """A serial twin (programs.py) drops MetaSchedule's parallel annotation: a register tile
    whose twin ran on one thread lost half of a 2-core machine, so the tile parallelizes itself."""
    for task in [t for t in tasks_in(mobile_cnn, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name]:
        context = ms.TuneContext(mod=task.mod, target=TARGET, space_generator=space_generator(task.mod, TARGET))
        (sketch,) = [s for s in context.generate_design_space() if is_register_tiled(s.trace)]
        twin = serial_twin(task.mod, sketch.trace, list(context.space_generator.postprocs))
        assert twin is not None, task.name
        assert outermost_loop_kind(twin, task.name) == tvm.tirx.ForKind.PARALLEL, task.name


def outermost_loop_kind(sch: tvm.s_tir.Schedule, task_name: str) -> int:
    """The kind of the outermost loop around the convolution's update (a thread per iteration)."""
    name = ("depthwise_" if "depthwise" in task_name else "") + "conv2d_NCHWc_update"
    return sch.get(sch.get_loops(sch.get_sblock(name))[0]).kind


def test_register_tiled_programs_build_for_avx512(model_dir: Path) -> None:
    """With 16-lane blocks (a target this machine may not run): the tile fits and builds."""
    avx512 = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})
    path = models.mobile_block_cnn(model_dir / "mobile_block_cnn_avx512.onnx")
    tasks = extract_tasks(import_model(path, layout=LayoutMode.BLOCKED, target=avx512).relax_mod, avx512)
    convolutions = [t for t in tasks if "conv2d_NCHWc" in t.name]
    assert convolutions and all(t.shapes[0][-1] in (3, 16) for t in convolutions)
    for task in convolutions:
        context = ms.TuneContext(
            mod=task.mod, target=avx512, space_generator=space_generator(task.mod, avx512), num_threads=1
        )
        (tiled,) = [s for s in context.generate_design_space() if is_register_tiled(s.trace)]
        for postproc in context.space_generator.postprocs:
            assert postproc.apply(tiled), (task.name, postproc)
        tvm.compile(tiled.mod, target=avx512)


def test_the_register_tile_writes_the_padded_input_before_it(mobile_cnn: Path) -> None:
    """The padding's place is not sampled in the tile's sketch: it stays a loop nest of its own,
    outside every loop of the convolution, while MetaSchedule's sketches still place it."""
    padded = [
        t for t in tasks_in(mobile_cnn, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name and "data_pad" in t.mod.script()
    ]
    assert any("depthwise" in t.name for t in padded) and any("depthwise" not in t.name for t in padded)
    for task in padded:
        sketches = design_space(task.mod, TARGET)
        (tiled,) = [s for s in sketches if is_register_tiled(s.trace)]
        assert not [i for i in tiled.trace.insts if i.kind.name == "SampleComputeLocation"], task.name
        assert all(
            [i for i in s.trace.insts if i.kind.name == "SampleComputeLocation"] for s in sketches if s is not tiled
        ), task.name
        name = ("depthwise_" if "depthwise" in task.name else "") + "conv2d_NCHWc"
        convolution_loops = {tiled.get(loop) for loop in tiled.get_loops(tiled.get_sblock(name))}
        pad_loops = [tiled.get(loop) for loop in tiled.get_loops(tiled.get_sblock("data_pad"))]
        assert pad_loops and not convolution_loops.intersection(pad_loops), task.name


def test_every_column_count_computes_the_convolution(mobile_cnn: Path) -> None:
    """Column counts that do not divide the row (its last tile the remainder) give the
    unscheduled program's output, for a convolution and a depthwise one."""
    tasks = [t for t in tasks_in(mobile_cnn, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name]
    chosen = [next(t for t in tasks if "depthwise" in t.name), max(tasks, key=lambda t: t.flops)]
    for task in chosen:
        context = ms.TuneContext(mod=task.mod, target=TARGET, space_generator=space_generator(task.mod, TARGET))
        (sketch,) = [s for s in context.generate_design_space() if is_register_tiled(s.trace)]
        (columns,) = [i for i in sketch.trace.insts if is_column_choice(i)]
        width = task.shapes[-1][3]
        counts = [count for count in TILE_COLUMNS if count <= width]
        assert any(width % count for count in counts), task.name
        expected = run(tvm.compile(task.mod, target=TARGET).mod, task)
        for index, count in enumerate(counts):
            program = tvm.s_tir.Schedule(task.mod)
            sketch.trace.with_decision(columns, index, remove_postproc=True).apply_to_schedule(program, False)
            assert postprocess(program, context.space_generator.postprocs), (task.name, count)
            got = run(tvm.compile(program.mod, target=TARGET).mod, task)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=f"{task.name}: {count} columns")


def test_the_search_mutates_a_register_tiles_column_count(mobile_cnn: Path) -> None:
    """MetaSchedule's mutators leave a choice from a list alone; bcd's varies the column count of
    a register-tiled program, only among counts that fit the row, and leaves others unmutated."""
    tasks = [t for t in tasks_in(mobile_cnn, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name]
    task = max(tasks, key=lambda t: t.flops)
    context = ms.TuneContext(mod=task.mod, target=TARGET, space_generator=space_generator(task.mod, TARGET))
    (mutator,) = added_mutators(context.space_generator, task)
    sketches = context.generate_design_space()
    (tiled,) = [s.trace for s in sketches if is_register_tiled(s.trace)]
    (columns,) = [i for i in tiled.insts if is_column_choice(i)]
    width = task.shapes[-1][3]
    seen = set()
    for _ in range(40):
        mutated = mutator.apply(tiled)
        assert mutated is not None
        seen.add(TILE_COLUMNS[int(mutated.decisions[columns])])
    assert TILE_COLUMNS[int(tiled.decisions[columns])] not in seen
    assert len(seen) > 2 and max(seen) <= width
    assert all(mutator.apply(s.trace) is None for s in sketches if not is_register_tiled(s.trace))
    plain = [t for t in tasks_in(mobile_cnn, LayoutMode.PLAIN) if "conv2d" in t.name][0]
    assert not added_mutators(space_generator(plain.mod, TARGET), plain)


def added_mutators(generator: ms.space_generator.PostOrderApply, task: Task) -> list[ms.Mutator]:
    """The generator's mutators that MetaSchedule's own space for the task lacks (bcd's comes back
    from TVM as a plain Python mutator, not as its class)."""
    stock = {
        type(m)
        for m in ms.TuneContext(
            mod=task.mod, target=TARGET, space_generator="post-order-apply"
        ).space_generator.mutator_probs
    }
    return [m for m in generator.mutator_probs if type(m) not in stock]


def test_a_block_count_without_small_divisors_still_tiles_several_blocks(model_dir: Path) -> None:
    """80 output channels make 10 blocks of 8 (or 5 of 16): besides 1, the register tile can hold
    5 of them, a divisor above 4, and such a program computes the convolution. With one block
    each input value loaded feeds a single multiply-add."""
    path = models.convnet(model_dir / "eighty_channels.onnx", channels=(16, 80), size=8)
    (task,) = [t for t in tasks_in(path, LayoutMode.BLOCKED) if "conv2d_NCHWc" in t.name]
    drawn = set()
    for seed in range(1, 41):
        context = ms.TuneContext(
            mod=task.mod, target=TARGET, space_generator=space_generator(task.mod, TARGET), rand_state=seed
        )
        (tiled,) = [s for s in context.generate_design_space() if is_register_tiled(s.trace)]
        tile = next(i for i in tiled.trace.insts if i.kind.name == "SamplePerfectTile")
        blocks = int(tiled.trace.decisions[tile][-1])
        drawn.add(blocks)
        if blocks == 5:
            for postproc in context.space_generator.postprocs:
                assert postproc.apply(tiled), postproc
            expected = run(tvm.compile(task.mod, target=TARGET).mod, task)
            got = run(tvm.compile(tiled.mod, target=TARGET).mod, task)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert 5 in drawn, drawn
