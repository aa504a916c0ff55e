"""Synthetic records stores: a realistic BCD session of any size, written in seconds.

Used to check that viewers (the dashboard, reports) stay fast on big stores without tuning
for days: `experiments/load_bench.py` times the dashboard on 100 000 trials, the tests use smaller
ones. Everything goes through the real schema (`RecordStore`); trials are bulk-inserted in
one transaction, which is what makes 100 000 of them take seconds instead of minutes.

What the session looks like, as the `bcd` strategy writes it: tasks grouped in clusters;
each cluster's representative tuned first, then its best programs diffused into every member
(trials with origin `diffused`, the source trial and the tile adaptation), one member falling
back to a full search; then rounds spread over all tasks until the budget is spent.
Latencies improve over each task's trials with noise, a heavy tail of slow programs and a few
failed builds; a timeline point and a cost-model metrics row per round, as `record_round`
writes them.

Test support, not part of the product: tests import it as `synthetic_store` (tests/ is on
sys.path, see tests/conftest.py). `python tests/synthetic_store.py OUT.db --trials 100000`
writes one from the shell (with bcd installed, as for the tests).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import random
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from bcd_core.records.states import SessionStatus
from bcd_core.records.store import RecordStore, now_iso

TARGET = '{"kind":"llvm","tag":"","keys":["cpu"],"num-cores":2,"mcpu":"znver4"}'
TARGET_KEY = '{"keys": ["cpu"], "kind": "llvm", "mcpu": "znver4", "num-cores": 2, "tag": ""}'
BUILD_TIMEOUT = "build: LocalBuilder: Timeout, killed after 30.0 seconds"
RUN_ERROR = "run: LocalRunner: error: RuntimeError: InternalError: Check failed: ret == 0 (-1 vs. 0)"
ADAPTATIONS = ("copy", "scale", "random")
TILE_FACTORS = (1, 2, 4, 8)
DECISION_POOL = 1024
TRIAL_COLUMNS = (
    "id",
    "session_id",
    "task_id",
    "workload_id",
    "round",
    "elapsed_s",
    "latency_s",
    "run_secs",
    "error",
    "trace",
    "args_info",
    "target_key",
    "origin",
    "source_trial_id",
    "adaptation",
    "predicted_score",
    "created_at",
)
WORKLOAD_BYTES = 60_000  # real workloads are ~80 KB of base64 (a serialized IRModule)
FAILED_FRACTION = 0.02
SLOW_FRACTION = 0.1  # programs far off the trend: bad tiles, cache thrashing
REPRESENTATIVE_ROUND_CAP = 10


@dataclass
class SyntheticSession:
    """What was written, to compare with what a viewer shows."""

    path: Path
    session_id: int
    trials: int
    failed: int
    diffused: int
    rounds: int
    trials_per_task: dict[int, int]  # task index -> trials
    best_per_task: dict[int, float]  # task index -> best latency (s)
    estimated_latency_s: float
    generate_s: float
    model_hash: str = ""
    task_names: dict[int, str] = field(default_factory=dict)


@dataclass
class _Task:
    index: int
    name: str
    weight: int
    flops: float
    shapes: list[list[int]]
    operator_key: str
    cluster_key: str
    cluster_position: int
    is_representative: bool
    floor_s: float  # the best latency the search can reach
    start_ratio: float  # how far above the floor the search starts
    quota: int = 0
    done: int = 0
    best_s: float = math.inf
    row_id: int = 0
    workload_id: int = 0
    args_info: str = ""
    diffused_from: int | None = None
    diffused_best_s: float | None = None
    fallback: bool = False
    top_trials: list[tuple[float, int]] = field(default_factory=list)  # (latency, trial id), best first


def _cluster_sizes(num_tasks: int) -> list[int]:
    """Cluster sizes like a CNN's: a few large families of similar convolutions, then singletons."""
    sizes, left = [], num_tasks
    for size in (6, 5, 4, 4, 3, 2):
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= sizes[-1]
    return sizes + [1] * left


