"""Whether a tune continues a session or starts a new one is the engine's decision
(tuning/continuation.py): `bcd tune` and the dashboard's Tune and Resume reach the same one for
the same store, and act on it alike (a complete session is not tuned again unasked)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest

from bcd_core import cli
from bcd_core.model_import import file_sha256
from bcd_core.records.states import SessionStatus, TaskStatus
from bcd_core.records.store import RecordStore
from bcd_core.target import parse_target, target_key
from bcd_core.tuning.continuation import Choice
from bcd_core.tuning.settings import TuneSettings

SETTINGS = TuneSettings(trials_per_task=4, trials_per_round=2)
FLAGS = ["--trials-per-task", "4", "--trials-per-round", "2"]


def add_session(db: Path, model: Path, status: str, settings: TuneSettings = SETTINGS, skipped: bool = False) -> int:
    with closing(RecordStore(db)) as store:
        sid = store.create_session(
            model_path=str(model),
            model_hash=file_sha256(model),
            target="llvm",
            target_key=target_key(parse_target("llvm")),
            strategy=settings.strategy,
            settings=settings.identity(),
        )
        rows = [{"idx": 0, "name": "t0", "weight": 1, "budget": settings.trials_per_task, "status": TaskStatus.DONE}]
        if skipped:
            rows.append(
                {"idx": 1, "name": "t1", "weight": 1, "budget": settings.trials_per_task, "status": TaskStatus.SKIPPED}
            )
        store.add_tasks(sid, rows)
        store.finish_session(sid, status, 1.0, 0.0)
    return sid


class Cli:
    """`bcd tune`, its engine replaced by a recorder: what it decided and what it ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.decisions: list = []
        self.runs: list[tuple[bool, int | None]] = []
        decide = cli.session_decision
        monkeypatch.setattr(cli, "session_decision", lambda *a: self.decisions.append(decide(*a)) or self.decisions[-1])

        def run_session(model, db, target, settings, listeners, new_session, control, resume_session_id, memory):
            self.runs.append((new_session, resume_session_id))
            return SimpleNamespace(session_id=0)

        monkeypatch.setattr("bcd_core.tuning.tune.run_session", run_session)

    def tune(self, model: Path, db: Path, *extra: str) -> int:
        return cli.main(["tune", str(model), "--db", str(db), *FLAGS, *extra])


class Window:
    """The dashboard's Tune on the open model, its engine launch replaced by a recorder."""

    def __init__(self, window, monkeypatch: pytest.MonkeyPatch, model: Path) -> None:
        self.win, self.decisions, self.launches, self.asked = window, [], [], []
        self.answer = False
        window.model_path, window.model_hash = model, file_sha256(model)
        window.reader = RecordStore(window.db_path)
        tuning = window.tuning
        decide = tuning.decide
        tuning.decide = lambda *a: self.decisions.append(decide(*a)) or self.decisions[-1]
        tuning.ask_new_session = lambda reason: self.asked.append(reason) or self.answer
        tuning._begin = lambda worker, status: None
        launch = lambda launch: self.launches.append((launch.new_session, launch.resume_session_id))  # noqa: E731
        monkeypatch.setattr("bcd_gui.tune_controller.LiveTune.launch", launch)

    def tune(self) -> None:
        self.win.start_tune(SETTINGS, "llvm")


@pytest.fixture
def both(window, monkeypatch, tiny_mlp: Path) -> tuple[Cli, Window]:
    return Cli(monkeypatch), Window(window, monkeypatch, tiny_mlp)


def decided(side: Cli | Window) -> tuple[Choice, int | None]:
    decision = side.decisions[-1]
    return decision.choice, decision.session_id


def test_tune_continues_an_unfinished_session_or_starts_one_alike(both, tiny_mlp: Path, capsys) -> None:
    terminal, dashboard = both
    db = dashboard.win.db_path
    assert terminal.tune(tiny_mlp, db) == 0  # an empty store
    dashboard.tune()
    assert decided(terminal) == decided(dashboard) == (Choice.NEW, None)
    stopped = add_session(db, tiny_mlp, SessionStatus.STOPPED)
    add_session(db, tiny_mlp, SessionStatus.COMPLETED, TuneSettings(trials_per_task=8, trials_per_round=2))
    assert terminal.tune(tiny_mlp, db) == 0
    dashboard.tune()
    assert decided(terminal) == decided(dashboard) == (Choice.CONTINUE, stopped)  # other settings: not theirs
    assert terminal.runs == dashboard.launches == [(False, None), (False, None)]  # the engine finds the same
    assert f"continuing session {stopped}" in capsys.readouterr().err


def test_a_complete_session_is_not_tuned_again_unasked_by_either(both, tiny_mlp: Path, capsys) -> None:
    terminal, dashboard = both
    db = dashboard.win.db_path
    complete = add_session(db, tiny_mlp, SessionStatus.COMPLETED, skipped=True)
    assert terminal.tune(tiny_mlp, db) == 0
    dashboard.tune()
    assert decided(terminal) == decided(dashboard) == (Choice.COMPLETE, complete)
    assert terminal.runs == dashboard.launches == []  # nothing tuned
    err = capsys.readouterr().err
    assert "nothing left to tune" in err and "--new-session" in err and f"--resume {complete}" in err
    assert dashboard.asked == [terminal.decisions[-1].reason]  # the dashboard asks instead
    assert "Not tuned" in dashboard.win.status_text.text()
    dashboard.answer = True  # yes, a new session: as `bcd tune --new-session`
    dashboard.tune()
    assert terminal.tune(tiny_mlp, db, "--new-session") == 0
    assert terminal.runs == dashboard.launches == [(True, None)]


def test_resuming_a_complete_session_tunes_its_skipped_tasks_from_either(both, tiny_mlp: Path) -> None:
    terminal, dashboard = both
    db = dashboard.win.db_path
    complete = add_session(db, tiny_mlp, SessionStatus.COMPLETED, skipped=True)
    assert terminal.tune(tiny_mlp, db, "--resume", str(complete)) == 0
    dashboard.win.resume_session(complete)
    assert decided(terminal) == decided(dashboard) == (Choice.REOPEN, complete)
    assert terminal.runs == dashboard.launches == [(False, complete)]
    with closing(RecordStore(db, create=False)) as store:  # the engine reopens it, once it checked it
        assert store.session(complete)["status"] == SessionStatus.COMPLETED
    assert cli.main(["tune", str(tiny_mlp), "--db", str(db), "--resume", "1", "--new-session"]) == 2
