# import_errors.sh — `trainsim import kineto` on small hand-made traces:
# a good pair imports (ranks from distributedInfo, or from the argument
# order without it), `check` and `run` accept it, and each collective waits
# for the compute kernel before it (from cuda_sync records, or inferred from
# cudaStreamWaitEvent without them); each bad input is refused
# with the file and what is wrong: truncated gzip, a rank given twice or
# missing, collectives that differ across ranks (kind and size, or count),
# a step that is not there, a collective whose size is not recorded, usage.
set -uo pipefail
: "${SRC:?source tree}"
source "$SRC/tests/expect.bash"

# gen.py OUT RANK WORLD COLLS [nosteps] [noinfo]: one rank's trace; COLLS is a
# comma list of collective:elements ("alltoall:256,allreduce:1048576").
cat > "$tmp/gen.py" <<'PY'
import json, sys
out, rank, world, colls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
flags = sys.argv[5:]
ev, corr, t = [], 100, 100.0
def launch(name, stream, dur, args=None):
    global corr, t
    corr += 1
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t, "dur": 4,
               "args": {"correlation": corr}})
    a = {"stream": stream, "correlation": corr}
    a.update(args or {})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": t + 6, "dur": dur, "args": a})
    t += dur + 20
for c in [x for x in colls.split(",") if x]:
    kind, n, pg, splits = (c.split(":") + ["", ""])[:4]
    launch("void foo_kernel<float>(float*)", 7, 30)
    corr += 1  # the event record on stream 7 (its call is not in the trace)
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": t, "dur": 1,
               "args": {"correlation": 1}})
    if "sync" in flags:
        ev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": t + 5,
                   "dur": 0, "args": {"stream": 20, "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": corr}})
    t += 2
    args = {"Collective name": kind, "In msg nelems": int(n), "Out msg nelems": int(n), "dtype": "Float"}
    if pg:  # a process group: "0-1" -> ranks [0, 1]
        args["Process Group Ranks"] = "[" + ", ".join(pg.split("-")) + "]"
        args["Group size"] = len(pg.split("-"))
    if splits:
        args["In split size"] = "[" + ", ".join(splits.split("-")) + "]"
    if "nosize" in flags:
        args = {}
    launch("ncclDevKernel_%s_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)" %
           ("SendRecv" if kind == "alltoall" else "AllReduce"), 20, 50, args)
launch("void foo_kernel<float>(float*)", 7, 30)
if "nosteps" not in flags:
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 90,
               "dur": t - 80})
trace = {"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": ev}
if "noinfo" not in flags:
    trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
json.dump(trace, open(out, "w"))
PY
gen() { python3 "$tmp/gen.py" "$@"; }
C=alltoall:256,allreduce:1048576,allreduce:64
gen "$tmp/r0.json" 0 2 $C
gen "$tmp/r1.json" 1 2 $C

# good: ranks from distributedInfo, whatever the argument order
if "$TRAINSIM" import kineto "$tmp/r1.json" "$tmp/r0.json" -o "$tmp/job.json" > "$tmp/out" 2> "$tmp/err"; then
    grep -q "ranks from each trace's distributedInfo" "$tmp/out" || fail "import: rank source not said"
    grep -q "^   0 .*r0.json" "$tmp/out" || fail "import: r0.json is not rank 0"
    "$TRAINSIM" check "$tmp/job.json" | grep -q "ok, 2 ranks" || fail "check refused the imported schedule"
    "$TRAINSIM" run --schedule "$tmp/job.json" --platform azure-nd-a100-v4 --json > "$tmp/run.json" 2> "$tmp/err" ||
        { fail "run of the imported schedule failed"; cat "$tmp/err" >&2; }
else
    fail "import of a good pair failed"; cat "$tmp/err" >&2
fi
# without distributedInfo: the argument order
gen "$tmp/n0.json" 0 2 $C noinfo
gen "$tmp/n1.json" 1 2 $C noinfo
"$TRAINSIM" import kineto "$tmp/n0.json" "$tmp/n1.json" -o "$tmp/job2.json" > "$tmp/out" 2>&1 &&
    grep -q "ranks from the argument order" "$tmp/out" || fail "argument order not used or not said"

