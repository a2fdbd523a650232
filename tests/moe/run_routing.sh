#!/bin/bash
# run --routing / the strategy keys routing= and balance=: `trainsim run` of
# an MoE model with one step of skewed routing (trainsim moe's routing on
# the same generator): a uniform draw stays within a few per cent of uniform
# routing's even all-to-alls, a skewed one (Zipf s = 2: one expert takes
# most tokens) is slower, the output names the routing, --routing is the
# key; under each balance mode the step is trainsim moe's second step to the
# last digit (Pro-Prophet plans it from the first); a dense model, balance
# without routing, balance at ep=1 and routing under ZeRO-3 are refused with
# the reason.
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
assert "routing=zipf:2" in z["strategy"] and "(MoE routed step 1, seed 1)" in z["schedule"], z["schedule"]
PY
strat=tp=1,dp=16,ep=8,mb=1,gb=64,dtype=bf16
"$TRAINSIM" --json --platform h100-pcie-2x8 --model gpt-moe-350m --strategy $strat,routing=zipf:2 > "$tmp/k.json" ||
    fail "routing=zipf:2 key"
cmp -s "$tmp/z.json" "$tmp/k.json" || fail "--routing zipf:2 and routing=zipf:2 differ"
"$TRAINSIM" moe --platform h100-pcie-2x8 --model gpt-moe-350m --strategy $strat,steps=2,routing=zipf:1.2 --json \
    > "$tmp/moe.json" || fail "trainsim moe"
for b in none fastermoe prophet; do
    "$TRAINSIM" --json --platform h100-pcie-2x8 --model gpt-moe-350m --strategy $strat,routing=zipf:1.2,balance=$b \
        > "$tmp/b-$b.json" || fail "balance=$b"
done
python3 - "$tmp" <<'PY' || fail "balance modes against trainsim moe"
import json, sys
d = sys.argv[1]
moe = json.load(open(d + "/moe.json"))["steps"][1]
for b in ("none", "fastermoe", "prophet"):
    run = json.load(open(d + "/b-%s.json" % b))
    print("%-9s run %.6f s, trainsim moe step 1 %.6f s" % (b, run["iteration_time_s"], moe[b]["time_s"]))
    assert abs(run["iteration_time_s"] / moe[b]["time_s"] - 1) < 1e-9, b
    assert ("balance=" + b in run["strategy"]) == (b != "none")
PY
out=$("$TRAINSIM" --platform h100-pcie-2x8 --model gpt-1.3b --routing zipf 2>&1) && fail "dense model with --routing"
echo "$out" | grep -q 'no mixture-of-experts layers' || fail "dense model message: $out"
out=$("$TRAINSIM" "${run[@]}" --routing zipf:-1 2>&1) && fail "zipf:-1 accepted"
echo "$out" | grep -q -- '--routing: .*zipf' || fail "bad routing message: $out"
out=$("$TRAINSIM" --platform h100-pcie-2x8 --model gpt-1.3b --strategy tp=1,dp=16,balance=prophet 2>&1) &&
    fail "balance on a dense model"
echo "$out" | grep -q 'balance=prophet: model gpt-1.3b has no mixture-of-experts layers' || fail "dense balance: $out"
out=$("$TRAINSIM" "${run[@]}" --strategy $strat,balance=fastermoe 2>&1) && fail "balance without routing"
echo "$out" | grep -q 'balance=fastermoe balances skewed routing: give routing=' || fail "no-routing message: $out"
out=$("$TRAINSIM" "${run[@]}" --strategy tp=1,dp=16,ep=1,mb=1,gb=64,routing=zipf,balance=prophet 2>&1) &&
    fail "balance at ep=1"
echo "$out" | grep -q 'balance=prophet needs ep > 1' || fail "ep=1 message: $out"
# what a routed step does not model: refused by run (before generating) and by trainsim moe (by the generator)
out=$("$TRAINSIM" "${run[@]}" --strategy $strat,routing=zipf,zero=3 2>&1) && fail "routing with zero=3 accepted"
echo "$out" | grep -q 'routing=zipf: a routed MoE step .*ZeRO-3 / FSDP is not modelled' || fail "run zero=3 message: $out"
out=$("$TRAINSIM" moe --platform h100-pcie-2x8 --model gpt-moe-350m --strategy $strat,zero=3,steps=1 2>&1) &&
    fail "trainsim moe with zero=3 accepted"
echo "$out" | grep -q 'routed MoE step: ZeRO-3 / FSDP is not modelled with skewed routing' || fail "moe zero=3 message: $out"
out=$("$TRAINSIM" "${run[@]}" --strategy $strat,routing=zipf,balance=best 2>&1) && fail "balance=best accepted"
echo "$out" | grep -q 'balance: expected none' || fail "bad balance message: $out"
echo ok
