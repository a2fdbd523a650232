# trainsim validate --group h100-micro --check: this project's H100 measurement (GEMM, attention, element-wise) within validation/thresholds.json.
set -u
out=$("$TRAINSIM" validate --group h100-micro --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | grep -A20 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; echo "FAIL: h100-micro exceeds its threshold (exit $rc)"; exit 1; }
echo "ok"
