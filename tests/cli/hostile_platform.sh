# hostile_platform.sh — platforms that used to make SimGrid abort, often
# with no message, or that were silently misread (issue 19): each is now an
# error naming the file, line or element, exit 1, and no file left behind.
set -euo pipefail
: "${SRC:?source tree}"
. "$(dirname "$0")/../expect.bash"
export TMPDIR="$tmp/tmpdir"
mkdir -p "$TMPDIR"
S=(--model gpt-1024 --strategy tp=1,dp=4,mb=1,gb=4)

X="$SRC/platforms/examples/two-node.xml"
"$TRAINSIM" run --platform "$X" "${S[@]}" > /dev/null || fail "the example platform does not run"
x() { sed "$1" "$X" > "$tmp/$2.xml"; }
head -c 3000 "$X" > "$tmp/cut.xml"
expect_fail "cut.xml:" -- run --platform "$tmp/cut.xml" "${S[@]}"
x 's/<link_ctn id="alpha-mem"\/><link_ctn id="alpha-gpu1-pcie"/<link_ctn id="alpha-memx"\/><link_ctn id="alpha-gpu1-pcie"/' nolink
expect_fail "nolink.xml:22:" "alpha-memx" "no link" -- run --platform "$tmp/nolink.xml" "${S[@]}"
x 's/host id="beta-gpu1"/host id="beta-gpu0"/' duphost
expect_fail "duphost.xml:31:" "beta-gpu0" "already defined at line 30" -- run --platform "$tmp/duphost.xml" "${S[@]}"
x '/route src="alpha-gpu0" dst="alpha-gpu1"/d' noroute
expect_fail "no route" "alpha-gpu0" "alpha-gpu1" -- run --platform "$tmp/noroute.xml" "${S[@]}"
x 's/id="alpha-mem" bandwidth="20GBps"/id="alpha-mem" bandwidth="0GBps"/' zerobw
expect_fail "zerobw.xml:20:" "alpha-mem" "bandwidth" -- run --platform "$tmp/zerobw.xml" "${S[@]}"
x 's/id="alpha-mem" bandwidth="20GBps"/id="alpha-mem" bandwidth="1e-20GBps"/' tinybw
expect_fail "alpha-mem" "bandwidth" "1 kB/s" -- run --platform "$tmp/tinybw.xml" "${S[@]}"
x 's/id="alpha-mem" bandwidth="20GBps"/id="alpha-mem" bandwidth="20XBps"/' unit
expect_fail "unit.xml:20" "unknown unit" -- run --platform "$tmp/unit.xml" "${S[@]}"
x 's/speed="1Gf"/speed="0f"/' zerospeed
expect_fail "zerospeed.xml:14:" "speed" -- run --platform "$tmp/zerospeed.xml" "${S[@]}"
x 's/speed="1Gf"/speed="100Gf"/' fastgpu
expect_fail "1Gf" -- run --platform "$tmp/fastgpu.xml" "${S[@]}"
x 's|<host id="alpha-cpu" speed="100Gf"/>|<![CDATA[<host id="ghost" speed="1Gf"><prop id="trainsim:gpu" value="RTX4090"/></host>]]>|' cdata
expect_fail "cdata.xml:16:" "CDATA" -- run --platform "$tmp/cdata.xml" "${S[@]}"
x 's|</platform>|</platform><platform/>|' tworoots
expect_fail "root" -- run --platform "$tmp/tworoots.xml" "${S[@]}"
x 's|<router id="alpha-gw"/>|<router id="alpha-gw" id="x"/>|' dupattr
expect_fail "twice" -- run --platform "$tmp/dupattr.xml" "${S[@]}"
# the ring and staging properties (sim/machine.h): all or none, numbers checked
x 's|<prop id="trainsim:rank" value="0"/>|<prop id="trainsim:rank" value="0"/><prop id="trainsim:ring_pos" value="0"/>|' ringpos
expect_fail "ringpos.xml" "trainsim:ring_pos is on 1 of 4 GPU hosts" -- run --platform "$tmp/ringpos.xml" "${S[@]}"
x 's|<prop id="trainsim:rank" value="0"/>|<prop id="trainsim:rank" value="0"/><prop id="trainsim:nvlinks" value="0 1:x"/>|' nvlinks
expect_fail "nvlinks.xml" "trainsim:nvlinks" "index:links" -- run --platform "$tmp/nvlinks.xml" "${S[@]}"
x 's|<prop id="trainsim:rank" value="0"/>|<prop id="trainsim:rank" value="0"/><prop id="trainsim:nvlinks" value="70 1:2"/>|' nvlinks1
expect_fail "nvlinks1.xml" "trainsim:nvlinks" "its index in its node (0..63)" -- run --platform "$tmp/nvlinks1.xml" "${S[@]}"
# an NVLink mesh's links as its hosts list them: physical, so both ends agree
"$TRAINSIM" platform --platform dgx1-v100 -o "$tmp/dgx1.xml" > /dev/null || fail "dgx1-v100 does not write its XML"
D=(--model gpt-1024 --strategy tp=8,dp=1,mb=1,gb=8)
m() { sed "s|value=\"0 1:1 2:1 3:2 4:2\"|value=\"$1\"|" "$tmp/dgx1.xml" > "$tmp/$2.xml"; grep -q "value=\"$1\"" "$tmp/$2.xml" || fail "$2.xml: the sed found no GPU 0 links"; }
# GPU 0's links as given | the file | what the error says besides naming n0-gpu0
while IFS='|' read -r links name says; do
    m "$links" "$name"
    expect_fail "$name.xml" "n0-gpu0" "$says" -- run --platform "$tmp/$name.xml" "${D[@]}"
