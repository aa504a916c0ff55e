"""A task's first round in `bcd`: fresh samples of its design space ranked by the shared
cost model (half of them, the other half at random), instead of an evolution steered by
random scores.

Before a task has a measurement of its own, stock MetaSchedule ranks its candidates at
random (its model predicts random scores during warm-up, and the gradient scheduler joins
no result before its whole first round robin is submitted), yet it still pays for four
generations of mutation over the population, most of a first round's search time. `bcd` joins each batch as soon
as it is measured, so the cost model has learnt from the tasks measured before; here it
ranks the population MetaSchedule samples for the first generation, and the best are
measured with as many random ones (before the model is past its warm-up, its scores are
random, as stock's; while they are, a small sample drawn at random gives the same picks for less).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm_ffi
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule import _ffi_api

RANDOM_SAMPLES_PER_PICK = 4  # while the cost model's scores are random: samples for each program picked


def module_hash(schedule: Any) -> int:
    return int(tvm_ffi.structural_hash(schedule.mod))


def as_candidate(schedule: Any) -> ms.MeasureCandidate:
    args = ms.arg_info.ArgInfo.from_entry_func(schedule.mod, remove_preproc=True)
    return ms.MeasureCandidate(schedule, args)


def sample_population(search: ms.search_strategy.EvolutionarySearch, size: int) -> list[Any]:
    """`size` random programs of the task's design space, post-processed: what the search's
    first generation starts from. The search must be between pre_tuning and post_tuning."""
    return list(_ffi_api.SearchStrategyEvolutionarySearchSampleInitPopulation(search, size))


def top_ranked(
    schedules: Sequence[Any], scores: Sequence[float], count: int, exclude: set[int]
) -> list[ms.MeasureCandidate]:
    """The `count` best-scored distinct schedules whose module hash is not in `exclude`
    (which gains the hashes of those picked)."""
    picked: list[ms.MeasureCandidate] = []
    for position in np.argsort(-np.asarray(scores, dtype="float64"), kind="stable"):
        if len(picked) >= count:
            break
        schedule = schedules[int(position)]
        key = module_hash(schedule)
        if key in exclude:
            continue
        exclude.add(key)
        picked.append(as_candidate(schedule))
    return picked


def ranked_samples(
    context: ms.TuneContext,
    search: ms.search_strategy.EvolutionarySearch,
    score: Any,
    count: int,
    population: int,
    exclude: set[int],
    explore: int = 0,
    rng: random.Random | None = None,
) -> list[ms.MeasureCandidate]:
    """Up to `count` programs from `population` fresh samples, skipping programs already
    handed out (`exclude`): the best by `score(context, candidates)` (the cost model), and
    `explore` of them drawn at random from the rest. The model learnt from other tasks and
    can be wrong about this one in a way only the task's own measurements reveal (it can rank
    a 3-channel first convolution's fully unrolled programs first, which build slowly and run
    slowly); random picks are how stock's first round finds that out."""
    rng = rng or random.Random(0)
    schedules = sample_population(search, population)
    if not schedules:
        return []
    scores = np.asarray(score(context, [as_candidate(s) for s in schedules]), dtype="float64")
    picked = top_ranked(schedules, scores, count - explore, exclude)
    if explore > 0:
        picked += top_ranked(schedules, shuffled_scores(len(schedules), rng), count - len(picked), exclude)
    return picked


def random_picks(
    search: ms.search_strategy.EvolutionarySearch, count: int, population: int, exclude: set[int], rng: random.Random
) -> list[ms.MeasureCandidate]:
    """Up to `count` fresh programs at random, skipping `exclude`: what `ranked_samples` picks
    while the cost model's scores are random, from a sample of a few times `count` instead of
    the whole population (sampling is most of a first round's search time; the search samples
    at least its `init_min_unmeasured`). A design space too small to give `count` new programs
    in such a sample gets the whole population, as before."""
    picked: list[ms.MeasureCandidate] = []
    for size in dict.fromkeys((min(population, RANDOM_SAMPLES_PER_PICK * count), population)):
        schedules = sample_population(search, size)
        picked += top_ranked(schedules, shuffled_scores(len(schedules), rng), count - len(picked), exclude)
        if len(picked) >= count:
            break
    return picked


def shuffled_scores(size: int, rng: random.Random) -> np.ndarray:
    """Scores that rank `size` programs in a random order (distinct, so no ties)."""
    scores = np.zeros(size)
    scores[rng.sample(range(size), size)] = np.arange(size, 0, -1)
    return scores
