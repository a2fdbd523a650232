# list.sh — the catalogue listing and the version line.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$TRAINSIM" list) || fail "trainsim list exited non-zero"
for w in RTX3090 A100 oases-3090 a100-sxm-128n; do
    grep -q -- "$w" <<< "$out" || { echo "$out" >&2; fail "trainsim list does not mention $w"; }
done
v=$("$TRAINSIM" --version) || fail "trainsim --version exited non-zero"
grep -Eq '[0-9]+\.[0-9]+\.[0-9]+' <<< "$v" || fail "trainsim --version printed \"$v\", no version number"
echo "ok"
