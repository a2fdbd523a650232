# compare.sh — `run --compare KEY=v1,v2,...`: side by side in text and
# JSON, each value the same job a plain run of it is, an impossible value
# reported in its column, extra keys after '+', a bad key refused.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S=tp=2,pp=4,dp=4,mb=1,gb=16,recompute=full

"$TRAINSIM" run --model gpt-1024 --strategy "$S" --compare pipeline=1f1b,gpipe,interleaved,interleaved+vstages=2 > "$tmp/c.txt" \
    || { cat "$tmp/c.txt" >&2; fail "--compare exited non-zero"; }
for want in 'compared by pipeline' 'iteration time (s)' 'TFLOP/s per GPU' 'exposed comm (s)' 'bubble/idle (s)' \
            'peak memory (GB)' 'gpipe: tp=2,pp=4,dp=4,mb=1,gb=16,dtype=tf32,recompute=full,bucket=auto,pipeline=gpipe' \
            'interleaved: cannot run: pipeline=interleaved needs vstages >= 2' \
            'interleaved+vstages=2: tp=2,pp=4,dp=4,mb=1,gb=16,dtype=tf32,recompute=full,bucket=auto,pipeline=interleaved,vstages=2'; do
    grep -qF "$want" "$tmp/c.txt" || { cat "$tmp/c.txt" >&2; fail "--compare output lacks \"$want\""; }
done

"$TRAINSIM" run --model gpt-1024 --strategy "$S" --compare 'pipeline=1f1b,gpipe' --json > "$tmp/c.json" \
    || fail "--compare --json exited non-zero"
"$TRAINSIM" run --model gpt-1024 --strategy "$S" --json > "$tmp/one.json" || fail "plain run"
"$TRAINSIM" run --model gpt-1024 --strategy "$S,pipeline=gpipe" --json > "$tmp/gpipe.json" || fail "gpipe run"
python3 - "$tmp/c.json" "$tmp/one.json" "$tmp/gpipe.json" <<'PY' || fail "--compare JSON check"
import json, sys
c = json.load(open(sys.argv[1])); one = json.load(open(sys.argv[2])); gp = json.load(open(sys.argv[3]))
assert c["compare"] == "pipeline", c["compare"]
runs = c["runs"]
assert [r["value"] for r in runs] == ["1f1b", "gpipe"], runs
assert all(r["ok"] for r in runs)
# each value runs exactly the job a plain run of that strategy runs
for r, ref in ((runs[0], one), (runs[1], gp)):
    assert abs(r["iteration_time_s"] / ref["iteration_time_s"] - 1) < 1e-8, (r["iteration_time_s"], ref["iteration_time_s"])
    assert r["peak_memory_bytes"] == ref["peak_memory_bytes"]
# GPipe keeps every micro-batch's layer inputs: more memory than 1F1B
assert runs[1]["peak_memory_bytes"] > runs[0]["peak_memory_bytes"]
assert abs(runs[0]["speedup_vs_first"] - 1) < 1e-12
PY

if "$TRAINSIM" run --model gpt-1024 --compare 'pipelin=1f1b,gpipe' > "$tmp/o" 2> "$tmp/e"; then fail "bad --compare key accepted"; fi
grep -q 'unknown key "pipelin"' "$tmp/e" || { cat "$tmp/e" >&2; fail "bad key message"; }
if "$TRAINSIM" run --model gpt-1024 --compare 'pipeline' > "$tmp/o" 2> "$tmp/e"; then fail "--compare without values accepted"; fi
grep -q 'expected KEY=v1,v2' "$tmp/e" || { cat "$tmp/e" >&2; fail "--compare syntax message"; }

echo ok
