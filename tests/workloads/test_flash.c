/* test_flash.c — FlashAttention as its own kernel class: the cost model
 * against the measured kernel rates it was fitted on and the published ones
 * it predicts, the FLOP count (causal halving, backward 2.5x), the attn
 * strategy key and what auto chooses per GPU and dtype, the kernels the
 * generator emits, the memory model without s x s scores, selective
 * recompute under flash, and the schedule's JSON round trip. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "sim/costmodel.h"
#include "validation/val_csv.h"
#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/layer.h"

static sim_payload flash(int bwd, int64_t b, int64_t heads, int64_t seq, int64_t hd, int causal)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = bwd ? SIM_KERNEL_FLASH_BWD : SIM_KERNEL_FLASH_FWD;
    p.dtype = SIM_DTYPE_BF16;
    p.batch = b;
    p.m = heads;
    p.n = seq;
    p.k = hd;
    p.tag = causal;
    return p;
}

/* FLOPs as FlashAttention's benchmark counts them. */
static void test_flops(void)
{
    sim_payload f = flash(0, 2, 16, 1024, 128, 0);
    double full = 4.0 * 2 * 16 * 1024 * 1024 * 128;
    CHECK(sim_cost_flops(&f) == full);
    f.tag = 1;
    CHECK(sim_cost_flops(&f) == full / 2);
    sim_payload b = flash(1, 2, 16, 1024, 128, 1);
    CHECK(sim_cost_flops(&b) == 2.5 * full / 2);
}

/* H100-SXM's curves against this project's measurement they were fitted on
 * (h100-micro/attention.csv, SDPA's cuDNN backend = the GPU's best kernel,
 * hd 128): non-causal forward within 1 %, backward within 6 % (the fitted
 * curve's worst), causal forward (one factor for all lengths) within 9 %
 * (FA2: 10 %); the FA3 paper's FA3 bars, predicted, within 17 % (our cuDNN
 * runs 4-17 % faster than those bars).  The H200's against its own
 * (h200-micro/attention.csv): the same, but FA2's causal forward within
 * 13 % (its 512 row, +12.9 %).  Launches are negligible at these sizes. */
static int rates_of(const char *model, const char *rel, const char *gpu_col_value, const char *impl_col,
                    const char *impl, int fa2, double tol_fwd, double tol_bwd, double tol_causal)
{
    sim_gpu g;
    sim_err err;
    CHECK(plat_gpu_lookup_info(model, &g, NULL, &err) == 0);
    char path[512];
    const char *src = getenv("SRC");
    snprintf(path, sizeof path, "%s/validation/data/%s", src ? src : ".", rel);
    val_csv *c = val_csv_load(path, &err);
    CHECK(c != NULL);
    if (!c)
        return 0;
    int cg = gpu_col_value ? val_csv_col(c, "gpu", &err) : -1, ci = val_csv_col(c, impl_col, &err);
    int cd = val_csv_col(c, "direction", &err), cc = val_csv_col(c, "causal", &err);
    int cs = val_csv_col(c, "seq", &err), cb = val_csv_col(c, "batch", &err), ch = val_csv_col(c, "heads", &err);
    int ct = val_csv_col(c, "tflops", &err), chd = val_csv_col(c, "head_dim", &err);
    int checked = 0;
    for (int i = 0; i < val_csv_rows(c); i++) {
        double causal, s, b, h, t, hd;
        if ((gpu_col_value && strcmp(val_csv_str(c, i, cg), gpu_col_value)) || strcmp(val_csv_str(c, i, ci), impl))
            continue;
        val_csv_num(c, i, chd, &hd, &err);
        val_csv_num(c, i, cc, &causal, &err);
        int bwd = !strcmp(val_csv_str(c, i, cd), "bwd");
        if (hd != 128 || (causal && bwd))
            continue; /* the fits' rows; hd 64 and the causal backward are group h100-micro's predictions */
        val_csv_num(c, i, cs, &s, &err);
        val_csv_num(c, i, cb, &b, &err);
        val_csv_num(c, i, ch, &h, &err);
        val_csv_num(c, i, ct, &t, &err);
        sim_payload p = flash(bwd, (int64_t)b, (int64_t)h, (int64_t)s, 128, (int)causal);
        p.algo = fa2 ? SIM_ATTN_FA2 : SIM_ATTN_BEST;
        double model = sim_cost_flops(&p) / sim_cost_kernel(&g, &p) / 1e12;
        double tol = causal ? tol_causal : bwd ? tol_bwd : tol_fwd;
        if (fabs(model / t - 1) > tol)
            fprintf(stderr, "%s %s causal=%d seq %.0f: measured %.0f TFLOP/s, model %.1f\n", impl, bwd ? "bwd" : "fwd",
                    (int)causal, s, t, model);
        CHECK(fabs(model / t - 1) <= tol);
        checked++;
    }
    val_csv_free(c);
    return checked;
}