# cross-stream dependencies: recorded (cuda_sync) and inferred
gen "$tmp/y0.json" 0 2 $C sync
gen "$tmp/y1.json" 1 2 $C sync
for pair in "y0 y1 cuda_sync" "r0 r1 inferred"; do
    set -- $pair
    "$TRAINSIM" import kineto "$tmp/$1.json" "$tmp/$2.json" -o "$tmp/dep.json" --json > "$tmp/dep-info.json" ||
        { fail "import of $1/$2 failed"; continue; }
    python3 - "$tmp/dep.json" "$tmp/dep-info.json" "$3" <<'PY' || fail "dependencies of $1/$2 ($3)"
import json, sys
s, info, how = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for x in info["rank"]:
    assert x["waits_from"].startswith(how) and x["waits"] == 3, x
for r in s["ranks"]:
    st = {x["name"]: x["ops"] for x in r["streams"]}
    compute = [o["id"] for o in st["stream 7"] if o["kernel"] == "fixed"]
    ops = st["stream 20"]
    for i, o in enumerate(ops):
        if o["op"] != "collective":
            continue
        deps = o.get("deps", []) + (ops[i - 1].get("deps", []) if i and ops[i - 1].get("kernel") == "delay" else [])
        n = sum(1 for p in ops[:i] if p["op"] == "collective")
        assert deps == [compute[n]], (o, deps, compute)
PY
done

# process groups (kernel args' Process Group Ranks) as communicators, recorded all-to-all splits
gen "$tmp/g0.json" 0 4 alltoall:4:0-1:1-3,allreduce:64,allreduce:8:0-2
gen "$tmp/g1.json" 1 4 alltoall:4:0-1:2-2,allreduce:64
gen "$tmp/g2.json" 2 4 allreduce:16:2-3,allreduce:64,allreduce:8:0-2
gen "$tmp/g3.json" 3 4 allreduce:16:2-3,allreduce:64
if "$TRAINSIM" import kineto "$tmp"/g[0-3].json -o "$tmp/pg.json" > "$tmp/out" 2> "$tmp/err"; then
    "$TRAINSIM" check "$tmp/pg.json" | grep -q "ok, 4 ranks, .* 4 communicators" || fail "process groups: check"
    python3 - "$tmp/pg.json" <<'PY' || fail "process groups: communicators or splits"
import json, sys
s = json.load(open(sys.argv[1]))
assert [c["ranks"] for c in s["communicators"]] == [[0, 1, 2, 3], [0, 1], [0, 2], [2, 3]], s["communicators"]
a2a = [o for o in s["ranks"][0]["streams"][1]["ops"] if o["op"] == "collective"][0]
assert a2a["comm"] == 1 and a2a["send_bytes"] == [4, 12], a2a
PY
    "$TRAINSIM" run --schedule "$tmp/pg.json" --platform azure-nd-a100-v4 > /dev/null 2> "$tmp/err" ||
        fail "process groups: run failed"
else
    fail "process groups: import failed"; cat "$tmp/err" >&2
fi
gen "$tmp/g3.json" 3 4 allreduce:32:2-3,allreduce:64
expect_fail "g3.json" "rank 3's 1st collective of process group [2,3] is an allreduce of 128 bytes" \
    "rank 2's" "allreduce of 64 bytes" -- import kineto "$tmp"/g[0-3].json -o "$tmp/x.json"
gen "$tmp/g3.json" 3 4 allreduce:16:2-5,allreduce:64
expect_fail "g3.json" "process group ranks" "[2, 5]" -- import kineto "$tmp"/g[0-3].json -o "$tmp/x.json"

