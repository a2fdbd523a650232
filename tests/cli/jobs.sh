# jobs.sh — several jobs on one cluster (`run --job A.json --job B.json`):
#   - two jobs each moving 1 GB between node 0 and node 1 of oases-3090
#     (one NIC per node) share both NICs: each takes exactly twice as long
#     as alone (a fair share of the bottleneck);
#   - the same jobs on disjoint servers of the non-blocking switch: no
#     slowdown;
#   - two generated Megatron jobs on halves of the same two RTX 4090
#     servers: slower together, both, and the NICs they share are named;
#   - the JSON is deterministic, a trace of the whole is written;
#   - bad job files are refused with the file, the field and what was expected.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"

cat > "$tmp/xfer.json" <<'J'
{"format": "trainsim-schedule", "version": 1, "nranks": 2,
 "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [{"id": 0, "op": "send", "peer": 1, "bytes": 1000000000}]}]},
           {"rank": 1, "streams": [{"name": "s", "ops": [{"id": 1, "op": "recv", "peer": 0, "bytes": 1000000000}]}]}]}
J
echo '{"name": "A", "schedule": "xfer.json", "gpus": [0, 4]}' > "$tmp/A.json"
echo '{"name": "B", "schedule": "xfer.json", "gpus": [1, 5]}' > "$tmp/B.json"
echo '{"name": "C", "schedule": "xfer.json", "gpus": [8, 12]}' > "$tmp/C.json"
echo '{"name": "N", "model": "gpt-1024", "strategy": "tp=4,mb=1,gb=8,dtype=bf16", "nodes": [2, 3]}' > "$tmp/N.json"
echo '{"name": "L", "model": "gpt-1024", "strategy": "tp=4,mb=2,gb=32,dtype=bf16", "gpus": [0,1,2,3,8,9,10,11]}' > "$tmp/L.json"
echo '{"name": "M", "model": "gpt-1024", "strategy": "tp=4,mb=2,gb=32,dtype=bf16", "count": 8, "placement": "spread"}' > "$tmp/M.json"

"$TRAINSIM" run --platform oases-3090 --job "$tmp/A.json" --job "$tmp/B.json" --json > "$tmp/ab.out"
"$TRAINSIM" run --platform oases-3090 --job "$tmp/A.json" --job "$tmp/C.json" --json > "$tmp/ac.out"
"$TRAINSIM" run --platform oases-3090 --job "$tmp/A.json" --job "$tmp/N.json" --json > "$tmp/an.out"
"$TRAINSIM" run --platform rtx4090-4x8 --job "$tmp/L.json" --job "$tmp/M.json" --json --trace "$tmp/lm.trace" > "$tmp/lm.out"
"$TRAINSIM" run --platform rtx4090-4x8 --job "$tmp/L.json" --job "$tmp/M.json" --json > "$tmp/lm2.out"
cmp -s "$tmp/lm.out" "$tmp/lm2.out" || fail "the same jobs twice give different JSON"
"$TRAINSIM" run --platform rtx4090-4x8 --job "$tmp/L.json" --job "$tmp/M.json" > "$tmp/lm.txt"
grep -q "^shared  *L and M: NICs n0-nic0, n1-nic0" "$tmp/lm.txt" || { fail "the shared NICs are not named"; cat "$tmp/lm.txt" >&2; }

python3 - "$tmp" <<'PY' || fail "closed forms"
import json, sys
d = sys.argv[1]
load = lambda n: {j["name"]: j for j in json.load(open(f"{d}/{n}"))["jobs"]}
bad = []
ab, ac, an, lm = load("ab.out"), load("ac.out"), load("an.out"), load("lm.out")
for n in "AB":
    if abs(ab[n]["slowdown"] - 2) > 0.01:
        bad.append(f"A and B share both NICs: {n} slows by {ab[n]['slowdown']:.4f}, expected 2")
for n in "AC":
    if abs(ac[n]["slowdown"] - 1) > 1e-9:
        bad.append(f"A and C on disjoint servers: {n} slows by {ac[n]['slowdown']:.6f}, expected 1")
