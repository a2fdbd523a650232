#!/bin/bash
# Aggregated double binary trees (sim/collectives.c, tree_allreduce_aggregated)
# against the same trees stepped chunk by chunk: one all-reduce over DGX-like
# nodes (8 GPUs, 8 rails), forced to the tree.  The aggregated tree must take
# the step mode's time within 6 % and need at least 4x fewer flows.
# CASES: NODES:BYTES ... (tree_aggregated_heavy.sh runs larger ones).
set -euo pipefail
CASES=${CASES:-4:128e6}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 - "$SRC" "$T" $CASES <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
for case in sys.argv[3:]:
    nodes, size = int(case.split(":")[0]), float(case.split(":")[1])
    c = json.load(open(f"{src}/platforms/clusters/a100-sxm-128n.json"))
    c["nodes"], c["name"] = nodes, f"a100-{nodes}"
    json.dump(c, open(f"{out}/c{nodes}.json", "w"))
    n = nodes * 8
    ranks = [{"rank": r, "streams": [{"name": "comm", "ops": [
        {"id": r, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": int(size), "algo": "tree"}]}]}
        for r in range(n)]
    json.dump({"format": "trainsim-schedule", "version": 1, "meta": {"name": "ar"}, "nranks": n,
               "communicators": [{"name": "world", "ranks": list(range(n))}], "ranks": ranks},
              open(f"{out}/s{nodes}-{int(size)}.json", "w"))
PY
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['iteration_time_s'], d['flows'])" "$1"; }
for s in "$T"/s*.json; do
    nodes=$(basename "$s" | sed 's/^s\([0-9]*\)-.*/\1/')
    "$TRAINSIM" run --schedule "$s" --platform "$T/c$nodes.json" --json --quiet > "$T/agg.json"
    "$TRAINSIM" run --schedule "$s" --platform "$T/c$nodes.json" --json --quiet --collectives step > "$T/step.json"
    read -r ta fa < <(field "$T/agg.json")
    read -r ts fs < <(field "$T/step.json")
    python3 - "$s" "$ta" "$fa" "$ts" "$fs" <<'PY'
import sys
name, ta, fa, ts, fs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
err = ta / ts - 1
print(f"{name.rsplit('/', 1)[1]}: aggregated {ta*1e3:.3f} ms ({fa} flows), step {ts*1e3:.3f} ms ({fs} flows), {100*err:+.2f} %")
assert abs(err) <= 0.06, "aggregated tree off the stepped one by more than 6 %"
assert fa * 4 <= fs, "aggregated tree does not save flows"
PY
done
