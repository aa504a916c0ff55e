"""Tuning memory with real TVM: a second model's tasks draw on a first model's tunes in the
same target's store (diffused programs with cross-session provenance, a pre-trained cost
model), `--no-memory` draws on nothing, a resume draws on the memory it recorded, and tunes
for another target or a store that is not a bcd store are never drawn on."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import models
import pytest
import tvm_ffi
from failing_programs import make_every_diffused_program_fail

from bcd_core.cli import main
from bcd_core.errors import StoreError
from bcd_core.memory.recall import COLD, MemoryRequest
from bcd_core.memory.similar import RememberedTask, most_similar
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.states import CARRIED_ORIGINS, REMEMBERED_ORIGINS, SEARCH_HIDDEN_ORIGINS
from bcd_core.records.store import RecordStore
from bcd_core.target import host_target, target_key
from bcd_core.tasks import Task
from bcd_core.tuning.bcd.plan import heavier_than_average
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import RoundFinished, SessionMessage
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

SETTINGS = TuneSettings(strategy="bcd", trials_per_task=8, trials_per_round=4)


@pytest.fixture(scope="module")
def first_model(model_dir: Path) -> Path:
    return models.convnet(model_dir / "memory_first.onnx", channels=(3, 8, 16), size=12)


@pytest.fixture(scope="module")
def second_model(model_dir: Path) -> Path:
    """The same kinds of layers with other channel counts and sizes: other workloads."""
    return models.convnet(model_dir / "memory_second.onnx", channels=(3, 12, 16), size=14)


@pytest.fixture(scope="module")
def sibling_model(model_dir: Path) -> Path:
    """The first model's two convolutions, then one more: two of its workloads are the first's."""
    return models.convnet(model_dir / "memory_sibling.onnx", channels=(3, 8, 16, 12), size=12)


@pytest.fixture(scope="module")
def remembered_store(tmp_path_factory, first_model: Path) -> Path:
    """A store holding one finished tune of the first model."""
    db = tmp_path_factory.mktemp("memory") / "store.db"
    run_session(first_model, db, host_target(), SETTINGS)
    return db


def copy_store(source: Path, destination: Path) -> Path:
    with sqlite3.connect(source) as src, sqlite3.connect(destination) as dst:
        src.backup(dst)
    return destination


def tune(model: Path, db: Path, memory: MemoryRequest | None = None, listeners=(), **kwargs):
    messages: list[str] = []

    def listen(event) -> None:
        if isinstance(event, SessionMessage):
            messages.append(event.message)

    request = memory or MemoryRequest()
    run = run_session(model, db, host_target(), SETTINGS, [listen, *listeners], memory=request, **kwargs)
    return run, messages


def memory_trials(db: Path, session_id: int) -> list[dict]:
    return [t for t in RecordStore(db).trials(session_id) if t["origin"] in ("memory", "reused")]


# -- similarity (pure) ----------------------------------------------------------------------
def remembered(name: str, sketch: str, flops: float, shapes, best: float = 1e-5) -> RememberedTask:
    return RememberedTask("", 1, hash(name) % 1000, "m.onnx", name, hash(name) % 1000, sketch, "", flops, shapes, best)


def test_the_twin_comes_first_then_the_nearest_size_and_other_sketches_never() -> None:
    task = Task(0, "conv", 1, 1e6, [[1, 8, 12, 12]], ["float32"], "conv2d", "S", 1, None, None, "L")
    twin = remembered("twin", "S", 1e6, ((1, 8, 12, 12),), best=9e-5)
    near = remembered("near", "S", 1.2e6, ((1, 8, 14, 14),))
    far = remembered("far", "S", 9e6, ((1, 8, 40, 40),))
    other = remembered("other", "X", 1e6, ((1, 8, 12, 12),))
    assert [r.name for r in most_similar(task, [far, other, near, twin])] == ["twin", "near", "far"]
    assert most_similar(task, [other]) == []
    same = replace(far, name="same", shash="H")  # the very workload wins over equal shapes
    assert most_similar(task, [twin, same], shash="H")[0].name == "same"


# -- tunes --------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_new_model_draws_on_an_earlier_tune_with_provenance(tmp_path: Path, remembered_store, second_model) -> None:
    db = copy_store(remembered_store, tmp_path / "store.db")
    run, messages = tune(second_model, db)
    trials = memory_trials(db, run.session_id)
    assert trials, "no remembered program was diffused into the second model"
    store = RecordStore(db)
    first_tasks = {t["name"] for t in store.tasks(1)}
    for trial in trials:  # provenance names the session, model and task it came from
        assert "memory_first.onnx" in trial["adaptation"] and "(session 1)" in trial["adaptation"]
        assert any(name in trial["adaptation"] for name in first_tasks)
        source = next(t for t in store.trials(1) if t["id"] == trial["source_trial_id"])  # this store: linked
        assert source["latency_s"] is not None
    first_rounds: dict[int, int] = {}
    own_trials = store.trials(run.session_id)
    for trial in own_trials:
        first_rounds.setdefault(trial["task_id"], trial["round"])
    heavy = {run.task_row_ids[index] for index in heavier_than_average(run.tasks)}
    first = {
        task_id: [t for t in own_trials if t["task_id"] == task_id and t["round"] == number]
        for task_id, number in first_rounds.items()
    }
    carried = {task_id: {t["origin"] for t in batch} & set(CARRIED_ORIGINS) for task_id, batch in first.items()}
    given = {task_id for task_id, origins in carried.items() if origins}
    assert given - heavy, "no task lighter than the average one was given programs in its first round"
    for task_id in given - heavy:  # by work, trusted programs (not other workloads') only: half a round
        if carried[task_id] & {"diffused", "reused"}:
            assert len(first[task_id]) <= SETTINGS.trials_per_round // 2, "a light task given programs measures half"
    for task_id in {t["task_id"] for t in trials}:  # without its cluster's programs, memory's come first
        if not any(t["origin"] == "diffused" for t in first[task_id]):
            assert any(t["origin"] in REMEMBERED_ORIGINS for t in first[task_id])
    assert [(r["store"], r["source_session_id"]) for r in store.memory_used(run.session_id)] == [("", 1)]
    assert any(m.startswith("memory: cost model") and "remembered trials" in m for m in messages)
    assert len(store.trials(run.session_id)) == SETTINGS.trials_per_task * len(run.tasks)


def first_round_origins(db: Path, session_id: int) -> dict[int, list[str]]:
    """Task row id -> the origins of its first round's trials."""
    first_round: dict[int, int] = {}
    origins: dict[int, list[str]] = {}
    for trial in RecordStore(db).trials(session_id):
        if trial["round"] == first_round.setdefault(trial["task_id"], trial["round"]):
            origins.setdefault(trial["task_id"], []).append(trial["origin"])
    return origins


