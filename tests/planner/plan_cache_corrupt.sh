#!/usr/bin/env bash
# plan_cache_corrupt.sh — a corrupt line in the result cache (a NUL byte
# from a crashed filesystem, an edited record) is skipped with one warning
# and every later record is still used (one NUL byte used to hide them all
# for good); a read-only cache is read, not ignored, and the sweep says its
# new results are not saved.
set -euo pipefail
. "$(dirname "$0")/sweep.bash"
"$TRAINSIM" "${args[@]}" --cache c > ref.txt 2> /dev/null
total=$(grep -c . c/results.tsv)
[ "$total" -ge 4 ] || fail "only $total records"

# a NUL byte inside the second record
python3 - c/results.tsv <<'PY'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
lines[1] = lines[1][:10] + b"\0" + lines[1][11:]
open(sys.argv[1], "wb").write(b"\n".join(lines))
PY
"$TRAINSIM" "${args[@]}" --cache c > nul.txt 2> nul.err
cmp ref.txt nul.txt || fail "ranking after a NUL byte differs"
grep -q "1 corrupt line(s) skipped" nul.err || fail "no warning: $(cat nul.err)"
[ "$(grep -c 'corrupt line' nul.err)" -eq 1 ] || fail "warned more than once: $(cat nul.err)"
grep -q ": 1 evaluated .* $((total - 1)) from the cache" nul.err || fail "the records after the NUL byte were not used: $(cat nul.err)"

# read-only: as an unprivileged user when running as root (root writes anyway)
run_ro() {
    if [ "$(id -u)" -eq 0 ]; then
        command -v setpriv > /dev/null || return 1
        chmod 755 "$T"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$TRAINSIM" "$@"
    else
        "$TRAINSIM" "$@"
    fi
}
rm -rf c && "$TRAINSIM" "${args[@]}" --cache c > /dev/null 2>&1
head -n -1 c/results.tsv > c/r && mv c/r c/results.tsv   # one strategy left to evaluate
chmod 555 c && chmod 444 c/results.tsv
if run_ro "${args[@]}" --cache "$T/c" > ro.txt 2> ro.err; then
    cmp ref.txt ro.txt || fail "ranking with a read-only cache differs"
    grep -q "read-only" ro.err || fail "no read-only warning: $(cat ro.err)"
    grep -q ": 1 evaluated .* $((total - 1)) from the cache" ro.err || fail "the read-only cache was not read: $(cat ro.err)"
    [ "$(grep -c . c/results.tsv)" -eq $((total - 1)) ] || fail "a read-only cache was written"
else
    echo "skipped the read-only case (cannot drop privileges): $(cat ro.err 2>/dev/null)"
fi
chmod 755 c
echo ok
