/* test_dp_oracles.c — data-parallel semantics as Megatron-Core runs them
 * (workloads/gpt.c, "data-parallel buckets"):
 *  - bucket=auto follows Megatron-Core's rule: max(40M, 1M·dp) parameters
 *    with overlap-grad-reduce on the first pipeline stage's first chunk, one
 *    bucket otherwise (later stages, later chunks, no overlap); DeepSpeed's
 *    5e8 elements for ZeRO-2;
 *  - the buckets of a stage carry all its gradients, in backprop order, the
 *    distributed optimizer's word embedding in a bucket of its own, each
 *    overlapped bucket launched after the backward kernel that completes it;
 *  - param_overlap (overlap-param-gather): the all-gathers run at the start
 *    of the step, first layers' bucket first, and a star-platform oracle:
 *    with compute far above communication only the embedding's buckets are
 *    exposed, so the step is shorter by the other buckets' all-gather time. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../sim/star.h"
#include "sim/engine.h"
#include "wl_test.h"
#include "workloads/gpt.h"

static sim_schedule *gen(const wl_model *m, const char *text, const sim_machine *mach)
{
    wl_strategy s = wl_test_strategy(text);
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    if (!sc)
        fprintf(stderr, "%s: %s\n", text, err.msg);
    CHECK(sc != NULL);
    if (sc)
        CHECK(sim_sched_check(sc, &err) == 0);
    return sc;
}

static const sim_stream *stream_of(const sim_schedule *s, int rank, const char *name)
{
    for (uint32_t i = 0; i < s->nstreams; i++)
        if (s->streams[i].rank == rank && strcmp(sim_sched_strname(s, s->streams[i].name), name) == 0)
            return &s->streams[i];
    return NULL;
}

static const char *op_name(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, sim_sched_payload_of(s, op)->name);
}

/* The ops named `name` on a stream, their bytes and count. */
static int ops_named(const sim_schedule *s, const sim_stream *st, const char *name, double *bytes, double *last)
{
    int n = 0;
    *bytes = 0;
    for (uint32_t i = 0; st && i < st->nops; i++)
        if (strcmp(op_name(s, st->ops[i]), name) == 0) {
            n++;
            *bytes += (double)sim_sched_payload_of(s, st->ops[i])->bytes;
            if (last)
                *last = (double)sim_sched_payload_of(s, st->ops[i])->bytes;
        }
    return n;
}

static void test_bucket_rule(void)
{
    wl_strategy s = wl_test_strategy("dp_overlap=1");
    CHECK(wl_gpt_bucket_bytes(&s, 8, 4, 0, 0) == 40000000ll * 4);
    CHECK(wl_gpt_bucket_bytes(&s, 64, 2, 0, 0) == 64000000ll * 2); /* max(40M, 1M·dp) */
    CHECK(wl_gpt_bucket_bytes(&s, 8, 4, 1, 0) == INT64_MAX);       /* later stages: one bucket */
    CHECK(wl_gpt_bucket_bytes(&s, 8, 4, 0, 1) == INT64_MAX);       /* later model chunks */
    s = wl_test_strategy("dp_overlap=0");
    CHECK(wl_gpt_bucket_bytes(&s, 8, 4, 0, 0) == INT64_MAX); /* no overlap: the whole buffer */
    s = wl_test_strategy("zero=2");
    CHECK(wl_gpt_bucket_bytes(&s, 8, 2, 0, 0) == 500000000ll * 2);
    s = wl_test_strategy("dp_overlap=1,bucket=25");
    CHECK(wl_gpt_bucket_bytes(&s, 8, 4, 1, 1) == 25ll << 20);
}

