"""Where a tune's time goes, stock MetaSchedule against BCD, per trial.

    python experiments/round_profile.py MODEL OUT [--trials-per-task 8] [--layout nchw] [--seed 0]
        [--strategies metaschedule,bcd]

Runs one tune per strategy under cProfile, each in a fresh store under OUT (stock first), and
prints, per strategy, seconds and seconds per trial in what every round does: the search's
candidate generation (MetaSchedule's evolution, called from C++ into our search wrappers), the
cost model's training and prediction, the database's methods MetaSchedule calls, waiting for
builds and runs, recording a batch, diffusion and the scheduler's choice. The profiles are kept
as OUT/STRATEGY.prof for `python -m pstats`. Run on an idle machine: cProfile slows Python, not
TVM's C++, so the split is honest and the totals are a little high on both sides alike.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from pathlib import Path

from bcd_core.target import host_target
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

# (what, file part, function name): cumulative seconds of the matching functions.
PHASES = (
    ("candidate generation (evolution)", "tuning/bcd/search.py", "generate_measure_candidates"),
    ("candidate generation (evolution)", "tuning/metaschedule.py", "generate_measure_candidates"),
    ("cost model: training", "cost_model/xgb_model.py", "update"),
    ("cost model: prediction", "cost_model/xgb_model.py", "predict"),
    ("cost model: features", "feature_extractor", "extract_from"),
    ("database: top-k", "records/database.py", "get_top_k"),
    ("database: has workload", "records/database.py", "has_workload"),
    ("database: commit workload", "records/database.py", "commit_workload"),
    ("database: commit record", "records/database.py", "commit_tuning_record"),
    ("builder", "measure", "build"),
    ("runner: waiting on results", "runner", "result"),
    ("recording a batch", "tuning/run.py", "record_batch"),
    ("diffusion into a batch", "tuning/bcd/plan.py", "mix_in_diffused"),
    ("first rounds (ranked sample)", "tuning/bcd/plan.py", "first_round"),
    ("scheduler's choice", "tuning/bcd/scheduler.py", "next_task_id"),
)


def phase_seconds(stats: pstats.Stats) -> dict[str, float]:
    totals: dict[str, float] = {}
    for (path, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for what, part, function in PHASES:
            if part in path and name == function:
                totals[what] = totals.get(what, 0.0) + cumulative
    return totals


def profile_tune(model: str, out: Path, strategy: str, args: argparse.Namespace) -> tuple[dict[str, float], int, float]:
    settings = TuneSettings(
        strategy=strategy,
        trials_per_task=args.trials_per_task,
        trials_per_round=args.trials_per_round,
        seed=args.seed,
        conv_layout=args.layout,
    )
    profiler = cProfile.Profile()
    profiler.enable()
    run = run_session(model, out / f"{strategy}.db", host_target(), settings, new_session=True)
    profiler.disable()
    profiler.dump_stats(out / f"{strategy}.prof")
    extractor = getattr(run.cost_model, "extractor", None)
    if hasattr(extractor, "hits"):
        print(f"{strategy}: features of {extractor.extracted} programs extracted, {extractor.hits} reused")
    return phase_seconds(pstats.Stats(profiler)), run.trials_done, run.elapsed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--trials-per-task", type=int, default=8)
    parser.add_argument("--trials-per-round", type=int, default=8)
    parser.add_argument("--layout", default="nchw", choices=("nchw", "blocked", "winograd"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strategies", default="metaschedule,bcd", help="which tunes to profile, in order")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {strategy: profile_tune(args.model, out, strategy, args) for strategy in args.strategies.split(",")}
    print(f"{'':36} " + "  ".join(f"{s:>24}" for s in results))
    for what in dict.fromkeys(what for what, _, _ in PHASES):
        cells = [
            f"{phases.get(what, 0.0):8.1f} s {phases.get(what, 0.0) / max(trials, 1):7.3f} s/t"
            for phases, trials, _ in results.values()
        ]
        print(f"{what:36} " + "  ".join(f"{c:>24}" for c in cells))
    for strategy, (_, trials, elapsed) in results.items():
        print(f"{strategy}: {trials} trials in {elapsed:.0f} s, {elapsed / max(trials, 1):.3f} s per trial")


if __name__ == "__main__":
    main()
