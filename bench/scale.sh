#!/usr/bin/env bash
# scale.sh — how `trainsim run` grows with the GPU count: GPT-3 175B, TP 8 ·
# PP 16, one sequence per micro-batch, 192 micro-batches per data-parallel
# replica, bf16, full recompute, 1F1B, on DGX-A100-like clusters of 16 to
# 2,048 nodes (a100-sxm-128n's node and fat tree, 16 nodes per leaf, resized)
# — 128 to 16,384 GPUs.  Prints GPUs, the GPUs simulated (exact reductions,
# sim/fold.c), iteration time, wall seconds and peak RSS, one core.  Not a
# test: figures.
#
#   bench/scale.sh                   # BUILD=build-bench by default
#   NODES="16 128" bench/scale.sh    # some sizes only
#   EXACT=1 bench/scale.sh           # with --exact (no reduction: hours beyond 1,024 GPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
NODES=${NODES:-16 32 64 128 256 512 1024 2048}
if [ ! -x /usr/bin/time ]; then
    echo "scale.sh: /usr/bin/time is missing (Debian package \"time\")" >&2
    exit 1
fi
echo "building $BUILD (Release) ..."
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j"$(nproc)" --target trainsim; } \
    > "$BUILD.log" 2>&1; then
    tail -20 "$BUILD.log" >&2
    exit 1
fi
rm -f "$BUILD.log"
PIN=()
if command -v taskset > /dev/null && taskset -c 0 true 2> /dev/null; then
    PIN=(taskset -c 0)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%7s %10s %14s %9s %8s\n' GPUs simulated iteration "wall s" "RSS MB"
for n in $NODES; do
    python3 - platforms/clusters/a100-sxm-128n.json "$tmp/c.json" "$n" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(name="a100-sxm-%sn" % sys.argv[3], nodes=int(sys.argv[3]))
json.dump(c, open(sys.argv[2], "w"))
PY
    gpus=$((n * 8))
    dp=$((gpus / 128))
    /usr/bin/time -f '%e %M' -o "$tmp/time" "${PIN[@]}" "$BUILD/trainsim" --json ${EXACT:+--exact} --platform "$tmp/c.json" \
        --model gpt3-175b --strategy "tp=8,pp=16,dp=$dp,mb=1,gb=$((192 * dp)),dtype=bf16,recompute=full" \
        > "$tmp/out.json" 2> "$tmp/err" || { echo "$gpus GPUs: failed: $(head -3 "$tmp/err")"; continue; }
    read -r wall rss < <(tail -1 "$tmp/time")
    python3 - "$tmp/out.json" "$wall" "$rss" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%7d %10d %12.4f s %9s %8d" % (d["gpus"], d.get("simulated_gpus", d["gpus"]), d["iteration_time_s"],
                                     sys.argv[2], int(sys.argv[3]) // 1024))
PY
done
