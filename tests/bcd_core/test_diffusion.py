"""Diffusion: tile adaptation properties, and diffused programs that build and compute
exactly what the unscheduled member computes."""

import random
from pathlib import Path

import models
import numpy as np
import pytest
import tvm
from tvm.s_tir import meta_schedule as ms

from bcd_core.diffusion import (
    DiffusedProgram,
    adapt_tile,
    diffuse,
    divisors,
    matching_sketch,
    nearest_divisor,
    postprocess,
    random_tile,
    structure_of,
)
from bcd_core.model_import import import_model
from bcd_core.tasks import design_space, extract_tasks


def product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def test_divisors_and_nearest() -> None:
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert nearest_divisor(5, 12) == 4  # 4 and 6 tie: the smaller
    assert nearest_divisor(50, 128, limit=16) == 16


def test_copy_keeps_factors_for_equal_extents() -> None:
    assert adapt_tile([2, 4, 1, 8], 64, "copy", 64) == [2, 4, 1, 8]


@pytest.mark.parametrize(
    ("adaptation", "unchanged"),
    [("copy", True), ("copy+serial", True), ("copy+location-sampled", False), ("keep", False), ("scale+serial", False)],
)
def test_only_a_copy_of_every_tile_and_location_is_the_source_program(adaptation: str, unchanged: bool) -> None:
    assert DiffusedProgram(None, 1, adaptation).copies_its_source is unchanged


def test_keep_keeps_dividing_factors() -> None:
    # 7 does not divide 96, 2 and 4 still do.
    assert adapt_tile([2, 7, 4, 2], 112, "keep", 64) == [2, 7, 4, 2]
    adapted = adapt_tile([2, 7, 4, 2], 96, "keep", 64)
    assert adapted[-2:] == [4, 2] and product(adapted) == 96


def test_scale_uses_the_prior_extent_ratio() -> None:
    # Prior 64 -> member 128: each factor doubled where it still fits, outermost takes the rest.
    assert adapt_tile([1, 4, 8, 2], 128, "scale", 64) == [1, 2, 16, 4]


