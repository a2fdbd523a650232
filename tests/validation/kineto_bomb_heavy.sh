# kineto_bomb_heavy.sh — a gzip bomb (1.1 GiB of text in ~1 MB) is refused
# once VAL_KINETO_MAX_BYTES (1 GiB) have been read: the message names the
# limit, and memory stays near the limit (before: 2.1 GB, then "corrupt
# gzip").  Heavy: it decompresses a gigabyte.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/bomb.json.gz" <<'PY'
import sys, zlib
z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
out = open(sys.argv[1], "wb")
chunk = b" " * (1 << 20)
out.write(z.compress(b'{"traceEvents": ['))
for _ in range(1100):
    out.write(z.compress(chunk))
out.write(z.compress(b"]}"))
out.write(z.flush())
PY
rc=0
/usr/bin/time -f "%M" -o "$tmp/rss" "$TRAINSIM" validate --trace "$tmp/bomb.json.gz" > /dev/null 2> "$tmp/err" || rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, expected 1: $(cat "$tmp/err")" >&2; exit 1; }
grep -q "more than 1024 MiB" "$tmp/err" || { echo "FAIL: stderr: $(cat "$tmp/err")" >&2; exit 1; }
rss=$(tail -1 "$tmp/rss")
echo "gzip bomb refused at $((rss / 1024)) MB peak RSS"
[ "$rss" -lt $((1300 * 1024)) ] || { echo "FAIL: peak RSS $rss KB" >&2; exit 1; }
echo "ok"
