# determinism.sh — the same command gives byte-identical results, traces
# and schedule files (no wall time, no address or hash order leaks out).
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S=tp=4,dp=8,mb=4,gb=32,recompute=full

for i in 1 2; do
    "$TRAINSIM" --strategy "$S" --json --trace "$tmp/t$i.json" > "$tmp/r$i.json" || fail "run $i exited non-zero"
    "$TRAINSIM" schedule --strategy "$S" -o "$tmp/s$i.json" || fail "schedule $i exited non-zero"
done
for f in r t s; do
    [ -s "$tmp/${f}1.json" ] || fail "${f}1.json is empty"
    cmp "$tmp/${f}1.json" "$tmp/${f}2.json" || fail "two runs wrote different ${f}*.json"
done
# the text report carries the wall time, so compare it without that line
"$TRAINSIM" --strategy "$S" | grep -v 'wall' > "$tmp/a.txt"
"$TRAINSIM" --strategy "$S" | grep -v 'wall' > "$tmp/b.txt"
cmp "$tmp/a.txt" "$tmp/b.txt" || fail "two text reports differ (besides the wall time)"
echo "ok"
