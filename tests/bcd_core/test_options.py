"""The options table: every setting once, the CLI and identity generated from it."""

from __future__ import annotations

import argparse
from dataclasses import fields
from types import SimpleNamespace

from bcd_core.cli import build_parser, settings_from_args
from bcd_core.tuning.metaschedule import evolutionary_search
from bcd_core.tuning.options import OPTIONS, SETTLED_IDENTITY, STRATEGIES, Level, flagged_options, identity_fields
from bcd_core.tuning.settings import TuneSettings

# What a first-time user reads in `bcd tune --help` (memory: --memory, --no-memory; --math; four
# stopping rules, grouped).
MAX_TUNE_OPTIONS = 21


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
    stock = TuneSettings(strategy="metaschedule").identity()
    assert list(stock) == [*identity_fields("metaschedule"), "cpu_cache"]
    assert "diffusion_share" in TuneSettings().identity() and "diffusion_share" not in stock
    for strategy in STRATEGIES:  # measurement place never names a session
        assert not {"runner", "tracker", "tracker_key", "builder_timeout_s"} & set(identity_fields(strategy))


def test_a_bcd_session_names_the_settled_choices_as_sessions_stored_them() -> None:
    """Choices that were options once (first_round, serial_twins, ...) stay in a session's
    identity with the value the tuner now always uses, so an older session that ran with it is
    still found, and one that ran otherwise is not."""
    identity = TuneSettings().identity()
    for name, (value, strategies) in SETTLED_IDENTITY.items():
        assert ("bcd" in strategies) == (name in identity)
        if name in identity:
            assert identity[name] == value
        assert not hasattr(TuneSettings(), name)


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
    args = ["tune", "m.onnx", "--strategy", "metaschedule", "--seed", "7", "--cluster-mode", "sketch"]
    args += ["--builder-timeout", "3", "--diffusion-share", "0.1", "--trials-per-round", "4"]
    settings = settings_from_args(build_parser().parse_args(args))
    assert (settings.strategy, settings.seed, settings.cluster_mode) == ("metaschedule", 7, "sketch")
    assert (settings.builder_timeout_s, settings.diffusion_share, settings.trials_per_round) == (3.0, 0.1, 4)
    defaults = settings_from_args(build_parser().parse_args(["tune", "m.onnx"]))
    assert defaults == TuneSettings()


def test_bench_takes_its_strategies_from_strategies() -> None:
    bench = _subparser("bench")
    assert "--strategy" not in {flag for action in bench._actions for flag in action.option_strings}
    assert settings_from_args(build_parser().parse_args(["bench", "m.onnx"])).strategy == TuneSettings().strategy


def test_a_session_stored_before_an_identity_key_existed_is_still_continued(tmp_path) -> None:
    from bcd_core.records.store import RecordStore
    from bcd_core.tuning.continuation import find_session_to_continue

    store = RecordStore(tmp_path / "r.db")
    today = TuneSettings()
    # Stored before `kernel_threads` was recorded: it ran on TVM's default, so it is found only
    # by a tune on TVM's default threads, not by one on every core.
    older = {k: v for k, v in TuneSettings(kernel_threads=0).identity().items() if k != "kernel_threads"}
    stored = store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="bcd", settings=older
    )
    assert find_session_to_continue(store, "h", "t", TuneSettings(kernel_threads=0))["id"] == stored
    assert today.kernel_threads != 0 and find_session_to_continue(store, "h", "t", today) is None
    assert find_session_to_continue(store, "h", "t", TuneSettings(kernel_threads=0, seed=1)) is None
    # A session that ran with another value of a settled choice is never found.
    other = {**TuneSettings(kernel_threads=0).identity(), "first_round": "cold"}
    store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="bcd", settings=other
    )
    assert find_session_to_continue(store, "h", "t", TuneSettings(kernel_threads=0))["id"] == stored
    newer = store.create_session(
        model_path="m.onnx", model_hash="h", target="{}", target_key="t", strategy="bcd", settings=today.identity()
    )
    assert find_session_to_continue(store, "h", "t", today)["id"] == newer


def test_small_rounds_evolve_a_smaller_population_and_default_rounds_the_full_one() -> None:
    """Both strategies' searches evolve 8 programs per candidate of a round, at least 32 and at
    most the full population, whose share of fresh samples stays the same."""
    full = TuneSettings()
    assert full.search_population == (full.population_size, full.init_min_unmeasured)
    assert TuneSettings(trials_per_round=64).search_population == full.search_population
    for round_size, population in ((1, 32), (2, 32), (4, 32), (8, 64), (12, 96)):
        settings = TuneSettings(trials_per_round=round_size)
        search = evolutionary_search(SimpleNamespace(settings=settings))  # what stock and BCD build
        assert (search.population_size, search.init_min_unmeasured) == settings.search_population
        assert settings.search_population == (population, population // 4)
