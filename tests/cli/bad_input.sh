# bad_input.sh — bad inputs are refused: non-zero exit, no crash (no exit
# status >= 128, no timeout), and a message on stderr naming the problem.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
: "${SRC:?source tree}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect_fail "WORDS..." -- ARGS...: trainsim ARGS must exit 1..127 within 60 s
# and print every word (case-insensitive, fixed string) on stderr.
expect_fail() {
    local words=() rc=0
    while [ "$1" != "--" ]; do words+=("$1"); shift; done
    shift
    timeout 60 "$TRAINSIM" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "FAIL: trainsim $* exited 0, expected an error" >&2; failures=$((failures + 1)); return
    fi
    if [ "$rc" -ge 124 ]; then
        echo "FAIL: trainsim $* exited $rc (crash, signal or timeout)" >&2
        sed 's/^/  stderr: /' "$tmp/err" >&2; failures=$((failures + 1)); return
    fi
    local w
    for w in "${words[@]}"; do
        if ! grep -qiF -- "$w" "$tmp/err"; then
            echo "FAIL: trainsim $* (exit $rc): stderr lacks \"$w\"" >&2
            sed 's/^/  stderr: /' "$tmp/err" >&2; failures=$((failures + 1)); return
        fi
    done
}

# malformed model file: the message names the file and the position
printf '{"layers": 24,' > "$tmp/bad-model.json"
expect_fail "$tmp/bad-model.json" "malformed" -- --model "$tmp/bad-model.json"
expect_fail "$tmp/bad-model.json:1:" -- --model "$tmp/bad-model.json"

# unknown GPU model in a cluster file
sed 's/RTX3090/RTX9090/g' "$SRC/platforms/clusters/oases-3090.json" > "$tmp/cluster.json"
grep -q RTX9090 "$tmp/cluster.json" || { echo "FAIL: sed did not change the GPU model" >&2; exit 1; }
expect_fail "RTX9090" "unknown GPU" -- --platform "$tmp/cluster.json"

# strategies that do not fit the model or the platform
expect_fail "tp=32" "heads" -- --strategy tp=32,dp=1            # 48 heads in gpt-3072
expect_fail "GPUs" "40" -- --strategy tp=5,dp=8                 # 5*8 = 40 GPUs on 32
expect_fail "GPUs" "16" "32" -- --strategy tp=4,dp=4
expect_fail "--max-channels" "1 to 64" -- --max-channels 0
expect_fail "--max-channels" "x2" -- --max-channels x2
expect_fail "unknown key" "foo" -- --strategy tp=4,dp=8,foo=1
expect_fail "unknown option" "--bogus" -- --bogus

# out of GPU memory: the message from workloads/gpt.c gives what it needs
expect_fail "memory" "needs" "RTX3090" -- --model gpt-12288 --strategy tp=1,dp=32,recompute=none
expect_fail "memory" "needs" -- --strategy tp=4,dp=8,mb=4,gb=32,recompute=none

# missing files name the path
expect_fail "/nonexistent.json" -- --model /nonexistent.json
expect_fail "/nonexistent.json" -- --platform /nonexistent.json
expect_fail "/nonexistent.json" -- --schedule /nonexistent.json
expect_fail "/nonexistent.json" -- check /nonexistent.json

# hand-written schedules (format at the top of sim/schedule_json.c)
cat > "$tmp/cycle.json" <<'JSON'
{"format": "trainsim-schedule", "version": 1, "nranks": 1, "communicators": [],
 "ranks": [{"rank": 0, "streams": [
   {"name": "a", "ops": [{"id": 0, "op": "compute", "kernel": "fixed", "seconds": 0.001, "deps": [1]}]},
   {"name": "b", "ops": [{"id": 1, "op": "compute", "kernel": "fixed", "seconds": 0.001, "deps": [0]}]}]}]}
JSON
expect_fail "cycle" -- check "$tmp/cycle.json"
expect_fail "cycle" -- run --schedule "$tmp/cycle.json"

two_ranks() {   # two_ranks RANKS BYTES0 BYTES1: one allreduce per rank on communicator RANKS
    cat <<JSON
{"format": "trainsim-schedule", "version": 1, "nranks": 2,
 "communicators": [{"name": "w", "ranks": $1}],
 "ranks": [{"rank": 0, "streams": [{"name": "c", "ops": [{"id": 0, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": $2}]}]},
           {"rank": 1, "streams": [{"name": "c", "ops": [{"id": 1, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": $3}]}]}]}
JSON
}
# the well-formed version passes, so the failures below are the edits'
two_ranks "[0, 1]" 100 100 > "$tmp/good.json"
"$TRAINSIM" check "$tmp/good.json" > /dev/null || { echo "FAIL: check rejects the good two-rank schedule" >&2; failures=$((failures + 1)); }
two_ranks "[0, 1]" 100 200 > "$tmp/mismatch.json"
expect_fail "mismatch" "100" "200" -- check "$tmp/mismatch.json"
expect_fail "mismatch" -- run --schedule "$tmp/mismatch.json"
two_ranks "[0, 5]" 100 100 > "$tmp/rank5.json"
expect_fail "communicators[0].ranks[1]" -- check "$tmp/rank5.json"
expect_fail "rank" -- run --schedule "$tmp/rank5.json"
printf '{"format": "trainsim-schedule", "version": 1, "nranks": 2,' > "$tmp/truncated.json"
expect_fail "$tmp/truncated.json" -- check "$tmp/truncated.json"

if [ "$failures" -ne 0 ]; then
    echo "$failures bad-input case(s) failed" >&2
    exit 1
fi
echo "ok"
