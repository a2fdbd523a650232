# trainsim run: the kernels' own seconds by class (breakdown.kernels_s, the
# "kernels per GPU" line).  On one GPU with one compute stream nothing
# stretches or overlaps a kernel, so the classes add up to the compute time;
# with data parallelism beside the kernels they need not, but every class
# that ran is there and none is negative.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
M="$SRC/validation/data/end-to-end"
"$TRAINSIM" run --platform azure-nd-h100-v5 --gpus 1 --model gpt-1024 \
    --strategy tp=1,pp=1,dp=1,mb=4,gb=4,dtype=bf16,recompute=none,kernels=eager --json --quiet > "$T/one.json" ||
    fail "one-GPU run"
"$TRAINSIM" run --platform azure-nd-h100-v5 --gpus 1 --model gpt-1024 \
    --strategy tp=1,pp=1,dp=1,mb=4,gb=4,dtype=bf16,recompute=none,kernels=eager --quiet > "$T/one.txt" ||
    fail "one-GPU run, text"
grep -Eq '^kernels per GPU +GEMM [0-9.]+ s \([0-9.]+ %\), attention [0-9.]+ s' "$T/one.txt" ||
    fail "no kernels line: $(cat "$T/one.txt")"
"$TRAINSIM" run --platform oases-3090 --model gpt-1024 --strategy tp=2,pp=2,dp=8,mb=2,gb=32 --json --quiet \
    > "$T/many.json" || fail "32-GPU run"
python3 - "$T/one.json" "$T/many.json" <<'PY' || fail "kernel classes"
import json, sys
one = json.load(open(sys.argv[1]))
k = one["breakdown"]["kernels_s"]
assert set(k) == {"gemm", "attention", "elementwise", "optimizer", "measured"}, k
assert k["gemm"] > 0 and k["attention"] > 0 and k["elementwise"] > 0 and k["optimizer"] > 0, k
assert k["measured"] == 0, k
c = one["breakdown"]["compute_s"]
assert abs(sum(k.values()) - c) <= 1e-9 * c, (sum(k.values()), c)
many = json.load(open(sys.argv[2]))
k = many["breakdown"]["kernels_s"]
assert all(v >= 0 for v in k.values()) and k["gemm"] > 0 and k["elementwise"] > 0, k
g = many["per_gpu"]
assert len(g) == 32 and all(set(x["kernels_s"]) == set(k) for x in g)
for c in k:  # the breakdown's classes are the means over the GPUs
    assert abs(sum(x["kernels_s"][c] for x in g) / len(g) - k[c]) <= 1e-9 * max(k[c], 1e-12), c
PY
# --compare: the attention kernels change with attn=, the GEMMs do not
"$TRAINSIM" run --platform azure-nd-h100-v5 --gpus 8 --model gpt-1024 --quiet \
    --strategy tp=1,pp=1,dp=8,mb=4,gb=32,dtype=bf16 --compare attn=unfused,flash > "$T/cmp.txt" || fail "compare"
awk '/^  GEMM kernels/ { if ($4 != $5) bad = 1; g = 1 }
     /^  attention kernels/ { if (!($4 > 3 * $5)) bad = 1; a = 1 }
     END { exit bad || !g || !a }' "$T/cmp.txt" || fail "compare's kernel rows: $(cat "$T/cmp.txt")"
echo ok
