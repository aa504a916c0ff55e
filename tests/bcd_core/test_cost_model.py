from pathlib import Path

import numpy as np
import pytest
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.features import RememberedFeatures
from bcd_core.cost_model.metrics import batch_metrics, pairwise_accuracy, spearman, topk_recall
from bcd_core.cost_model.stored import StoredBatch, learn_stored, stored_runner_result
from bcd_core.cost_model.warmup import WarmupXGBModel, scores_are_random
from bcd_core.model_import import import_model
from bcd_core.tasks import extract_tasks


def test_ranking_metrics() -> None:
    measured = [1.0, 2.0, 3.0, 4.0]
    assert pairwise_accuracy([10, 20, 30, 40], measured) == 1.0
    assert pairwise_accuracy([40, 30, 20, 10], measured) == 0.0
    assert spearman([1, 2, 3, 4], measured) == pytest.approx(1.0)
    assert spearman([4, 3, 2, 1], measured) == pytest.approx(-1.0)
    assert topk_recall([0, 0, 0, 9], measured, k=1) == 1.0
    assert topk_recall([9, 0, 0, 0], measured, k=1) == 0.0
    assert pairwise_accuracy([1, 2], [5, 5]) is None  # no ordered pair
    assert pairwise_accuracy([7, 7, 7, 7], measured) == 0.5  # no preference: a coin flip
    assert pairwise_accuracy([1, 1, 2, 2], measured) == pytest.approx((4 + 0.5 * 2) / 6)
    assert batch_metrics([1, 2, 3], [1, 2, 3])["samples"] == 3


def conv_context_and_candidates(tiny_convnet: Path, host) -> tuple[ms.TuneContext, list]:
    task = next(t for t in extract_tasks(import_model(tiny_convnet).relax_mod, host) if "conv2d" in t.name)
    strategy = ms.search_strategy.EvolutionarySearch(population_size=16, init_min_unmeasured=16)
    context = ms.TuneContext(
        mod=task.mod, target=host, space_generator="post-order-apply", search_strategy=strategy, num_threads=1
    )
    context.pre_tuning(
        max_trials=32,
        num_trials_per_iter=16,
        design_spaces=context.generate_design_space(),
        database=ms.database.MemoryDatabase(),
        cost_model=ms.cost_model.RandomModel(),
    )
    candidates = list(context.generate_measure_candidates())
    assert len(candidates) >= 8
    return context, candidates


def test_stored_measurements_train_metaschedules_model_once_to_the_same_model(tiny_convnet: Path, host) -> None:
    """A memory or a resume feeds the model group by group; fed through `update` it trains
    after most groups, through `learn_stored` once, and ends the same."""
    context, candidates = conv_context_and_candidates(tiny_convnet, host)
    latencies = [1e-4 * (1 + i % 5) for i in range(len(candidates))]
    latencies[1] = None  # a failed program is a sample too
    thirds = [range(i, len(candidates), 3) for i in range(3)]
    batches = [StoredBatch(context, [candidates[j] for j in third], [latencies[j] for j in third]) for third in thirds]

    def counted() -> tuple[ms.cost_model.XGBModel, list[int]]:
        model = ms.cost_model.XGBModel(num_warmup_samples=1, num_tuning_cores=1, adaptive_training=False)
        trainings, train = [], model._inst._train
        model._inst._train = lambda **kw: (trainings.append(1), train(**kw))
        return model, trainings

    by_update, updates = counted()
    for batch in batches:
        by_update.update(batch.context, batch.candidates, [stored_runner_result(x) for x in batch.latencies])
    at_once, once = counted()
    assert learn_stored(at_once, batches) == len(candidates)
    assert len(updates) == 3 and len(once) == 1
    np.testing.assert_allclose(at_once.predict(context, candidates), by_update.predict(context, candidates))
    assert not at_once._inst.adaptive_training  # its own setting is back for the tune


def test_a_programs_features_are_extracted_once_and_are_the_features_stock_extracts(tiny_convnet: Path, host) -> None:
    context, candidates = conv_context_and_candidates(tiny_convnet, host)
    remembered = RememberedFeatures()
    with_repeats = candidates + candidates[:3]
    first = remembered.extract_from(context, with_repeats)
    again = remembered.extract_from(context, candidates)
    assert remembered.extracted == len(candidates) and remembered.hits == 3 + len(candidates)
    stock = ms.feature_extractor.PerStoreFeature().extract_from(context, with_repeats)
    for got, expected in zip([*first, *again], [*stock, *stock[: len(candidates)]], strict=True):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_the_least_recently_used_features_make_room(tiny_convnet: Path, host) -> None:
    context, candidates = conv_context_and_candidates(tiny_convnet, host)
    remembered = RememberedFeatures(capacity=2)
    remembered.extract_from(context, candidates[:2])
    remembered.extract_from(context, candidates[:1])  # the first is used again
    remembered.extract_from(context, candidates[2:3])  # the third in, the second out
    remembered.extract_from(context, candidates[:1])
    assert len(remembered.kept) == 2 and remembered.extracted == 3 and remembered.hits == 2
    remembered.extract_from(context, candidates[1:2])
    assert remembered.extracted == 4


def test_the_cost_model_trains_only_once_its_scores_count(tiny_convnet: Path, host) -> None:
    """Stock's XGBModel trains after most batches of its warm-up, though it scores at random
    until the warm-up is over; bcd's trains first on the batch that ends it, then as stock's,
    and scores as stock's does wherever stock's scores count."""
    context, candidates = conv_context_and_candidates(tiny_convnet, host)
    pairs = [candidates[i : i + 2] for i in range(0, 8, 2)]
    results = [stored_runner_result(1e-4 * (1 + i)) for i in range(2)]

    def counted(cls) -> tuple[ms.cost_model.XGBModel, list[int]]:
        model = cls(num_warmup_samples=5, num_tuning_cores=1)
        trainings, train = [], model._inst._train
        model._inst._train = lambda **kw: (trainings.append(1), train(**kw))
        return model, trainings

    (stock, stock_trainings), (warm, warm_trainings) = counted(ms.cost_model.XGBModel), counted(WarmupXGBModel)
    for size, batch in zip((2, 4, 6, 8), pairs, strict=True):
        stock.update(context, batch, results)
        warm.update(context, batch, results)
        assert scores_are_random(warm._inst) == (size < 5) == scores_are_random(stock._inst)
        if size >= 5:
            np.testing.assert_allclose(warm.predict(context, candidates), stock.predict(context, candidates))
    assert len(stock_trainings) == 4 and len(warm_trainings) == 2  # at 6 (the warm-up's end) and at 8


def test_stored_trials_too_few_to_score_by_wait_for_the_batch_that_ends_the_warm_up(tiny_convnet: Path, host) -> None:
    context, candidates = conv_context_and_candidates(tiny_convnet, host)
    model = WarmupXGBModel(num_warmup_samples=5, num_tuning_cores=1)
    trainings, train = [], model._inst._train
    model._inst._train = lambda **kw: (trainings.append(1), train(**kw))
    stored = StoredBatch(context, candidates[:4], [1e-4, 2e-4, None, 3e-4])
    assert learn_stored(model, [stored]) == 4
    assert not trainings and scores_are_random(model._inst)
    model.update(context, candidates[4:6], [stored_runner_result(1e-4), stored_runner_result(2e-4)])
    assert len(trainings) == 1 and not scores_are_random(model._inst)
