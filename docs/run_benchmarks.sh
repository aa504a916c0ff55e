#!/usr/bin/env bash
# The benchmarks behind docs/benchmarks.md. Run alone on an otherwise idle machine:
# timings are wall-clock and anything else running skews them.
set -euo pipefail
cd "$(dirname "$0")/.."
# Latest results (docs/benchmarks.md, first section): pooled builder, current code.
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32h
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32c
bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/bert_mini-32b
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32i
python docs/cross_pairs.py --baseline docs/bench/squeezenet-32{f,g,h,i}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{f,h,i}/squeezenet1_1-bench.json
python docs/builder_overhead.py
# Earlier the same evening (docs/benchmarks.md, second section).
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32d
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32e
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32b
# Every BCD timeline of that code against every baseline of the same command.
python docs/cross_pairs.py --baseline docs/bench/squeezenet-32{,b,c,d,e}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{d,e}/squeezenet1_1-bench.json docs/bench/squeezenet-bcd-only/e2/squeezenet1_1-bench.json
