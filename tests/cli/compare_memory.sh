# compare_memory.sh — `run --compare KEY=v1,v2,...` (side by side, text and
# JSON, an impossible value reported in its column, a bad key refused) and
# the memory timeline (`--memory` CSV whose per-rank maximum is the reported
# peak; memory counters in the Chrome trace).
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S=tp=2,pp=4,dp=4,mb=1,gb=8,recompute=full

"$TRAINSIM" run --model gpt-1024 --strategy "$S" --compare pipeline=1f1b,gpipe,interleaved > "$tmp/c.txt" \
    || { cat "$tmp/c.txt" >&2; fail "--compare exited non-zero"; }
for want in 'compared by pipeline' 'iteration time (s)' 'TFLOP/s per GPU' 'exposed comm (s)' 'bubble/idle (s)' \
            'peak memory (GB)' 'gpipe: tp=2,pp=4,dp=4,mb=1,gb=8,dtype=tf32,recompute=full,bucket=25,pipeline=gpipe' \
            'interleaved: cannot run: pipeline=interleaved needs vstages >= 2'; do
    grep -qF "$want" "$tmp/c.txt" || { cat "$tmp/c.txt" >&2; fail "--compare output lacks \"$want\""; }
done

"$TRAINSIM" run --model gpt-1024 --strategy "$S" --compare 'pipeline=1f1b,gpipe' --json > "$tmp/c.json" \
    || fail "--compare --json exited non-zero"
"$TRAINSIM" run --model gpt-1024 --strategy "$S" --json > "$tmp/one.json" || fail "plain run"
"$TRAINSIM" run --model gpt-1024 --strategy "$S,pipeline=gpipe" --json > "$tmp/gpipe.json" || fail "gpipe run"
python3 - "$tmp/c.json" "$tmp/one.json" "$tmp/gpipe.json" <<'PY' || fail "--compare JSON check"
import json, sys
c = json.load(open(sys.argv[1])); one = json.load(open(sys.argv[2])); gp = json.load(open(sys.argv[3]))
assert c["compare"] == "pipeline", c["compare"]
runs = c["runs"]
assert [r["value"] for r in runs] == ["1f1b", "gpipe"], runs
assert all(r["ok"] for r in runs)
# each value runs exactly the job a plain run of that strategy runs
for r, ref in ((runs[0], one), (runs[1], gp)):
    assert abs(r["iteration_time_s"] / ref["iteration_time_s"] - 1) < 1e-8, (r["iteration_time_s"], ref["iteration_time_s"])
    assert r["peak_memory_bytes"] == ref["peak_memory_bytes"]
# GPipe keeps every micro-batch's layer inputs: more memory than 1F1B
assert runs[1]["peak_memory_bytes"] > runs[0]["peak_memory_bytes"]
assert abs(runs[0]["speedup_vs_first"] - 1) < 1e-12
PY

if "$TRAINSIM" run --model gpt-1024 --compare 'pipelin=1f1b,gpipe' > "$tmp/o" 2> "$tmp/e"; then fail "bad --compare key accepted"; fi
grep -q 'unknown key "pipelin"' "$tmp/e" || { cat "$tmp/e" >&2; fail "bad key message"; }
if "$TRAINSIM" run --model gpt-1024 --compare 'pipeline' > "$tmp/o" 2> "$tmp/e"; then fail "--compare without values accepted"; fi
grep -q 'expected KEY=v1,v2' "$tmp/e" || { cat "$tmp/e" >&2; fail "--compare syntax message"; }

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
ev = json.load(open(sys.argv[3]))["traceEvents"]
cnt = [e for e in ev if e.get("ph") == "C" and e.get("name") == "memory GB"]
assert len(cnt) == len(rows), (len(cnt), len(rows))
assert {e["pid"] for e in cnt} == set(range(32))
PY
echo ok
