/* test_gpt_check.c — strategy checks, the memory closed form and the model
 * FLOPs formula, each recomputed here by hand. */
#include <math.h>
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"

static wl_model tiny(void)
{
    wl_model m;
    sim_err err;
    if (wl_model_from_json("{\"name\":\"tiny\",\"layers\":4,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,"
                           "\"vocab\":1000}",
                           "tiny.json", &m, &err))
        abort();
    return m;
}

static wl_strategy strat(const char *text)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return s;
}

static void test_errors(void)
{
    wl_model g;
    sim_err err;
    CHECK(wl_model_load("gpt-3072", &g, &err) == 0);
    sim_machine *m5 = wl_test_machine(5, 0), *m32 = wl_test_machine(32, 0);
    wl_strategy s;

    s = strat("tp=5");
    CHECK(wl_gpt_check(&g, &s, m5, NULL, &err) == -1);
    CHECK_STR(err.msg, "tp=5 does not divide the 48 attention heads of gpt-3072");

    s = strat("pp=5");
    CHECK(wl_gpt_check(&g, &s, m5, NULL, &err) == -1);
    CHECK_STR(err.msg, "pp=5 does not divide the 24 layers of gpt-3072 (uneven stages: stage_split=embedding_as_layer or "
                       "pp_layers=)");

    s = strat("tp=4,pp=2,dp=2");
    CHECK(wl_gpt_check(&g, &s, m32, NULL, &err) == -1);
    CHECK_STR(err.msg, "tp*pp*dp = 4*2*2 = 16 GPUs, but the platform test-32 has 32 GPUs");

    s = strat("tp=3");
    CHECK(wl_gpt_check(&g, &s, m32, NULL, &err) == -1);
    CHECK_HAS(err.msg, "tp*pp = 3*1 = 3 does not divide the 32 GPUs");

    s = strat("tp=4,mb=2,gb=100"); /* dp = 8 */
    CHECK(wl_gpt_check(&g, &s, m32, NULL, &err) == -1);
    CHECK_STR(err.msg, "gb=100 is not divisible by mb*dp = 2*8 = 16 (it would give 6.25 micro-batches per pipeline)");

    /* dp filled from the GPU count, gb from mb*dp */
    s = strat("tp=4,pp=2,mb=2");
    CHECK(wl_gpt_check(&g, &s, m32, NULL, &err) == 0);
    wl_strategy r;
    CHECK(wl_gpt_resolve(&g, &s, m32, &r, &err) == 0);
    CHECK(r.dp == 4 && r.gb == 8 && r.tp == 4 && r.pp == 2 && r.mb == 2);

    /* hidden not divisible by tp although heads are */
    wl_model odd = tiny();
    odd.hidden = 60;
    odd.heads = 6; /* head dim 10 */
    odd.ffn = 240;
    sim_machine *m4 = wl_test_machine(4, 0);
    s = strat("tp=4"); /* 6 heads: not divisible */
    CHECK(wl_gpt_check(&odd, &s, m4, NULL, &err) == -1);
    CHECK_HAS(err.msg, "6 attention heads");
    odd.heads = 4;
    odd.hidden = 64;
    odd.ffn = 250;
    CHECK(wl_gpt_check(&odd, &s, m4, NULL, &err) == -1);
    CHECK_STR(err.msg, "tp=4 does not divide the FFN size 250 of tiny");

    sim_machine_free(m4);
    sim_machine_free(m5);
    sim_machine_free(m32);
}

/* The closed form for tiny (h=64, ffn=256, a=4, s=32, L=4, V=1000) under
 * tp=2, pp=2, dp=1, mb=2, gb=8 (4 micro-batches), fp16, written out
 * independently of the implementation. */
