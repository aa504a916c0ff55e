#!/bin/bash
# CUDA check of tuning memory: BCD tunes BERT-mini into a store; stock (cold) vs BCD with that
# memory on the transformer; BCD cold on the transformer against the same stock run; CUDA tests.
# The figures in docs/benchmarks.md, "Tuning memory on an H200" (TVM, xgboost and sqlite-utils
# carried there as wheels).
# Usage: experiments/run_cuda_memory_check.sh TARGET TPT DEADLINE_S [PYTHON]   (logs and stores go to $OUT)
# Environment: MEMTPT (the memory tune's trials per task, default TPT), EXTRA (more options for the
# bench with memory, e.g. '--memory-first-round swap'), COLD=0 (skip the cold BCD run).
T=$1; TPT=$2; DEADLINE=$3; PY=${4:-python3}
M=${MODELS:-../shared/models}/bert_mini_l4_h256.onnx; X=${MODELS:-../shared/models}/transformer_encoder_l2.onnx; L=$OUT/log.txt
left() { local s=$(( DEADLINE - SECONDS )); echo $(( s > 1 ? s : 1 )); }
step() { echo "== $(date +%T) [$SECONDS s] $*" >> $L; }
nvidia-smi --query-gpu=name,driver_version --format=csv >> $L 2>&1
$PY -c "import tvm, xgboost, onnxruntime; print('tvm', tvm.__version__, 'xgb', xgboost.__version__, 'ort', onnxruntime.__version__, 'cuda', tvm.cuda(0).exist)" >> $L 2>&1
step tests
timeout 90 $PY -m pytest -q -p no:cacheprovider tests/bcd_core/test_target.py tests/bcd_core/test_diffusion.py -k "cuda or gpu" >> $L 2>&1
step memory tune; timeout $(left) $PY -m bcd_core tune $M --target $T --strategy bcd --trials-per-task ${MEMTPT:-$TPT} \
  --trials-per-round $TPT --db /tmp/mem.db --no-memory >> $L 2>&1; echo "rc=$?" >> $L
step bench with memory; timeout $(left) $PY -m bcd_core bench $X --target $T --trials-per-task $TPT \
  --trials-per-round $TPT --memory /tmp/mem.db $EXTRA --out /tmp/bm >> $L 2>&1; echo "rc=$?" >> $L
save() { $PY -c "import sqlite3,sys; a=sqlite3.connect(sys.argv[1]); b=sqlite3.connect(sys.argv[2]); a.backup(b)" "$1" "$2"; }
cp /tmp/bm/*.json /tmp/bm/*.png $OUT/ 2>/dev/null
for f in $(find /tmp/bm -name '*.db'); do save "$f" "$OUT/mem-$(basename "$f")"; done
[ "${COLD:-1}" = 0 ] && { step done; ls -R /tmp/bm >> $L; exit; }
step cold BCD against the same stock run
mkdir -p /tmp/cold && save /tmp/bm/metaschedule.db /tmp/cold/metaschedule.db
timeout $(left) $PY -m bcd_core bench $X --target $T --trials-per-task $TPT --trials-per-round $TPT \
  --out /tmp/cold >> $L 2>&1; echo "rc=$?" >> $L
for f in $(find /tmp/cold -name 'bcd*.db'); do save "$f" "$OUT/cold-$(basename "$f")"; done
cp /tmp/cold/*.json $OUT/cold-bench.json 2>/dev/null
step done; ls -R /tmp/bm >> $L
