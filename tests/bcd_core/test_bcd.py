"""The `bcd` strategy (stock MetaSchedule with diffused programs added) with real TVM:
diffused candidates join the search's rounds with provenance, diffusion turned off leaves
stock's scheduler and search, the control API steers it, and a resume diffuses nothing twice."""

import threading
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from failing_programs import make_every_diffused_program_fail
from tvm.s_tir import meta_schedule as ms

from bcd_core.clustering import cluster_tasks
from bcd_core.cost_model.stored import python_model
from bcd_core.records.store import RecordStore
from bcd_core.tuning.bcd.plan import DIFFUSION_MISSES, BcdPlan, failed_sources, heavier_than_average, own_first_picks
from bcd_core.tuning.bcd.scheduler import PROBE_END, first_round_order, task_gradient
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import RoundFinished, SessionMessage, SessionPaused
from bcd_core.tuning.run import prepare_model
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

SETTINGS = TuneSettings(strategy="bcd", trials_per_task=8, trials_per_round=4)
OWN_ORIGINS = ("evolved", "serial")  # the task's own programs: its search's, and their serial twins


@pytest.fixture(scope="module")
def layout(conv_cluster_model: Path, host):
    prepared = prepare_model(conv_cluster_model, host)
    conv = next(c for c in cluster_tasks(prepared.tasks, SETTINGS.cluster_mode) if c.size == 3)
    return prepared, conv


def rows_by_index(store: RecordStore, session_id: int) -> dict[int, dict]:
    return {row["idx"]: row for row in store.tasks(session_id)}


def batches(store: RecordStore, session_id: int) -> dict[int, list[dict]]:
    """Trials by round (one round = one task's batch)."""
    by_round: dict[int, list[dict]] = {}
    for trial in store.trials(session_id):
        by_round.setdefault(trial["round"], []).append(trial)
    return by_round


def first_batches(store: RecordStore, session_id: int) -> dict[int, tuple[int, list[dict]]]:
    """Each task's first batch, by task row id: (its round number, its trials)."""
    first: dict[int, tuple[int, list[dict]]] = {}
    for number, trials in sorted(batches(store, session_id).items()):
        first.setdefault(trials[0]["task_id"], (number, trials))
    return first


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, conv_cluster_model: Path):
    from bcd_core.target import host_target

    db = tmp_path_factory.mktemp("seeded") / "records.db"
    run = run_session(conv_cluster_model, db, host_target(), SETTINGS)
    return run, RecordStore(db)


# -- pure pieces ----------------------------------------------------------------------------
def test_task_gradient_is_metaschedules_gradient_rule() -> None:
    # GradientBased: 0.2 * (best[n-1-3] - best) / 3 + 0.8 * best / n, times the task's weight
    history = [8.0, 6.0, 5.0, 4.0, 4.0]
    expected = (0.2 * (6.0 - 4.0) / 3 + 0.8 * 4.0 / 5) * 2
    assert task_gradient(history, 2.0) == pytest.approx(expected)
    assert task_gradient([3.0, 2.0], 1.0) == pytest.approx(0.8 * 2.0 / 2)  # too short for a slope
    assert task_gradient([], 1.0) == float("inf")  # never measured: first
    assert task_gradient([float("inf")], 1.0) > task_gradient([1.0], 1.0)  # no valid time yet


def test_task_gradient_divides_the_best_by_the_trials_spent_in_whole_rounds() -> None:
    # A light member measured half a first round: its best counts over half a round, so it
    # outranks a task as fast that measured a whole one; whole rounds give stock's rule.
    assert task_gradient([2.0], 1.0, rounds_spent=0.5) == pytest.approx(0.8 * 2.0 / 0.5)
    assert task_gradient([2.0], 1.0, rounds_spent=0.5) > task_gradient([2.0], 1.0, rounds_spent=1.0)
    assert task_gradient([3.0, 2.0], 1.0, rounds_spent=2.0) == task_gradient([3.0, 2.0], 1.0)