static void test_memory(void)
{
    wl_model m = tiny();
    sim_machine *mach = wl_test_machine(4, 24e9);
    sim_err err;
    wl_memory mem;
    wl_strategy s = strat("tp=2,pp=2,dp=1,mb=2,gb=8,dtype=fp16");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);

    double h = 64, t = 2, sq = 32, b = 2, a = 4, d = 2;
    double vp = 1024; /* 1000 padded to a multiple of 128*tp = 256 */
    /* per layer 12h^2 + 13h; biases of the row-parallel GEMMs and the two layer
     * norms (6h) replicated, the rest split over t */
    double layer = (12 * h * h + 13 * h - 6 * h) / t + 6 * h;
    CHECK(layer == 25184);
    double p0 = 2 * layer + vp * h / t + sq * h; /* stage 0: 2 layers, embeddings */
    CHECK(mem.weights == 2 * p0);
    CHECK(mem.gradients == 2 * p0);
    CHECK(mem.optimizer == 12 * p0);
    double sbh = sq * b * h;
    double A = sbh * (d * (4 + 12 / t) + 2) + a * sq * sq * b * (2 * d + 1) / t; /* Korthikanti et al. */
    CHECK(A == 110592);
    CHECK(mem.activations == 2 /* in flight on stage 0 */ * 2 /* layers */ * A);
    CHECK(mem.buffers == sbh * d);
    CHECK(mem.context == 1073741824.0);
    CHECK(mem.total == 16 * p0 + 4 * A + sbh * d + 1073741824.0);
    CHECK(mem.total == 1075555328.0);

    /* full recompute: the layer inputs of 2 micro-batches x 2 layers + one layer rebuilt */
    s = strat("tp=2,pp=2,dp=1,mb=2,gb=8,dtype=fp16,recompute=full");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.activations == 4 * sbh * d + A);

    /* fp32: d=4 and 4+4+8 bytes per parameter (still 16) */
    s = strat("tp=2,pp=2,dp=1,mb=2,gb=8,dtype=fp32");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    d = 4;
    A = sbh * (d * (4 + 12 / t) + 2) + a * sq * sq * b * (2 * d + 1) / t;
    CHECK(mem.weights == 4 * p0 && mem.gradients == 4 * p0 && mem.optimizer == 8 * p0);
    CHECK(mem.activations == 4 * A);

    /* pp=1: one stage, one micro-batch in flight, logits s*b*(V/t)*4 on top */
    sim_machine *m2 = wl_test_machine(2, 24e9);
    s = strat("tp=2,mb=2,gb=8,dtype=fp16");
    CHECK(wl_gpt_check(&m, &s, m2, &mem, &err) == 0);
    d = 2;
    A = sbh * (d * (4 + 12 / t) + 2) + a * sq * sq * b * (2 * d + 1) / t;
    double p_all = 4 * layer + vp * h / t + sq * h + 2 * h;
    CHECK(mem.weights == 2 * p_all);
    CHECK(mem.activations == 4 * A + sq * b * (vp / t) * 4);
    CHECK(mem.buffers == 0);
    sim_machine_free(m2);
    sim_machine_free(mach);
}

