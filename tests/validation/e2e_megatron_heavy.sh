# trainsim validate --check on the end-to-end groups of Megatron-style
# stacks (NeMo on H100 and Blackwell, DLPerf V100, BLOOM, MT-NLG/OPT):
# each expressible row of the default (ctest) subset simulated and within
# validation/thresholds.json, and the same output twice.
set -u
G=e2e-nemo-h100,e2e-nemo-blackwell,e2e-dlperf-v100,e2e-bloom,e2e-large
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$TRAINSIM" validate --group $G --check --data "$SRC/validation/data" > "$T/a.txt" 2> "$T/err"; rc=$?
tail -$(( $(echo $G | tr , '\n' | wc -l) + 1 )) "$T/a.txt"
[ $rc -eq 0 ] || { cat "$T/err"; echo "FAIL: $G exceed their thresholds (exit $rc)"; exit 1; }
"$TRAINSIM" validate --group e2e-dlperf-v100 --data "$SRC/validation/data" > "$T/b.txt" 2>&1 || { echo "FAIL: rerun"; exit 1; }
sed -n '/^e2e-dlperf-v100:/,/^$/p' "$T/a.txt" > "$T/a1.txt"
sed -n '/^e2e-dlperf-v100:/,/^$/p' "$T/b.txt" > "$T/b1.txt"
cmp -s "$T/a1.txt" "$T/b1.txt" || { echo "FAIL: two runs of e2e-dlperf-v100 differ"; exit 1; }
echo "ok"
