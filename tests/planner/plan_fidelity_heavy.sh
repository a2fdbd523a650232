#!/usr/bin/env bash
# --fidelity fast (bilinear extrapolation from reduced simulations, eval.c)
# against full simulation of every strategy of an 8-GPU sweep: iteration-time
# error, peak-memory error and the winner.  Bounds: 7 % worst case, 1 % mean,
# memory exact to 0.1 %, same winner.  (5 % until the host DRAM of staged
# transfers became a node's shared resource (issue 13): the two pipeline
# stages of a node then contend for it, which the 1- and 2-layer reduced
# simulations reproduce less well: tp=2,pp=4,dp=1,mb=8 errs 6.7 %.)
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
args=(plan --platform oases-3090 --gpus 8 --model gpt-1024 --global-batch 32 --quiet --no-cache --csv
      --axis schedule=megatron,oases --axis sp=0 --axis vstages=1 --axis zero=0)
"$TRAINSIM" "${args[@]}" > fast.csv
"$TRAINSIM" "${args[@]}" --fidelity full > full.csv
python3 - <<'PY'
import csv
fast = {r["strategy"]: r for r in csv.DictReader(open("fast.csv"))}
full = {r["strategy"]: r for r in csv.DictReader(open("full.csv"))}
assert set(fast) == set(full) and len(fast) > 50, (len(fast), len(full))
errs, merr = [], []
for k in fast:
    a, b = float(fast[k]["iteration_s"]), float(full[k]["iteration_s"])
    errs.append((abs(a - b) / b, k))
    m1, m2 = float(fast[k]["peak_memory_bytes"]), float(full[k]["peak_memory_bytes"])
    merr.append(abs(m1 - m2) / m2)
errs.sort()
mean = sum(e for e, _ in errs) / len(errs)
sims_fast = sum(int(r["simulations"]) for r in fast.values())
print(f"{len(errs)} strategies: iteration-time error mean {100*mean:.2f} %, worst {100*errs[-1][0]:.2f} % ({errs[-1][1]}); "
      f"memory worst {100*max(merr):.3f} %; fast used {sims_fast} reduced simulations")
# the breakdown, as a share of the iteration: compute is exact but for the
# kernels' interference; the bubble and exposed communication split the
# rest, the reduced simulations' tails waiting in the synchronisation
# (measured: compute worst 1.0 %, bubble 9.0 %, exposed 13.2 %)
worst = {}
for k in fast:
    T = float(full[k]["iteration_s"])
    for c in ("compute_s", "bubble_s", "exposed_comm_s"):
        e = abs(float(fast[k][c]) - float(full[k][c])) / T
        if e > worst.get(c, (0, ""))[0]:
            worst[c] = (e, k)
print("breakdown worst (share of the iteration): " + ", ".join(f"{c} {100*e:.1f} % ({k})" for c, (e, k) in worst.items()))
assert worst["compute_s"][0] < 0.02 and worst["bubble_s"][0] < 0.12 and worst["exposed_comm_s"][0] < 0.16, worst
first_fast = next(iter(fast)); first_full = next(iter(full))
assert first_fast == first_full, ("winner differs", first_fast, first_full)
assert errs[-1][0] < 0.07 and mean < 0.01 and max(merr) < 0.001
PY
echo ok
