# trace.sh — the Chrome trace is valid JSON with one process per rank,
# named stream threads, compute/collective/transfer events and no negative
# durations; every track well nested and every flow arrow matched
# (trace_format.py), also gzip-compressed, with --trace-detail, and for a
# selection of ranks and a time window; and asking for a trace does not
# change what is simulated.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TRAINSIM" --strategy tp=4,dp=8,mb=4,gb=32,recompute=full --trace "$tmp/t.json" > /dev/null \
    || fail "trainsim --trace exited non-zero"
python3 - "$tmp/t.json" <<'PY' || fail "trace check"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d.get("traceEvents")
if not isinstance(ev, list) or not ev:
    sys.exit("no traceEvents list")
bad = []
x = [e for e in ev if e.get("ph") == "X"]
if not x:
    bad.append("no complete (ph X) events")
pids = {e.get("pid") for e in x}
if not pids <= set(range(32)):
    bad.append("X event pids outside 0..31: %r" % sorted(p for p in pids if p not in range(32))[:5])
if pids != set(range(32)):
    bad.append("ranks without events: %r" % sorted(set(range(32)) - pids))
threads = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
for t in ("compute", "tp"):
    if t not in threads:
        bad.append("no thread_name metadata named %r (have %r)" % (t, sorted(threads)))
cats = {e.get("cat") for e in x}
for c in ("compute", "collective", "transfer"):
    if c not in cats:
        bad.append("no X event with cat %r (have %r)" % (c, sorted(map(str, cats))))
neg = [e for e in x if not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0)]
if neg:
    bad.append("%d X events with missing or negative dur, e.g. %r" % (len(neg), neg[0]))
if bad:
    sys.exit("\n".join(bad))
PY
check() { python3 "$(dirname "$0")/trace_format.py" "$@" || fail "trace_format.py $*"; }
check "$tmp/t.json"
pp=(--platform rtx4090-4x8 --model gpt-1024 --strategy tp=4,pp=2,dp=4,mb=1,gb=16,dtype=bf16)
"$TRAINSIM" "${pp[@]}" --json > "$tmp/plain.out"
"$TRAINSIM" "${pp[@]}" --json --trace "$tmp/pp.json.gz" > "$tmp/traced.out"
cmp -s "$tmp/plain.out" "$tmp/traced.out" || fail "--trace changed the simulated results"
[ "$(head -c 2 "$tmp/pp.json.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "a .gz trace is not gzip"
check "$tmp/pp.json.gz"
python3 -c "
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))['traceEvents']
assert any(e.get('ph') == 's' for e in ev), 'no flow arrows from sends to receives'
assert any(e.get('args', {}).get('kernels', 1) > 1 for e in ev), 'no merged kernel runs'
" "$tmp/pp.json.gz" || fail "pipeline trace content"
"$TRAINSIM" "${pp[@]}" --trace "$tmp/detail.json" --trace-detail > /dev/null
check "$tmp/detail.json"
"$TRAINSIM" "${pp[@]}" --trace "$tmp/some.json" --trace-ranks 0,8-9 --trace-window 0.01:0.02 > /dev/null
check "$tmp/some.json" --ranks 0,8,9 --window 0.01:0.02
python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
assert {e['pid'] for e in ev if e.get('ph') == 'X'} == {0, 8, 9}, 'ranks 0, 8, 9 not all traced'
" "$tmp/some.json" || fail "--trace-ranks"
[ "$(stat -c %s "$tmp/some.json")" -lt "$(stat -c %s "$tmp/detail.json")" ] || fail "a selection is not smaller"
"$TRAINSIM" --trace-ranks 0 > /dev/null 2>&1 && fail "--trace-ranks without --trace accepted"
"$TRAINSIM" "${pp[@]}" --trace "$tmp/x.json" --trace-ranks 32 > /dev/null 2>&1 && fail "--trace-ranks 32 of 32 GPUs accepted"
"$TRAINSIM" "${pp[@]}" --trace "$tmp/x.json" --trace-window 2:1 > /dev/null 2>&1 && fail "--trace-window 2:1 accepted"
echo "ok"
