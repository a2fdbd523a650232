# outputs.sh — outputs appear whole or not at all (issue 19): a write error
# (full disk, file-size limit, closed or full stdout) is an error with exit
# 1, the previous file stays as it was, a killed run leaves neither a partial
# file under the final name nor a temporary file; --json errors are JSON.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"
export TMPDIR="$tmp/tmpdir"
mkdir -p "$TMPDIR"
J=(--model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8)

if [ -w /dev/full ]; then
    expect_exit 1 "write failed" -- run "${J[@]}" --trace /dev/full
    expect_exit 1 "write failed" -- run "${J[@]}" --memory /dev/full
    expect_exit 1 "write failed" -- schedule "${J[@]}" -o /dev/full
    expect_exit 1 "write failed" -- platform -o /dev/full
    rc=0; "$TRAINSIM" list > /dev/full 2> "$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] && grep -q "standard output" "$tmp/err" || fail "list > /dev/full: exit $rc"
fi
rc=0; "$TRAINSIM" list >&- 2> "$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "standard output" "$tmp/err" || fail "list with stdout closed: exit $rc"
expect_exit 1 "$tmp/no/such/dir" -- schedule "${J[@]}" -o "$tmp/no/such/dir/s.json"

# a file-size limit (a full disk for one process): the old file survives
for f in t.json m.csv s.json p.xml; do echo old > "$tmp/$f"; done
limited() { (trap '' XFSZ; ulimit -f 128; exec "$TRAINSIM" "$@") > /dev/null 2> "$tmp/err"; }
for args in "run --trace $tmp/t.json" "run --memory $tmp/m.csv" "schedule -o $tmp/s.json" "platform --platform a100-sxm-128n -o $tmp/p.xml"; do
    rc=0
    # shellcheck disable=SC2086
    limited $args "${J[@]}" || rc=$?
    [ "$rc" -eq 1 ] || fail "$args under a 64 KiB file-size limit: exit $rc, expected 1"
    grep -q "write failed" "$tmp/err" || fail "$args: stderr lacks \"write failed\": $(cat "$tmp/err")"
done
for f in t.json m.csv s.json p.xml; do
    [ "$(cat "$tmp/$f")" = old ] || fail "$f was changed by a run that failed to write it"
done
left=$(find "$tmp" -name '.*.tmp-*' | wc -l)
[ "$left" -eq 0 ] || fail "$left temporary file(s) left behind: $(find "$tmp" -name '.*.tmp-*')"

# a run killed while it writes its trace: no partial trace, no temporary files.
# Where the filesystem has O_TMPFILE the trace is an unnamed file until it is
# complete, so even SIGKILL leaves nothing; elsewhere it is a named temporary
# that the signal handlers remove (SIGTERM).
"$TRAINSIM" run --trace "$tmp/killed.json" > /dev/null 2>&1 &
pid=$!
seen=
for _ in $(seq 200); do
    [ -n "$(find "$tmp" -maxdepth 1 -name '.killed.json.tmp-*')" ] && { seen=TERM; break; }
    ls -l "/proc/$pid/fd" 2> /dev/null | grep -q -- "-> $tmp/#.* (deleted)" && { seen=KILL; break; }
    sleep 0.1
done
[ -n "$seen" ] || fail "the run's temporary trace never appeared (the kill below tests nothing)"
kill -"${seen:-TERM}" "$pid" 2> /dev/null || true
wait "$pid" 2> /dev/null || true
[ ! -e "$tmp/killed.json" ] || fail "a run killed by SIG$seen left killed.json"
[ -z "$(find "$tmp" -name '.*.tmp-*')" ] || fail "a killed run left $(find "$tmp" -name '.*.tmp-*')"
[ -z "$(ls -A "$TMPDIR")" ] || fail "files left in TMPDIR: $(ls -A "$TMPDIR")"

# --json: errors are one JSON object on stderr, with the exit code
rc=0; "$TRAINSIM" --json --model "$tmp/none.json" > /dev/null 2> "$tmp/err" || rc=$?
python3 - "$tmp/err" "$rc" 1 "none.json" <<'PY' || fail "--json error for a missing model"
import json, sys
e = json.load(open(sys.argv[1]))
assert e["exit_code"] == int(sys.argv[2]) == int(sys.argv[3]) and sys.argv[4] in e["error"], e
PY
rc=0; "$TRAINSIM" --json --bogus > /dev/null 2> "$tmp/err" || rc=$?
python3 - "$tmp/err" "$rc" 2 "bogus" <<'PY' || fail "--json usage error"
import json, sys
e = json.load(open(sys.argv[1]))
assert e["exit_code"] == int(sys.argv[2]) == int(sys.argv[3]) and sys.argv[4] in e["error"], e
PY

finish
