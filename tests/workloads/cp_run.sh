# cp_run.sh — context parallelism end to end on a built-in H100 cluster
# (dgx-h100-16n, 128 GPUs): a run with cp=2 succeeds and says cp=2; the
# schedule it simulates passes `trainsim check` and holds the CP ring's
# streams; --compare cp=1,2 runs both; impossible values are explained.
# A small Llama-shaped model keeps it to about a second.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
source "$(dirname "$0")/../expect.bash"
cat > "$tmp/m.json" <<'JSON'
{"name": "llama-cp-test", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn": 3584, "ffn_type": "swiglu",
 "norm": "rmsnorm", "position": "rope", "tie_embeddings": false, "bias": false, "seq": 8192, "vocab": 32000}
JSON
P=(--platform dgx-h100-16n --model "$tmp/m.json")
S=tp=4,cp=2,pp=2,mb=1,gb=16,dtype=bf16

"$TRAINSIM" run "${P[@]}" --strategy "$S" --save-schedule "$tmp/s.json" > "$tmp/run.txt" 2>&1 \
    || { cat "$tmp/run.txt" >&2; fail "run with cp=2 exited non-zero"; }
grep -q '^strategy .*dp=8,.*cp=2' "$tmp/run.txt" || { cat "$tmp/run.txt" >&2; fail "run: strategy line lacks dp=8 and cp=2"; }
grep -q '^iteration time' "$tmp/run.txt" || fail "run: no iteration time"
"$TRAINSIM" check "$tmp/s.json" > "$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt" >&2; fail "check refused the cp=2 schedule"; }
grep -q 'ok, 128 ranks' "$tmp/check.txt" || { cat "$tmp/check.txt" >&2; fail "check: not 128 ranks"; }
grep -q '"cp-ring-send"' "$tmp/s.json" || fail "schedule has no cp-ring-send stream"
grep -q '"cp_kv_send"' "$tmp/s.json" || fail "schedule has no cp_kv_send"

"$TRAINSIM" run "${P[@]}" --strategy tp=4,pp=2,mb=1,gb=16,dtype=bf16 --compare cp=1,2 > "$tmp/c.txt" 2>&1 \
    || { cat "$tmp/c.txt" >&2; fail "--compare cp=1,2 exited non-zero"; }
grep -q '^2: tp=4,pp=2,dp=8,.*cp=2' "$tmp/c.txt" || { cat "$tmp/c.txt" >&2; fail "--compare: no cp=2 column"; }

expect_fail 'tp*pp*cp*dp = 4*2*2*16 = 256 GPUs' 'has 128 GPUs' -- run "${P[@]}" --strategy "$S,dp=16"
expect_fail 'cp=3 splits each sequence into 2·cp = 6 chunks' 'not divisible by 6' -- run "${P[@]}" --strategy tp=4,cp=3,pp=2,dtype=bf16
expect_fail 'tp*pp*cp = 1*1*4096 = 4096 does not divide the 128 GPUs' -- run "${P[@]}" --strategy tp=1,cp=4096,dtype=bf16
expect_fail 'not divisible by 16384' -- run "${P[@]}" --strategy tp=1,cp=8192,dp=1,dtype=bf16
expect_fail 'cp: expected a positive integer' -- run "${P[@]}" --strategy cp=0
expect_fail '2·cp = 3328576796 chunks' -- run "${P[@]}" --strategy tp=1,cp=1664288398,dp=1,dtype=bf16   # 2·cp past INT_MAX (fuzz_jobs)
expect_fail 'unfused attention' -- run "${P[@]}" --strategy "$S,attn=unfused"
finish