@pytest.mark.parametrize("seed", range(8))
def test_adaptations_are_perfect_tilings_on_random_shapes(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(250):
        count = rng.choice([2, 3, 4])
        prior_extent = rng.choice([1, 3, 7, 12, 13, 16, 55, 56, 64, 111, 128, 224, 512, 1000])
        prior = random_tile(prior_extent, count, 64, rng)
        extent = rng.choice([1, 2, 5, 13, 27, 48, 55, 64, 96, 169, 256, 384, 1000, 3025])
        limit = rng.choice([None, 16, 64])
        for mode in ("copy", "keep", "scale", "random"):
            factors = adapt_tile(prior, extent, mode, limit, rng)
            assert len(factors) == count
            assert all(isinstance(f, int) and f >= 1 for f in factors)
            assert product(factors) == extent, (prior, extent, mode, factors)
            if limit is not None:
                assert factors[-1] <= limit


@pytest.fixture(scope="module")
def conv_tasks(tiny_convnet: Path, host):
    tasks = [t for t in extract_tasks(import_model(tiny_convnet).relax_mod, host) if "conv2d" in t.name]
    assert len(tasks) == 2
    return tasks


def context_for(task, target) -> ms.TuneContext:
    return ms.TuneContext(
        mod=task.mod,
        target=target,
        space_generator="post-order-apply",
        search_strategy="evolutionary",
        num_threads=1,
        rand_state=1,
    )


def run_prim_func(mod: tvm.IRModule, target, arrays: list[np.ndarray], device=None) -> np.ndarray:
    built = tvm.tirx.build(mod, target=target)
    tensors = [tvm.runtime.tensor(a, device) for a in arrays]
    built(*tensors)
    return tensors[-1].numpy()


def cuda_available() -> bool:
    return tvm.runtime.enabled("cuda") and tvm.cuda().exist


def test_diffused_programs_are_valid_and_correct(conv_tasks, host) -> None:
    representative, member = conv_tasks
    # Programs of the representative with sampled decisions stand in for its measured best.
    priors = [(i, sketch.trace) for i, sketch in enumerate(design_space(representative.mod, host))]
    context = context_for(member, host)
    sketches = list(context.generate_design_space())
    result = diffuse(context, sketches, priors, count=6, seed=3)
    assert result.matched_sketch is not None
    assert len(result.programs) >= 3
    assert {p.source_trial_id for p in result.programs} <= {i for i, _ in priors}
    assert_compute_like(member, result.programs, host)


def assert_compute_like(member, programs, host, target=None, device=None) -> None:
    """Each program is scheduled and computes what the unscheduled member computes (run on
    the host CPU; the programs run on `target` and `device`, the host by default)."""
    rng = np.random.default_rng(0)
    args = ms.arg_info.ArgInfo.from_prim_func(member.mod["main"])
    arrays = [rng.standard_normal([int(d) for d in a.shape]).astype(a.dtype) for a in args]
    arrays[-1] = np.zeros_like(arrays[-1])
    expected = run_prim_func(member.mod, host, arrays)
    for program in programs:
        assert program.schedule.mod.script() != member.mod.script(), "the program must be scheduled"
        got = run_prim_func(program.schedule.mod, target or host, arrays, device)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_member_with_another_epilogue_takes_the_decisions(tiny_mlp: Path, host) -> None:
    # The ReLU is one more inlined block: the sketches differ, their sampling steps do not.
    tasks = {t.name: t for t in extract_tasks(import_model(tiny_mlp).relax_mod, host)}
    with_relu, plain = tasks["fused_matmul1_add1_relu1"], tasks["fused_matmul2_add2"]
    assert with_relu.sketch_key != plain.sketch_key
    assert with_relu.loose_sketch_key == plain.loose_sketch_key
    priors = [(i, sketch.trace) for i, sketch in enumerate(context_for(with_relu, host).generate_design_space())]
    context = context_for(plain, host)
    sketches = list(context.generate_design_space())
    plain_structures = {structure_of(sketch.trace) for sketch in sketches}
    assert all(structure_of(prior) not in plain_structures for _, prior in priors)
    result = diffuse(context, sketches, priors, count=4, seed=2)
    assert result.matched_sketch is not None
    assert len(result.programs) >= 2
    assert_compute_like(plain, result.programs, host)


def test_diffusion_is_seeded(conv_tasks, host) -> None:
    representative, member = conv_tasks
    priors = [(i, s.trace) for i, s in enumerate(design_space(representative.mod, host))]
    context = context_for(member, host)
    sketches = list(context.generate_design_space())
    first = diffuse(context, sketches, priors, count=4, seed=11)
    again = diffuse(context, sketches, priors, count=4, seed=11)
    assert [p.schedule.mod.script() for p in first.programs] == [p.schedule.mod.script() for p in again.programs]


def test_spread_takes_one_program_from_each_prior_first(conv_tasks, host) -> None:
    representative, member = conv_tasks
    # Sampled with a fixed random state, so that every run diffuses the same programs.
    sampled = context_for(representative, host).generate_design_space()
    priors = [(i, sketch.trace) for i, sketch in enumerate(sampled)]
    assert len(priors) >= 2
    context = context_for(member, host)
    sketches = list(context.generate_design_space())
    count = len(priors)
    spread = diffuse(context, sketches, priors, count=count, seed=5, spread=True)
    assert [p.source_trial_id for p in spread.programs] == [i for i, _ in priors]
    assert all(p.adaptation.startswith("copy") for p in spread.programs)
    best_first = diffuse(context, sketches, priors, count=count, seed=5)
    assert best_first.programs[0].source_trial_id == priors[0][0]
    assert len({p.source_trial_id for p in best_first.programs}) < count  # the best program's adaptations first


def test_no_matching_sketch_is_reported(conv_tasks, tiny_mlp: Path, host) -> None:
    dense = next(t for t in extract_tasks(import_model(tiny_mlp).relax_mod, host) if "matmul" in t.name)
    conv_prior = design_space(conv_tasks[0].mod, host)[0].trace
    assert matching_sketch(conv_prior, design_space(dense.mod, host)) is None
    context = context_for(dense, host)
    result = diffuse(context, list(context.generate_design_space()), [(1, conv_prior)], count=4, seed=0)
    assert result.matched_sketch is None and result.programs == []


def diffuse_on_cuda(model_dir: Path):
    """Diffusion into a CUDA convolution from sampled programs of its representative that
    pass the GPU post-processors: (target, member, result)."""
    from bcd_core.target import parse_target

    target = parse_target("nvidia/nvidia-h100")
    # Wide enough layers that some random GPU schedules fit the thread limits.
    model = models.convnet(model_dir / "gpu_convnet.onnx", channels=(16, 32, 64), size=16)
    tasks = [t for t in extract_tasks(import_model(model).relax_mod, target) if "conv2d" in t.name]
    representative, member = tasks
    context = context_for(member, target)
    names = [type(p).__name__ for p in context.space_generator.postprocs]
    assert any("VerifyGPU" in n for n in names), names
    # Real priors are measured, hence valid, programs: keep the sampled ones that pass the
    # representative's own GPU post-processors (most random samples do not).
    rep_context = context_for(representative, target)
    priors = []
    for _ in range(40):
        for sketch in rep_context.generate_design_space():
            program = tvm.s_tir.Schedule(representative.mod)
            sketch.trace.apply_to_schedule(program, remove_postproc=True)
            if postprocess(program, list(rep_context.space_generator.postprocs)):
                priors.append((len(priors), program.trace))
        if len(priors) >= 3:
            break
    assert priors, "no valid representative program sampled"
    result = diffuse(context, list(context.generate_design_space()), priors, count=4, seed=0)
    return target, member, result


@pytest.mark.slow
def test_cuda_design_spaces_diffuse_and_pass_gpu_verification(model_dir: Path) -> None:
    """CUDA path on a CPU-only machine: design spaces, diffusion and post-processing
    (including VerifyGPUCode) without building or running."""
    _, _, result = diffuse_on_cuda(model_dir)
    assert result.matched_sketch is not None
    assert result.programs, f"all {result.attempted} diffused programs were rejected"


@pytest.mark.skipif(not cuda_available(), reason="needs an NVIDIA GPU")
def test_diffused_cuda_programs_compute_correctly_on_the_gpu(model_dir: Path, host) -> None:
    target, member, result = diffuse_on_cuda(model_dir)
    assert result.programs, f"all {result.attempted} diffused programs were rejected"
    assert_compute_like(member, result.programs, host, target=target, device=tvm.cuda())