static void test_rates(void)
{
    sim_gpu g;
    sim_err err;
    CHECK(plat_gpu_lookup_info("H100-SXM", &g, NULL, &err) == 0);
    CHECK(g.flash_attn && g.flash.causal[0] > 0.8 && g.flash.causal[0] < 0.9);
    CHECK(rates_of("H100-SXM", "h100-micro/attention.csv", NULL, "backend", "cudnn", 0, 0.01, 0.08, 0.09) == 18);
    CHECK(rates_of("H100-SXM", "h100-micro/attention.csv", NULL, "backend", "flash2", 1, 0.02, 0.06, 0.12) == 18);
    CHECK(rates_of("H100-SXM", "attention/flash_attention.csv", "H100-SXM", "implementation", "FlashAttention-3", 0,
                   0.17, 0.17, 0.17) == 18);
    CHECK(plat_gpu_lookup_info("H200", &g, NULL, &err) == 0);
    CHECK(g.flash_attn && g.flash.causal[0] > 0.8 && g.flash.causal[0] < 0.9);
    CHECK(rates_of("H200", "h200-micro/attention.csv", NULL, "backend", "cudnn", 0, 0.01, 0.08, 0.09) == 18);
    CHECK(rates_of("H200", "h200-micro/attention.csv", NULL, "backend", "flash2", 1, 0.02, 0.06, 0.16) == 18);
    /* the defaults (FA2 on Ampere): the A100 forward it was fitted on
     * (gpu_travel, taken at ~1200 of 1410 MHz, so compared at the full
     * clock) within 1 %, its causal rows (predicted) within 5 %, and the
     * backward at the paper's ratio to the forward at 16k tokens (63 % / 73 %) */
    CHECK(plat_gpu_lookup_info("A100-SXM-80GB", &g, NULL, &err) == 0);
    static const struct {
        int seq, batch, causal;
        double tflops;
    } a100[] = {{1024, 16, 0, 177.67}, {4096, 1, 0, 185.64}, {1024, 16, 1, 143.7}, {4096, 1, 1, 156.27}};
    for (int i = 0; i < 4; i++) {
        sim_payload p = flash(0, a100[i].batch, 32, a100[i].seq, 128, a100[i].causal);
        double model = sim_cost_flops(&p) / sim_cost_kernel(&g, &p) / 1e12;
        if (fabs(model / (a100[i].tflops * 1410.0 / 1200.0) - 1) >= (a100[i].causal ? 0.05 : 0.01))
            fprintf(stderr, "A100 seq %d causal %d: %.1f TFLOP/s at full clock, model %.1f\n", a100[i].seq,
                    a100[i].causal, a100[i].tflops * 1410.0 / 1200.0, model);
        CHECK(fabs(model / (a100[i].tflops * 1410.0 / 1200.0) - 1) < (a100[i].causal ? 0.05 : 0.01));
    }
    sim_payload f = flash(0, 1, 16, 16384, 128, 0), b = flash(1, 1, 16, 16384, 128, 0);
    double ff = sim_cost_flops(&f) / sim_cost_kernel(&g, &f), fb = sim_cost_flops(&b) / sim_cost_kernel(&g, &b);
    CHECK(fabs(fb / ff - 0.63 / 0.73) < 0.01);

    /* older kernels: FlashAttention-2 on Hopper as measured (above), the
     * FA3 paper's FA2 bars within 6 %; FA1 and the Triton kernel at FA2's
     * time x 2.26 and x 1.80; on Ampere flash2 is flash */
    CHECK(plat_gpu_lookup_info("H100-SXM", &g, NULL, &err) == 0);
    static const double fa2_fwd[6] = {309, 350, 362, 368, 370, 370}; /* fa3-fig5, seq 512 ... 16k */
    for (int i = 0; i < 6; i++) {
        int seq = 512 << i;
        sim_payload p = flash(0, 16384 / seq, 16, seq, 128, 0);
        p.algo = SIM_ATTN_FA2;
        double model = sim_cost_flops(&p) / sim_cost_kernel(&g, &p) / 1e12;
        if (fabs(model / fa2_fwd[i] - 1) >= 0.06)
            fprintf(stderr, "FA2 paper fwd seq %d: %.0f TFLOP/s, model %.1f\n", seq, fa2_fwd[i], model);
        CHECK(fabs(model / fa2_fwd[i] - 1) < 0.06);
    }
    sim_payload p2 = flash(1, 2, 16, 8192, 128, 1), p1 = p2, pt = p2, best = p2;
    p2.algo = SIM_ATTN_FA2;
    p1.algo = SIM_ATTN_FA1;
    pt.algo = SIM_ATTN_TRITON;
    double t2 = sim_cost_kernel(&g, &p2), launches = 3 * g.launch_s + sim_cost_flash_side(&g, &p2);
    CHECK(sim_cost_kernel(&g, &best) < 0.6 * t2); /* FA3 well ahead of FA2 on H100 */
    CHECK(fabs((sim_cost_kernel(&g, &p1) - launches) / (t2 - launches) - 2.26) < 1e-9);
    CHECK(fabs((sim_cost_kernel(&g, &pt) - launches) / (t2 - launches) - 1.80) < 1e-9);
    CHECK(plat_gpu_lookup_info("A100-SXM-80GB", &g, NULL, &err) == 0);
    CHECK(sim_cost_kernel(&g, &p2) == sim_cost_kernel(&g, &best));
}

