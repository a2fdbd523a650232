# perturb.sh — stragglers and degraded links (`run --slow`, `--degrade`),
# against closed forms on hand-made schedules:
#   - two ranks compute 1 s then all-reduce 8 bytes: rank 1 at 3x makes the
#     step 3 s, rank 0 waits 2 s more and rank 1 none;
#   - 1 GB from node 0 to node 1 of oases-3090 (one NIC per node, the NIC
#     the bottleneck): node 1's NIC at a quarter of its bandwidth makes the
#     transfer take 4x as long (the latency aside);
#   - a generated job: every rank at 1.5x makes no rank wait longer, and a
#     straggler makes every other rank of its synchronous step wait;
# and bad specifications are refused with the option and what was expected.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"

cat > "$tmp/two.json" <<'J'
{"format": "trainsim-schedule", "version": 1, "nranks": 2, "communicators": [{"name": "w", "ranks": [0, 1]}],
 "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 1},
                                                         {"id": 1, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": 8}]}]},
           {"rank": 1, "streams": [{"name": "s", "ops": [{"id": 2, "op": "compute", "kernel": "fixed", "seconds": 1},
                                                         {"id": 3, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": 8}]}]}]}
J
cat > "$tmp/send.json" <<'J'
{"format": "trainsim-schedule", "version": 1, "nranks": 5,
 "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [{"id": 0, "op": "send", "peer": 4, "bytes": 1000000000}]}]},
           {"rank": 4, "streams": [{"name": "s", "ops": [{"id": 1, "op": "recv", "peer": 0, "bytes": 1000000000}]}]}]}
J

"$TRAINSIM" run --schedule "$tmp/two.json" --slow 1:3 --json > "$tmp/two.out"
"$TRAINSIM" run --schedule "$tmp/send.json" --platform oases-3090 --json > "$tmp/send0.out"
"$TRAINSIM" run --schedule "$tmp/send.json" --platform oases-3090 --degrade 'n1-nic*:4' --json > "$tmp/send4.out"
"$TRAINSIM" run --platform rtx4090-4x8 --model gpt-1024 --strategy tp=8,dp=4,mb=2,gb=16,dtype=bf16 --slow 0-31:1.5 --json > "$tmp/all.out"
"$TRAINSIM" run --platform rtx4090-4x8 --model gpt-1024 --strategy tp=8,dp=4,mb=2,gb=16,dtype=bf16 --slow 9:1.5 --json > "$tmp/one.out"
"$TRAINSIM" run --platform rtx4090-4x8 --model gpt-1024 --strategy tp=8,dp=4,mb=2,gb=16,dtype=bf16 --slow 9:1.5 > "$tmp/one.txt"

python3 - "$tmp" <<'PY' || fail "closed forms"
import json, sys
d = sys.argv[1]
load = lambda n: json.load(open(f"{d}/{n}"))
bad = []
def near(what, got, want, tol):
    if abs(got - want) > tol:
        bad.append(f"{what}: {got:.6g}, expected {want:.6g} within {tol:g}")

two = load("two.out")
base = two["perturbation"]["unperturbed_iteration_time_s"]
near("two ranks: step", two["iteration_time_s"], base + 2, 1e-6)
near("two ranks: rank 0 waits", two["per_gpu"][0]["wait_added_s"], 2, 1e-6)
near("two ranks: rank 1 waits", two["per_gpu"][1]["wait_added_s"], 0, 1e-6)
if two["perturbation"]["slow"] != [{"rank": 1, "factor": 3}]:
    bad.append(f"two ranks: perturbation {two['perturbation']['slow']}")

t0, t4 = load("send0.out")["iteration_time_s"], load("send4.out")["iteration_time_s"]
near("1 GB over a NIC at a quarter: ratio", t4 / t0, 4, 0.02)

allr, one = load("all.out"), load("one.out")
if allr["iteration_time_s"] <= allr["perturbation"]["unperturbed_iteration_time_s"]:
    bad.append("every rank 1.5x: not slower")
if max(g["wait_added_s"] for g in allr["per_gpu"]) > 1e-3 * allr["iteration_time_s"]:
    bad.append("every rank 1.5x: some rank waits longer, though no rank is behind another")
w = [g["wait_added_s"] for g in one["per_gpu"]]
T = one["iteration_time_s"]
if not all(w[r] > 0.01 * T for r in range(32) if r != 9):
    bad.append(f"one straggler: a rank of the synchronous step does not wait: {[round(x, 4) for x in w]}")
if w[9] > 0.5 * min(w[r] for r in range(32) if r != 9):
    bad.append(f"one straggler: the straggler itself waits {w[9]:.4g} s")
if bad:
    print("\n".join(bad)); sys.exit(1)
PY
grep -q "^perturbed  *rank 9 kernels x1.5" "$tmp/one.txt" || fail "the text output names the straggler"
grep -q "^waiting  *rank " "$tmp/one.txt" || fail "the text output names who waits"

expect_exit 2 "--slow" "rank 32" "0 to 31" -- run --platform rtx4090-4x8 --slow 32:2
expect_exit 2 "--slow" "FACTOR" "0.5" -- run --slow 3:0.5
expect_exit 2 "--slow" "RANKS:FACTOR" -- run --slow 3
expect_exit 2 "--slow" "backwards" -- run --slow 5-2:2
expect_exit 2 "--slow" "rank numbers" -- run --slow gpu3:2
expect_exit 2 "--degrade" "LINK:FACTOR" -- run --degrade n0-nic0
expect_exit 2 "--degrade" "FACTOR" "inf" -- run --degrade n0-nic0:inf
expect_exit 2 "--degrade" "n9-nic0" "no link" -- run --degrade n9-nic0:2
expect_exit 2 "--slow" "one simulated run" -- schedule --slow 1:2 -o "$tmp/x.json"
finish