def test_first_round_puts_representatives_before_members() -> None:
    assert first_round_order([0, 3], [1, 2, 4], started=set()) == [0, 3, 1, 2, 4]
    assert first_round_order([0, 3], [1, 2, 4], started={0, 1}) == [3, 2, 4]


def test_a_probes_first_round_takes_its_heaviest_members_first() -> None:
    # Given each task's FLOPs x weight (a layout probe's order), members go heaviest first,
    # still after every representative; members without work keep their order, last.
    work = {0: 1.0, 1: 2.0, 2: 9.0, 3: 0.5, 4: 5.0, 5: 0.0, 6: 0.0}
    assert first_round_order([0, 3], [1, 2, 4, 6, 5], set(), work) == [0, 3, 2, 4, 1, 6, 5]
    assert first_round_order([0, 3], [1, 2, 4], {0, 2}, work) == [3, 4, 1]


def test_a_task_that_diffusion_keeps_missing_receives_no_more() -> None:
    plan = BcdPlan.__new__(BcdPlan)  # the rule alone, without a tune
    plan.misses = {}
    plan.note_diffusion_outcome(3, [], best=1.0)  # no diffused program in the batch: no verdict
    assert plan.misses == {}
    for _ in range(DIFFUSION_MISSES - 1):
        plan.note_diffusion_outcome(3, [2.0, float("inf")], best=1.0)
    plan.note_diffusion_outcome(3, [0.9], best=0.9)  # one became the task's best: start again
    assert plan.misses[3] == 0
    for _ in range(DIFFUSION_MISSES):
        plan.note_diffusion_outcome(3, [2.0], best=1.0)
    assert plan.misses[3] == DIFFUSION_MISSES


def test_a_heavier_task_keeps_a_whole_first_round_and_a_lighter_one_halves_it() -> None:
    plan = BcdPlan.__new__(BcdPlan)  # the rule alone, without a tune
    plan.heavy = {2}
    assert not plan.halves_first_round(2)
    assert plan.halves_first_round(0)


def test_a_tasks_own_cluster_gives_before_other_models_but_after_its_own_workload(monkeypatch) -> None:
    """Diffused programs: an earlier tune's programs of the very same workload first, then the
    cluster's (same model, same sketch), then the memory's most similar tasks' (MobileNetV2's
    depthwise convolutions given other models' programs first lost their cluster's)."""
    plan = BcdPlan.__new__(BcdPlan)  # the rule alone, without a tune
    plan.sketches = {0: ["sketch"]}
    monkeypatch.setattr(plan, "cluster_of", lambda index: type("Cluster", (), {"size": 3})())

    def from_memory(index: int, count: int, seen: set[int], same_workload: bool = False) -> list[str]:
        return (["twin"] if same_workload else ["near"] * count)[:count]

    monkeypatch.setattr(plan, "from_memory", from_memory)
    monkeypatch.setattr(plan, "from_cluster", lambda index, count, seen: ["mate"] * min(count, 2))
    assert plan.diffused(0, 4, set()) == ["twin", "mate", "mate", "near"]
    assert plan.diffused(0, 1, set()) == ["twin"]
    assert plan.diffused(1, 4, set()) == []  # no design space yet


def test_failed_sources_are_the_sources_of_carried_programs_without_a_latency() -> None:
    assert failed_sources([(7, None), (8, 1e-3), (None, None), (9, 0.0)]) == {7, 9}


# -- a tune ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_diffused_candidates_join_member_rounds_with_provenance(seeded, layout) -> None:
    run, store = seeded
    _, conv = layout
    ids_of_task = {}
    for trial in store.trials(run.session_id):
        ids_of_task.setdefault(trial["task_id"], set()).add(trial["id"])
    rows = rows_by_index(store, run.session_id)
    diffused = [t for t in store.trials(run.session_id) if t["origin"] == "diffused"]
    assert diffused, "no member received its cluster's programs"
    for trial in diffused:
        task = next(index for index, row in rows.items() if row["id"] == trial["task_id"])
        assert task in conv.members
        mates = set().union(*(ids_of_task[rows[m]["id"]] for m in conv.members if m != task))
        assert trial["source_trial_id"] in mates, "provenance names a program of another task of the cluster"
        assert trial["adaptation"]
    provenance = [rows[m] for m in conv.followers() if rows[m]["diffused_best_s"] is not None]
    assert provenance and all(row["diffused_from_trial_id"] is not None for row in provenance)


