"""How well diffusion variants carry a representative's programs to its members, replayed.

For every cluster of a finished BCD run, the prior pool is what the run had when it diffused:
the representative's records measured before any member of the cluster was diffused (its phase
1). Each variant diffuses a member's half batch of programs from that pool into every member,
and the programs are built and timed like a tuning round (a module two variants share is timed
once). Printed per member: each variant's best diffused latency, divided by the best latency
the run found for that member by the end (1.0 = diffusion alone found the run's final program);
then the geometric mean of those ratios per variant, and how many members each variant got
within 1.5x of the run's final best. The `ranked-*` variants let a cost model, trained on
every trial the run had measured before the cluster's first diffusion, pick the half batch
from a wider pool (experiments: the tuner does not have them; docs/history/benchmarks-until-2026-11-24.md).
`--prior-task TASK` adds a variant that diffuses from another task of the cluster (every
program the run measured for it, or its first K rounds with `--prior-rounds K`), as if it had
been the representative; `--prior-rounds K` alone adds one that diffuses from the
representative's first K rounds only.

    python experiments/history/diffusion_replay.py ../shared/models/squeezenet1_1.onnx docs/bench/squeezenet-32j/bcd.db

Nothing else should run meanwhile (it times programs). A SqueezeNet run takes 3-5 minutes on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tvm_ffi
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core import diffusion
from bcd_core.cost_model.xgb import SharedXGBModel
from bcd_core.diffusion import DiffusedProgram, diffuse
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_core_count
from bcd_core.tuning.measure import make_builder, make_runner
from bcd_core.tuning.session import prepare_model, settings_of_session
from bcd_core.tuning.settings import TuneSettings

# name: (prior programs, spread candidates over programs first)
VARIANTS: dict[str, tuple[int, bool]] = {
    "top-2": (2, False),
    "top-4 spread": (4, True),
    "top-8 spread": (8, True),
    # every adaptation of the top 16, ranked by a cost model trained on what the run had
    # measured before the cluster's first diffusion; the model's best half batch is timed
    "ranked-16": (16, True),
    # as ranked-16, from the top 8, plus tilings that put a member's whole extent at one
    # tiling level where the prior's factors do not divide it (e.g. 13 against 27)
    "ranked-levels": (8, True),
}
# --prior-task: top 8, spread, from every program the run measured for another task of the
# cluster, as if that task had been the representative
PRIOR_TASK = "prior-task"
# --prior-rounds K: top 8, spread, from the representative's first K rounds only
PRIOR_ROUNDS = "prior-rounds"
RANKED = "ranked"
LEVEL_VARIANTS_PER_PRIOR = 16
NEAR_FINAL = 1.5
original_adapt_tile = diffusion.adapt_tile


def newest_bcd_session(store: RecordStore) -> dict[str, Any]:
    sessions = [s for s in store.sessions() if s["strategy"] == "bcd"]
    if not sessions:
        sys.exit("no BCD session in this store")
    return sessions[-1]


def first_diffusion_id(trials: list[dict], members: list[dict]) -> int | None:
    """The id of the first diffused trial of any of `members` (the cluster's first diffusion)."""
    member_ids = {m["id"] for m in members}
    return min((t["id"] for t in trials if t["task_id"] in member_ids and t["origin"] == "diffused"), default=None)


def distinct_best_first(rows: list[dict], database: SqliteDatabase) -> list:
    """(trial id, trace) of each distinct program among `rows`, fastest first."""
    pool, seen = [], set()
    for row in sorted(rows, key=lambda t: (t["latency_s"], t["id"])):
        if row["trace"] not in seen:
            seen.add(row["trace"])
            pool.append((row["id"], database.record_from_row(row).trace))
    return pool


def prior_pool(
    store: RecordStore,
    database: SqliteDatabase,
    session_id: int,
    rep: dict,
    members: list[dict],
    rounds: int | None = None,
) -> list:
    """The representative's distinct programs, best first, measured before the first diffusion
    (in its first `rounds` rounds only, if given)."""
    trials = store.trials(session_id)
    first_diffused = first_diffusion_id(trials, members)
    if first_diffused is None:
        return []
    rows = [t for t in trials if t["task_id"] == rep["id"] and t["id"] < first_diffused and t["latency_s"]]
    return distinct_best_first(first_rounds(rows, rounds), database)


def task_pool(
    store: RecordStore, database: SqliteDatabase, session_id: int, task: dict, rounds: int | None = None
) -> list:
    """Every distinct program the run measured for `task` (in its first `rounds` rounds, if
    given), best first: a would-be prior."""
    rows = [t for t in store.trials(session_id) if t["task_id"] == task["id"] and t["latency_s"]]
    return distinct_best_first(first_rounds(rows, rounds), database)


def first_rounds(rows: list[dict], rounds: int | None) -> list[dict]:
    """The rows of the first `rounds` rounds among them (all if None)."""
    if rounds is None:
        return rows
    kept = sorted({t["round"] for t in rows})[:rounds]
    return [t for t in rows if t["round"] in kept]


def model_before(
    store: RecordStore,
    database: SqliteDatabase,
    session_id: int,
    members: list[dict],
    mods: dict[str, Any],
    target: Target,
    settings: TuneSettings,
) -> SharedXGBModel:
    """A shared model trained on every trial the run measured before the members' first
    diffusion (every task's, as the run's model had them)."""
    trials = store.trials(session_id)
    first = first_diffusion_id(trials, members)
    assert first is not None, "members without a diffused trial"
    names = {row["id"]: row["name"] for row in store.tasks(session_id)}
    model = SharedXGBModel(num_threads=host_core_count(), seed=settings.seed)
    by_task: dict[int, list[dict]] = defaultdict(list)
    for t in trials:
        if t["id"] < first:
            by_task[t["task_id"]].append(t)
    for task_id, rows in by_task.items():
        context = ms.TuneContext(mod=mods[names[task_id]], target=target, task_name=names[task_id])
        candidates = [database.record_from_row(r).as_measure_candidate() for r in rows]
        model.pretrain(context, candidates, [r["latency_s"] for r in rows])
    model.train_full()
    return model


def level_tilings(factors: list[int], extent: int, max_innermost: int | None) -> list[list[int]]:
    """keep and scale, plus the whole extent at each level, where the factors do not fit."""
    if math.prod(factors) == extent:
        return [list(factors)]
    options = [original_adapt_tile(factors, extent, mode, max_innermost) for mode in ("keep", "scale")]
    for level in range(len(factors)):
        if level == len(factors) - 1 and max_innermost and extent > max_innermost:
            continue
        options.append([extent if i == level else 1 for i in range(len(factors))])
    return [list(t) for t in dict.fromkeys(tuple(t) for t in options)]


@contextmanager
def level_adaptation() -> Iterator[None]:
    """Diffusion's "random" mode draws each non-fitting tile from level_tilings instead
    (an experiment: the tuner does not have it)."""

    def adapt(factors, extent, mode, max_innermost=None, rng=None):  # noqa: ANN001, ANN202
        if mode != "random":
            return original_adapt_tile(factors, extent, mode, max_innermost, rng)
        return (rng or random.Random(0)).choice(level_tilings([int(f) for f in factors], extent, max_innermost))

    diffusion.adapt_tile = adapt
    try:
        yield
    finally:
        diffusion.adapt_tile = original_adapt_tile


def level_variants(context: ms.TuneContext, sketches: list, pool: list, seed: int) -> list[DiffusedProgram]:
    """Every diffusion of `pool`, plus LEVEL_VARIANTS_PER_PRIOR level tilings of each program."""
    programs = diffuse(context, sketches, pool, 4 * len(pool), seed=seed, spread=True).programs
    seen = {int(tvm_ffi.structural_hash(p.schedule.mod)) for p in programs}
    with level_adaptation():
        for attempt in range(LEVEL_VARIANTS_PER_PRIOR):
            for source_id, prior in pool:
                index = diffusion.matching_sketch(prior, sketches)
                if index is None:
                    continue
                rng = random.Random(seed * 1000 + attempt)
                try:
                    sch = diffusion.replay(context.mod, sketches[index].trace, prior, "random", rng)
                except Exception:  # noqa: BLE001 - an invalid replay is just not a candidate
                    continue
                if diffusion.postprocess(sch, list(context.space_generator.postprocs)):
                    keep_if_new(DiffusedProgram(sch, source_id, "levels"), seen, programs)
    return programs


def keep_if_new(program: DiffusedProgram, seen: set[int], programs: list[DiffusedProgram]) -> None:
    """Append `program` unless a program with the same module is in `seen`."""
    key = int(tvm_ffi.structural_hash(program.schedule.mod))
    if key not in seen:
        seen.add(key)
        programs.append(program)


def ranked(model: SharedXGBModel, context: ms.TuneContext, programs: list, count: int) -> list:
    """The `count` programs the model scores highest."""
    if not programs:
        return []
    scores = model.predict(context, [p.candidate() for p in programs])
    order = sorted(range(len(programs)), key=lambda i: -scores[i])
    return [programs[i] for i in order[:count]]


class Timer:
    """Builds and times programs like a tuning round; each module once."""

    def __init__(self, settings: TuneSettings, target: Target) -> None:
        self.target = target
        self.device = "cpu" if target.kind.name == "llvm" else target.kind.name
        self.builder = make_builder(settings, target)
        self.runner = make_runner(settings)
        self.latency: dict[int, float | None] = {}

    def time(self, programs: list[DiffusedProgram]) -> list[float | None]:
        keys = [int(tvm_ffi.structural_hash(p.schedule.mod)) for p in programs]
        fresh = {key: p for key, p in zip(keys, programs) if key not in self.latency}
        items = list(fresh.items())
        built = self.builder.build([ms.builder.BuilderInput(p.schedule.mod, self.target) for _, p in items])
        inputs, waiting = [], []
        for (key, program), result in zip(items, built):
            if result.error_msg is not None:
                self.latency[key] = None
                continue
            args = program.candidate().args_info
            inputs.append(ms.runner.RunnerInput(result.artifact_path, self.device, args))
            waiting.append(key)
        for key, future in zip(waiting, self.runner.run(inputs) if inputs else []):
            result = future.result()
            secs = [float(s) for s in result.run_secs] if result.error_msg is None else []
            self.latency[key] = sum(secs) / len(secs) if secs else None
        return [self.latency[key] for key in keys]

    def close(self) -> None:
        self.builder.close()


def replay(
    model: Path,
    db: Path,
    variants: dict[str, tuple[int, bool]],
    only: list[str] | None = None,
    prior_task: str | None = None,
    prior_rounds: int | None = None,
) -> dict[str, Any]:
    store = RecordStore(db)
    session = newest_bcd_session(store)
    settings = settings_of_session(session, TuneSettings())
    target = Target(json.loads(session["target"]))
    database = SqliteDatabase(store, session["target_key"])
    prepared = prepare_model(model, target, cluster_mode=settings.cluster_mode)
    mods = {task.name: task.mod for task in prepared.tasks}
    rows = store.tasks(session["id"])
    final_best: dict[int, float] = {}
    for trial in store.trials(session["id"]):
        if trial["latency_s"]:
            final_best[trial["task_id"]] = min(trial["latency_s"], final_best.get(trial["task_id"], math.inf))
    clusters: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        clusters[row["cluster_key"]].append(row)
    timer = Timer(settings, target)
    model_for: dict[str, SharedXGBModel] = {}
    count = max(1, settings.batch_size // 2)
    results: list[dict[str, Any]] = []
    try:
        for key, cluster in clusters.items():
            rep = next((r for r in cluster if r["is_representative"]), None)
            diffused = [r for r in cluster if r is not rep and r["diffused_best_s"] is not None]
            members = [m for m in diffused if not only or m["name"] in only]  # the pool is the cluster's
            if prior_task:
                would_be = next((r for r in cluster if r["name"] == prior_task), None)
                if would_be is None:
                    continue
                members = [m for m in members if m is not would_be]
                task_prior = task_pool(store, database, session["id"], would_be, prior_rounds)
            if rep is None or not members:
                continue
            pool = prior_pool(store, database, session["id"], rep, diffused)
            if PRIOR_ROUNDS in variants:
                short_pool = prior_pool(store, database, session["id"], rep, diffused, prior_rounds)
            if any(name.startswith(RANKED) for name in variants):
                model_for[key] = model_before(store, database, session["id"], diffused, mods, target, settings)
            for member in members:
                context = ms.TuneContext(
                    mod=mods[member["name"]],
                    target=target,
                    space_generator="post-order-apply",
                    num_threads=host_core_count(),
                )
                sketches = list(context.generate_design_space())
                line = {"member": member["name"], "cluster": key, "final_best_s": final_best.get(member["id"])}
                for name, (top_k, spread) in variants.items():
                    if name == PRIOR_ROUNDS:
                        found = diffuse(context, sketches, short_pool[:top_k], count, seed=member["idx"], spread=spread)
                        programs = found.programs
                    elif name == PRIOR_TASK:
                        found = diffuse(context, sketches, task_prior[:top_k], count, seed=member["idx"], spread=spread)
                        programs = found.programs
                    elif name == "ranked-levels":
                        candidates = level_variants(context, sketches, pool[:top_k], member["idx"])
                        programs = ranked(model_for[key], context, candidates, count)
                    elif name.startswith(RANKED):
                        found = diffuse(context, sketches, pool[:top_k], 4 * top_k, seed=member["idx"], spread=spread)
                        programs = ranked(model_for[key], context, found.programs, count)
                    else:
                        found = diffuse(context, sketches, pool[:top_k], count, seed=member["idx"], spread=spread)
                        programs = found.programs
                    latencies = [lat for lat in timer.time(programs) if lat is not None]
                    line[name] = min(latencies, default=None)
                results.append(line)
                cells = " ".join(f"{_ratio(line[n], line['final_best_s']):>14}" for n in variants)
                print(f"{member['name'][:28]:28s} {cells}", flush=True)
    finally:
        timer.close()
    return {"db": str(db), "members": results, "summary": summarize(results, variants)}


def _ratio(latency: float | None, final: float | None) -> str:
    return "failed" if latency is None or not final else f"{latency / final:.2f}"


def summarize(results: list[dict[str, Any]], variants: dict[str, Any]) -> dict[str, dict[str, float]]:
    summary = {}
    for name in variants:
        ratios = [r[name] / r["final_best_s"] for r in results if r[name] and r["final_best_s"]]
        failed = sum(1 for r in results if not r[name])
        geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
        near = sum(1 for x in ratios if x <= NEAR_FINAL)
        summary[name] = {"geomean_ratio": geomean, "within_1.5x": near, "failed": failed, "members": len(results)}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("db", type=Path, help="a bench folder's bcd.db")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--only", nargs="+", metavar="MEMBER", help="replay these members only")
    parser.add_argument(
        "--prior-task",
        metavar="TASK",
        help="add a variant diffusing from TASK's programs (the whole run's) instead of the representative's",
    )
    parser.add_argument(
        "--prior-rounds",
        type=int,
        metavar="K",
        help="add a variant diffusing from the representative's first K rounds (with --prior-task: TASK's)",
    )
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in args.variants}
    if args.prior_rounds and not args.prior_task:  # with --prior-task, it limits that task's pool
        variants[PRIOR_ROUNDS] = (8, True)
    if args.prior_task:
        variants[PRIOR_TASK] = (8, True)
    print(f"{'member':28s} " + " ".join(f"{n:>14}" for n in variants))
    figures = replay(args.model, args.db, variants, args.only, args.prior_task, args.prior_rounds)
    for name, s in figures["summary"].items():
        print(
            f"{name:14s} geometric mean best-diffused / final-best {s['geomean_ratio']:.2f}, "
            f"within {NEAR_FINAL}x: {s['within_1.5x']}/{s['members']}, no valid program: {s['failed']}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