@pytest.mark.slow
def test_a_member_given_its_clusters_programs_draws_on_the_memory_in_its_first_round_too(
    tmp_path: Path, remembered_store, second_model
) -> None:
    """A cluster member's first round carries the memory's programs as well as its cluster's,
    in place of own picks: no more trials than the same round without memory."""
    # Rounds of 8 give a light member a half round of 2 cluster's and 2 own picks, so the
    # memory has an own pick to take (rounds of 4: one of each, and the twin takes the own pick).
    settings = replace(SETTINGS, trials_per_round=8)
    rounds = {}
    for name, memory in (("memory", MemoryRequest()), ("cold", COLD)):
        db = copy_store(remembered_store, tmp_path / f"{name}.db")
        run = run_session(second_model, db, host_target(), settings, memory=memory)
        by_task = first_round_origins(db, run.session_id)
        rounds[name] = {task: origins for task, origins in by_task.items() if "diffused" in origins}
        assert rounds[name], f"{name}: no task was given its cluster's programs in its first round"
    for origins in rounds["memory"].values():
        assert len(origins) <= 8 and set(origins) & set(REMEMBERED_ORIGINS), origins
    assert not any(set(o) & set(REMEMBERED_ORIGINS) for o in rounds["cold"].values())
    both = rounds["memory"].keys() & rounds["cold"].keys()  # the same tasks: copies of one store
    assert both, "no task was a member given its cluster's programs in both tunes"
    for task in both:
        assert len(rounds["memory"][task]) == len(rounds["cold"][task]), f"memory lengthened task {task}'s round"


@pytest.mark.slow
def test_a_stored_program_is_learnt_from_as_the_same_candidate_replayed_once(remembered_store: Path) -> None:
    store = RecordStore(remembered_store)
    database = SqliteDatabase(store, target_key(host_target()))
    rows = [t for t in store.trials(store.sessions()[0]["id"]) if t["latency_s"]][:6]
    assert rows
    for row in rows:
        once, twice = database.candidate_from_row(row), database.record_from_row(row).as_measure_candidate()
        assert tvm_ffi.structural_equal(once.sch.mod, twice.sch.mod)
        assert [a.as_json() for a in once.args_info] == [a.as_json() for a in twice.args_info]


