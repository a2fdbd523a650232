# import_h100.sh — the five whole training steps this project recorded on one
# H100 SXM5 (validation/data/h100-micro/trace_gpt-*.json.gz: GPT 125M…2.7B,
# PyTorch 2.11, one GPU, no NCCL) imported and replayed on azure-nd-h100-v5
# with --gpus 1:
#   - every kernel and copy launched inside ProfilerStep#1 is imported, counted
#     here from the JSON (a kernel's launch is a cuda_runtime or, for the
#     nvjet GEMMs and cuDNN kernels of these traces, a cuda_driver event);
#   - the recorded step runs from the annotation's start to the end of the
#     last GPU work launched in it: these steps do not synchronise, and the
#     last 35-52 % of each recorded step comes after the annotation's end;
#   - replay within 0.1 % of that step.  Measured: +0.005 % (125M), the rest
#     +0.000 %.  Nothing is simulated here but recorded durations and host
#     delays on one stream, so the replay reproduces the step; 0.1 % is 0.11
#     to 0.22 ms, a fiftieth of the host delays (5-12 ms) or one mid-size
#     GEMM, so losing the delays fails it (a lost kernel fails the counts);
#   - --reprice H100-SXM: each nvjet GEMM becomes a GEMM payload, the
#     element-wise ops with shapes element-wise payloads, the later launches
#     of an op split in parts take no time; the repriced step within 15 % of
#     the recorded one, and its GPU time (the replay less the leading host
#     wait) within 15 % of the step measured without the profiler
#     (steps.csv, median of 8).  Measured before the H100 curves were refitted
#     on h100-micro's micro tables: +1.3 .. +5.8 % against the trace,
#     +1.9 .. +10.2 % against the measured median (the GEMMs' model 14-20 %
#     slow).  The bound is loose on purpose: the GEMMs are 30-50 % of each
#     step and kineto-gemm/H100-SXM misses single shapes by up to 30 %.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
: "${SRC:?source tree}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data="$SRC/validation/data/h100-micro"
models="125m 350m 760m 1.3b 2.7b"
for m in $models; do
    t="$data/trace_gpt-$m.json.gz"
    "$TRAINSIM" import kineto "$t" -o "$tmp/$m.json" --json > "$tmp/$m.import.json"
    "$TRAINSIM" run --schedule "$tmp/$m.json" --platform azure-nd-h100-v5 --gpus 1 --json > "$tmp/$m.run.json"
    "$TRAINSIM" import kineto "$t" -o "$tmp/$m.rp.json" --reprice H100-SXM --json > "$tmp/$m.rp.import.json"
    "$TRAINSIM" run --schedule "$tmp/$m.rp.json" --platform azure-nd-h100-v5 --gpus 1 --json > "$tmp/$m.rp.run.json"
done

python3 - "$tmp" "$data" $models <<'PY'
import csv, gzip, json, sys
tmp, data, models = sys.argv[1], sys.argv[2], sys.argv[3:]
measured = {r["name"]: float(r["step_ms_median"]) for r in csv.DictReader(open(data + "/steps.csv"))}
fails = []
for m in models:
    ev = json.load(gzip.open("%s/trace_gpt-%s.json.gz" % (data, m)))["traceEvents"]
    step = [e for e in ev if e.get("name") == "ProfilerStep#1" and e.get("cat") == "user_annotation"]
    assert len(step) == 1, (m, len(step))
    t0, t1 = step[0]["ts"], step[0]["ts"] + step[0]["dur"]
    launch = {e["args"]["correlation"]: e for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    work = [e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
            and t0 <= launch[e["args"]["correlation"]]["ts"] < t1]
    kernels = [e for e in work if e["cat"] == "kernel"]
    nvjet = sum(e["name"].startswith("nvjet_") for e in kernels)
    driver = sum(launch[e["args"]["correlation"]]["cat"] == "cuda_driver" for e in kernels)
    rec_step = (max(e["ts"] + e["dur"] for e in work) - t0) * 1e-3  # ms
    lead = (min(e["ts"] for e in work) - t0) * 1e-3

    imp = json.load(open("%s/%s.import.json" % (tmp, m)))
    r = imp["rank"][0]
    assert imp["ranks"] == 1 and r["step"] == "ProfilerStep#1" and r["collectives"] == 0, r
    assert r["kernels"] == len(kernels) and r["copies"] == len(work) - len(kernels), \
        (m, r["kernels"], r["copies"], len(kernels), len(work) - len(kernels))
    assert driver > 0, "%s: no driver-API launches: not the trace format this test is about" % m
    assert abs(r["step_s"] * 1e3 - rec_step) < 1e-3 and rec_step > step[0]["dur"] * 1e-3, (m, r["step_s"], rec_step)

    run = json.load(open("%s/%s.run.json" % (tmp, m)))
    assert run["gpu_model"] == "H100-SXM" and run["gpus"] == 1, (run["gpu_model"], run["gpus"])
    rep = run["per_gpu"][0]["end_s"] * 1e3
    err = rep / rec_step - 1

    ri = json.load(open("%s/%s.rp.import.json" % (tmp, m)))["rank"][0]
    sched = json.load(open("%s/%s.rp.json" % (tmp, m)))
    ops = [o for rk in sched["ranks"] for s in rk["streams"] for o in s["ops"]]
    gemm = sum(o.get("kernel") == "gemm" for o in ops)
    elem = sum(o.get("kernel") == "elementwise" for o in ops)
    parts = [o for o in ops if o.get("kernel") == "fixed" and o.get("seconds") == 0]
    assert gemm == nvjet, "%s: %d GEMM payloads for %d nvjet kernels" % (m, gemm, nvjet)
    assert elem > 0 and ri["repriced"] == gemm + elem + len(parts), (m, ri["repriced"], gemm, elem, len(parts))
    assert all("elementwise" in o["name"] for o in parts), [o["name"] for o in parts]
    rp = json.load(open("%s/%s.rp.run.json" % (tmp, m)))["per_gpu"][0]["end_s"] * 1e3
    rp_err = rp / rec_step - 1
    meas = measured["gpt-" + m]
    gpu_err = (rp - lead) / meas - 1
    print("gpt-%-4s: %4d kernels (%3d nvjet, %3d by the driver API), step %.3f ms (host annotation %.3f), "
          "replay %.3f ms %+.3f %% | repriced: %d GEMM + %d element-wise payloads, %d parts at 0; step %.3f ms "
          "%+.2f %% against the trace, GPU %.3f ms %+.2f %% against the measured %.3f ms"
          % (m, len(kernels), nvjet, driver, rec_step, step[0]["dur"] * 1e-3, rep, 100 * err, gemm, elem,
             len(parts), rp, 100 * rp_err, rp - lead, 100 * gpu_err, meas))
    if abs(err) >= 0.001:
        fails.append("%s: replay %+.3f %% beyond 0.1 %%" % (m, 100 * err))
    if abs(rp_err) >= 0.15 or abs(gpu_err) >= 0.15:
        fails.append("%s: repriced %+.2f %% (trace) / %+.2f %% (measured) beyond 15 %%" % (m, 100 * rp_err, 100 * gpu_err))
assert not fails, "; ".join(fails)
PY
echo ok
