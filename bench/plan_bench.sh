#!/usr/bin/env bash
# Planner speed: `trainsim plan` sweeping a GPT with hidden 4096 and 24
# layers (bench/gpt-4096-l24.json) on 64 RTX 3090 (rtx3090-16x4: 16 nodes x
# 4), global batch 256, the Megatron space (tp, pp, dp, mb, recompute; the other
# axes fixed at their defaults), JOBS processes (default 2), no cache; then the same
# sweep from the cache.  Prints wall-clock evaluations/s and, because the
# 2-core VM is shared, the CPU seconds per evaluation and the rate they imply
# on JOBS idle cores.  Not part of ctest.
#   BUILD=build JOBS=2 bench/plan_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
args=(plan --platform platforms/clusters/rtx3090-16x4.json --model bench/gpt-4096-l24.json --global-batch 256
      --axis schedule=megatron --axis sp=0 --axis vstages=1 --axis zero=0
      --jobs "$JOBS" --quiet --cache "$T/cache")
"$BUILD/trainsim" "${args[@]}" > "$T/out.txt" 2> "$T/err.txt"
line=$(tail -1 "$T/err.txt")
echo "$line"
cpu=$(sed -n 's/.*; \([0-9.]*\) CPU s per evaluation.*/\1/p' <<< "$line")
python3 -c "import sys; c=float(sys.argv[1]); print(f'=> {int(sys.argv[2])/c:.1f} evaluations/s on {sys.argv[2]} idle cores ({c:.3f} CPU s each)')" "$cpu" "$JOBS"
sed -n '3,6p;/^best/p' "$T/out.txt"
"$BUILD/trainsim" "${args[@]}" > /dev/null 2> "$T/err2.txt"
echo "repeated from the cache: $(tail -1 "$T/err2.txt")"