@pytest.mark.slow
def test_another_models_programs_take_a_few_picks_place_but_never_shorten_a_first_round(
    tmp_path: Path, remembered_store, model_dir: Path
) -> None:
    model = models.conv_dense(model_dir / "memory_conv_dense.onnx")
    db = copy_store(remembered_store, tmp_path / "store.db")
    run, _ = tune(model, db)
    convolution = next(t.index for t in run.tasks if "conv2d" in t.name)
    assert convolution not in heavier_than_average(run.tasks), "the convolution should be a light task"
    row_id = run.task_row_ids[convolution]
    trials = [t for t in RecordStore(db).trials(run.session_id) if t["task_id"] == row_id]
    first = [t for t in trials if t["round"] == trials[0]["round"]]
    own = {"evolved", "serial"}  # its search's picks and a serial twin of one
    origins = {t["origin"] for t in first}
    assert "memory" in origins and origins - {"memory"} <= own, "the first round is not remembered + own picks"
    assert len(first) == SETTINGS.trials_per_round, "remembered programs of another workload shortened a round"


@pytest.mark.slow
def test_the_same_workload_is_reused_unchanged_and_may_seed_the_search(
    tmp_path: Path, remembered_store, sibling_model
) -> None:
    team = copy_store(remembered_store, tmp_path / "team.db")
    run, _ = tune(sibling_model, tmp_path / "mine.db", MemoryRequest(stores=(str(team),)))
    store = RecordStore(tmp_path / "mine.db")
    reused = [t for t in store.trials(run.session_id) if t["origin"] == "reused"]
    unchanged = ("copy; from memory_first.onnx", "copy+serial; from memory_first.onnx")  # a serial best stays serial
    assert reused and all(t["adaptation"].startswith(unchanged) for t in reused)
    workload = reused[0]["workload_id"]
    seeds = store.top_records(workload, run.target_key, 1000, exclude_origins=SEARCH_HIDDEN_ORIGINS)
    assert any(row["origin"] == "reused" for row in seeds)


@pytest.mark.slow
def test_another_stores_program_whose_adapted_version_failed_is_diffused_nowhere_again(
    tmp_path: Path, remembered_store, sibling_model, monkeypatch
) -> None:
    """As a cluster-mate's program (test_bcd.py): here every adapted program gets a wrong
    argument shape, so it fails to run wherever it lands."""
    from bcd_core.memory.recall import TuningMemory
    from bcd_core.tuning.bcd.plan import BcdPlan

    offered: list[tuple[set, set]] = []  # (programs the memory offered, those known to have failed)
    given: list[tuple[set, set]] = []  # (programs handed to a task, those known to have failed)
    failed_now: set = set()
    programs, from_memory = TuningMemory.programs, BcdPlan.from_memory

    def spy_programs(self, *args, **kwargs):
        found = programs(self, *args, **kwargs)
        offered.append(({(p.task.store_label, p.trial_id) for p in found}, set(failed_now)))
        return found

    def spy_from_memory(self, *args, **kwargs):
        failed_now.clear()
        failed_now.update(self.memory_share.failed)
        before = set(self.memory_share.in_flight)
        result = from_memory(self, *args, **kwargs)
        handed = self.memory_share.in_flight
        given.append(({v for k, v in handed.items() if k not in before}, set(failed_now)))
        return result

    make_every_diffused_program_fail(monkeypatch)
    monkeypatch.setattr(TuningMemory, "programs", spy_programs)
    monkeypatch.setattr(BcdPlan, "from_memory", spy_from_memory)
    team = copy_store(remembered_store, tmp_path / "team.db")
    run, _ = tune(sibling_model, tmp_path / "mine.db", MemoryRequest(stores=(str(team),)))
    remembered = memory_trials(tmp_path / "mine.db", run.session_id)
    assert remembered and all(t["latency_s"] is None for t in remembered)
    assert any(found & failed for found, failed in offered), "no failed program was offered again"
    assert all(not (handed & failed) for handed, failed in given), "a failed program was diffused again"


@pytest.mark.slow
def test_a_models_own_earlier_sessions_are_not_drawn_on(tmp_path: Path, remembered_store, first_model) -> None:
    """A new session of a model starts over: two strategies tuned in one store compare fairly."""
    db = copy_store(remembered_store, tmp_path / "store.db")
    run, _ = tune(first_model, db, new_session=True)
    assert run.session_id != 1
    assert memory_trials(db, run.session_id) == []
    assert RecordStore(db).memory_used(run.session_id) == []


