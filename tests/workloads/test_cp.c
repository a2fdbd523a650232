/* test_cp.c — context parallelism (strategy key cp, workloads/README.md
 * "Context parallelism"): the key parses and formats; cp=1 is the schedule
 * without the key, byte for byte; cp=2 halves a rank's GEMM and attention
 * FLOPs and a layer's activation memory; the p2p ring's sends per layer
 * (cp−1 forward, cp backward) and their bytes; the ranks of a CP ring; the
 * ring's buffers in the memory effects; impossible strategies explained. */
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/layer.h"

/* A small Llama-like model: GQA (8 query, 2 K/V heads), swiglu, rope. */
static wl_model model(int seq)
{
    wl_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "cp-test");
    m.layers = 2;
    m.hidden = 512;
    m.heads = 8;
    m.kv_heads = 2;
    m.ffn = 1536;
    m.ffn_type = WL_FFN_SWIGLU;
    m.norm = WL_NORM_RMSNORM;
    m.position = WL_POS_ROPE;
    m.untied = 1;
    m.no_bias = 1;
    m.seq = seq;
    m.vocab = 32000;
    return m;
}

static sim_schedule *gen(const wl_model *m, const char *text, int ngpus)
{
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", ngpus);
    sim_schedule *sc = wl_test_generate(m, text, mach);
    sim_machine_free(mach);
    return sc;
}

/* FLOPs of rank r's GEMMs and of its fused attention kernels (forward). */
static void rank_flops(const sim_schedule *s, int r, double *gemm, double *attn)
{
    *gemm = *attn = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        if (s->streams[s->ops[i].stream].rank != r)
            continue;
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind != SIM_OP_COMPUTE)
            continue;
        if (p->sub == SIM_KERNEL_GEMM)
            *gemm += 2.0 * (double)p->m * (double)p->n * (double)p->k;
        if (p->sub == SIM_KERNEL_FLASH_FWD)
            *attn += 4.0 * (double)p->batch * (double)p->m * (double)p->n * (double)p->n * (double)p->k *
                     (p->tag == 1 ? 0.5 : 1.0);
    }
}

static void test_parse_format(void)
{
    wl_strategy s = wl_test_strategy("tp=2,cp=4,dp=2,mb=1,dtype=bf16");
    CHECK(s.cp == 4);
    char buf[512];
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",cp=4");
    wl_strategy back = wl_test_strategy(buf);
    CHECK(back.cp == 4);
    s = wl_test_strategy("tp=2,dp=2");
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK(strstr(buf, "cp=") == NULL); /* cp=1 reads as before */
    sim_err err;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("cp=0", &s, &err) < 0);
    CHECK_HAS(err.msg, "cp: expected a positive integer");
    CHECK(wl_strategy_parse("cp=two", &s, &err) < 0);
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("schedule=merak,recompute=full,cp=2", &s, &err) < 0);
    CHECK_HAS(err.msg, "schedule=megatron only");
}

/* cp=1 (given, or left 0 in a hand-filled struct) is the schedule without
 * the key, byte for byte, with no CP stream. */
static void test_cp1_identical(void)
{
    wl_model m = model(4096);
    const char *base = "tp=2,pp=2,dp=2,mb=1,gb=4,dtype=bf16,recompute=selective,sp=1";
    char with[256];
    snprintf(with, sizeof with, "%s,cp=1", base);
    sim_schedule *a = gen(&m, base, 8), *b = gen(&m, with, 8);
    wl_strategy z = wl_test_strategy(base);
    z.cp = 0;
    sim_err err;
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 8);
    sim_schedule *c = wl_gpt_generate(&m, &z, mach, &err);
    sim_machine_free(mach);
    CHECK(c != NULL);
    char *ja = sim_sched_to_json(a, 0), *jb = sim_sched_to_json(b, 0), *jc = c ? sim_sched_to_json(c, 0) : NULL;
    CHECK(ja && jb && jc && strcmp(ja, jb) == 0 && strcmp(ja, jc) == 0);
    CHECK(ja && strstr(ja, "cp-ring") == NULL && strstr(ja, "cp_kv") == NULL);
    free(ja);
    free(jb);
    free(jc);
    sim_sched_free(a);
    sim_sched_free(b);
    sim_sched_free(c);
}

/* The same micro-batch per rank with cp=1 (dp=2) and cp=2 (dp=1): a rank's
 * GEMM FLOPs halve, its attention FLOPs halve too (the causal load balance:
 * (s/2)²/2 on the diagonal + 2·(s/4)² off it = s²/4 of the s²/2), and a
 * layer's kept activations halve. */
static void test_halves(void)
{
    wl_model m = model(8192);
    sim_schedule *a = gen(&m, "tp=1,dp=2,mb=1,gb=2,dtype=bf16", 2), *b = gen(&m, "tp=1,cp=2,dp=1,mb=1,gb=1,dtype=bf16", 2);
    double ga, aa, gb, ab;
    rank_flops(a, 0, &ga, &aa);
    rank_flops(b, 0, &gb, &ab);
    CHECK(ga > 0 && aa > 0);
    CHECK(gb * 2 == ga);
    CHECK(ab * 2 == aa);
    double gb1, ab1;
    rank_flops(b, 1, &gb1, &ab1); /* both CP ranks do the same work */
    CHECK(gb1 == gb && ab1 == ab);
    sim_sched_free(a);
    sim_sched_free(b);
    for (int rc = WL_RECOMPUTE_NONE; rc <= WL_RECOMPUTE_SELECTIVE; rc++) {
        wl_strategy s1 = wl_test_strategy("tp=2,mb=2,dtype=bf16,sp=1"), s2 = s1;
        s1.recompute = s2.recompute = (wl_recompute)rc;
        s1.flash = s2.flash = 1;
        s2.cp = 2;
        int64_t k1, t1, k2, t2;
        wl_layer_memory(&m, &s1, 0, &k1, &t1);
        wl_layer_memory(&m, &s2, 0, &k2, &t2);
        CHECK(k1 > 0 && k2 * 2 == k1 && t2 * 2 == t1);
    }
}

