# node_groups.sh — a cluster of node groups with different GPUs ("groups":
# mixed GPU kinds, issue 18): each rank is priced on its own GPU, the
# output names the mix, the SimGrid XML written for it loads back to the
# same simulation, and bad groups are refused with the field named.
# Oracle: a data-parallel job (every rank the same kernels, the gradient
# all-reduce after the backward) computes on the mixed cluster exactly as
# long per rank as on a cluster of that rank's GPU alone.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"

python3 - "$SRC" "$tmp" <<'PY'
import json, sys
src, tmp = sys.argv[1], sys.argv[2]
a = json.load(open(f"{src}/platforms/clusters/rtx4090-4x8.json"))["node"]
b = json.load(open(f"{src}/platforms/clusters/a100-pcie-8x8.json"))["node"]
json.dump({"name": "mixed", "groups": [{"nodes": 1, "node": a}, {"nodes": 1, "node": b}], "fabric": {"type": "switch"}},
          open(f"{tmp}/mixed.json", "w"))
json.dump({"name": "only-a", "nodes": 2, "node": a, "fabric": {"type": "switch"}}, open(f"{tmp}/a.json", "w"))
json.dump({"name": "only-b", "nodes": 2, "node": b, "fabric": {"type": "switch"}}, open(f"{tmp}/b.json", "w"))
bad = {"groups": []}
json.dump(bad, open(f"{tmp}/empty.json", "w"))
json.dump({"nodes": 2, "groups": [{"nodes": 1, "node": a}]}, open(f"{tmp}/both.json", "w"))
json.dump({"groups": [{"nodes": 1}]}, open(f"{tmp}/nonode.json", "w"))
json.dump({"groups": [{"nodes": 1, "node": a, "gpu": "x"}]}, open(f"{tmp}/extra.json", "w"))
PY
job=(--model gpt-1024 --strategy tp=1,pp=1,dp=16,mb=1,gb=16,dtype=bf16)
"$TRAINSIM" run --platform "$tmp/mixed.json" "${job[@]}" --json > "$tmp/mixed.out"
"$TRAINSIM" run --platform "$tmp/a.json" "${job[@]}" --json > "$tmp/a.out"
"$TRAINSIM" run --platform "$tmp/b.json" "${job[@]}" --json > "$tmp/b.out"
"$TRAINSIM" run --platform "$tmp/mixed.json" "${job[@]}" > "$tmp/mixed.txt"
grep -q "(2 nodes, 8 x RTX4090 + 8 x A100-PCIe-80GB)" "$tmp/mixed.txt" || fail "the mix is not named: $(head -1 "$tmp/mixed.txt")"
"$TRAINSIM" platform --platform "$tmp/mixed.json" -o "$tmp/mixed.xml" > /dev/null
"$TRAINSIM" run --platform "$tmp/mixed.xml" "${job[@]}" --json > "$tmp/xml.out"
python3 - "$tmp" <<'PY' || fail "oracle"
import json, sys
t = sys.argv[1]
m, a, b, x = (json.load(open(f"{t}/{n}.out")) for n in ("mixed", "a", "b", "xml"))
bad = []
for r in range(16):
    want = (a if r < 8 else b)["per_gpu"][r]["compute_s"]
    got = m["per_gpu"][r]["compute_s"]
    if abs(got - want) > 1e-9 * want:
        bad.append(f"rank {r}: computes {got} s on the mixed cluster, {want} s on its own GPU's")
if not m["per_gpu"][0]["compute_s"] > 1.2 * m["per_gpu"][8]["compute_s"]:
    bad.append("the RTX 4090 ranks are not slower than the A100 ranks")
if abs(x["iteration_time_s"] - m["iteration_time_s"]) > 1e-9 * m["iteration_time_s"]:
    bad.append(f"the XML gives {x['iteration_time_s']} s, the cluster JSON {m['iteration_time_s']} s")
if m["gpu_mix"] != "8 x RTX4090 + 8 x A100-PCIe-80GB":
    bad.append(f"gpu_mix {m['gpu_mix']}")
if bad:
    print("\n".join(bad)); sys.exit(1)
PY
expect_fail "groups" "1 to 16" -- platform --platform "$tmp/empty.json"
expect_fail "groups" "either" -- platform --platform "$tmp/both.json"
expect_fail "groups[0].node" "missing" -- platform --platform "$tmp/nonode.json"
expect_fail "groups[0].gpu" "unknown field" -- platform --platform "$tmp/extra.json"
finish
