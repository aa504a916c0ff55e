"""Stock MetaSchedule honours pause and stop too (from the measure callback)."""

import threading
from pathlib import Path

import pytest

from bcd_core.records.store import RecordStore
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import RoundFinished
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


@pytest.mark.slow
def test_stock_pause_stop_and_resume(tmp_path: Path, tiny_mlp: Path, host) -> None:
    settings = TuneSettings(strategy="metaschedule", trials_per_task=4, trials_per_round=2)
    control = TuningControl()

    def steer(event) -> None:
        if isinstance(event, RoundFinished) and event.round == 1:
            control.pause()
            threading.Timer(0.5, control.resume).start()
        if isinstance(event, RoundFinished) and event.round == 2:
            control.stop()

    db = tmp_path / "stock.db"
    first = run_session(tiny_mlp, db, host, settings, [steer], control=control)
    store = RecordStore(db)
    assert store.session(first.session_id)["status"] == "stopped"
    assert {t["round"] for t in store.trials(first.session_id)} == {1, 2}
    assert first.paused_s >= 0.4
    second = run_session(tiny_mlp, db, host, settings)
    assert second.session_id == first.session_id
    store = RecordStore(db)
    assert store.session(first.session_id)["status"] == "completed"
    assert len(store.trials(first.session_id)) > 4
