"""The convolutions' layout is chosen by measuring both on this machine, recorded once per
model and target, kept by a resumed session; the compiled model is timed at milestones."""

import json
import time
from pathlib import Path
from types import SimpleNamespace

import models
import pytest
import tvm

from bcd_core.records.database import SqliteDatabase
from bcd_core.records.measured import session_layout_choice
from bcd_core.records.store import RecordStore
from bcd_core.session_view import continues_its_probe, default_session, strategy_text
from bcd_core.target import host_target, target_key
from bcd_core.tuning import layout_choice
from bcd_core.tuning.bcd.first_round import module_hash
from bcd_core.tuning.bcd.plan import BcdPlan
from bcd_core.tuning.events import SessionStarted
from bcd_core.tuning.layout_choice import ProbeRun, choose_layout, kept_nchw_line
from bcd_core.tuning.layout_verdict import WIN_MARGIN
from bcd_core.tuning.measure import setup as measure_setup
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


@pytest.fixture(scope="module")
def mobile_cnn(model_dir: Path) -> Path:
    """Blocked or NCHW: at 8 channels no convolution is one Winograd fits (its own test below)."""
    return models.mobile_block_cnn(model_dir / "choice_cnn.onnx", width=8)


@pytest.fixture(autouse=True)
def no_probe_cutoff(monkeypatch) -> None:
    """Whether the second probe is cut depends on how far apart the layouts time on this machine;
    the tests that are not about the cutoff must take the same path on every CPU."""
    from bcd_core.tuning import probe_cutoff

    monkeypatch.setattr(probe_cutoff, "HOPELESS", float("inf"))


def no_probe(*args, **kwargs):
    raise AssertionError("the layouts were measured again")


def auto(**values) -> TuneSettings:
    return TuneSettings(**{"conv_layout": "auto", "trials_per_task": 2, "trials_per_round": 2, **values})


def test_no_measurement_where_the_answer_is_known(
    tmp_path: Path, tiny_mlp: Path, mobile_cnn: Path, monkeypatch
) -> None:
    monkeypatch.setattr(layout_choice, "probe_layouts", no_probe)
    store = tmp_path / "known.db"
    plain, _ = choose_layout(store, tiny_mlp, host_target(), ProbeRun(auto(), no_probe))
    assert plain.layout == "nchw" and "no convolution" in plain.reason
    stock, _ = choose_layout(store, mobile_cnn, host_target(), ProbeRun(auto(strategy="metaschedule"), no_probe))
    assert stock.layout == "nchw" and "stock" in stock.reason
    gpu = tvm.target.Target({"kind": "cuda", "arch": "sm_80"}, host="llvm")
    assert layout_choice.unmeasured_choice(auto(), gpu).layout == "nchw"
    asked, prepared = choose_layout(store, mobile_cnn, host_target(), ProbeRun(auto(conv_layout="blocked"), no_probe))
    assert asked.layout == "blocked" and asked.block in (4, 8, 16) and "as asked" in asked.reason
    assert any("NCHWc" in task.name for task in prepared.tasks)


def test_the_user_is_told_how_many_convolutions_the_blocked_layout_keeps_nchw(
    tmp_path: Path, model_dir: Path, mobile_cnn: Path
) -> None:
    said: list[str] = []
    blocked, here = auto(conv_layout="blocked"), host_target()
    attention = models.channel_mean_cnn(model_dir / "told_cnn.onnx")  # its first convolution cannot be blocked
    _, prepared = choose_layout(tmp_path / "told.db", attention, here, ProbeRun(blocked, no_probe, said.append))
    assert prepared.imported.kept_nchw == 1 and said == [kept_nchw_line(1)]
    _, prepared = choose_layout(tmp_path / "told.db", mobile_cnn, here, ProbeRun(blocked, no_probe, said.append))
    assert prepared.imported.kept_nchw == 0 and len(said) == 1, "a model converted whole says nothing more"


