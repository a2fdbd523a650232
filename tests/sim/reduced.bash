# reduced.bash — sourced by run_reduced*.sh: same PLATFORM MODEL STRATEGY
# WANT runs `trainsim run` reduced and with --exact and checks that they
# agree (iteration time and peak memory within 0.1 %, the breakdown and
# every GPU's times within 0.1 % of the iteration) and that WANT GPUs were
# simulated; $S is a 4-layer GPT, $A four
# DGX-A100-like servers on one switch, cluster N writes N of them on
# a100-sxm-128n's fat tree.
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
T = e["iteration_time_s"]
def close(a, b, scale=None): # within 0.1 % of b, or of the iteration for a part of it
    return abs(a - b) <= 1e-3 * max(abs(b) if scale is None else scale, 1e-12)
for k in ("iteration_time_s", "peak_memory_bytes"):
    assert close(r[k], e[k]), "%s: %s %r vs %r" % (case, k, r[k], e[k])
for k in e["breakdown"]:
    if isinstance(e["breakdown"][k], (int, float)):
        assert close(r["breakdown"][k], e["breakdown"][k], T), "%s: breakdown %s %r vs %r" % (
            case, k, r["breakdown"][k], e["breakdown"][k])
assert len(r["per_gpu"]) == len(e["per_gpu"]) == r["gpus"]
for a, b in zip(r["per_gpu"], e["per_gpu"]):
    for k in ("compute_s", "exposed_comm_s", "bubble_s", "peak_memory_bytes", "end_s"):
        assert close(a[k], b[k], None if k == "peak_memory_bytes" else T), "%s: rank %d %s %r vs %r" % (
            case, b["rank"], k, a[k], b[k])
print("%s: %d of %d GPUs, %.6f s" % (case, got, r["gpus"], r["iteration_time_s"]))
PY
}
S="$tmp/small.json"
# four DGX-A100-like servers on one switch (the 128-node cluster's node)
python3 - "$SRC/platforms/clusters/a100-sxm-128n.json" "$tmp/a100-4n.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(name="a100-sxm-4n", nodes=4, fabric={"type": "switch"})
json.dump(c, open(sys.argv[2], "w"))
PY
A="$tmp/a100-4n.json"
cluster() { # cluster NODES: a100-sxm-128n resized, its path on stdout
    python3 - "$SRC/platforms/clusters/a100-sxm-128n.json" "$tmp/a100-$1n.json" "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(name="a100-sxm-%sn" % sys.argv[3], nodes=int(sys.argv[3]))
json.dump(c, open(sys.argv[2], "w"))
PY
    echo "$tmp/a100-$1n.json"
}
