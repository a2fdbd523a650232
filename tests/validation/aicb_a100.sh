# trainsim validate --group aicb-a100 --check: within validation/thresholds.json.
set -u
out=$("$TRAINSIM" validate --group aicb-a100 --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | grep -A20 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; echo "FAIL: aicb-a100 exceeds its threshold (exit $rc)"; exit 1; }
echo "ok"
