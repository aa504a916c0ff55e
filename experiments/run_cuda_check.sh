#!/bin/bash
# CUDA check of the current design on a lent GPU: the CUDA tests, then one stock/BCD pair with
# `bcd bench`, inside a deadline. The figures in docs/benchmarks.md, "On an NVIDIA GPU" (TVM,
# xgboost and sqlite-utils carried there as wheels, the model copied beside them).
# Usage: experiments/run_cuda_check.sh TARGET MODEL TPT DEADLINE_S [PYTHON]   (log, JSON, plot
# and stores go to $OUT). With time left, a `bcd tune --minutes 1` checks the clock budget there.
T=$1; MODEL=$2; TPT=$3; DEADLINE=$4; PY=${5:-python3}
L=$OUT/log.txt
left() { local s=$(( DEADLINE - SECONDS )); echo $(( s > 1 ? s : 1 )); }
step() { echo "== $(date +%T) [$SECONDS s] $*" >> "$L"; }
nvidia-smi --query-gpu=name,driver_version --format=csv >> "$L" 2>&1
$PY -c "import tvm, xgboost, onnxruntime; print('tvm', tvm.__version__, 'xgb', xgboost.__version__, \
'ort', onnxruntime.__version__, 'cuda', tvm.cuda(0).exist)" >> "$L" 2>&1
step tests
timeout 120 $PY -m pytest -q -p no:cacheprovider tests/bcd_core/test_target.py tests/bcd_core/test_diffusion.py \
  -k "cuda or gpu" >> "$L" 2>&1
timeout 60 $PY -m pytest -q -p no:cacheprovider tests/bcd_core/test_builder.py >> "$L" 2>&1
step bench
timeout "$(left)" $PY -m bcd_core bench "$MODEL" --target "$T" --trials-per-task "$TPT" \
  --trials-per-round "$TPT" --out /tmp/bench >> "$L" 2>&1
echo "rc=$?" >> "$L"
save() { $PY -c "import sqlite3,sys; a=sqlite3.connect(sys.argv[1]); b=sqlite3.connect(sys.argv[2]); a.backup(b)" "$1" "$2"; }
cp /tmp/bench/*.json /tmp/bench/*.png "$OUT"/ 2>/dev/null
for f in $(find /tmp/bench -name '*.db'); do save "$f" "$OUT/$(basename "$f")"; done
if [ "$(left)" -gt 100 ]; then
  step tune by the clock
  timeout "$(left)" $PY -m bcd_core tune "$MODEL" --target "$T" --minutes 1 --db /tmp/minutes.db >> "$L" 2>&1
  echo "rc=$?" >> "$L"
  $PY -m bcd_core db sessions --db /tmp/minutes.db >> "$L" 2>&1
fi
step done; ls -R /tmp/bench >> "$L"
