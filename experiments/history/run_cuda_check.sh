#!/usr/bin/env bash
# A short CUDA tune on an NVIDIA GPU (the figures in docs/history/benchmarks-until-2026-11-24.md, "CUDA"): the sample MLP tuned with BCD,
# exported and checked against onnxruntime, then stock MetaSchedule vs BCD on SqueezeNet with a small budget.
# Usage: experiments/history/run_cuda_check.sh [OUT] [MODELS]   (needs nvcc on PATH and a CUDA driver)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/cuda}
MODELS=${2:-../shared/models}
TARGET=${TARGET:-nvidia/nvidia-h100}
TPT=${TPT:-16}
bcd tune resources/models/mlp_mnist.onnx --target "$TARGET" --strategy bcd --trials-per-task 16 \
    --db "$OUT/mlp.db" --out "$OUT/mlp_bcd"
bcd bench "$MODELS/squeezenet1_1.onnx" --target "$TARGET" --trials-per-task "$TPT" --trials-per-round 16 \
    --out "$OUT/squeezenet"