def test_a_reader_shows_the_tune_not_the_probe_stored_after_it() -> None:
    probe = '{"conv_layout": "nchw", "layout_probe": true}'
    tune, loser, other = {"id": 1, "settings": "{}"}, {"id": 2, "settings": probe}, {"id": 3, "settings": probe}
    assert default_session([tune, loser])["id"] == 1
    assert default_session([tune, loser], running=[2])["id"] == 2  # the probe an engine measures now
    assert default_session([loser, other])["id"] == 3  # only probes: a stopped first tune's
    assert default_session([]) is None


def other_layout(layout: str) -> str:
    return "nchw" if layout == "blocked" else "blocked"


def test_each_layout_is_judged_by_its_quietest_timing() -> None:
    """A slow spell during one timing of one model must not decide: the faster of the probe's
    own timing and the one in turns counts, and a probe without a timing stays without."""
    own = {"blocked": 6.4e-3, "nchw": 6.2e-3}
    assert layout_choice.quietest(own, {"blocked": 3.9e-3, "nchw": 6.3e-3}) == {"blocked": 3.9e-3, "nchw": 6.2e-3}
    assert layout_choice.quietest(own, {}) == own
    assert layout_choice.quietest({"blocked": None, "nchw": 1.0}, {"nchw": 0.5}) == {"blocked": None, "nchw": 0.5}


def flip_stored_choice(store: RecordStore, model: Path, settings: TuneSettings, layout: str) -> None:
    """A newer stored choice of `layout` for the model (as if measured again since)."""
    key = target_key(host_target())
    row = {"layout": layout, "reason": "measured: flipped by the test", "block": 0}
    row |= {"model_hash": _sha(model), "target_key": key, "kernel_threads": settings.kernel_threads}
    store.record_layout_choice(row, settings.input_shapes)


def _sha(path: Path) -> str:
    from bcd_core.model_import import file_sha256

    return file_sha256(path)


