# roundtrip.sh — schedule JSON written, read back and written again is
# byte-identical (ids are renumbered canonically), and simulating the file
# gives the same iteration time as generating the schedule directly.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# recompute=full: without it this case does not fit in the 24 GB of an RTX3090
S=tp=4,dp=8,mb=4,gb=32,recompute=full

"$TRAINSIM" schedule --strategy "$S" -o "$tmp/a.json" || fail "schedule exited non-zero"
"$TRAINSIM" run --schedule "$tmp/a.json" --save-schedule "$tmp/b.json" --json > "$tmp/from_file.json" \
    || fail "run --schedule exited non-zero"
"$TRAINSIM" run --strategy "$S" --json > "$tmp/direct.json" || fail "run --strategy exited non-zero"
cmp "$tmp/a.json" "$tmp/b.json" || fail "schedule -o and --save-schedule of the re-read file differ"
"$TRAINSIM" check "$tmp/a.json" > /dev/null || fail "check rejects a generated schedule"

python3 - "$tmp/from_file.json" "$tmp/direct.json" <<'PY' || fail "results differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
bad = [k for k in ("iteration_time_s", "breakdown", "per_gpu", "peak_memory_bytes", "operations", "flows")
       if a.get(k) != b.get(k)]
if bad:
    for k in bad:
        print("%s: from file %r, direct %r" % (k, a.get(k), b.get(k)), file=sys.stderr)
    sys.exit(1)
PY
echo "ok"
