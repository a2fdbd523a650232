#!/usr/bin/env python3
"""Micro-measurements of one NVIDIA GPU for trainsim's device parameters.

Run on the GPU itself (PyTorch, Triton and nvidia-ml-py there):
    OUT=dir python3 bench/gpu/measure.py
Writes into $OUT: gemm.csv (bf16 matrix products: a random shape grid, square
sizes and the fwd / dgrad / wgrad products of transformer layers; FP8 through
torch._scaled_mm), attention.csv (SDPA fused attention, FlashAttention-2 and
cuDNN backends, forward and backward), memory.csv (element-wise kernels and
launch costs), overlap.csv (a GEMM beside a few-CTA copy kernel that stands in
for an NCCL kernel), steps.csv and trace_*.json.gz (whole training steps of
small GPTs under the PyTorch profiler, as Kineto traces), log.txt.

Timing: kernels are captured in CUDA graphs and replayed (the host's launch
cost out of the figure), median of several replays after warm-up; operands
rotate among copies when they would fit in L2; inputs are random (never zeros).
Every row carries the SM clock read (NVML) right after it ran.
"""
import csv, gzip, math, os, random, shutil, statistics, sys, time, traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = os.environ.get("OUT", "out")
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "log.txt"), "w")
T0 = time.time()
BUDGET_S = float(os.environ.get("BUDGET_S", "400"))


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