@pytest.mark.slow
def test_a_tune_measures_its_layout_records_it_and_a_resumed_session_keeps_it(
    tmp_path: Path, mobile_cnn: Path, monkeypatch, time_model
) -> None:
    """Both layouts are probed by short tunes whose compiled models are timed; the faster (by
    the margin) is recorded, and its probe's session becomes the tune (its trials and timed
    model are the tune's first, on one clock with the other probe, whose time alone is the
    probe's); both probes' models are compiled for the timing in turns once both ran, so the
    tasks the layouts share take their best program over both; the choice is reused without
    measuring; a resumed session keeps its layout whatever was measured since."""
    monkeypatch.setattr(layout_choice, "PROBE_TRIALS_PER_TASK", 2)
    sessions_when_compiled: list[int] = []
    compile_probe = layout_choice.probe_library

    def counting_probe_library(run, folder):
        sessions_when_compiled.append(len(run.store.sessions()))
        return compile_probe(run, folder)

    monkeypatch.setattr(layout_choice, "probe_library", counting_probe_library)
    db = tmp_path / "tune.db"
    settings = auto(trials_per_task=3)
    events: list = []
    first = run_session(mobile_cnn, db, host_target(), settings, [events.append])
    assert sessions_when_compiled == [2, 2], "a probe's model was compiled before the other probe ran"
    store = RecordStore(db)
    session = store.session(first.session_id)
    chosen = json.loads(session["settings"])["conv_layout"]
    probes = [s for s in store.sessions() if json.loads(s["settings"]).get("layout_probe")]
    assert len(store.sessions()) == 2 and len(probes) == 1, "the winning probe was not made the tune"
    loser = probes[0]
    assert json.loads(loser["settings"])["conv_layout"] != chosen and first.session_id != loser["id"]
    tasks = len(first.tasks)
    assert first.trials_done == settings.trials_per_task * tasks, "the tune did not go on from its probe's trials"
    timed = store.model_latencies(first.session_id)
    assert [row["milestone"] for row in timed] == ["first estimate", "final"]
    assert timed[0]["trials_done"] == 2 * tasks, "the probe's timed model is not the tune's first milestone"
    assert [row["milestone"] for row in store.model_latencies(loser["id"])] == ["final"]
    own, other = (sorted(t["elapsed_s"] for t in store.trials(s)) for s in (first.session_id, loser["id"]))
    assert (own[0] < other[0]) == (chosen == "blocked"), "the probes do not share the tune's clock"
    assert own[-1] > other[-1] and session["elapsed_s"] > other[-1]
    assert 0 < session["probe_s"] < session["elapsed_s"]
    recorded = session_layout_choice(store, session)
    assert recorded.layout == chosen and recorded.reason.startswith("measured") and recorded.probe_trials == 2
    assert (chosen == "blocked") == (recorded.blocked_s < recorded.nchw_s * (1 - WIN_MARGIN))
    # Each layout's figure is the faster of its probe's own timing and the one in turns.
    assert "in turns" in recorded.reason
    own = {
        chosen: store.model_latencies(first.session_id)[0],
        other_layout(chosen): store.model_latencies(loser["id"])[0],
    }
    assert recorded.nchw_s <= own["nchw"]["measured_latency_s"]
    assert recorded.blocked_s <= own["blocked"]["measured_latency_s"]
    assert any("NCHWc" in task.name for task in first.tasks) == (chosen == "blocked")
    messages = [event["message"] for event in store.events(first.session_id)]
    assert any(m.startswith("layout: ") for m in messages) and any("continues its layout probe" in m for m in messages)
    started = [e for e in events if isinstance(e, SessionStarted) and e.session_id == first.session_id]
    # The probe's own start, then the tune's: the dashboard must not say the tune was resumed.
    assert [e.continues_probe for e in started] == [False, True]
    session = store.session(first.session_id)
    assert session["probe_trials"] == 2 * tasks and not continues_its_probe(session)
    assert continues_its_probe({**session, "trials_done": 2 * tasks}), "a watcher would say 'Resuming'"
    assert strategy_text(session) == f"bcd, went on from its {chosen} probe"
    assert strategy_text(loser) == f"bcd, {json.loads(loser['settings'])['conv_layout']} layout probe"
    assert default_session(store.sessions())["id"] == first.session_id, "export would take the losing probe"
    monkeypatch.setattr(layout_choice, "probe_layouts", no_probe)
    again, _ = choose_layout(db, mobile_cnn, host_target(), ProbeRun(auto(trials_per_task=3), no_probe))
    assert again.layout == chosen and again.nchw_s == recorded.nchw_s  # stored, whatever the budget
    flip_stored_choice(store, mobile_cnn, settings, other_layout(chosen))
    store.set_total_budget(first.session_id, first.trials_done + tasks)
    events.clear()
    resumed = run_session(mobile_cnn, db, host_target(), settings, [events.append], resume_session_id=first.session_id)
    assert [e.continues_probe for e in events if isinstance(e, SessionStarted)] == [False]
    assert resumed.session_id == first.session_id and resumed.trials_done > first.trials_done
    assert json.loads(store.session(first.session_id)["settings"])["conv_layout"] == chosen
    assert any("NCHWc" in task.name for task in resumed.tasks) == (chosen == "blocked")


@pytest.mark.slow
def test_a_stopped_probe_records_no_choice_and_the_next_tune_resumes_it(
    tmp_path: Path, mobile_cnn: Path, time_model
) -> None:
    from bcd_core.tuning.control import TuningControl
    from bcd_core.tuning.events import RoundFinished

    db = tmp_path / "stopped.db"
    control = TuningControl()

    def stop_at_first_round(event) -> None:
        if isinstance(event, RoundFinished):
            control.stop()

    stopped = run_session(mobile_cnn, db, host_target(), auto(), [stop_at_first_round], control=control)
    store = RecordStore(db)
    assert json.loads(store.session(stopped.session_id)["settings"]).get("layout_probe")
    assert store.session(stopped.session_id)["status"] == "stopped" and len(store.sessions()) == 1
    assert store.db["layout_choices"].count == 0
    finished = run_session(mobile_cnn, db, host_target(), auto())
    assert store.session(stopped.session_id)["status"] == "completed", "the stopped probe was resumed"
    assert len(store.sessions()) == 2 and store.db["layout_choices"].count == 1
    chosen = json.loads(store.session(finished.session_id)["settings"])["conv_layout"]
    winner = stopped.session_id if chosen == "blocked" else max(s["id"] for s in store.sessions())
    assert finished.session_id == winner, "the tune did not continue its winning probe"


