"""Whether one task's measured programs diffuse into another task of the same model, clustered
together or not: which of the destination's sketches matches, how many valid programs come out,
and (if any) their best latency against the destination's best in the run.

`--by-decisions` matches a sketch by its sampling instructions alone (kinds, and the number of
factors of each tiling) instead of BCD's whole-structure match, so that a task with another
elementwise epilogue (more inlined blocks) can take the same decisions: an experiment. The
tuner's `--cluster-mode loose-sketch` matches on the whole structure without inlinings
instead (bcd_core.tasks.without_inlining).

    python experiments/history/cross_task_diffusion.py ../shared/models/bert_mini_l4_h256.onnx \\
        docs/bench/bert_mini-32f/bcd.db fused_matmul4_add2_add1 fused_matmul3_add3_divide_erf_add4_multiply1_multiply2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from diffusion_replay import Timer, newest_bcd_session, task_pool
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.schedule import Schedule, Trace
from tvm.target import Target

from bcd_core import diffusion
from bcd_core.diffusion import diffuse
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.target import host_core_count
from bcd_core.tuning.session import prepare_model, settings_of_session
from bcd_core.tuning.settings import TuneSettings

PRIOR_TOP_K = 8


def decision_skeleton(trace: Trace) -> list[tuple[str, int | None]]:
    """The sampling instructions' kinds, with each tiling's number of factors."""
    steps = diffusion.sampling_decisions(trace.simplified(remove_postproc=True))
    return [(kind, int(attrs[0]) if kind == "SamplePerfectTile" else None) for kind, _, attrs in steps]


def match_by_decisions(prior: Trace, sketches: list[Schedule]) -> int | None:
    wanted = decision_skeleton(prior)
    return next((i for i, sketch in enumerate(sketches) if decision_skeleton(sketch.trace) == wanted), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("db", type=Path, help="a bench folder's bcd.db")
    parser.add_argument("source", help="the task whose programs are diffused")
    parser.add_argument("destination", help="the task they are diffused into")
    parser.add_argument("--source-rounds", type=int, help="only the source's programs of its first K rounds")
    parser.add_argument("--by-decisions", action="store_true", help="match sketches by sampling instructions only")
    args = parser.parse_args()
    if args.by_decisions:
        diffusion.matching_sketch = match_by_decisions
    store = RecordStore(args.db)
    session = newest_bcd_session(store)
    settings = settings_of_session(session, TuneSettings())
    target = Target(json.loads(session["target"]))
    prepared = prepare_model(args.model, target, cluster_mode=settings.cluster_mode)
    rows = {row["name"]: row for row in store.tasks(session["id"])}
    database = SqliteDatabase(store, session["target_key"])
    pool = task_pool(store, database, session["id"], rows[args.source], args.source_rounds)
    destination = next(task for task in prepared.tasks if task.name == args.destination)
    context = ms.TuneContext(
        mod=destination.mod, target=target, space_generator="post-order-apply", num_threads=host_core_count()
    )
    sketches = list(context.generate_design_space())
    found = diffuse(context, sketches, pool[:PRIOR_TOP_K], settings.batch_size // 2, seed=1, spread=True)
    print(
        f"{args.source} -> {args.destination}: {len(sketches)} sketches, matched {found.matched_sketch}, "
        f"{len(found.programs)} valid programs, {found.rejected} rejected"
    )
    if not found.programs:
        return
    destination_id = rows[args.destination]["id"]
    trials = store.trials(session["id"])
    run_best = min(t["latency_s"] for t in trials if t["task_id"] == destination_id and t["latency_s"])
    timer = Timer(settings, target)
    try:
        latencies = [latency for latency in timer.time(found.programs) if latency is not None]
    finally:
        timer.close()
    print(f"best diffused {min(latencies) * 1e3:.3f} ms, the run's best {run_best * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
