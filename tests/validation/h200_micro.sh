# trainsim validate --group h200-micro --check: this project's H200 measurement (GEMM, attention, element-wise) within validation/thresholds.json.
set -u
out=$("$TRAINSIM" validate --group h200-micro --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | grep -A20 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; echo "FAIL: h200-micro exceeds its threshold (exit $rc)"; exit 1; }
echo "$out" | grep -q '^h200-micro/gemm-fitted  *315 ' || { echo "FAIL: expected 315 fitted GEMM rows: $out"; exit 1; }
echo "ok"