/* gpt-1.3b on 8 GPUs: Megatron's buckets on rank 0. */
static void test_megatron_buckets(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_load("gpt-1.3b", &m, &err) == 0);
    sim_machine *mach = wl_test_machine(8, 0);
    double h = 2048, vp = 50304, layer = 12 * h * h + 13 * h;
    double P = 24 * layer + vp * h + 2048 * h + 2 * h; /* pp = 1: everything on rank 0 */
    double bytes, last = 0;

    /* DDP, fp16, overlap: ceil(P / 40M) buckets of 40M parameters (fp16 gradients) */
    sim_schedule *s = gen(&m, "dp=8,gb=8,dtype=fp16,dp_overlap=1", mach);
    int n = ops_named(s, stream_of(s, 0, "dp"), "dp_allreduce", &bytes, &last);
    CHECK(n == (int)ceil(P / 40e6));
    CHECK(bytes == 2 * P);
    CHECK(last == 2 * (P - (n - 1) * 40e6));
    sim_sched_free(s);

    /* without overlap: one bucket; bf16 gradients reduced in fp32 */
    s = gen(&m, "dp=8,gb=8,dtype=bf16", mach);
    n = ops_named(s, stream_of(s, 0, "dp"), "dp_allreduce", &bytes, NULL);
    CHECK(n == 1 && bytes == 4 * P);
    sim_sched_free(s);
    s = gen(&m, "dp=8,gb=8,dtype=bf16,grad_reduce=bf16", mach);
    n = ops_named(s, stream_of(s, 0, "dp"), "dp_allreduce", &bytes, NULL);
    CHECK(n == 1 && bytes == 2 * P);
    sim_sched_free(s);

    /* distributed optimizer: reduce-scatter, the word embedding alone in the
     * last bucket; the all-gather of bf16 weights after the optimizer in the
     * same buckets */
    s = gen(&m, "dp=8,gb=8,dtype=bf16,zero=1,dp_overlap=1", mach);
    const sim_stream *d = stream_of(s, 0, "dp");
    n = ops_named(s, d, "dp_reducescatter", &bytes, &last);
    CHECK(bytes == 4 * P && last == 4 * vp * h);
    CHECK(n == (int)ceil((P - vp * h) / 40e6) + 1);
    int nag = ops_named(s, d, "dp_allgather", &bytes, NULL);
    CHECK(nag == n && bytes == 2 * P);
    sim_sched_free(s);
    sim_machine_free(mach);

    /* pp = 2, interleaved: only stage 0's first chunk is bucketed */
    mach = wl_test_machine(16, 0);
    s = gen(&m, "pp=2,dp=8,gb=32,dtype=bf16,dp_overlap=1,pipeline=interleaved,vstages=2", mach);
    d = stream_of(s, 0, "dp");
    n = ops_named(s, d, "dp_allreduce", &bytes, NULL);
    CHECK(n == (int)ceil((6 * layer + vp * h + 2048 * h) / 40e6) + 1);
    CHECK(bytes == 4 * (12 * layer + vp * h + 2048 * h));
    d = stream_of(s, 8, "dp");
    n = ops_named(s, d, "dp_allreduce", &bytes, NULL);
    CHECK(n == 2 && bytes == 4 * (12 * layer + vp * h + 2 * h));
    sim_sched_free(s);
    sim_machine_free(mach);
}

/* Each overlapped bucket waits for the backward kernel of the last
 * micro-batch that completes it: here buckets of one layer's gradients,
 * shifted by the final layer norm's 2h, so bucket k < 4 is complete after
 * the backward of layer 3-k. */
static void test_overlap_order(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(2, 0);
    double h = 64, layer = 12 * h * h + 13 * h;
    char text[128];
    snprintf(text, sizeof text, "dp=2,gb=4,dtype=fp32,dp_overlap=1,bucket=%.17g", 4 * layer / 1048576.0);
    sim_schedule *s = gen(&m, text, mach);
    const sim_stream *d = stream_of(s, 0, "dp");
    int k = 0;
    for (uint32_t i = 0; d && i < d->nops; i++) {
        uint32_t op = d->ops[i];
        CHECK(s->ops[op].ndeps == 1);
        const sim_op *dep = &s->ops[s->deps[s->ops[op].dep_first]];
        CHECK(dep->micro == 1);
        /* buckets 0..3 end inside layers 3..0 (shifted by the final LN's 2h),
         * buckets 4 and 5 hold layer 0's tail and the embeddings (32h + 1024h
         * parameters): after embed_bwd */
        if (k < 4)
            CHECK(dep->layer == 3 - k);
        else
            CHECK(dep->layer == -1);
        k++;
    }
    CHECK(k == 6);
    sim_sched_free(s);
    sim_machine_free(mach);
}

static void fails_if_far(double got, double want, double rel, const char *what)
{
    if (near(got, want, rel, what))
        wl_test_failures++;
}

/* overlap-param-gather on 2 GPUs (star, latency 0: an all-gather of X
 * bytes takes X/(2B)), compute far above communication: the step's
 * all-gathers run at its start, back to back, the word embedding's alone
 * first; the embedding kernel waits for the next one (the positions') and
 * the first layer for the last of its own, so those buckets are exposed
 * and the others run behind the forward.  Without the overlap all of them
 * follow the optimizer step.  So the step is shorter by the all-gather
 * time of every bucket gathered after the first layer's. */
