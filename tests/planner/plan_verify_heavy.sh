#!/usr/bin/env bash
# plan --verify on the larger sweeps (issue 16; the light ones:
# plan_verify.sh): strategies drawn at random from each fast sweep,
# simulated whole, within the fast fidelity's stated bound (7 %,
# docs/planning.md):
#  - gpt-1024 on 8 RTX 3090, the whole default space (schedules megatron,
#    oases, merak, sp, ZeRO 0-3, vstages, recompute): 16 drawn;
#  - the same with dp_overlap and Merak's pipelines as axes
#    (plan_fidelity_keys_heavy.sh's keys): 8 drawn;
#  - the bench sweep, gpt-4096-l24 on 64 RTX 3090 (bench/plan_bench.sh): 3
#    drawn (a whole simulation of 64 GPUs takes ~25 CPU s).
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
check() { # name file expected-count
    python3 - "$@" <<'PY'
import json, sys
name, path, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
v = json.load(open(path))["verify"]
assert v["strategies"] == want == len(v["checked"]), (name, v["strategies"], want)
worst = max(v["checked"], key=lambda c: abs(c["error"]))
assert v["within_bound"] and v["worst_error"] <= 0.07, (name, worst)
print(f"{name}: {want} drawn, mean {100 * v['mean_error']:.2f} %, worst {100 * v['worst_error']:.2f} % ({worst['strategy']})")
PY
}
"$TRAINSIM" plan --platform oases-3090 --gpus 8 --model gpt-1024 --global-batch 32 --quiet --no-cache \
  --verify 16 --json > space.json 2> /dev/null
check default_space space.json 16
"$TRAINSIM" plan --platform oases-3090 --gpus 8 --model gpt-1024 --global-batch 32 --quiet --no-cache \
  --axis schedule=megatron --axis sp=0 --axis recompute=full --axis zero=0,3 --axis dp_overlap=0,1 \
  --axis pipeline=1f1b,merak_pre_recompute,merak_last_no_recompute --axis vstages=1 \
  --verify 8 --json > keys.json 2> /dev/null
check keys keys.json 8
"$TRAINSIM" plan --platform "$SRC/platforms/clusters/rtx3090-16x4.json" --model "$SRC/bench/gpt-4096-l24.json" \
  --global-batch 256 --axis schedule=megatron --axis sp=0 --axis vstages=1 --axis zero=0 --quiet --no-cache \
  --verify 3 --json > bench.json 2> /dev/null
check bench bench.json 3
