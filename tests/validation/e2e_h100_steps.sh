# trainsim validate --group e2e-h100-steps --check: this project's seven
# single-GPU H100 training steps (h100-micro/steps.csv) within
# validation/thresholds.json; a row emitted with --emit, run by `trainsim
# run`, gives validate's own figure; bad rows are errors naming file, line
# and column.
set -u
D="$SRC/validation/data"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$TRAINSIM" validate --group e2e-h100-steps --check --data "$D" 2>&1); rc=$?
echo "$out" | grep -A3 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; fail "e2e-h100-steps exceeds its threshold (exit $rc)"; }
echo "$out" | grep -q 'rows: 7 in the data, 7 expressible, 7 simulated' || fail "not every row simulated: $out"
# the model and batch come from the row, the stack is measure.py's
echo "$out" | grep -q '^  gpt-1.3b 1 x H100-SXM tp=1,pp=1,dp=1,mb=4,gb=4 .*median of 8 steps' \
  || fail "gpt-1.3b case: $out"

# --emit: the row as `trainsim run --platform azure-nd-h100-v5 --gpus 1 ...`
mkdir -p "$T/emit"
"$TRAINSIM" validate --group e2e-h100-steps --rows gpt-350m --data "$D" --json --emit "$T/emit" > "$T/v.json" \
  || fail "--emit run"
[ ! -e "$T/emit/gpt-350m.cluster.json" ] || fail "a cluster JSON emitted for a named platform"
cmd=$(grep '^trainsim run ' "$T/emit/gpt-350m.sh") || fail "no run command in gpt-350m.sh"
case "$cmd" in
  *"--platform azure-nd-h100-v5 --gpus 1 "*"kernels=eager"*"autocast=1"*"loss=torch"*) ;;
  *) fail "emitted command: $cmd" ;;
esac
grep -q '"ffn": 4096' "$T/emit/gpt-350m.model.json" || fail "ffn is not 4 x hidden: $(cat "$T/emit/gpt-350m.model.json")"
(cd "$T/emit" && eval "\"\$TRAINSIM\" ${cmd#trainsim } --json") > "$T/r.json" || fail "the emitted command: $cmd"
if command -v python3 >/dev/null; then
  python3 - "$T/v.json" "$T/r.json" <<'PY' || fail "emitted run differs from validate"
import json, sys
v = json.load(open(sys.argv[1]))["groups"][0]["cases"]
r = json.load(open(sys.argv[2]))
assert len(v) == 1 and v[0]["name"].startswith("gpt-350m "), v
assert abs(r["iteration_time_s"] / v[0]["simulated"] - 1) < 1e-9, (r["iteration_time_s"], v[0]["simulated"])
assert abs(v[0]["measured"] - 0.128607) < 1e-9, v[0]["measured"]  # step_ms_median of the row, in s
b = v[0]["breakdown"]
assert abs(b["compute_s"] + b["exposed_comm_s"] + b["bubble_s"] - v[0]["simulated"]) < 1e-6 * v[0]["simulated"], b
PY
fi

# bad rows: each an error naming the file, the line and the column
bad() { # $1: sed expression on line 3 (gpt-350m), $2: expected message (grep -E)
  mkdir -p "$T/bad/h100-micro"
  sed "3$1" "$D/h100-micro/steps.csv" > "$T/bad/h100-micro/steps.csv"
  "$TRAINSIM" validate --group e2e-h100-steps --data "$T/bad" > /dev/null 2> "$T/err"; rc=$?
  [ $rc -ne 0 ] && grep -Eq "$2" "$T/err" || fail "bad row ($1): exit $rc $(cat "$T/err")"
}
bad 's/,1024,24,/,1024.5,24,/' 'h100-micro/steps.csv: line 3 \(row "gpt-350m"\), column "hidden": expected a positive whole number, got 1024.5'
bad 's/,1024,24,/,abc,24,/' 'h100-micro/steps.csv: line 3, column "hidden": expected a number, got "abc"'
bad 's/,1024,24,16,/,1024,24,15,/' 'line 3 \(row "gpt-350m"\), column "heads": expected a divisor of the hidden size'
bad 's/355985408/355985409/' 'line 3 \(row "gpt-350m"\), column "params": expected 355985408, the parameters of measure.py'
bad 's/128.607/-1/' 'line 3 \(row "gpt-350m"\), column "step_ms_median": expected a positive number, got -1'
bad 's/^gpt-350m/gpt-125m/' 'line 3 \(row "gpt-125m"\), column "name": expected a name not used by an earlier row'
mkdir -p "$T/bad/h100-micro"
sed '1s/micro_batch/mbs/' "$D/h100-micro/steps.csv" > "$T/bad/h100-micro/steps.csv"
"$TRAINSIM" validate --group e2e-h100-steps --data "$T/bad" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q 'steps.csv: no column "micro_batch"' "$T/err" || fail "missing column: $(cat "$T/err")"
echo "ok"
