#!/usr/bin/env bash
# --fidelity fast on 64 RTX 3090 (rtx3090-16x4) for strategies where the
# data-parallel replicas are simulated apart (eval.c): k of dp replicas for
# the pipeline (three corners of the bilinear interpolant), then the whole
# machine for the gradient synchronisation.
# Against full simulation: iteration time within 1 %, peak memory exact.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
S="tp=2,pp=4,dp=8,mb=1,recompute=none;tp=4,pp=1,dp=16,mb=2,recompute=full;tp=4,pp=2,dp=8,mb=1,recompute=full"
args=(plan --platform "$SRC/platforms/clusters/rtx3090-16x4.json" --model "$SRC/bench/gpt-4096-l24.json"
      --global-batch 256 --quiet --no-cache --csv --strategies "$S")
TRAINSIM_PLAN_TIMES=1 "$TRAINSIM" "${args[@]}" > fast.csv 2> fast.err
"$TRAINSIM" "${args[@]}" --fidelity full > full.csv
python3 - <<'PY'
import csv
replicas = {}
for line in open("fast.err"):
    if line.startswith("eval "):  # eval W s N sims F folded K replicas STRATEGY
        p = line.split()
        replicas[p[9]] = int(p[7])
fast = {r["strategy"]: r for r in csv.DictReader(open("fast.csv"))}
full = {r["strategy"]: r for r in csv.DictReader(open("full.csv"))}
assert set(fast) == set(full) and len(fast) == 3, (fast.keys(), full.keys())
worst = 0
for k in fast:
    a, b = float(fast[k]["iteration_s"]), float(full[k]["iteration_s"])
    m1, m2 = float(fast[k]["peak_memory_bytes"]), float(full[k]["peak_memory_bytes"])
    e = abs(a - b) / b
    worst = max(worst, e)
    print(f"{k}: fast {a:.4f} s ({fast[k]['simulations']} simulations), full {b:.4f} s, error {100*e:.3f} %")
    dp = int(dict(x.split("=") for x in k.split(","))["dp"])
    assert replicas[k] < dp, ("the replica reduction was not used", k, replicas[k])
    # three pipeline corners (1F1B) and the synchronisation; a deep pipeline
    # of few layers per stage: one steady-state sample with every layer,
    # extrapolated at the pace measured in it (eval.c), and the
    # synchronisation
    pp = int(dict(x.split("=") for x in k.split(","))["pp"])
    assert int(fast[k]["simulations"]) == (2 if pp >= 4 else 4), (k, fast[k]["simulations"])
    assert e < 0.01 and abs(m1 - m2) <= 1e-6 * m2, (k, a, b, m1, m2)
print(f"worst {100*worst:.3f} %")
PY
echo ok
