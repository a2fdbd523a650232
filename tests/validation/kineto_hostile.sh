# kineto_hostile.sh — Kineto traces built to break the reader (issue 19):
# integers out of range are errors naming the event and field (never a
# wrapped cast), keys given twice and trailing text are refused, streams at
# the ends of the int range sort without overflow, 200 k distinct kernel
# names read in linear time (the old linear-scan intern took 20.7 s for
# 100 k), and 60 k streams and NCCL sizes summarised in n log n.
set -euo pipefail
. "$(dirname "$0")/../expect.bash"

# trace NAME 'python expression editing ev (the events) or d (the document)'
trace() {
    python3 - "$tmp/$1.json" "$2" <<'PY'
import json, sys
ev = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 50,
     "args": {"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 20, "dur": 5,
     "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 9,
     "args": {"correlation": 7, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 8, "ts": 40,
     "dur": 9, "args": {"stream": 8, "Collective name": "allreduce", "In msg nelems": 1024,
                        "Out msg nelems": 1024, "Group size": 8, "dtype": "Float"}},
]
d = {"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "distributedInfo": {"rank": 0, "world_size": 8},
     "traceEvents": ev}
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}
# bad NAME 'EDIT' WORDS...: the edited trace is refused, every word in the message
bad() {
    local name=$1 edit=$2
    shift 2
    trace "$name" "$edit"
    expect_fail "$@" -- validate --trace "$tmp/$name.json"
}
trace ok 'pass'
"$TRAINSIM" validate --trace "$tmp/ok.json" > "$tmp/out" || fail "the base trace is refused"
grep -q "GEMM 1 (1 with shapes" "$tmp/out" || fail "the base trace lost its GEMM shape: $(cat "$tmp/out")"

bad stream 'ev[2]["args"]["stream"] = 1e300' "traceEvents[2].args.stream" "1e+300"
bad pid 'ev[0]["pid"] = 1e300' "traceEvents[0].pid"
bad corr 'ev[1]["args"]["correlation"] = 2.5' "traceEvents[1].args.correlation" "2.5"
bad nelems 'ev[3]["args"]["In msg nelems"] = 1e300' "traceEvents[3].args.In msg nelems"
bad bytes 'ev[3]["args"]["In msg nelems"] = 2**52' "traceEvents[3]" "bytes"
bad group 'ev[3]["args"]["Group size"] = 4294967297' "Group size"
bad dims 'ev[0]["args"]["Input Dims"] = [[1e300, 128], [128, 256]]' "traceEvents[0].args.Input Dims" "aten::mm"
bad rank 'd["distributedInfo"]["rank"] = 4294967296' "distributedInfo.rank"
trace dup 'pass'
sed 's/"dur": 50,/"dur": 50, "dur": 60,/' "$tmp/dup.json" > "$tmp/dup2.json"
expect_fail "traceEvents[0].dur" "twice" -- validate --trace "$tmp/dup2.json"
{ cat "$tmp/ok.json"; echo ' {"more": 1}'; } > "$tmp/trailing.json"
expect_fail "unexpected text after" -- validate --trace "$tmp/trailing.json"
# streams at both ends of the int range at one instant (a comparator that
# subtracted them overflowed: UBSan stops here)
trace ends 'ev.append(dict(ev[2], args={"stream": -2**31})); ev.append(dict(ev[2], args={"stream": 2**31 - 1}))'
"$TRAINSIM" validate --trace "$tmp/ends.json" > /dev/null || fail "streams at the int range's ends"

# 200 k distinct kernel names: linear time
python3 - "$tmp/names.json" <<'PY'
import json, sys
ev = [{"ph": "X", "cat": "kernel", "name": "k%06d" % i, "pid": 0, "tid": 7, "ts": i, "dur": 1, "args": {"stream": 7}}
      for i in range(200000)]
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
start=$(date +%s)
timeout 60 "$TRAINSIM" validate --trace "$tmp/names.json" > "$tmp/out" || fail "200 k kernel names: exit $?"
grep -q "kernels    200000" "$tmp/out" || fail "200 k kernel names: not all read"
echo "200 k distinct kernel names read in $(( $(date +%s) - start )) s"

# 60 k NCCL kernels, each on its own stream and of its own size: the
# summary's main stream and groups by sorting (a scan per stream and per
# group was quadratic: minutes)
python3 - "$tmp/streams.json" <<'PY'
import json, sys
ev = [{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 7, "ts": i,
       "dur": 1, "args": {"stream": i, "Collective name": "allreduce", "In msg nelems": i + 1, "Group size": 8,
                          "dtype": "Float"}} for i in range(60000)]
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
start=$(date +%s)
timeout 60 "$TRAINSIM" validate --trace "$tmp/streams.json" > "$tmp/out" || fail "60 k streams: exit $?"
grep -q "stream     0 has the most kernels" "$tmp/out" || fail "60 k streams: not the smallest stream id on a tie"
[ "$(grep -c "allreduce" "$tmp/out")" -eq 60000 ] || fail "60 k streams: not one group per size"
echo "60 k streams and NCCL sizes summarised in $(( $(date +%s) - start )) s"

finish
