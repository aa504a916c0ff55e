#!/usr/bin/env bash
# The benchmarks behind docs/benchmarks.md. Run alone on an otherwise idle machine:
# timings are wall-clock and anything else running skews them.
set -euo pipefail
cd "$(dirname "$0")/.."
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32b
bcd bench ../shared/models/resnet18.onnx --trials-per-task 16 --trials-per-round 16 --out docs/bench/resnet18
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32
