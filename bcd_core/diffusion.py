"""Diffusion: turn a representative's best programs into valid programs for a member whose
loop extents differ (docs/design.md, "Diffusion").

The member's own sketch (the one whose structure matches the prior's) is replayed with the
prior's sampling decisions, remapped: tile sizes adapted to the member's extents, categorical
decisions copied, compute locations copied when valid. Post-processors then validate each
program; anything that fails is dropped.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.schedule import Trace

from bcd_core.programs import PARALLEL_ANNOTATION, has_parallel_annotation, postprocess, serial_twin
from bcd_core.tasks import normalize_sketch, without_inlining

SAMPLING_KINDS = ("SamplePerfectTile", "SampleCategorical", "SampleComputeLocation")
TILE_MODES = ("copy", "keep", "scale", "random")


# -- tile adaptation (pure) ---------------------------------------------------------------
def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def nearest_divisor(value: float, n: int, limit: int | None = None) -> int:
    """The divisor of n closest to value (ties: the smaller), at most `limit` if given."""
    options = [d for d in divisors(n) if limit is None or d <= limit] or [1]
    return min(options, key=lambda d: (abs(d - value), d))


def adapt_tile(
    factors: Sequence[int], extent: int, mode: str, max_innermost: int | None = None, rng: random.Random | None = None
) -> list[int]:
    """Tile factors for a loop of `extent`, derived from a prior's `factors`.

    Modes: "copy" (same extent), "keep" (keep each factor that still divides what is left),
    "scale" (multiply each factor by member extent / prior extent), "random" (a fresh perfect
    tiling). Factors are snapped to divisors of the remaining extent innermost first, the
    innermost respects `max_innermost`, and the outermost takes what is left, so the product
    is always `extent`.
    """
    count = len(factors)
    prior_extent = 1
    for f in factors:
        prior_extent *= int(f)
    within_limit = not max_innermost or int(factors[-1]) <= max_innermost
    if mode == "copy" and prior_extent == extent and within_limit:
        return [int(f) for f in factors]
    if mode == "random":
        return random_tile(extent, count, max_innermost, rng or random.Random(0))
    ratio = extent / prior_extent if prior_extent else 1.0
    adapted = [1] * count
    remaining = extent
    for position in range(count - 1, 0, -1):  # innermost first; position 0 takes the rest
        wanted = float(factors[position]) * (ratio if mode == "scale" else 1.0)
        limit = max_innermost if position == count - 1 and max_innermost else None
        if mode == "keep" and remaining % int(factors[position]) == 0 and (limit is None or factors[position] <= limit):
            chosen = int(factors[position])
        else:
            chosen = nearest_divisor(wanted, remaining, limit)
        adapted[position] = chosen
        remaining //= chosen
    adapted[0] = remaining
    return adapted


def random_tile(extent: int, count: int, max_innermost: int | None, rng: random.Random) -> list[int]:
    factors = [1] * count
    remaining = extent
    for position in range(count - 1, 0, -1):
        options = [d for d in divisors(remaining) if position != count - 1 or not max_innermost or d <= max_innermost]
        factors[position] = rng.choice(options or [1])
        remaining //= factors[position]
    factors[0] = remaining
    return factors


# -- sketch matching ----------------------------------------------------------------------
def structure_of(trace: Trace) -> str:
    """Structure without decisions. Simplified first: stored records drop unused
    instructions (e.g. a get_sblock nothing uses) that the raw sketch still has."""
    simplified = trace.simplified(remove_postproc=True)
    lines = simplified.as_python(remove_postproc=True)
    # A serial twin is its sketch's program without the parallel annotation: same structure.
    return normalize_sketch("\n".join(line for line in lines if f'"{PARALLEL_ANNOTATION}"' not in line))


def matching_sketch(prior: Trace, sketches: Sequence[tvm.s_tir.Schedule]) -> int | None:
    """Index of the member sketch whose structure equals the prior program's sketch; failing
    that, of the first whose structure does without inlinings (a member with another
    epilogue, clustered with --cluster-mode loose-sketch): replay pairs decisions by the
    order of sampling instructions, which inlinings do not change."""
    wanted = structure_of(prior)
    structures = [structure_of(sketch.trace) for sketch in sketches]
    if wanted in structures:
        return structures.index(wanted)
    loose = without_inlining(wanted)
    return next((i for i, structure in enumerate(structures) if without_inlining(structure) == loose), None)


def sampling_decisions(trace: Trace) -> list[tuple[str, Any, list[Any]]]:
    """(kind, decision, attrs) of each sampling instruction, in trace order."""
    out = []
    for inst in trace.insts:
        if inst.kind.name in SAMPLING_KINDS:
            out.append((inst.kind.name, trace.get_decision(inst), list(inst.attrs)))
    return out


# -- replay -------------------------------------------------------------------------------
@dataclass
class DiffusedProgram:
    schedule: tvm.s_tir.Schedule
    source_trial_id: int | None
    adaptation: str  # e.g. "keep", "scale+location-sampled", "copy+serial"

    @property
    def copies_its_source(self) -> bool:
        """Every tile and compute location copied: the source program itself (a serial
        source stays serial, so "+serial" changes nothing)."""
        return self.adaptation.removesuffix("+serial") == "copy"

    def candidate(self) -> ms.MeasureCandidate:
        args = ms.arg_info.ArgInfo.from_entry_func(self.schedule.mod, remove_preproc=True)
        return ms.MeasureCandidate(self.schedule, args)


def _loop_extent(sch: tvm.s_tir.Schedule, loop_rv: Any) -> int | None:
    try:
        return int(sch.get(loop_rv).extent)
    except Exception:
        return None


def replay(
    member_mod: tvm.IRModule,
    member_sketch: Trace,
    prior: Trace,
    tile_mode: str,
    rng: random.Random,
    copy_compute_location: bool = True,
) -> tvm.s_tir.Schedule:
    """The member sketch with the prior's decisions, remapped. Raises if replay fails."""
    prior_decisions = sampling_decisions(prior)
    sch = tvm.s_tir.Schedule(member_mod)
    cursor = iter(prior_decisions)

    def provide(inst: Any, inputs: list[Any], attrs: list[Any], decision: Any) -> Any:
        kind = inst.kind.name
        if kind not in SAMPLING_KINDS:
            return decision
        prior_kind, prior_decision, _ = next(cursor, (None, None, None))
        if prior_kind != kind or prior_decision is None:
            return decision
        if kind == "SamplePerfectTile":
            extent = _loop_extent(sch, inputs[0])
            if extent is None:
                return decision
            max_innermost = int(attrs[1]) if len(attrs) > 1 and int(attrs[1]) > 0 else None
            factors = [int(f) for f in prior_decision]
            return adapt_tile(factors, extent, tile_mode, max_innermost, rng)
        if kind == "SampleComputeLocation" and not copy_compute_location:
            return decision
        return prior_decision

    member_sketch.apply_to_schedule(sch, remove_postproc=True, decision_provider=provide)
    return sch


