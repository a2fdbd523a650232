# trainsim validate --group e2e-h200-steps --check: this project's three
# single-GPU H200 training steps (h200-micro/steps.csv) within
# validation/thresholds.json; a row emitted with --emit (a one-GPU cluster
# JSON: no built-in platform has H200s), run by `trainsim run`, gives
# validate's own figure.  The row checks are e2e_h100_steps.sh's (the same
# code, g_steps.c).
set -u
D="$SRC/validation/data"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$TRAINSIM" validate --group e2e-h200-steps --check --data "$D" 2>&1); rc=$?
echo "$out" | grep -A3 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; fail "e2e-h200-steps exceeds its threshold (exit $rc)"; }
echo "$out" | grep -q 'rows: 3 in the data, 3 expressible, 3 simulated' || fail "not every row simulated: $out"
echo "$out" | grep -q '^  gpt-1.3b 1 x H200 tp=1,pp=1,dp=1,mb=4,gb=4 .*median of 8 steps' || fail "gpt-1.3b case: $out"

mkdir -p "$T/emit"
"$TRAINSIM" validate --group e2e-h200-steps --rows gpt-350m --data "$D" --json --emit "$T/emit" > "$T/v.json" \
  || fail "--emit run"
grep -q '"gpu": "H200", "gpus_per_node": 1' "$T/emit/gpt-350m.cluster.json" \
  || fail "cluster JSON: $(cat "$T/emit/gpt-350m.cluster.json")"
cmd=$(grep '^trainsim run ' "$T/emit/gpt-350m.sh") || fail "no run command in gpt-350m.sh"
case "$cmd" in
  *"--platform gpt-350m.cluster.json "*"kernels=eager"*"autocast=1"*"loss=torch"*) ;;
  *) fail "emitted command: $cmd" ;;
esac
(cd "$T/emit" && eval "\"\$TRAINSIM\" ${cmd#trainsim } --json") > "$T/r.json" || fail "the emitted command: $cmd"
if command -v python3 >/dev/null; then
  python3 - "$T/v.json" "$T/r.json" <<'PY' || fail "emitted run differs from validate"
import json, sys
v = json.load(open(sys.argv[1]))["groups"][0]["cases"]
r = json.load(open(sys.argv[2]))
assert len(v) == 1 and v[0]["name"].startswith("gpt-350m 1 x H200 "), v
assert abs(r["iteration_time_s"] / v[0]["simulated"] - 1) < 1e-9, (r["iteration_time_s"], v[0]["simulated"])
assert abs(v[0]["measured"] - 0.116328) < 1e-9, v[0]["measured"]  # step_ms_median of the row, in s
PY
fi
echo "ok"
