"""`bcd steer`: everything the dashboard sends to a tune, from a terminal, through the store;
a session no engine runs takes skips, un-skips and budgets in its rows; bad input is a clear
error (exit 2) that changes nothing."""

from __future__ import annotations

import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from bcd_core.cli import main
from bcd_core.records.rows import TrialRow
from bcd_core.records.states import SessionStatus, TaskStatus
from bcd_core.records.store import RecordStore
from bcd_core.tuning.channel import ControlChannel, RemoteControl
from bcd_core.tuning.control import TuningControl

TASKS = ("fused_matmul_add_relu", "fused_matmul_add_relu1", "fused_matmul_add")


def stored_session(db: Path, status: str = SessionStatus.STOPPED, strategy: str = "bcd", per_task: int = 4) -> int:
    """A session of three tasks (the first two one cluster), its first measured once."""
    with closing(RecordStore(db)) as store:
        sid = store.create_session(
            model_path="m.onnx",
            model_hash="h",
            target="llvm",
            target_key="k",
            strategy=strategy,
            settings={"trials_per_task": per_task},
        )
        keys = ("dense", "dense", "single:2")
        rows = [
            {"idx": i, "name": name, "weight": 1, "budget": per_task, "status": TaskStatus.QUEUED, "cluster_key": key}
            for i, (name, key) in enumerate(zip(TASKS, keys))
        ]
        store.add_tasks(sid, rows)
        first = store.tasks(sid)[0]["id"]
        store.record_round(sid, [TrialRow(first, 1, 1, 0.1, [1e-3], None, [], [], "k")])
        if status == SessionStatus.RUNNING:
            store.claim_session(sid)  # tuned by this process: live
        else:
            store.finish_session(sid, status, 1.0, 0.0)
    return sid


