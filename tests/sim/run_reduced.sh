#!/bin/bash
# run_reduced.sh — `trainsim run` simulates data-parallel replicas that
# repeat others once (sim/fold.c) and gives the same results as --exact:
# iteration time, breakdown and peak memory within 0.1 % (they agree to the
# last digit on these), per-GPU rows for every GPU; under one switch, in a
# fat tree's leaf, with pipelines, ZeRO-1/3, DP overlap and MoE (ep=1). The
# reduction must happen where it can (simulated_gpus below gpus) and not
# where a rank's own output is asked for (--trace) or the groups do not
# span whole servers.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$tmp/small.json" <<'J'
{"name": "gpt-small-4l", "layers": 4, "hidden": 1024, "heads": 16, "ffn": 4096, "seq": 1024, "vocab": 50257}
J
same() { # same PLATFORM MODEL STRATEGY WANT_SIMULATED_GPUS
    "$TRAINSIM" --json --platform "$1" --model "$2" --strategy "$3" > "$tmp/r.json" || fail "$1 $3: run"
    "$TRAINSIM" --json --exact --platform "$1" --model "$2" --strategy "$3" > "$tmp/e.json" || fail "$1 $3: --exact"
    python3 - "$tmp/r.json" "$tmp/e.json" "$4" "$1 $3" <<'PY' || fail "$1 $3: reduced and exact differ"
import json, sys
r, e, want, case = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
got = r.get("simulated_gpus", r["gpus"])
assert got == want, "%s: %d GPUs simulated, want %d" % (case, got, want)
assert "simulated_gpus" not in e, "--exact reduced"
def close(a, b):
    return abs(a - b) <= 1e-3 * max(abs(b), 1e-12)
for k in ("iteration_time_s", "peak_memory_bytes"):
    assert close(r[k], e[k]), "%s: %s %r vs %r" % (case, k, r[k], e[k])
for k in e["breakdown"]:
    if isinstance(e["breakdown"][k], (int, float)):
        assert close(r["breakdown"][k], e["breakdown"][k]), "%s: breakdown %s" % (case, k)
assert len(r["per_gpu"]) == len(e["per_gpu"]) == r["gpus"]
for a, b in zip(r["per_gpu"], e["per_gpu"]):
    for k in ("compute_s", "exposed_comm_s", "bubble_s", "peak_memory_bytes", "end_s"):
        assert close(a[k], b[k]), "%s: rank %d %s %r vs %r" % (case, b["rank"], k, a[k], b[k])
print("%s: %d of %d GPUs, %.6f s" % (case, got, r["gpus"], r["iteration_time_s"]))
PY
}
S="$tmp/small.json"
same rtx4090-4x8 "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16 16
same rtx3090-16x4 "$S" tp=2,pp=2,dp=16,mb=1,gb=32,dtype=fp16,recompute=full,zero=3 16
same rtx4090-4x8 "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16,zero=1,dp_overlap=1 16
same dgx-h100-16n "$S" tp=8,pp=2,dp=8,mb=1,gb=16,dtype=bf16 32  # a fat tree: each DP group in one leaf
same a100-pcie-8x8 gpt-moe-350m tp=8,dp=8,mb=1,gb=16,dtype=bf16 16
# two DP replicas share each server: nothing to fold
same rtx4090-4x8 "$S" tp=4,pp=2,dp=4,mb=1,gb=8,dtype=bf16 32
# a DP group over two leaves of the fat tree: not folded
same dgx-h100-16n "$S" tp=8,dp=16,mb=1,gb=16,dtype=bf16 128
# a trace wants every rank
"$TRAINSIM" --json --platform rtx4090-4x8 --model "$S" --strategy tp=8,dp=4,mb=1,gb=8,dtype=bf16 \
    --trace "$tmp/t.json" > "$tmp/r.json" || fail "traced run"
grep -q simulated_gpus "$tmp/r.json" && fail "a traced run was reduced"
"$TRAINSIM" --platform rtx4090-4x8 --model "$S" --strategy tp=8,dp=4,mb=1,gb=8,dtype=bf16 | grep -q \
    "^reduced  *16 of the 32 GPUs simulated" || fail "the text report does not say it was reduced"
echo ok
