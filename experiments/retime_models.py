"""Time compiled models of two benchmark runs in turns (issue 29: measured latency against main).

`bcd bench` times its own runs' compiled models in turns after its tunes; models from two
benches (say, before and after a change) were timed on different occasions. This times every
MODEL-STRATEGY-seedN.so under each given bench folder, all in turns with onnxruntime
(bcd_core/timing.py), and prints the median per model and the mean per folder and strategy.

    python experiments/retime_models.py ../shared/models/mobilenet_v2.onnx runs/m32f/mobilenet_v2 runs/cf32/mobilenet_v2
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from bcd_core.bench import ONNXRUNTIME, measure_in_turns
from bcd_core.model_import import import_model, random_inputs
from bcd_core.target import host_target


def libraries_under(folders: list[Path]) -> dict[str, Path]:
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*-seed*.so")):
            found[f"{folder}::{path.stem}"] = path
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    imported = import_model(args.model)
    libraries = libraries_under(args.folders)
    medians = measure_in_turns(libraries, imported.onnx_model, random_inputs(imported.inputs), args.runs, host_target())
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name in libraries:
        folder, stem = name.split("::")
        strategy = stem.rsplit("-seed", 1)[0].rsplit("-", 1)[-1]
        groups[(folder, strategy)].append(medians[name])
        print(f"{folder:40} {stem:40} {medians[name]:9.3f} ms")
    print(f"{'onnxruntime':81} {medians.get(ONNXRUNTIME, float('nan')):9.3f} ms")
    for (folder, strategy), values in groups.items():
        print(f"mean {folder:35} {strategy:14} {statistics.mean(values):9.3f} ms over {len(values)} models")


if __name__ == "__main__":
    main()
