"""Kill a real `bcd tune` mid-run and re-run the same command: it continues the session."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_helpers import committed_trials

from bcd_core.cores import kernel_threads
from bcd_core.records.store import RecordStore


def tune_command(model: Path, db: Path, strategy: str, trials_per_task: int = 6) -> list[str]:
    options = ["--strategy", strategy, "--trials-per-task", str(trials_per_task), "--trials-per-round", "2"]
    options += ["--db", str(db)]
    return [sys.executable, "-m", "bcd_core", "tune", str(model), *options]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["metaschedule", "bcd"])
def test_killed_tune_resumes_without_losing_trials(tiny_convnet: Path, tmp_path: Path, strategy: str) -> None:
    db = tmp_path / "resume.db"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(tune_command(tiny_convnet, db, strategy), start_new_session=True, **quiet)
    deadline = time.time() + 300
    while len(committed_trials(db)) < 4 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    assert process.poll() is None, "tune finished before it could be killed; raise the budget"
    os.killpg(process.pid, signal.SIGKILL)  # the CLI and its builder/runner workers
    process.wait()
    before = committed_trials(db)
    assert len(before) >= 4

    done = subprocess.run(tune_command(tiny_convnet, db, strategy), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "resumed" in done.stderr

    after = committed_trials(db)
    assert after[: len(before)] == before, "a trial committed before the kill changed or vanished"
    assert len({row[0] for row in after}) == len(after)
    store = RecordStore(db)
    sessions = store.sessions()
    assert len(sessions) == 1 and sessions[0]["status"] == "completed"
    # Rounds continue after the last committed one instead of starting over.
    rounds_before = {row[3] for row in before}
    new_rounds = {row[3] for row in after[len(before) :]}
    assert not rounds_before & new_rounds
    assert sessions[0]["trials_done"] == len(after)
    assert len(after) <= 6 * len(store.tasks(sessions[0]["id"])) + 2  # budget, plus at most one batch


TRIALS_FOR_THREE_KILLS = 16  # enough rounds that three random kill points fall inside the tune


@pytest.mark.slow
def test_repeated_sigkill_at_random_points_loses_and_duplicates_nothing(tiny_convnet: Path, tmp_path: Path) -> None:
    """Kill `bcd tune` (with its builder and runner workers) at random moments, three times;
    after each kill every trial committed so far is still there exactly once, and the
    fourth run completes the session."""
    db = tmp_path / "kills.db"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    rng = random.Random(20261122)
    committed: list[tuple] = []
    kills = 0
    command = tune_command(tiny_convnet, db, "bcd", trials_per_task=TRIALS_FOR_THREE_KILLS)
    for _ in range(3):
        process = subprocess.Popen(command, start_new_session=True, **quiet)
        # Random moment: after the start-up (import, extraction, first rounds), or in the middle of a round.
        wait_for = len(committed) + rng.randint(1, 6)
        deadline = time.time() + 300
        while len(committed_trials(db)) < wait_for and time.time() < deadline and process.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))
        if process.poll() is not None:
            break  # finished before this kill: the checks below still hold
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        kills += 1
        now = committed_trials(db)
        assert now[: len(committed)] == committed, "a trial committed before a kill changed or vanished"
        assert len({row[0] for row in now}) == len(now)
        committed = now
    assert kills >= 2, "the tune finished too fast to be killed; raise the budget"

    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    after = committed_trials(db)
    assert after[: len(committed)] == committed
    assert len({row[0] for row in after}) == len(after)
    # No round was written twice: each (task, round) pair belongs to one batch.
    rounds = {}
    for _id, _session, task, round_, _trace in after:
        rounds.setdefault(round_, set()).add(task)
    assert all(len(tasks) == 1 for tasks in rounds.values())
    store = RecordStore(db)
    sessions = store.sessions()
    assert len(sessions) == 1 and sessions[0]["status"] == "completed"
    assert sessions[0]["trials_done"] == len(after)
    assert len(after) >= TRIALS_FOR_THREE_KILLS * len(store.tasks(sessions[0]["id"]))  # the whole budget


@pytest.mark.slow
def test_resume_refuses_a_session_whose_model_or_target_changed(tiny_convnet: Path, tiny_mlp: Path, tmp_path: Path):
    db = tmp_path / "refuse.db"
    command = [sys.executable, "-m", "bcd_core", "tune", str(tiny_convnet), "--strategy", "metaschedule"]
    first = subprocess.run(
        [*command, "--trials-per-task", "2", "--trials-per-round", "2", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr
    before = committed_trials(db)

    def resume(model: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "bcd_core", "tune", str(model), "--db", str(db), "--resume", "1", *extra]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)

    other_model = resume(tiny_mlp)
    assert other_model.returncode == 2
    assert "session 1 tuned tiny_convnet.onnx" in other_model.stderr and "different contents" in other_model.stderr
    other_target = resume(tiny_convnet, "--target", '{"kind": "llvm", "num-cores": 1}')
    assert other_target.returncode == 2
    assert "session 1 was tuned for target" in other_target.stderr and "--target" in other_target.stderr
    cores = str(kernel_threads())  # what the first tune's process inherited from this one
    other_threads = resume(tiny_convnet, env=os.environ | {"TVM_NUM_THREADS": str(kernel_threads() + 1)})
    assert other_threads.returncode == 2
    assert f"ran its kernels on {cores} thread(s)" in other_threads.stderr
    assert f"TVM_NUM_THREADS={cores}" in other_threads.stderr
    assert committed_trials(db) == before  # refusing touched nothing

    store = RecordStore(db)
    with store.transaction() as conn:  # as if an older bcd had written it
        conn["sessions"].update(1, {"tool_version": "0.0.1", "status": "interrupted"})
    store.close()
    old_tool = resume(tiny_convnet)
    assert old_tool.returncode == 2
    assert "written by bcd 0.0.1" in old_tool.stderr and "--new-session" in old_tool.stderr
    assert committed_trials(db) == before


def test_a_session_of_a_retired_strategy_or_choice_is_refused_with_what_to_do() -> None:
    import json

    from bcd_core.errors import StoreError
    from bcd_core.tuning.run import settings_of_session, stored_identity
    from bcd_core.tuning.settings import TuneSettings

    phased = {"id": 3, "strategy": "bcd-phased", "settings": json.dumps({"trials_per_task": 8})}
    with pytest.raises(StoreError, match="retired.*--strategy bcd"):
        settings_of_session(phased, TuneSettings())
    cold = {"id": 4, "strategy": "bcd", "settings": json.dumps({**TuneSettings().identity(), "first_round": "cold"})}
    with pytest.raises(StoreError, match="first_round=cold.*new session"):
        settings_of_session(cold, TuneSettings())
    today = TuneSettings(seed=5, diffusion_share=0.1)
    session = {"id": 5, "strategy": "bcd", "settings": json.dumps(today.identity())}
    resumed = settings_of_session(session, TuneSettings())
    assert (resumed.seed, resumed.diffusion_share) == (5, 0.1)
    assert resumed.identity() == stored_identity(session) == today.identity()
    stock = TuneSettings(strategy="metaschedule").identity()
    assert stored_identity({"strategy": "metaschedule", "settings": json.dumps(stock)}) == stock


def test_a_session_stored_before_the_math_option_resumes_as_it_ran(tmp_path) -> None:
    """Sessions written before `math` existed imported exact functions: resuming one must too
    (its tasks hold libm's erf), and a tune with today's default math (fast) must not continue it."""
    from bcd_core.records.store import RecordStore
    from bcd_core.tuning.continuation import find_session_to_continue
    from bcd_core.tuning.run import settings_of_session
    from bcd_core.tuning.settings import TuneSettings

    store = RecordStore(tmp_path / "old.db")
    ids = {}
    for strategy in ("bcd", "metaschedule"):
        older = {k: v for k, v in TuneSettings(strategy=strategy).identity().items() if k not in ("math", "cpu_cache")}
        ids[strategy] = store.create_session(
            model_path="m.onnx", model_hash="h", target="t", target_key="k", strategy=strategy, settings=older
        )
    for strategy, sid in ids.items():
        today = TuneSettings(strategy=strategy)
        assert today.math == "fast"
        assert find_session_to_continue(store, "h", "k", today) is None
        found = find_session_to_continue(store, "h", "k", TuneSettings(strategy=strategy, math="exact"))
        assert found is not None and found["id"] == sid
        assert settings_of_session(found, TuneSettings()).math == "exact"
    store.close()
