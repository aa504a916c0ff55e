from pathlib import Path

import numpy as np
import pytest
from tvm.s_tir import meta_schedule as ms

from bcd_core.cost_model.features import RememberedFeatures
from bcd_core.cost_model.metrics import batch_metrics, pairwise_accuracy, spearman, topk_recall
from bcd_core.cost_model.stored import StoredBatch, learn_stored, stored_runner_result
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
