#!/bin/sh
# validation/attribute.py: a miss made of one class's kernels is attributed
# to that class (its fitted scale, the error left), cases without kernel
# classes are left out, and input without the columns is an error.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
S="$SRC/validation/attribute.py"
H='group,subset,case,unit,x,measured,simulated,error_pct,compute_s,exposed_comm_s,bubble_s,note,kernels_gemm_s,kernels_attention_s,kernels_elementwise_s,kernels_optimizer_s,kernels_measured_s'
# measured = simulated + 1.0 x the element-wise seconds: element-wise x2.00, no error left
{
    echo "$H"
    echo 'g,,a-1 x,s,0,1.30,1.00,0,1,0,0,full,0.60,0.10,0.30,0,0'
    echo 'g,,a-2 x,s,0,2.20,2.00,0,2,0,0,full,1.60,0.20,0.20,0,0'
    echo 'g,,a-3 x,s,0,0.90,0.50,0,0.5,0,0,full,0.05,0.05,0.40,0,0'
    echo 'g,,a-4 x,s,0,3.00,3.00,0,3,0,0,fast fidelity,,,,,'
} > "$T/c.csv"
python3 "$S" "$T/c.csv" > "$T/out" || fail "attribute.py failed"
grep -q '^g: 3 cases' "$T/out" || fail "the fast-fidelity case (no classes) should be left out: $(cat "$T/out")"
grep -E '^  elementwise +elementwise x2\.00 +0\.00 ' "$T/out" >/dev/null || fail "element-wise not attributed: $(cat "$T/out")"
grep -E '^  as simulated +[0-9]' "$T/out" >/dev/null || fail "no baseline line"
python3 "$S" --exclude a-3 "$T/c.csv" | grep -q '^g: 2 cases' || fail "--exclude"
python3 "$S" --rows a-1,a-2 "$T/c.csv" | grep -q '^g: 2 cases' || fail "--rows"
echo 'group,case,measured' > "$T/old.csv"
if python3 "$S" "$T/old.csv" 2> "$T/err"; then fail "input without kernel columns accepted"; fi
grep -q 'kernels_\*_s' "$T/err" || fail "unclear error: $(cat "$T/err")"
# the columns come from a real run: a whole-run e2e case carries its classes
"$TRAINSIM" validate --data "$SRC/validation/data" --group e2e-h100-steps --csv > "$T/s.csv"
python3 "$S" "$T/s.csv" | grep -q '^e2e-h100-steps: 7 cases' || fail "e2e-h100-steps cases without kernel classes"
# and the text report gives the group's mean shares by class
"$TRAINSIM" validate --group e2e-h100-steps --data "$SRC/validation/data" > "$T/s.txt"
grep -Eq '^  kernels \(mean share of their own seconds over the 7 cases that carry them\): GEMM [0-9.]+ %, attention [0-9.]+ %, element-wise [0-9.]+ %, optimizer [0-9.]+ %$' "$T/s.txt" ||
    fail "no kernel shares line: $(grep kernels "$T/s.txt")"
echo ok