def test_a_task_given_programs_measures_half_a_first_round() -> None:
    assert own_first_picks(16, 0, half=True) == 16  # nothing diffused: a whole round of its own
    assert own_first_picks(16, 4, half=True) == 4  # 4 diffused + 4 own: half a round
    assert own_first_picks(16, 4, half=False) == 12
    assert own_first_picks(16, 8, half=True) == 8  # never fewer own picks than diffused ones
    assert own_first_picks(4, 1, half=True) == 1
    assert own_first_picks(1, 1, half=True) == 0


def test_members_first_rounds_are_shorter_when_their_cluster_gave_them_programs(seeded, layout) -> None:
    """By work (the default): a member given its cluster's programs measures half a first
    round when it has less work than the model's average task, a whole one otherwise."""
    run, store = seeded
    prepared, conv = layout
    rows = rows_by_index(store, run.session_id)
    first = first_batches(store, run.session_id)
    _, rep = first[rows[conv.representative]["id"]]
    assert len(rep) == SETTINGS.batch_size and not any(t["origin"] == "diffused" for t in rep)
    heavy = heavier_than_average(prepared.tasks)
    given = {m: first[rows[m]["id"]][1] for m in conv.followers()}
    given = {m: batch for m, batch in given.items() if any(t["origin"] == "diffused" for t in batch)}
    assert set(given) - heavy, "no light member received its cluster's programs in its first round"
    for member, batch in given.items():
        assert len(batch) == (SETTINGS.batch_size if member in heavy else SETTINGS.batch_size // 2), member


@pytest.mark.slow
def test_a_layout_probe_ends_once_every_task_had_its_first_round(
    tmp_path: Path, conv_cluster_model: Path, host, layout
) -> None:
    """A layout probe is each task's first round, no more: a light member given its
    cluster's programs measures half of it and gets no evolved second round; the probe ends
    with trials left and says why."""
    settings = replace(SETTINGS, trials_per_task=4, trials_per_round=4, conv_layout="nchw", layout_probe=True)
    run = run_session(conv_cluster_model, tmp_path / "probe.db", host, settings)
    store = RecordStore(tmp_path / "probe.db")
    rows, first = rows_by_index(store, run.session_id), first_batches(store, run.session_id)
    prepared, conv = layout
    given = {m for m in conv.followers() if any(t["origin"] == "diffused" for t in first[rows[m]["id"]][1])}
    light = given - heavier_than_average(prepared.tasks)
    assert light, "no light member received its cluster's programs"
    assert all(len(first[rows[m]["id"]][1]) == settings.batch_size // 2 for m in light)
    rounds: dict[int, set[int]] = {}
    for number, trials in batches(store, run.session_id).items():
        rounds.setdefault(trials[0]["task_id"], set()).add(number)
    assert len(rounds) == len(run.tasks) and all(len(numbers) == 1 for numbers in rounds.values()), rounds
    assert run.trials_done < settings.trials_per_task * len(run.tasks)
    assert store.session(run.session_id)["stop_reason"] == PROBE_END


@pytest.mark.slow
def test_a_layout_probe_measures_its_heaviest_members_first(tmp_path: Path, uneven_convnet: Path, host) -> None:
    """In a probe, the members' first rounds follow their work (FLOPs x weight), heaviest
    first, not the model's order, where the lightest convolution comes first."""
    settings = replace(SETTINGS, trials_per_task=2, trials_per_round=2, conv_layout="nchw", layout_probe=True)
    run = run_session(uneven_convnet, tmp_path / "probe.db", host, settings)
    store = RecordStore(tmp_path / "probe.db")
    rows, first = rows_by_index(store, run.session_id), first_batches(store, run.session_id)
    clusters = cluster_tasks(run.tasks, settings.cluster_mode)
    members = [m for c in clusters for m in c.followers()]
    measured = sorted(members, key=lambda m: first[rows[m]["id"]][0])
    work = [run.tasks[m].weighted_flops for m in measured]
    model_order = [run.tasks[m].weighted_flops for m in sorted(members)]
    assert len(members) > 1 and model_order != sorted(model_order, reverse=True), "the model is heaviest first"
    assert work == sorted(work, reverse=True), work


@pytest.mark.slow
def test_a_later_round_measures_the_whole_round_from_the_pooled_budget(
    tmp_path: Path, conv_cluster_model: Path, host, layout
) -> None:
    """With fewer trials per task than per round, a task's first round is cut to its trials
    per task, so every task has one within the budget, while a later round, drawn on the
    pooled budget, measures up to the user's whole round: an evolution costs about the same
    whatever its batch, and a round of trials per task paid one for a few trials."""
    settings = replace(SETTINGS, trials_per_task=4, trials_per_round=8, conv_layout="nchw")
    control = TuningControl()
    total = settings.trials_per_task * len(layout[0].tasks) + 2 * settings.trials_per_round
    control.set_total_budget(total)  # trials left after the first round robin, for the gradient rule
    run = run_session(conv_cluster_model, tmp_path / "rounds.db", host, settings, control=control)
    store = RecordStore(tmp_path / "rounds.db")
    first_rounds = {number: len(trials) for number, trials in first_batches(store, run.session_id).values()}
    first_sizes = list(first_rounds.values())
    later_sizes = [len(t) for number, t in batches(store, run.session_id).items() if number not in first_rounds]
    assert len(first_sizes) == len(run.tasks) and max(first_sizes) <= settings.trials_per_task
    assert later_sizes and max(later_sizes) > settings.trials_per_task, later_sizes
    assert run.trials_done == total


def test_heavier_than_average_counts_only_tasks_with_work(layout) -> None:
    prepared, _ = layout
    work = [task.weighted_flops for task in prepared.tasks]
    heavy = heavier_than_average(prepared.tasks)
    average = sum(w for w in work if w > 0) / sum(w > 0 for w in work)
    assert heavy and heavy == {index for index, w in enumerate(work) if w > average}
    assert heavier_than_average([]) == set()


def test_diffusion_only_adds_to_the_search(seeded) -> None:
    """Each batch keeps the search's own picks: at most a quarter of a batch is diffused, so
    a wrong guess costs a few trials."""
    run, store = seeded
    for _, trials in sorted(batches(store, run.session_id).items()):
        count = sum(t["origin"] == "diffused" for t in trials)
        assert count <= max(1, int(SETTINGS.batch_size * SETTINGS.diffusion_share))
        assert any(t["origin"] in OWN_ORIGINS for t in trials)


def test_no_program_is_measured_twice_for_a_task(seeded) -> None:
    """First rounds, diffused programs and the search's picks come from different places;
    a program one of them handed out is not measured again when another proposes it."""
    run, store = seeded
    programs: dict[int, list[str]] = {}
    for trial in store.trials(run.session_id):
        programs.setdefault(trial["task_id"], []).append(trial["trace"])
    assert all(len(traces) == len(set(traces)) for traces in programs.values())


def test_representatives_are_measured_before_members_and_budget_is_spent(seeded, layout) -> None:
    run, store = seeded
    prepared, conv = layout
    rows = rows_by_index(store, run.session_id)
    first_round = {task_id: number for task_id, (number, _) in first_batches(store, run.session_id).items()}
    rep = first_round[rows[conv.representative]["id"]]
    assert all(first_round[rows[m]["id"]] > rep for m in conv.followers())
    assert sorted(first_round.values()) == list(range(1, len(prepared.tasks) + 1))  # one round each first
    assert store.session(run.session_id)["trials_done"] == SETTINGS.trials_per_task * len(prepared.tasks)


@pytest.mark.slow
def test_without_diffusion_the_search_is_stocks(tmp_path: Path, conv_cluster_model: Path, host, layout) -> None:
    """The floor: with diffusion off, every candidate is the task's own (its search's picks and
    their serial twins) ranked by MetaSchedule's own model, every task gets a round before any
    gets a second (the gradient scheduler's round robin), and the whole budget is spent."""
    prepared, _ = layout
    db = tmp_path / "floor.db"
    run = run_session(conv_cluster_model, db, host, replace(SETTINGS, diffusion_share=0.0))
    assert isinstance(python_model(run.cost_model), ms.cost_model.XGBModel._cls)  # stock's own model
    store = RecordStore(db)
    trials = store.trials(run.session_id)
    assert trials and all(t["origin"] in OWN_ORIGINS for t in trials)
    assert any(t["origin"] == "evolved" for t in trials)
    order = [batch[0]["task_id"] for _, batch in sorted(batches(store, run.session_id).items())]
    assert len(set(order[: len(prepared.tasks)])) == len(prepared.tasks)
    assert len(trials) == SETTINGS.trials_per_task * len(prepared.tasks)


@pytest.mark.slow
def test_the_control_api_steers_it(tmp_path: Path, conv_cluster_model: Path, host, layout) -> None:
    prepared, conv = layout
    member_b, member_c = conv.followers()
    pool = next(t.index for t in prepared.tasks if t.index not in conv.members)
    control = TuningControl()
    applied: dict[str, int] = {}
    pauses: list[bool] = []

    def steer(event) -> None:
        if isinstance(event, SessionPaused):
            pauses.append(event.paused)
        if isinstance(event, SessionMessage) and event.message == "paused":
            threading.Timer(0.5, control.resume).start()
        if not isinstance(event, RoundFinished):
            return
        if event.round == 1:
            control.move_task(member_c, None)  # a singleton now: nothing diffused into it
            control.set_task_budget(member_b, 4)
            control.set_cluster_priority([f"single:{member_c}"])  # its first round comes next
            control.pause()
        if event.task_index == pool and "skip" not in applied:
            control.skip_task(pool)
            applied["skip"] = event.round

    db = tmp_path / "steered.db"
    run = run_session(conv_cluster_model, db, host, SETTINGS, [steer], control=control)
    store = RecordStore(db)
    rows = rows_by_index(store, run.session_id)
    by_task = {index: store.trials(run.session_id, task_id=rows[index]["id"]) for index in rows}
    assert rows[member_c]["cluster_key"] == f"single:{member_c}"
    assert by_task[member_c] and all(t["origin"] in OWN_ORIGINS for t in by_task[member_c])
    assert len(by_task[member_b]) <= 4 + SETTINGS.batch_size  # capped (one batch may be in flight)
    assert rows[pool]["status"] == "skipped"
    assert len(by_task[pool]) <= 2 * SETTINGS.batch_size  # its first batch, and at most one in flight
    kinds = [(e["kind"], e["message"]) for e in store.events(run.session_id)]
    assert ("info", "paused") in kinds and ("info", "resumed") in kinds
    assert pauses == [True, False]  # the dashboard's cue, not the message text
    assert sum(k == "control" for k, _ in kinds) == 4
    assert run.paused_s >= 0.4
    assert store.session(run.session_id)["status"] == "completed"


@pytest.mark.slow
def test_a_raised_task_budget_is_met_before_the_session_completes(tmp_path: Path, tiny_mlp: Path, host) -> None:
    """A task's budget is the trials it gets, the total growing by the difference, even where
    the gradient rule would have spent the trials elsewhere."""
    prepared = prepare_model(tiny_mlp, host)
    heaviest = max(prepared.tasks, key=lambda task: task.flops).index
    settings = TuneSettings(strategy="bcd", trials_per_task=2, trials_per_round=2)
    control = TuningControl()
    control.set_task_budget(heaviest, 7)
    db = tmp_path / "budget.db"
    run = run_session(tiny_mlp, db, host, settings, control=control)
    store = RecordStore(db)
    session = store.session(run.session_id)
    rows = rows_by_index(store, run.session_id)
    counts = {index: len(store.trials(run.session_id, task_id=row["id"])) for index, row in rows.items()}
    assert session["status"] == "completed"
    assert session["total_budget"] == 2 * len(prepared.tasks) + 5
    assert counts[heaviest] == 7 and rows[heaviest]["budget"] == 7
    assert sum(counts.values()) == session["total_budget"]


@pytest.mark.slow
def test_tasks_skipped_while_paused_get_no_new_trial(tmp_path: Path, tiny_mlp: Path, host) -> None:
    """The batch in flight when the tune paused is measured meanwhile; once its task is
    skipped, it is not recorded, and its trials go back to the total."""
    prepared = prepare_model(tiny_mlp, host)
    control = TuningControl()
    db = tmp_path / "paused.db"
    at_pause: dict[int, int] = {}

    def steer(event) -> None:
        if isinstance(event, RoundFinished) and event.round == 2 and not at_pause:
            control.pause()
        if isinstance(event, SessionMessage) and event.message == "paused":
            with closing(RecordStore(db, create=False)) as store:
                rows = rows_by_index(store, event.session_id)
                at_pause.update({i: len(store.trials(event.session_id, task_id=r["id"])) for i, r in rows.items()})
            for task in prepared.tasks:
                control.skip_task(task.index)
            threading.Timer(0.3, control.resume).start()

    settings = TuneSettings(strategy="bcd", trials_per_task=4, trials_per_round=2)
    run = run_session(tiny_mlp, db, host, settings, [steer], control=control)
    store = RecordStore(db)
    rows = rows_by_index(store, run.session_id)
    assert at_pause and {i: len(store.trials(run.session_id, task_id=r["id"])) for i, r in rows.items()} == at_pause
    assert all(row["status"] == "skipped" for row in rows.values())
    messages = [e["message"] for e in store.events(run.session_id)]
    assert any("measured after a skip" in message for message in messages), "a batch was in flight at the pause"


@pytest.mark.slow
def test_a_stopped_session_resumes_without_diffusing_a_program_twice(
    tmp_path: Path, conv_cluster_model: Path, host, layout
) -> None:
    prepared, _ = layout
    control = TuningControl()

    def stop_early(event) -> None:
        if isinstance(event, RoundFinished) and event.round == len(prepared.tasks) + 1:
            control.stop()

    db = tmp_path / "resume.db"
    first = run_session(conv_cluster_model, db, host, SETTINGS, [stop_early], control=control)
    assert RecordStore(db).session(first.session_id)["status"] == "stopped"
    second = run_session(conv_cluster_model, db, host, SETTINGS)
    assert second.session_id == first.session_id
    store = RecordStore(db)
    trials = store.trials(first.session_id)
    pairs = [(t["task_id"], t["source_trial_id"]) for t in trials if t["origin"] == "diffused"]
    assert len(pairs) == len(set(pairs))
    assert len(trials) == SETTINGS.trials_per_task * len(prepared.tasks)
    assert store.session(first.session_id)["status"] == "completed"


@pytest.mark.slow
def test_a_program_whose_diffused_version_failed_is_diffused_nowhere_again(
    tmp_path: Path, conv_cluster_model: Path, host, monkeypatch
) -> None:
    """Diffused versions that fail where they land (here each gets a wrong argument shape, so
    it fails to run; in real tunes, builds that outlast the builder's timeout) cost their source
    one batch: the source is not diffused into any task again."""
    make_every_diffused_program_fail(monkeypatch)
    settings = replace(SETTINGS, trials_per_task=16)
    run = run_session(conv_cluster_model, tmp_path / "failed.db", host, settings)
    diffused = [t for t in RecordStore(tmp_path / "failed.db").trials(run.session_id) if t["origin"] == "diffused"]
    assert diffused and all(t["error"] and t["latency_s"] is None for t in diffused)
    rounds_of_source: dict[int, set[int]] = {}
    for trial in diffused:
        rounds_of_source.setdefault(trial["source_trial_id"], set()).add(trial["round"])
    assert all(len(rounds) == 1 for rounds in rounds_of_source.values()), rounds_of_source
