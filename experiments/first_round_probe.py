"""How good is MetaSchedule's first round for one task, outside any tune?

Builds the task's TuneContext as a tune does (same rand_state rule), runs a fresh
EvolutionarySearch under random scores (what stock's first round robin sees) or draws fresh
random samples (the random half of `bcd`'s ranked first round), times each pick alone on the
idle machine, and prints, per seed, the best and how many ran under `--under` us.

    python experiments/first_round_probe.py MODEL TASK_NAME [--seeds 0 1 2] [--way evolved|sampled]

Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse

import tvm
from e2e_gap import library_us
from tvm.s_tir import meta_schedule as ms

from bcd_core.target import host_target
from bcd_core.tuning.first_round import sample_population
from bcd_core.tuning.session import prepare_model, task_context
from bcd_core.tuning.settings import TuneSettings
from bcd_core.untuned import standard_normal_arguments


def picks(task, target, seed: int, way: str, count: int) -> list:
    settings = TuneSettings()  # the search settings a tune uses
    search = ms.search_strategy.EvolutionarySearch(
        population_size=settings.population_size, init_min_unmeasured=settings.init_min_unmeasured
    )
    context = task_context(task, target, search, seed * 1000 + task.index)  # a fresh tune's rand_state
    spaces = context.generate_design_space()
    search.pre_tuning(1000, count, spaces, ms.database.MemoryDatabase(), ms.cost_model.RandomModel(seed=seed))
    try:
        if way == "evolved":
            return [c.sch.mod for c in search.generate_measure_candidates()]
        return [s.mod for s in sample_population(search, settings.population_size)[:count]]
    finally:
        search.post_tuning()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--way", choices=["evolved", "sampled"], default="evolved")
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--under", type=float, default=1000.0)
    args = parser.parse_args()
    target = host_target()
    prepared = prepare_model(args.model, target)
    task = next(t for t in prepared.tasks if t.name == args.task)
    arguments = standard_normal_arguments(task, tvm.cpu())
    for seed in args.seeds:
        times = []
        for mod in picks(task, target, seed, args.way, args.count):
            try:
                times.append(library_us(tvm.compile(mod, target=target).mod, arguments, False, 5))
            except Exception:  # a pick that does not build counts as missing
                continue
        good = sum(t < args.under for t in times)
        print(f"seed {seed} {args.way}: {len(times)} picks, best {min(times):.0f} us, {good} under {args.under:.0f} us")


if __name__ == "__main__":
    main()