@dataclass
class DiffusionResult:
    programs: list[DiffusedProgram]
    matched_sketch: int | None  # None: no member sketch matches the prior (fallback)
    attempted: int
    rejected: int


def diffuse(
    context: ms.TuneContext,
    sketches: Sequence[tvm.s_tir.Schedule],
    priors: Sequence[tuple[int | None, Trace]],
    count: int,
    seed: int,
    seen: set[int] | None = None,
    spread: bool = False,
) -> DiffusionResult:
    """Up to `count` valid, distinct diffused programs for the member of `context`.

    Each prior program (best first) is tried with its tiles copied, then kept and scaled (in
    a seeded random order), plus a random tiling for diversity. By default one program's
    adaptations come before the next program's; `spread` tries every program's first
    adaptation before any program's second, so that `count` candidates come from as many
    prior programs as possible. Programs whose module hash is in `seen` are skipped.
    """
    rng = random.Random(seed)
    postprocs = list(context.space_generator.postprocs)
    seen = set() if seen is None else seen
    programs: list[DiffusedProgram] = []
    matched: int | None = None
    attempted = rejected = 0
    plans = []  # (source id, prior, member sketch index, adaptations in order, serial)
    for source_id, prior in priors:
        index = matching_sketch(prior, sketches)
        if index is None:
            continue
        matched = index if matched is None else matched
        modes = ["keep", "scale"]
        rng.shuffle(modes)
        # A serial twin's program diffuses as a serial program (the sketch replayed, then twinned).
        serial = not has_parallel_annotation(prior) and has_parallel_annotation(sketches[index].trace)
        plans.append((source_id, prior, index, ["copy", *modes, "random"], serial))
    if spread:
        order = [(plan, plan[3][level]) for level in range(len(TILE_MODES)) for plan in plans]
    else:
        order = [(plan, mode) for plan in plans for mode in plan[3]]
    for (source_id, prior, index, _, serial), mode in order:
        if len(programs) >= count:
            break
        for copy_location in (True, False):
            attempted += 1
            try:
                sch = replay(context.mod, sketches[index].trace, prior, mode, rng, copy_location)
            except Exception:
                rejected += 1
                continue  # e.g. a compute location invalid for the member: sample instead
            sch = serial_twin(context.mod, sch.trace, postprocs) if serial else sch
            if sch is None or (not serial and not postprocess(sch, postprocs)):
                rejected += 1
                break
            key = int(tvm_ffi.structural_hash(sch.mod))
            if key not in seen:
                seen.add(key)
                label = (mode if copy_location else f"{mode}+location-sampled") + ("+serial" if serial else "")
                programs.append(DiffusedProgram(sch, source_id, label))
            break
    return DiffusionResult(programs[:count], matched, attempted, rejected)