@pytest.mark.slow
def test_no_memory_draws_on_nothing(tmp_path: Path, remembered_store, second_model) -> None:
    db = copy_store(remembered_store, tmp_path / "store.db")
    run, messages = tune(second_model, db, COLD)
    assert memory_trials(db, run.session_id) == []
    assert RecordStore(db).memory_used(run.session_id) == []
    assert not any(m.startswith("memory:") for m in messages)


@pytest.mark.slow
def test_a_resume_draws_on_the_memory_it_recorded(tmp_path: Path, remembered_store, first_model, second_model) -> None:
    db = copy_store(remembered_store, tmp_path / "store.db")
    control = TuningControl()

    def stop_early(event) -> None:
        if isinstance(event, RoundFinished) and event.round == 2:
            control.stop()

    first, _ = tune(second_model, db, listeners=[stop_early], control=control)
    assert RecordStore(db).session(first.session_id)["status"] == "stopped"
    recorded = RecordStore(db).memory_used(first.session_id)
    later = run_session(first_model, db, host_target(), replace(SETTINGS, seed=5), memory=COLD)  # a new session
    resumed, _ = tune(second_model, db)
    assert resumed.session_id == first.session_id
    assert resumed.memory is not None
    assert {s["source_session_id"] for s in resumed.memory.sessions} == {1}  # not the later session
    assert later.session_id not in {t.session_id for t in resumed.memory.tasks}
    assert RecordStore(db).memory_used(first.session_id) == recorded
    assert RecordStore(db).session(first.session_id)["status"] == "completed"


@pytest.mark.slow
def test_tunes_for_another_target_are_never_drawn_on(tmp_path: Path, first_model, second_model) -> None:
    db = tmp_path / "store.db"
    other_cores = host_target(num_cores=1 if host_target().attrs["num-cores"] != 1 else 2)
    run_session(first_model, db, other_cores, SETTINGS)
    run, messages = tune(second_model, db)
    assert memory_trials(db, run.session_id) == []
    assert RecordStore(db).memory_used(run.session_id) == []
    assert any("not used" in m and "x" in m for m in messages), messages


def test_tunes_timed_with_other_caches_are_never_drawn_on(tmp_path: Path) -> None:
    """Warm timings read faster than flushed ones (which older stores may hold): a tune draws
    only on sessions timed as it is, and says why not on others."""
    from bcd_core.memory.recall import sessions_on_target

    store = RecordStore(tmp_path / "store.db")
    key = target_key(host_target())
    for model, settings in (("a", {}), ("b", {"cpu_cache": "flushed"}), ("c", {"cpu_cache": "warm"})):
        store.create_session(
            model_path=f"{model}.onnx", model_hash=model, target="t", target_key=key, strategy="bcd", settings=settings
        )
    messages: list[str] = []
    assert sessions_on_target(store, key, "flushed", "new", "", messages.append) == [2]
    assert messages == [
        "memory: 2 session(s) in this store timed candidates with warm caches, this tune with flushed ones; not used"
    ]
    assert sessions_on_target(store, key, "warm", "new", "", messages.append) == [1, 3]


def test_tunes_whose_kernels_ran_on_other_thread_counts_are_never_drawn_on(tmp_path: Path) -> None:
    """A program timed on one thread reads slower than on two: sessions stored before the
    thread count was recorded (TVM's default) and sessions on other counts are not memory."""
    from bcd_core.memory.recall import sessions_on_target
    from bcd_core.records.timing import timing_for

    store = RecordStore(tmp_path / "store.db")
    key = target_key(host_target())
    for model, settings in (("a", {}), ("b", {"kernel_threads": 1}), ("c", {"kernel_threads": 2})):
        store.create_session(
            model_path=f"{model}.onnx", model_hash=model, target="t", target_key=key, strategy="bcd", settings=settings
        )
    messages: list[str] = []
    assert sessions_on_target(store, key, timing_for("warm", key, 2), "new", "", messages.append) == [3]
    assert messages == [
        "memory: 1 session(s) in this store ran kernels on TVM's default threads, this tune on 2 threads; not used",
        "memory: 1 session(s) in this store ran kernels on 1 thread, this tune on 2 threads; not used",
    ]


