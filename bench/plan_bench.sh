#!/usr/bin/env bash
# Planner speed: evaluations per second of `trainsim plan` sweeping a GPT
# with hidden 4096 and 24 layers on 64 RTX 3090 (rtx3090-16x4: 16 nodes x 4),
# global batch 256, on JOBS processes (default 2), no cache; then the same
# sweep again from the cache.  Prints the figures; not part of ctest.
#   BUILD=build JOBS=2 bench/plan_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
args=(plan --platform platforms/clusters/rtx3090-16x4.json --model bench/gpt-4096-l24.json --global-batch 256
      --jobs "$JOBS" --quiet --cache "$T/cache")
for fid in fast; do
  "$BUILD/trainsim" "${args[@]}" --fidelity $fid > "$T/out.txt" 2> "$T/err.txt"
  echo "fidelity $fid, $JOBS processes: $(cat "$T/err.txt")"
  sed -n '3,6p;/^best/p' "$T/out.txt"
done
"$BUILD/trainsim" "${args[@]}" > /dev/null 2> "$T/err2.txt"
echo "repeated from the cache: $(cat "$T/err2.txt")"
