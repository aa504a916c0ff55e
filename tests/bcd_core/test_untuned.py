"""The untuned baseline with real TVM: timed once per workload and target, then read back."""

from __future__ import annotations

from pathlib import Path

from bcd_core.records.store import RecordStore
from bcd_core.target import host_target
from bcd_core.tuning.run import prepare_model
from bcd_core.untuned import stored_untuned


def test_untuned_latencies_are_timed_once_per_workload_and_target(tmp_path: Path, tiny_mlp: Path) -> None:
    target = host_target()
    tasks = prepare_model(tiny_mlp, target).tasks
    store = RecordStore(tmp_path / "records.db")
    first = stored_untuned(store, tasks, target)
    assert set(first) == {task.index for task in tasks} and all(v > 0 for v in first.values())
    rows = store.db["untuned"].count
    assert stored_untuned(store, tasks, target) == first  # read back, not timed again
    assert store.db["untuned"].count == rows
    other = host_target(num_cores=1 if target.attrs["num-cores"] != 1 else 2)
    stored_untuned(store, tasks, other)  # another target: timed for it
    assert store.db["untuned"].count > rows


def test_a_task_skipped_before_its_first_measurement_counts_untuned_in_the_estimate() -> None:
    from bcd_core.session_view import SessionSnapshot, TaskView, estimate_with_untuned

    def task(index: int, status: str, best: float | None) -> TaskView:
        return TaskView(index, index, f"t{index}", 2, 1.0, [], "op", "sk", 0, "c", False, None, status, best_s=best)

    tasks = [task(0, "done", 1e-3), task(1, "skipped", None)]
    snapshot = SessionSnapshot(session={"id": 1}, tasks=tasks, clusters=[], timeline=[], metrics=[])
    assert estimate_with_untuned(snapshot, {}) == (None, [])  # its untuned time is not known yet
    assert estimate_with_untuned(snapshot, {0: 5e-3, 1: 4e-3}) == (2 * 1e-3 + 2 * 4e-3, ["t1"])
    tasks[1].status = "tuning"  # not skipped: the estimate waits for its measurement
    assert estimate_with_untuned(snapshot, {0: 5e-3, 1: 4e-3}) == (None, [])
