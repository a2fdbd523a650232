# trainsim validate --group galvatron-pcie --check: every Galvatron PCIe
# coefficient key (9 on one server, 16 on two, 4 p2p) within its threshold.
set -u
out=$("$TRAINSIM" validate --group galvatron-pcie --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | tail -4
[ $rc -eq 0 ] || { echo "FAIL: galvatron-pcie exceeds its threshold (exit $rc)"; exit 1; }
n=$(echo "$out" | grep -cE '^  (allreduce|p2p) [12]x8 ')
[ "$n" -eq 29 ] || { echo "FAIL: expected 29 keys, got $n"; exit 1; }
echo "ok"
