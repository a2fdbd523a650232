#!/bin/bash
# MoE through `trainsim run` and `plan` (issue 15): a run with ep is
# deterministic (byte-identical JSON twice) and states the routing it
# assumes; an ep that does not divide dp or the experts is refused with a
# message; `plan` on a small MoE model searches ep and prices ep > 1
# candidates by simulation, the plan's time for one of them equal to `run`'s;
# under skewed routing (--axis routing=) the balance mode is an axis: every
# mode is priced, balance at ep=1 is pruned with its reason, and the "run
# it" command of the best works as printed and gives the plan's time.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/tiny-moe.json" <<'JSON'
{"name": "tiny-moe", "layers": 4, "hidden": 1024, "heads": 16, "ffn": 4096, "seq": 1024, "vocab": 32000,
 "moe": {"experts": 8, "top_k": 2, "every": 1, "first": 0}}
JSON
P=(--platform h100-sxm-4x8 --gpus 8 --model "$T/tiny-moe.json")
S=tp=1,pp=1,ep=8,dp=8,mb=4,gb=32,dtype=bf16,zero=1
"$TRAINSIM" run "${P[@]}" --strategy $S --json >"$T/a.json" || fail "run with ep=8"
"$TRAINSIM" run "${P[@]}" --strategy $S --json >"$T/b.json" || fail "run with ep=8 (again)"
cmp -s "$T/a.json" "$T/b.json" || fail "two runs differ"
out=$("$TRAINSIM" run "${P[@]}" --strategy $S 2>&1) || fail "text run"
echo "$out" | grep -q "routing uniform" || fail "routing not stated: $out"
out=$("$TRAINSIM" run "${P[@]}" --strategy tp=2,dp=4,ep=8 2>&1) && fail "ep=8 with dp=4 accepted"
echo "$out" | grep -q "ep=8 does not divide dp = 4" || fail "ep/dp message: $out"
out=$("$TRAINSIM" run "${P[@]}" --strategy tp=1,dp=8,ep=16 2>&1) && fail "ep=16 with 8 experts accepted"
echo "$out" | grep -q "ep=16 does not divide the 8 experts" || fail "ep/experts message: $out"
out=$("$TRAINSIM" plan "${P[@]}" --dtype bf16 --global-batch 32 --no-cache --quiet --top 0 --axis zero=1 \
      --axis schedule=megatron --axis recompute=none --axis vstages=1 --axis sp=0 2>&1) || fail "plan: $out"
echo "$out" | grep -q "ep{powers of 2 dividing dp\*cp and the experts: 1,2,4,8}" || fail "no ep axis: $out"
row=$(echo "$out" | grep " tp=1,pp=1,ep=8,dp=8,mb=4,gb=32,") || fail "ep=8 candidate not priced: $out"
plan_t=$(echo "$row" | awk '{print $4}')
run_t=$(grep -o '"iteration_time_s":[[:space:]]*[0-9.e+-]*' "$T/a.json" | head -1 | sed "s/.*:[[:space:]]*//")
[ -n "$run_t" ] || fail "no iteration time in run JSON: $(head -c 400 "$T/a.json")"
awk -v a="$plan_t" -v b="$run_t" 'BEGIN { d = a / b - 1; exit !(d < 0.02 && d > -0.02) }' ||
    fail "plan's $plan_t s against run's $run_t s for ep=8"
out=$("$TRAINSIM" plan "${P[@]}" --dtype bf16 --global-batch 32 --no-cache --quiet --top 0 --axis zero=1 \
      --axis schedule=megatron --axis recompute=none --axis vstages=1 --axis sp=0 --axis routing=zipf:1.2 \
      --axis balance=none,fastermoe,prophet 2>&1) || fail "plan over balance: $out"
for b in none fastermoe prophet; do
    echo "$out" | grep -q ",ep=8,dp=8,.*routing=zipf:1.2,balance=$b\$" ||
        fail "balance=$b at ep=8 not priced: $out"
done
echo "$out" | grep -q "balance=[a-z]* needs ep > 1" || fail "balance at ep=1 not pruned with its reason: $out"
cmd=$(echo "$out" | sed -n 's/^run it *trainsim //p')
[ -n "$cmd" ] || fail "no run-it line: $out"
best_t=$(echo "$out" | awk '$1 == "1" {print $4; exit}')
run_out=$(eval "\"\$TRAINSIM\" $cmd --json") || fail "the printed command: $cmd"
run_t=$(echo "$run_out" | grep -o '"iteration_time_s":[[:space:]]*[0-9.e+-]*' | head -1 | sed "s/.*:[[:space:]]*//")
awk -v a="$best_t" -v b="$run_t" 'BEGIN { d = a / b - 1; exit !(d < 0.02 && d > -0.02) }' ||
    fail "plan's $best_t s against run's $run_t s for $cmd"
out=$("$TRAINSIM" plan "${P[@]}" --search galvatron --quiet --no-cache 2>&1) && fail "--search on an MoE model"
echo "$out" | grep -q "mixture-of-experts layers, which the seeds' searches do not model" || fail "search message: $out"
echo ok