def _make_tasks(num_tasks: int, rng: random.Random) -> list[_Task]:
    tasks: list[_Task] = []
    for position, size in enumerate(_cluster_sizes(num_tasks)):
        operator_key = "conv2d_add_relu" if size > 1 else rng.choice(["dense_add", "max_pool2d", "conv2d_add", "mean"])
        cluster_key = "sk-" + hashlib.sha1(f"{position}".encode()).hexdigest()[:10]
        channels = rng.choice([16, 32, 64, 128, 256])
        for member in range(size):
            index = len(tasks)
            spatial = rng.choice([7, 13, 27, 55])
            out_channels = channels * rng.choice([1, 2, 4])
            flops = float(2 * channels * out_channels * spatial * spatial * 9)
            shapes = [[1, channels, spatial, spatial], [out_channels, channels, 3, 3], [1, out_channels, 1, 1]]
            gflops = rng.uniform(15, 60)  # what a good schedule reaches on a desktop core pair
            tasks.append(
                _Task(
                    index=index,
                    name=f"fused_{operator_key}{index}",
                    weight=rng.choice([1, 1, 1, 2, 3]),
                    flops=flops,
                    shapes=shapes,
                    operator_key=operator_key,
                    cluster_key=cluster_key,
                    cluster_position=position,
                    is_representative=size > 1 and member == 0,
                    floor_s=flops / (gflops * 1e9),
                    start_ratio=rng.uniform(4, 15),
                )
            )
    return tasks


def _trace_template(rng: random.Random) -> tuple[str, int]:
    """A MetaSchedule trace of a tiled conv2d (instructions as MetaSchedule serializes them):
    the instructions are shared, the decisions (tile sizes, unroll) vary per trial.
    Returns the JSON of the instructions and how many tile decisions the trace has."""
    insts: list[list] = [
        ["GetSBlock", [], ["pad_temp", "main"], ["b0"]],
        ["GetSBlock", [], ["conv2d_nchw", "main"], ["b1"]],
        ["GetSBlock", [], ["T_add", "main"], ["b2"]],
        ["GetSBlock", [], ["root", "main"], ["b3"]],
        ["ComputeInline", ["b2"], [], []],
        ["Annotate", ["b1", '"SSRSRS"'], ["meta_schedule.tiling_structure"], []],
        ["GetLoops", ["b1"], [], [f"l{i}" for i in range(4, 11)]],
    ]
    tiles = 0
    for loop in range(4, 11):
        parts = 4 if loop < 8 else 2
        names = [f"v{loop}_{p}" for p in range(parts)]
        insts.append(["SamplePerfectTile", [f"l{loop}"], [parts, 64], names])
        insts.append(["Split", [f"l{loop}", *names], [True, False], [f"l{loop}_{p}" for p in range(parts)]])
        tiles += 1
    insts += [
        ["Annotate", ["b3", 32], ["meta_schedule.parallel"], []],
        ["Annotate", ["b3", 64], ["meta_schedule.vectorize"], []],
        ["SampleCategorical", [], [[0, 16, 64, 512], [0.25, 0.25, 0.25, 0.25]], ["v55"]],
        ["Annotate", ["b3", "v55"], ["meta_schedule.unroll_explicit"], []],
        ["SampleComputeLocation", ["b0"], [], ["l56"]],
        ["ComputeAt", ["b0", "l56"], [1, -1], []],
        ["EnterPostproc", [], [], []],
    ]
    for block in range(3):  # the post-processors' rewrite of each block's loops
        loops = [f"l{block}_{i}" for i in range(rng.choice([4, 8, 20]))]
        insts += [
            ["GetLoops", [f"b{57 + block}"], [], loops],
            ["Fuse", loops[:3], [1], [f"f{block}"]],
            ["Parallel", [f"f{block}"], [], []],
            ["Vectorize", [loops[-1]], [], []],
        ]
    return json.dumps(insts), tiles


def generate_store(
    path: str | Path,
    trials: int = 100_000,
    tasks: int = 30,
    trials_per_round: int = 16,
    seed: int = 0,
) -> SyntheticSession:
    """Write a new records store at `path` holding one completed `bcd` session of `trials` trials."""
    started = time.perf_counter()
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; the generator writes new stores only")
    store = RecordStore(path)
    try:
        session = _generate_session(store, trials, tasks, trials_per_round, random.Random(seed))
        # Fold the bulk write into the main file: a viewer opens a checkpointed store, as after a real tune.
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    session.path = path
    session.generate_s = time.perf_counter() - started
    return session