# truncated gzip
gzip -c "$tmp/r1.json" > "$tmp/full.json.gz"
head -c $(($(stat -c %s "$tmp/full.json.gz") / 2)) "$tmp/full.json.gz" > "$tmp/cut.json.gz"
expect_fail "cut.json.gz" "truncated" -- import kineto "$tmp/r0.json" "$tmp/cut.json.gz" -o "$tmp/x.json"
# a rank given twice, a rank missing
cp "$tmp/r0.json" "$tmp/r0b.json"
expect_fail "r0.json" "r0b.json" "both hold rank 0" -- import kineto "$tmp/r0.json" "$tmp/r0b.json" -o "$tmp/x.json"
gen "$tmp/w3.json" 0 3 $C
expect_fail "w3.json" "job of 3 ranks" "2 traces" -- import kineto "$tmp/w3.json" "$tmp/r1.json" -o "$tmp/x.json"
gen "$tmp/r5.json" 5 2 $C
expect_fail "r5.json" "rank 5" -- import kineto "$tmp/r0.json" "$tmp/r5.json" -o "$tmp/x.json"
expect_fail "records its rank" "n1.json" -- import kineto "$tmp/r0.json" "$tmp/n1.json" -o "$tmp/x.json"
# collectives that differ across ranks: kind and size, then count
gen "$tmp/m1.json" 1 2 alltoall:256,alltoall:64,allreduce:64
gen "$tmp/x1.json" 1 2 allreduce:64,allreduce:1048576,allreduce:64
expect_fail "x1.json" "rank 1's 1st collective is an allreduce of 256 bytes" "alltoall of 1024 bytes" \
    -- import kineto "$tmp/r0.json" "$tmp/x1.json" -o "$tmp/x.json"
gen "$tmp/x1.json" 1 2 alltoall:256,allreduce:1048576,allreduce:65
expect_fail "rank 1's 3rd collective is an allreduce of 260 bytes" "allreduce of 256 bytes" \
    -- import kineto "$tmp/r0.json" "$tmp/x1.json" -o "$tmp/x.json"
expect_fail "m1.json" "2nd collective is an alltoall of 256 bytes" "allreduce of 4194304 bytes" \
    -- import kineto "$tmp/r0.json" "$tmp/m1.json" -o "$tmp/x.json"
gen "$tmp/f1.json" 1 2 alltoall:256,allreduce:1048576
expect_fail "f1.json" "has 2 collectives" "has 3" -- import kineto "$tmp/r0.json" "$tmp/f1.json" -o "$tmp/x.json"
# steps
expect_fail "r0.json" "no ProfilerStep#5 marker" "ProfilerStep#1" \
    -- import kineto "$tmp/r0.json" "$tmp/r1.json" -o "$tmp/x.json" --step 5
gen "$tmp/s0.json" 0 2 $C nosteps
gen "$tmp/s1.json" 1 2 $C nosteps
expect_fail "s0.json" "no ProfilerStep# markers" -- import kineto "$tmp/s0.json" "$tmp/s1.json" -o "$tmp/x.json" --step 1
"$TRAINSIM" import kineto "$tmp/s0.json" "$tmp/s1.json" -o "$tmp/x.json" > "$tmp/out" 2>&1 &&
    grep -q "(whole)" "$tmp/out" || fail "a trace without markers is not imported whole"
# a collective whose size the trace does not record
gen "$tmp/z0.json" 0 2 $C nosize
expect_fail "z0.json" "ncclDevKernel_SendRecv_Sum_f32_RING_LL at" "point-to-point" "records its peer" \
    -- import kineto "$tmp/z0.json" "$tmp/r1.json" -o "$tmp/x.json"
gen "$tmp/z0.json" 0 1 allreduce:64 nosize
expect_fail "z0.json" "records neither its size" -- import kineto "$tmp/z0.json" -o "$tmp/x.json"
# usage
expect_exit 2 "-o FILE" -- import kineto "$tmp/r0.json"
expect_exit 2 "--step" "expected a step number" -- import kineto "$tmp/r0.json" -o "$tmp/x.json" --step x
expect_exit 2 "trace format" -- import
expect_fail "--reprice" "nosuchgpu" -- import kineto "$tmp/r0.json" "$tmp/r1.json" -o "$tmp/x.json" --reprice nosuchgpu
finish
