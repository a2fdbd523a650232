# trainsim validate: outputs (table, JSON, CSV, SVG), determinism, --check
# failing on a strict threshold, and bad inputs with clear messages.
set -u
D="$SRC/validation/data"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
G=azure-a100-allreduce,galvatron-pcie

"$TRAINSIM" validate --group $G --data "$D" > "$T/a.txt" || fail "text run"
"$TRAINSIM" validate --group $G --data "$D" > "$T/b.txt" || fail "second text run"
cmp -s "$T/a.txt" "$T/b.txt" || fail "two runs differ"
grep -q '^azure-a100-allreduce/>=1MB ' "$T/a.txt" || fail "no per-subset summary line"
grep -q 'MAPE %' "$T/a.txt" || fail "no MAPE column"

"$TRAINSIM" validate --group $G --data "$D" --json > "$T/a.json" || fail "json run"
if command -v python3 >/dev/null; then
  python3 - "$T/a.json" <<'PY' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["name"]: x for x in d["groups"]}
a = g["azure-a100-allreduce"]
assert len(a["cases"]) == 24, len(a["cases"])
errs = [abs(c["error_pct"]) for c in a["cases"]]
assert abs(a["stats"]["mape_pct"] - sum(errs) / len(errs)) < 1e-6
assert abs(a["stats"]["worst_pct"] - max(errs)) < 1e-9
assert set(a["subsets"]) == {">=1MB", "<1MB"}
c = a["cases"][0]
assert abs(c["error_pct"] - 100 * (c["simulated"] - c["measured"]) / c["measured"]) < 1e-6
PY
fi

"$TRAINSIM" validate --group $G --data "$D" --csv > "$T/a.csv" || fail "csv run"
head -1 "$T/a.csv" | grep -qx "group,subset,case,unit,x,measured,simulated,error_pct,compute_s,exposed_comm_s,bubble_s,note,kernels_gemm_s,kernels_attention_s,kernels_elementwise_s,kernels_optimizer_s,kernels_measured_s" || fail "CSV header"
[ "$(wc -l < "$T/a.csv")" -eq $((1 + 24 + 29)) ] || fail "CSV rows: $(wc -l < "$T/a.csv")"

"$TRAINSIM" validate --group $G --data "$D" --svg "$T/v.svg" > /dev/null || fail "svg run"
head -1 "$T/v.svg" | grep -q '^<?xml' || fail "SVG header"
grep -q '<svg ' "$T/v.svg" && grep -q '</svg>' "$T/v.svg" || fail "SVG element"
[ "$(grep -c '<circle' "$T/v.svg")" -ge 53 ] || fail "SVG points"
grep -q '(log)' "$T/v.svg" || fail "log axes for sizes spanning decades"

# --check fails on a threshold the group cannot meet, and names it
printf '{"groups": {"azure-a100-allreduce": {"mape": 0.001}, "galvatron-pcie": {"worst": 0.001}}}\n' > "$T/strict.json"
"$TRAINSIM" validate --group $G --data "$D" --check --thresholds "$T/strict.json" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 1 ] || fail "--check with strict thresholds: exit $rc, expected 1"
grep -q 'azure-a100-allreduce: MAPE' "$T/err" || fail "--check message: $(cat "$T/err")"
# a group with no threshold recorded fails --check
printf '{"groups": {"galvatron-pcie": {"worst": 1000}}}\n' > "$T/partial.json"
"$TRAINSIM" validate --group $G --data "$D" --check --thresholds "$T/partial.json" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'no threshold recorded for group azure-a100-allreduce' "$T/err" || fail "missing threshold: $(cat "$T/err")"

# bad inputs
"$TRAINSIM" validate --group nosuch > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'no group named "nosuch"' "$T/err" || fail "unknown group: exit $rc $(cat "$T/err")"
"$TRAINSIM" validate --group azure-a100-allreduce --data "$T/nodata" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q "$T/nodata/collectives/azure_nd_a100_v4_allreduce_busbw.csv" "$T/err" || fail "missing data: $(cat "$T/err")"
mkdir -p "$T/baddata/collectives"
printf 'message_size_label,message_size_bytes_approx,busbw_GBps\n1K,1024,fast\n' > "$T/baddata/collectives/azure_nd_a100_v4_allreduce_busbw.csv"
"$TRAINSIM" validate --group azure-a100-allreduce --data "$T/baddata" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q 'line 2, column "busbw_GBps": expected a number, got "fast"' "$T/err" || fail "bad number: $(cat "$T/err")"
"$TRAINSIM" validate --trace "$T/missing.json.gz" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q "$T/missing.json.gz" "$T/err" || fail "missing trace: $(cat "$T/err")"
head -c 300 "$D/kineto-traces/nccl_parser_config/nccl_data.json.gz" > "$T/cut.json.gz"
"$TRAINSIM" validate --trace "$T/cut.json.gz" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q "$T/cut.json.gz" "$T/err" || fail "truncated trace: $(cat "$T/err")"
"$TRAINSIM" validate --bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option"

# trace summary
"$TRAINSIM" validate --trace "$D/kineto-traces/nccl_parser_config/nccl_data.json.gz" > "$T/s.txt" || fail "trace summary"
grep -q 'NCCL 21' "$T/s.txt" && grep -q 'allreduce *8196000 B *group 2' "$T/s.txt" || fail "trace summary content: $(cat "$T/s.txt")"
echo "ok"
