"""Would a member's seeded round do better as a local search around its diffused programs?

In ResNet-18 run 32g, the members' seeded rounds (an evolutionary search from the diffused
programs, picks by the shared cost model) measured batches 3-8x slower on average than the
diffused batch they started from, and rarely beat it. This probe replays, for every diffused
member of a finished BCD run, what the run had before that seeded round (the member's
diffused programs) and times a half batch of single mutations of them instead: MetaSchedule's
own mutators, drawn with the design space's probabilities, post-processed, distinct from
everything the run measured for the member. Printed per member (ms per call): the best and
mean of the diffused batch, of the run's seeded round, and of the mutants. The mutators draw
from MetaSchedule's own random state (`Mutator.apply` takes none), so repeated runs differ.

    python experiments/history/local_search_probe.py ../shared/models/resnet18.onnx docs/bench/resnet18-32g/bcd.db

Nothing else should run meanwhile (it times programs).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

import tvm
import tvm_ffi
from diffusion_replay import Timer, distinct_best_first, keep_if_new, newest_bcd_session
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core import diffusion
from bcd_core.diffusion import DiffusedProgram
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_core_count
from bcd_core.tuning.session import prepare_model, settings_of_session
from bcd_core.tuning.settings import TuneSettings

PARENTS = 4  # mutate the member's best few diffused programs
ATTEMPTS_PER_MUTANT = 20


def mutants(context: ms.TuneContext, parents: list, count: int, seen: set[int], rng: random.Random) -> list:
    """Up to `count` distinct valid single mutations of `parents` ((trial id, trace) pairs)."""
    probs = dict(context.space_generator.mutator_probs)
    mutators, weights = list(probs), [float(p) for p in probs.values()]
    postprocs = list(context.space_generator.postprocs)
    found: list[DiffusedProgram] = []
    for _ in range(count * ATTEMPTS_PER_MUTANT):
        if len(found) == count:
            break
        source_id, parent = parents[rng.randrange(len(parents))]
        mutated = rng.choices(mutators, weights)[0].apply(parent)
        if mutated is None:
            continue
        sch = tvm.s_tir.Schedule(context.mod)
        try:
            mutated.apply_to_schedule(sch, remove_postproc=True)
        except Exception:  # noqa: BLE001 - an invalid mutation is just not a candidate
            continue
        if diffusion.postprocess(sch, postprocs):
            keep_if_new(DiffusedProgram(sch, source_id, "mutant"), seen, found)
    return found


def summary(latencies: list[float]) -> str:
    if not latencies:
        return f"{'-':>15}"
    return f"{min(latencies) * 1e3:7.3f}/{statistics.mean(latencies) * 1e3:7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("db", type=Path, help="a bench folder's bcd.db")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    store = RecordStore(args.db)
    session = newest_bcd_session(store)
    settings = settings_of_session(session, TuneSettings())
    target = Target(json.loads(session["target"]))
    database = SqliteDatabase(store, session["target_key"])
    prepared = prepare_model(args.model, target, cluster_mode=settings.cluster_mode)
    mods = {task.name: task.mod for task in prepared.tasks}
    trials = store.trials(session["id"])
    count = max(1, settings.batch_size // 2)
    timer = Timer(settings, target)
    print(f"{'member':32s} {'diffused best/mean':>18} {'seeded round':>18} {'mutants':>18}  (ms per call)")
    wins = 0
    members = 0
    try:
        for task in store.tasks(session["id"]):
            own = [t for t in trials if t["task_id"] == task["id"]]
            diffused = [t for t in own if t["origin"] == "diffused" and t["latency_s"]]
            if not diffused:
                continue
            first_round = min(t["round"] for t in diffused)
            diffused = [t for t in diffused if t["round"] == first_round]
            later = sorted({t["round"] for t in own if t["origin"] == "evolved" and t["round"] > first_round})
            seeded = [t["latency_s"] for t in own if later and t["round"] == later[0] and t["latency_s"]]
            context = ms.TuneContext(
                mod=mods[task["name"]],
                target=target,
                space_generator="post-order-apply",
                num_threads=host_core_count(),
            )
            context.generate_design_space()  # initializes the space's mutators and post-processors
            parents = distinct_best_first(diffused, database)[:PARENTS]
            measured = {
                int(tvm_ffi.structural_hash(database.record_from_row(t).as_measure_candidate().sch.mod)) for t in own
            }
            programs = mutants(context, parents, count, measured, random.Random(args.seed * 1000 + task["idx"]))
            timed = [lat for lat in timer.time(programs) if lat is not None]
            own_latencies = [t["latency_s"] for t in diffused]
            print(
                f"{task['name'][:32]:32s} {summary(own_latencies):>18} {summary(seeded):>18} "
                f"{summary(timed):>18}  ({len(programs)} mutants)",
                flush=True,
            )
            if timed and seeded:
                members += 1
                wins += min(timed) < min(seeded)
    finally:
        timer.close()
    print(f"mutants' best beat the seeded round's best for {wins} of {members} members")


if __name__ == "__main__":
    main()
