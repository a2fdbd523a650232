#!/usr/bin/env bash
# trainsim plan --search osdp|oases, priced by fragments of the workload
# generator: every plan printed runs as printed in `trainsim run`, within 3 %
# of run's iteration time and peak memory, inside the budget there.
#  - OSDP on its README model (GPT-2, 48 layers, hidden 2048) on one 8-GPU
#    PCIe server finds a plan under 8.5 GB (full recompute, sharded layers);
#  - OSDP on gpt-1024 under 8.5 GB: the plan's peak in run is inside it;
#  - Oases at batch 128 on 32 GPUs: plans fit (its schedule recomputes and
#    overlaps), and on 4 GPUs every (degree, cut degree) row agrees with run.
set -euo pipefail
. "$(dirname "$0")/search_vs_run.bash"
cat > gpt2.json <<'JSON'
{"name": "gpt2-osdp-48", "layers": 48, "hidden": 2048, "heads": 16, "ffn": 8192, "seq": 1024, "vocab": 50257}
JSON

echo "OSDP, GPT-2 48 layers, 8 GPUs, 8.5 GB"
check --platform galvatron-rtxtitan-2x8 --gpus 8 -- gpt2.json --search osdp --batch 8 --dtype fp16 --mem-budget 8.5
jq -r .strategy s.json | grep -E -q 'recompute=full(,.*)?,osdp=3' || fail "expected full recompute and sharding: $(jq -r .strategy s.json)"
echo "OSDP, gpt-1024, 8 GPUs, 8.5 GB"
check --platform oases-3090 --gpus 8 -- gpt-1024 --search osdp --batch 16 --mem-budget 8.5
echo "OSDP, 4 layers, 3 GB"
check --platform oases-3090 --gpus 4 -- g4.json --search osdp --batch 8 --mem-budget 3.0
echo "Oases, 4 GPUs, every row"
check --platform oases-3090 --gpus 4 -- g4.json --search oases --batch 16
[ "$(jq '[.plans[] | select(.ok and (.strategy | test("tp_cut")))] | length' s.json)" -gt 0 ] || fail "no cut plan"
echo "Oases, gpt-1024, 32 GPUs, batch 128: the best"
ONLY_BEST=1 check --platform oases-3090 -- gpt-1024 --search oases --batch 128
echo ok
