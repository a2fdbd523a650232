#!/usr/bin/env bash
# The seeds' searches (--search oases|galvatron|osdp) find the same optimum
# as exhaustive search over their space: under the same additive fragment
# costs and when every assignment is simulated whole (trainsim exits 1 if
# they disagree).  Unconstrained and under a memory budget that forbids the
# unconstrained winner.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
base=(plan --platform oases-3090 --gpus 4 --model gpt-1024 --layers 2 --batch 8 --exhaustive)
for case in "oases" "oases --mem-budget 1.25" "osdp" "osdp --mem-budget 1.27"; do
  # shellcheck disable=SC2086
  out=$("$TRAINSIM" "${base[@]}" --search $case 2>&1) || fail "$case: $out"
  grep -q 'same as the DP' <<< "$out" && grep -q 'same optimum' <<< "$out" || fail "$case: $out"
  sims=$(sed -n 's/^simulations *\([0-9]*\) fragments.*/\1/p' <<< "$out")
  full=$(sed -n 's/^exhaustive .* \([0-9]*\) whole-chain simulations/\1/p' <<< "$out")
  echo "$case: DP $sims fragment simulations, exhaustive $full whole-chain simulations: $(grep '^plan' <<< "$out")"
done
# galvatron at PP 1 (its outer loop over PP, batch and micro-batches:
# plan_galvatron.sh): the layer DP against every assignment simulated whole
for case in "" "--mem-budget 1.2"; do
  # shellcheck disable=SC2086
  out=$("$TRAINSIM" "${base[@]}" --search galvatron --pp 1 $case 2>&1) || fail "galvatron $case: $out"
  grep -q -- '-> same as the search' <<< "$out" && grep -q 'simulated optimum at every batch' <<< "$out" \
    || fail "galvatron $case: $out"
  sims=$(sed -n 's/^simulations *\([0-9]*\) fragments.*/\1/p' <<< "$out")
  full=$(sed -n 's/^  simulated whole *\([0-9]*\) assignments.*/\1/p' <<< "$out")
  echo "galvatron $case: DP $sims fragment simulations, exhaustive $full whole-chain simulations: $(grep '^best' <<< "$out")"
done
# the memory budget changes the answer (the DP honours it)
a=$("$TRAINSIM" "${base[@]}" --search galvatron --pp 1 | sed -n 's/^best *//p')
b=$("$TRAINSIM" "${base[@]}" --search galvatron --pp 1 --mem-budget 1.2 | sed -n 's/^best *//p')
[ "$a" != "$b" ] || fail "memory budget did not change the galvatron plan ($a)"
# bad algorithm name
set +e
"$TRAINSIM" plan --search bogus > /dev/null 2> err.txt; rc=$?
set -e
[ $rc = 1 ] && grep -q 'expected oases, galvatron, osdp or oases-compare' err.txt || fail "bad --search: $(cat err.txt)"
rm -f err.txt
echo ok
