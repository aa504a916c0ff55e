"""The BCD strategy end to end with real TVM: phases, diffusion provenance, steering, stop
and resume."""

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from bcd_core.clustering import cluster_tasks
from bcd_core.cost_model import phased
from bcd_core.records.store import RecordStore
from bcd_core.tuning import phased_priors
from bcd_core.tuning.bcd import BcdPlan, stalled_rounds
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import RoundFinished, SessionMessage
from bcd_core.tuning.session import prepare_model
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

# Diffusion from the representative only (bcd-algorithm.md), which most tests here check;
# test_cluster_priors_* checks cluster priors, and "auto", the default, that picks between them.
SETTINGS = TuneSettings(
    strategy="bcd-phased",
    trials_per_task=8,
    trials_per_round=4,
    representative_round_cap=2,
    prior_source="representative",
)


@pytest.fixture(scope="module")
def layout(conv_cluster_model: Path, host):
    prepared = prepare_model(conv_cluster_model, host)
    conv = next(c for c in cluster_tasks(prepared.tasks, SETTINGS.cluster_mode) if c.size == 3)
    return prepared, conv


def rows_by_index(store: RecordStore, session_id: int) -> dict[int, dict]:
    return {row["idx"]: row for row in store.tasks(session_id)}


def trials_of(store: RecordStore, session_id: int, index: int) -> list[dict]:
    row_id = rows_by_index(store, session_id)[index]["id"]
    return store.trials(session_id, task_id=row_id)


@pytest.fixture(scope="module")
def steered(tmp_path_factory, conv_cluster_model: Path, host, layout):
    """One BCD tune that the test steers while it runs (like a GUI user would)."""
    _, conv = layout
    member_b, member_c = conv.followers()
    control = TuningControl()
    applied_at: dict[str, int] = {}

    def steer(event) -> None:
        if isinstance(event, SessionMessage) and event.message == "paused":
            threading.Timer(1.0, control.resume).start()  # paused for a second, from when it took effect
        if not isinstance(event, RoundFinished):
            return
        if event.round == 1:
            control.move_task(member_c, None)  # make it a singleton: it must not be diffused
            control.pause()
            applied_at["move"] = event.round
        if event.task_index == member_b and "skip" not in applied_at:
            control.skip_task(member_b)  # right after its diffusion round
            applied_at["skip"] = event.round

    db = tmp_path_factory.mktemp("bcd") / "records.db"
    run = run_session(conv_cluster_model, db, host, SETTINGS, [steer], control=control)
    return run, RecordStore(db), applied_at


@pytest.mark.slow
def test_representative_is_tuned_first(steered, layout) -> None:
    run, store, _ = steered
    _, conv = layout
    rep_rounds = sorted({t["round"] for t in trials_of(store, run.session_id, conv.representative)})
    first_rounds = sorted({t["round"] for t in store.trials(run.session_id)})[:2]
    assert rep_rounds[:2] == first_rounds == [1, 2]  # min(|cluster|, cap=2) rounds before anyone else
    assert rows_by_index(store, run.session_id)[conv.representative]["is_representative"] == 1


