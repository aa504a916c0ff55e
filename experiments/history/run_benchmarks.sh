#!/usr/bin/env bash
# The benchmarks behind docs/history/benchmarks-until-2026-11-24.md. Run alone on an otherwise idle machine:
# timings are wall-clock and anything else running skews them.
set -euo pipefail
cd "$(dirname "$0")/../.."
# BCD-only runs: `bcd bench` resumes a complete baseline session from a copied store (nothing
# left to tune, its timeline kept) and tunes only BCD, so new BCD code meets old baselines.
bcd_only() {  # model, out folder, baseline store, extra bcd options
    mkdir -p "$2" && cp "$3" "$2/metaschedule.db"
    bcd bench "../shared/models/$1.onnx" --trials-per-task 32 --trials-per-round 16 --out "$2" "${@:4}"
}
# Thirteenth session of 2026-11-24 (docs/history/benchmarks-until-2026-11-24.md, first section): fresh pairs of the
# default then (cluster priors, code 2f6e70f) on ResNet-18, BERT-mini and SqueezeNet, and BERT-mini
# with representative priors; cross pairs and mean curves.
for run in k l m; do
    bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32$run
done
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{k,l,m}/resnet18-bench.json \
    --bcd docs/bench/resnet18-32{k,l,m}/resnet18-bench.json --plot docs/bench/resnet18-pairs-13.png
for run in q r s; do
    bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 \
        --out docs/bench/bert_mini-32$run
done
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{q,r,s}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{p,q,r,s}/bert_mini_l4_h256-bench.json --plot docs/bench/bert_mini-pairs-13.png
for run in q r s; do  # what `auto` (now the default) does on BERT-mini, against the same baselines
    bcd_only bert_mini_l4_h256 docs/bench/bert_mini-bcd-only/representative-$run \
        docs/bench/bert_mini-32$run/metaschedule.db --prior-source representative
done
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{q,r,s}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-bcd-only/representative-{q,r,s}/bert_mini_l4_h256-bench.json \
    --plot docs/bench/bert_mini-pairs-13-representative.png
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32ag
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{ad,ae,af,ag}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/cluster-{ae,af}/squeezenet1_1-bench.json \
    docs/bench/squeezenet-32ag/squeezenet1_1-bench.json --plot docs/bench/squeezenet-pairs-13.png
# CUDA on a lent H100 (docs/history/benchmarks-until-2026-11-24.md, last section): TPT=16 experiments/history/run_cuda_check.sh
# Twelfth session of 2026-11-24 (docs/history/benchmarks-until-2026-11-24.md, first section): cluster priors (now the
# default) and --split-heavier-than, each against the baseline of a fresh pair. The pairs ran
# when "representative" was the default; cluster-ad and both-ad ran commit 5597be0 (no gate).
for run in ad ae af; do
    bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 \
        --prior-source representative --out docs/bench/squeezenet-32$run
    bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/cluster-$run docs/bench/squeezenet-32$run/metaschedule.db \
        --prior-source cluster
done
for run in ad ae; do
    bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/split-$run docs/bench/squeezenet-32$run/metaschedule.db \
        --prior-source representative --split-heavier-than 8
    bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/both-$run docs/bench/squeezenet-32$run/metaschedule.db \
        --prior-source cluster --split-heavier-than 8
done
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{ad,ae,af}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/{cluster-ad,cluster-ae,cluster-af,both-ad,both-ae}/squeezenet1_1-bench.json \
    --plot docs/bench/squeezenet-pairs-12-cluster.png
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{ad,ae,af}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{ad,ae,af}/squeezenet1_1-bench.json --plot docs/bench/squeezenet-pairs-12-default.png
bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 \
    --out docs/bench/bert_mini-32p   # the new default (cluster priors)
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h,i,j,k,l,m,n,o,p}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32p/bert_mini_l4_h256-bench.json
# Eleventh session of 2026-11-24 (docs/history/benchmarks-until-2026-11-24.md, first section): the new --representative
# heaviest against the default, in fresh SqueezeNet pairs, and a stage profile of each strategy.
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/heavy-w docs/bench/squeezenet-32w/metaschedule.db \
    --cluster-mode sketch --representative heaviest   # sketch: the 32w baseline session's mode
for run in x z; do
    bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 \
        --representative heaviest --out docs/bench/squeezenet-32$run
