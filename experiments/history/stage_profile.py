"""Where one tune's wall time goes, by MetaSchedule stage (its own Profiler): builds, runs,
evolutionary search, cost-model prediction and updates.

    python experiments/history/stage_profile.py ../shared/models/bert_mini_l4_h256.onnx --strategy bcd --db /tmp/p.db

Uses the same settings as `bcd tune` (host CPU target, 2 cores unless --cores says otherwise).
Run it alone: the figures are wall-clock.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tvm.s_tir import meta_schedule as ms

from bcd_core import cli
from bcd_core.target import host_target
from bcd_core.tuning.tune import run_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--strategy", choices=["bcd", "metaschedule"], default="bcd")
    parser.add_argument("--db", type=Path, required=True, help="a new store (it must not exist)")
    parser.add_argument("--trials-per-task", type=int, default=32)
    parser.add_argument("--trials-per-round", type=int, default=16)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if args.db.exists():
        parser.error(f"{args.db} exists: profile a fresh tune, not a resumed one")
    tune_args = cli.build_parser().parse_args(
        ["tune", str(args.model), "--strategy", args.strategy, "--db", str(args.db)]
        + ["--trials-per-task", str(args.trials_per_task), "--trials-per-round", str(args.trials_per_round)]
    )
    started = time.perf_counter()
    with ms.Profiler() as profiler:
        run = run_session(args.model, args.db, host_target(args.cores), cli.settings_from_args(tune_args))
    print(f"{args.strategy}: {run.trials_done} trials in {time.perf_counter() - started:.1f} s (import included)")
    print(profiler.table())


if __name__ == "__main__":
    main()
