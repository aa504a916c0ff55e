from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hostile_corpus as corpus
import pytest


@pytest.fixture
def existing_store(tmp_path: Path) -> Path:
    """A records store that already holds a session: no bad input may change it."""
    from bcd_core.records.store import RecordStore

    path = tmp_path / "existing.db"
    corpus.populate_store(RecordStore(path)).close()
    return path


@pytest.fixture
def locked_store(tmp_path: Path) -> Iterator[Path]:
    """A store with a session, write-locked by another process for the whole test."""
    from bcd_core.records.store import RecordStore

    path = tmp_path / "locked.db"
    corpus.populate_store(RecordStore(path)).close()
    locker = corpus.hold_exclusive_lock(path)
    yield path
    locker.kill()  # the finalizer: never leave the locker behind, even when the test fails
    locker.wait(10)


@pytest.fixture
def good_model(tmp_path: Path) -> Path:
    return corpus.good_model(tmp_path)