/* The head dimension and the causal backward, predicted from the hd-128
 * fits by the two fitted shares and the causal backward factor: every
 * hd-64 and causal-backward row of this project's H100 table
 * (h100-micro/attention.csv), per backend, within 8 % on average and 36 %
 * at worst (cuDNN's causal backward at 512, 35 %: one factor on the curve
 * at s/2 cannot follow the causal backward's shortest length).  A head dimension
 * between instantiations runs as the next one: cuDNN's hd 80 costs its
 * hd 128 (the 2.7B step's trace, h100-micro/trace_gpt-2.7b.json.gz, ran
 * hd 80 on the 64x128x128 forward and 64x64x128 backward kernels: 139 and
 * 454 us per layer with the backward's two small kernels, b 2, 32 heads,
 * seq 2048, causal; the model's backward is 13 % short of it, 8 % of
 * that the causal backward factor at 2k), FA2's hd 80 its hd 96. */
static void test_head_dims(void)
{
    sim_gpu g;
    sim_err err;
    CHECK(plat_gpu_lookup_info("H100-SXM", &g, NULL, &err) == 0);
    const char *src = getenv("SRC");
    char path[512];
    snprintf(path, sizeof path, "%s/validation/data/h100-micro/attention.csv", src ? src : ".");
    val_csv *c = val_csv_load(path, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    int ci = val_csv_col(c, "backend", &err), cd = val_csv_col(c, "direction", &err);
    int cc = val_csv_col(c, "causal", &err), chd = val_csv_col(c, "head_dim", &err), cs = val_csv_col(c, "seq", &err);
    int cb = val_csv_col(c, "batch", &err), ch = val_csv_col(c, "heads", &err), cu = val_csv_col(c, "us", &err);
    for (int fa2 = 0; fa2 < 2; fa2++) {
        double sum = 0, worst = 0;
        int n = 0;
        for (int i = 0; i < val_csv_rows(c); i++) {
            double causal, hd, seq, b, h, us;
            if (strcmp(val_csv_str(c, i, ci), fa2 ? "flash2" : "cudnn"))
                continue;
            int bwd = !strcmp(val_csv_str(c, i, cd), "bwd");
            val_csv_num(c, i, cc, &causal, &err);
            val_csv_num(c, i, chd, &hd, &err);
            if (hd == 128 && !(causal && bwd))
                continue; /* fitted (test_rates) */
            val_csv_num(c, i, cs, &seq, &err);
            val_csv_num(c, i, cb, &b, &err);
            val_csv_num(c, i, ch, &h, &err);
            val_csv_num(c, i, cu, &us, &err);
            sim_payload p = flash(bwd, (int64_t)b, (int64_t)h, (int64_t)seq, (int64_t)hd, (int)causal);
            p.algo = fa2 ? SIM_ATTN_FA2 : SIM_ATTN_BEST;
            double e = fabs(sim_cost_kernel(&g, &p) / (us * 1e-6) - 1);
            sum += e;
            worst = fmax(worst, e);
            n++;
        }
        fprintf(stderr, "%s: %d hd-64 and causal-backward rows, mean error %.1f %%, worst %.1f %%\n",
                fa2 ? "flash2" : "cudnn", n, 100 * sum / n, 100 * worst);
        CHECK(n == 30 && sum / n < 0.08 && worst < 0.36);
    }
    val_csv_free(c);

    sim_payload f80 = flash(0, 2, 32, 2048, 80, 1), b80 = flash(1, 2, 32, 2048, 80, 1);
    sim_payload f128 = flash(0, 2, 32, 2048, 128, 1);
    CHECK(fabs(sim_cost_kernel(&g, &f80) / sim_cost_kernel(&g, &f128) - 1) < 1e-9);
    CHECK(fabs(sim_cost_kernel(&g, &f80) / 139e-6 - 1) < 0.10);
    fprintf(stderr, "hd 80: fwd %.0f us (trace 139), bwd %.0f us (trace 454)\n", 1e6 * sim_cost_kernel(&g, &f80),
            1e6 * sim_cost_kernel(&g, &b80));
    CHECK(fabs(sim_cost_kernel(&g, &b80) / 454e-6 - 1) < 0.15);
    f80.algo = f128.algo = SIM_ATTN_FA2;
    sim_payload f96 = flash(0, 2, 32, 2048, 96, 1);
    f96.algo = SIM_ATTN_FA2;
    CHECK(fabs(sim_cost_kernel(&g, &f80) / sim_cost_kernel(&g, &f96) - 1) < 1e-9);
    CHECK(sim_cost_kernel(&g, &f80) < sim_cost_kernel(&g, &f128));
}

/* Blackwell's per-score units (sim_flash.score_scale): B200 and GB200 do
 * twice Hopper's MMA work per SM and clock with Hopper's exponential units
 * and shared-memory bandwidth, so at head dim d they run, as fractions of
 * their own peaks, as the H100 ran d / 2 (FlashAttention-4, arXiv
 * 2603.05451); Blackwell Ultra (GB300) doubles the exponentials (NVIDIA,
 * "Making softmax more efficient with NVIDIA Blackwell Ultra"): its forward
 * runs as the H100's d, its backward (shared memory) as d / 2.  The hd-128
 * forward on B200 comes out at about FA4's figure for cuDNN 9.13 (FA4's
 * 1,613 TFLOP/s is "up to 1.3x" it: about 1,240), where the H100's
 * fractions alone gave 1,580. */
static void test_blackwell_score_work(void)
{
    sim_gpu h, b, u;
    sim_err err;
    CHECK(plat_gpu_lookup_info("H100-SXM", &h, NULL, &err) == 0 && plat_gpu_lookup_info("B200", &b, NULL, &err) == 0 &&
          plat_gpu_lookup_info("GB300", &u, NULL, &err) == 0);
    double ph = h.peak_flops[SIM_DTYPE_BF16], pb = b.peak_flops[SIM_DTYPE_BF16], pu = u.peak_flops[SIM_DTYPE_BF16];
    for (int bwd = 0; bwd < 2; bwd++) {
        /* equal work at the curves' sequence: seconds x peak compare fractions of peak (within
         * 0.5 %: the launch gap and the backward's memory-bound side kernels scale otherwise) */
        sim_payload b128 = flash(bwd, 1, 16, 16384, 128, 0), h64 = flash(bwd, 1, 32, 16384, 64, 0);
        double fb = sim_cost_kernel(&b, &b128) * pb / sim_cost_flops(&b128);
        double fh = sim_cost_kernel(&h, &h64) * ph / sim_cost_flops(&h64);
        CHECK(fabs(fb / fh - 1) < 5e-3);
        sim_payload h128 = flash(bwd, 1, 16, 16384, 128, 0);
        double fu = sim_cost_kernel(&u, &b128) * pu / sim_cost_flops(&b128);
        double fh128 = sim_cost_kernel(&h, &h128) * ph / sim_cost_flops(&h128);
        CHECK(fabs(fu / (bwd ? fh : fh128) - 1) < 5e-3);
        b128.algo = h64.algo = SIM_ATTN_FA2; /* FlashAttention-2 runs on the same units */
        fb = sim_cost_kernel(&b, &b128) * pb / sim_cost_flops(&b128);
        fh = sim_cost_kernel(&h, &h64) * ph / sim_cost_flops(&h64);
        CHECK(fabs(fb / fh - 1) < 5e-3);
    }
    sim_payload f = flash(0, 1, 16, 16384, 128, 0);
    double tflops = sim_cost_flops(&f) / sim_cost_kernel(&b, &f) / 1e12;
    fprintf(stderr, "B200 cuDNN forward, hd 128, 16k: %.0f TFLOP/s (FA4: cuDNN 9.13 about 1,240)\n", tflops);
    CHECK(tflops > 1050 && tflops < 1350);
}

static int resolved_flash(const wl_model *m, const char *text, sim_machine *mach, sim_err *err)
{
    wl_strategy s, r;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, err) || wl_gpt_resolve(m, &s, mach, &r, err))
        return -1;
    return r.flash;
}

