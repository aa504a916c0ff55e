"""The options table: every setting once, the CLI and identity generated from it."""

from __future__ import annotations

import argparse
from dataclasses import fields

from bcd_core.cli import build_parser, settings_from_args
from bcd_core.tuning.options import OPTIONS, PHASED, Level, flagged_options, identity_fields
from bcd_core.tuning.settings import IDENTITY_BEFORE_KEYS, TuneSettings

MAX_TUNE_OPTIONS = 17  # what a first-time user reads in `bcd tune --help` (memory: --memory, --no-memory; --math)


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def test_every_setting_is_in_the_table_once() -> None:
    names = [option.field for option in OPTIONS]
    assert sorted(names) == sorted(f.name for f in fields(TuneSettings))
    assert len(names) == len(set(names))
    flags = [option.flag for option in OPTIONS if option.flag]
    assert len(flags) == len(set(flags))
    assert all(
        option.level == Level.INTERNAL for option in OPTIONS if not option.flag and option.field != "input_shapes"
    )


def test_identity_follows_the_table() -> None:
    assert list(TuneSettings(strategy="metaschedule").identity()) == list(identity_fields("metaschedule"))
    assert {"diffusion_share", "first_round"} <= set(TuneSettings().identity())
    phased = TuneSettings(strategy=PHASED, late_cost_model="metaschedule").identity()
    assert phased["late_cost_model"] == "metaschedule" and "diffusion_share" not in phased
    assert set(IDENTITY_BEFORE_KEYS) <= set(identity_fields(PHASED))
    for strategy in ("bcd", PHASED, "metaschedule"):  # measurement place never names a session
        assert not {"runner", "tracker", "tracker_key", "builder_timeout_s"} & set(identity_fields(strategy))


def test_tune_help_shows_user_options_only() -> None:
    tune = _subparser("tune")
    shown = [a for a in tune._actions if a.help != argparse.SUPPRESS and a.option_strings]
    assert len(shown) <= MAX_TUNE_OPTIONS, [a.option_strings for a in shown]
    shown_flags = {flag for action in shown for flag in action.option_strings}
    for option in flagged_options(Level.RESEARCH):
        assert option.flag not in shown_flags
    for option in flagged_options(Level.USER):
        assert option.flag in shown_flags


def test_every_flag_reaches_the_settings() -> None:
    args = ["tune", "m.onnx", "--strategy", PHASED, "--seed", "7", "--cluster-mode", "sketch"]
    args += ["--builder-timeout", "3", "--late-cost-model", "metaschedule", "--trials-per-round", "4"]
    settings = settings_from_args(build_parser().parse_args(args))
    assert (settings.strategy, settings.seed, settings.cluster_mode) == (PHASED, 7, "sketch")
    assert (settings.builder_timeout_s, settings.late_cost_model, settings.trials_per_round) == (3.0, "metaschedule", 4)
    defaults = settings_from_args(build_parser().parse_args(["tune", "m.onnx"]))
    assert defaults == TuneSettings()


def test_bench_takes_its_strategies_from_strategies() -> None:
    bench = _subparser("bench")
    assert "--strategy" not in {flag for action in bench._actions for flag in action.option_strings}
    assert settings_from_args(build_parser().parse_args(["bench", "m.onnx"])).strategy == TuneSettings().strategy


def test_a_session_stored_before_an_identity_key_existed_is_still_continued(tmp_path) -> None:
    from bcd_core.records.store import RecordStore
    from bcd_core.tuning.session import find_session_to_continue

    store = RecordStore(tmp_path / "r.db")
    before = TuneSettings(search_seeds="all")  # what bcd sessions ran with before the key existed
    older = {k: v for k, v in before.identity().items() if k != "search_seeds"}
    stored = store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="bcd", settings=older
    )
    assert find_session_to_continue(store, "h", "t", before)["id"] == stored
    assert find_session_to_continue(store, "h", "t", TuneSettings(search_seeds="own")) is None  # another search
    assert find_session_to_continue(store, "h", "t", TuneSettings(search_seeds="all", seed=1)) is None
    newer = store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="bcd", settings=before.identity()
    )
    assert find_session_to_continue(store, "h", "t", before)["id"] == newer  # the newest first
