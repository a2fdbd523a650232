#!/usr/bin/env bash
# trainsim compare: two small user clusters x a tiny model.
#  - a given strategy: the figures equal `trainsim run`'s, time to train =
#    tokens / tokens per second, the JSON records every input (cluster JSON
#    in full and its hash, model dimensions, strategy, version) and the
#    capital sums its parts; repeated: byte-identical from the cache;
#  - the planner's choice (a narrow space) is at least as fast as the given one;
#  - --vary nic and nodes (weak scaling doubles the batch), CSV, SVG bars and lines;
#  - bad inputs: an unknown cluster and a strategy that does not fit one
#    cluster are reported in their columns while the others run; a negative
#    price, a bad costs file, a bad --vary are errors naming the cluster / field.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
cat > tiny.json <<'EOF'
{"layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "seq": 128, "vocab": 1000}
EOF
cat > a.json <<'EOF'
{"name": "small-4090", "nodes": 2, "node": {"gpu": "RTX4090", "gpus_per_node": 2, "nic": "25GbE"}, "fabric": {"type": "switch"}}
EOF
cat > b.json <<'EOF'
{"name": "small-h100", "nodes": 1, "node": {"gpu": "H100-PCIe", "gpus_per_node": 2, "nvlink": {"pairs": [[0, 1]]}}}
EOF
S=tp=2,mb=1,gb=8
common=(compare --model tiny.json --tokens 2B --quiet --cache c)

# a given strategy on both
"$TRAINSIM" "${common[@]}" --clusters a.json,b.json --strategy $S --price-per-gpu-hour 0.4,2 --carbon 300 \
  --json > g.json || fail "compare failed"
"$TRAINSIM" "${common[@]}" --clusters a.json,b.json --strategy $S --price-per-gpu-hour 0.4,2 --carbon 300 \
  --json > g2.json
cmp g.json g2.json || fail "a repeated comparison differs"
"$TRAINSIM" run --platform a.json --model tiny.json --strategy $S,dtype=bf16 --json > run_a.json
python3 - <<'PY'
import json
g = json.load(open("g.json")); run = json.load(open("run_a.json"))
assert g["trainsim_version"] and g["model"]["layers"] == 2 and g["model"]["hidden"] == 256, g["model"]
assert g["job"]["tokens"] == 2e9 and "--strategy" in g["command"]
a, b = g["clusters"]
assert a["ok"] and b["ok"], (a.get("error"), b.get("error"))
assert a["cluster_json"]["name"] == "small-4090" and len(a["cluster_hash"]) == 16 and a["cluster_hash"] != b["cluster_hash"]
assert a["strategy_from"] == "given" and a["strategy"].startswith("tp=2,pp=1,dp=2,mb=1,gb=8,dtype=bf16")
# the same simulation as trainsim run
assert abs(a["iteration_time_s"] - run["iteration_time_s"]) <= 1e-9 * run["iteration_time_s"], (a["iteration_time_s"], run["iteration_time_s"])
for c in (a, b):
    r = c["run"]
    tps = c["tokens_per_s"]
    assert abs(r["time_to_train_s"] - 2e9 / tps) <= 1e-9 * r["time_to_train_s"], "time to train = tokens / tokens per second"
    assert abs(tps - 8 * 128 / c["iteration_time_s"]) <= 1e-9 * tps
    items = c["bill_of_materials"]["items"]
    cap = sum(i["count"] * i["unit_price_usd"] for i in items)
    assert abs(r["cost"]["capital_usd"] - cap) <= 1e-6 * cap, "capital = sum of parts"
    assert all(i["price_source"] and i["power_source"] for i in items)
    rent = r["cost"]["rented"]
    assert abs(rent["run_usd"] - c["gpus"] * r["time_to_train_s"] / 3600 * c["price_per_gpu_hour_usd"]) <= 1e-6 * rent["run_usd"]
    e = r["energy"]
    assert abs(e["run_co2_kg"] - e["run_kwh"] * 0.3) <= 1e-9 * e["run_co2_kg"]
    assert e["per_iteration_j"]["gpu_busy"] > 0 and e["per_iteration_j"]["servers"] > 0
parts = {i["part"] for i in a["bill_of_materials"]["items"]}
assert parts == {"gpu", "server", "nic", "switch_port"}, parts
assert {i["part"] for i in b["bill_of_materials"]["items"]} == {"gpu", "server", "nvlink_bridge"}
PY

# text: the table, the strategies, the sources with assumptions marked
"$TRAINSIM" "${common[@]}" --clusters a.json,b.json --strategy $S > g.txt
for want in "time to train (days)" "kWh per M tokens" "capital cost (k\$)" "owned: \$ per M tokens" \
            "a.json: tp=2,pp=1,dp=2" "(given)" "assumption" "inputs: trainsim"; do
  grep -qF "$want" g.txt || fail "text output lacks \"$want\": $(cat g.txt)"
done

# the planner's choice on a narrow space is at least as fast as the given strategy
"$TRAINSIM" "${common[@]}" --clusters a.json --global-batch 8 --axis recompute=none --axis sp=0 --axis zero=0,1 \
  --axis vstages=1 --json > s.json
python3 - <<'PY'
import json
s = json.load(open("s.json"))["clusters"][0]; g = json.load(open("g.json"))["clusters"][0]
assert s["ok"] and s["strategy_from"] == "search" and s["candidates"] > 1, s
assert s["iteration_time_s"] <= g["iteration_time_s"] * (1 + 1e-9), (s["strategy"], s["iteration_time_s"], g["iteration_time_s"])
PY

# --vary: a line per NIC; weak scaling doubles the batch with the nodes; CSV and SVG
"$TRAINSIM" "${common[@]}" --clusters a.json --vary nic=10GbE,100GbE --strategy tp=1,mb=1 --csv --svg v.svg > v.csv
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("v.csv")))
assert [r["cluster"] for r in rows] == ["nic=10GbE", "nic=100GbE"] and all(r["status"] == "ok" for r in rows), rows
assert float(rows[1]["iteration_s"]) < float(rows[0]["iteration_s"]), "a 100GbE NIC is not faster than 10GbE for DP over two nodes"
PY
grep -q "<polyline" v.svg && grep -q "nic=10GbE" v.svg || fail "no lines in the --vary chart"
"$TRAINSIM" "${common[@]}" --clusters a.json --vary nodes=1,2 --scaling weak --global-batch 4 --strategy tp=1,mb=1 \
  --csv > w.csv
