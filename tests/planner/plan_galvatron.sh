#!/usr/bin/env bash
# trainsim plan --search galvatron: Galvatron's outer loop over the pipeline
# degree, the global batch and the micro-batch count around the per-stage
# layer DP (papers.md §3.4).  On 4 GPUs and 2 layers: the search finds the
# optimum of exhaustive enumeration over (PP, batch, m, per-layer strategies)
# under the same additive cost, and with one stage every assignment simulated
# whole agrees (trainsim exits 1 otherwise); memory budgets prune and change
# the answer, with the reason printed; bad options are refused clearly.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
base=(plan --platform oases-3090 --gpus 4 --model gpt-1024 --layers 2 --search galvatron --batches 8,16)

# unconstrained: exhaustive agreement, estimate = simulation at PP 1
"$TRAINSIM" "${base[@]}" --exhaustive > free.txt 2>&1 || fail "unconstrained: $(cat free.txt)"
grep -q '^exhaustive .* 0 differ from the stage DPs' free.txt || fail "stage DPs differ: $(cat free.txt)"
grep -q -- '-> same as the search' free.txt || fail "exhaustive optimum differs: $(cat free.txt)"
grep -q 'the stage DP.s plan is the simulated optimum at every batch' free.txt || fail "whole simulation: $(cat free.txt)"
row1=$(grep -E '^ +1 +[0-9]+ +1 ' free.txt) || fail "no PP 1 row: $(cat free.txt)"
row2=$(grep -E '^ +2 +[0-9]+ +[0-9]+ ' free.txt) || fail "no PP 2 row: $(cat free.txt)"
read -r _ _ _ _ _ est sim _ <<< "$row1"
[ "$est" = "$sim" ] || fail "PP 1: estimate $est != simulated $sim (one stage, one micro-batch: fragments add up)"
best_free=$(sed -n 's/^best *//p' free.txt)
sims=$(sed -n 's/^simulations *\([0-9]*\) fragments.*/\1/p' free.txt)
[ "${sims:-0}" -gt 0 ] || fail "no fragment count"
echo "unconstrained: $best_free; $sims fragment simulations"

# a budget below the winner's memory: another plan, and why (at PP 1, whose
# fastest plan needs more than 2.0 GB)
"$TRAINSIM" "${base[@]}" --pp 1 > free1.txt 2>&1 || fail "PP 1: $(cat free1.txt)"
best_free1=$(sed -n 's/^best *//p' free1.txt)
"$TRAINSIM" "${base[@]}" --pp 1 --mem-budget 2.0 --exhaustive > b2.txt 2>&1 || fail "budget 2.0: $(cat b2.txt)"
best_b2=$(sed -n 's/^best *//p' b2.txt)
[ "$best_b2" != "$best_free1" ] || fail "the 2.0 GB budget did not change the plan ($best_b2)"
grep -Eq '^memory-bound +PP 1, batch 16, m 1: the fastest plan, .* needs [0-9.]+ GB per GPU > budget 2\.00 GB' b2.txt \
  || fail "no memory-bound reason: $(cat b2.txt)"
grep -q -- '-> same as the search' b2.txt || fail "budget 2.0: exhaustive optimum differs: $(cat b2.txt)"
awk '/^ +[0-9]+ +[0-9]+ +[0-9]+ / { if ($NF == "best") m = $(NF-2); else m = $NF; if (m + 0 > 2.0) bad = 1 }
     END { exit bad }' b2.txt || fail "a row exceeds the 2.0 GB budget: $(cat b2.txt)"
echo "2.0 GB: $best_b2"

# a budget that excludes the larger batch: pruned with the memory it needs
"$TRAINSIM" "${base[@]}" --mem-budget 1.8 > b18.txt 2>&1 || fail "budget 1.8: $(cat b18.txt)"
grep -Eq '^pruned +PP 1, batch 16: stage 0 needs at least [0-9.]+ GB per GPU .* > budget 1\.80 GB' b18.txt \
  || fail "no pruning reason: $(cat b18.txt)"
grep -Eq '^best +PP [12], batch 8,' b18.txt || fail "budget 1.8 should leave batch 8: $(cat b18.txt)"

# 1F1B holds min(m, PP - k) micro-batches' activations instead of GPipe's m:
# batch 16 fits at PP 2 under the budget that pruned it above
"$TRAINSIM" "${base[@]}" --mem-budget 1.5 --pipeline 1f1b > f1b.txt 2>&1 || fail "1f1b: $(cat f1b.txt)"
grep -Eq '^best +PP 2, batch 16, ' f1b.txt || fail "1F1B should fit PP 2 at batch 16 in 1.5 GB: $(cat f1b.txt)"
mem_of() { awk '$1 == 2 && $2 == 16 && $3 == 4 { print ($NF == "best" ? $(NF-2) : $NF) }' "$1"; }
g=$(mem_of free.txt)
f=$(mem_of f1b.txt)
awk -v g="$g" -v f="$f" 'BEGIN { exit !(f + 0 > 0 && f + 0 < g + 0) }' || fail "1F1B memory $f GB not below GPipe's $g GB"

# nothing fits: exit 1 with the reasons
set +e
"$TRAINSIM" "${base[@]}" --mem-budget 0.5 > /dev/null 2> none.err; rc=$?
set -e
[ $rc = 1 ] && grep -q 'no plan fits: PP 1, batch 8: stage 0 needs at least' none.err || fail "nothing fits: rc $rc $(cat none.err)"

# deterministic, and JSON
"$TRAINSIM" "${base[@]}" --mem-budget 1.8 > b18again.txt 2>&1
cmp b18.txt b18again.txt || fail "two runs differ"
"$TRAINSIM" "${base[@]}" --json > out.json
grep -q '"algorithm": "galvatron"' out.json && grep -q '"pp": 2, "batch": 16' out.json && grep -q '"fragment_simulations": [1-9]' out.json \
  || fail "JSON: $(cat out.json)"

# bad options
bad() { # expected-message args...
  local msg=$1; shift
  set +e
  "$TRAINSIM" "$@" > /dev/null 2> err.txt; local rc=$?
  set -e
  [ $rc != 0 ] && grep -q -- "$msg" err.txt || fail "$* -> rc $rc: $(cat err.txt)"
}
bad '--pp 3: expected a divisor of the 4 GPUs that is at most the 2 layers' "${base[@]}" --pp 3
bad '--pp 4: expected a divisor of the 4 GPUs that is at most the 2 layers' "${base[@]}" --pp 4
bad '--batches: expected up to 64 positive integers separated by commas, got "8,x"' "${base[@]}" --batches 8,x
bad '--micro-batches: expected up to 16 positive integers' "${base[@]}" --micro-batches 0
bad 'no micro-batch count divides it' "${base[@]}" --batches 6 --micro-batches 4
bad '--pipeline: expected gpipe or 1f1b, got "zb"' "${base[@]}" --pipeline zb
bad 'apply to --search galvatron only' plan --platform oases-3090 --gpus 4 --model gpt-1024 --search osdp --pp 2
bad 'PP 2: its first batch, 2, is above --max-batch 1' plan --platform oases-3090 --gpus 4 --model gpt-1024 --layers 2 --search galvatron --pp 2 --max-batch 1
echo ok
