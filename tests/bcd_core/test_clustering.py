from dataclasses import dataclass, field

import numpy as np
import pytest

from bcd_core.clustering import (
    choose_representative,
    cluster_of,
    cluster_tasks,
    cosine_similarity_matrix,
    shape_vectors,
)


@dataclass
class FakeTask:
    index: int
    shapes: list[list[int]]
    flops: float = 1.0
    weight: int = 1
    operator_key: str = "conv2d_add_relu"
    sketch_key: str = "sk-a"
    loose_sketch_key: str = ""
    extra: dict = field(default_factory=dict)


def test_shape_vectors_pad_with_zeros() -> None:
    matrix = shape_vectors([[[1, 2]], [[3, 4], [5]]])
    assert matrix.tolist() == [[1, 2, 0], [3, 4, 5]]


def test_cosine_of_parallel_vectors_is_one() -> None:
    similarity = cosine_similarity_matrix(np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]]))
    assert similarity[0, 1] == pytest.approx(1.0)
    assert similarity[2, 2] == 0.0  # zero vectors do not divide by zero


def test_representative_is_the_most_similar_on_average() -> None:
    # Shape vectors at about 20, 0 and 10 degrees: the 10-degree one is closest to both others.
    shapes = [[[94, 34]], [[100, 1]], [[98, 17]]]
    assert choose_representative(shapes, [9, 9, 1]) == 2


def test_ties_go_to_more_flops_then_first() -> None:
    same = [[[8, 8]], [[8, 8]], [[8, 8]]]
    assert choose_representative(same, [1.0, 5.0, 5.0]) == 1
    assert choose_representative(same, [2.0, 2.0, 2.0]) == 0


def test_singleton_and_empty() -> None:
    assert choose_representative([[[3]]], [0.0]) == 0
    with pytest.raises(ValueError):
        choose_representative([], [])


def test_modes_group_by_their_key() -> None:
    tasks = [
        FakeTask(0, [[1, 8, 8]], operator_key="conv", sketch_key="s1"),
        FakeTask(1, [[1, 16, 16]], operator_key="conv", sketch_key="s2"),
        FakeTask(2, [[1, 32]], operator_key="dense", sketch_key="s1"),
    ]
    by_operator = cluster_tasks(tasks, "operator")
    by_sketch = cluster_tasks(tasks, "sketch")
    assert sorted(sorted(c.members) for c in by_operator) == [[0, 1], [2]]
    assert sorted(sorted(c.members) for c in by_sketch) == [[0, 2], [1]]


def test_loose_sketch_mode_groups_by_the_loose_key() -> None:
    tasks = [
        FakeTask(0, [[1, 8]], sketch_key="s-relu", loose_sketch_key="l1"),
        FakeTask(1, [[1, 16]], sketch_key="s-plain", loose_sketch_key="l1"),
        FakeTask(2, [[1, 32]], sketch_key="s-plain", loose_sketch_key="l2"),
        FakeTask(3, [[1, 64]], sketch_key="s-other"),  # no loose key: its sketch key stands in
    ]
    assert sorted(sorted(c.members) for c in cluster_tasks(tasks, "loose-sketch")) == [[0, 1], [2], [3]]
    assert sorted(sorted(c.members) for c in cluster_tasks(tasks, "sketch")) == [[0], [1, 2], [3]]


def test_priority_is_descending_weighted_flops() -> None:
    tasks = [
        FakeTask(0, [[1]], flops=10, operator_key="small"),
        FakeTask(1, [[1]], flops=100, weight=3, operator_key="big"),
        FakeTask(2, [[1]], flops=100, operator_key="mid"),
    ]
    assert [c.key for c in cluster_tasks(tasks, "operator")] == ["big", "mid", "small"]
    assert [c.id for c in cluster_tasks(tasks, "operator")] == [0, 1, 2]


def test_moves_and_representative_overrides() -> None:
    tasks = [FakeTask(i, [[1, 8 * (i + 1)]]) for i in range(4)]
    clusters = cluster_tasks(tasks, "operator", moved={3: "alone"})
    assert cluster_of(clusters, 3).members == [3]
    assert cluster_of(clusters, 0).members == [0, 1, 2]
    overridden = cluster_tasks(tasks, "operator", representative_overrides={"conv2d_add_relu": 2})
    assert cluster_of(overridden, 0).representative == 2
    assert cluster_of(overridden, 0).followers() == [0, 1, 3]


@pytest.mark.parametrize("seed", range(5))
def test_every_task_in_exactly_one_cluster(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tasks = [
        FakeTask(
            i,
            [list(rng.integers(1, 64, size=3))],
            flops=float(rng.integers(1, 1000)),
            operator_key=f"k{rng.integers(0, 4)}",
        )
        for i in range(30)
    ]
    clusters = cluster_tasks(tasks, "operator")
    members = sorted(m for c in clusters for m in c.members)
    assert members == list(range(30))
    assert all(c.representative in c.members for c in clusters)
    assert len({c.key for c in clusters}) == len(clusters)
    assert {c.key for c in clusters} == {t.operator_key for t in tasks}