static void test_param_overlap(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_from_json("{\"layers\":8,\"hidden\":512,\"heads\":8,\"seq\":512,\"vocab\":4096}", "u", &m, &err) == 0);
    double bw = 2e11;
    sim_machine *mach = star_flops_machine(2, bw, 50e12, 1);
    const char *base = "dp=2,mb=2,gb=8,dtype=fp32,zero=1,dp_overlap=1,bucket=3";
    char with[160];
    snprintf(with, sizeof with, "%s,param_overlap=1", base);
    sim_result r0, r1;
    sim_schedule *s1 = NULL;
    if (wl_test_simulate(&m, base, mach, &r0, NULL) || wl_test_simulate(&m, with, mach, &r1, &s1)) {
        wl_test_failures++;
        sim_machine_free(mach);
        return;
    }
    /* the step's all-gathers in the order they run; which ones the
     * embedding kernel and the first layer's first kernel wait for */
    const sim_stream *d = stream_of(s1, 0, "dp"), *c = stream_of(s1, 0, "compute");
    uint32_t emb_dep = UINT32_MAX, l0_dep = UINT32_MAX;
    for (uint32_t i = 0; c && i < c->nops; i++) {
        const sim_op *o = &s1->ops[c->ops[i]];
        if (sim_sched_payload_of(s1, c->ops[i])->kind != SIM_OP_COMPUTE || o->ndeps == 0)
            continue;
        uint32_t dep = s1->deps[o->dep_first + o->ndeps - 1];
        if (strcmp(op_name(s1, c->ops[i]), "embed") == 0 && emb_dep == UINT32_MAX)
            emb_dep = dep;
        if (o->layer == 0 && o->micro == 0 && l0_dep == UINT32_MAX)
            l0_dep = dep;
    }
    double all = 0, exposed = 0;
    int k = 0, kemb = -1, kl0 = -1;
    for (uint32_t i = 0; d && i < d->nops; i++) {
        uint32_t op = d->ops[i];
        if (strcmp(op_name(s1, op), "dp_param_allgather"))
            continue;
        CHECK(s1->ops[op].ndeps == 0); /* waits for the previous step's optimizer only */
        CHECK(i == (uint32_t)k);        /* before every reduce-scatter */
        double b = (double)sim_sched_payload_of(s1, op)->bytes;
        if (k == 0)
            CHECK(b == 4.0 * 4096 * 512); /* the word embedding, alone */
        if (op == emb_dep)
            kemb = k;
        if (kl0 < 0)
            exposed += b;
        if (op == l0_dep)
            kl0 = k;
        all += b;
        k++;
    }
    CHECK(kemb == 1 && kl0 > kemb && k > kl0 + 8);
    double P = 4.0 * (8 * (12 * 512.0 * 512 + 13 * 512) + 4096.0 * 512 + 512.0 * 512 + 2 * 512);
    CHECK(all == P);
    printf("param_overlap: %d all-gathers, %d exposed before the first layer\n", k, kl0 + 1);
    fails_if_far(r0.iteration_s - r1.iteration_s, (all - exposed) / (2 * bw), 0.01,
                 "param_overlap saves the all-gathers after the first layer's");
    sim_result_free(&r0);
    sim_result_free(&r1);
    sim_sched_free(s1);
    sim_machine_free(mach);
}

/* The new keys print in the canonical form and read back the same. */
static void test_keys(void)
{
    wl_strategy s = wl_test_strategy("tp=2,dtype=bf16,zero=1,dp_overlap=1,param_overlap=1,grad_reduce=bf16,sp=1,"
                                     "tp_overlap_comm=1,bucket=auto");
    char buf[256], buf2[256];
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "tp=2,pp=1,dp=auto,mb=1,gb=auto,dtype=bf16,recompute=none,bucket=auto,dp_overlap=1,param_overlap=1,"
                   "grad_reduce=bf16,zero=1,sp=1,tp_overlap_comm=1");
    wl_strategy back = wl_test_strategy(buf);
    wl_strategy_format(&back, buf2, sizeof buf2);
    CHECK_STR(buf2, buf);
    sim_err err;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("grad_reduce=tf32", &s, &err) == -1);
    CHECK_HAS(err.msg, "grad_reduce: expected auto, fp32, bf16 or fp16");
    CHECK(wl_strategy_parse("param_overlap=yes", &s, &err) == -1);
    CHECK_HAS(err.msg, "param_overlap: expected 0 or 1");
    /* impossible combinations are explained */
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(4, 0);
    wl_memory mem;
    s = wl_test_strategy("dp=4,gb=4,zero=1,param_overlap=1");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "it needs zero=1 and dp_overlap=1");
    s = wl_test_strategy("dp=4,gb=4,dtype=bf16,grad_reduce=fp16");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, "grad_reduce=fp16: gradients are reduced in fp32 or in the model's dtype (bf16)");
    sim_machine_free(mach);
}

int main(void)
{
    test_keys();
    test_bucket_rule();
    test_megatron_buckets();
    test_overlap_order();
    test_param_overlap();
    return wl_test_done();
}
