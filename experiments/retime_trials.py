"""Were a task's candidates timed slower during a tune than on an idle machine?

Stored latencies are timed while the tuner works beside the runner (builds, the cost
model's training, the next round's search). This compiles a task's trials from one or more
stores (those of its first `--rounds` rounds), times each alone, warm, on an idle machine,
and prints, per store, the median and spread of stored / idle: a strategy whose tuning
work competes more with its runner would show a larger ratio.

    python experiments/retime_trials.py TASK_NAME MODEL STORE [STORE ...] [--rounds 2]

Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import closing
from pathlib import Path

import tvm
from e2e_gap import library_us, open_session, record_library

from bcd_core.records.store import RecordStore
from bcd_core.tasks import extract_tasks
from bcd_core.untuned import standard_normal_arguments


def first_rounds_trials(store: RecordStore, session_id: int, task_row: int, rounds: int) -> list[dict]:
    trials = [t for t in store.trials(session_id) if t["task_id"] == task_row and t["latency_s"]]
    numbers = sorted({t["round"] for t in trials})[:rounds]
    return [t for t in trials if t["round"] in numbers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("model", type=Path)
    parser.add_argument("stores", type=Path, nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    for path in args.stores:
        with closing(RecordStore(path, create=False)) as store:
            session, target, imported, database = open_session(store, args.model)
            task = next(t for t in extract_tasks(imported.relax_mod, target) if t.name == args.task)
            row = next(r for r in store.tasks(session["id"]) if r["name"] == args.task)
            arguments = standard_normal_arguments(task, tvm.cpu())
            ratios = []
            for trial in first_rounds_trials(store, session["id"], row["id"], args.rounds):
                record = database.record_from_row(trial)
                idle = library_us(record_library(task, record, target), arguments, False, args.repeat)
                ratios.append(trial["latency_s"] * 1e6 / idle)
                stored = trial["latency_s"] * 1e6
                print(f"  round {trial['round']:3} {trial['origin']:8} stored {stored:9.1f} us  idle {idle:9.1f} us")
        low, _, high = statistics.quantiles(ratios, n=4)
        median = statistics.median(ratios)
        print(f"{path}: {len(ratios)} trials, stored / idle median {median:.3f} ({low:.3f}-{high:.3f})")


if __name__ == "__main__":
    main()
