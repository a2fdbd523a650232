#!/usr/bin/env bash
# trainsim plan --search galvatron: Galvatron's outer loop (PP, batch,
# micro-batches) around a per-stage DP/SDP choice per layer, priced by
# fragments of the workload generator.  Every plan it prints runs as printed
# in `trainsim run`, within 3 % of run's iteration time and peak memory, and
# fits the budget there; on 8 PCIe RTX 3090s the search returns a hybrid
# (TP x DP) plan that run finds faster than every single parallelism; a
# budget changes the plan and nothing fitting exits 1 with the reasons.
set -euo pipefail
. "$(dirname "$0")/search_vs_run.bash"
plat=(--platform oases-3090 --gpus 8)
base=(plan "${plat[@]}" --model g4.json --search galvatron --batches 16)

# every printed plan against run: time and memory within 3 %, inside the budget
check "${plat[@]}" -- g4.json --search galvatron --batches 16
mv s.json free.json
best=$(jq -r .strategy free.json)
[ "$(jq '[.plans[] | select(.ok)] | length' free.json)" -ge 2 ] || fail "expected a plan per PP degree: $(cat free.json)"

# the best plan is hybrid, and run says it beats every single parallelism
deg() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<< "$best"; }
hybrid=0
for k in tp pp dp; do [ "$(deg $k)" -gt 1 ] && hybrid=$((hybrid + 1)); done
[ $hybrid -ge 2 ] || fail "best plan $best is not hybrid"
"$TRAINSIM" run "${plat[@]}" --model g4.json --strategy "$best" --json > b.json
tb=$(jq .iteration_time_s b.json)
# PP 8 alone cannot cut 4 layers; DP, SDP and TP alone at several micro-batch sizes
for s in "tp=1,pp=1,dp=8,mb=1" "tp=1,pp=1,dp=8,mb=2" "tp=1,pp=1,dp=8,mb=1,osdp=3" "tp=1,pp=1,dp=8,mb=2,osdp=3" \
         "tp=8,pp=1,dp=1,mb=1" "tp=8,pp=1,dp=1,mb=4" "tp=8,pp=1,dp=1,mb=16"; do
  "$TRAINSIM" run "${plat[@]}" --model g4.json --strategy "$s,gb=16,dtype=tf32" --json > s.json || fail "run $s"
  ts=$(jq .iteration_time_s s.json)
  awk -v a="$tb" -v b="$ts" 'BEGIN { exit !(a < b) }' || fail "$s ($ts s) is not slower than the search's $best ($tb s)"
  echo "  single $s: $ts s > hybrid $tb s"
done

# a budget below the winner's peak: another plan, inside it
peak=$(jq .peak_memory_bytes free.json)
budget=$(awk -v p="$peak" 'BEGIN { printf "%.2f", (p - 2e8) / 1e9 }')
check "${plat[@]}" -- g4.json --search galvatron --batches 16 --mem-budget "$budget"
[ "$(jq -r .strategy s.json)" != "$best" ] || fail "the $budget GB budget did not change the plan"

# nothing fits: exit 1, every pipeline degree says what it needs
set +e
"$TRAINSIM" "${base[@]}" --mem-budget 1.0 > none.txt 2> none.err; rc=$?
set -e
[ $rc = 1 ] && grep -q 'no plan fits the memory budget of 1.00 GB' none.err \
  && grep -Eq '^pruned +tp=.* needs at least [0-9.]+ GB per GPU > budget 1\.00 GB' none.txt \
  || fail "nothing fits: rc $rc $(cat none.txt none.err)"

# deterministic text, and the command that runs the plan
"$TRAINSIM" "${base[@]}" --pp 1 > a.txt 2>/dev/null
"$TRAINSIM" "${base[@]}" --pp 1 > b.txt 2>/dev/null
cmp a.txt b.txt || fail "two runs differ"
grep -qF "run it         trainsim run --platform oases-3090 --gpus 8 --model g4.json --strategy \"$best\"" a.txt \
  || fail "no run command for $best (the best plan is at PP 1): $(cat a.txt)"

# bad options
bad() { # expected-message args...
  local msg=$1; shift
  set +e
  "$TRAINSIM" "$@" > /dev/null 2> err.txt; local rc=$?
  set -e
  [ $rc != 0 ] && grep -q -- "$msg" err.txt || fail "$* -> rc $rc: $(cat err.txt)"
}
bad '--pp 3: expected a divisor of the 8 GPUs and of the 4 layers' "${base[@]}" --pp 3
bad '--batches: expected up to 64 positive integers separated by commas, got "8,x"' "${base[@]}" --batches 8,x
bad '--micro-batches: expected up to 16 positive integers' "${base[@]}" --micro-batches 0
bad '--pipeline: expected gpipe or 1f1b, got "zb"' "${base[@]}" --pipeline zb
bad 'apply to --search galvatron only' plan "${plat[@]}" --model g4.json --search osdp --pp 2
bad 'expected oases, galvatron or osdp, got "bogus"' plan --search bogus
echo ok