try:
    import pynvml
    pynvml.nvmlInit()
    NVH = pynvml.nvmlDeviceGetHandleByIndex(0)

    def clocks():
        return (pynvml.nvmlDeviceGetClockInfo(NVH, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetPowerUsage(NVH) / 1000.0)
except Exception as e:  # measurements go on without clocks
    log("nvml unavailable:", e)

    def clocks():
        return (0, 0.0)

dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
log("device", props.name, "SMs", props.multi_processor_count, "mem GB", props.total_memory / 2**30,
    "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
L2 = getattr(props, "L2_cache_size", 50 * 2**20)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True


class Writer:
    def __init__(self, name, cols):
        self.f = open(os.path.join(OUT, name), "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(cols)
        self.f.flush()

    def row(self, *v):
        self.w.writerow(v)
        self.f.flush()


def over_budget(section):
    if time.time() - T0 > BUDGET_S:
        log("budget spent; skipping", section)
        return True
    return False


def graph_time_us(fn, n_inner, reps=5):
    """Median per-call device time of fn over graph replays of n_inner calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n_inner):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / n_inner)
    del g
    return statistics.median(ts)


def event_time_us(fn, n, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / n


# ---------------------------------------------------------------- GEMMs
def gemm_shapes():
    rnd = random.Random(20261127)
    shapes = []
    for s in [128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]:
        shapes.append(("square", "nn", s, s, s))
    # random grid: log-uniform edges, most multiples of 64, some not
    while len([x for x in shapes if x[0] == "grid"]) < 220:
        e = [int(round(2 ** rnd.uniform(7, 15))) for _ in range(3)]
        if rnd.random() < 0.85:
            e = [max(64, 64 * round(v / 64)) for v in e]
        m, n, k = e
        if 2 * m * n * k > 3e13 or 2 * (m * k + k * n + m * n) > 6e9:
            continue
        shapes.append(("grid", "nn", m, n, k))
    # transformer linears: y = x W^T (fwd), dx = dy W (dgrad), dW = dy^T x (wgrad)
    for T in [2048, 8192, 32768]:
        for h in [768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192]:
            for name, i, o in [("qkv", h, 3 * h), ("proj", h, h), ("fc1", h, 4 * h), ("fc2", 4 * h, h)]:
                shapes.append(("layer-%s-h%d" % (name, h), "fwd", T, o, i))
                shapes.append(("layer-%s-h%d" % (name, h), "dgrad", T, i, o))
                shapes.append(("layer-%s-h%d" % (name, h), "wgrad", o, i, T))
    # Llama-style SwiGLU (gate and up fused) and tensor-parallel slices
    for T, h, f, tp in [(8192, 4096, 11008, 1), (8192, 4096, 14336, 1), (8192, 8192, 28672, 8),
                        (8192, 8192, 28672, 4), (16384, 5120, 13824, 2), (4096, 12288, 49152, 8)]:
        for name, i, o in [("gateup", h, 2 * f // tp), ("down", f // tp, h), ("qkv", h, 3 * h // tp),
                           ("proj", h // tp, h)]:
            tag = "llama-%s-h%d-f%d-tp%d" % (name, h, f, tp)
            shapes.append((tag, "fwd", T, o, i))
            shapes.append((tag, "dgrad", T, i, o))
            shapes.append((tag, "wgrad", o, i, T))
    return shapes


def run_gemm_shape(layout, m, n, k, dtype=torch.bfloat16):
    """Out is m x n, the reduction k; operands laid out as PyTorch's Linear uses them."""
    foot = 2 * (m * k + k * n + m * n)
    copies = max(1, min(8, math.ceil(4 * L2 / foot)))
    ops = []
    for _ in range(copies):
        if layout in ("nn", "dgrad"):      # A (m,k) row-major @ B (k,n) row-major
            a = torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(k, n, device=dev, dtype=dtype)
        elif layout == "fwd":              # x (m,k) @ W^T, W (n,k)
            a = torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(n, k, device=dev, dtype=dtype).t()
        else:                              # wgrad: dy^T (m = out, k = tokens) @ x (k, n)
            a = torch.randn(k, m, device=dev, dtype=dtype).t()
            b = torch.randn(k, n, device=dev, dtype=dtype)
        c = torch.empty(m, n, device=dev, dtype=dtype)
        ops.append((a, b, c))
    flops = 2.0 * m * n * k
    est = flops / 6e14 + 6e-6
    n_inner = max(copies, min(200, int(3e-3 / est)))
    n_inner = (n_inner // copies) * copies
    it = [0]

    def fn():
        a, b, c = ops[it[0] % copies]
        it[0] += 1
        torch.matmul(a, b, out=c)
    us = graph_time_us(fn, n_inner)
    del ops
    return us, flops


def section_gemm():
    w = Writer("gemm.csv", ["set", "layout", "dtype", "m", "n", "k", "us", "tflops", "sm_mhz", "power_w"])
    shapes = gemm_shapes()
    log("gemm shapes", len(shapes))
    for i, (tag, layout, m, n, k) in enumerate(shapes):
        if over_budget("rest of gemm"):
            break
        try:
            us, flops = run_gemm_shape(layout, m, n, k)
            mhz, pw = clocks()
            w.row(tag, layout, "bf16", m, n, k, "%.3f" % us, "%.2f" % (flops / us / 1e6), mhz, "%.0f" % pw)
        except Exception as e:
            log("gemm", tag, layout, m, n, k, "failed:", repr(e)[:200])
        if i % 100 == 0:
            log("gemm", i, "of", len(shapes), "t=%.0fs" % (time.time() - T0))
    torch.cuda.empty_cache()
    # FP8 (E4M3, per-tensor scales, bf16 out) as Transformer Engine's GEMMs
    if not hasattr(torch, "_scaled_mm"):
        log("no torch._scaled_mm: FP8 skipped")
        return
    fp8 = [(s, s, s) for s in [1024, 2048, 4096, 8192, 16384]]
    for T in [8192]:
        for h in [2048, 4096, 8192]:
            fp8 += [(T, 3 * h, h), (T, h, h), (T, 4 * h, h), (T, h, 4 * h), (3 * h, h, T), (4 * h, h, T)]
    one = torch.ones((), device=dev, dtype=torch.float32)
    for m, n, k in fp8:
        if over_budget("fp8"):
            break
        try:
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            us = graph_time_us(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                               max(1, min(100, int(3e-3 / (2.0 * m * n * k / 1.2e15 + 6e-6)))))
            mhz, pw = clocks()
            w.row("fp8", "fwd", "fp8", m, n, k, "%.3f" % us, "%.2f" % (2.0 * m * n * k / us / 1e6), mhz, "%.0f" % pw)
            del a, b
        except Exception as e:
            log("fp8", m, n, k, "failed:", repr(e)[:300])


# ------------------------------------------------------------ attention
def section_attention():
    from torch.nn.attention import sdpa_kernel, SDPBackend
    w = Writer("attention.csv", ["backend", "direction", "causal", "head_dim", "seq", "batch", "heads", "us",
                                 "tflops", "sm_mhz"])
    tokens, hidden = 16384, 2048
    for backend_name, backend in [("flash2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]:
        for d in [64, 128]:
            for s in [512, 1024, 2048, 4096, 8192, 16384]:
                for causal in [0, 1]:
                    if over_budget("attention"):
                        return
                    b, hh = tokens // s, hidden // d
                    try:
                        q = torch.randn(b, hh, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        k = torch.randn(b, hh, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        v = torch.randn(b, hh, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        go = torch.randn(b, hh, s, d, device=dev, dtype=torch.bfloat16)
                        with sdpa_kernel([backend]):
                            def fwd():
                                with torch.no_grad():
                                    F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

                            def fwdbwd():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                                torch.autograd.grad(o, (q, k, v), go)  # no accumulation into .grad
                            tf = event_time_us(fwd, 10)
                            tfb = event_time_us(fwdbwd, 10)
                        mhz, _ = clocks()
                        f = 4.0 * b * hh * s * s * d * (0.5 if causal else 1.0)
                        w.row(backend_name, "fwd", causal, d, s, b, hh, "%.2f" % tf, "%.1f" % (f / tf / 1e6), mhz)
                        tb = tfb - tf
                        w.row(backend_name, "bwd", causal, d, s, b, hh, "%.2f" % tb, "%.1f" % (2.5 * f / tb / 1e6), mhz)
                        del q, k, v, go
                    except Exception as e:
                        log("attention", backend_name, d, s, causal, "failed:", repr(e)[:200])
    torch.cuda.empty_cache()


# ------------------------------------------------ memory-bound and launch
def section_memory():
    w = Writer("memory.csv", ["kernel", "elements", "dtype", "bytes", "us", "GBps", "sm_mhz"])
    h = 4096
    for lg in range(10, 29, 2):
        if over_budget("memory"):
            return
        N = 2 ** lg
        rows = max(1, N // h)
        x = torch.randn(N, device=dev, dtype=torch.bfloat16)
        y = torch.randn(N, device=dev, dtype=torch.bfloat16)
        z = torch.empty(N, device=dev, dtype=torch.bfloat16)
        x32 = torch.randn(N, device=dev, dtype=torch.float32)
        x2 = x.view(rows, -1)
        lnw = torch.ones(x2.shape[1], device=dev, dtype=torch.bfloat16)
        cases = [
            ("copy", lambda: z.copy_(x), 4 * N),
            ("add", lambda: torch.add(x, y, out=z), 6 * N),
            ("gelu_tanh", lambda: F.gelu(x, approximate="tanh"), 4 * N),
            ("layernorm", lambda: F.layer_norm(x2, (x2.shape[1],), lnw, lnw), 4 * N),
            ("rmsnorm", lambda: F.rms_norm(x2, (x2.shape[1],), lnw), 4 * N),
            ("softmax", lambda: torch.softmax(x2, dim=-1), 4 * N),
            ("dropout", lambda: F.dropout(x, 0.1, training=True), 5 * N),
            ("cast_f32_bf16", lambda: x32.to(torch.bfloat16), 6 * N),
        ]
        for name, fn, nbytes in cases:
            try:
                n_inner = max(2, min(200, int(3e-3 / (nbytes / 2.5e12 + 4e-6))))
                us = graph_time_us(fn, n_inner)
                mhz, _ = clocks()
                w.row(name, N, "bf16", nbytes, "%.3f" % us, "%.1f" % (nbytes / us / 1e3), mhz)
            except Exception as e:
                log("memory", name, N, "failed:", repr(e)[:200])
        del x, y, z, x32, x2
    # fused AdamW on fp32 master weights: param, grad, two moments
    for lg in [20, 22, 24, 26, 28]:
        if over_budget("adam"):
            return
        N = 2 ** lg
        p = torch.nn.Parameter(torch.randn(N, device=dev))
        p.grad = torch.randn(N, device=dev)
        opt = torch.optim.AdamW([p], lr=1e-4, fused=True)
        us = event_time_us(opt.step, 10)
        mhz, _ = clocks()
        w.row("adamw_fused_fp32", N, "fp32", 28 * N, "%.3f" % us, "%.1f" % (28 * N / us / 1e3), mhz)
        del p, opt
    # launch costs: device-side per-kernel floor (graph) and the host's eager rate
    t = torch.ones(1, device=dev)
    us = graph_time_us(lambda: t.add_(1), 500)
    w.row("tiny_kernel_graph", 1, "fp32", 0, "%.3f" % us, "0", clocks()[0])
    torch.cuda.synchronize()
    for _ in range(100):
        t.add_(1)
    torch.cuda.synchronize()
    c0 = time.perf_counter()
    for _ in range(5000):
        t.add_(1)
    torch.cuda.synchronize()
    w.row("tiny_kernel_eager_host", 1, "fp32", 0, "%.3f" % ((time.perf_counter() - c0) / 5000 * 1e6), "0",
          clocks()[0])
    torch.cuda.empty_cache()


# ------------------------------------------------------------- overlap
def comm_like_kernel():
    """A copy kernel of a few persistent CTAs (the grid the caller gives),
    iters passes over src: the stand-in for an NCCL kernel's channels."""
    import triton
    import triton.language as tl

    @triton.jit
    def comm_like(src, dst, n_elems, iters, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        for _ in range(iters):
            for start in range(pid * BLOCK, n_elems, nprog * BLOCK):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n_elems
                x = tl.load(src + offs, mask=mask)
                tl.store(dst + offs, x, mask=mask)
    return comm_like


def timed(stream, fn):
    """Events around fn on stream (read them after a synchronisation)."""
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        a.record()
        fn()
        b.record()
    return a, b


def section_overlap():
    comm_like = comm_like_kernel()

    w = Writer("overlap.csv", ["gemm_m", "gemm_n", "gemm_k", "ctas", "copy_GBps_alone", "gemm_us_alone",
                               "gemm_us_beside", "copy_us_alone", "copy_us_beside", "sm_mhz"])
    n_el = 64 * 2**20  # 128 MB of bf16 each way: beyond L2
    src = torch.randn(n_el, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    s_comm, s_comp = torch.cuda.Stream(), torch.cuda.Stream()


    for m, n, k in [(8192, 8192, 8192), (8192, 6144, 2048), (8192, 2048, 8192)]:
        A = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        B = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        C = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        mm = lambda: torch.matmul(A, B, out=C)
        t_mm = event_time_us(mm, 20)
        for ctas in [4, 8, 16, 32]:
            if over_budget("overlap"):
                return
            run_copy = lambda it: comm_like[(ctas,)](src, dst, n_el, it, BLOCK=4096, num_warps=8)
            run_copy(2)
            run_copy(4)
            torch.cuda.synchronize()
            a, b = timed(s_comm, lambda: run_copy(4))
            b.synchronize()
            t_copy1 = a.elapsed_time(b) * 1e3 / 4
            gbps = 4 * n_el * 2 / t_copy1 / 1e3
            # GEMM slowed: the copy runs through the whole GEMM loop
            n_mm = max(5, int(40e3 / t_mm))
            it_copy = max(2, int(2.5 * n_mm * t_mm / t_copy1))
            torch.cuda.synchronize()
            ca, cb = timed(s_comm, lambda: run_copy(it_copy))
            ga, gb = timed(s_comp, lambda: [mm() for _ in range(n_mm)])
            torch.cuda.synchronize()
            g_beside = ga.elapsed_time(gb) * 1e3 / n_mm
            # copy slowed: the GEMMs run through the whole copy
            it_c2 = max(2, int(20e3 / t_copy1))
            n_mm2 = max(5, int(2.5 * it_c2 * t_copy1 / t_mm))
            torch.cuda.synchronize()
            ga, gb = timed(s_comp, lambda: [mm() for _ in range(n_mm2)])
            ca, cb = timed(s_comm, lambda: run_copy(it_c2))
            torch.cuda.synchronize()
            c_beside = ca.elapsed_time(cb) * 1e3 / it_c2
            w.row(m, n, k, ctas, "%.1f" % gbps, "%.2f" % t_mm, "%.2f" % g_beside, "%.2f" % t_copy1,
                  "%.2f" % c_beside, clocks()[0])
        del A, B, C
    torch.cuda.empty_cache()


# ------------------------------------------------- whole training steps
class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.h, self.heads = h, heads
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        B, S, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(B, S, 3, self.heads, d).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, h)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, h, layers, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList([Block(h, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(h)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for b in self.blocks:
            x = b(x)
        return F.linear(self.ln(x), self.tok.weight)  # tied output layer


STEP_MODELS = [m for m in os.environ.get("STEP_MODELS", "").split(",") if m]


class ClockSampler:
    """Mean SM clock and board power over a region, sampled every 10 ms."""
    def __init__(self):
        import threading
        self.samples, self.done = [], threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.done.is_set():
            self.samples.append(clocks())
            time.sleep(0.01)

    def stop(self):
        self.done.set()
        self.t.join()
        if not self.samples:
            return 0.0, 0.0
        return (statistics.mean(s[0] for s in self.samples), statistics.mean(s[1] for s in self.samples))


def section_steps():
    from torch.profiler import profile, ProfilerActivity, record_function
    w = Writer("steps.csv", ["name", "vocab", "hidden", "layers", "heads", "seq", "micro_batch", "params",
                             "step_ms_median", "step_ms_min", "steps", "sm_mhz_mean", "power_w_mean"])
    configs = [("gpt-125m", 50368, 768, 12, 12, 2048, 16), ("gpt-350m", 50368, 1024, 24, 16, 2048, 8),
               ("gpt-760m", 50368, 1536, 24, 16, 2048, 8), ("gpt-1.3b", 50368, 2048, 24, 16, 2048, 4),
               ("gpt-2.7b", 50368, 2560, 32, 32, 2048, 2),
               # GEMM-dense steps (wide layers, few of them): the power model's other end
               ("gpt-h4096-l8", 50368, 4096, 8, 32, 2048, 4), ("gpt-h6144-l4", 50368, 6144, 4, 48, 2048, 4)]
    configs = [c for c in configs if not STEP_MODELS or c[0] in STEP_MODELS]
    for name, vocab, h, L, heads, seq, mb in configs:
        if over_budget("steps"):
            return
        torch.manual_seed(0)
        model = GPT(vocab, h, L, heads, seq).to(dev)
        params = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, vocab, (mb, seq), device=dev)
        tgt = torch.randint(0, vocab, (mb, seq), device=dev)

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(ids)
                loss = F.cross_entropy(logits.float().view(-1, vocab), tgt.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        ts = []
        sampler = ClockSampler()
        for _ in range(8):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        mhz, pw = sampler.stop()
        w.row(name, vocab, h, L, heads, seq, mb, params, "%.3f" % statistics.median(ts), "%.3f" % min(ts), len(ts),
              "%.0f" % mhz, "%.0f" % pw)
        log(name, "params", params, "step ms", ["%.1f" % t for t in ts])
        path = os.path.join(OUT, "trace_%s.json" % name)
        # one step, whole: no profiler schedule (its export at prof.step() ran before the GPU
        # had finished and cut the trace), the step marked as the profiler marks it
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            with record_function("ProfilerStep#1"):
                step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)
        with open(path, "rb") as fi, gzip.open(path + ".gz", "wb", compresslevel=9) as fo:
            shutil.copyfileobj(fi, fo)
        os.remove(path)
        log("trace", path + ".gz", os.path.getsize(path + ".gz"))
        del model, opt
        torch.cuda.empty_cache()


# --------------------------------------------------- sustained clocks
def section_sustained():
    w = Writer("sustained.csv", ["t_s", "sm_mhz", "power_w", "tflops_window"])
    m = 8192
    A = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    B = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    C = torch.empty(m, m, device=dev, dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < 12:
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            torch.matmul(A, B, out=C)
        b.record()
        b.synchronize()
        mhz, pw = clocks()
        w.row("%.2f" % (time.time() - t0), mhz, "%.0f" % pw, "%.1f" % (20 * 2.0 * m**3 / (a.elapsed_time(b) * 1e9)))


# ------------------------------------------- GEMM rate against duty cycle
def section_duty():
    """GEMMs interleaved with memory-bound copies at several time shares: the
    GEMMs' rate as the card's power state follows the mix (at its 700 W
    limit under back-to-back GEMMs, cooler when copies share the time)."""
    w = Writer("duty.csv", ["gemm_share", "gemms_per_cycle", "copies_per_cycle", "gemm_us_median", "gemm_tflops",
                            "copy_us_median", "sm_mhz_mean", "power_w_mean", "seconds"])
    m, n, k = 8192, 8192, 4096
    A = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    B = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    C = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    src = torch.randn(2**29, device=dev, dtype=torch.bfloat16)  # 1 GiB: one copy ~ one GEMM in time
    dst = torch.empty_like(src)
    for share in [0.2, 0.4, 0.6, 0.8, 1.0]:
        if over_budget("duty"):
            return
        ng = max(1, round(10 * share))
        nc = 10 - ng
        time.sleep(2)  # let the card cool between settings
        sampler = ClockSampler()
        gt, ct = [], []
        t0 = time.time()
        while time.time() - t0 < 6:
            ev = []
            for i in range(10):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                if i < ng:
                    torch.matmul(A, B, out=C)
                else:
                    dst.copy_(src)
                b.record()
                ev.append((i < ng, a, b))
            ev[-1][2].synchronize()
            if time.time() - t0 > 2:  # the first 2 s settle the power state
                for g, a, b in ev:
                    (gt if g else ct).append(a.elapsed_time(b) * 1e3)
        mhz, pw = sampler.stop()
        gmed = statistics.median(gt) if gt else 0
        w.row(share, ng, nc, "%.2f" % gmed, "%.1f" % (2.0 * m * n * k / gmed / 1e6 if gmed else 0),
              "%.2f" % (statistics.median(ct) if ct else 0), "%.0f" % mhz, "%.0f" % pw, "%.1f" % (time.time() - t0))
        log("duty", share, "gemm us %.1f" % gmed, "MHz %.0f W %.0f" % (mhz, pw))
    del A, B, C, src, dst
    torch.cuda.empty_cache()


# ------------------------- the copy kernel on a high-priority stream, first
def section_overlap_priority():
    """overlap.csv's GEMM-beside-copy rows again with the copy on a
    high-priority stream (the block scheduler then places its CTAs first),
    and with the copy launched before the GEMMs: how much of the copy's
    slowdown is a wait for SMs."""
    comm_like = comm_like_kernel()

    w = Writer("overlap_priority.csv", ["gemm_m", "gemm_n", "gemm_k", "ctas", "copy_stream", "order", "gemm_us_alone",
                                        "gemm_us_beside", "copy_us_alone", "copy_us_beside"])
    n_el = 64 * 2**20
    src = torch.randn(n_el, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    s_comp = torch.cuda.Stream()
    streams = {"default": torch.cuda.Stream(), "high": torch.cuda.Stream(priority=-1)}


    for m, n, k in [(8192, 6144, 2048), (8192, 8192, 8192)]:
        A = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        Bm = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        C = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        mm = lambda: torch.matmul(A, Bm, out=C)
        t_mm = event_time_us(mm, 20)
        for ctas in [8, 16]:
            run_copy = lambda it: comm_like[(ctas,)](src, dst, n_el, it, BLOCK=4096, num_warps=8)
            run_copy(2)
            run_copy(4)
            torch.cuda.synchronize()
            for sname, s_comm in streams.items():
                for order in ["gemms_first", "copy_first"]:
                    if over_budget("overlap_priority"):
                        return
                    a, b = timed(s_comm, lambda: run_copy(4))
                    b.synchronize()
                    t_copy1 = a.elapsed_time(b) * 1e3 / 4
                    it_c = max(2, int(20e3 / t_copy1))
                    n_mm = max(5, int(2.5 * it_c * t_copy1 / t_mm))
                    torch.cuda.synchronize()
                    if order == "gemms_first":
                        ga, gb = timed(s_comp, lambda: [mm() for _ in range(n_mm)])
                        ca, cb = timed(s_comm, lambda: run_copy(it_c))
                    else:
                        ca, cb = timed(s_comm, lambda: run_copy(it_c))
                        ga, gb = timed(s_comp, lambda: [mm() for _ in range(n_mm)])
                    torch.cuda.synchronize()
                    c_beside = ca.elapsed_time(cb) * 1e3 / it_c
                    # the GEMMs' rate while the copy runs: a copy spanning the whole GEMM loop
                    n_mm2 = max(5, int(40e3 / t_mm))
                    it_c2 = max(2, int(2.5 * n_mm2 * t_mm / t_copy1))
                    torch.cuda.synchronize()
                    ca2, cb2 = timed(s_comm, lambda: run_copy(it_c2))
                    ga2, gb2 = timed(s_comp, lambda: [mm() for _ in range(n_mm2)])
                    torch.cuda.synchronize()
                    g_beside = ga2.elapsed_time(gb2) * 1e3 / n_mm2
                    w.row(m, n, k, ctas, sname, order, "%.2f" % t_mm, "%.2f" % g_beside, "%.2f" % t_copy1,
                          "%.2f" % c_beside)
        del A, Bm, C
    torch.cuda.empty_cache()


SECTIONS = [("gemm", section_gemm), ("attention", section_attention), ("memory", section_memory),
            ("steps", section_steps), ("overlap", section_overlap), ("sustained", section_sustained),
            ("duty", section_duty), ("overlap_priority", section_overlap_priority)]

if __name__ == "__main__":
    only = sys.argv[1:]
    for name, fn in SECTIONS:
        if only and name not in only:
            continue
        t = time.time()
        try:
            fn()
        except Exception:
            log("section", name, "failed:\n" + traceback.format_exc())
        log("section", name, "%.1f s" % (time.time() - t), "total %.1f s" % (time.time() - T0))
    log("done")
