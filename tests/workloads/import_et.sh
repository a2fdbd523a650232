# import_et.sh — `trainsim import kineto --et`: execution traces joined to
# their Kineto traces.
#   - the 8-rank DLRM step with its ETs (validation/data/kineto-traces/param/
#     dlrm_pytorch_et.tar.gz): joined by op order on each host thread (the
#     traces predate "Record function id"), every one of each rank's 1,672
#     host ops linked; kernels gain element-wise bytes (57 per rank:
#     addcmul_/addcdiv_, cat, sum, broadcasting mul...), 4 all-to-alls per
#     rank their recorded splits (uneven: the schedule's all-to-allv sizes
#     are the ET's, not an even split), repricing prices more kernels than
#     without the ETs, and the replay stays within 2 % of each rank's step;
#   - bad ETs are refused naming the file: another rank's ET (its pid), an
#     ET of another step (an input shape that differs), a truncated gzip, a
#     Kineto trace given as ET, an --et count that is not the traces';
#   - pipeline sends (a 2-rank hand-made pair): SendRecv kernels whose peer
#     the kernel args give (Dst/Src Rank) or an ET (schema 1.1, process
#     groups, joined by Record function id) become matched send/recv; without
#     a peer they are refused as before.  With the ET, a kernel on stream 9
#     reading the storage a stream-7 kernel wrote waits for it (the ET's data
#     flow; the trace records no stream wait).
set -uo pipefail
: "${SRC:?source tree}"
source "$SRC/tests/expect.bash"
D="$SRC/validation/data/kineto-traces/param"
tar xzf "$D/dlrm_kineto.tar.gz" -C "$tmp" && tar xzf "$D/dlrm_pytorch_et.tar.gz" -C "$tmp" || { fail "untar"; finish; }
traces=() ets=()
for r in 0 1 2 3 4 5 6 7; do
    traces+=("$tmp"/dlrm_kineto/worker${r}_*.json)
    ets+=(--et "$tmp/dlrm_pytorch_et/dlrm_eg_$r.json")
done

if "$TRAINSIM" import kineto "${traces[@]}" "${ets[@]}" -o "$tmp/et.json" --json > "$tmp/et-info.json" 2> "$tmp/err" &&
   "$TRAINSIM" import kineto "${traces[@]}" -o "$tmp/plain.json" > /dev/null 2>&1 &&
   "$TRAINSIM" import kineto "${traces[@]}" "${ets[@]}" -o "$tmp/et-v100.json" --reprice V100-SXM2-32GB --json \
       > "$tmp/et-v100-info.json" 2>&1 &&
   "$TRAINSIM" import kineto "${traces[@]}" -o "$tmp/v100.json" --reprice V100-SXM2-32GB --json \
       > "$tmp/v100-info.json" 2>&1 &&
   "$TRAINSIM" run --schedule "$tmp/et.json" --platform dgx1-v100 --json > "$tmp/run.json" 2> "$tmp/err"; then
    python3 - "$tmp" <<'PY' || fail "DLRM with ETs"
import json, sys
d = sys.argv[1]
info, run = json.load(open(d + "/et-info.json")), json.load(open(d + "/run.json"))
worst = 0
for r, (x, y) in enumerate(zip(info["rank"], run["per_gpu"])):
    e = x["et"]
    assert e["joined_by"] == "op order" and e["linked"] == 1672, e
    assert e["shapes"] > 0 and e["splits"] == 4 and e["groups"] == 0 and e["peers"] == 0, e
    err = (y["end_s"] - x["offset_s"]) / x["step_s"] - 1
    worst = max(worst, abs(err))
assert worst < 0.02, "replay error %.2f %% beyond 2 %%" % (100 * worst)
# the all-to-alls' sizes: the ET's splits, uneven where the plain import splits evenly
def a2a(path):
    s = json.load(open(path))
    return [o["send_bytes"] for r in s["ranks"] for st in r["streams"] for o in st["ops"]
            if o["op"] == "collective" and "send_bytes" in o]