@pytest.mark.slow
def test_the_compiled_model_is_timed_at_the_first_estimate_and_at_the_end(
    tmp_path: Path, tiny_convnet: Path, time_model
) -> None:
    from bcd_core.tuning.events import ModelMeasured

    seen = []
    db = tmp_path / "milestones.db"
    settings = TuneSettings(trials_per_task=3, trials_per_round=1)
    started = time.perf_counter()
    run = run_session(tiny_convnet, db, host_target(), settings, [seen.append])
    wall = time.perf_counter() - started
    rows = RecordStore(db).model_latencies(run.session_id)
    assert [row["milestone"] for row in rows] == ["first estimate", "final"]
    first, final = rows
    assert first["trials_done"] < final["trials_done"] == run.trials_done
    assert final["search_estimate_s"] <= first["search_estimate_s"]
    assert all(row["measured_latency_s"] > 0 and row["cost_s"] > 0 for row in rows)
    assert all(0.1 < row["measured_latency_s"] / row["estimated_latency_s"] < 20 for row in rows)
    measured = [event for event in seen if isinstance(event, ModelMeasured)]
    assert [event.milestone for event in measured] == ["first estimate", "final"]
    elapsed = RecordStore(db).session(run.session_id)["elapsed_s"]
    assert elapsed <= wall - sum(row["cost_s"] for row in rows) + 0.5, "timing the model is off the tuning clock"


@pytest.mark.slow
def test_the_second_probe_does_not_tune_again_what_the_first_measured(tmp_path: Path, time_model, monkeypatch) -> None:
    """A dense head is the same task in both layouts: the NCHW probe (second) gives it no
    trials and counts the blocked probe's best, so its model is still timed whole; the tune
    that continues either probe tunes every task to its budget."""
    model = models.conv_dense(tmp_path / "conv_dense16.onnx", channels=16, size=8)
    monkeypatch.setattr(layout_choice, "PROBE_TRIALS_PER_TASK", 2)
    db = tmp_path / "shared.db"
    tune = run_session(model, db, host_target(), auto(trials_per_task=3))
    store = RecordStore(db)
    nchw = next(s for s in store.sessions() if json.loads(s["settings"])["conv_layout"] == "nchw")
    blocked = next(s for s in store.sessions() if s["id"] != nchw["id"])
    workload = {row["id"]: row["workload_id"] for row in store.tasks(nchw["id"])}
    in_both = set(workload.values()) & {row["workload_id"] for row in store.tasks(blocked["id"])}
    assert in_both, "the model has no task the layouts share"
    probe_end = store.model_latencies(nchw["id"])[0]["trials_done"]
    probed = {workload[t["task_id"]] for t in sorted(store.trials(nchw["id"]), key=lambda t: t["id"])[:probe_end]}
    assert not probed & in_both, "the NCHW probe tuned a task the blocked probe measured"
    assert probed == set(workload.values()) - in_both
    assert probe_end == 2 * len(probed)
    choice = session_layout_choice(store, store.session(tune.session_id))
    assert choice.reason.startswith("measured: a round of up to 2 trials a task") and choice.nchw_s and choice.blocked_s
    messages = [event["message"] for event in store.events(nchw["id"])]
    assert any(f"{len(in_both)} of {len(workload)} tasks have measured programs" in m for m in messages)
    assert tune.trials_done == 3 * len(tune.tasks), "the tune did not spend its whole budget"
    assert len(store.trial_counts(tune.session_id)) == len(tune.tasks), "a task shared by the layouts went untuned"


