/* test_pipeline.c — pipeline orders pinned for each schedule (pp=4, 8
 * micro-batches), micro-batches in flight per stage, the activation memory
 * closed forms per schedule, Merak's stage-aware ratio and pre-recompute
 * memory, ZeRO shards, the OOM message, strategy keys, and sim_sched_check
 * on every schedule (no deadlock, collectives matched). */
#include <math.h>
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/pipeline.h"

static void order_str(wl_pipeline k, int p, int v, int m, int stage, char *buf, size_t len)
{
    wl_pipe_step st[256];
    int n = wl_pipe_order(k, p, v, m, stage, st);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++) {
        if (v > 1)
            o += (size_t)snprintf(buf + o, len - o, "%s%c%d.%d", i ? " " : "", st[i].backward ? 'B' : 'F', st[i].micro,
                                  st[i].chunk);
        else
            o += (size_t)snprintf(buf + o, len - o, "%s%c%d", i ? " " : "", st[i].backward ? 'B' : 'F', st[i].micro);
    }
}

static void test_orders(void)
{
    char b[2048];
    /* GPipe: all forwards, then all backwards */
    for (int i = 0; i < 4; i++) {
        order_str(WL_PIPE_GPIPE, 4, 1, 8, i, b, sizeof b);
        CHECK_STR(b, "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7");
    }
    /* 1F1B: stage i warms up with p-i-1 forwards */
    order_str(WL_PIPE_1F1B, 4, 1, 8, 0, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    order_str(WL_PIPE_1F1B, 4, 1, 8, 1, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    order_str(WL_PIPE_1F1B, 4, 1, 8, 3, b, sizeof b);
    CHECK_STR(b, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    /* Alpa eager 1F1B: 2(p-i)-1 forwards first, then B and F alternate */
    order_str(WL_PIPE_EAGER, 4, 1, 8, 0, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 F3 F4 F5 F6 B0 F7 B1 B2 B3 B4 B5 B6 B7");
    order_str(WL_PIPE_EAGER, 4, 1, 8, 1, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 B4 B5 B6 B7");
    order_str(WL_PIPE_EAGER, 4, 1, 8, 3, b, sizeof b);
    CHECK_STR(b, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    /* Merak full critical path: stage P-2 swaps its first backward and third forward */
    order_str(WL_PIPE_MERAK_FCP, 4, 1, 8, 2, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 B0 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
    order_str(WL_PIPE_MERAK_FCP, 4, 1, 8, 1, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    order_str(WL_PIPE_MERAK_PRE, 4, 1, 8, 0, b, sizeof b);
    CHECK_STR(b, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    /* Megatron interleaved, p=4, v=2, m=8: stage 0 warms up with
     * (p-1)*2 + (v-1)*p = 10 chunk forwards, in groups of p micro-batches per
     * chunk; backwards start with the last chunk */
    order_str(WL_PIPE_INTERLEAVED, 4, 2, 8, 0, b, sizeof b);
    CHECK_STR(b, "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 "
                 "F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
    order_str(WL_PIPE_INTERLEAVED, 4, 2, 8, 3, b, sizeof b);
    CHECK_STR(b, "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 "
                 "F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0");
    /* m = p: every stage all warm-up (Megatron) */
    order_str(WL_PIPE_INTERLEAVED, 2, 2, 2, 1, b, sizeof b);
    CHECK_STR(b, "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

static void test_inflight(void)
{
    wl_pipe_step st[512];
    int p = 4, m = 8;
    for (int i = 0; i < p; i++) {
        int n = wl_pipe_order(WL_PIPE_1F1B, p, 1, m, i, st);
        CHECK(n == 2 * m);
        CHECK(wl_pipe_max_inflight(st, n) == p - i);
        n = wl_pipe_order(WL_PIPE_EAGER, p, 1, m, i, st);
        CHECK(wl_pipe_max_inflight(st, n) == (2 * (p - i) - 1 < m ? 2 * (p - i) - 1 : m));
        n = wl_pipe_order(WL_PIPE_GPIPE, p, 1, m, i, st);
        CHECK(wl_pipe_max_inflight(st, n) == m);
        n = wl_pipe_order(WL_PIPE_INTERLEAVED, p, 2, m, i, st);
        CHECK(n == 2 * m * 2);
        CHECK(wl_pipe_max_inflight(st, n) == (p - i - 1) * 2 + (2 - 1) * p + 1);
        /* every micro-batch of every chunk once forward, once backward, and the
         * backward after the forward */
        int seenf[16][2] = {{0}}, seenb[16][2] = {{0}};
        for (int k = 0; k < n; k++) {
            if (st[k].backward) {
                CHECK(seenf[st[k].micro][st[k].chunk] == 1);
                seenb[st[k].micro][st[k].chunk]++;
            } else {
                seenf[st[k].micro][st[k].chunk]++;
            }
        }
        for (int j = 0; j < m; j++)
            for (int c = 0; c < 2; c++)
                CHECK(seenf[j][c] == 1 && seenb[j][c] == 1);
    }
    /* few micro-batches: everything in flight */
    int n = wl_pipe_order(WL_PIPE_1F1B, 4, 1, 2, 0, st);
    CHECK(wl_pipe_max_inflight(st, n) == 2);
}

static void test_merak_ratio(void)
{
    /* ratio_k = 1 − (1 − r0)(P−1)/(P−1−k), last stage 0 (papers.md §2.4) */
    CHECK(fabs(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 0.5, 4, 0) - 0.5) < 1e-12);
    CHECK(fabs(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 0.5, 4, 1) - 0.25) < 1e-12);
    CHECK(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 0.5, 4, 2) == 0); /* 1 − 1.5 clamps to 0 */
    CHECK(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 0.5, 4, 3) == 0);
    CHECK(fabs(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 0.8, 4, 2) - (1 - 0.2 * 3)) < 1e-12);
    /* full critical path: stage P−2 takes stage P−3's ratio */
    CHECK(fabs(wl_pipe_merak_ratio(WL_PIPE_MERAK_FCP, 0.8, 4, 2) - (1 - 0.2 * 1.5)) < 1e-12);
    CHECK(wl_pipe_merak_ratio(WL_PIPE_MERAK_LNR, 1.0, 8, 6) == 1);
}

/* tiny at fp32, mb=1, tp=1: A = sbh·(4·(4+12)+2) + a·s²·b·9 = 2048·66 + 4·1024·9 */
static const double A = 2048.0 * 66 + 4 * 1024.0 * 9;
static const double SBHD = 2048.0 * 4;
static const double LOGITS = 32.0 * 1024 * 4; /* s·b·V_padded·4 */

static void test_activation_memory(void)
{
    wl_model m = wl_test_tiny(8);
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    wl_memory mem[4];
    CHECK(A == 172032);
    struct {
        const char *s;
        int lp;             /* layers per pass */
        int inflight[4];    /* passes held per stage */
    } cases[] = {
        {"pp=4,mb=1,gb=8,dtype=fp32", 2, {4, 3, 2, 1}},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=gpipe", 2, {8, 8, 8, 8}},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=eager", 2, {7, 5, 3, 1}},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=interleaved,vstages=2", 1, {11, 9, 7, 5}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        wl_strategy s = wl_test_strategy(cases[k].s);
        CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
        int gpipe = strstr(cases[k].s, "gpipe") != NULL;
        for (int i = 0; i < 4; i++) {
            double want = cases[k].inflight[i] * cases[k].lp * A;
            /* the last (virtual) stage holds its logits from the output layer to the loss backward: one micro-batch's,
             * all of them under GPipe; interleaved: the last chunk is one of the 5 passes */
            if (i == 3)
                want = (gpipe ? 8 : 1) * LOGITS + cases[k].inflight[i] * cases[k].lp * A;
            if (mem[i].activations != want || mem[i].inflight != cases[k].inflight[i])
                fprintf(stderr, "%s stage %d: activations %.0f want %.0f, in flight %d want %d\n", cases[k].s, i,
                        mem[i].activations, want, mem[i].inflight, cases[k].inflight[i]);
            CHECK(mem[i].activations == want);
            CHECK(mem[i].inflight == cases[k].inflight[i]);
        }
    }

    /* Merak: ckpt_ratio 0.5 on pp=4 recomputes 1 of stage 0's 2 layers and
     * none elsewhere.  Stage 0 holds 4 micro-batches: each keeps layer 0's
     * input (d·sbh) and layer 1's activations A; the recomputed layer 0 is
     * rebuilt during its backward after layer 1's were freed (peak 4·sbh +
     * 4A), but ahead of the gradient under pre_recompute (4·sbh + 5A). */
    wl_strategy s = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,recompute=full,pipeline=merak_last_no_recompute,ckpt_ratio=0.5");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    CHECK(mem[0].activations == 4 * SBHD + 4 * A);
    CHECK(mem[1].activations == 3 * 2 * A); /* ratio 0.25: ⌊0.5⌋ = 0 layers recomputed */
    CHECK(mem[3].activations == 2 * A + LOGITS);
    s = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,recompute=full,pipeline=merak_pre_recompute,ckpt_ratio=0.5");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    CHECK(mem[0].activations == 4 * SBHD + 5 * A);
    /* default ratio 1: every layer of stages 0..P-2 recomputed, none on the last */
    s = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,recompute=full,pipeline=merak_last_no_recompute");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    CHECK(mem[0].activations == 4 * 2 * SBHD + A);
    CHECK(mem[3].activations == 2 * A + LOGITS);
    /* Megatron full recompute keeps 1 layer input per layer and rebuilds one layer */
    s = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,recompute=full");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    CHECK(mem[0].activations == 4 * 2 * SBHD + A);
    sim_machine_free(mach);
}

/* ZeRO stages shard the model states over the DP group (Rajbhandari et al.
 * 2020 §5): tiny, pp=1, dp=4, fp32 (4 + 4 + 8 bytes per parameter). */
static void test_zero_memory(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    wl_memory mem;
    double h = 64, layer = 12 * h * h + 13 * h, root = 1024 * h + 32 * h + 2 * h;
    double P = 4 * layer + root;
    wl_strategy s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.weights == 4 * P && mem.gradients == 4 * P && mem.optimizer == 8 * P);
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32,zero=1");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.weights == 4 * P && mem.gradients == 4 * P && mem.optimizer == 8 * ceil(P / 4));
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32,zero=2,bucket=1");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.weights == 4 * P && mem.gradients == 4 * ceil(P / 4) && mem.optimizer == 8 * ceil(P / 4));
    CHECK(mem.buffers == 2 * 1048576.0);
    /* mixed precision: K = 12 bytes of optimizer state per parameter,
     * sharded; Megatron accumulates a bf16 model's gradients in fp32 (its
     * distributed optimizer's 6 + 12/d bytes per parameter), an fp16
     * model's in fp16, unless grad_reduce says otherwise */
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=bf16,zero=1");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.weights == 2 * P && mem.gradients == 4 * P && mem.optimizer == 12 * ceil(P / 4));
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=bf16,zero=1,grad_reduce=bf16");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.gradients == 2 * P);
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp16,zero=1");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.weights == 2 * P && mem.gradients == 2 * P && mem.optimizer == 12 * ceil(P / 4));
    /* ZeRO-3: each rank owns a quarter of every unit; at the peak (the second
     * layer of the backward) the root unit is gathered with its gradients,
     * two layers' parameters are gathered (the current one and the
     * prefetched one) and two layers' full gradients are alive (the current
     * one and the one being reduce-scattered); three layers' activations are
     * still kept */
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32,zero=3");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    double owned = 4 * ceil(layer / 4) + ceil(root / 4);
    CHECK(mem.optimizer == 8 * owned);
    CHECK(mem.weights == 4 * owned + 4 * root + 2 * 4 * layer);
    CHECK(mem.gradients == 4 * owned + 4 * root + 2 * 4 * layer);
    CHECK(mem.gathered == 2 * 4 * root + 4 * 4 * layer);
    CHECK(mem.activations == 3 * A);
    /* OSDP level 3 on every layer shards the layers like ZeRO-3 but keeps
     * the embeddings replicated; level 0 everywhere is plain DP */
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32,osdp=0");
    wl_memory dp0;
    CHECK(wl_gpt_check(&m, &s, mach, &dp0, &err) == 0);
    CHECK(dp0.weights == 4 * P && dp0.optimizer == 8 * P);
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=fp32,osdp=2_2_2_2"); /* MLP sharded: (2hf+f)/t + 3h per layer */
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    double mlp = 2 * h * 256 + 256 + 3 * h;
    CHECK(mem.optimizer == 8 * (P - 4 * mlp + 4 * ceil(mlp / 4)));
    sim_machine_free(mach);
}

static void test_oom(void)
{
    wl_model g;
    sim_err err;
    wl_memory mem;
    CHECK(wl_model_load("gpt-2048", &g, &err) == 0);
    sim_machine *mach = wl_test_machine(8, 8e9);
    wl_strategy s = wl_test_strategy("dp=8,mb=1,dtype=fp32,recompute=full");
    CHECK(wl_gpt_check(&g, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "out of GPU memory on stage 0: needs ");
    CHECK_HAS(err.msg, "optimizer ");
    CHECK_HAS(err.msg, "but the RTX3090 has 8.0 GB");
    CHECK_HAS(err.msg, "zero=1");
    char need[32];
    snprintf(need, sizeof need, "needs %.1f GB", mem.total / 1e9);
    CHECK_HAS(err.msg, need);
    /* ZeRO-3 fits, and what it gathers is named when it does not */
    s = wl_test_strategy("dp=8,mb=1,dtype=fp32,recompute=full,zero=3");
    CHECK(wl_gpt_check(&g, &s, mach, &mem, &err) == 0);
    CHECK(mem.total < 8e9 && mem.gathered > 0);
    sim_machine *small = wl_test_machine(8, 2e9);
    CHECK(wl_gpt_check(&g, &s, small, &mem, &err) == -1);
    CHECK_HAS(err.msg, "gathered copies of sharded parameters");
    /* GPipe holds every micro-batch */
    sim_machine *m4 = wl_test_machine(4, 24e9);
    s = wl_test_strategy("pp=4,mb=4,gb=64,dtype=fp32,pipeline=gpipe");
    CHECK(wl_gpt_check(&g, &s, m4, &mem, &err) == -1);
    CHECK_HAS(err.msg, "for 16 micro-batches in flight under pipeline=gpipe");
    sim_machine_free(m4);
    sim_machine_free(small);
    sim_machine_free(mach);
}

static void test_keys(void)
{
    sim_err err;
    wl_strategy s;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("pipeline=warp", &s, &err) == -1);
    CHECK_HAS(err.msg, "pipeline: expected one of 1f1b, gpipe, interleaved, eager");
    CHECK(wl_strategy_parse("zero=4", &s, &err) == -1);
    CHECK_HAS(err.msg, "zero: expected 0, 1, 2, 3");
    CHECK(wl_strategy_parse("osdp=0120x", &s, &err) == -1);
    CHECK_HAS(err.msg, "osdp: expected one sharding level 0-3 per layer");
    CHECK(wl_strategy_parse("ckpt_ratio=1.5", &s, &err) == -1);
    CHECK(wl_strategy_parse("dp_overlap=2", &s, &err) == -1);
    s = wl_test_strategy("pp=4,pipeline=interleaved,vstages=2,dp_overlap=1,zero=fsdp");
    char buf[256];
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "tp=1,pp=4,dp=auto,mb=1,gb=auto,dtype=tf32,recompute=none,bucket=auto,pipeline=interleaved,vstages=2,"
                   "dp_overlap=1,zero=3");
    wl_strategy back = wl_test_strategy(buf);
    char buf2[256];
    wl_strategy_format(&back, buf2, sizeof buf2);
    CHECK_STR(buf2, buf);
    s = wl_test_strategy("pp=4,recompute=full,pipeline=full_critical_path_1f1b,ckpt_ratio=0.1,osdp=3.0");
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, "pipeline=merak_full_critical_path,ckpt_ratio=0.1,osdp=30");

    /* combinations that cannot run are explained */
    wl_model m = wl_test_tiny(8);
    sim_machine *m4 = wl_test_machine(4, 0), *m8 = wl_test_machine(8, 0);
    struct {
        sim_machine *mach;
        const char *s, *msg;
    } bad[] = {
        {m4, "pp=4,gb=6,pipeline=interleaved,vstages=2", "multiple of pp=4"},
        {m4, "pp=4,gb=8,pipeline=interleaved", "needs vstages >= 2"},
        {m4, "pp=4,gb=8,vstages=2", "vstages=2 needs pipeline=interleaved"},
        {m4, "pp=4,gb=8,pipeline=interleaved,vstages=4", "2 layers per stage are not divisible by vstages=4"},
        {m4, "pp=4,gb=8,pipeline=merak_pre_recompute", "give recompute=full"},
        {m4, "pp=4,gb=3,recompute=full,pipeline=merak_full_critical_path", "at least 4 micro-batches"},
        {m4, "pp=4,gb=8,ckpt_ratio=0.5", "ckpt_ratio is Merak's"},
        {m8, "pp=2,gb=8,osdp=012", "one per layer (8), got 3"},
        {m8, "pp=2,gb=8,osdp=3,zero=3", "osdp and zero=3"},
        {m8, "pp=2,gb=8,zero=3,recompute=full,pipeline=merak_pre_recompute", "not modelled with zero=3"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        wl_strategy b = wl_test_strategy(bad[k].s);
        wl_memory mem;
        err.msg[0] = 0;
        CHECK(wl_gpt_check(&m, &b, bad[k].mach, &mem, &err) == -1);
        CHECK_HAS(err.msg, bad[k].msg);
    }
    sim_machine_free(m4);
    sim_machine_free(m8);
}

/* Every schedule passes the checker (messages and collectives matched, no
 * cycle), and its memory effects on each compute stream peak at what the
 * check reports for that stage. */
static void test_schedules_check(void)
{
    wl_model m = wl_test_tiny(8);
    static const struct {
        int gpus;
        const char *s;
    } cases[] = {
        {4, "pp=4,gb=8"},
        {4, "pp=4,gb=8,pipeline=gpipe"},
        {4, "pp=4,gb=8,pipeline=eager"},
        {4, "pp=4,gb=8,pipeline=interleaved,vstages=2"},
        {8, "pp=2,tp=2,dp=2,gb=8,pipeline=interleaved,vstages=4,dp_overlap=1"},
        {4, "pp=4,gb=8,recompute=full,pipeline=merak_last_no_recompute,ckpt_ratio=0.6"},
        {4, "pp=4,gb=8,recompute=full,pipeline=merak_pre_recompute"},
        {8, "pp=4,tp=2,gb=8,recompute=full,pipeline=merak_full_critical_path,ckpt_ratio=0.3"},
        {8, "pp=2,dp=4,gb=16,dp_overlap=1,bucket=0.1"},
        {8, "pp=2,dp=4,gb=16,zero=1,bucket=0.1"},
        {8, "pp=2,dp=4,gb=16,zero=1,dp_overlap=1,bucket=0.1"},
        {8, "pp=2,dp=4,gb=16,zero=2,bucket=0.1"},
        {8, "pp=2,dp=4,gb=16,zero=3,recompute=full"},
        {8, "pp=2,dp=2,tp=2,gb=8,zero=3,pipeline=interleaved,vstages=2"},
        {8, "dp=8,gb=16,osdp=01230123,dp_overlap=1"},
        {8, "dp=8,gb=16,osdp=01230123,osdp_split=3,dp_overlap=1"},
        {8, "pp=2,dp=4,gb=16,osdp=3,osdp_split=4,recompute=full"},
        {8, "tp=2,pp=2,dp=2,gb=8,osdp=3,osdp_split=2,sp=1,recompute=selective,pipeline=interleaved,vstages=2"},
        /* with the TP layer schedules of layer.c */
        {8, "tp=2,pp=2,dp=2,mb=2,gb=16,schedule=oases,pipeline=interleaved,vstages=2,dp_overlap=1"},
        {8, "tp=2,dp=4,mb=2,gb=16,schedule=oases,zero=3"},
        {8, "tp=2,pp=2,dp=2,mb=2,gb=16,schedule=merak,tp_overlap=3,recompute=full,pipeline=merak_pre_recompute"},
        {8, "tp=2,pp=4,mb=2,gb=16,sp=1,recompute=selective,pipeline=eager"},
        {8, "tp=4,pp=2,mb=4,gb=16,schedule=tesseract,tess_depth=1,pipeline=gpipe"},
        /* uneven stages (test_stage_split.c), and ZeRO-1 all-reducing its gradients */
        {4, "pp=4,gb=8,pp_layers=1/3/3/1,recompute=full"},
        {4, "pp=4,gb=8,pipeline=interleaved,vstages=2,pp_layers=0/2/2/0/1/1/1/1"},
        {8, "pp=2,dp=4,gb=16,zero=1,grad_collective=allreduce,pp_layers=3/5"},
        {8, "pp=4,tp=2,gb=8,recompute=full,pipeline=merak_full_critical_path,ckpt_ratio=0.5,pp_layers=3/2/2/1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        wl_strategy s = wl_test_strategy(cases[k].s);
        sim_machine *mach = wl_test_machine(cases[k].gpus, 0);
        sim_err err;
        wl_memory per[8];
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        if (!sc) {
            fprintf(stderr, "%s: %s\n", cases[k].s, err.msg);
            sim_machine_free(mach);
            continue;
        }
        if (sim_sched_check(sc, &err)) {
            fprintf(stderr, "%s: %s\n", cases[k].s, err.msg);
            CHECK(0);
        }
        CHECK(wl_gpt_memory(&m, &s, mach, per, &err) == 0);
        int td = sc->nranks / s.pp;
        for (uint32_t st = 0; st < sc->nstreams; st++) {
            const sim_stream *ss = &sc->streams[st];
            double cur = 0, peak = 0;
            for (uint32_t i = 0; i < ss->nops; i++) {
                const sim_payload *p = sim_sched_payload_of(sc, ss->ops[i]);
                if (p->kind == SIM_OP_MEMORY) {
                    CHECK(strcmp(sim_sched_strname(sc, ss->name), "compute") == 0);
                    cur += (double)p->bytes;
                    peak = cur > peak ? cur : peak;
                }
            }
            if (strcmp(sim_sched_strname(sc, ss->name), "compute") == 0 && peak != per[ss->rank / td].total) {
                fprintf(stderr, "%s rank %d: peak %.0f, check %.0f\n", cases[k].s, ss->rank, peak,
                        per[ss->rank / td].total);
                CHECK(0);
            }
        }
        sim_sched_free(sc);
        sim_machine_free(mach);
    }
}

static const char *op_name(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, sim_sched_payload_of(s, op)->name);
}

/* Merak pre-recompute: on stage 0, the recomputed forward of a micro-batch
 * comes before the kernel that waits for its gradient; with plain 1F1B and
 * full recompute the first recompute kernel is the one that waits. */
static void test_pre_recompute_placement(void)
{
    wl_model m = wl_test_tiny(8);
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    for (int pre = 0; pre < 2; pre++) {
        wl_strategy s = wl_test_strategy(pre ? "pp=4,gb=8,recompute=full,pipeline=merak_pre_recompute"
                                  : "pp=4,gb=8,recompute=full");
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        if (!sc)
            continue;
        const sim_stream *c = &sc->streams[wl_test_stream(sc, 0, "compute")];
        int checked = 0;
        for (uint32_t i = 0; i < c->nops; i++) {
            uint32_t op = c->ops[i];
            const sim_op *o = &sc->ops[op];
            for (int d = 0; d < o->ndeps; d++) {
                uint32_t dep = sc->deps[o->dep_first + d];
                if (strcmp(op_name(sc, dep), "recv_grad") != 0)
                    continue;
                /* the op waiting for the gradient of micro-batch mi */
                int mi = sc->ops[dep].micro;
                CHECK(o->micro == mi);
                if (pre) {
                    CHECK(o->phase == SIM_PHASE_BACKWARD);
                    /* every recompute op of this micro-batch comes before it */
                    int before = 0, after = 0;
                    for (uint32_t j = 0; j < c->nops; j++) {
                        const sim_op *x = &sc->ops[c->ops[j]];
                        if (x->micro == mi && x->phase == SIM_PHASE_RECOMPUTE) {
                            if (j < i)
                                before++;
                            else
                                after++;
                        }
                    }
                    CHECK(before > 0 && after == 0);
                } else {
                    CHECK(o->phase == SIM_PHASE_RECOMPUTE);
                }
                checked++;
            }
        }
        CHECK(checked == 8);
        sim_sched_free(sc);
    }
    sim_machine_free(mach);
}

/* DDP overlap: the buckets are issued during the last backward of the step
 * (each depends on a backward kernel of the last micro-batch) and carry all
 * the gradients; the end-of-step variant issues them after the flush. */
static void test_dp_overlap_structure(void)
{
    wl_model m = wl_test_tiny(8);
    sim_machine *mach = wl_test_machine(8, 0);
    sim_err err;
    for (int ov = 0; ov < 2; ov++) {
        wl_strategy s = wl_test_strategy(ov ? "pp=2,dp=4,gb=16,bucket=0.05,dp_overlap=1" : "pp=2,dp=4,gb=16,bucket=0.05");
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        if (!sc)
            continue;
        /* rank 0 (stage 0): 4 layers + embeddings, fp32 gradients... tf32 = 4 bytes */
        double h = 64, layer = 12 * h * h + 13 * h, want = 4 * (4 * layer + 1024 * h + 32 * h);
        const sim_stream *d = &sc->streams[wl_test_stream(sc, 0, "dp")];
        const sim_stream *c = &sc->streams[wl_test_stream(sc, 0, "compute")];
        double bytes = 0;
        int nb = 0, during = 0;
        uint32_t last_bwd = 0;
        for (uint32_t i = 0; i < c->nops; i++)
            if (sc->ops[c->ops[i]].phase == SIM_PHASE_BACKWARD)
                last_bwd = sc->ops[c->ops[i]].seq;
        for (uint32_t i = 0; i < d->nops; i++) {
            uint32_t op = d->ops[i];
            if (strcmp(op_name(sc, op), "dp_allreduce"))
                continue;
            bytes += (double)sim_sched_payload_of(sc, op)->bytes;
            nb++;
            uint32_t dep = sc->deps[sc->ops[op].dep_first];
            CHECK(sc->ops[dep].micro == (ov ? 3 : sc->ops[dep].micro));
            if (sc->ops[dep].seq < last_bwd)
                during++;
        }
        CHECK(bytes == want);
        CHECK(nb > 4);
        if (ov) /* the layers' buckets go out before the last kernel (the embeddings' close with it) */
            CHECK(during >= (int)(4 * 4 * layer / (0.05 * 1048576)));
        else
            CHECK(during == 0);
        sim_sched_free(sc);
    }
    sim_machine_free(mach);
}

/* OSDP operator splitting (papers.md §3.6), on rank 0's streams: the
 * largest gathered-weight footprint and the all-gathered bytes. */
static void split_stats(const wl_model *m, const char *text, double *peak, double *agbytes, char **json)
{
    wl_strategy s = wl_test_strategy(text);
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    CHECK(sc != NULL);
    *peak = *agbytes = 0;
    if (!sc) {
        sim_machine_free(mach);
        return;
    }
    CHECK(sim_sched_check(sc, &err) == 0);
    int32_t gw = sim_sched_str(sc, "gathered_weights"), ag = sim_sched_str(sc, "fsdp_allgather");
    double cur = 0;
    for (uint32_t st = 0; st < sc->nstreams; st++) {
        const sim_stream *ss = &sc->streams[st];
        if (ss->rank != 0)
            continue;
        for (uint32_t i = 0; i < ss->nops; i++) {
            const sim_payload *p = sim_sched_payload_of(sc, ss->ops[i]);
            if (p->kind == SIM_OP_MEMORY && p->name == gw) {
                cur += (double)p->bytes;
                *peak = cur > *peak ? cur : *peak;
            }
            if (p->kind == SIM_OP_COLLECTIVE && p->name == ag)
                *agbytes += (double)p->bytes;
        }
    }
    CHECK(cur == 0); /* every gathered slice freed */
    if (json)
        *json = sim_sched_to_json(sc, 0);
    sim_sched_free(sc);
    sim_machine_free(mach);
}

static double slice(double y, int k, int i)
{
    return i < k - 1 ? floor(y / k) : y - (k - 1) * floor(y / k);
}

static void test_osdp_split(void)
{
    wl_model m = wl_test_tiny(4);
    const double h = 64, f = 256;
    /* osdp_split=1 is the unsplit schedule, byte for byte */
    double p1, a1, pk, ak;
    char *j0 = NULL, *j1 = NULL;
    split_stats(&m, "dp=4,mb=1,gb=4,dtype=fp32,osdp=2", &p1, &a1, &j0);
    split_stats(&m, "dp=4,mb=1,gb=4,dtype=fp32,osdp=2,osdp_split=1", &pk, &ak, &j1);
    CHECK(j0 && j1 && strcmp(j0, j1) == 0);
    free(j0);
    free(j1);
    /* unsplit: the current layer's MLP and the prefetched next one's */
    double y = 2 * h * f + f + 3 * h; /* MLP unit, tp=1 */
    CHECK(p1 == 2 * 4 * y);
    for (int k = 2; k <= 8; k *= 2) {
        char text[96];
        snprintf(text, sizeof text, "dp=4,mb=1,gb=4,dtype=fp32,osdp=2,osdp_split=%d", k);
        split_stats(&m, text, &pk, &ak, NULL);
        /* closed form: the MLP split half and half between fc1 and fc2, each
         * in k slices; at most a slice and the prefetched next are held */
        double fc1 = floor(y / 2), fc2 = y - fc1, seq[16], best = 0;
        for (int i = 0; i < k; i++) {
            seq[i] = slice(fc1, k, i);
            seq[k + i] = slice(fc2, k, i);
        }
        for (int i = 0; i + 1 < 2 * k; i++)
            best = seq[i] + seq[i + 1] > best ? seq[i] + seq[i + 1] : best;
        if (pk != 4 * best)
            fprintf(stderr, "osdp_split=%d: gathered peak %.0f, closed form %.0f\n", k, pk, 4 * best);
        CHECK(pk == 4 * best);
        CHECK(pk < p1 / k * 0.6); /* about a k-th of one unit, against two units unsplit */
        CHECK(ak == a1);           /* the same bytes all-gathered, in 2k pieces per unit */
    }
    /* level 3: attention and MLP, also the same volume */
    split_stats(&m, "dp=4,mb=1,gb=4,dtype=fp32,osdp=3", &p1, &a1, NULL);
    split_stats(&m, "dp=4,mb=1,gb=4,dtype=fp32,osdp=3,osdp_split=4", &pk, &ak, NULL);
    CHECK(ak == a1 && pk < p1 / 4);
    /* bad values */
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("osdp_split=0", &s, &err) == -1);
    CHECK_HAS(err.msg, "osdp_split: expected the number of slices");
    CHECK(wl_strategy_parse("osdp_split=2x", &s, &err) == -1);
    CHECK(wl_strategy_parse("osdp_split=", &s, &err) == -1);
    sim_machine *mach = wl_test_machine(4, 0);
    wl_memory mem;
    s = wl_test_strategy("dp=4,gb=4,osdp_split=2");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "needs osdp=<levels>");
    s = wl_test_strategy("dp=4,mb=2,gb=8,osdp=3,osdp_split=2,schedule=oases");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "schedule=megatron only");
    sim_machine_free(mach);
}

int main(void)
{
    test_osdp_split();
    test_pre_recompute_placement();
    test_dp_overlap_structure();
    test_orders();
    test_inflight();
    test_merak_ratio();
    test_activation_memory();
    test_zero_memory();
    test_oom();
    test_keys();
    test_schedules_check();
    return wl_test_done();
}
