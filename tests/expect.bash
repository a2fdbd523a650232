# expect.bash — sourced by the tests of hostile inputs and outputs
# (tests/*/hostile*.sh, outputs.sh); not a test itself.  It makes $tmp
# (removed at exit), counts failures, and checks exit codes and messages:
#   expect_exit RC WORDS... -- ARGS   trainsim ARGS exits RC within 120 s, every
#                                     word on stderr (case-insensitive, fixed string)
#   expect_fail WORDS... -- ARGS      the same with RC 1
#   fail MESSAGE; finish              count a failure; report and exit
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

expect_exit() {
    local want=$1 words=() rc=0 w
    shift
    while [ "$1" != "--" ]; do words+=("$1"); shift; done
    shift
    timeout 120 "$TRAINSIM" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "trainsim $*: exit $rc, expected $want"; sed 's/^/  /' "$tmp/err" >&2; return
    fi
    for w in "${words[@]}"; do
        grep -qiF -- "$w" "$tmp/err" || { fail "trainsim $*: stderr lacks \"$w\""; sed 's/^/  /' "$tmp/err" >&2; return; }
    done
}

expect_fail() { expect_exit 1 "$@"; }

finish() {
    if [ "$failures" -ne 0 ]; then echo "$failures case(s) failed" >&2; exit 1; fi
    echo "ok"
}
