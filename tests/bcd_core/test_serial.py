"""Serial twins (bcd_core/tuning/serial.py) with real TVM: a twin is the same program on one
thread, it joins a `bcd` tune's batches with provenance, and it stops where it never wins."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.schedule import Trace

from bcd_core.programs import serial_trace_json, serial_twin
from bcd_core.records.store import RecordStore
from bcd_core.tasks import design_space
from bcd_core.tuning.bcd.serial import MODEL_MISSES, TASK_MISSES, SerialTwins
from bcd_core.tuning.run import prepare_model
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session
from bcd_core.untuned import standard_normal_arguments

SETTINGS = TuneSettings(strategy="bcd", trials_per_task=8, trials_per_round=4)


def parallel_program(task, target) -> tvm.s_tir.Schedule:
    """A post-processed program of the task's design space whose outer loop runs in parallel."""
    context = ms.TuneContext(mod=task.mod, target=target, space_generator="post-order-apply", num_threads=1)
    postprocs = list(context.space_generator.postprocs)
    for seed in range(1, 51):
        for sketch in design_space(task.mod, target):
            sch = tvm.s_tir.Schedule(task.mod, seed=seed)
            Trace(sketch.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)  # decisions sampled anew
            sch.enter_postproc()
            if all(p.apply(sch) for p in postprocs) and "T.parallel" in sch.mod.script():
                return sch, postprocs
    pytest.fail(f"no program of {task.name} with a parallel loop in 50 samples for {target}: nothing to twin")


def outputs_of(sch: tvm.s_tir.Schedule, task, target) -> np.ndarray:
    library = tvm.compile(sch.mod, target=target)
    arguments = standard_normal_arguments(task, tvm.cpu())
    library["main"](*arguments)
    return arguments[-1].numpy()


def test_a_serial_twin_is_the_same_program_on_one_thread(tiny_mlp: Path, host) -> None:
    task = max(prepare_model(tiny_mlp, host).tasks, key=lambda t: t.flops)
    original, postprocs = parallel_program(task, host)
    twin = serial_twin(task.mod, original.trace, postprocs)
    assert twin is not None
    assert "T.parallel" not in twin.mod.script()
    # Every sampled decision is kept; only the parallel annotation is gone.
    kept = [value for _, value in original.trace.as_json(remove_postproc=True)[1]]
    assert [value for _, value in twin.trace.as_json(remove_postproc=True)[1]] == kept
    np.testing.assert_allclose(outputs_of(twin, task, host), outputs_of(original, task, host), rtol=1e-5)
    assert serial_trace_json(twin.trace) is None  # a serial program has no twin
    assert serial_twin(task.mod, twin.trace, postprocs) is None


def test_twins_stop_for_a_task_and_for_the_model_where_they_lose_to_their_originals() -> None:
    twins = SerialTwins(run=None)
    twins.note_outcome(0, 1.0, 2.0)  # faster than its parallel original: keep trying
    assert twins.active(0) and twins.hits == 1
    for _ in range(TASK_MISSES):
        twins.note_outcome(0, 2.0, 1.0)  # slower: threads pay for this task
    assert not twins.active(0) and twins.active(1)
    never = SerialTwins(run=None)
    outcomes = [(None, 1.0), (1.0, None)]  # a failed twin, an original without a time: misses too
    for task in range(MODEL_MISSES):
        never.note_outcome(task, *outcomes[task % 2])
    assert not never.active(MODEL_MISSES + 1)


@pytest.mark.slow
def test_twins_join_a_tunes_batches_with_provenance(tmp_path: Path, tiny_mlp: Path, host) -> None:
    db = tmp_path / "twins.db"
    run = run_session(tiny_mlp, db, host, SETTINGS)
    store = RecordStore(db)
    trials = store.trials(run.session_id)
    twins = [t for t in trials if t["origin"] == "serial"]
    assert twins, "no batch carried a serial twin"
    by_id = {t["id"]: t for t in trials}
    for twin in twins:
        assert twin["adaptation"] == "serial twin"
        assert "meta_schedule.parallel" not in twin["trace"]
        source = twin["source_trial_id"]
        if source is not None:  # the twin of a measured program of the same task
            assert source < twin["id"] and by_id[source]["task_id"] == twin["task_id"]
            assert re.search(r"meta_schedule\.parallel", by_id[source]["trace"])
    assert len(trials) == SETTINGS.trials_per_task * len(run.tasks)  # twins are within the budget
    rounds: dict[int, int] = {}
    for twin in twins:
        rounds[twin["round"]] = rounds.get(twin["round"], 0) + 1
    assert max(rounds.values()) == 1  # one twin a batch at most

    stock = tmp_path / "stock.db"
    run_stock = run_session(tiny_mlp, stock, host, replace(SETTINGS, strategy="metaschedule"))
    assert not [t for t in RecordStore(stock).trials(run_stock.session_id) if t["origin"] == "serial"]


def test_a_serial_twin_diffuses_into_a_cluster_mate_as_a_serial_program(conv_cluster_model: Path, host) -> None:
    """A twin lacks the sketch's parallel annotation; it still matches its cluster-mates'
    sketch, and what it gives them runs on one thread too."""
    from bcd_core.clustering import cluster_tasks
    from bcd_core.diffusion import diffuse

    prepared = prepare_model(conv_cluster_model, host)
    cluster = next(c for c in cluster_tasks(prepared.tasks, SETTINGS.cluster_mode) if c.size >= 2)
    source, member = (prepared.tasks[i] for i in cluster.members[:2])
    original, postprocs = parallel_program(source, host)
    twin = serial_twin(source.mod, original.trace, postprocs)
    assert twin is not None
    context = ms.TuneContext(mod=member.mod, target=host, space_generator="post-order-apply", num_threads=1)
    result = diffuse(context, design_space(member.mod, host), [(7, twin.trace)], count=3, seed=0)
    assert result.matched_sketch is not None and result.programs
    for program in result.programs:
        assert "T.parallel" not in program.schedule.mod.script()
        assert program.adaptation.endswith("+serial") and program.source_trial_id == 7