python3 -c "
import csv
rows = list(csv.DictReader(open('w.csv')))
assert [int(r['global_batch']) for r in rows] == [4, 8], rows"
"$TRAINSIM" "${common[@]}" --clusters a.json,b.json --strategy $S --svg bars.svg > /dev/null
[ "$(grep -c '<rect x=' bars.svg)" -ge 6 ] || fail "expected a bar per cluster and chart"

# bad inputs: one cluster's failure keeps the others
set +e
"$TRAINSIM" "${common[@]}" --clusters a.json,nope,b.json --strategy tp=4,mb=1 > bad.txt 2> bad.err
rc=$?
set -e
[ $rc = 0 ] || fail "a run with one good cluster should exit 0 (got $rc)"
grep -q 'nope: cannot run: cluster nope: unknown platform "nope"' bad.txt || fail "unknown cluster: $(cat bad.txt)"
grep -q 'b.json: cannot run: cluster b.json: strategy tp=4,mb=1: ' bad.txt || fail "misfit strategy: $(cat bad.txt)"
grep -q 'a.json: tp=4,pp=1,dp=1' bad.txt || fail "the fitting cluster lost: $(cat bad.txt)"
expect_error() {  # want-substring, args...
  local want=$1; shift
  if "$TRAINSIM" "$@" > out.txt 2> err.txt; then fail "accepted: $*"; fi
  grep -qF -- "$want" err.txt || fail "\"$*\": wanted \"$want\", got: $(cat err.txt)"
}
expect_error "--price-per-gpu-hour: cluster b.json: expected a price >= 0 (USD per GPU hour), got \"-2\"" \
  "${common[@]}" --clusters a.json,b.json --price-per-gpu-hour 1,-2
echo '{"prices_USD": {"nic:25GbE": -300}}' > neg.json
expect_error "--costs: neg.json: prices_USD.nic:25GbE: expected a price in USD >= 0, got -300" \
  "${common[@]}" --clusters a.json --costs neg.json
expect_error "--vary: expected FIELD=V1,V2" "${common[@]}" --clusters a.json --vary nic
expect_error "--vary varies one cluster" "${common[@]}" --clusters a.json,b.json --vary nodes=1,2
expect_error "--tokens: expected a positive count" "${common[@]}" --clusters a.json --tokens 3X
expect_error "give the clusters with --clusters" compare --model tiny.json
"$TRAINSIM" "${common[@]}" --clusters a.json --vary gpu=RTX4090,RTX9090 --strategy tp=1,mb=1 > vg.txt
grep -q 'gpu=RTX9090: cannot run: cluster a.json: gpu=RTX9090: unknown GPU model "RTX9090"' vg.txt || fail "$(cat vg.txt)"
# a costs file replaces a price and names its source
echo '{"source": "vendor quote", "date": "2024-06", "prices_USD": {"gpu:RTX4090": 1000}}' > q.json
"$TRAINSIM" "${common[@]}" --clusters a.json --strategy $S --costs q.json --json > q.out
python3 -c "
import json
c = json.load(open('q.out'))['clusters'][0]
g = [i for i in c['bill_of_materials']['items'] if i['part'] == 'gpu'][0]
assert g['unit_price_usd'] == 1000 and g['price_source'] == 'vendor quote (q.json)' and not g['price_assumed'], g"
# trainsim --compare platform=... is this comparison
"$TRAINSIM" --model tiny.json --strategy $S,dtype=bf16 --compare platform=a.json,b.json > p.txt 2> /dev/null
grep -q "a.json: tp=2,pp=1,dp=2" p.txt && grep -q "b.json: tp=2,pp=1,dp=1" p.txt || fail "--compare platform: $(cat p.txt)"
echo ok