p, q = a2a(d + "/plain.json"), a2a(d + "/et.json")
assert len(p) == len(q) == 40 and all(sum(a) == sum(b) for a, b in zip(p, q)), (len(p), len(q))
assert all(max(a) - min(a) <= 1 for a in p) and any(max(b) - min(b) > 1 for b in q)
# repricing: what the ET gave is priced, nothing is lost
a, b = json.load(open(d + "/v100-info.json")), json.load(open(d + "/et-v100-info.json"))
for x, y in zip(a["rank"], b["rank"]):
    assert y["repriced"] == x["repriced"] + y["et"]["shapes"], (x, y)
    assert y["repriced"] + y["scaled"] == x["repriced"] + x["scaled"], (x, y)
PY
else
    fail "import or run with ETs failed"; cat "$tmp/err" >&2
fi

# bad execution traces
swap=("${ets[@]}"); swap[1]="$tmp/dlrm_pytorch_et/dlrm_eg_1.json"; swap[3]="$tmp/dlrm_pytorch_et/dlrm_eg_0.json"
expect_fail "dlrm_eg_1.json" "recorded by process" "another rank" -- import kineto "${traces[@]}" "${swap[@]}" -o "$tmp/x.json"
python3 - "$tmp/dlrm_pytorch_et/dlrm_eg_0.json" "$tmp/step.json" <<'PY'
import json, sys
et = json.load(open(sys.argv[1]))
for n in et["nodes"]:   # another step: the all-to-all's input holds other sizes
    if n["name"] == "c10d::alltoall_base_" and n["input_shapes"][1] == [3392]:
        n["input_shapes"][1] = [3400]
json.dump(et, open(sys.argv[2], "w"))
PY
bad=("${ets[@]}"); bad[1]="$tmp/step.json"
expect_fail "step.json" "c10d::alltoall_base_" "[3400]" "another step" -- import kineto "${traces[@]}" "${bad[@]}" -o "$tmp/x.json"
gzip -c "$tmp/dlrm_pytorch_et/dlrm_eg_0.json" | head -c 20000 > "$tmp/cut.json.gz"
bad[1]="$tmp/cut.json.gz"
expect_fail "cut.json.gz" "truncated" -- import kineto "${traces[@]}" "${bad[@]}" -o "$tmp/x.json"
bad[1]="${traces[0]}"
expect_fail "no \"nodes\" array" "execution trace" -- import kineto "${traces[@]}" "${bad[@]}" -o "$tmp/x.json"
expect_exit 2 "one --et per trace" -- import kineto "${traces[@]}" --et "$tmp/step.json" -o "$tmp/x.json"

# pipeline sends: gen.py OUT RANK MODE (args: peers in kernel args; et: an ET
# gives them; none: nobody does)
cat > "$tmp/gen.py" <<'PY'
import json, sys
out, rank, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
peer, kind = 1 - rank, "send" if rank == 0 else "recv"
ev, t = [], 100.0
def launch(name, corr, dur, args, rf=None, op="record_param_comms", stream=7):
    global t
    if rf is not None:
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 7, "tid": 7, "ts": t - 1,
                   "dur": 8, "args": {"External id": rf, "Record function id": rf}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": t, "dur": 4,
               "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": t + 6, "dur": dur,
               "args": dict(stream=stream, correlation=corr, **args)})
    t += dur + 20
et = mode == "et"
launch("void foo_kernel<float>(float*)", 1, 30, {}, 3 if et else None, "aten::foo")
launch("void bar_kernel<float>(float*)", 4, 30, {}, 4 if et else None, "aten::bar", 9)  # reads what foo wrote
args = {}
if mode == "args":
    args = {"Collective name": kind, "In msg nelems": 4096, "Out msg nelems": 4096, "dtype": "Float",
            "Group size": 2, ("Dst Rank" if kind == "send" else "Src Rank"): peer}
