#!/usr/bin/env bash
# An interrupted sweep (killed with SIGKILL mid-way) resumes with nothing lost
# or duplicated, and ends with the same ranking as an uninterrupted one.
set -euo pipefail
. "$(dirname "$0")/sweep.bash"
"$TRAINSIM" "${args[@]}" --no-cache > ref.txt 2>/dev/null
total=$(sed -n 's/.*, \([0-9]*\) simulated$/\1/p' ref.txt)

"$TRAINSIM" "${args[@]}" --cache c --jobs 1 > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  [ -f c/results.tsv ] && [ "$(grep -c . c/results.tsv)" -ge 3 ] && break
  sleep 0.05
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
done1=$(grep -c . c/results.tsv)
[ "$done1" -ge 3 ] && [ "$done1" -lt "$total" ] || fail "kill did not land mid-way ($done1 of $total done)"

"$TRAINSIM" "${args[@]}" --cache c > resumed.txt 2> resumed.err
cmp ref.txt resumed.txt || fail "resumed ranking differs"
grep -q ": $((total - done1)) evaluated .* $done1 from the cache" resumed.err || fail "resume did not reuse the $done1 results: $(cat resumed.err)"
lines=$(grep -c . c/results.tsv)
uniq=$(cut -f1 c/results.tsv | sort -u | wc -l)
[ "$lines" = "$total" ] && [ "$uniq" = "$total" ] || fail "cache has $lines records, $uniq distinct, for $total strategies"

# a torn last record (a crash inside a write) is ignored and re-evaluated
head -c -20 c/results.tsv > torn.tsv && mv torn.tsv c/results.tsv
"$TRAINSIM" "${args[@]}" --cache c > torn.txt 2> torn.err
cmp ref.txt torn.txt || fail "ranking after a torn record differs"
grep -q ": 1 evaluated" torn.err || fail "torn record not re-evaluated: $(cat torn.err)"
echo ok
