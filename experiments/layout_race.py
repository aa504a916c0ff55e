"""Does tuning convolutions in the blocked layout (or with Winograd) bring the compiled model to onnxruntime?

Optionally runs the layout probe a default (auto) tune would run, then tunes the model with BCD
once per layout (by default its own NCHW and NCHW[x]c), each in a store of its own, then times
the exported models and onnxruntime in turns (bcd_core/timing.py) and writes one JSON with the
probe's verdict, the estimates, the in-tune milestone timings and the timings in turns. Run it
on an idle machine.

    python experiments/layout_race.py MODEL.onnx OUT_DIR --trials-per-task 16 [--seed 0] [--layouts blocked,winograd]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
from pathlib import Path

from bcd_core.bench import ONNXRUNTIME, measure_in_turns
from bcd_core.export import compile_tuned, export_library
from bcd_core.model_import import random_inputs
from bcd_core.records.store import RecordStore
from bcd_core.target import describe_target, host_core_count, host_target
from bcd_core.tuning.layout_choice import ProbeRun, choose_layout
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session


def tune(model: Path, out: Path, layout: str, trials: int, seed: int) -> tuple[dict, Path, list]:
    settings = TuneSettings(trials_per_task=trials, seed=seed, conv_layout=layout)
    run = run_session(model, out / f"{model.stem}-{layout}-s{seed}.db", host_target(), settings)
    session = run.store.session(run.session_id)
    library = export_library(
        compile_tuned(run.database, run.prepared.imported.relax_mod, run.target),
        out / f"{model.stem}-{layout}-s{seed}.so",
    )
    result = {
        "trials": session["trials_done"],
        "elapsed_s": session["elapsed_s"],
        "estimate_s": session["estimated_latency_s"],
        "milestones": RecordStore(run.store.path).model_latencies(run.session_id),
        "tasks": len(run.tasks),
    }
    return result, library, run.prepared.imported.inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--trials-per-task", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--probe", action="store_true", help="also run the layout probe of --layout auto")
    parser.add_argument("--layouts", default="nchw,blocked", help="the layouts to tune in, comma-separated")
    args = parser.parse_args()
    layouts = args.layouts.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    results, libraries, inputs = {}, {}, []
    choice = None
    if args.probe:
        settings = TuneSettings(trials_per_task=args.trials_per_task, seed=args.seed, conv_layout="auto")
        probe_store = args.out / f"{args.model.stem}-probe-s{args.seed}.db"

        def probe_tune(probe_settings: TuneSettings):
            return run_session(args.model, probe_store, host_target(), probe_settings)

        choice, _ = choose_layout(probe_store, args.model, host_target(), ProbeRun(settings, probe_tune, print))
    for layout in layouts:
        results[layout], libraries[layout], inputs = tune(args.model, args.out, layout, args.trials_per_task, args.seed)
    from bcd_core.model_import import load_onnx

    timed = measure_in_turns(libraries, load_onnx(args.model), random_inputs(inputs), args.runs, host_target())
    for layout in layouts:
        results[layout]["measured_ms"] = timed[layout]
    payload = {
        "model": args.model.name,
        "trials_per_task": args.trials_per_task,
        "seed": args.seed,
        "target": describe_target(host_target()),
        "machine": platform.processor() or platform.machine(),
        "threads": host_core_count(),
        "onnxruntime_ms": timed.get(ONNXRUNTIME),
        "auto_choice": dataclasses.asdict(choice) if choice else None,
        "results": results,
    }
    path = args.out / f"{args.model.stem}-{args.trials_per_task}-s{args.seed}.json"
    path.write_text(json.dumps(payload, indent=1))
    for layout in layouts:
        r = results[layout]
        print(
            f"{layout:8} est {r['estimate_s'] * 1e3:8.3f} ms  measured {r['measured_ms']:8.3f} ms  "
            f"({r['measured_ms'] / (r['estimate_s'] * 1e3):.2f}x est)  {r['elapsed_s'] / 60:.1f} min"
        )
    print(f"onnxruntime {timed.get(ONNXRUNTIME)} ms; written {path}")


if __name__ == "__main__":
    main()