done <<'CASES'
0 1:2 2:1 3:2 4:2|nvl_oneway|2 links from 0 to 1 but 1 back
0 1:1 1:1 2:1 3:2 4:2|nvl_twice|peer 1 twice
0 0:1 1:1 2:1 3:2 4:2|nvl_self|its own index 0
0 1:1 2:1 3:2 4:2 9:1|nvl_nopeer|peer 9, but no GPU of node 0
3 1:1 2:1 3:2 4:2|nvl_dupindex|both index 3 in node 0
CASES
"$TRAINSIM" run --platform "$tmp/dgx1.xml" "${D[@]}" > /dev/null || fail "the DGX-1 XML does not run"
x 's|<link id="alpha-mem" bandwidth="20GBps" latency="0us" sharing_policy="SHARED"/>|<link id="alpha-mem" bandwidth="20GBps" latency="0us" sharing_policy="SHARED"><prop id="trainsim:cache_bytes" value="-1"/></link>|' cache
grep -q 'cache_bytes' "$tmp/cache.xml" || fail "cache.xml: the sed found no alpha-mem link"
expect_fail "cache.xml:20:" "alpha-mem" "trainsim:cache_bytes" ">= 0" -- run --platform "$tmp/cache.xml" "${S[@]}"
sed -i 's|value="-1"/>|value="1e6"/><prop id="trainsim:cache_bytes" value="2e6"/>|' "$tmp/cache.xml"
expect_fail "cache.xml:20:" "given twice" -- run --platform "$tmp/cache.xml" "${S[@]}"
sed -i 's|<prop id="trainsim:cache_bytes" value="2e6"/>||' "$tmp/cache.xml"
"$TRAINSIM" run --platform "$tmp/cache.xml" "${S[@]}" > /dev/null || fail "a host-memory link with a cache does not run"
# a GPU host inside a comment is not a GPU host: 4 GPUs, as SimGrid sees it
x 's|<host id="alpha-cpu" speed="100Gf"/>|<!-- <host id="ghost" speed="1Gf"><prop id="trainsim:gpu" value="RTX4090"/></host> -->|' comment
"$TRAINSIM" run --platform "$tmp/comment.xml" "${S[@]}" > /dev/null || fail "a host in a comment counted as a GPU"

# cluster JSON values that reach SimGrid: refused with the field named
c() { python3 - "$SRC/platforms/clusters/oases-3090.json" "$tmp/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}
c eff 'd["node"]["nic_efficiency"] = 1e-12'
expect_fail "node.nic_efficiency" "1e-12" -- run --platform "$tmp/eff.json" --model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8
c staging 'd["node"]["host_staging_GBps"] = 1e-12'
expect_fail "node.host_staging_GBps" -- run --platform "$tmp/staging.json" --model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8
c lat 'd["link_latency_us"] = {"pcie": 1e300}'
expect_fail "link_latency_us.pcie" -- run --platform "$tmp/lat.json" --model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8
c longname 'd["name"] = "x" * 200'
expect_fail "name" "127 bytes" -- platform --platform "$tmp/longname.json"
c gpus 'd["nodes"] = 100000'
expect_fail "65536" -- platform --platform "$tmp/gpus.json"
# a name that ends the XML comment it is written into (found by fuzz_cluster)
c comment 'd["name"] = "x --> <host id=\"evil\"/> <!-- y-"'
"$TRAINSIM" platform --platform "$tmp/comment.json" -o "$tmp/comment.xml" || fail "platform of a cluster named with -->"
"$TRAINSIM" run --platform "$tmp/comment.xml" --model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8 > /dev/null \
    || fail "the XML of a cluster named with --> does not load back"
# a key given twice: the first used to win silently
sed 's/"nic": *"[^"]*"/&, "nic_efficiency": 0.5/' "$SRC/platforms/clusters/oases-3090.json" > "$tmp/dupkey.json"
expect_fail "nic_efficiency" "twice" -- run --platform "$tmp/dupkey.json" --model gpt-1024 --strategy tp=4,dp=8,mb=1,gb=8

[ -z "$(ls -A "$TMPDIR")" ] || fail "files left in TMPDIR: $(ls -A "$TMPDIR")"
finish
