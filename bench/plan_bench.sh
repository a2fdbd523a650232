#!/usr/bin/env bash
# Planner speed: `trainsim plan` sweeping a GPT with hidden 4096 and 24
# layers (bench/gpt-4096-l24.json) on 64 RTX 3090 (rtx3090-16x4: 16 nodes x
# 4), global batch 256, the Megatron space (tp, pp, dp, mb, recompute; the other
# axes fixed at their defaults), JOBS processes (default 2), no cache; then the same
# sweep from the cache.  Prints wall-clock evaluations/s and, because the
# 2-core VM is shared, the CPU seconds per evaluation and the rate they imply
# on JOBS idle cores; then the fast fidelity's error against full simulation
# of the same sweep (bench/plan_bench_full.csv: `--fidelity full --csv`, 11
# CPU minutes, remade at a590645 after Megatron's cross-entropy passes, which
# moved its times by 0.12 % on average, 1.1 % at most; at 6c7fc31 the
# order-independent interference had moved them by 0.03 / 0.46 %; remade
# 2026-12-08 after the unfused attention backward's own passes and the
# RTX 3090 refit: 0.15 % on average, 0.40 % at most).
# Not part of ctest.
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
TRAINSIM_PLAN_TIMES=1 "$BUILD/trainsim" "${args[@]}" > "$T/out.txt" 2> "$T/err.txt"
line=$(tail -1 "$T/err.txt")
echo "$line"
# where the time goes: deep pipelines (pp >= 4, sampled in their steady
# state, from 5 stages on with their first 4: eval.c) against the others
# (cut to one and two layers)
python3 - "$T/err.txt" <<'PY'
import re, sys
cls = {}
for l in open(sys.argv[1]):
    m = re.match(r"eval ([\d.]+) s (\d+) sims .* (\S+)$", l)
    if m:
        pp = int(re.search(r"pp=(\d+)", m.group(3)).group(1))
        c = cls.setdefault("pp >= 4" if pp >= 4 else "pp < 4", [0, 0.0, 0])
        c[0] += 1; c[1] += float(m.group(1)); c[2] += int(m.group(2))
tot = sum(c[1] for c in cls.values())
for k, (n, w, s) in sorted(cls.items()):
    print(f"  {k}: {n} evaluations, {s} simulations, {1000 * w / n:.1f} ms each, {100 * w / tot:.0f} % of the evaluation time")
PY
cpu=$(sed -n 's/.*; \([0-9.]*\) CPU s per evaluation.*/\1/p' <<< "$line")
python3 -c "import sys; c=float(sys.argv[1]); print(f'=> {int(sys.argv[2])/c:.1f} evaluations/s on {sys.argv[2]} idle cores ({c:.3f} CPU s each)')" "$cpu" "$JOBS"
sed -n '3,6p;/^best/p' "$T/out.txt"
"$BUILD/trainsim" "${args[@]}" > /dev/null 2> "$T/err2.txt"
echo "repeated from the cache: $(tail -1 "$T/err2.txt")"
# the fidelity: the same sweep from the cache as CSV, against full simulation
"$BUILD/trainsim" "${args[@]}" --csv > "$T/fast.csv" 2> /dev/null
python3 - "$T/fast.csv" bench/plan_bench_full.csv <<'PY'
import csv, sys
fast = {r["strategy"]: r for r in csv.DictReader(open(sys.argv[1]))}
full = {r["strategy"]: r for r in csv.DictReader(open(sys.argv[2]))}
common = [k for k in fast if k in full]
err = sorted((abs(float(fast[k]["iteration_s"]) / float(full[k]["iteration_s"]) - 1), k) for k in common)
mem = max(abs(float(fast[k]["peak_memory_bytes"]) / float(full[k]["peak_memory_bytes"]) - 1) for k in common)
top = lambda d: list(d)[:10]
print(f"fast vs full ({len(common)} of {len(fast)} strategies): iteration time mean {100 * sum(e for e, _ in err) / len(err):.2f} %, "
      f"worst {100 * err[-1][0]:.2f} % ({err[-1][1]}); peak memory worst {100 * mem:.3f} %; "
      f"same winner: {top(fast)[0] == top(full)[0]}; top ten shared: {len(set(top(fast)) & set(top(full)))}")
PY