if an["N"]["gpus"] != [8, 9, 10, 11, 12, 13, 14, 15]:
    bad.append(f"nodes [2, 3] of oases-3090 are GPUs 8-15, got {an['N']['gpus']}")
if abs(an["N"]["slowdown"] - 1) > 1e-9 or abs(an["A"]["slowdown"] - 1) > 1e-9:
    bad.append(f"A and N on disjoint servers slow down: {an['A']['slowdown']}, {an['N']['slowdown']}")
if lm["M"]["gpus"] != [4, 12, 16, 24, 5, 13, 17, 25]:
    bad.append(f"spread placement around L's GPUs: {lm['M']['gpus']}")
for n in "LM":
    if not lm[n]["slowdown"] > 1.001:
        bad.append(f"L and M share nodes 0 and 1: {n} does not slow down ({lm[n]['slowdown']})")
    if not lm[n]["shared_exposed_comm_s"] > lm[n]["alone_exposed_comm_s"]:
        bad.append(f"{n}: the slowdown is not in its exposed communication")
if bad:
    print("\n".join(bad)); sys.exit(1)
PY
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert any('L/' in json.dumps(e) for e in t['traceEvents'][:200])" "$tmp/lm.trace" \
    || fail "the trace does not name the jobs' streams"

# a schedule whose dependencies point forward (rank 0 waits for rank 1's
# kernel, a later op id, as imported traces have them): placed as it is
cat > "$tmp/fwd.json" <<'J'
{"format": "trainsim-schedule", "version": 1, "nranks": 2,
 "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 0.5, "deps": [1]}]}]},
           {"rank": 1, "streams": [{"name": "s", "ops": [{"id": 1, "op": "compute", "kernel": "fixed", "seconds": 1}]}]}]}
J
echo '{"name": "F", "schedule": "fwd.json", "gpus": [6, 2]}' > "$tmp/F.json"
"$TRAINSIM" run --platform oases-3090 --job "$tmp/F.json" --json > "$tmp/f.out" || fail "a schedule with forward dependencies is refused"
python3 -c "
import json, sys; j = json.load(open(sys.argv[1]))['jobs'][0]
assert abs(j['alone_iteration_time_s'] - 1.5) < 1e-9, j" "$tmp/f.out" || fail "the forward dependency is not kept"

j() { echo "$2" > "$tmp/$1.json"; }
j over '{"schedule": "xfer.json", "gpus": [0, 1]}'
expect_fail "over.json" "gpus" "GPU 0" "another job" -- run --platform oases-3090 --job "$tmp/A.json" --job "$tmp/over.json"
j unk '{"schedule": "xfer.json", "gpus": [0, 1], "gpu": 3}'
expect_fail "unk.json" "gpu" "unknown field" -- run --job "$tmp/unk.json"
j both '{"schedule": "xfer.json", "model": "gpt-1024", "gpus": [0, 1]}'
expect_fail "both.json" "either" -- run --job "$tmp/both.json"
j where '{"schedule": "xfer.json"}'
expect_fail "where.json" "exactly one of" -- run --job "$tmp/where.json"
j range '{"schedule": "xfer.json", "gpus": [0, 32]}'
expect_fail "range.json" "gpus[1]" "0 to 31" -- run --job "$tmp/range.json"
j many '{"model": "gpt-1024", "count": 40}'
expect_fail "many.json" "count" "40" -- run --job "$tmp/many.json"
j ranks '{"schedule": "xfer.json", "gpus": [0, 1, 2]}'
expect_fail "ranks.json" "2 ranks" "3 GPUs" -- run --job "$tmp/ranks.json"
j tp3 '{"model": "gpt-1024", "strategy": "tp=3", "count": 8}'
expect_fail "tp3.json" -- run --job "$tmp/tp3.json"
j place '{"model": "gpt-1024", "count": 8, "placement": "random"}'
expect_fail "place.json" "placement" "packed" -- run --job "$tmp/place.json"
expect_fail "A.json" "name" "\"A\"" -- run --platform oases-3090 --job "$tmp/A.json" --job "$tmp/A.json"
expect_exit 2 "--job" "--strategy" -- run --job "$tmp/A.json" --strategy tp=2
finish