def bcd(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def task_rows(db: Path, sid: int) -> list[dict]:
    with closing(RecordStore(db, create=False)) as store:
        return store.tasks(sid)


def test_bad_input_is_a_clear_error_that_changes_nothing(tmp_path: Path, capsys) -> None:
    db = tmp_path / "r.db"
    missing = tmp_path / "none.db"
    assert bcd(capsys, "steer", "--db", str(missing), "pause")[0] == 2
    assert not missing.exists()
    stopped = stored_session(db)
    stock = stored_session(db, strategy="metaschedule")
    before = task_rows(db, stopped)
    cases = {
        ("pause",): "no tune is running on",  # no live session and none named
        ("--session", str(stopped), "pause"): "needs a running tune",
        ("--session", str(stopped), "skip", "nosuch"): "`bcd db tasks --db",
        ("--session", str(stopped), "skip", TASKS[0], "nosuch"): "no task 'nosuch'",  # the first is not skipped
        ("--session", "9", "skip", TASKS[0]): "no session 9",
        ("--session", str(stopped), "budget", TASKS[0], "-1"): "at least 0",
        ("--session", str(stopped), "order", "nosuch"): "needs a running tune",
        ("--session", str(stock), "skip", TASKS[0]): "stock MetaSchedule",
    }
    for words, expected in cases.items():
        code, out, err = bcd(capsys, "steer", "--db", str(db), *words)
        assert code == 2, words
        assert expected in err and "Traceback" not in err, (words, err)
    assert task_rows(db, stopped) == before
    code, _, err = bcd(capsys, "steer", "pause")
    assert code == 2 and "--db STORE" in err


def test_a_running_tune_gets_every_request_the_dashboard_sends(tmp_path: Path, capsys) -> None:
    db = tmp_path / "r.db"
    sid = stored_session(db, SessionStatus.RUNNING)
    steps = [
        ("skip", "1"),
        ("unskip", TASKS[1]),
        ("budget", TASKS[0], "2", "7"),
        ("cluster-budget", TASKS[1], "5"),
        ("total", "40"),
        ("order", TASKS[2], "dense"),
        ("move", "0", "single"),
        ("move", TASKS[2], TASKS[0]),
        ("representative", TASKS[1]),
        ("pause",),
        ("resume",),
    ]
    for words in steps:
        code, out, err = bcd(capsys, "steer", "--db", str(db), *words)  # no --session: the live one
        assert code == 0 and f"session {sid}" in out, err
    dashboard = tmp_path / "dashboard.db"  # the same requests from the dashboard's end
    stored_session(dashboard, SessionStatus.RUNNING)
    remote = RemoteControl(dashboard, sid)
    remote.skip_task(1)
    remote.unskip_task(1)
    remote.set_task_budget(0, 7)
    remote.set_task_budget(2, 7)
    remote.set_cluster_budget("dense", 5)
    remote.set_total_budget(40)
    remote.set_cluster_priority(["single:2", "dense"])
    remote.move_task(0, None)
    remote.move_task(2, "dense")
    remote.set_representative("dense", 1)
    remote.pause()
    remote.resume()

    def requests(path: Path) -> list[tuple]:
        with closing(RecordStore(path, create=False)) as store:
            return [(r["kind"], r["args"]) for r in store.control_requests(sid)]

    assert requests(db) == requests(dashboard)
    control = TuningControl()  # and the engine's channel hands them to the tuner
    channel = ControlChannel(db, sid, control)
    with closing(RecordStore(db, create=False)) as store:
        channel.poll(store)
    assert len(control.pending()) == len(steps) - 2 + 1 and not control.paused  # budget named two tasks


def test_a_stored_session_takes_skips_unskips_and_budgets_in_its_rows(tmp_path: Path, capsys) -> None:
    db = tmp_path / "r.db"
    sid = stored_session(db, SessionStatus.STOPPED)
    assert bcd(capsys, "steer", "--db", str(db), "--session", str(sid), "skip", "0", TASKS[2])[0] == 0
    assert [r["status"] for r in task_rows(db, sid)] == [TaskStatus.SKIPPED, TaskStatus.QUEUED, TaskStatus.SKIPPED]
    with closing(RecordStore(db, create=False)) as store:
        store.finish_session(sid, SessionStatus.COMPLETED, 1.0, 0.0)
    code, out, _ = bcd(capsys, "steer", "--db", str(db), "--session", str(sid), "unskip", TASKS[0], "2")
    assert code == 0 and "2 of 2 task(s) un-skipped" in out and f"bcd tune --resume {sid}" in out
    rows = task_rows(db, sid)
    assert [r["status"] for r in rows] == [TaskStatus.TUNING, TaskStatus.QUEUED, TaskStatus.QUEUED]  # measured: tuning
    with closing(RecordStore(db, create=False)) as store:
        session = store.session(sid)
    # Complete, it had spent its 12 trials: the un-skipped tasks' 3 + 4 left come on top, resumable.
    assert (session["status"], session["total_budget"]) == (SessionStatus.STOPPED, 12 + 3 + 4)
    assert bcd(capsys, "steer", "--db", str(db), "--session", str(sid), "budget", TASKS[1], "9")[0] == 0
    assert bcd(capsys, "steer", "--db", str(db), "--session", str(sid), "cluster-budget", "dense", "6")[0] == 0
    assert [r["budget"] for r in task_rows(db, sid)] == [6, 6, 4]
    with closing(RecordStore(db, create=False)) as store:  # each budget moved the total by its difference
        assert store.session(sid)["total_budget"] == 12 + 3 + 4 + (9 - 4) + (6 - 4) + (6 - 9)
    code, out, _ = bcd(capsys, "db", "tasks", "--db", str(db), "--session", str(sid))
    assert code == 0 and all(name in out for name in TASKS) and "single:2" in out


@pytest.fixture(scope="module")
def tiny_tasks(tiny_mlp: Path, host) -> list:
    from bcd_core.tuning.run import prepare_model

    return prepare_model(tiny_mlp, host).tasks


def trials_of(db: Path, sid: int, index: int) -> int:
    with closing(RecordStore(db, create=False)) as store:
        row = next(r for r in store.tasks(sid) if r["idx"] == index)
        return len(store.trials(sid, task_id=row["id"]))


@pytest.mark.slow
def test_steer_pauses_unskips_and_resumes_a_running_tune(tmp_path: Path, tiny_mlp: Path, host, tiny_tasks, capsys):
    """A real tune in this process (its engine thread), steered only through `bcd steer`."""
    from bcd_core.tuning.events import RoundFinished
    from bcd_core.tuning.settings import TuneSettings
    from bcd_core.tuning.tune import run_session

    db, last = tmp_path / "live.db", tiny_tasks[-1]
    control = TuningControl()
    control.skip_task(last.index)  # applied before the first round: the task starts skipped
    asked: list[int] = []

    def pause_after_the_first_round(event: object) -> None:
        if isinstance(event, RoundFinished) and not asked:
            asked.append(main(["steer", "--db", str(db), "pause"]))
            deadline = time.time() + 10
            while not control.paused and time.time() < deadline:  # the engine's channel took it
                time.sleep(0.05)

    settings = TuneSettings(strategy="bcd", trials_per_task=6, trials_per_round=2)
    listeners = [pause_after_the_first_round]
    engine = threading.Thread(
        target=run_session, args=(tiny_mlp, db, host, settings, listeners), kwargs={"control": control}
    )
    engine.start()
    try:
        sid = wait_until_paused(db)
        assert asked == [0]
        measured = trials_of(db, sid, last.index), committed(db, sid)
        time.sleep(1.5)
        assert committed(db, sid) == measured[1] and measured[0] == 0  # paused; the skipped task untouched
        assert bcd(capsys, "steer", "--db", str(db), "unskip", last.name)[0] == 0
        assert bcd(capsys, "steer", "--db", str(db), "resume")[0] == 0
    finally:
        engine.join(timeout=600)
    assert not engine.is_alive()
    with closing(RecordStore(db, create=False)) as store:
        assert store.session(sid)["status"] == SessionStatus.COMPLETED
        events = [e["message"] for e in store.events(sid)]
        row = next(r for r in store.tasks(sid) if r["idx"] == last.index)
    assert "paused" in events and "resumed" in events and f"applied unskip(task={last.index})" in events
    assert row["status"] != TaskStatus.SKIPPED and trials_of(db, sid, last.index) > 0


def wait_until_paused(db: Path, timeout_s: float = 300) -> int:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if db.exists():
            with closing(RecordStore(db, create=False)) as store:
                sessions = store.sessions()
                state = store.engine_state(sessions[0]["id"]) if sessions else None
                if state and state["paused"]:
                    return int(sessions[0]["id"])
        time.sleep(0.2)
    raise AssertionError("the tune never paused")


def committed(db: Path, sid: int) -> int:
    with closing(RecordStore(db, create=False)) as store:
        return len(store.trials(sid))


@pytest.mark.slow
def test_steer_unskips_a_completed_sessions_task_and_the_same_tune_command_tunes_it(
    tmp_path: Path, tiny_mlp: Path, host, tiny_tasks, capsys
) -> None:
    from bcd_core.tuning.settings import TuneSettings
    from bcd_core.tuning.tune import run_session

    db, last = tmp_path / "stored.db", tiny_tasks[-1]
    control = TuningControl()
    control.skip_task(last.index)
    settings = TuneSettings(strategy="bcd", trials_per_task=2, trials_per_round=2)
    sid = run_session(tiny_mlp, db, host, settings, control=control).session_id
    assert trials_of(db, sid, last.index) == 0
    command = ["tune", str(tiny_mlp), "--db", str(db), "--trials-per-task", "2", "--trials-per-round", "2"]
    code, _, err = bcd(capsys, *command)  # the same command again: complete, nothing tuned
    assert code == 0 and f"session {sid}" in err and "nothing left to tune" in err
    assert trials_of(db, sid, last.index) == 0

    code, out, _ = bcd(capsys, "steer", "--db", str(db), "--session", str(sid), "unskip", str(last.index))
    assert code == 0 and "1 of 1 task(s) un-skipped" in out
    code, _, err = bcd(capsys, *command)  # continues the session, reopened
    assert code == 0, err
    assert f"continuing session {sid}" in err
    with closing(RecordStore(db, create=False)) as store:
        assert [s["id"] for s in store.sessions()] == [sid]
        assert store.session(sid)["status"] == SessionStatus.COMPLETED
    assert trials_of(db, sid, last.index) > 0
