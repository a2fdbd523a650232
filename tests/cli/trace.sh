# trace.sh — the Chrome trace is valid JSON with one process per rank,
# named stream threads, compute/collective/transfer events and no negative
# durations.
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
echo "ok"
