# trainsim validate --group kineto-elementwise --check: within validation/thresholds.json.
set -u
out=$("$TRAINSIM" validate --group kineto-elementwise --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | grep -A20 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; echo "FAIL: kineto-elementwise exceeds its threshold (exit $rc)"; exit 1; }
echo "ok"
