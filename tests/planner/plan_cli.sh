#!/usr/bin/env bash
# trainsim plan: ranking, outputs, cache hits, parallel = serial, pruning
# reasons, bad options.
set -euo pipefail
. "$(dirname "$0")/sweep.bash"

# serial and parallel, no cache: identical rankings
"$TRAINSIM" "${args[@]}" --no-cache --jobs 1 > serial.txt 2> serial.err
"$TRAINSIM" "${args[@]}" --no-cache --jobs 2 > parallel.txt 2> parallel.err
cmp serial.txt parallel.txt || fail "serial and parallel rankings differ"
grep -q '^best           tp=' serial.txt || fail "no best strategy"
grep -q 'run it         trainsim run --platform oases-3090 --gpus 4 --model gpt-1024 --strategy tp=' serial.txt || fail "no run line"

# the winner runs as printed (on the first 4 GPUs, said so), and trainsim run
# agrees with the plan's iteration time
best=$(sed -n 's/^best *//p' serial.txt)
runit=$(sed -n 's/^run it *trainsim //p' serial.txt)
# shellcheck disable=SC2086
"$TRAINSIM" $runit > run.txt 2> run.err || fail "the printed command fails: $(cat run.err)"
grep -q "^trainsim .* on oases-3090 (1 nodes, 4 x RTX3090: its first 4 of 32 GPUs)" run.txt || fail "run --gpus 4 does not say so: $(head -1 run.txt)"
plan_s=$(awk '$1 == "1" {print $4}' serial.txt)
run_s=$(sed -n 's/^iteration time *\([0-9.]*\) s/\1/p' run.txt)
python3 -c "import sys; p, r = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(p - r) > 0.07 * r)" "$plan_s" "$run_s" \
  || fail "plan's best takes $plan_s s, run says $run_s s"

# no strategy can run: said, and exit status 1
set +e
"$TRAINSIM" plan --platform oases-3090 --gpus 4 --model gpt-1024 --no-cache --quiet --strategies "tp=3,mb=1" > none.txt 2> none.err; rc=$?
set -e
[ $rc = 1 ] && grep -q "no strategy can run" none.txt || fail "no runnable strategy: rc $rc, $(cat none.txt none.err)"

# pruning: out-of-memory candidates are counted and explained with numbers
grep -Eq '^  pruned out of memory +[1-9][0-9]* +e\.g\. .*needs [0-9.]+ GB per GPU .* but the RTX3090 has 24\.0 GB' serial.txt \
  || fail "no out-of-memory pruning line with numbers"

# cache: the first run fills it, the second computes nothing and prints the same
"$TRAINSIM" "${args[@]}" --cache c1 > first.txt 2> first.err
"$TRAINSIM" "${args[@]}" --cache c1 > second.txt 2> second.err
cmp first.txt serial.txt || fail "cached sweep differs from an uncached one"
cmp first.txt second.txt || fail "repeated sweep differs"
grep -q ': 0 evaluated (0 simulations)' second.err || fail "repeated sweep simulated again: $(cat second.err)"
n=$(grep -c . c1/results.tsv)
m=$(sed -n 's/.*, \([0-9]*\) simulated$/\1/p' serial.txt)
[ "$n" = "$m" ] || fail "cache has $n records for $m strategies"

# JSON, CSV and SVG
"$TRAINSIM" "${args[@]}" --cache c1 --json > out.json
python3 - out.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["ranking"]
assert r and d["best"] == r[0]["strategy"], "best is not rank 1"
assert all(r[i]["samples_per_s"] >= r[i + 1]["samples_per_s"] for i in range(len(r) - 1)), "not sorted"
assert d["pruned"]["out of memory"] > 0
for x in r:
    assert x["peak_memory_bytes"] <= 24e9 * 1.0001, x
PY
"$TRAINSIM" "${args[@]}" --cache c1 --csv --svg plot.svg > out.csv
head -1 out.csv | grep -q '^rank,strategy,samples_per_s' || fail "CSV header"
[ "$(($(wc -l < out.csv) - 1))" = "$m" ] || fail "CSV rows"
grep -q '<polyline' plot.svg && grep -q 'Pareto front' plot.svg || fail "SVG without a Pareto front"
python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse('plot.svg')" || fail "SVG is not well-formed XML"

# the axis table: keys this build parses are searched; --axis narrows or adds
"$TRAINSIM" plan --platform oases-3090 --gpus 4 --model gpt-1024 --global-batch 8 --quiet --no-cache \
  --axis schedule=megatron,oases --axis recompute=full --axis sp=0 --axis vstages=1 --axis zero=0,1 \
  --axis pipeline=1f1b,gpipe --top 0 > axes.txt
grep -q 'schedule{megatron,oases} recompute{full} sp{0} vstages{1} zero{0,1} pipeline{1f1b,gpipe}' axes.txt \
  || fail "axes line: $(sed -n 2p axes.txt)"
grep -Eq '^ +[0-9]+ .*schedule=oases,recompute=full' axes.txt && fail "schedule=oases with recompute=full should be refused"
grep -Eq '^ +[0-9]+ .*schedule=oases.*zero=1,pipeline=gpipe$' axes.txt || fail "no simulated oases/zero=1/gpipe strategy"
set +e
"$TRAINSIM" plan --axis zero=7 > /dev/null 2> bad.err; rc=$?
set -e
[ $rc = 1 ] && grep -q -- '--axis zero: strategy: zero: expected 0, 1, 2, 3' bad.err || fail "bad --axis: rc $rc, $(cat bad.err)"

# bad options: a clear message and exit status 2
set +e
"$TRAINSIM" plan --fidelity bogus > /dev/null 2> bad.err; rc=$?
set -e
[ $rc = 2 ] && grep -q 'expected fast or full' bad.err || fail "bad --fidelity: rc $rc, $(cat bad.err)"
set +e
"$TRAINSIM" plan --gpus 1000 --quiet > /dev/null 2> bad.err; rc=$?
set -e
[ $rc = 1 ] && grep -q 'has only 32 GPUs' bad.err || fail "bad --gpus: rc $rc, $(cat bad.err)"

# --strategies: an entry may repeat the sweep's gb and dtype, not change them
base=(plan --platform oases-3090 --gpus 4 --model gpt-1024 --global-batch 16 --no-cache --quiet)
set +e
"$TRAINSIM" "${base[@]}" --strategies "tp=2,pp=2,mb=1;tp=4,mb=1,dtype=bf16" > /dev/null 2> bad.err; rc=$?
set -e
[ $rc = 1 ] && grep -q 'tp=4,mb=1,dtype=bf16" sets dtype=bf16, but the sweep.s is dtype=tf32; give it with --dtype' bad.err \
  || fail "conflicting dtype in --strategies: rc $rc, $(cat bad.err)"
"$TRAINSIM" "${base[@]}" --dtype bf16 --strategies "tp=4,mb=1,gb=16,dtype=bf16" > given.txt
grep -q '^best           tp=4,mb=1,gb=16,dtype=bf16$' given.txt || fail "repeated gb/dtype: $(grep best given.txt)"
echo ok
