#!/bin/bash
# Under an address-space limit (ulimit -v) too small for SimGrid's actor
# stacks, run says so and exits 1 instead of SimGrid aborting.
set -uo pipefail
# AddressSanitizer reserves terabytes of shadow address space: no ulimit -v there
if [[ $(ldd "$TRAINSIM" 2>/dev/null) == *libasan* ]]; then echo "skipped: sanitizer build"; exit 0; fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 "$(dirname "$0")/many_streams.py" 200 "$T/s.json"
# unlimited: it runs (200 streams of 1 ms side by side on one GPU)
"$TRAINSIM" run --schedule "$T/s.json" --platform oases-3090 --quiet > "$T/out" || { echo "FAIL: unlimited run"; exit 1; }
# 200 stacks of 8 MiB need 1.6 GB of address space: 1 GB is not enough
( ulimit -v 1000000; "$TRAINSIM" run --schedule "$T/s.json" --platform oases-3090 --quiet ) > "$T/out" 2> "$T/err"
rc=$?
cat "$T/err"
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, expected 1"; exit 1; }
grep -q "address-space limit" "$T/err" || { echo "FAIL: no message about the limit"; exit 1; }
echo ok
