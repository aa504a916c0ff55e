"""How long tuning memory takes to read from a big store (100 000 trials in a few seconds).

    .venv/bin/python experiments/memory_load.py STORE.db MODEL.onnx [--trials 100000] [--repeat 3]

Builds a big store from a real one: STORE's sessions are copied (tasks, trials, traces and
all) under new session ids until the store holds at least `--trials` trials, in a temporary
folder. Then times what a `bcd` tune of MODEL does at its start, on that store:

- gather: list the sessions on this target, read their tasks with their best latencies, find
  the most similar remembered tasks of every task of MODEL (`preview_memory`);
- programs: the first round's remembered programs of every task (`TuningMemory.programs`);
- pretrain: the cost model's pre-training on the remembered trials (`pretrain_from_memory`).

Model import and task extraction are not timed (they do not depend on the store). Run it on
an idle machine; it prints one line per step (median and worst of `--repeat`).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tvm.s_tir import meta_schedule as ms

from bcd_core.memory.pretrain import pretrain_from_memory
from bcd_core.memory.recall import preview_memory
from bcd_core.target import host_core_count, host_target, target_key
from bcd_core.tuning.run import prepare_model

SESSION_COLUMNS = "model_path, model_name, model_hash, target, target_key, strategy, settings, tool_version, "
SESSION_COLUMNS += "started_at, ended_at, status, elapsed_s, trials_done, estimated_latency_s, bookkeeping_s"
TASK_COLUMNS = "idx, name, weight, flops, shapes, dtypes, operator_key, sketch_key, num_sketches, cluster_id, "
TASK_COLUMNS += "cluster_key, is_representative, workload_id, budget, status, diffused_best_s, fallback"
TRIAL_COLUMNS = "workload_id, round, elapsed_s, latency_s, run_secs, error, trace, args_info, target_key, "
TRIAL_COLUMNS += "origin, adaptation, predicted_score, created_at"


def copy_session(db: sqlite3.Connection, session_id: int) -> None:
    """A new session with the same tasks and trials as `session_id`."""
    db.execute(
        f"insert into sessions ({SESSION_COLUMNS}) select {SESSION_COLUMNS} from sessions where id = ?", [session_id]
    )
    new = db.execute("select max(id) from sessions").fetchone()[0]
    db.execute(
        f"insert into tasks (session_id, {TASK_COLUMNS}) select ?, {TASK_COLUMNS} from tasks where session_id = ?",
        [new, session_id],
    )
    db.execute(
        f"insert into trials (session_id, task_id, {TRIAL_COLUMNS}) "
        f"select ?, n.id, {', '.join('t.' + c.strip() for c in TRIAL_COLUMNS.split(','))} "
        "from trials t join tasks o on o.id = t.task_id join tasks n on n.idx = o.idx and n.session_id = ? "
        "where t.session_id = ?",
        [new, new, session_id],
    )


def grow(source: Path, destination: Path, trials: int) -> int:
    shutil.copy(source, destination)
    with sqlite3.connect(destination) as db:
        originals = [row[0] for row in db.execute("select id from sessions")]
        count = db.execute("select count(*) from trials").fetchone()[0]
        while count < trials:
            for session_id in originals:
                copy_session(db, session_id)
            count = db.execute("select count(*) from trials").fetchone()[0]
    return count


def timed(repeat: int, step: Callable[[], object]) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("model")
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    target = host_target()
    tasks = prepare_model(args.model, target).tasks
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.db"
        trials = grow(Path(args.store), big, args.trials)
        key = target_key(target)
        gather = timed(args.repeat, lambda: preview_memory([str(big)], key, "", tasks, lambda text: None))
        memory = gather[2]
        print(f"store: {trials} trials; {len(memory.sessions) if memory else 0} sessions drawn on")
        print(f"gather    median {gather[0]:.2f} s, worst {gather[1]:.2f} s")
        if memory is None:
            return
        programs = timed(args.repeat, lambda: [memory.programs(i, task, 8, set()) for i, task in enumerate(tasks)])
        print(f"programs  median {programs[0]:.2f} s, worst {programs[1]:.2f} s (8 per task, {len(tasks)} tasks)")

        def pretrain() -> tuple[int, float]:
            model = ms.cost_model.XGBModel(num_warmup_samples=100, num_tuning_cores=host_core_count())
            return pretrain_from_memory(memory, tasks, target, model)

        trained = timed(args.repeat, pretrain)
        print(f"pretrain  median {trained[0]:.2f} s, worst {trained[1]:.2f} s ({trained[2][0]} trials)")


if __name__ == "__main__":
    main()