/* Per layer and micro-batch, rank 0 of a CP ring of 4 sends cp−1 K/V chunk
 * pairs forward to the next CP rank and cp transfers backward to the
 * previous one (K/V; K/V + dK/dV twice; dK/dV), each K/V pair
 * b·(s/cp)·2·(kv_heads/tp)·head_dim·2 bytes; the peers are the ranks tp
 * apart (TP innermost, then CP). */
static void test_ring(void)
{
    wl_model m = model(8192);
    const int tp = 2, cp = 4, mb = 2;
    sim_schedule *s = gen(&m, "tp=2,cp=4,dp=1,mb=2,gb=2,dtype=bf16", 8);
    int64_t kv = (int64_t)mb * (m.seq / cp) * 2 * (m.kv_heads / tp) * (m.hidden / m.heads) * 2;
    int nf = 0, nb = 0;
    int64_t bf = 0, bb = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (s->streams[o->stream].rank != 0 || p->kind != SIM_OP_SEND || o->layer != 1)
            continue;
        CHECK_HAS(sim_sched_strname(s, s->streams[o->stream].name), "cp-ring-send");
        if (o->phase == SIM_PHASE_FORWARD) {
            nf++;
            bf += p->bytes;
            CHECK(p->bytes == kv);
            CHECK(o->arg == tp); /* the next CP rank */
        } else if (o->phase == SIM_PHASE_BACKWARD) {
            nb++;
            bb += p->bytes;
            CHECK(o->arg == (cp - 1) * tp); /* the previous CP rank */
        }
    }
    CHECK(nf == cp - 1);
    CHECK(bf == (cp - 1) * kv);
    CHECK(nb == cp);
    CHECK(bb == 2 * (cp - 1) * kv);
    /* every rank's compute stream holds cp attention steps per layer forward */
    int steps = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (s->streams[o->stream].rank == 3 && p->sub == SIM_KERNEL_FLASH_FWD && p->kind == SIM_OP_COMPUTE &&
            o->layer == 0 && o->phase == SIM_PHASE_FORWARD)
            steps++;
    }
    CHECK(steps == cp);
    sim_sched_free(s);
}

/* cp=2 needs less activation memory at the peak than cp=1 (the memory
 * check replays the schedule's effects), and the ring's buffers are among
 * those effects. */
static void test_memory(void)
{
    wl_model m = model(8192);
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 4);
    wl_strategy s1 = wl_test_strategy("tp=2,dp=2,mb=1,gb=2,dtype=bf16"),
                s2 = wl_test_strategy("tp=2,cp=2,dp=1,mb=1,gb=1,dtype=bf16");
    wl_memory p1, p2;
    sim_err err;
    CHECK(wl_gpt_check(&m, &s1, mach, &p1, &err) == 0);
    CHECK(wl_gpt_check(&m, &s2, mach, &p2, &err) == 0);
    CHECK(p2.activations < p1.activations);
    sim_machine_free(mach);
    /* the ring's K/V buffers on the compute stream: 2 K/V pairs forward, 4
     * backward (with dK/dV), each allocation released */
    sim_schedule *s = gen(&m, "tp=2,cp=2,dp=1,mb=1,gb=1,dtype=bf16", 4);
    int64_t kv = (int64_t)(m.seq / 2) * 2 * (m.kv_heads / 2) * (m.hidden / m.heads) * 2, net = 0, most = 0;
    int n = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (s->streams[s->ops[i].stream].rank != 0 || p->kind != SIM_OP_MEMORY ||
            strcmp(sim_sched_strname(s, p->name), "cp_ring"))
            continue;
        CHECK(p->sub == SIM_MEM_BUFFERS);
        net += p->bytes;
        most = p->bytes > most ? p->bytes : most;
        n++;
    }
    CHECK(n == 2 * 2 * m.layers); /* forward and backward, allocation and release, per layer */
    CHECK(net == 0 && most == 4 * kv);
    sim_sched_free(s);
}

static void expect_error(const wl_model *m, const char *text, int ngpus, const char *want)
{
    wl_strategy s = wl_test_strategy(text);
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", ngpus);
    sim_err err = {{0}};
    CHECK(wl_gpt_check(m, &s, mach, NULL, &err) < 0);
    CHECK_HAS(err.msg, want);
    sim_machine_free(mach);
}

static void test_errors(void)
{
    wl_model m = model(8192);
    expect_error(&m, "tp=2,cp=2,dp=4,dtype=bf16", 8, "tp*pp*cp*dp = 2*1*2*4 = 16 GPUs");
    wl_model m6 = model(6144);
    expect_error(&m6, "tp=2,cp=3,dtype=bf16", 8, "tp*pp*cp = 2*1*3 = 6 does not divide the 8 GPUs");
    wl_model odd = model(6000); /* 6000 = 16·375: divisible by 2·cp = 16, but not by 32 */
    expect_error(&odd, "cp=16,dtype=bf16", 16, "seq 6000 of cp-test is not divisible by 32");
    expect_error(&m, "cp=2,dp=2,dtype=bf16,attn=unfused", 4, "needs attn=auto or flash");
    expect_error(&m, "cp=2,dp=2,dtype=fp32", 4, "not the unfused attention");
}

int main(void)
{
    test_parse_format();
    test_cp1_identical();
    test_halves();
    test_ring();
    test_memory();
    test_errors();
    return wl_test_done();
}