done
for run in y aa ab ac; do
    bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 \
        --out docs/bench/squeezenet-32$run
done
python experiments/history/stage_profile.py ../shared/models/squeezenet1_1.onnx --strategy bcd --db /tmp/prof-bcd.db
python experiments/history/stage_profile.py ../shared/models/squeezenet1_1.onnx --strategy metaschedule --db /tmp/prof-ms.db
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{x,y,z,aa,ab,ac}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{y,aa,ab,ac}/squeezenet1_1-bench.json --plot docs/bench/squeezenet-pairs-11.png
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{x,y,z,aa,ab,ac}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{x,z}/squeezenet1_1-bench.json
# Tenth session of 2026-11-24 (docs/history/benchmarks-until-2026-11-24.md, second section): ResNet-18 pairs with each
# clustering, four more BERT-mini loose-sketch pairs, and a probe of the members' seeded round.
# 32h and 32i were started as BCD-only runs on copies of the 32g and 32f baseline stores; the
# clustering mode is part of a session's identity, so each tuned a fresh baseline (fresh pairs).
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 \
    --cluster-mode loose-sketch --out docs/bench/resnet18-32g
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 \
    --cluster-mode sketch --out docs/bench/resnet18-32h
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 \
    --cluster-mode loose-sketch --out docs/bench/resnet18-32i
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 \
    --out docs/bench/resnet18-32j  # main with loose-sketch as the default (a3ebde0)
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{f,g,h,i,j}/resnet18-bench.json \
    --bcd docs/bench/resnet18-32{g,i,j}/resnet18-bench.json --plot docs/bench/resnet18-loose-pairs.png
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{f,g,h,i,j}/resnet18-bench.json \
    --bcd docs/bench/resnet18-32{f,h}/resnet18-bench.json
python experiments/history/local_search_probe.py ../shared/models/resnet18.onnx docs/bench/resnet18-32g/bcd.db
for run in l m n o; do
    bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 \
        --cluster-mode loose-sketch --out "docs/bench/bert_mini-32$run"
done
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h,i,j,k,l,m,n,o}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{i,j,k,l,m,n,o}/bert_mini_l4_h256-bench.json --plot docs/bench/bert_mini-loose-pairs-7.png
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h,i,j,k,l,m,n,o}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{c,d,e,f,g,h}/bert_mini_l4_h256-bench.json
# Ninth session of 2026-11-24 (docs/history/benchmarks-until-2026-11-24.md, first section): six fresh BERT-mini pairs of
# main (code 86d28a0), their cross pairs, and one stage profile of each strategy.
for run in c d e f g h; do
    bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 \
        --out "docs/bench/bert_mini-32$run"
done
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{c,d,e,f,g,h}/bert_mini_l4_h256-bench.json --plot docs/bench/bert_mini-pairs.png
rm -f /tmp/profile-bcd.db /tmp/profile-ms.db
python experiments/history/stage_profile.py ../shared/models/bert_mini_l4_h256.onnx --strategy bcd --db /tmp/profile-bcd.db
python experiments/history/stage_profile.py ../shared/models/bert_mini_l4_h256.onnx --strategy metaschedule --db /tmp/profile-ms.db
for run in c d e f g h; do  # the GELU matmul diffused from its 2-task neighbour's first 2 rounds
    python experiments/history/cross_task_diffusion.py ../shared/models/bert_mini_l4_h256.onnx "docs/bench/bert_mini-32$run/bcd.db" \
        fused_matmul4_add2_add1 fused_matmul3_add3_divide_erf_add4_multiply1_multiply2 --by-decisions --source-rounds 2
done
for run in i j k; do  # commit baced11: the new opt-in clustering
    bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 \
        --cluster-mode loose-sketch --out "docs/bench/bert_mini-32$run"
done
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h,i,j,k}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{i,j,k}/bert_mini_l4_h256-bench.json --plot docs/bench/bert_mini-loose-pairs.png
python experiments/history/cross_pairs.py --baseline docs/bench/bert_mini-32{c,d,e,f,g,h,i,j,k}/bert_mini_l4_h256-bench.json \
    --bcd docs/bench/bert_mini-32{c,d,e,f,g,h}/bert_mini_l4_h256-bench.json
