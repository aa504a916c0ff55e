"""Would timing candidates with flushed caches pick other programs? (issue 29, item 2)

MetaSchedule's runner times each candidate with warm caches; inside a model a kernel's weights
come cold from memory (docs/benchmarks.md, "The end-to-end gap"). For each task of a tuned
session, this times its K best programs (by the runner's warm timing) again, warm and with
every argument but the first flushed before each call (TVM's `cache_flush_cpu_non_first_arg`,
what `EvaluatorConfig(enable_cpu_cache_flush=True)` does), and prints how often the flushed
ranking picks another program and what that saves, in weighted microseconds.

    python experiments/flush_rerank_probe.py STORE ../shared/models/mobilenet_v2.onnx [--top 8]
"""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path

import tvm
from e2e_gap import library_us, open_session, record_library  # the same timing as e2e_gap.py --alone

from bcd_core.records.store import RecordStore
from bcd_core.tasks import extract_tasks
from bcd_core.untuned import standard_normal_arguments

REPEAT = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    with closing(RecordStore(args.store, create=False)) as store:
        _, target, imported, database = open_session(store, args.model)
        totals = {"warm pick, warm": 0.0, "warm pick, flushed": 0.0, "flushed pick, flushed": 0.0}
        changed = 0
        tasks = extract_tasks(imported.relax_mod, target)
        for task in tasks:
            workload = database.commit_workload(task.mod)
            records = database.get_top_k(workload, args.top)
            if not records:
                continue
            arguments = standard_normal_arguments(task, tvm.cpu())
            rows = []
            for record in records:
                library = record_library(task, record, target)
                rows.append(
                    (library_us(library, arguments, False, REPEAT), library_us(library, arguments, True, REPEAT))
                )
            warm_pick = min(range(len(rows)), key=lambda i: rows[i][0])
            cold_pick = min(range(len(rows)), key=lambda i: rows[i][1])
            changed += warm_pick != cold_pick
            w = task.weight
            totals["warm pick, warm"] += w * rows[warm_pick][0]
            totals["warm pick, flushed"] += w * rows[warm_pick][1]
            totals["flushed pick, flushed"] += w * rows[cold_pick][1]
            print(
                f"{task.name[:44]:44} x{w} warm-best {rows[warm_pick][0]:8.1f}/{rows[warm_pick][1]:8.1f} us"
                f"  flushed-best {rows[cold_pick][0]:8.1f}/{rows[cold_pick][1]:8.1f} us (#{cold_pick})",
                flush=True,
            )
    print(f"\n{changed} of {len(tasks)} tasks pick another program when timed flushed")
    for name, value in totals.items():
        print(f"{name:24} {value:10.1f} us")


if __name__ == "__main__":
    main()
