# oases_models_heavy.sh — the Oases evaluation (papers.md Sec. 1.7) on the
# RTX 3090 cluster without NVLink (platforms/clusters/oases-3090.json): for
# the seven models, Megatron-LM (full recompute) is slower than Merak
# (sub-pipelined TMP level 3, full recompute), which is slower than Oases;
# and the Chrome trace of an Oases run shows its all-reduces running beside
# compute of the other sub-batch, while Megatron's forward all-reduces run
# alone.  Benchmark settings: seq 1024, mb 4, TF32 matmuls on fp32 (Sec. 1.2),
# tp 4 (tp 8 where the model states need it), dp = 32/tp, 2 micro-batches per
# step here (the README table uses Oases' 20).
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for spec in 1024:4 2048:4 3072:4 4096:4 6144:8 8192:8 12288:8; do
    h=${spec%%:*} tp=${spec##*:}
    dp=$((32 / tp)) gb=$((4 * 32 / tp * 2))
    for sch in megatron:schedule=megatron,recompute=full merak:schedule=merak,tp_overlap=3,recompute=full \
               oases:schedule=oases; do
        name=${sch%%:*}
        "$TRAINSIM" run --platform oases-3090 --model "gpt-$h" \
            --strategy "tp=$tp,dp=$dp,mb=4,gb=$gb,dtype=tf32,${sch#*:}" --json > "$tmp/$h.$name.json" \
            || fail "gpt-$h $name: trainsim exited non-zero"
    done
done
python3 - "$tmp" <<'PY' || fail "ordering"
import json, sys, os
bad = []
for h in (1024, 2048, 3072, 4096, 6144, 8192, 12288):
    t = {n: json.load(open(os.path.join(sys.argv[1], "%d.%s.json" % (h, n))))["iteration_time_s"]
         for n in ("megatron", "merak", "oases")}
    print("gpt-%d: Megatron-LM %.3f s, Merak %.3f s (%.2fx), Oases %.3f s (%.2fx)"
          % (h, t["megatron"], t["merak"], t["megatron"] / t["merak"], t["oases"], t["megatron"] / t["oases"]))
    if not (t["megatron"] > t["merak"] > t["oases"]):
        bad.append("gpt-%d: want Megatron-LM > Merak > Oases, got %r" % (h, t))
if bad:
    sys.exit("\n".join(bad))
PY

for sch in megatron:schedule=megatron,recompute=full oases:schedule=oases; do
    "$TRAINSIM" run --platform oases-3090 --model gpt-3072 --strategy "tp=4,dp=8,mb=4,gb=32,${sch#*:}" \
        --trace "$tmp/${sch%%:*}.trace.json" > /dev/null || fail "trace run ${sch%%:*}"
done
python3 - "$tmp" <<'PY' || fail "trace overlap"
import json, sys, os

def overlap(name):
    ev = json.load(open(os.path.join(sys.argv[1], name + ".trace.json")))["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    x = [e for e in ev if e.get("ph") == "X" and e["pid"] == 0]
    comp = sorted((e["ts"], e["ts"] + e["dur"], e["args"].get("sub")) for e in x if threads.get((0, e["tid"])) == "compute"
                  and e.get("cat") == "compute")
    ars = [e for e in x if threads.get((0, e["tid"])) == "tp" and e["args"].get("layer", -1) >= 0
           and e["args"].get("phase") == "forward"]
    total = hidden = other_sub = 0.0
    for a in ars:
        a0, a1 = a["ts"], a["ts"] + a["dur"]
        total += a1 - a0
        for c0, c1, sub in comp:
            if c1 <= a0 or c0 >= a1:
                continue
            d = min(a1, c1) - max(a0, c0)
            hidden += d
            if sub is not None and sub != a["args"].get("sub"):
                other_sub += d
    return total, hidden, other_sub, len(ars)

t, h, o, n = overlap("oases")
print("oases: %d forward layer all-reduces, %.0f us, %.0f us beside compute (%.0f%%), %.0f us beside the other "
      "sub-batch's compute" % (n, t, h, 100 * h / t, o))
bad = []
if n == 0 or h < 0.3 * t or o < 0.9 * h:
    bad.append("Oases: forward all-reduces should run beside the other sub-batch's compute")
t, h, o, n = overlap("megatron")
print("megatron: %d forward layer all-reduces, %.0f us, %.0f us beside compute (%.1f%%)" % (n, t, h, 100 * h / t))
if n == 0 or h > 0.01 * t:
    bad.append("Megatron-LM: forward all-reduces should run alone")
if bad:
    sys.exit("\n".join(bad))
PY
echo ok