def test_a_cpus_tunes_are_never_drawn_on_for_another_cpu_model(tmp_path: Path) -> None:
    """On a CPU the whole target decides how a kernel runs: a tune for another `mcpu` (same
    core count) is not memory, and the tune says for what it was made."""
    from bcd_core.memory.recall import sessions_on_target

    key = target_key(host_target())
    other_cpu = json.loads(key)
    other_cpu["mcpu"] = "sapphirerapids" if other_cpu.get("mcpu") != "sapphirerapids" else "znver4"
    store = RecordStore(tmp_path / "store.db")
    for model, stored_key in (("a", json.dumps(other_cpu, sort_keys=True)), ("b", key)):
        store.create_session(
            model_path=f"{model}.onnx", model_hash=model, target="t", target_key=stored_key, strategy="bcd", settings={}
        )
    messages: list[str] = []
    assert sessions_on_target(store, key, "warm", "new", "", messages.append) == [2]
    assert len(messages) == 1 and other_cpu["mcpu"] in messages[0] and "not used" in messages[0], messages


def test_a_gpus_tunes_are_drawn_on_from_any_host_but_never_for_another_gpu(tmp_path: Path) -> None:
    """A CUDA kernel runs the same whichever CPU launches it: tunes of the same GPU made from
    another host are memory; another GPU architecture's are not, and the tune says why."""
    from bcd_core.memory.recall import sessions_on_target
    from bcd_core.target import parse_target

    key = target_key(parse_target("nvidia/nvidia-h100"))
    other_host = json.loads(key)
    other_host["host"] = {**other_host["host"], "mcpu": "sapphirerapids", "num-cores": 64}
    other_gpu = target_key(parse_target("nvidia/nvidia-a100"))
    store = RecordStore(tmp_path / "store.db")
    for model, stored_key in (("a", json.dumps(other_host, sort_keys=True)), ("b", other_gpu), ("c", key)):
        store.create_session(
            model_path=f"{model}.onnx", model_hash=model, target="t", target_key=stored_key, strategy="bcd", settings={}
        )
    messages: list[str] = []
    assert sessions_on_target(store, key, "warm", "new", "", messages.append) == [1, 3]
    assert messages == ["memory: 1 session(s) in this store were tuned for cuda sm_80, not for cuda sm_90a; not used"]
    cpu = target_key(host_target())
    assert sessions_on_target(store, cpu, "warm", "new", "", messages.append) == []  # never a GPU's for a CPU


@pytest.mark.slow
def test_a_memory_store_named_by_the_user_is_read_only_and_linked_by_name(
    tmp_path: Path, remembered_store, second_model
) -> None:
    team = copy_store(remembered_store, tmp_path / "team.db")
    before = team.read_bytes()
    run, _ = tune(second_model, tmp_path / "mine.db", MemoryRequest(stores=(str(team),)))
    trials = memory_trials(tmp_path / "mine.db", run.session_id)
    assert trials and all(str(team.resolve()) in t["adaptation"] for t in trials)
    assert all(t["source_trial_id"] is None for t in trials)  # another store's ids mean nothing here
    assert team.read_bytes() == before


def test_a_store_that_cannot_be_memory_is_a_one_line_error(tmp_path: Path, second_model, capsys) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("create table t (x)")
    with pytest.raises(StoreError, match="--memory"):
        request = MemoryRequest(stores=(str(foreign),))
        run_session(second_model, tmp_path / "mine.db", host_target(), SETTINGS, memory=request)
    assert not (tmp_path / "mine.db").exists()  # refused before anything was written
    code = main(["tune", str(second_model), "--db", str(tmp_path / "mine.db"), "--memory", str(tmp_path / "none.db")])
    assert code != 0
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--memory" in error and "none.db" in error


@pytest.mark.slow
def test_inspect_lists_what_each_task_would_draw_on(remembered_store, second_model, capsys) -> None:
    assert main(["inspect", str(second_model), "--db", str(remembered_store), "--json"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    drawing = [t for t in tasks if t["memory"]]
    assert drawing and all(m["model"] == "memory_first.onnx" for t in drawing for m in t["memory"])
    assert all(t["memory_when"] == "" for t in tasks if not t["memory"])
    assert any(t["memory_when"] == "beside-cluster" for t in drawing), "no cluster member draws on memory"
    for task in drawing:  # by default a cluster's later tasks get memory's programs beside their cluster's
        when = "first-round" if task["loose_sketch_representative"] else "beside-cluster"
        assert task["memory_when"] in ("same-workload", when)
    assert main(["inspect", str(second_model), "--db", str(remembered_store)]) == 0
    out = capsys.readouterr().out
    assert "would draw on memory" in out and "beside their cluster-mates' programs" in out