static void test_strategy(void)
{
    wl_strategy s;
    sim_err err;
    char buf[256];
    wl_strategy_default(&s);
    CHECK(s.attn == WL_ATTN_AUTO && !s.flash);
    CHECK(wl_strategy_parse("attn=flash", &s, &err) == 0 && s.attn == WL_ATTN_FLASH);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",attn=flash");
    CHECK(wl_strategy_parse("attn=auto", &s, &err) == 0);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK(strstr(buf, "attn") == NULL); /* the default is not written */
    CHECK(wl_strategy_parse("attn=flash-triton", &s, &err) == 0 && s.attn == WL_ATTN_TRITON &&
          wl_attn_impl(s.attn) == SIM_ATTN_TRITON);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",attn=flash-triton");
    CHECK(wl_strategy_parse("attn=fast", &s, &err) == -1);
    CHECK_HAS(err.msg, "strategy: attn: expected auto");

    wl_model m;
    CHECK(wl_model_load("gpt-1024", &m, &err) == 0);
    sim_machine *h100 = wl_test_gpu_machine("H100-SXM", 1), *a100 = wl_test_gpu_machine("A100-SXM-80GB", 1);
    sim_machine *v100 = wl_test_gpu_machine("V100-SXM2-32GB", 1), *r3090 = wl_test_gpu_machine("RTX3090", 1);
    /* auto: fused in 16-bit on sm80+, unfused in fp32/tf32 and on V100 */
    CHECK(resolved_flash(&m, "dtype=bf16", h100, &err) == 1);
    CHECK(resolved_flash(&m, "dtype=fp16", a100, &err) == 1);
    CHECK(resolved_flash(&m, "dtype=bf16", r3090, &err) == 1);
    CHECK(resolved_flash(&m, "dtype=tf32", h100, &err) == 0);
    CHECK(resolved_flash(&m, "dtype=fp32", a100, &err) == 0);
    CHECK(resolved_flash(&m, "dtype=fp16", v100, &err) == 0);
    CHECK(resolved_flash(&m, "dtype=bf16,attn=unfused", h100, &err) == 0);
    CHECK(resolved_flash(&m, "dtype=tf32,attn=flash", h100, &err) == -1);
    CHECK_HAS(err.msg, "attn=flash: FlashAttention computes in fp16 or bf16");
    CHECK(resolved_flash(&m, "dtype=fp16,attn=flash", v100, &err) == -1);
    CHECK_HAS(err.msg, "the V100-SXM2-32GB is not supported by FlashAttention-2");
    CHECK(resolved_flash(&m, "dtype=fp32,attn=flash1", a100, &err) == -1);
    CHECK_HAS(err.msg, "attn=flash1: FlashAttention computes in fp16 or bf16");
    CHECK(resolved_flash(&m, "dtype=bf16,attn=flash2", h100, &err) == 1);
    sim_machine_free(h100);
    sim_machine_free(a100);
    sim_machine_free(v100);
    sim_machine_free(r3090);
}