@pytest.mark.slow
def test_a_second_probe_that_cannot_win_ends_early_and_blocked_is_chosen(
    tmp_path: Path, mobile_cnn: Path, time_model, monkeypatch
) -> None:
    """With the cutoff at 0x the blocked model's time, the NCHW probe (second) cannot win from
    its first batch: it ends completed with fewer trials and says why, its model is neither
    compiled nor timed in turns, and the tune continues the blocked probe to its budget."""
    from bcd_core.tuning import probe_cutoff

    monkeypatch.setattr(probe_cutoff, "HOPELESS", 0.0)
    monkeypatch.setattr(layout_choice, "time_probes_in_turns", no_probe)
    db = tmp_path / "cut.db"
    tune = run_session(mobile_cnn, db, host_target(), auto(trials_per_task=3))
    store = RecordStore(db)
    nchw = next(s for s in store.sessions() if json.loads(s["settings"])["conv_layout"] == "nchw")
    assert nchw["status"] == "completed" and nchw["stop_reason"].startswith("the nchw layout cannot win")
    budget = 3 * len(store.tasks(nchw["id"]))  # the probe's trials per task: the tune's 3, fewer than 4
    assert 0 < len(store.trials(nchw["id"])) < budget, "the NCHW probe spent its whole budget"
    assert not store.model_latencies(nchw["id"]), "the hopeless probe's model was compiled and timed"
    choice = session_layout_choice(store, store.session(tune.session_id))
    assert choice.layout == "blocked" and "ended early" in choice.reason and choice.nchw_s > 0
    assert tune.session_id != nchw["id"] and tune.trials_done == 3 * len(tune.tasks)


def _probe_run(bests: dict[int, float], tasks: int) -> SimpleNamespace:
    """What a ProbeCutoff reads of a probe's run: its tasks' bests so far, its control, its hooks."""
    return SimpleNamespace(
        best=bests,
        tasks=[SimpleNamespace(weight=1)] * tasks,
        cut_reason=None,
        control=SimpleNamespace(stop_requested=False),
        batch_hooks=[],
        message=lambda *args: None,
    )


def test_a_later_probe_is_held_against_the_rivals_estimate_where_its_model_timed_below_it(monkeypatch) -> None:
    """A floor of programs timed alone is the estimate's kind of figure: against a rival whose
    model timed below its estimate, it must pass HOPELESS times that estimate, not the timed
    model; against one that timed above it, the timed model as before."""
    from bcd_core.tuning import probe_cutoff

    hopeless = 1.5  # the module's, which the autouse fixture lifts
    monkeypatch.setattr(probe_cutoff, "HOPELESS", hopeless)
    timed, estimate = 0.0178, 0.0295  # a U-Net's Winograd probe
    cutoff = layout_choice.rival_cutoff("blocked", {"winograd": layout_choice.rival_bar(timed, estimate), "x": None})
    assert (cutoff.rival, cutoff.rival_s, cutoff.rival_what) == ("winograd", estimate, "estimated")
    run = _probe_run({0: 0.0270}, tasks=3)  # past HOPELESS x the timed model, below the estimate
    assert 0.0270 > hopeless * timed
    cutoff.attach(run)
    run.batch_hooks[0](0, [], [])
    assert run.cut_reason is None and cutoff.floor_s is None
    run.best[1] = 0.0200  # now past HOPELESS x the estimate too
    run.batch_hooks[0](1, [], [])
    assert cutoff.floor_s == pytest.approx(0.047) and "the winograd model's estimated 29.5" in run.cut_reason
    usual = layout_choice.rival_cutoff("nchw", {"blocked": layout_choice.rival_bar(0.030, 0.025)})
    assert (usual.rival_s, usual.rival_what) == (0.030, "timed")
    lowest = {"blocked": layout_choice.rival_bar(0.030, 0.025), "winograd": layout_choice.rival_bar(0.018, 0.0295)}
    assert layout_choice.rival_cutoff("nchw", lowest).rival == "winograd"  # the lowest bar: 29.5 ms against 30
    assert layout_choice.rival_cutoff("nchw", {"blocked": None}) is None


