# platform_xml.sh — the exported SimGrid XML carries the trainsim:gpu/rank/node
# (and ring order, direction, staging cache) properties, so loading it back
# simulates exactly as the built-in cluster;
# the hand-written example platform loads too.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
: "${SRC:?source tree}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
time_of() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["iteration_time_s"]))' "$1"; }

"$TRAINSIM" platform -o "$tmp/p.xml" || fail "trainsim platform exited non-zero"
grep -q '<platform' "$tmp/p.xml" || fail "p.xml has no <platform> element"
n=$(grep -o '<prop id="trainsim:gpu"' "$tmp/p.xml" | wc -l)
[ "$n" -eq 32 ] || fail "p.xml has $n trainsim:gpu properties, expected 32"

M=(--model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8)
"$TRAINSIM" run --platform "$tmp/p.xml" "${M[@]}" --json > "$tmp/xml.json" || fail "run on the exported XML failed"
"$TRAINSIM" run --platform oases-3090 "${M[@]}" --json > "$tmp/builtin.json" || fail "run on oases-3090 failed"
a=$(time_of "$tmp/xml.json"); b=$(time_of "$tmp/builtin.json")
[ "$a" = "$b" ] || fail "iteration time on the exported XML $a != on oases-3090 $b"

# the bridged cluster: ring order and direction travel as host properties
"$TRAINSIM" platform --platform oases-3090-nvlink -o "$tmp/nv.xml" || fail "trainsim platform (nvlink) failed"
grep -q 'trainsim:ring_bidir' "$tmp/nv.xml" || fail "nv.xml lacks trainsim:ring_bidir"
"$TRAINSIM" run --platform "$tmp/nv.xml" "${M[@]}" --json > "$tmp/nvxml.json" || fail "run on nv.xml failed"
"$TRAINSIM" run --platform oases-3090-nvlink "${M[@]}" --json > "$tmp/nv.json" || fail "run on oases-3090-nvlink failed"
a=$(time_of "$tmp/nvxml.json"); c=$(time_of "$tmp/nv.json")
[ "$a" = "$c" ] || fail "iteration time on the exported bridged XML $a != on oases-3090-nvlink $c"
[ "$c" != "$b" ] || fail "bridges change nothing: $c on oases-3090-nvlink = $b on oases-3090"

ex="$SRC/platforms/examples/two-node.xml"
ngpu=$(grep -o '<prop id="trainsim:gpu"' "$ex" | wc -l)
"$TRAINSIM" run --platform "$ex" --model gpt-1024 --strategy "tp=1,dp=$ngpu,mb=1,gb=$ngpu" > "$tmp/ex.txt" \
    || fail "run on $ex with dp=$ngpu failed"
grep -q 'iteration time' "$tmp/ex.txt" || fail "no iteration time for $ex"
echo "ok"
