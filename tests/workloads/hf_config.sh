# hf_config.sh — `--model` takes a Hugging Face config.json: the run's JSON
# names the model after its directory and carries its dimensions and
# parameter count; unsupported architectures and MoE models are refused with
# the reason.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
: "${SRC:?source tree}"
hf="$SRC/tests/workloads/hf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TRAINSIM" --platform azure-nd-a100-v4 --model "$hf/llama3-gqa.json" \
    --strategy tp=2,dp=4,mb=1,gb=8,dtype=bf16 --json > "$tmp/run.json"
python3 - "$tmp/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
i = r["model_info"]
assert r["model"] == "llama3-gqa", r["model"]
assert (i["kv_heads"], i["ffn_type"], i["norm"], i["position"]) == (2, "swiglu", "rmsnorm", "rope"), i
assert i["tie_embeddings"] is False and i["bias"] is False, i
layer = 256 * 256 * 2 + 2 * 256 * 64 + 3 * 256 * 896 + 2 * 256
assert i["parameters"] == 4 * layer + 2 * 2048 * 256 + 256, i["parameters"]
assert r["iteration_time_s"] > 0
PY


expect_fail() {
    local want=$1; shift
    if "$TRAINSIM" "$@" > "$tmp/out" 2> "$tmp/err"; then fail "trainsim $* exited 0"; fi
    grep -qF -- "$want" "$tmp/err" || { cat "$tmp/err" >&2; fail "trainsim $*: stderr lacks \"$want\""; }
}
expect_fail 'model_type "gemma": this Hugging Face architecture is not supported' --model "$hf/gemma-tiny.json"
expect_fail 'parallel_attn' --model "$hf/falcon-7b-tiny.json"
"$TRAINSIM" --platform azure-nd-a100-v4 --model "$hf/mixtral-tiny/config.json" --strategy tp=1,dp=8,ep=8,mb=1 \
    >/dev/null || fail "Mixtral (tiny) with ep=8 in trainsim run"
"$TRAINSIM" moe --platform azure-nd-a100-v4 --model "$hf/mixtral-tiny/config.json" --strategy ep=8,mb=1,steps=2 \
    > "$tmp/moe" || fail "Mixtral (tiny) in trainsim moe"
grep -q "mixtral" "$tmp/moe" && grep -qE '^ +1 \|' "$tmp/moe" || { cat "$tmp/moe" >&2; fail "trainsim moe output"; }
expect_fail 'does not divide the 2 K/V heads' --platform azure-nd-a100-v4 --model "$hf/llama3-gqa.json" \
    --strategy tp=4,dp=2
echo ok
