# trainsim validate --check on the IBM FSDP and the commodity-GPU groups:
# the default (ctest) subset of expressible rows within validation/thresholds.json.
set -u
G=e2e-ibm-fsdp,e2e-commodity
out=$("$TRAINSIM" validate --group $G --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | tail -8
[ $rc -eq 0 ] || { echo "FAIL: $G exceed their thresholds (exit $rc)"; exit 1; }
echo "ok"