# Eighth session of 2026-11-23 (docs/history/benchmarks-until-2026-11-24.md, first section): replays of other priors,
# pair v at commit 9c73cc6 (a 10x-heavier member tuned alone; reverted), cost-model probes, w main.
squeeze=../shared/models/squeezenet1_1.onnx
replays=docs/bench/diffusion-replay
for run in t n u; do
    python experiments/history/diffusion_replay.py $squeeze "docs/bench/squeezenet-32$run/bcd.db" --variants "top-8 spread" \
        --prior-task fused_conv2d17_add9_relu9 --json "$replays/prior-conv2d17-squeezenet-32$run.json"
    python experiments/history/diffusion_replay.py $squeeze "docs/bench/squeezenet-32$run/bcd.db" --variants "top-8 spread" \
        --prior-task fused_conv2d17_add9_relu9 --prior-rounds 2 --json "$replays/prior-conv2d17-2rounds-squeezenet-32$run.json" \
        --only fused_conv2d16_add7_relu7 fused_conv2d14_add8_relu8 fused_conv2d13_add7_relu7 fused_conv2d12_add5_relu5 \
        fused_conv2d9_add5_relu5 fused_conv2d10_add6_relu6
done
for rounds in 2 4; do
    python experiments/history/diffusion_replay.py $squeeze docs/bench/squeezenet-32t/bcd.db --variants "top-8 spread" \
        --prior-rounds $rounds --json "$replays/rep-${rounds}rounds-squeezenet-32t.json"
done
for run in t n u p; do
    python experiments/history/diffusion_replay.py $squeeze "docs/bench/squeezenet-32$run/bcd.db" --variants "top-8 spread" \
        --prior-task fused_conv2d15_add8_relu8 --prior-rounds 2 --only fused_conv2d11_add6_relu6 fused_conv2d3_add2_relu2 \
        --json "$replays/prior-conv2d15-2rounds-squeezenet-32$run.json"
    python experiments/history/diffusion_replay.py $squeeze "docs/bench/squeezenet-32$run/bcd.db" --variants "top-8 spread" \
        --prior-task fused_conv2d15_add8_relu8 --prior-rounds 1 --only fused_conv2d11_add6_relu6 \
        --json "$replays/prior-conv2d15-1round-squeezenet-32$run.json"
done
bcd bench $squeeze --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32v  # commit 9c73cc6
for run in t u n p v; do
    python experiments/history/model_probe.py $squeeze "docs/bench/squeezenet-32$run" fused_conv2d17_add9_relu9 \
        fused_conv2d15_add8_relu8 fused_conv2d3_add2_relu2 --json "docs/bench/model-probe/squeezenet-32$run.json"
done
bcd bench $squeeze --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32w  # main (control)
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32f  # main
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{n,o,p,q,r,s,t,u,v,w}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{n,p,t,u,w}/squeezenet1_1-bench.json
# Seventh session of 2026-11-23 (docs/history/benchmarks-until-2026-11-24.md, second section): ranked diffusion replayed
# offline; r and s at commit a6f3717 (phase 3 counts stalls from its own start; reverted), t and u main.
for run in n p; do
    python experiments/history/diffusion_replay.py ../shared/models/squeezenet1_1.onnx "docs/bench/squeezenet-32$run/bcd.db" \
        --variants "top-8 spread" ranked-16 --json "docs/bench/diffusion-replay/ranked-squeezenet-32$run.json"
done
for run in r s t; do
    bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out "docs/bench/squeezenet-32$run"
done
for run in n o p q r s t; do
    python experiments/history/diffusion_replay.py ../shared/models/squeezenet1_1.onnx "docs/bench/squeezenet-32$run/bcd.db" \
        --variants "top-8 spread" ranked-16 ranked-levels --json "docs/bench/diffusion-replay/levels-squeezenet-32$run.json" \
        --only fused_conv2d3_add2_relu2 fused_conv2d11_add6_relu6 fused_conv2d15_add8_relu8 fused_conv2d17_add9_relu9
done
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32u
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{n,o,p,q,r,s,t,u}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{n,p,t,u}/squeezenet1_1-bench.json
# Sixth session of 2026-11-23 (docs/history/benchmarks-until-2026-11-24.md, second section): fresh pairs, default and option alternating.
for run in n:shared o:metaschedule p:shared q:metaschedule; do
    bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 \
        --late-cost-model "${run#*:}" --out "docs/bench/squeezenet-32${run%%:*}"
