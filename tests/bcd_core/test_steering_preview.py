"""Requests made before Tune show on the model's preview as the engine will apply them."""

from __future__ import annotations

from types import SimpleNamespace

from bcd_core.session_view import preview_snapshot
from bcd_core.steering_preview import preview_with_requests
from bcd_core.tuning.control import TuningControl


def task(index: int, flops: float) -> SimpleNamespace:
    keys = {"operator_key": "conv", "sketch_key": "s"}
    return SimpleNamespace(index=index, name=f"t{index}", weight=1, flops=flops, shapes=[[1, 8]], **keys)


def cluster(key: str, members: list[int]) -> SimpleNamespace:
    return SimpleNamespace(key=key, members=members, representative=members[0], size=len(members))


def preview():
    tasks = [task(0, 100.0), task(1, 50.0), task(2, 10.0)]
    return preview_snapshot("m.onnx", "bcd", tasks, [cluster("a", [0, 1]), cluster("b", [2])], 4)


def grouping(snapshot) -> list[tuple[str, int | None, list[int]]]:
    return [(c.key, c.representative, c.members) for c in snapshot.clusters]


def test_moves_and_representatives_regroup_the_preview_as_the_engine_does() -> None:
    control = TuningControl()
    assert grouping(preview_with_requests(preview(), [])) == [("a", 0, [0, 1]), ("b", None, [2])]
    control.move_task(1, None)  # out on its own
    assert grouping(preview_with_requests(preview(), control.pending())) == [
        ("a", None, [0]),
        ("single:1", None, [1]),
        ("b", None, [2]),
    ]
    control = TuningControl()
    control.move_task(2, "a")
    control.set_representative("a", 2)
    moved = preview_with_requests(preview(), control.pending())
    assert grouping(moved) == [("a", 2, [2, 0, 1])]
    assert [t.index for t in moved.tasks if t.is_representative] == [2]


def test_a_moved_task_keeps_its_budget_and_the_order_asked_for_applies_after() -> None:
    control = TuningControl()
    control.set_task_budget(1, 9)
    control.move_task(1, None)
    control.set_cluster_priority(["single:1"])
    shown = preview_with_requests(preview(), control.pending())
    assert shown.clusters[0].key == "single:1" and shown.task(1).cap == 9
    assert shown.trials_total == 3 * 4 + 5
