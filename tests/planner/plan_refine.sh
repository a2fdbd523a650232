#!/usr/bin/env bash
# trainsim plan --refine K: the K fastest of a fast sweep are simulated whole;
# their figures equal --fidelity full's for the same strategies, they are
# marked (CSV/JSON "fidelity": full, a * in the table), the rest stay fast;
# a repeated run takes both from the cache; bad values are refused.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
args=(plan --platform oases-3090 --gpus 8 --model gpt-1024 --global-batch 64 --quiet
      --axis schedule=megatron --axis sp=0 --axis vstages=1 --axis zero=0 --axis recompute=none,full)
fail() { echo "FAIL: $*"; exit 1; }

"$TRAINSIM" "${args[@]}" --no-cache --csv > fast.csv
"$TRAINSIM" "${args[@]}" --no-cache --csv --refine 4 > refined.csv
# the four fastest by the fast fidelity, simulated whole on their own
top=$(python3 -c "
import csv
rows = list(csv.DictReader(open('fast.csv')))
assert all(r['fidelity'] == 'fast' for r in rows)
print(';'.join(r['strategy'] for r in rows[:4]))")
"$TRAINSIM" "${args[@]}" --no-cache --csv --fidelity full --strategies "$top" > full.csv
python3 - "$top" <<'PY'
import csv, sys
top = sys.argv[1].split(";")
fast = {r["strategy"]: r for r in csv.DictReader(open("fast.csv"))}
ref = {r["strategy"]: r for r in csv.DictReader(open("refined.csv"))}
full = {}
for r in csv.DictReader(open("full.csv")):
    full[r["strategy"].split(",", 2)[2] if r["strategy"].startswith("gb=") else r["strategy"]] = r
assert set(ref) == set(fast), "refining changed the set of strategies"
marked = [k for k, r in ref.items() if r["fidelity"] == "full"]
assert sorted(marked) == sorted(top), (marked, top)
differ = 0
for k in top:
    f = [r for s, r in full.items() if set(s.split(",")) <= set(k.split(","))]
    assert len(f) == 1, (k, list(full))
    for col in ("iteration_s", "peak_memory_bytes", "exposed_comm_s"):
        assert ref[k][col] == f[0][col], (k, col, ref[k][col], f[0][col])
    differ += ref[k]["iteration_s"] != fast[k]["iteration_s"]
for k, r in ref.items():
    if k not in top:
        assert r["iteration_s"] == fast[k]["iteration_s"] and r["fidelity"] == "fast", k
assert differ >= 1, "no refined strategy changed: the test does not show refining"
# the ranking is by the best figure each strategy has
sps = [float(r["samples_per_s"]) for r in csv.DictReader(open("refined.csv"))]
assert sps == sorted(sps, reverse=True)
print(f"refined {len(top)}: equal to full simulation; {differ} of them differ from their fast figure")
PY

# the table marks them; a cached repeat prints the same and simulates nothing
"$TRAINSIM" "${args[@]}" --cache c --refine 4 > t1.txt 2> t1.err
"$TRAINSIM" "${args[@]}" --cache c --refine 4 > t2.txt 2> t2.err
cmp t1.txt t2.txt || fail "a cached refined sweep differs"
[ "$(grep -c '^ *[0-9]\+\* ' t1.txt)" = 4 ] || fail "four rows should be marked refined"
grep -q 'simulated whole (--refine)' t1.txt || fail "no refine footnote"
grep -q ' 0 evaluated (0 simulations)' t2.err || fail "the repeat simulated again: $(cat t2.err)"
grep -q 'the 4 fastest simulated whole (--refine) in' t2.err || fail "no refine summary"

# bad values
"$TRAINSIM" "${args[@]}" --no-cache --refine -1 > /dev/null 2> bad.err && fail "--refine -1 accepted"
grep -q -- '--refine: expected a non-negative integer' bad.err || fail "unclear --refine error: $(cat bad.err)"
echo ok
