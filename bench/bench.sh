#!/usr/bin/env bash
# bench.sh — how fast trainsim simulates, and how much memory it takes.
#
# Builds trainsim (Release) if needed, runs each case once on one core
# (taskset -c 0 where available) under /usr/bin/time, and prints a table:
# case, GPUs, operations in the schedule, simulated iteration time, wall
# seconds and peak resident memory.  It prints figures; it is not a test.
#
#   bench/bench.sh                 # BUILD=build-bench by default
#   BUILD=build-rel QUICK=1 bench/bench.sh
#
# QUICK=1 runs the GPT-3 175B case with gb=512 instead of gb=1536.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
QUICK=${QUICK:-0}

if [ ! -x /usr/bin/time ]; then
    echo "bench.sh: /usr/bin/time is missing (Debian package \"time\": apt-get install time)" >&2
    exit 1
fi
# always brought up to date (incremental): a binary left from an older head
# would be measured in place of this one
echo "building $BUILD (Release) ..."
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$BUILD" -j"$(nproc)" --target trainsim; } > "$BUILD.log" 2>&1; then
    tail -20 "$BUILD.log" >&2
    echo "bench.sh: build failed, see $BUILD.log" >&2
    exit 1
fi
rm -f "$BUILD.log"
BIN=$BUILD/trainsim
PIN=()
if command -v taskset > /dev/null && taskset -c 0 true 2> /dev/null; then
    PIN=(taskset -c 0)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() {   # field FILE KEY: a top-level number from trainsim --json (cJSON's layout: a tab after the colon)
    local tab=$'\t'
    sed -n "s/^\($tab\|  \)\"$2\":[[:space:]]*\([^,]*\),\{0,1\}\$/\2/p" "$1" | head -1
}

rows=()
notes=()
bench() {   # bench NAME ARGS...: run trainsim --json ARGS once and add a row
    local name=$1 rc=0
    shift
    /usr/bin/time -f '%e %M' -o "$tmp/time" "${PIN[@]}" "$BIN" --json "$@" > "$tmp/out.json" 2> "$tmp/err" || rc=$?
    read -r wall rss_kb < <(tail -1 "$tmp/time")
    local rss_mb=$((rss_kb / 1024))
    if [ "$rc" -ne 0 ]; then
        rows+=("$(printf '%-34s %6s %12s %14s %9s %8s' "$name" - - "failed ($rc)" "$wall" "$rss_mb")")
        notes+=("$name: $(grep -v 'Command exited' "$tmp/err" | head -3)")
        return
    fi
    rows+=("$(printf '%-34s %6s %12s %14s %9s %8s' "$name" "$(field "$tmp/out.json" gpus)" \
        "$(field "$tmp/out.json" operations)" "$(printf '%.4f s' "$(field "$tmp/out.json" iteration_time_s)")" \
        "$wall" "$rss_mb")")
}

echo "trainsim benchmark: $BIN, $(uname -srm), ${PIN[*]:-no taskset (all cores)}"
echo "$(grep -m1 'model name' /proc/cpuinfo 2> /dev/null | sed 's/.*: //')"
bench "default (gpt-3072, oases-3090)"
if [ "$QUICK" = 1 ]; then
    gb=512
    notes+=("QUICK=1: the 175B case runs gb=512 (1/3 of the micro-batches of gb=1536)")
else
    gb=1536
fi
bench "gpt3-175b, 1024 x A100, gb=$gb" --platform a100-sxm-128n --model gpt3-175b \
    --strategy "tp=8,pp=16,dp=8,mb=1,gb=$gb,dtype=bf16,recompute=full"

# The planner's fast fidelity on the same job (reduced simulations, planner/eval.c):
# what a quick estimate costs, and how far it is from the full run above.
/usr/bin/time -f '%e %M' -o "$tmp/time" "${PIN[@]}" "$BIN" plan --platform a100-sxm-128n --model gpt3-175b \
    --global-batch "$gb" --dtype bf16 --strategies "tp=8,pp=16,dp=8,mb=1,recompute=full" \
    --no-cache --jobs 1 --quiet --csv > "$tmp/plan.csv" 2> "$tmp/err" || true
read -r wall rss_kb < <(tail -1 "$tmp/time")
# the iteration_s column by its header's name (the strategy is quoted and holds commas,
# so count back from the end by the header's own count)
fast_s=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "iteration_s") back = NF - i }
                  NR == 2 { print $(NF - back) }' "$tmp/plan.csv")
if [ -n "$fast_s" ]; then
    rows+=("$(printf '%-34s %6s %12s %14s %9s %8s' "  the same, trainsim plan (fast)" 1024 - \
        "$(printf '%.4f s' "$fast_s")" "$wall" "$((rss_kb / 1024))")")
else
    notes+=("trainsim plan (fast): $(head -3 "$tmp/err")")
fi

printf '%-34s %6s %12s %14s %9s %8s\n' case GPUs operations "iteration" "wall s" "RSS MB"
printf '%s\n' "${rows[@]}"
if [ "${#notes[@]}" -gt 0 ]; then
    printf 'note: %s\n' "${notes[@]}"
fi