launch("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", 2, 40, args, 5 if mode == "et" else None)
launch("void foo_kernel<float>(float*)", 3, 30, {})
ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 90, "dur": t - 80})
json.dump({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": ev,
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}, open(out, "w"))
if mode == "et":
    A = lambda **kw: [{"name": k, "type": "string" if isinstance(v, str) else "uint64", "value": v} for k, v in kw.items()]
    nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1,
              "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []},
              "attrs": A(rf_id=0, tid=0)},
             {"id": 2, "name": "## process_group:init ##", "ctrl_deps": 1,
              "inputs": {"values": [json.dumps([{"pg_name": "0", "pg_desc": "default_pg", "ranks": [],
                                                 "group_size": 2, "group_count": 1}])],
                         "shapes": [[]], "types": ["String"]},
              "outputs": {"values": [], "shapes": [], "types": []}, "attrs": A(rf_id=1, tid=1)},
             {"id": 4, "name": "aten::foo", "ctrl_deps": 1, "inputs": {"values": [], "shapes": [], "types": []},
              "outputs": {"values": [[20, 50, 0, 256, 4, "cuda:0"]], "shapes": [[256]], "types": ["Tensor(float)"]},
              "attrs": A(rf_id=3, tid=1)},
             {"id": 5, "name": "aten::bar", "ctrl_deps": 1,
              "inputs": {"values": [[21, 50, 0, 256, 4, "cuda:0"]], "shapes": [[256]], "types": ["Tensor(float)"]},
              "outputs": {"values": [], "shapes": [], "types": []}, "attrs": A(rf_id=4, tid=1)},
             {"id": 3, "name": "record_param_comms", "ctrl_deps": 1,
              "inputs": {"values": [[[10, 11, 0, 4096, 4, "cuda:0"]], 1, ["0", "default_pg"], peer, kind, [], [], 0, 1, 2],
                         "shapes": [[[4096]], [], [[], []], [], [], [], [], [], [], []],
                         "types": ["GenericList[Tensor(float)]", "Int", "Tuple[String,String]", "Int", "String",
                                   "GenericList[]", "GenericList[]", "Int", "Int", "Int"]},
              "outputs": {"values": [], "shapes": [], "types": []},
              "attrs": A(rf_id=5, tid=1, collective_name=kind, dtype="Float", in_msg_nelems=4096, pg_name="0",
                         pg_size=2)}]
    json.dump({"schema": "1.1.0-chakra.0.0.4", "pid": 7, "nodes": nodes}, open(out[:-5] + "-et.json", "w"))
PY
for mode in args et none; do
    python3 "$tmp/gen.py" "$tmp/p0-$mode.json" 0 $mode && python3 "$tmp/gen.py" "$tmp/p1-$mode.json" 1 $mode ||
        fail "gen $mode"
done
for mode in args et; do
    extra=()
    [ $mode = et ] && extra=(--et "$tmp/p0-et-et.json" --et "$tmp/p1-et-et.json")
    if "$TRAINSIM" import kineto "$tmp/p0-$mode.json" "$tmp/p1-$mode.json" "${extra[@]}" -o "$tmp/pp.json" --json \
        > "$tmp/pp-info.json" 2> "$tmp/err" &&
       "$TRAINSIM" run --schedule "$tmp/pp.json" --platform azure-nd-a100-v4 > /dev/null 2>> "$tmp/err"; then
        python3 - "$tmp/pp.json" "$tmp/pp-info.json" $mode <<'PY' || fail "pipeline sends ($mode)"
import json, sys
s, info, mode = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for r, x in enumerate(info["rank"]):
    assert x["p2p"] == 1 and x["collectives"] == 0, x
    if mode == "et":
        assert x["et"]["joined_by"] == "rf_id" and x["et"]["peers"] == 1 and x["et"]["linked"] == 3, x
        assert x["et"]["deps"] == 1 and x["waits"] == 0, x  # bar (stream 9) reads what foo (stream 7) wrote
        st = {z["name"]: z["ops"] for z in s["ranks"][r]["streams"]}
        foo = [o["id"] for o in st["stream 7"] if o.get("name") == "foo_kernel"]
        bar = [o for o in st["stream 9"] if o.get("name") == "bar_kernel"]
        assert len(foo) == 2 and len(bar) == 1 and foo[0] in bar[0].get("deps", []) + [
            d for o in st["stream 9"] if o.get("kernel") == "delay" for d in o.get("deps", [])], (foo, st)
    ops = [o for st in s["ranks"][r]["streams"] for o in st["ops"] if o["op"] in ("send", "recv")]
    want = {"op": "send" if r == 0 else "recv", "peer": 1 - r, "bytes": 16384}
    assert len(ops) == 1 and all(ops[0].get(k) == v for k, v in want.items()), ops
PY
    else
        fail "import/run of pipeline sends ($mode)"; cat "$tmp/err" >&2
    fi
done
expect_fail "p0-none.json" "SendRecv" "records its peer" -- import kineto "$tmp/p0-none.json" "$tmp/p1-none.json" -o "$tmp/x.json"
finish
