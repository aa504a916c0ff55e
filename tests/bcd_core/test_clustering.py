from dataclasses import dataclass, field

import numpy as np
import pytest

from bcd_core.clustering import (
    HEAVY_KEY_SUFFIX,
    choose_representative,
    cluster_of,
    cluster_tasks,
    cosine_similarity_matrix,
    heavy_members,
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


def heavy_cluster() -> list[FakeTask]:
    """Four similar tasks (the representative is task 1, the most similar to the rest); task 3
    does 12x task 1's work, task 2 does 9x (FLOPs 3 x weight 3)."""
    shapes = [[[1, 64, 13, 13]], [[1, 64, 14, 14]], [[1, 64, 15, 15]], [[1, 64, 13, 16]]]
    flops = [1.0, 1.0, 3.0, 12.0]
    weights = [1, 1, 3, 1]
    return [FakeTask(i, shapes[i], flops=flops[i], weight=weights[i]) for i in range(4)]


def test_representative_of_heavy_cluster_fixture() -> None:
    tasks = heavy_cluster()
    assert cluster_tasks(tasks, "operator")[0].representative == 1


def test_a_member_ten_times_its_representative_is_tuned_alone() -> None:
    clusters = cluster_tasks(heavy_cluster(), "operator", heavy_member_ratio=10)
    heavy = cluster_of(clusters, 3)
    assert heavy.members == [3] and heavy.representative == 3
    assert heavy.key == f"conv2d_add_relu{HEAVY_KEY_SUFFIX}3"
    rest = cluster_of(clusters, 0)
    assert rest.members == [0, 1, 2] and rest.representative == 1  # 9x (flops x weight) stays
    assert [c.key for c in clusters] == [heavy.key, "conv2d_add_relu"]  # priority by weighted FLOPs
    assert cluster_tasks(heavy_cluster(), "operator", heavy_member_ratio=0) == cluster_tasks(
        heavy_cluster(), "operator"
    )
    by_weight = cluster_tasks(heavy_cluster(), "operator", heavy_member_ratio=9)
    assert sorted(c.members for c in by_weight) == [[0, 1], [2], [3]]


def test_heavy_split_keeps_user_moves_and_chosen_representative() -> None:
    tasks = heavy_cluster()
    # The user put task 3 in the cluster (by its key): it stays there.
    kept = cluster_tasks(tasks, "operator", moved={3: "conv2d_add_relu"}, heavy_member_ratio=10)
    assert cluster_of(kept, 3).members == [0, 1, 2, 3]
    # With the heavy task as the chosen representative, nothing is heavier than it.
    chosen = cluster_tasks(tasks, "operator", representative_overrides={"conv2d_add_relu": 3}, heavy_member_ratio=10)
    assert cluster_of(chosen, 0).members == [0, 1, 2, 3] and cluster_of(chosen, 0).representative == 3
    assert heavy_members(tasks, 0, 10.0) == [tasks[3]]
    assert heavy_members(tasks, 0, 10.0, keep={3}) == []


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
    for ratio in (0.0, 2.0):
        clusters = cluster_tasks(tasks, "operator", heavy_member_ratio=ratio)
        members = sorted(m for c in clusters for m in c.members)
        assert members == list(range(30))
        assert all(c.representative in c.members for c in clusters)
        assert len({c.key for c in clusters}) == len(clusters)
