# hostile_schedule.sh — schedule files built to break the reader (issue 19):
# every one is refused with the field named, or read correctly; never a
# crash, a silent truncation or invalid output.  And names that need
# escaping come out as valid JSON and CSV.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"

# one rank, one stream, the ops given
one() {
    printf '{"format": "trainsim-schedule", "version": 1, "nranks": 2, "communicators": [{"name": "w", "ranks": [0, 1]}],\n'
    printf ' "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [%s]}]}]}\n' "$1"
}
F='{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 0.001'
G='{"id": 1, "op": "compute", "kernel": "fixed", "seconds": 0.001'
one "$F}" > "$tmp/ok.json"
"$TRAINSIM" check "$tmp/ok.json" > /dev/null || fail "the base schedule is refused"

one "$F}, $G, \"deps\": [1e300]}" > "$tmp/depid.json"
expect_fail "deps[0]" "integer" -- check "$tmp/depid.json"
one "$F}, $G, \"deps\": [7]}" > "$tmp/depnone.json"
expect_fail "deps[0]" "no op has id 7" -- check "$tmp/depnone.json"
one '{"id": 0, "op": "send", "peer": 4294967297, "bytes": 8}' > "$tmp/peer.json"
expect_fail "peer" "4294967297" -- check "$tmp/peer.json"
one '{"id": 0, "op": "send", "peer": 1, "bytes": 8, "tag": 4294967296}' > "$tmp/tag.json"
expect_fail "tag" "4294967296" -- check "$tmp/tag.json"
one '{"id": 0, "op": "collective", "collective": "broadcast", "comm": 0, "bytes": 8, "root": 2}' > "$tmp/root.json"
expect_fail "root" -- check "$tmp/root.json"
one "$F, \"layer\": 3e9}" > "$tmp/layer.json"
expect_fail "layer" -- check "$tmp/layer.json"
one '{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 1e300}' > "$tmp/secs.json"
expect_fail "seconds" -- check "$tmp/secs.json"
one '{"id": 0, "op": "compute", "kernel": "gemm", "m": 4294967296, "n": 1, "k": 1}' > "$tmp/dim.json"
expect_fail ".m" -- check "$tmp/dim.json"
one '{"id": 0, "op": "compute", "kernel": "gemm", "m": 2147483647, "n": 2147483647, "k": 2147483647}' > "$tmp/huge.json"
expect_fail "kernel takes" "1e+06" -- run --schedule "$tmp/huge.json"
one "$F, \"seconds\": 0.002}" > "$tmp/dup.json"
expect_fail "seconds" "twice" -- check "$tmp/dup.json"
one "$F, \"secnds\": 1}" > "$tmp/unknown.json"
expect_fail "secnds" "unknown field" -- check "$tmp/unknown.json"
{ one "$F}"; echo '{"trailing": 1}'; } > "$tmp/trailing.json"
expect_fail "after the schedule" -- check "$tmp/trailing.json"
sed 's/"nranks": 2/"nranks": 2, "nranks": 3/' "$tmp/ok.json" > "$tmp/dup2.json"
expect_fail "nranks" "twice" -- check "$tmp/dup2.json"
sed 's/"nranks": 2/"nranks": 1e9/' "$tmp/ok.json" > "$tmp/ranks.json"
expect_fail "nranks" "65536" -- check "$tmp/ranks.json"
one "$F, \"name\": \"$(head -c 2000 /dev/zero | tr '\0' x)\"}" > "$tmp/longname.json"
expect_fail "name" "1024" -- check "$tmp/longname.json"
printf '{"format": "trainsim-schedule", "version": 1, "nranks": 1, "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": [{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 1}]}]}]}\0garbage' > "$tmp/nul.json"
expect_fail "NUL" -- check "$tmp/nul.json"
printf '\xff' > "$tmp/bin.json"
expect_fail "$tmp/bin.json" -- check "$tmp/bin.json"

# 65,536 dependencies on one operation: refused with the number and the limit
python3 - "$tmp/deps.json" <<'PY'
import json, sys
ops = [{"id": i, "op": "compute", "kernel": "fixed", "seconds": 0} for i in range(65536)]
ops.append({"id": 65536, "op": "compute", "kernel": "fixed", "seconds": 0, "deps": list(range(65536))})
json.dump({"format": "trainsim-schedule", "version": 1, "nranks": 1,
           "ranks": [{"rank": 0, "streams": [{"name": "s", "ops": ops}]}]}, open(sys.argv[1], "w"))
PY
expect_fail "65536 dependencies" "65535" -- check "$tmp/deps.json"

# no operations at all: a valid schedule (qsort of nothing), and one with
# no compute time runs to a valid JSON result (no NaN)
printf '{"format": "trainsim-schedule", "version": 1, "nranks": 1, "ranks": []}' > "$tmp/empty.json"
"$TRAINSIM" check "$tmp/empty.json" > /dev/null || fail "an empty schedule is refused"
one '{"id": 0, "op": "memory", "memory": "activations", "bytes": 100}' > "$tmp/nocompute.json"
"$TRAINSIM" run --schedule "$tmp/nocompute.json" --json > "$tmp/nc.json" || fail "a schedule without compute fails"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["iteration_time_s"] == 0 and d["samples_per_s"] is None, d' \
    "$tmp/nc.json" || fail "run --json of a schedule without compute is not valid JSON with null rates"

# names with quotes, backslashes, commas and newlines: valid JSON, trace and CSV
name='a \"quoted\", back\\slash\nnewline'
one "{\"id\": 0, \"op\": \"compute\", \"kernel\": \"fixed\", \"seconds\": 0.001, \"name\": \"$name\"},
     {\"id\": 1, \"op\": \"memory\", \"memory\": \"activations\", \"bytes\": 100, \"name\": \"$name\"}" \
    | sed 's/"meta"//; s/"name": "s"/"name": "s \\"t\\"\\nu"/' > "$tmp/names.json"
"$TRAINSIM" run --schedule "$tmp/names.json" --json --trace "$tmp/t.json" --memory "$tmp/m.csv" > "$tmp/r.json" \
    || fail "run with odd names failed"
python3 - "$tmp/r.json" "$tmp/t.json" "$tmp/m.csv" <<'PY' || fail "odd names broke an output"
import csv, json, sys
json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
want = 'a "quoted", back\\slash\nnewline'
names = {e.get("name") for e in t["traceEvents"]}
assert want in names, names
threads = {e["args"]["name"] for e in t["traceEvents"] if e.get("name") == "thread_name"}
assert 's "t"\nu' in threads, threads
rows = list(csv.DictReader(open(sys.argv[3], newline="")))
assert len(rows) == 1 and rows[0]["what"] == want, rows
PY

finish
