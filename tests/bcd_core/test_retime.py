"""Each task's leading program is timed again at milestones; the re-timed latency is what the
estimate sums and what picks the record the compiler applies."""

from pathlib import Path

import pytest

from bcd_core.records.store import RecordStore
from bcd_core.session_view import load_snapshot
from bcd_core.target import host_target
from bcd_core.tuning import retime
from bcd_core.tuning.retime import retime_leaders
from bcd_core.tuning.run import estimated_latency
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

pytestmark = pytest.mark.slow


def leaders(run) -> dict[int, dict]:
    return {task.index: run.database.top_rows(run.workload_ids[task.index], 1)[0] for task in run.tasks}


def test_the_final_estimate_sums_the_retimed_leaders(tmp_path: Path, tiny_convnet: Path, time_model) -> None:
    db = tmp_path / "retimed.db"
    run = run_session(tiny_convnet, db, host_target(), TuneSettings(trials_per_task=4, trials_per_round=2))
    store = RecordStore(db)
    leading = leaders(run)
    retimed = store.retimed_latencies([row["id"] for row in leading.values()])
    assert set(retimed) == {row["id"] for row in leading.values()}, "every task's applied program was re-timed"
    expected = sum(task.weight * retimed[leading[task.index]["id"]] for task in run.tasks)
    final = store.model_latencies(run.session_id)[-1]
    assert final["milestone"] == "final"
    assert final["estimated_latency_s"] == pytest.approx(expected)
    assert store.session(run.session_id)["estimated_latency_s"] == pytest.approx(expected)
    assert final["search_estimate_s"] == pytest.approx(estimated_latency(run.tasks, run.best))
    # what the dashboard, the report and `bcd inspect` show per task is the applied program's latency
    snapshot = load_snapshot(store, run.session_id)
    assert {t.index: t.best_s for t in snapshot.tasks} == pytest.approx(
        {index: retimed[row["id"]] for index, row in leading.items()}
    )
    assert snapshot.estimated_latency_s == pytest.approx(expected)


def test_a_leader_that_retimes_slow_gives_way_and_the_next_is_timed(
    tmp_path: Path, tiny_convnet: Path, monkeypatch
) -> None:
    run = run_session(tiny_convnet, tmp_path / "slow.db", host_target(), TuneSettings(trials_per_task=4))
    first_leaders = {row["id"] for row in leaders(run).values()}
    real_time_again, calls = retime._time_again, []

    def first_round_slow(*args):
        timings = real_time_again(*args)
        calls.append(set(timings))
        slower = 1000.0 if len(calls) == 1 else 1.0  # the first leaders seem to re-time 1000x slower
        return {trial: (seconds * slower, spread, n) for trial, (seconds, spread, n) in timings.items()}

    monkeypatch.setattr(retime, "_time_again", first_round_slow)
    result = retime_leaders(run)
    # the next leaders are timed; one of them may in turn re-time behind a third program
    assert calls[0] == first_leaders and 2 <= len(calls) <= retime.ROUNDS
    final_leaders = leaders(run)
    assert not first_leaders & {row["id"] for row in final_leaders.values()}
    later = set().union(*calls[1:])
    assert not later & first_leaders, "a program is timed once per pass"
    assert set(RecordStore(tmp_path / "slow.db").retimed_latencies(list(later))) == later
    assert result.leaders == {index: row["latency_s"] for index, row in final_leaders.items()}
    assert result.programs == sum(len(c) for c in calls) and result.failed == 0


def test_a_later_milestone_times_only_leaders_not_timed_before(tmp_path: Path, tiny_convnet: Path, monkeypatch) -> None:
    """A milestone's cost is the tasks whose leader changed since the last one: a pass over
    unchanged leaders builds and times nothing, and a new leader is the only program timed."""
    run = run_session(tiny_convnet, tmp_path / "again.db", host_target(), TuneSettings(trials_per_task=4))
    first = retime_leaders(run)  # an earlier milestone (the tests' tunes time none of their own)
    assert first.programs >= len(run.tasks)
    timed_before = {row["id"] for row in leaders(run).values()}
    again = retime_leaders(run)
    assert again.programs == 0 and again.leaders == {i: row["latency_s"] for i, row in leaders(run).items()}

    # the slowest program never timed again (a re-timing, not the search's measurement, ranks a
    # program timed again) of a task whose search stored more than one (a small space may hold one)
    store = RecordStore(tmp_path / "again.db")
    rows = max((run.database.top_rows(run.workload_ids[t.index], 100) for t in run.tasks), key=len)
    retimed = store.retimed_latencies([row["id"] for row in rows])
    untimed = [row for row in rows if row["id"] not in retimed]
    assert untimed, "the tune stored a program for some task that no milestone timed again"
    slowest = untimed[-1]
    store.db.execute(  # a program the search timed as fastest of all
        "update trials set latency_s = ? where id = ?", [1e-9, slowest["id"]]
    ).connection.commit()
    sent: list[set[int]] = []
    real_time_again = retime._time_again
    monkeypatch.setattr(
        retime,
        "_time_again",
        lambda r, b, rn, rows: sent.append({x["id"] for x in rows}) or real_time_again(r, b, rn, rows),
    )
    result = retime_leaders(run)
    assert sent[0] == {slowest["id"]} and slowest["id"] not in timed_before
    assert result.programs >= 1


def test_a_first_estimate_at_the_last_batch_is_the_sessions_final(
    tmp_path: Path, tiny_convnet: Path, time_model
) -> None:
    """When the first full estimate comes with the last batch, no final milestone follows (it
    would time the same trials): the session still ends with the re-timed estimate."""
    db = tmp_path / "late.db"
    run = run_session(tiny_convnet, db, host_target(), TuneSettings(trials_per_task=2, trials_per_round=2))
    store = RecordStore(db)
    timed = store.model_latencies(run.session_id)
    assert [row["milestone"] for row in timed] == ["first estimate"]
    assert timed[0]["trials_done"] == run.trials_done
    assert store.session(run.session_id)["estimated_latency_s"] == pytest.approx(timed[0]["estimated_latency_s"])


def test_a_task_skipped_before_it_was_measured_counts_untuned_and_the_model_is_timed(
    tmp_path: Path, tiny_convnet: Path, time_model
) -> None:
    """A skip must not leave the session without an estimate (and so without milestones or
    latency goals): the skipped task counts at its untuned latency, the latency export gives it."""
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.run import prepare_model
    from bcd_core.untuned import stored_untuned

    skipped = prepare_model(tiny_convnet, host_target()).tasks[-1]
    control = TuningControl()
    control.skip_task(skipped.index)  # before the tune: no candidate of it is ever measured
    db = tmp_path / "skip.db"
    settings = TuneSettings(trials_per_task=4, trials_per_round=2)
    run = run_session(tiny_convnet, db, host_target(), settings, control=control)
    store = RecordStore(db)
    assert skipped.index not in run.best
    untuned = stored_untuned(store, [skipped], host_target())[skipped.index]  # kept by the tune: read back
    leading = {
        t.index: run.database.top_rows(run.workload_ids[t.index], 1)[0] for t in run.tasks if t.index != skipped.index
    }
    retimed = store.retimed_latencies([row["id"] for row in leading.values()])
    expected = skipped.weight * untuned + sum(
        t.weight * retimed[leading[t.index]["id"]] for t in run.tasks if t.index in leading
    )
    timed = store.model_latencies(run.session_id)
    assert timed and timed[-1]["measured_latency_s"] > 0
    assert store.session(run.session_id)["estimated_latency_s"] == pytest.approx(expected)
