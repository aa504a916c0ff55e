"""Every hostile input gives `bcd: error: <what went wrong and what to do>`, exit code 2, no
traceback, and leaves every store exactly as it was."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import hostile_corpus as corpus
import pytest
from hostile_corpus import Case

from bcd_core.cli import main

TUNE_ARGS = ["--trials-per-task", "1", "--trials-per-round", "1"]
LOCK_FAILS_WITHIN_S = 15  # the store waits 5 s for a lock; anything near this bound is a hang


def the_error_line(stderr: str) -> str:
    """The one `bcd: error:` line; whatever else was logged, no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("bcd: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def tune(model: Path, db: Path, target: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["tune", str(model), "--db", str(db), "--target", target, *TUNE_ARGS])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", corpus.MODEL_CASES + corpus.TARGET_CASES, ids=lambda c: c.id)
def test_bad_model_or_target_is_refused_and_the_store_is_unchanged(
    case: Case, tmp_path: Path, existing_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = corpus.store_rows(existing_store)
    code, stderr = tune(case.make(tmp_path), existing_store, case.target, capsys)
    assert code == 2
    assert case.expected in the_error_line(stderr)
    assert corpus.store_rows(existing_store) == before


@pytest.mark.parametrize("case", [*corpus.STORE_CASES, corpus.DAMAGED_TAIL_CASE], ids=lambda c: c.id)
def test_unusable_store_is_refused_and_left_byte_for_byte(
    case: Case, tmp_path: Path, good_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = case.make(tmp_path)
    before = store.read_bytes()
    code, stderr = tune(good_model, store, "llvm", capsys)
    assert code == 2
    assert case.expected in the_error_line(stderr)
    assert store.read_bytes() == before  # not ours (or damaged): never written, not even a WAL switch


@pytest.mark.parametrize("case", corpus.STORE_CASES, ids=lambda c: c.id)
def test_unusable_store_is_refused_by_the_db_commands(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = case.make(tmp_path)
    before = store.read_bytes()
    assert main(["db", "sessions", "--db", str(store)]) == 2
    assert case.expected in the_error_line(capsys.readouterr().err)
    assert store.read_bytes() == before


def test_locked_store_fails_within_seconds_and_keeps_its_rows(
    locked_store: Path, good_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = corpus.store_rows(locked_store)
    started = time.monotonic()
    code, stderr = tune(good_model, locked_store, "llvm", capsys)
    assert time.monotonic() - started < LOCK_FAILS_WITHIN_S
    assert code == 2
    line = the_error_line(stderr)
    assert corpus.LOCKED_STORE_MESSAGE in line and "wait for it to finish or close it, or use another --db" in line
    assert corpus.store_rows(locked_store) == before


def run_bcd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bcd_core", *args], capture_output=True, text=True, timeout=120)


def test_a_real_bcd_process_prints_one_error_line(tmp_path: Path, existing_store: Path) -> None:
    """The same contract end to end: a separate `bcd` process, its real stderr and exit code."""
    case = next(c for c in corpus.MODEL_CASES if c.id == "huge-input")
    before = corpus.store_rows(existing_store)
    result = run_bcd("tune", str(case.make(tmp_path)), "--db", str(existing_store), *TUNE_ARGS)
    assert result.returncode == 2
    assert case.expected in the_error_line(result.stderr)
    assert corpus.store_rows(existing_store) == before


def test_a_real_bcd_process_gives_up_on_a_locked_store(locked_store: Path, good_model: Path) -> None:
    before = corpus.store_rows(locked_store)
    started = time.monotonic()
    result = run_bcd("tune", str(good_model), "--db", str(locked_store), *TUNE_ARGS)
    assert time.monotonic() - started < LOCK_FAILS_WITHIN_S + 10  # + starting Python and TVM
    assert result.returncode == 2
    assert corpus.LOCKED_STORE_MESSAGE in the_error_line(result.stderr)
    assert corpus.store_rows(locked_store) == before


@pytest.mark.parametrize("name,make,task", corpus.ACCEPTED_NON_FLOAT, ids=lambda v: v if isinstance(v, str) else "")
def test_integer_and_boolean_only_models_are_accepted(
    name: str, make, task: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(make(tmp_path))]) == 0, capsys.readouterr().err
    assert task in capsys.readouterr().out


def test_a_report_of_a_store_damaged_past_its_sessions_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Readers skip the full-page check (too slow on big stores); the damage they meet is still one line."""
    store = corpus.DAMAGED_TAIL_CASE.make(tmp_path)
    before = store.read_bytes()
    assert main(["report", "--db", str(store), "--out", str(tmp_path / "report")]) == 2
    assert f"{store} is damaged (database disk image is malformed)" in the_error_line(capsys.readouterr().err)
    assert store.read_bytes() == before