static void test_oom(void)
{
    wl_model g;
    sim_err err;
    wl_memory mem;
    CHECK(wl_model_load("gpt-3072", &g, &err) == 0);
    sim_machine *mach = wl_test_machine(4, 24e9);
    wl_strategy s = strat("tp=4,mb=8,dtype=fp32");
    CHECK(wl_gpt_check(&g, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "out of GPU memory on stage 0: needs ");
    CHECK_HAS(err.msg, "but the RTX3090 has 24.0 GB");
    CHECK_HAS(err.msg, "activations");
    CHECK_HAS(err.msg, "for 1 micro-batch in flight");
    CHECK_HAS(err.msg, "recompute=full");
    CHECK(mem.total > 24e9);
    CHECK(wl_gpt_generate(&g, &s, mach, &err) == NULL);
    CHECK_HAS(err.msg, "needs");
    /* recompute and a small micro-batch fit */
    s = strat("tp=4,mb=1,dtype=fp32,recompute=full");
    CHECK(wl_gpt_check(&g, &s, mach, &mem, &err) == 0);
    CHECK(mem.total < 24e9);
    sim_machine_free(mach);
}

static void test_flops(void)
{
    /* Narayanan et al. 2021 Eq. 3 without recompute, GPT-3 175B, B = 1536 */
    wl_model g;
    sim_err err;
    CHECK(wl_model_load("gpt3-175b", &g, &err) == 0);
    wl_strategy s = strat("gb=1536");
    double B = 1536, sq = 2048, L = 96, h = 12288, V = 51200;
    double want = 72 * B * sq * L * h * h * (1 + sq / (6 * h) + V / (12 * L * h));
    double got = wl_gpt_model_flops(&g, &s);
    CHECK(fabs(got - want) / want < 1e-12);
    CHECK(fabs(got - 3.3862e18) / 3.3862e18 < 1e-4);
    /* close to the 6 * params * tokens rule of thumb (attention adds ~3%) */
    double six_nd = 6 * wl_model_params(&g) * B * sq;
    CHECK(got / six_nd > 1.0 && got / six_nd < 1.1);

    /* ffn != 4h, counted GEMM by GEMM: L=1, h=2, ffn=6, s=3, V=5, B=1.
     * forward: QKV 2*3*2*6=72, proj 24, fc1 72, fc2 72, attention 4*9*2=72,
     * logits 2*3*2*5=60; training = 3 x forward = 3*372 = 1116 */
    wl_model m = {.name = "f", .layers = 1, .hidden = 2, .heads = 1, .ffn = 6, .seq = 3, .vocab = 5};
    s = strat("gb=1");
    CHECK(wl_gpt_model_flops(&m, &s) == 1116);
}

/* The peak of a stage replayed from the generated schedule's memory
 * effects (rank = the stage's first). */
static double replayed_peak(const sim_schedule *s, int rank)
{
    double cur = 0, peak = 0;
    for (uint32_t k = 0; k < s->nstreams; k++) {
        if (s->streams[k].rank != rank)
            continue;
        for (uint32_t i = 0; i < s->streams[k].nops; i++) {
            const sim_payload *p = sim_sched_payload_of(s, s->streams[k].ops[i]);
            if (p->kind == SIM_OP_MEMORY && (cur += (double)p->bytes) > peak)
                peak = cur;
        }
    }
    return peak;
}

/* Many micro-batches: the check extends the peaks at 4p and 8p instead of
 * generating every micro-batch, and agrees with the whole schedule (full
 * pipelines flat, GPipe linear); absurd counts are refused at once. */
static void test_many_microbatches(void)
{
    wl_model m = tiny();
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    static const char *const pipes[] = {"1f1b", "gpipe", "interleaved", "eager"};
    for (int i = 0; i < 4; i++) {
        char text[128];
        snprintf(text, sizeof text, "tp=1,pp=2,dp=2,mb=1,gb=74,dtype=fp16,pipeline=%s%s", pipes[i],
                 i == 2 ? ",vstages=2" : "");
        wl_strategy s = strat(text);
        if (i == 2)
            s.gb = 72; /* interleaved: whole rounds of p */
        wl_memory per[2];
        CHECK(wl_gpt_memory(&m, &s, mach, per, &err) == 0);
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        for (int st = 0; sc && st < 2; st++) {
            double want = replayed_peak(sc, st * 2);
            if (fabs(per[st].total - want) > 1e-6 * want)
                fprintf(stderr, "%s stage %d: check %.0f, schedule %.0f\n", pipes[i], st, per[st].total, want);
            CHECK(fabs(per[st].total - want) <= 1e-6 * want);
        }
        sim_sched_free(sc);
    }
    wl_strategy s = strat("tp=1,pp=2,dp=2,mb=1,gb=20000000,dtype=fp16");
    CHECK(wl_gpt_check(&m, &s, mach, NULL, &err) == 0); /* the check stays cheap */
    CHECK(wl_gpt_generate(&m, &s, mach, &err) == NULL);
    CHECK_HAS(err.msg, "the whole schedule would hold about");
    sim_machine_free(mach);
}

int main(void)
{
    test_many_microbatches();
    test_errors();
    test_memory();
    test_oom();
    test_flops();
    return wl_test_done();
}
