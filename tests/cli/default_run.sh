# default_run.sh — the default scenario (gpt-3072 on oases-3090, 32 GPUs,
# gb=640): text report lines and the JSON result's shape and arithmetic.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TRAINSIM" > "$tmp/out.txt" 2> "$tmp/err.txt" || { cat "$tmp/err.txt" >&2; fail "trainsim with no arguments exited non-zero"; }
for line in 'iteration time' 'throughput' 'MFU' 'peak memory per GPU'; do
    grep -q "$line" "$tmp/out.txt" || { cat "$tmp/out.txt" >&2; fail "text report lacks \"$line\""; }
done

"$TRAINSIM" --json > "$tmp/out.json" || fail "trainsim --json exited non-zero"
python3 - "$tmp/out.json" <<'PY' || fail "JSON result check"
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
for k in ("iteration_time_s", "samples_per_s", "tokens_per_s", "tflops_per_gpu",
          "mfu", "peak_memory_bytes", "breakdown", "per_gpu", "operations"):
    if k not in r:
        bad.append("missing key %s" % k)
if bad:
    sys.exit("; ".join(bad))
for k in ("compute_s", "exposed_comm_s", "bubble_s"):
    if k not in r["breakdown"]:
        sys.exit("breakdown lacks %s" % k)
t = r["iteration_time_s"]
if not t > 0:
    sys.exit("iteration_time_s %r is not positive" % t)
def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b))
b = r["breakdown"]
if not close(b["compute_s"] + b["exposed_comm_s"] + b["bubble_s"], t):
    bad.append("mean breakdown %r does not sum to %r" % (b, t))
if len(r["per_gpu"]) != 32:
    bad.append("per_gpu has %d entries, expected 32" % len(r["per_gpu"]))
for i, g in enumerate(r["per_gpu"]):
    if g.get("rank") != i:
        bad.append("per_gpu[%d].rank = %r" % (i, g.get("rank")))
    s = g["compute_s"] + g["exposed_comm_s"] + g["bubble_s"]
    if not close(s, t):
        bad.append("rank %d: compute+exposed_comm+bubble = %r != iteration time %r" % (i, s, t))
    if min(g["compute_s"], g["exposed_comm_s"], g["bubble_s"]) < 0:
        bad.append("rank %d: negative time in %r" % (i, g))
if not close(r["samples_per_s"], 640 / t):
    bad.append("samples_per_s %r != 640 / %r" % (r["samples_per_s"], t))
if not close(r["tokens_per_s"], 640 * 1024 / t):
    bad.append("tokens_per_s %r != 640*1024 / %r" % (r["tokens_per_s"], t))
if not 0 < r["mfu"] <= 1:
    bad.append("mfu %r outside (0, 1]" % r["mfu"])
if not 0 < r["peak_memory_bytes"] <= r.get("memory_capacity_bytes", 24e9):
    bad.append("peak_memory_bytes %r outside (0, capacity]" % r["peak_memory_bytes"])
if bad:
    sys.exit("\n".join(bad))
PY
echo "ok"