/* The kernels of a flash schedule, the memory without s x s terms, and
 * selective recompute rerunning the fused forward. */
static void test_schedule(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_from_json("{\"name\":\"g\",\"layers\":2,\"hidden\":256,\"heads\":8,\"kv_heads\":2,\"ffn\":512,"
                             "\"seq\":512,\"vocab\":1024,\"ffn_type\":\"swiglu\",\"position\":\"rope\"}",
                             "g.json", &m, &err) == 0);
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 2);
    wl_strategy s, r;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=2,mb=2,gb=4,dtype=bf16,recompute=selective,attn=flash-triton", &s, &err) == 0);
    CHECK(wl_gpt_resolve(&m, &s, mach, &r, &err) == 0 && r.flash);
    sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc != NULL);
    int fwd = 0, bwd = 0, unfused = 0, rec = 0;
    /* per rank: 4 query heads, 1 K/V head of 32, 2 sequences of 512 */
    int64_t qo = 2 * 512 * 4 * 32 * 2, kv = 2 * 512 * 1 * 32 * 2, rows = 2 * 4 * 512 * 4;
    for (uint32_t i = 0; sc && i < sc->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(sc, i);
        if (p->kind != SIM_OP_COMPUTE)
            continue;
        unfused += p->sub == SIM_KERNEL_ATTENTION || p->sub == SIM_KERNEL_ATTENTION_BWD;
        if (p->sub == SIM_KERNEL_FLASH_FWD) {
            CHECK(p->m == 4 && p->n == 512 && p->k == 32 && p->batch == 2 && p->tag == 1 &&
                  p->algo == SIM_ATTN_TRITON);
            CHECK(p->bytes == 2 * qo + 2 * kv + rows);
            fwd++;
            rec += sc->ops[i].phase == SIM_PHASE_RECOMPUTE;
        }
        if (p->sub == SIM_KERNEL_FLASH_BWD) {
            CHECK(p->bytes == 4 * qo + 4 * kv + 3 * rows);
            bwd++;
        }
    }
    /* 2 ranks x 2 layers x 2 micro-batches; selective reruns each forward */
    CHECK(unfused == 0 && bwd == 8 && fwd == 16 && rec == 8);
    CHECK(sc && sim_sched_check(sc, &err) == 0);

    /* the JSON round trip keeps the class, the causal flag, the kernel and the bytes */
    char path[] = "/tmp/wl_test_flashXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(sc && sim_sched_save(sc, path, &err) == 0);
    sim_schedule *back = sim_sched_load(path, &err);
    CHECK(back != NULL);
    int same = 0;
    for (uint32_t i = 0; back && i < back->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(back, i);
        same += p->kind == SIM_OP_COMPUTE && p->sub == SIM_KERNEL_FLASH_BWD && p->tag == 1 &&
                p->algo == SIM_ATTN_TRITON && p->bytes == 4 * qo + 4 * kv + 3 * rows;
    }
    CHECK(same == 8);
    /* an unknown kernel in a schedule file is an error naming the field */
    FILE *in = fopen(path, "r");
    static char text[1 << 20];
    size_t len = in ? fread(text, 1, sizeof text - 1, in) : 0;
    if (in)
        fclose(in);
    text[len] = 0;
    char *at = strstr(text, "\"flash-triton\"");
    CHECK(at != NULL && len < sizeof text - 1);
    if (at) {
        memcpy(at, "\"flash-tritox\"", 14);
        FILE *out = fopen(path, "w");
        CHECK(out && fputs(text, out) >= 0 && fclose(out) == 0);
        CHECK(sim_sched_load(path, &err) == NULL);
        CHECK_HAS(err.msg, ".impl: expected flash, flash2, flash1 or flash-triton");
    }
    unlink(path);
    sim_sched_free(back);
    sim_sched_free(sc);

    /* memory: the core keeps one fp32 log-sum-exp per row and head instead
     * of (2d+1) bytes per score; selective recompute rebuilds only it */
    int64_t kept_u, tr_u, kept_f, tr_f;
    wl_strategy u = r;
    u.flash = 0;
    wl_layer_memory(&m, &u, 0, &kept_u, &tr_u);
    wl_layer_memory(&m, &r, 0, &kept_f, &tr_f);
    int64_t core_u = 4 * 512 * 512 * 2 * 5, core_f = 4 * 512 * 2 * 4; /* a/t = 4 heads, b = 2 */
    CHECK(tr_u == core_u && tr_f == core_f);
    CHECK(kept_u == kept_f); /* selective keeps everything but the core either way */
    u.recompute = r.recompute = WL_RECOMPUTE_NONE;
    wl_layer_memory(&m, &u, 0, &kept_u, NULL);
    wl_layer_memory(&m, &r, 0, &kept_f, NULL);
    CHECK(kept_u - kept_f == core_u - core_f);
    sim_machine_free(mach);
}

/* A long sequence without recomputation: refused for the s x s scores when
 * unfused (with the hint), fits fused. */
static void test_long_sequence(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_from_json("{\"name\":\"g4k\",\"layers\":24,\"hidden\":2048,\"heads\":16,\"ffn\":8192,"
                             "\"seq\":4096,\"vocab\":50257}", "g.json", &m, &err) == 0);
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 2);
    wl_strategy s;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=2,mb=4,dtype=bf16,attn=unfused", &s, &err) == 0);
    CHECK(wl_gpt_check(&m, &s, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "try attn=flash (no s x s scores kept)");
    CHECK(wl_strategy_parse("attn=auto", &s, &err) == 0);
    CHECK(wl_gpt_check(&m, &s, mach, NULL, &err) == 0);
    sim_machine_free(mach);
}

int main(void)
{
    test_flops();
    test_rates();
    test_head_dims();
    test_blackwell_score_work();
    test_strategy();
    test_schedule();
    test_long_sequence();
    return wl_test_done();
}
