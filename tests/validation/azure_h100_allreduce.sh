# trainsim validate --group azure-h100-allreduce --check: the simulated NCCL
# NVLS all-reduce on one ND H100 v5 node stays within validation/thresholds.json.
set -u
out=$("$TRAINSIM" validate --group azure-h100-allreduce --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | tail -4
[ $rc -eq 0 ] || { echo "FAIL: azure-h100-allreduce exceeds its threshold (exit $rc)"; exit 1; }
n=$(echo "$out" | grep -c '^  allreduce ')
[ "$n" -eq 24 ] || { echo "FAIL: expected 24 sizes (1 KB - 8 GB), got $n"; exit 1; }
echo "ok"