def test_member_is_diffused_with_provenance(steered, layout) -> None:
    run, store, _ = steered
    _, conv = layout
    member_b = conv.followers()[0]
    diffused = [t for t in trials_of(store, run.session_id, member_b) if t["origin"] == "diffused"]
    assert diffused, "the member's first batch comes from the representative's programs"
    rep_trial_ids = {t["id"] for t in trials_of(store, run.session_id, conv.representative)}
    assert {t["source_trial_id"] for t in diffused} <= rep_trial_ids
    assert all(t["adaptation"] for t in diffused)
    assert len(diffused) <= max(1, SETTINGS.batch_size // 2)  # a member's round is half a representative's
    row = rows_by_index(store, run.session_id)[member_b]
    valid = [t["latency_s"] for t in diffused if t["latency_s"] is not None]
    assert row["diffused_best_s"] == pytest.approx(min(valid))
    assert row["diffused_from_trial_id"] in rep_trial_ids


def test_control_requests_take_effect_at_the_next_round(steered, layout) -> None:
    run, store, applied_at = steered
    _, conv = layout
    member_b, member_c = conv.followers()
    # Skip: nothing measured for B after the round in which it was requested.
    assert max(t["round"] for t in trials_of(store, run.session_id, member_b)) == applied_at["skip"]
    assert rows_by_index(store, run.session_id)[member_b]["status"] == "skipped"
    # Move to a singleton: C got its own cluster and was never diffused.
    assert rows_by_index(store, run.session_id)[member_c]["cluster_key"] == f"single:{member_c}"
    c_trials = trials_of(store, run.session_id, member_c)
    assert c_trials and all(t["origin"] == "evolved" for t in c_trials)
    kinds = [(e["kind"], e["message"]) for e in store.events(run.session_id)]
    assert ("info", "paused") in kinds and ("info", "resumed") in kinds
    assert any(k == "control" and "skip" in m for k, m in kinds)
    assert any(k == "control" and "move" in m for k, m in kinds)
    assert run.paused_s >= 0.9  # paused time is not counted as tuning time
    assert store.session(run.session_id)["status"] == "completed"


def test_budget_and_metrics(steered, layout) -> None:
    run, store, _ = steered
    prepared, _ = layout
    assert store.session(run.session_id)["trials_done"] <= SETTINGS.trials_per_task * len(prepared.tasks)
    metrics = store.cost_model_metrics(run.session_id)
    assert metrics and all(0.0 <= (m["pairwise_accuracy"] or 0.0) <= 1.0 for m in metrics)


@pytest.mark.parametrize(
    ("history", "stalled"),
    [
        ([], 0),
        ([2.0], 0),
        ([2.0, 1.0], 0),
        ([2.0, 1.0, 1.0], 1),
        ([3.0, 2.0, 2.0, 2.0], 2),
        ([5.0] * 4, 3),
        ([1.0, 0.98], 0),
        ([1.0, 0.995, 0.991], 2),  # better by less than 1 %: timing noise, not progress
    ],
)
def test_stalled_rounds_counts_rounds_in_a_row_without_a_better_program(history, stalled) -> None:
    assert stalled_rounds(history) == stalled


@pytest.mark.slow
def test_a_member_whose_representative_improved_is_worth_a_refresh_round(
    tmp_path: Path, conv_cluster_model: Path, host, layout
):
    _, conv = layout
    run = run_session(conv_cluster_model, tmp_path / "gain.db", host, SETTINGS)
    live = run.batch_hooks[0].__self__  # the plan that ran the session
    plan = BcdPlan(run)  # the plan as it would be for one more round (what a resume builds)
    rep = conv.representative
    member, _ = conv.followers()
    assert all(index in run.best for index in conv.members)
    # Resuming restores, from the store, what each member's representative had reached when
    # the member last received programs: a later improvement still earns it a refresh.
    assert live.representative_best_at_diffusion
    assert plan.representative_best_at_diffusion == pytest.approx(live.representative_best_at_diffusion)

    # A member whose representative halved its latency since the member's last diffusion
    # expects at least half of its own work back from the refreshed prior.
    work = run.tasks[member].weight * run.best[member]
    plan.representative_best_at_diffusion[member] = run.best[rep]
    unchanged = plan.expected_gain(member)[1]
    plan.representative_best_at_diffusion[member] = 2 * run.best[rep]
    refreshed = plan.expected_gain(member)[1]
    assert refreshed >= 0.5 * work - 1e-12 and refreshed > unchanged
    plan.fallbacks.add(member)  # searching on its own: nothing to refresh
    assert plan.expected_gain(member)[1] == pytest.approx(unchanged)


@pytest.mark.slow
def test_phase_three_prefers_the_round_that_buys_more_latency_per_trial(
    tmp_path: Path, conv_cluster_model: Path, host, layout
):
    _, conv = layout
    run = run_session(conv_cluster_model, tmp_path / "rate.db", host, SETTINGS)
    plan = BcdPlan(run)  # the plan as it would be for more rounds
    plan.total_budget = run.trials_done + 100
    member, other = conv.followers()
    plan.skipped = {t.index for t in run.tasks} - {member, other}
    # No refresh pending (a resumed plan restores one if the representative improved since the
    # member's diffusion): only the tasks' own gains are compared here.
    plan.representative_best_at_diffusion.clear()
    run.rounds_per_task[member] = 1  # its seeded round (half a batch) is still to come
    run.rounds_per_task[other] = 1
    plan.moved[other] = f"single:{other}"  # a singleton's next round is a whole batch
    plan.recluster()
    assert plan.next_round_trials(member) * 2 == plan.next_round_trials(other) == SETTINGS.batch_size
    for history in (member, other):
        run.best_history[history] = [run.best[history]]  # one round, no stall
    # The member's round is expected to bring 3/4 of the other's gain for half the trials.
    run.best[member] = run.best[other] * run.tasks[other].weight / run.tasks[member].weight * 0.75
    assert plan.expected_gain(member)[1] == pytest.approx(0.75 * plan.expected_gain(other)[1])
    assert plan.next_task() == member
    run.best[member] /= 2  # now 3/8 of the gain for half the trials
    assert plan.next_task() == other


@pytest.mark.slow
def test_a_representative_runs_phase_one_until_it_stalls(tmp_path: Path, conv_cluster_model: Path, host, layout):
    _, conv = layout
    run = run_session(conv_cluster_model, tmp_path / "patience.db", host, SETTINGS)
    rep = conv.representative
    resumed = BcdPlan(run)  # its members were diffused: phase 1 stays over, whatever follows
    assert rep in resumed.phase_one_cut and not resumed.in_phase_one(conv)

    plan = BcdPlan(run)  # the plan as it was in phase 1, with the full round cap
    plan.settings = replace(SETTINGS, representative_round_cap=10, phase_one_patience=0)
    plan.phase_one_scale = plan.extended_phase_one_scale = 1.0
    plan.phase_one_cut = {c.representative for c in plan.clusters} - {rep}  # only this one in phase 1
    plan.total_budget = run.trials_done + 100
    assert plan.phase_one_limit(conv) == 3  # bcd-algorithm.md: min(|C|, 10)
    plan.settings = replace(plan.settings, phase_one_patience=2)
    assert plan.phase_one_limit(conv) == 10  # up to the cap while it improves
    run.rounds_per_task[rep] = 4
    run.best_history[rep] = [2.0, 1.0, 0.9, 0.8]
    assert plan.next_task() == rep
    run.best_history[rep] = [2.0, 1.0, 1.0, 0.995]  # two rounds without a better program (1 %)
    plan.settings = replace(plan.settings, phase_one_patience=0)
    assert not plan.in_phase_one(conv)  # past min(|C|, 10) anyway
    plan.settings = replace(plan.settings, phase_one_patience=3)
    assert plan.in_phase_one(conv)
    plan.settings = replace(plan.settings, phase_one_patience=2)
    assert not plan.in_phase_one(conv) and rep in plan.phase_one_cut
    assert any("phase 1 ends after 4 of 10 rounds" in e["message"] for e in run.store.events(run.session_id))
    run.best_history[rep] = [2.0, 1.0, 1.0, 0.995, 0.5]  # better again (in phase 3): still over
    assert not plan.in_phase_one(conv)


@pytest.mark.slow
def test_stop_then_resume_continues_the_session(tmp_path: Path, conv_cluster_model: Path, host, layout) -> None:
    control = TuningControl()

    def stop_after_two_rounds(event) -> None:
        if isinstance(event, RoundFinished) and event.round == 2:
            control.stop()

    db = tmp_path / "stop.db"
    first = run_session(conv_cluster_model, db, host, SETTINGS, [stop_after_two_rounds], control=control)
    store = RecordStore(db)
    assert store.session(first.session_id)["status"] == "stopped"
    before = [(t["id"], t["round"], t["trace"]) for t in store.trials(first.session_id)]
    assert {r for _, r, _ in before} == {1, 2}
    second = run_session(conv_cluster_model, db, host, SETTINGS)
    assert second.session_id == first.session_id and second.resumed
    after = [(t["id"], t["round"], t["trace"]) for t in RecordStore(db).trials(first.session_id)]
    assert after[: len(before)] == before
    assert min(r for _, r, _ in after[len(before) :]) == 3
    assert RecordStore(db).session(first.session_id)["status"] == "completed"
    # Every member's diffusion round comes before any member's seeded round: the model has
    # an estimate as early as possible.
    _, conv = layout
    member_rounds = [sorted({t["round"] for t in trials_of(store, first.session_id, m)}) for m in conv.followers()]
    later_rounds = [r for rounds in member_rounds for r in rounds[1:]]
    assert later_rounds, "the budget leaves the members rounds after diffusion"
    assert max(rounds[0] for rounds in member_rounds) < min(later_rounds)
    events = [e["message"] for e in RecordStore(db).events(first.session_id)]
    assert any("cost model retrained" in m for m in events)


@pytest.mark.slow
def test_the_users_cluster_changes_and_total_budget_survive_a_stop_and_resume(
    tmp_path: Path, conv_cluster_model: Path, host, layout
) -> None:
    _, conv = layout
    member_b, member_c = conv.followers()
    control = TuningControl()
    natural_order: list[str] = []

    def steer(event) -> None:
        if isinstance(event, RoundFinished) and event.round == 1:
            control.move_task(member_c, None)  # a singleton: never diffused, also after a resume
            control.set_cluster_priority(natural_order[::-1])  # the smallest clusters first
            control.set_total_budget(smaller_total)
        if isinstance(event, RoundFinished) and event.round == 2:
            control.stop()

    natural_order.extend(c.key for c in cluster_tasks(layout[0].tasks, SETTINGS.cluster_mode))
    smaller_total = SETTINGS.trials_per_task * len(layout[0].tasks) - 5
    db = tmp_path / "changes.db"
    first = run_session(conv_cluster_model, db, host, SETTINGS, [steer], control=control)
    left = {row["idx"]: (row["cluster_key"], row["cluster_id"]) for row in RecordStore(db).tasks(first.session_id)}
    assert left[member_c][0] == f"single:{member_c}"

    second = run_session(conv_cluster_model, db, host, SETTINGS)
    assert second.session_id == first.session_id and second.resumed
    plan = second.batch_hooks[0].__self__
    assert plan.cluster_of(member_c).members == [member_c]
    assert plan.cluster_of(member_b).representative == conv.representative
    assert [c.key for c in plan.clusters][0] == left[min(left, key=lambda i: left[i][1])][0]
    assert not [t for t in trials_of(RecordStore(db), first.session_id, member_c) if t["origin"] == "diffused"]
    assert RecordStore(db).session(first.session_id)["status"] == "completed"
    assert second.trials_total == smaller_total == len(RecordStore(db).trials(first.session_id))


@pytest.mark.slow
def test_phase_three_ranks_with_metaschedules_model_once_it_has_learnt(
    tmp_path: Path, conv_cluster_model: Path, host, monkeypatch
) -> None:
    monkeypatch.setattr(phased, "STOCK_WARMUP_SAMPLES", 8)  # the tiny budget's phase 3 is past it
    run = run_session(conv_cluster_model, tmp_path / "late.db", host, replace(SETTINGS, late_cost_model="metaschedule"))
    model = run.cost_model._inst
    assert type(model).__name__ == "PhasedCostModel"  # the Python object behind the FFI wrapper
    assert model.stock.data_size == run.trials_done  # it learnt from every batch
    plan = next(hook.__self__ for hook in run.batch_hooks if isinstance(hook.__self__, BcdPlan))  # the live plan
    # Members past their diffusion and seeded rounds, and singletons past their first round,
    # had phase-3 rounds; representatives may have too (when phase 1 ended).
    had_phase_three = set()
    for cluster in plan.clusters:
        rounds_before = plan.member_rounds(cluster) if cluster.size > 1 else 1
        for index in cluster.followers() if cluster.size > 1 else cluster.members:
            if run.rounds_per_task.get(index, 0) > rounds_before:
                had_phase_three.add(run.tasks[index].name)
    now_late = {t.name for t in run.tasks if plan.in_phase_three(t.index)}
    assert had_phase_three and had_phase_three <= model.late_tasks <= now_late  # phases 1-2: shared model
    assert any(
        "ranks candidates with MetaSchedule's XGBModel" in e["message"] for e in run.store.events(run.session_id)
    )
    shared_only = run_session(conv_cluster_model, tmp_path / "shared.db", host, SETTINGS)
    assert type(shared_only.cost_model._inst).__name__ == "SharedXGBModel"


@pytest.mark.slow
def test_loose_sketch_clusters_diffuse_across_epilogues(tmp_path: Path, tiny_mlp: Path, host) -> None:
    # fused_matmul1_add1_relu1 and fused_matmul2_add2 differ only by the inlined ReLU.
    settings = replace(
        SETTINGS, cluster_mode="loose-sketch", trials_per_task=4, trials_per_round=2, representative_round_cap=1
    )
    db = tmp_path / "loose.db"
    run = run_session(tiny_mlp, db, host, settings)
    store = RecordStore(db)
    rows = {row["name"]: row for row in store.tasks(run.session_id)}
    pair = [rows["fused_matmul1_add1_relu1"], rows["fused_matmul2_add2"]]
    assert pair[0]["cluster_key"] == pair[1]["cluster_key"] and pair[0]["sketch_key"] != pair[1]["sketch_key"]
    rep, member = sorted(pair, key=lambda row: -row["is_representative"])
    assert rep["is_representative"] == 1 and member["is_representative"] == 0
    assert not member["fallback"]
    diffused = [t for t in store.trials(run.session_id, task_id=member["id"]) if t["origin"] == "diffused"]
    rep_trial_ids = {t["id"] for t in store.trials(run.session_id, task_id=rep["id"])}
    assert diffused and {t["source_trial_id"] for t in diffused} <= rep_trial_ids
    assert member["diffused_best_s"] is not None


@pytest.mark.slow
def test_a_member_far_heavier_than_its_representative_is_tuned_as_a_singleton(
    tmp_path: Path, uneven_convnet: Path, host
) -> None:
    # uneven_convnet: three convolutions in one cluster; the other two have about 2.6 and 5.2
    # times the representative's work.
    settings = replace(SETTINGS, trials_per_task=4, trials_per_round=2, representative_round_cap=1)
    split = replace(settings, split_heavier_than=4)
    clusters = prepare_model(uneven_convnet, host, cluster_mode=settings.cluster_mode, split_heavier_than=4).clusters
    heavy = [c for c in clusters if c.key.startswith("heavy:")]
    assert len(heavy) == 1, "the fixture has one member over 4x its representative's work"
    heavy_index = heavy[0].representative
    db = tmp_path / "split.db"
    run = run_session(uneven_convnet, db, host, split)
    store = RecordStore(db)
    rows = rows_by_index(store, run.session_id)
    assert rows[heavy_index]["cluster_key"] == f"heavy:{heavy_index}" and not rows[heavy_index]["is_representative"]
    heavy_trials = trials_of(store, run.session_id, heavy_index)
    assert heavy_trials and all(t["origin"] != "diffused" for t in heavy_trials)  # searched on its own
    light = next(c for c in run_cluster_rows(rows) if len(c) > 1)
    member = next(row for row in light if not row["is_representative"])
    assert any(t["origin"] == "diffused" for t in trials_of(store, run.session_id, member["idx"]))
    # The split is part of the session's identity: without it, a fresh session (unsplit).
    plain = run_session(uneven_convnet, db, host, settings)
    assert plain.session_id != run.session_id
    assert rows_by_index(store, plain.session_id)[heavy_index]["cluster_key"] != f"heavy:{heavy_index}"


def run_cluster_rows(rows: dict[int, dict]) -> list[list[dict]]:
    """The store's task rows grouped by cluster key."""
    groups: dict[str, list[dict]] = {}
    for row in rows.values():
        groups.setdefault(row["cluster_key"], []).append(row)
    return list(groups.values())


@pytest.mark.slow
def test_cluster_priors_draw_on_every_other_task_faster_per_flop(
    tmp_path: Path, conv_cluster_model: Path, host, layout, monkeypatch
) -> None:
    prepared, conv = layout
    settings = replace(SETTINGS, prior_source="cluster")
    run = run_session(conv_cluster_model, tmp_path / "cluster.db", host, settings)
    live = run.batch_hooks[0].__self__
    plan = BcdPlan(run)
    rep = conv.representative
    member, other = conv.followers()
    assert sorted(plan.prior_sources(member)) == sorted([rep, other])
    assert sorted(plan.prior_sources(rep)) == sorted([member, other])
    per_flop = {i: run.best[i] / run.tasks[i].flops for i in conv.members}
    # Only programs faster per FLOP than the task's own best, fastest first.
    store = RecordStore(tmp_path / "cluster.db")
    task_of_trial = {t["id"]: t["task_id"] for t in store.trials(run.session_id)}
    index_of_row = {row_id: index for index, row_id in run.task_row_ids.items()}
    for task in conv.members:
        programs = plan.prior_for(task)
        assert len(programs) <= settings.prior_top_k
        for trial_id, _ in programs:
            source = index_of_row[task_of_trial[trial_id]]
            assert source != task and source in conv.members
            latency = next(t["latency_s"] for t in store.trials(run.session_id) if t["id"] == trial_id)
            assert latency / run.tasks[source].flops < per_flop[task]
    fastest = min(conv.members, key=per_flop.get)
    assert plan.prior_for(fastest) == []  # nothing in its cluster beats it per FLOP
    # What a member draws on is the best of its sources per FLOP, scaled to its own FLOPs.
    expected = min(run.best[s] * run.tasks[member].flops / run.tasks[s].flops for s in (rep, other))
    assert plan.source_best(member) == pytest.approx(expected)
    # The representative receives programs too once its phase 1 is over (it is, at the end).
    assert plan.receives_diffusion(rep) and plan.receives_diffusion(member)
    # A resumed plan restores what every task's sources had reached at its last diffusion,
    # or better: a source's batch in flight at that moment is stored before the diffused
    # batch, so the store cannot tell it apart (the restore errs towards fewer refreshes).
    assert live.representative_best_at_diffusion
    restored = plan.representative_best_at_diffusion
    assert restored and restored.keys() <= live.representative_best_at_diffusion.keys()
    for task, then in restored.items():
        assert then <= live.representative_best_at_diffusion[task] * (1 + 1e-9)
    # "auto" diffuses from the whole cluster only where the model has a large cluster.
    assert TuneSettings().prior_source == "auto"
    plan.settings = replace(settings, prior_source="auto")
    largest = max(c.size for c in cluster_tasks(prepared.tasks, settings.cluster_mode) if not plan.is_minor(c))
    assert plan.largest_cluster_size == largest == conv.size < phased_priors.AUTO_CLUSTER_PRIORS_MIN_TASKS
    assert not plan.cluster_priors and plan.prior_sources(member) == [rep]
    monkeypatch.setattr(phased_priors, "AUTO_CLUSTER_PRIORS_MIN_TASKS", largest)
    assert plan.cluster_priors and sorted(plan.prior_sources(member)) == sorted([rep, other])
    # Once it has received programs, a task gets more only when its sources got better since.
    plan.representative_best_at_diffusion[member] = plan.source_best(member)
    assert plan.refresh_improvement(member) == 0 and plan.diffusion_batch(member, 4) is None
    plan.representative_best_at_diffusion[member] = 2 * plan.source_best(member)
    assert plan.refresh_improvement(member) == pytest.approx(0.5)
    assert any(t["origin"] == "diffused" for t in trials_of(store, run.session_id, member))
