# trainsim validate --group v100-gemm --check: DeepBench's V100 tensor-core
# GEMMs against the V100's curve, within validation/thresholds.json (the
# "cases" counts guard the row filter).
set -u
out=$("$TRAINSIM" validate --group v100-gemm --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | grep -A20 '^group / subset'
[ $rc -eq 0 ] || { echo "$out" | grep 'trainsim:'; echo "FAIL: v100-gemm exceeds its threshold (exit $rc)"; exit 1; }
echo "ok"
