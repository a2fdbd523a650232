# trainsim validate --group oases-3090-blocks --check: every row of the Oases
# RTX 3090 per-block profile (4 blocks x 50 rows, and the 32-GPU world
# all-reduce of each row) within its recorded threshold (fid, issue 3).
set -u
out=$("$TRAINSIM" validate --group oases-3090-blocks --check --data "$SRC/validation/data" 2>&1); rc=$?
echo "$out" | tail -7
[ $rc -eq 0 ] || { echo "FAIL: oases-3090-blocks exceeds its threshold (exit $rc)"; exit 1; }
n=$(echo "$out" | grep -cE '^  (attn_fwd|attn_bwd|mlp_fwd|mlp_bwd|world32) ')
[ "$n" -eq 250 ] || { echo "FAIL: expected 250 cases, got $n"; exit 1; }
echo "ok"