done
# Fifth session of 2026-11-23 (docs/history/benchmarks-until-2026-11-24.md, second section): MetaSchedule's model ranks phase 3.
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/af docs/bench/squeezenet-32l/metaschedule.db --late-cost-model metaschedule
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --late-cost-model metaschedule --out docs/bench/squeezenet-32m
# Fourth session of 2026-11-23 (docs/history/benchmarks-until-2026-11-24.md, first section): two cost-model variants, not kept.
# ad: in tune_bcd, cost_model = ms.cost_model.XGBModel(num_tuning_cores=2, tree_method="auto",
#     num_warmup_samples=0) instead of SharedXGBModel; ae: SharedXGBModel.finetune boosts on
#     self._grouped(range(len(self.latencies))) (every sample) instead of the new batch.
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/ad docs/bench/squeezenet-32l/metaschedule.db
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/ae docs/bench/squeezenet-32l/metaschedule.db
T=fused_conv2d3_add2_relu2,fused_conv2d7_add4_relu4,fused_conv2d15_add8_relu8,fused_conv2d11_add6_relu6,fused_conv2d_add_relu,fused_conv2d17_add9_relu9
for s in 1 2 3; do for m in shared stock-no-warmup; do
    python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx fused_conv2d3_add2_relu2 --cost-model $m --seed $s --rounds 4
done; done
for s in 1 2; do for m in stock shared; do
    python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx $T --cost-model $m --seed $s --rounds 3
