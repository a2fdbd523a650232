# trainsim plan: every evaluated strategy carries its kernels' seconds by
# class (CSV kernels_*_s, JSON kernels_s), estimated with the time by the
# fast fidelity; they match `trainsim run`'s whole simulation (kernel work
# grows exactly with the layers and micro-batches the samples scale), and a
# cached sweep returns them as computed.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$T"
P="--platform oases-3090 --gpus 8 --model gpt-1024 --global-batch 32 --quiet"
S="tp=1,pp=1,dp=8,mb=4,gb=32,dtype=tf32,recompute=selective,zero=3;tp=2,pp=4,dp=1,mb=1,gb=32,dtype=tf32,recompute=full;tp=1,pp=4,dp=2,mb=1,gb=32,dtype=tf32,recompute=none"
"$TRAINSIM" plan $P --strategies "$S" --csv --cache c > plan.csv 2> /dev/null || fail "plan"
"$TRAINSIM" plan $P --strategies "$S" --csv --cache c > again.csv 2> /dev/null || fail "plan from the cache"
cmp -s plan.csv again.csv || fail "the cached sweep's table differs: $(diff plan.csv again.csv | head -4)"
"$TRAINSIM" plan $P --strategies "$S" --json --cache c > plan.json 2> /dev/null || fail "plan --json"
IFS=';' read -ra ALL <<< "$S"
for s in "${ALL[@]}"; do
    "$TRAINSIM" run --platform oases-3090 --gpus 8 --model gpt-1024 --strategy "$s" --json --quiet > "run_${#s}_$RANDOM.json" ||
        fail "run $s"
done
python3 - <<'PY' || fail "kernel classes of the plan against run"
import csv, glob, json
runs = {}
for f in glob.glob("run_*.json"):
    d = json.load(open(f))
    runs[d["strategy"]] = d["breakdown"]["kernels_s"]
rows = list(csv.DictReader(open("plan.csv")))
assert len(rows) == 3, rows
classes = ["gemm", "attention", "elementwise", "optimizer", "measured"]
for r in rows:
    # run prints the resolved strategy: match on the plan's keys
    full = [v for k, v in runs.items() if all(kv in k.split(",") for kv in r["strategy"].split(",") if not kv.startswith(("schedule=", "sp=", "vstages=")))]
    assert len(full) == 1, (r["strategy"], list(runs))
    for c in classes:
        fast, whole = float(r["kernels_%s_s" % c]), full[0][c]
        assert abs(fast - whole) <= 0.01 * whole + 1e-12, (r["strategy"], c, fast, whole)
    assert float(r["kernels_gemm_s"]) > 0 and float(r["kernels_optimizer_s"]) > 0, r
js = json.load(open("plan.json"))
for e in js["ranking"]:
    assert set(e["kernels_s"]) == set(classes), e
PY
echo ok
