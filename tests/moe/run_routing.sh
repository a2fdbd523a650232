#!/bin/bash
# run --routing: `trainsim run` of an MoE model with one step of skewed
# routing (trainsim moe's routing on the same generator): a uniform draw
# stays within a few per cent of uniform routing's even all-to-alls, a
# skewed one (Zipf s = 2: one expert takes most tokens) is slower, the
# output names the routing, a dense model is refused.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run=(--json --platform h100-pcie-2x8 --model gpt-moe-350m --strategy tp=1,dp=16,ep=8,mb=1,gb=64,dtype=bf16)
"$TRAINSIM" "${run[@]}" > "$tmp/u.json" || fail "uniform"
"$TRAINSIM" "${run[@]}" --routing uniform > "$tmp/d.json" || fail "--routing uniform"
"$TRAINSIM" "${run[@]}" --routing zipf:2 > "$tmp/z.json" || fail "--routing zipf:2"
python3 - "$tmp/u.json" "$tmp/d.json" "$tmp/z.json" <<'PY' || fail "routing figures"
import json, sys
u, d, z = (json.load(open(f)) for f in sys.argv[1:])
tu, td, tz = (x["iteration_time_s"] for x in (u, d, z))
print("uniform %.4f s, uniform draw %.4f s, zipf:2 %.4f s" % (tu, td, tz))
assert abs(td - tu) <= 0.05 * tu, "a uniform draw is %.1f %% off uniform routing" % (100 * (td - tu) / tu)
assert tz > 1.04 * tu, "Zipf s=2 routing is not slower than uniform"
assert u["model_info"]["moe"]["routing"] == "uniform" and z["model_info"]["moe"]["routing"] == "zipf:2"
assert "routing zipf:2, seed 1" in z["schedule"]
PY
out=$("$TRAINSIM" --platform h100-pcie-2x8 --model gpt-1.3b --routing zipf 2>&1) && fail "dense model with --routing"
echo "$out" | grep -q 'no mixture-of-experts layers' || fail "dense model message: $out"
out=$("$TRAINSIM" "${run[@]}" --routing zipf:-1 2>&1) && fail "zipf:-1 accepted"
echo "$out" | grep -q -- '--routing: .*zipf' || fail "bad routing message: $out"
echo ok
