#!/bin/bash
# An 8-GPU all-reduce on DGX-1's hybrid cube mesh (platforms/clusters/
# dgx1-v100.json: eight pairs of two NVLinks): NCCL packs three rings both
# ways into the six links of every GPU (the doubled links' cycle twice, the
# single links' once: platforms/platform.c ring_cycles), so 256 MB reach
# 6 x 25 GB/s x 0.8 (the V100's NCCL prior) of bus bandwidth, within 10 %;
# the same node with single links (the mesh's one ring both ways, then the
# ring its other links close: four links a GPU) reaches two thirds of it,
# and its first ring alone (--max-channels 2: two links) a third.  Four of
# its GPUs (0-3, tensor parallelism of 4) get rings of their own over their
# links, as NCCL searches per communicator: four links each (0-3, 1-2 and
# 2-3 doubled), 4 x 25 x 0.8 within 10 %.
set -euo pipefail
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 - "$SRC" "$T" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
ranks = [{"rank": r, "streams": [{"name": "tp", "role": "tp", "ops": [
    {"id": r, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": 256 << 20}]}]} for r in range(8)]
json.dump({"format": "trainsim-schedule", "version": 1, "meta": {"name": "ar"}, "nranks": 8,
           "communicators": [{"name": "all", "ranks": list(range(8))}], "ranks": ranks}, open(f"{out}/ar.json", "w"))
c = json.load(open(f"{src}/platforms/clusters/dgx1-v100.json"))
c["node"]["nvlink"]["pairs"] = [p[:2] for p in c["node"]["nvlink"]["pairs"]]
json.dump(c, open(f"{out}/single.json", "w"))
ranks = [{"rank": r, "streams": [{"name": "tp", "role": "tp", "ops": [
    {"id": r, "op": "collective", "collective": "allreduce", "comm": 0, "bytes": 256 << 20}]}]} for r in range(4)]
json.dump({"format": "trainsim-schedule", "version": 1, "meta": {"name": "ar4"}, "nranks": 4,
           "communicators": [{"name": "four", "ranks": list(range(4))}], "ranks": ranks}, open(f"{out}/ar4.json", "w"))
PY
busbw() { "$TRAINSIM" run --schedule "$T/ar.json" --platform "$1" "${@:2}" --json |
          python3 -c "import json,sys; print(round(2*7/8*(256<<20)/json.load(sys.stdin)['iteration_time_s']/1e9, 1))"; }
nv2=$(busbw dgx1-v100); single=$(busbw "$T/single.json"); one=$(busbw "$T/single.json" --max-channels 2)
four=$("$TRAINSIM" run --schedule "$T/ar4.json" --platform dgx1-v100 --json |
       python3 -c "import json,sys; print(round(2*3/4*(256<<20)/json.load(sys.stdin)['iteration_time_s']/1e9, 1))")
echo "bus bandwidth, 256 MB over 8 V100: NV2 pairs $nv2 GB/s, single links $single, their first ring alone $one; over GPUs 0-3: $four"
python3 - "$nv2" "$single" "$one" "$four" <<'PY'
import sys
nv2, single, one, four = map(float, sys.argv[1:])
assert abs(nv2 / 120 - 1) < 0.10, f"DGX-1: {nv2} GB/s, want 6 x 25 x 0.8 = 120 within 10 %"
assert 0.55 < single / nv2 < 0.75, f"single links: {single} against {nv2}"
assert 0.25 < one / nv2 < 0.42, f"one ring both ways over single links: {one} against {nv2}"
assert abs(four / 80 - 1) < 0.10, f"GPUs 0-3: {four} GB/s, want 4 x 25 x 0.8 = 80 within 10 %"
PY
echo ok