def _generate_session(
    store: RecordStore, trials: int, num_tasks: int, trials_per_round: int, rng: random.Random
) -> SyntheticSession:
    # The order of the steps is the order of the draws from `rng`: a seed gives the same store.
    if trials < num_tasks:
        raise ValueError(f"need at least one trial per task ({num_tasks} tasks), got {trials}")
    tasks = _make_tasks(num_tasks, rng)
    model_hash = hashlib.sha256(f"synthetic-{num_tasks}-{rng.random()}".encode()).hexdigest()
    per_task_setting = math.ceil(trials / num_tasks)
    session_id = _create_session(store, model_hash, trials_per_round, per_task_setting)
    _add_tasks(store, session_id, tasks, per_task_setting, rng)
    fallback_member = _assign_quotas(tasks, trials, rng)
    rounds = _schedule(tasks, trials_per_round, rng)
    trace_prefix, decision_pool = _trace_parts(rng)
    first_id = int(store.db.execute("select coalesce(max(id), 0) from trials").fetchone()[0]) + 1
    batch = _Batch(session_id, first_id, trace_prefix, decision_pool)
    for number, (task, size, diffuse) in enumerate(rounds, start=1):
        _measure_round(batch, tasks, number, task, size, diffuse, trials, rng)
    estimate = sum(t.weight * t.best_s for t in tasks)
    with store.transaction() as db:
        _insert_rows(db.conn, batch)
        _finish_tasks(db, tasks)
        _insert_events(db.conn, batch, num_tasks, fallback_member)
        db["sessions"].update(
            session_id,
            {
                "status": SessionStatus.COMPLETED,
                "ended_at": now_iso(),
                "elapsed_s": batch.elapsed,
                "trials_done": batch.done,
                "estimated_latency_s": estimate,
                "bookkeeping_s": batch.elapsed * 0.02,
            },
        )
    return SyntheticSession(
        path=store.path,
        session_id=session_id,
        trials=batch.done,
        failed=batch.failed,
        diffused=batch.diffused,
        rounds=len(rounds),
        trials_per_task={t.index: t.done for t in tasks},
        best_per_task={t.index: t.best_s for t in tasks},
        estimated_latency_s=estimate,
        generate_s=0.0,
        model_hash=model_hash,
        task_names={t.index: t.name for t in tasks},
    )


@dataclass
class _Batch:
    """The session's rows, gathered in memory for one bulk insert, and its running totals."""

    session_id: int
    first_id: int  # the id the first trial will get
    trace_prefix: str  # every trace starts with the same instructions
    decision_pool: list[str]
    created: str = field(default_factory=now_iso)
    rows: list[tuple] = field(default_factory=list)
    timeline: list[tuple] = field(default_factory=list)
    metrics: list[tuple] = field(default_factory=list)
    elapsed: float = 0.0
    done: int = 0
    failed: int = 0
    diffused: int = 0


def _create_session(store: RecordStore, model_hash: str, trials_per_round: int, per_task_setting: int) -> int:
    settings = {
        "cluster_mode": "sketch",
        "input_shapes": {},
        "seed": 0,
        "strategy": "bcd",
        "trials_per_round": trials_per_round,
        "trials_per_task": per_task_setting,
    }
    return store.create_session(
        model_path="/models/synthetic_cnn.onnx",
        model_hash=model_hash,
        target=TARGET,
        target_key=TARGET_KEY,
        strategy="bcd",
        settings=settings,
    )


def _add_tasks(store: RecordStore, session_id: int, tasks: list[_Task], budget: int, rng: random.Random) -> None:
    """Each task's workload (random bytes of a real workload's size) and its task row."""
    for task in tasks:
        payload = base64.b64encode(rng.randbytes(WORKLOAD_BYTES)).decode()
        shash = str(rng.randrange(10**18, 10**19))
        task.workload_id = store.add_workload(shash, [shash, payload])
        tensors = [*task.shapes, [1, task.shapes[1][0], task.shapes[0][2], task.shapes[0][3]]]
        task.args_info = json.dumps([["TENSOR", "float32", shape] for shape in tensors])
    store.add_tasks(
        session_id,
        [
            {
                "idx": task.index,
                "name": task.name,
                "weight": task.weight,
                "flops": task.flops,
                "shapes": json.dumps(task.shapes),
                "dtypes": json.dumps(["float32"] * len(task.shapes)),
                "operator_key": task.operator_key,
                "sketch_key": task.cluster_key,
                "num_sketches": 3,
                "cluster_id": task.cluster_position,
                "cluster_key": task.cluster_key,
                "is_representative": int(task.is_representative),
                "workload_id": task.workload_id,
                "budget": budget,
                "status": "queued",
                "fallback": 0,
            }
            for task in tasks
        ],
    )
    for row in store.tasks(session_id):
        tasks[row["idx"]].row_id = row["id"]


def _assign_quotas(tasks: list[_Task], trials: int, rng: random.Random) -> _Task | None:
    """Uneven budgets, as the scheduler spends more where the model's latency drops most; and
    the cluster member that falls back to a full search (returned, None without members)."""
    shares = [task.weight * rng.uniform(0.6, 1.4) for task in tasks]
    for task, share in zip(tasks, shares):
        task.quota = max(1, int(trials * share / sum(shares)))
    tasks[0].quota += trials - sum(task.quota for task in tasks)
    members = [t for t in tasks if not t.is_representative and _cluster_size(tasks, t.cluster_key) > 1]
    fallback_member = members[-1] if members else None
    if fallback_member is not None:
        fallback_member.fallback = True
    return fallback_member


