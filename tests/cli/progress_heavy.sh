# progress_heavy.sh — a run over ~2 s prints progress on a terminal's stderr
# (simulated time, operations, time left), and before a run of millions of
# operations says that the planner's fast fidelity exists; nothing on stderr
# when it is not a terminal or with --quiet, and stdout is the same either
# way; a platform of 16,384 GPUs or more is announced before SimGrid loads
# it.  `script` gives the run a terminal; the long run is stopped after a
# few seconds of progress.  Heavy: ~20 s.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"
command -v script > /dev/null || { echo "skipped: no script(1)"; exit 0; }

big="--exact --strategy tp=4,dp=8,mb=4,gb=3200,dtype=tf32,recompute=full" # --exact: the whole 3.1 M operations (reduced, a quarter)
timeout 12 script -qec "'$TRAINSIM' $big > /dev/null" /dev/null > "$tmp/tty.err" 2> /dev/null < /dev/null || true
tr '\r' '\n' < "$tmp/tty.err" > "$tmp/lines"
grep -Eq "simulated [0-9.]+ s, [0-9.]+ of [0-9.]+ M operations \([0-9]+ %\), [0-9]+ s wall, about [0-9]+ s left" "$tmp/lines" \
    || { fail "no progress line"; head -c 600 "$tmp/lines" >&2; }
grep -q "M operations: a whole simulation takes minutes; the planner's fast fidelity estimates it in seconds: trainsim plan --platform oases-3090" "$tmp/lines" \
    || fail "no word of the fast fidelity before a run of millions of operations"

mid=(--strategy tp=4,dp=8,mb=4,gb=960,dtype=tf32,recompute=full)
script -qec "'$TRAINSIM' ${mid[*]} > '$tmp/tty.out'" /dev/null > "$tmp/mid.err" < /dev/null || fail "the run on a terminal failed"
"$TRAINSIM" "${mid[@]}" > "$tmp/plain.out" 2> "$tmp/plain.err"
[ ! -s "$tmp/plain.err" ] || fail "stderr is not a terminal, yet: $(head -c 200 "$tmp/plain.err")"
sed 's/ in [0-9.]* s wall$//' "$tmp/tty.out" > "$tmp/a"
sed 's/ in [0-9.]* s wall$//' "$tmp/plain.out" > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "stdout differs on a terminal"
script -qec "'$TRAINSIM' --quiet ${mid[*]} > /dev/null" /dev/null > "$tmp/quiet.err" < /dev/null
[ ! -s "$tmp/quiet.err" ] || fail "--quiet still prints: $(head -c 200 "$tmp/quiet.err")"
# a platform of 16,384 GPUs takes SimGrid seconds to load: said before it starts
sed 's/"nodes": 128/"nodes": 2048/' "$SRC/platforms/clusters/a100-sxm-128n.json" > "$tmp/big.json"
"$TRAINSIM" schedule --platform azure-nd-a100-v4 --model gpt-1024 --strategy tp=8,mb=1,gb=1,dtype=bf16 \
    -o "$tmp/s8.json" 2> /dev/null || fail "schedule for the load notice"
timeout 8 script -qec "'$TRAINSIM' run --schedule '$tmp/s8.json' --platform '$tmp/big.json' > /dev/null" /dev/null \
    > "$tmp/load.err" 2> /dev/null < /dev/null || true
grep -q "loading a platform of 16384 GPUs into SimGrid (about 10 s)" "$tmp/load.err" \
    || { fail "no notice before loading a large platform"; head -c 400 "$tmp/load.err" >&2; }
finish