@pytest.mark.slow
def test_a_tune_tops_its_probe_rounds_up_to_whole_first_rounds(tmp_path: Path, mobile_cnn: Path, monkeypatch) -> None:
    """The tune that continues its probe takes the model as the probe prepared it, and gives
    each task the probe measured short the rest of a first round (a ranked fresh sample,
    tuning/bcd/top_up.py) before any task's evolved round, sized so the two make one round of
    the tune, and measures no program of the probe again."""
    monkeypatch.setattr(layout_choice, "PROBE_TRIALS_PER_TASK", 2)
    rounds: list[tuple[str, int, int]] = []  # (kind, task, trials asked) of the tune's rounds
    first_round, mix_in = BcdPlan.first_round, BcdPlan.mix_in_diffused

    def noted_first_round(plan, index, left):
        if not plan.settings.layout_probe:
            rounds.append(("first", index, left))
        return first_round(plan, index, left)

    def noted_evolved(plan, index, candidates):
        rounds.append(("evolved", index, len(candidates)))
        return mix_in(plan, index, candidates)

    prepared: list[str] = []  # the layouts the model was imported and split in
    prepare_model = layout_choice.prepare_model

    def noted_prepare(*args):
        prepared.append(args[-1])
        return prepare_model(*args)

    builders: list = []  # the builders made: the probes and the tune share one
    make_builder = measure_setup.make_builder
    monkeypatch.setattr(measure_setup, "make_builder", lambda *a: builders.append(make_builder(*a)) or builders[-1])
    monkeypatch.setattr(BcdPlan, "first_round", noted_first_round)
    monkeypatch.setattr(BcdPlan, "mix_in_diffused", noted_evolved)
    monkeypatch.setattr(layout_choice, "prepare_model", noted_prepare)
    settings = auto(trials_per_task=10, trials_per_round=6)
    run = run_session(mobile_cnn, tmp_path / "tune.db", host_target(), settings)
    assert prepared == ["blocked", "nchw"], "the tune prepared the model again instead of taking its probe's"
    assert len(builders) == 1 and builders[0]._pool is None, "each session started its own builder workers"
    store = RecordStore(tmp_path / "tune.db")
    trials = store.trials(run.session_id)
    index_of = {row_id: index for index, row_id in run.task_row_ids.items()}
    probed: dict[int, int] = {}
    for trial in trials[: store.session(run.session_id)["probe_trials"]]:
        probed[index_of[trial["task_id"]]] = probed.get(index_of[trial["task_id"]], 0) + 1
    short = {index: count for index, count in probed.items() if count < settings.batch_size}
    assert short, "the probe measured no task short of a round: nothing to top up"
    tops = {index: asked for kind, index, asked in rounds if kind == "first" and index in probed}
    assert tops == {index: settings.batch_size - count for index, count in short.items()}
    kinds = [kind for kind, _, _ in rounds]
    assert "evolved" in kinds and kinds.index("evolved") > max(i for i, kind in enumerate(kinds) if kind == "first")
    database = SqliteDatabase(store, target_key(host_target()))
    for index in probed:
        rows = [t for t in trials if index_of[t["task_id"]] == index]
        hashes = [module_hash(database.candidate_from_row(row).sch) for row in rows]
        assert len(set(hashes)) == len(hashes), f"task {index} measured a program twice"


@pytest.mark.slow
def test_where_winograd_fits_three_layouts_are_probed_and_the_rule_chooses(tmp_path: Path, time_model) -> None:
    """Winograd is probed first where a 3x3 convolution fits it; every probe's figure is
    recorded, the choice follows layout_verdict's rule from them, and the tune (and what it
    compiles) is in the chosen layout."""
    from bcd_core.tuning.layout_verdict import chosen_layout

    model = models.convnet(tmp_path / "three.onnx", channels=(3, 64, 64), size=24)
    db = tmp_path / "three.db"
    tune = run_session(model, db, host_target(), auto(trials_per_task=2))
    store = RecordStore(db)
    layouts = [json.loads(s["settings"])["conv_layout"] for s in sorted(store.sessions(), key=lambda s: s["id"])]
    assert layouts[0] == "winograd" and sorted(layouts) == ["blocked", "nchw", "winograd"]
    choice = session_layout_choice(store, store.session(tune.session_id))
    figures = {"nchw": choice.nchw_s, "blocked": choice.blocked_s, "winograd": choice.winograd_s}
    assert all(seconds and seconds > 0 for seconds in figures.values()), figures
    assert choice.layout == chosen_layout(figures) and "with Winograd" in choice.reason
    assert json.loads(store.session(tune.session_id)["settings"])["conv_layout"] == choice.layout
    assert any("winograd" in task.name for task in tune.tasks) == (choice.layout == "winograd")
