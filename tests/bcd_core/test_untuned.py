"""The untuned baseline with real TVM: timed once per workload and target, then read back."""

from __future__ import annotations

from pathlib import Path

from bcd_core.records.store import RecordStore
from bcd_core.target import host_target
from bcd_core.tuning.session import prepare_model
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