done; done
# Latest results (docs/history/benchmarks-until-2026-11-24.md, first section): a larger budget, and three variants not kept
# (d43b2c1: stall decay 0.75; ed97261: fresh-start exploring; 51c1a80 on branch unit-dims-key:
# first-layer convolution as a singleton; check those commits out to rerun).
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 64 --trials-per-round 16 --out docs/bench/squeezenet-64a
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/y docs/bench/squeezenet-32l/metaschedule.db   # code d43b2c1
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/z docs/bench/squeezenet-32j/metaschedule.db   # code d43b2c1
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/ab docs/bench/squeezenet-32k/metaschedule.db  # code d43b2c1
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/aa docs/bench/squeezenet-32l/metaschedule.db  # code ed97261
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/ac docs/bench/squeezenet-32l/metaschedule.db  # branch unit-dims-key
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{b,c,d,e,f,g,h,i,j,k,l}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/{y,z,ab}/squeezenet1_1-bench.json
python experiments/history/stall_calibration.py docs/bench/squeezenet*/bcd.db docs/bench/squeezenet-bcd-only/{[!a]*,aa,ab}/bcd.db \
    docs/bench/resnet18*/bcd.db docs/bench/resnet18-bcd-only/*/bcd.db
for seed in 1 2 3 4 5; do
    for model in shared stock stock-no-warmup; do
        python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx fused_conv2d7_add4_relu4 \
            --cost-model "$model" --seed "$seed" --rounds 6
    done
    python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx \
        fused_conv2d7_add4_relu4,fused_conv2d5_add3_relu3 --seed "$seed" --rounds 6
done
for seed in 1 2 3 4; do
    python experiments/history/single_task_search.py ../shared/models/squeezenet1_1.onnx fused_conv2d_add_relu --seed "$seed" --rounds 6
done
# Before that (docs/history/benchmarks-until-2026-11-24.md, second section): phase 1 until the representative stalls.
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/u docs/bench/squeezenet-32j/metaschedule.db  # code e6446a9
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/v docs/bench/squeezenet-32i/metaschedule.db  # code e6446a9
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/w docs/bench/squeezenet-32k/metaschedule.db
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32l
bcd_only resnet18 docs/bench/resnet18-bcd-only/j docs/bench/resnet18-32d/metaschedule.db
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32e
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{c,d,e}/resnet18-bench.json \
    --bcd docs/bench/resnet18-bcd-only/j/resnet18-bench.json docs/bench/resnet18-32e/resnet18-bench.json
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{b,c,d,e,f,g,h,i,j,k,l}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/{u,v,w}/squeezenet1_1-bench.json docs/bench/squeezenet-32l/squeezenet1_1-bench.json \
    --plot docs/bench/squeezenet-pairs-patience.png
# Dropped variants, same bcd_only commands: squeezenet-bcd-only/s and t (baseline j; patience 2
# with min(|C|, 10), t also without stall decay), squeezenet-bcd-only/x (baseline l) and
# resnet18-bcd-only/k (baseline 32d) with the rate-gap floor of commit 1621728.
# Before that (docs/history/benchmarks-until-2026-11-24.md, second section): diffusion from the top 8, one program each.
for run in squeezenet-32{g,i,j} squeezenet-bcd-only/{m,n}; do
    python experiments/history/diffusion_replay.py ../shared/models/squeezenet1_1.onnx "docs/bench/$run/bcd.db" \
        --json "docs/bench/diffusion-replay/${run//\//-}.json"
done
for run in resnet18-32{c,d} resnet18-bcd-only/e; do
    python experiments/history/diffusion_replay.py ../shared/models/resnet18.onnx "docs/bench/$run/bcd.db" \
        --json "docs/bench/diffusion-replay/${run//\//-}.json"
done
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/o docs/bench/squeezenet-32j/metaschedule.db
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/p docs/bench/squeezenet-32i/metaschedule.db
bcd_only resnet18 docs/bench/resnet18-bcd-only/f docs/bench/resnet18-32d/metaschedule.db
bcd_only resnet18 docs/bench/resnet18-bcd-only/g docs/bench/resnet18-32c/metaschedule.db
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32k
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{f,g,h,i,j,k}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/{o,p}/squeezenet1_1-bench.json docs/bench/squeezenet-32k/squeezenet1_1-bench.json \
    --plot docs/bench/squeezenet-pairs-spread.png
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{c,d}/resnet18-bench.json \
    --bcd docs/bench/resnet18-bcd-only/{f,g}/resnet18-bench.json
# The dropped catch-up rounds (branch catch-up-experiment, commit 7bffcf2): the same bcd_only
# commands into squeezenet-bcd-only/{q,r} (baselines j, i) and resnet18-bcd-only/{h,i} (32c, 32d).
# Before that (docs/history/benchmarks-until-2026-11-24.md, second section): phase 3 by gain per trial, 1 % stall rule.
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/m docs/bench/squeezenet-32i/metaschedule.db
bcd_only squeezenet1_1 docs/bench/squeezenet-bcd-only/n docs/bench/squeezenet-32g/metaschedule.db
bcd_only resnet18 docs/bench/resnet18-bcd-only/e docs/bench/resnet18-32c/metaschedule.db
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32d
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32j
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{f,g,h,i,j}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-bcd-only/{m,n}/squeezenet1_1-bench.json docs/bench/squeezenet-32j/squeezenet1_1-bench.json \
    --plot docs/bench/squeezenet-pairs.png
python experiments/history/cross_pairs.py --baseline docs/bench/resnet18-32{c,d}/resnet18-bench.json \
    --bcd docs/bench/resnet18-32d/resnet18-bench.json docs/bench/resnet18-bcd-only/e/resnet18-bench.json \
    --plot docs/bench/resnet18-pairs.png
python experiments/history/cost_model_replay.py docs/bench/squeezenet-32i/bcd.db
# squeezenet-bcd-only/per-second-{1,2,3} (baselines i, g, f) and resnet18-bcd-only/per-second:
# the same bcd_only commands with a
# gain-per-second variant of phase 3 that was dropped (not committed; docs/history/benchmarks-until-2026-11-24.md).
# Before that (docs/history/benchmarks-until-2026-11-24.md, second section): pooled builder.
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32h
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32c
bcd bench ../shared/models/bert_mini_l4_h256.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/bert_mini-32b
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32i
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{f,g,h,i}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{f,h,i}/squeezenet1_1-bench.json
python experiments/history/builder_overhead.py
# Earlier the same evening (docs/history/benchmarks-until-2026-11-24.md, third section).
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32d
bcd bench ../shared/models/squeezenet1_1.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/squeezenet-32e
bcd bench ../shared/models/resnet18.onnx --trials-per-task 32 --trials-per-round 16 --out docs/bench/resnet18-32b
# Every BCD timeline of that code against every baseline of the same command.
python experiments/history/cross_pairs.py --baseline docs/bench/squeezenet-32{,b,c,d,e}/squeezenet1_1-bench.json \
    --bcd docs/bench/squeezenet-32{d,e}/squeezenet1_1-bench.json docs/bench/squeezenet-bcd-only/e2/squeezenet1_1-bench.json
