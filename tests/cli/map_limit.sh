#!/bin/bash
# More actors than the system's memory mappings allow (vm.max_map_count:
# SimGrid maps each actor's stack and a guard page, then aborts with
# "Failed to protect stack"): run says so and exits 1 before SimGrid
# starts.  TRAINSIM_MAX_MAP_COUNT stands for the system's limit.
set -uo pipefail
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 "$(dirname "$0")/many_streams.py" 600 "$T/s.json"
TRAINSIM_MAX_MAP_COUNT=100000 "$TRAINSIM" run --schedule "$T/s.json" --platform oases-3090 --quiet > "$T/out" \
    || { echo "FAIL: a run within the limit"; exit 1; }
# 600 actors want 2,200 mappings with the margin
TRAINSIM_MAX_MAP_COUNT=2000 "$TRAINSIM" run --schedule "$T/s.json" --platform oases-3090 --quiet > "$T/out" 2> "$T/err"
rc=$?
cat "$T/err"
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, expected 1"; exit 1; }
grep -q "600 actors.*vm.max_map_count" "$T/err" || { echo "FAIL: no message about the mappings"; exit 1; }
echo ok
