"""Write a `bcd bench` report (JSON and plot) from a stock store and a BCD store, for a bench
stopped before it timed its compiled models (no measured latencies, no onnxruntime line).

    python experiments/report_from_stores.py MODEL.onnx metaschedule.db bcd.db --out DIR
"""

from __future__ import annotations

import argparse
import json
from contextlib import closing
from pathlib import Path

from bcd_core.bench import StrategyResult, bench_report, stored_result, write_outputs
from bcd_core.records.store import RecordStore
from bcd_core.target import parse_target
from bcd_core.tuning.settings import TuneSettings


def newest_result(path: Path) -> tuple[StrategyResult, dict]:
    with closing(RecordStore(path, create=False)) as store:
        session = store.sessions()[-1]
        return stored_result(session["strategy"], store, session), session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("stock", type=Path)
    parser.add_argument("bcd", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    stock, session = newest_result(args.stock)
    bcd, _ = newest_result(args.bcd)
    chosen = json.loads(session["settings"])
    settings = TuneSettings(trials_per_task=chosen["trials_per_task"], trials_per_round=chosen["trials_per_round"])
    target = parse_target(json.loads(session["target_key"]))
    report = bench_report(args.model, target, settings, {"metaschedule": stock, "bcd": bcd}, None, {})
    args.out.mkdir(parents=True, exist_ok=True)
    write_outputs(report, args.out)
    print(
        f"stock final {report.baseline_final_s} s at {report.baseline_time_s} s; BCD at {report.bcd_time_s} s;"
        f" speedup {report.speedup}; in trials {report.trial_speedup}"
    )


if __name__ == "__main__":
    main()