def _trace_parts(rng: random.Random) -> tuple[str, list[str]]:
    """The traces' shared instructions (as the start of a JSON list) and a pool of decisions
    (tile sizes, unroll, compute location): varied traces without a json.dumps per trial."""
    instructions, tile_decisions = _trace_template(rng)
    decision_pool = [
        json.dumps(
            [[7 + 2 * i, [rng.choice(TILE_FACTORS) for _ in range(4 if i < 4 else 2)]] for i in range(tile_decisions)]
            + [[24, rng.randrange(4)], [26, rng.randrange(3)]]
        )
        for _ in range(DECISION_POOL)
    ]
    return "[" + instructions + ", ", decision_pool


def _measure_round(
    batch: _Batch,
    tasks: list[_Task],
    number: int,
    task: _Task,
    size: int,
    diffuse: bool,
    trials: int,
    rng: random.Random,
) -> None:
    """One round's trials of one task, then its timeline point and cost-model metrics."""
    batch.elapsed += rng.uniform(2.0, 4.0)  # search, cost-model training and the batch's builds
    source = _best_source(tasks, task) if diffuse else None
    batch_failed = 0
    for _ in range(size):
        batch_failed += _measure_trial(batch, task, number, diffuse, source, rng)
    if diffuse and source is not None:
        task.diffused_from = source[1]
        task.diffused_best_s = task.best_s if task.best_s < math.inf else None
    batch.done += size
    estimate = sum(t.weight * t.best_s for t in tasks) if all(t.best_s < math.inf for t in tasks) else None
    batch.timeline.append(
        (
            batch.session_id,
            number,
            batch.elapsed,
            task.row_id,
            batch.done,
            size,
            batch_failed,
            task.best_s if task.best_s < math.inf else None,
            estimate,
        )
    )
    progress = batch.done / trials  # the shared cost model ranks better as it sees more data
    accuracy = min(0.95, 0.5 + 0.35 * progress + rng.gauss(0, 0.06))
    spearman = max(-1.0, min(1.0, 2 * accuracy - 1 + rng.gauss(0, 0.1)))
    recall = min(1.0, max(0.0, accuracy + rng.gauss(0, 0.15)))
    batch.metrics.append((batch.session_id, number, task.row_id, size, accuracy, spearman, recall))


def _measure_trial(
    batch: _Batch, task: _Task, number: int, diffuse: bool, source: tuple[float, int] | None, rng: random.Random
) -> bool:
    """Add one trial's row; True if it failed."""
    trial_id = batch.first_id + len(batch.rows)
    batch.elapsed += rng.uniform(0.25, 0.9)
    latency = _sample_latency(task, diffuse, rng)
    error = None
    if rng.random() < FAILED_FRACTION:
        error = BUILD_TIMEOUT if rng.random() < 0.7 else RUN_ERROR
        batch.failed += 1
    score = -math.log(latency / task.floor_s) + rng.gauss(0, 0.3)  # the cost model's guess, noisy
    measured = None if error else latency
    trace = batch.trace_prefix + rng.choice(batch.decision_pool) + "]"
    adaptation = rng.choice(ADAPTATIONS) if diffuse else None
    batch.rows.append(
        (
            trial_id,
            batch.session_id,
            task.row_id,
            task.workload_id,
            number,
            batch.elapsed,
            measured,
            None if error else f"[{latency!r}]",
            error,
            trace,
            task.args_info,
            TARGET_KEY,
            "diffused" if diffuse else "evolved",
            source[1] if source else None,
            adaptation,
            score,
            batch.created,
        )
    )
    task.done += 1
    if diffuse:
        batch.diffused += 1
    if measured is not None:
        _remember_best(task, measured, trial_id)
    return error is not None


def _insert_rows(conn: sqlite3.Connection, batch: _Batch) -> None:
    placeholders = ", ".join("?" for _ in TRIAL_COLUMNS)
    conn.executemany(f"insert into trials ({', '.join(TRIAL_COLUMNS)}) values ({placeholders})", batch.rows)
    conn.executemany(
        "insert into timeline (session_id, round, elapsed_s, task_id, trials_done, batch_size, batch_failed,"
        " best_task_latency_s, estimated_latency_s) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        batch.timeline,
    )
    conn.executemany(
        "insert into cost_model_metrics (session_id, round, task_id, samples, pairwise_accuracy, spearman,"
        " topk_recall) values (?, ?, ?, ?, ?, ?, ?)",
        batch.metrics,
    )


