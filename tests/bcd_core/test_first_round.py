"""A `bcd` task's first round: fresh samples of its design space, ranked by the cost model,
with real TVM on a tiny convolution."""

import logging
import random

import numpy as np
import pytest
from tvm.s_tir import meta_schedule as ms

from bcd_core.tuning.bcd import first_round
from bcd_core.tuning.bcd.first_round import (
    RANDOM_SAMPLES_PER_PICK,
    module_hash,
    random_picks,
    ranked_samples,
    sample_population,
    top_ranked,
)
from bcd_core.tuning.run import prepare_model


@pytest.fixture(scope="module")
def search_in_progress(tiny_convnet, host):
    prepared = prepare_model(tiny_convnet, host)
    task = max(prepared.tasks, key=lambda t: t.flops)
    search = ms.search_strategy.EvolutionarySearch(population_size=16, init_min_unmeasured=4)
    context = ms.TuneContext(
        mod=task.mod,
        target=host,
        space_generator="post-order-apply",
        search_strategy=search,
        task_name=task.name,
        rand_state=7,
        num_threads=1,
        logger=logging.getLogger("test"),
    )
    spaces = context.generate_design_space()
    search.pre_tuning(1000, 4, spaces, ms.database.MemoryDatabase(), ms.cost_model.RandomModel())
    yield context, search
    search.post_tuning()


def test_the_best_scored_new_programs_are_picked(search_in_progress) -> None:
    context, search = search_in_progress
    scored: dict[int, float] = {}
    rng = np.random.default_rng(0)

    def score(ctx, candidates):
        assert ctx is context
        values = rng.random(len(candidates))
        for candidate, value in zip(candidates, values):
            scored[module_hash(candidate.sch)] = max(value, scored.get(module_hash(candidate.sch), 0.0))
        return values

    exclude: set[int] = set()
    picked = ranked_samples(context, search, score, count=4, population=16, exclude=exclude)
    hashes = [module_hash(c.sch) for c in picked]
    assert len(picked) == 4 and len(set(hashes)) == 4
    assert set(hashes) == exclude  # what was picked is remembered
    best_left_out = max(value for key, value in scored.items() if key not in exclude)
    assert min(scored[h] for h in hashes) >= best_left_out
    assert all(c.args_info for c in picked)  # ready for the builder


def test_programs_already_handed_out_are_not_picked_again(search_in_progress) -> None:
    _, search = search_in_progress
    schedules = sample_population(search, 8)
    assert schedules
    first = module_hash(schedules[0])
    scores = [1.0] + [0.5] * (len(schedules) - 1)  # the first would win
    picked = top_ranked(schedules, scores, 2, exclude={first})
    assert first not in {module_hash(c.sch) for c in picked}
    assert module_hash(top_ranked(schedules, scores, 1, exclude=set())[0].sch) == first


def test_while_scores_are_random_a_small_sample_gives_the_random_picks(search_in_progress, monkeypatch) -> None:
    """Ranking a whole population by random scores picks programs at random: a sample of a
    few times the picks does it; a sample short of new programs gives way to the population."""
    _, search = search_in_progress
    sizes: list[int] = []

    def sampled(search, size):
        sizes.append(size)
        return sample_population(search, size)

    monkeypatch.setattr(first_round, "sample_population", sampled)
    exclude: set[int] = set()
    picked = random_picks(search, 2, 64, exclude, random.Random(0))
    hashes = {module_hash(c.sch) for c in picked}
    assert len(picked) == 2 and hashes == exclude and sizes == [2 * RANDOM_SAMPLES_PER_PICK]
    assert all(c.args_info for c in picked)

    sizes.clear()
    repeated = sample_population(search, 4)[:1] * 8  # a design space of one program
    monkeypatch.setattr(first_round, "sample_population", lambda s, size: sizes.append(size) or repeated)
    assert len(random_picks(search, 2, 64, set(), random.Random(0))) == 1
    assert sizes == [2 * RANDOM_SAMPLES_PER_PICK, 64]
