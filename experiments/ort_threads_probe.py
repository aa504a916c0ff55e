"""Does onnxruntime's thread set-up explain its slow episodes? (issue 29, "one way to time things")

bcd sets `intra_op_num_threads` to the machine's cores (bcd_core/export.py). onnxruntime's
documentation says that leaving it at 0 also pins its worker threads to cores, so a slow
episode might be an unpinned worker sharing a core. This times four sessions of MODEL side by
side, in many short passes in a fresh random order (paired_retime.py's passes): threads set
explicitly (bcd's way), left at 0, set explicitly with the worker pinned to the second core,
and set explicitly without spinning. Per setting: the median over passes, the 10th-90th
percentile range, and the per-pass ratio to bcd's way (a slow moment of the machine scales
every setting of that pass).

    python experiments/ort_threads_probe.py ../shared/models/squeezenet1_1.onnx --passes 60
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import onnx
from paired_retime import bootstrap_interval, timed_passes

from bcd_core.export import onnxruntime_session
from bcd_core.model_import import import_model, random_inputs
from bcd_core.target import host_core_count

BCD_WAY = "explicit threads (bcd)"


def session_runner(model: onnx.ModelProto, inputs: dict, threads: int, **config: str) -> Callable[[], None]:
    session = onnxruntime_session(model, threads, config)
    return lambda: session.run(None, inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--passes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=20, help="calls per setting per pass")
    args = parser.parse_args()
    imported = import_model(args.model)
    inputs = random_inputs(imported.inputs)
    cores = host_core_count()
    runners = {
        BCD_WAY: session_runner(imported.onnx_model, inputs, cores),
        "threads left at 0 (pinned)": session_runner(imported.onnx_model, inputs, 0),
        "explicit, worker pinned": session_runner(
            imported.onnx_model,
            inputs,
            cores,
            **{"session.intra_op_thread_affinities": ";".join(str(core) for core in range(2, cores + 1))},
        ),
        "explicit, no spinning": session_runner(
            imported.onnx_model, inputs, cores, **{"session.intra_op.allow_spinning": "0"}
        ),
    }
    rng = random.Random(0)
    results = timed_passes(runners, args.passes, args.runs, rng)
    for name in runners:
        per_pass = [result[name] for result in results]
        deciles = statistics.quantiles(per_pass, n=10)
        ratios = [result[name] / result[BCD_WAY] for result in results]
        low, high = bootstrap_interval(ratios, rng)
        print(
            f"{name:28} median {statistics.median(per_pass):6.3f} ms (p10-p90 {deciles[0]:.3f}-{deciles[-1]:.3f});"
            f" / bcd's per pass {statistics.median(ratios):.3f} ({low:.3f}-{high:.3f})"
        )


if __name__ == "__main__":
    main()