def _finish_tasks(db: sqlite_utils.Database, tasks: list[_Task]) -> None:
    for task in tasks:
        db["tasks"].update(
            task.row_id,
            {
                "status": "fallback" if task.fallback else "done",
                "fallback": int(task.fallback),
                "diffused_from_trial_id": task.diffused_from,
                "diffused_best_s": task.diffused_best_s,
            },
        )


def _insert_events(conn: sqlite3.Connection, batch: _Batch, num_tasks: int, fallback_member: _Task | None) -> None:
    elapsed = batch.elapsed
    events = [
        (1.5, "info", None, f"session {batch.session_id} started: {num_tasks} tasks, bcd, llvm znver4 x2"),
        (elapsed * 0.3, "paused", None, "paused"),
        (elapsed * 0.3 + 60, "resumed", None, "resumed"),
    ]
    if fallback_member is not None:
        events.append((elapsed * 0.1, "fallback", fallback_member.row_id, f"{fallback_member.name}: no sketch matched"))
    conn.executemany(
        "insert into events (session_id, elapsed_s, kind, task_id, message) values (?, ?, ?, ?, ?)",
        [(batch.session_id, *event) for event in events],
    )


def _cluster_size(tasks: list[_Task], key: str) -> int:
    return sum(1 for t in tasks if t.cluster_key == key)


def _schedule(tasks: list[_Task], trials_per_round: int, rng: random.Random) -> list[tuple[_Task, int, bool]]:
    """Rounds as (task, trials, diffused?): representatives first, then diffusion into their
    members, then the rest of every task's budget in rounds picked by remaining budget."""
    rounds: list[tuple[_Task, int, bool]] = []
    left = {t.index: t.quota for t in tasks}

    def take(task: _Task, size: int, diffuse: bool = False) -> None:
        size = min(size, left[task.index])
        if size > 0:
            rounds.append((task, size, diffuse))
            left[task.index] -= size

    by_cluster: dict[str, list[_Task]] = {}
    for task in tasks:
        by_cluster.setdefault(task.cluster_key, []).append(task)
    for members in by_cluster.values():
        head = members[0]
        for _ in range(min(len(members), REPRESENTATIVE_ROUND_CAP)):
            take(head, trials_per_round)
        for member in members[1:]:
            if member.fallback:
                take(member, trials_per_round)
            else:  # diffusion drops the candidates that fail the member's post-processors
                take(member, trials_per_round - rng.randrange(0, 4), diffuse=True)
    while True:
        open_tasks = [t for t in tasks if left[t.index] > 0]
        if not open_tasks:
            break
        task = rng.choices(open_tasks, weights=[left[t.index] for t in open_tasks])[0]
        take(task, trials_per_round)
    return rounds


def _best_source(tasks: list[_Task], member: _Task) -> tuple[float, int] | None:
    """The representative's best program so far seeds the member."""
    head = next(t for t in tasks if t.cluster_key == member.cluster_key and t.is_representative)
    return head.top_trials[0] if head.top_trials else None


def _remember_best(task: _Task, latency: float, trial_id: int) -> None:
    task.best_s = min(task.best_s, latency)
    if len(task.top_trials) < 2 or latency < task.top_trials[-1][0]:
        task.top_trials = sorted([*task.top_trials, (latency, trial_id)])[:2]


def _sample_latency(task: _Task, diffuse: bool, rng: random.Random) -> float:
    progress = task.done / max(1, task.quota)
    if diffuse:  # a representative's program adapted to this member: a good start, not the end
        center = task.floor_s * rng.uniform(1.3, 2.5)
    else:
        start = task.start_ratio if task.is_representative or task.fallback else min(task.start_ratio, 3.0)
        center = task.floor_s * (1 + (start - 1) * math.exp(-6 * progress))
    latency = center * (1 + rng.expovariate(4))
    if rng.random() < SLOW_FRACTION:
        latency *= rng.uniform(2, 20)
    return latency


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a synthetic records store with one big BCD session.")
    parser.add_argument("out", help="path of the new .db file")
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    session = generate_store(args.out, trials=args.trials, tasks=args.tasks, seed=args.seed)
    print(
        f"{session.path}: session {session.session_id}, {session.trials} trials ({session.failed} failed, "
        f"{session.diffused} diffused) in {session.rounds} rounds, written in {session.generate_s:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
