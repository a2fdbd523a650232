#!/usr/bin/env bash
# trainsim plan --placements: pipeline stages over node groups of mixed GPUs
# (one RTX 4090 node + one A100-PCIe node, 16 GPUs, full fidelity so that
# the plan's figures are whole simulations):
#   - every distinct arrangement of the GPU kinds over the stages is tried:
#     pp=4 over blocks (4090, 4090, A100, A100) has 4!/(2!·2!) = 6, pp=2 has 2;
#   - the rank-order figure is `run --strategy`'s iteration time, and the
#     best placement's is `run --job` with the GPU list the plan prints
#     (the same machine view: oracle, to print precision);
#   - the best is never slower than the rank order;
#   - one GPU kind: one arrangement, nothing to gain.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
: "${SRC:?source tree}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
python3 - "$SRC" <<'PY'
import json, sys
src = sys.argv[1]
a = json.load(open(f"{src}/platforms/clusters/rtx4090-4x8.json"))["node"]
b = json.load(open(f"{src}/platforms/clusters/a100-pcie-8x8.json"))["node"]
json.dump({"name": "mixed", "groups": [{"nodes": 1, "node": a}, {"nodes": 1, "node": b}], "fabric": {"type": "switch"}},
          open("mixed.json", "w"))
json.dump({"name": "same", "nodes": 2, "node": b, "fabric": {"type": "switch"}}, open("same.json", "w"))
json.dump({"name": "small", "layers": 8, "hidden": 1024, "heads": 16, "seq": 512}, open("small.json", "w"))
PY
S="tp=4,pp=4,dp=1,mb=1,gb=8,dtype=bf16;tp=8,pp=2,dp=1,mb=1,gb=8,dtype=bf16"
plan=(plan --model small.json --global-batch 8 --dtype bf16 --fidelity full --no-cache --quiet --strategies "$S" --placements 2)
"$TRAINSIM" "${plan[@]}" --platform mixed.json --json > mixed-plan.json
S2="tp=8,pp=2,dp=1,mb=1,gb=8,dtype=bf16"
"$TRAINSIM" "${plan[@]}" --strategies "$S2" --platform mixed.json > mixed-plan.txt
"$TRAINSIM" "${plan[@]}" --strategies "$S2" --platform same.json --json > same-plan.json
grep -q '^place it .*"gpus": \[' mixed-plan.txt || { echo "FAIL: no job line"; cat mixed-plan.txt; exit 1; }
python3 - <<'PY'
import json
p = json.load(open("mixed-plan.json"))["placements"]
pp = {x["pp"]: x for x in p}
assert sorted(pp) == [2, 4] and pp[4]["distinct"] == pp[4]["tried"] == 6 and pp[2]["distinct"] == 2, p
for x in p:
    assert x["best_s"] <= x["rank_order_s"] and sorted(x["gpus"]) == list(range(16)), x
    json.dump({"name": "best%d" % x["pp"], "model": "small.json", "strategy": x["strategy"], "gpus": x["gpus"]},
              open("best%d.json" % x["pp"], "w"))
    open("s%d.txt" % x["pp"], "w").write(x["strategy"])
q = json.load(open("same-plan.json"))["placements"]
assert all(x["distinct"] == 1 and x["best_s"] == x["rank_order_s"] for x in q), q
PY
for pp in 4; do
    "$TRAINSIM" run --platform mixed.json --model small.json --strategy "$(cat s$pp.txt)" --json > run$pp.json
    "$TRAINSIM" run --platform mixed.json --job best$pp.json > job$pp.txt
    python3 - $pp <<'PY'
import json, re, sys
pp = sys.argv[1]
x = {y["pp"]: y for y in json.load(open("mixed-plan.json"))["placements"]}[int(pp)]
run = json.load(open("run%s.json" % pp))["iteration_time_s"]
job = float(re.search(r"^best\S*\s+\d+\s+([0-9.]+) s", open("job%s.txt" % pp).read(), re.M).group(1))
assert abs(x["rank_order_s"] - run) <= 1e-6 * run, (x, run)
assert abs(x["best_s"] - job) <= 5e-5, (x, job)
print("pp=%s: rank order %.4f s (run %.4f), best %.4f s (run --job %.4f)" % (pp, x["rank_order_s"], run, x["best_s"], job))
PY
done
echo ok
