# list.sh — the catalogue listing and the version line.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$TRAINSIM" list) || fail "trainsim list exited non-zero"
for w in RTX3090 A100 oases-3090 a100-sxm-128n; do
    grep -q -- "$w" <<< "$out" || { echo "$out" >&2; fail "trainsim list does not mention $w"; }
done
# --json: one document with the same entries
"$TRAINSIM" list --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert any(c["name"] == "oases-3090" and c["gpus"] == 32 for c in d["clusters"]), "oases-3090"
assert any(g["model"] == "A100-SXM-80GB" for g in d["gpus"]), "A100"
assert any(m["name"] == "gpt3-175b" for m in d["models"]), "gpt3-175b"
assert d["nics"], "no NICs"
curve = {g["model"]: g["gemm_curve"] for g in d["gpus"]}
assert curve["H100-SXM"] == "calibrated" and curve["B200"] == "like H100-SXM" and curve["RTX4090"] == "priors", curve
' || fail "trainsim list --json"
v=$("$TRAINSIM" --version) || fail "trainsim --version exited non-zero"
grep -Eq '[0-9]+\.[0-9]+\.[0-9]+' <<< "$v" || fail "trainsim --version printed \"$v\", no version number"
echo "ok"
