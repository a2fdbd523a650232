#!/bin/bash
# `trainsim moe`: a small run prints the per-step table for the three
# balancing modes, byte-identical across runs, and a perfectly balanced trace gives 1.00.
# (Heavy: ~5 minutes under the sanitizers.)
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
S="ep=4,pp=2,tp=2,mb=1,gb=4,steps=3,routing=zipf:1.5,drift=0.05,seed=7"
"$TRAINSIM" moe --platform h100-pcie-2x8 --model gpt-moe-350m --strategy "$S" > "$T/a" 2>&1 || { cat "$T/a"; fail "moe run"; }
"$TRAINSIM" moe --platform h100-pcie-2x8 --model gpt-moe-350m --strategy "$S" > "$T/b" 2>&1 || fail "second moe run"
cat "$T/a"
cmp -s "$T/a" "$T/b" || fail "two runs differ"
grep -q "prophet saves" "$T/a" || fail "no comparison column"
[ "$(grep -cE '^ +[0-9]+ \|' "$T/a")" = 3 ] || fail "expected 3 step rows"
"$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "$S" --json > "$T/j" || fail "json"
python3 -c "import json,sys; d=json.load(open('$T/j')); assert len(d['steps'])==3" || fail "json output"
"$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "$S,balance=prophet" --trace "$T/t.json" > /dev/null || fail "trace"
python3 - "$T/t.json" <<'PY' || fail "trace content"
import json, sys
names = {e["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"}
for n in ("moe_dispatch", "moe_combine", "expert_fc1", "replica_bcast", "replica_reduce"):
    assert n in names, n
PY
# a trace: perfectly balanced routing gives imbalance 1.00 without balancing
python3 - "$T/even.json" <<'PY'
import json, sys
layers = [[64] * 128 for _ in range(12)]
json.dump({"format": "trainsim-routing", "version": 1, "experts": 128,
           "steps": [{"layers": layers}, {"layers": layers}]}, open(sys.argv[1], "w"))
PY
"$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "ep=8,mb=1,routing=trace:$T/even.json,balance=none" > "$T/e" || fail "trace run"
cat "$T/e"
grep -qE '^ +1 \|  1\.00 \( 1\.00\)' "$T/e" || fail "even trace is not balanced"
echo ok
