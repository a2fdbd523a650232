# memory_timeline.sh — `--memory` CSV (per-rank maximum = the reported
# peak, kinds add up to the total, ZeRO-3 gathered weights, deterministic)
# and the memory counters in the Chrome trace.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S=tp=2,pp=4,dp=4,mb=1,gb=16,recompute=full
# memory timeline
"$TRAINSIM" run --model gpt-1024 --strategy "$S,zero=3" --json --memory "$tmp/m.csv" --trace "$tmp/t.json" > "$tmp/r.json" \
    || fail "--memory exited non-zero"
python3 - "$tmp/m.csv" "$tmp/r.json" "$tmp/t.json" <<'PY' || fail "memory timeline check"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = json.load(open(sys.argv[2]))
assert rows, "empty timeline"
for k in ("time_s", "rank", "kind", "what", "delta_bytes", "total_bytes", "weights_bytes", "activations_bytes"):
    assert k in rows[0], k
peak = {}
last_t = {}
for x in rows:
    rk = int(x["rank"]); t = float(x["time_s"])
    assert t >= last_t.get(rk, 0), "time goes back on rank %d" % rk
    last_t[rk] = t
    tot = float(x["total_bytes"])
    kinds = sum(float(x[k]) for k in x if k.endswith("_bytes") and k not in ("delta_bytes", "total_bytes"))
    assert abs(kinds - tot) < 1, (kinds, tot)
    peak[rk] = max(peak.get(rk, 0), tot)
assert sorted(peak) == list(range(32)), sorted(peak)
assert max(peak.values()) == r["peak_memory_bytes"], (max(peak.values()), r["peak_memory_bytes"])
for g in r["per_gpu"]:
    assert peak[g["rank"]] == g["peak_memory_bytes"], g["rank"]
assert any(x["what"] == "gathered_weights" for x in rows), "no ZeRO-3 gathered weights in the timeline"
assert all(x["kind"] == "weights" for x in rows if x["what"] == "gathered_weights")
ev = json.load(open(sys.argv[3]))["traceEvents"]
cnt = [e for e in ev if e.get("ph") == "C" and e.get("name") == "memory GB"]
assert len(cnt) == len(rows), (len(cnt), len(rows))
assert {e["pid"] for e in cnt} == set(range(32))
PY
# the timeline is deterministic
"$TRAINSIM" run --model gpt-1024 --strategy "$S,zero=3" --json --memory "$tmp/m2.csv" --trace "$tmp/t2.json" > /dev/null || fail "second --memory run"
cmp -s "$tmp/m.csv" "$tmp/m2.csv" || fail "two runs wrote different memory timelines"
echo ok
