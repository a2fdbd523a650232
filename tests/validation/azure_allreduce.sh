# trainsim validate --group azure-a100-allreduce / azure-h100-allreduce --check:
# the simulated NCCL all-reduce on one ND A100 v4 node (ring/tree) and on one
# ND H100 v5 node (NVLS) stays within validation/thresholds.json.
set -u
for g in azure-a100-allreduce azure-h100-allreduce; do
    out=$("$TRAINSIM" validate --group $g --check --data "$SRC/validation/data" 2>&1); rc=$?
    echo "$out" | tail -4
    [ $rc -eq 0 ] || { echo "FAIL: $g exceeds its threshold (exit $rc)"; exit 1; }
    n=$(echo "$out" | grep -c '^  allreduce ')
    [ "$n" -eq 24 ] || { echo "FAIL: $g: expected 24 sizes (1 KB - 8 GB), got $n"; exit 1; }
done
echo "ok"
