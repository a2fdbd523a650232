#!/usr/bin/env bash
# Fast fidelity folds communicators that span three or more whole servers
# onto two servers of each (sim/fold.c): tensor-parallel groups in the
# pipeline simulations, a stage's data-parallel groups in the gradient
# synchronisation.  Against the same
# reduced simulations unfolded (TRAINSIM_PLAN_FOLD=0), on 64 RTX 3090
# (16 servers x 4): the iteration time within 0.05 % and the compute and
# exposed-communication means within 0.1 % (the fold takes the small loss
# all-reduce's NCCL tree at its uncontended time; everything else is the
# same traffic per server), with aggregated collectives and, under ZeRO-2/3,
# step by step; groups over two servers are not folded.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
# tp over 4, 16 and 8 servers; pipelines between folded stages; DP replicas
# simulated apart; sequence parallel (all-gather / reduce-scatter rings)
FOLD="tp=16,pp=4,mb=1,recompute=none;tp=64,pp=1,mb=1,recompute=full;tp=32,pp=1,dp=2,mb=1,recompute=full"
FOLD="$FOLD;tp=16,pp=2,dp=2,mb=2,recompute=full;tp=16,pp=1,dp=4,mb=1,recompute=full,sp=1"
# ZeRO-2 and ZeRO-3 (step-mode collectives; DP groups across the replicas)
FOLD="$FOLD;tp=16,pp=1,dp=4,mb=1,recompute=full,zero=2;tp=32,pp=1,dp=2,mb=1,recompute=full,zero=3"
# ZeRO-1: the whole machine simulated, its data-parallel groups over 8 servers folded
FOLD="$FOLD;tp=8,pp=1,dp=8,mb=1,recompute=full,zero=1"
# only the synchronisation: data-parallel groups over 4 and 16 servers
FOLD="$FOLD;tp=4,pp=4,dp=4,mb=1,recompute=selective;tp=4,pp=1,dp=16,mb=1,recompute=full"
# groups over two servers: tensor-parallel, data-parallel
KEEP="tp=8,pp=8,mb=1,recompute=none;tp=1,pp=8,dp=8,mb=1,recompute=selective"
args=(plan --platform "$SRC/platforms/clusters/rtx3090-16x4.json" --model "$SRC/bench/gpt-4096-l24.json"
      --global-batch 256 --quiet --no-cache --csv --jobs 2 --strategies "$FOLD;$KEEP")
TRAINSIM_PLAN_TIMES=1 "$TRAINSIM" "${args[@]}" > folded.csv 2> folded.err
TRAINSIM_PLAN_TIMES=1 TRAINSIM_PLAN_FOLD=0 "$TRAINSIM" "${args[@]}" > plain.csv 2> plain.err
python3 - "$FOLD" "$KEEP" <<'PY'
import csv, sys
fold = sys.argv[1].split(";")
keep = sys.argv[2].split(";")
def times(path):
    out = {}
    for line in open(path):
        if line.startswith("eval "):  # eval W s N sims F folded K replicas STRATEGY
            p = line.split()
            out[p[9]] = int(p[5])
    return out
folded, plain = times("folded.err"), times("plain.err")
a = {r["strategy"]: r for r in csv.DictReader(open("folded.csv"))}
b = {r["strategy"]: r for r in csv.DictReader(open("plain.csv"))}
assert set(a) == set(b) and len(a) == len(fold) + len(keep), (len(a), len(b))
assert all(v == 0 for v in plain.values()), plain
def key(s):  # the CSV's strategy for a --strategies entry: the sweep's gb and dtype first
    k = "gb=256,dtype=tf32," + s
    assert k in a, (s, list(a))
    return k
for s in fold + keep:
    k = key(s)
    n = folded[k]
    if s in fold:
        assert n > 0, ("not folded", k)
    else:
        assert n == 0, ("folded", k)
    # The deep pipeline is sampled at p + 5 micro-batches and extrapolated at
    # its pace (eval.c), read over four cycles in which the stages'
    # activation sends meet the folded TP rings at the NICs: when they meet
    # differs by an instant between the whole-ring pricing and the ring's own
    # steps, and the pace amplifies it.  Measured 2026-11-28: the sample
    # 0.45 % apart and the iteration 0.76 % under loss=megatron, 0.0004 and
    # 0.03 % under loss=fused and torch (full simulation 70.58 s; folded
    # 69.78, unfolded 69.25).
    deep = s.startswith("tp=16,pp=4")  # the folded deep pipeline
    for col, bound in (("iteration_s", 1e-2 if deep else 5e-4), ("compute_s", 1e-3),
                       ("exposed_comm_s", 1e-2 if deep else 1e-3)):
        x, y = float(a[k][col]), float(b[k][col])
        e = abs(x - y) / y
        assert e < bound, (k, col, x, y)
    print(f"{k}: {n} of {a[k]['simulations']} simulations folded, iteration {a[k]['iteration_s']} s "
          f"against {b[k]['iteration_s']} s unfolded")
PY
echo ok
