/* MoE layers in the main generator (issue 15), against closed forms:
 *   - the dispatch and combine all-to-alls of each MoE layer carry
 *     tokens·top_k·hidden·dtype bytes, of which (ep-1)/ep cross the network
 *     (the all-to-all's own share stays home), forward and backward;
 *     a capacity factor of 0.5 halves them (tokens dropped);
 *   - the experts' grouped GEMMs do 2·tokens·top_k·h·(fc1 + ffn)/tp FLOPs per
 *     layer and micro-batch; the shared expert 2·tokens·h·(fc1 + ffn)/tp;
 *   - the weights and optimizer state per GPU are the hand count: dense
 *     parameters whole (ZeRO-1: sharded over dp), each rank's experts/ep
 *     experts (ZeRO-1: optimizer sharded over dp/ep);
 *   - Mixtral 8x7B has 46.7 B parameters, 12.9 B active;
 *   - the expert gradients are reduced over dp/ep ranks;
 *   - generating twice gives the same schedule;
 *   - bad ep values are errors that say what must divide what. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/gpt.h"
#include "workloads/moe.h"

/* GPT-style: gelu, biases, layernorm, learned positions, tied embeddings */
static wl_model toy(const char *moe)
{
    char json[512];
    snprintf(json, sizeof json, "{\"name\": \"toy-moe\", \"layers\": 4, \"hidden\": 256, \"heads\": 4, \"ffn\": 1024, "
             "\"seq\": 128, \"vocab\": 1000, \"moe\": %s}", moe);
    wl_model m;
    sim_err err;
    if (wl_model_from_json(json, "toy", &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return m;
}

static const char *pname(const sim_schedule *s, const sim_op *op)
{
    const sim_payload *p = &s->payloads[op->payload];
    return p->name >= 0 ? sim_sched_strname(s, p->name) : "";
}

/* Sum over rank r's ops named `name` of bytes (collectives) or GEMM FLOPs. */
static double sum_of(const sim_schedule *s, int r, const char *name, int flops, int *count)
{
    double x = 0;
    *count = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *op = &s->ops[i];
        if (s->streams[op->stream].rank != r || strcmp(pname(s, op), name))
            continue;
        const sim_payload *p = &s->payloads[op->payload];
        x += flops ? 2.0 * (double)p->m * (double)p->n * (double)p->k * (double)(p->batch > 0 ? p->batch : 1)
                   : (double)p->bytes;
        (*count)++;
    }
    return x;
}

static void test_alltoall_and_flops(void)
{
    wl_model m = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0}");
    sim_machine *mach = wl_test_machine(16, 80e9);
    sim_err err;
    for (int tp = 1; tp <= 2; tp++) {
        char text[128];
        snprintf(text, sizeof text, "tp=%d,dp=%d,ep=4,mb=2,gb=%d,dtype=bf16", tp, 16 / tp, 2 * 16 / tp * 3);
        wl_strategy st = wl_test_strategy(text);
        sim_schedule *s = wl_gpt_generate(&m, &st, mach, &err);
        CHECK(s != NULL);
        if (!s)
            continue;
        double tokens = 128.0 * 2, h = 256, d = 2, k = 2;
        int n, nb, nc;
        double disp = sum_of(s, 0, "moe_dispatch", 0, &n);
        double comb = sum_of(s, 0, "moe_combine", 0, &nc);
        double back = sum_of(s, 0, "moe_dispatch_bwd", 0, &nb);
        /* 4 layers x 3 micro-batches, each tokens·k·h·d, (ep-1)/ep of it sent */
        CHECK(n == 12 && nc == 12 && nb == 12);
        CHECK(disp == 12 * tokens * k * h * d && comb == disp && back == disp);
        double sent_per_layer = disp / 12 * 3 / 4;
        CHECK(fabs(sent_per_layer - tokens * k * h * d * 3.0 / 4) < 1e-6);
        /* expert FLOPs: fc1 and fc2, each 2·(tokens·k)·h·ffn/tp */
        double f1 = sum_of(s, 0, "expert_fc1", 1, &n), f2 = sum_of(s, 0, "expert_fc2", 1, &nc);
        CHECK(n == 12 && fabs(f1 + f2 - 12 * 2 * 2 * tokens * k * h * 1024 / tp) < 1);
        /* the all-to-alls run among 4 ranks of the same TP index: ep group of rank 0 */
        const sim_op *a2a = NULL;
        for (uint32_t i = 0; i < s->nops && !a2a; i++)
            if (!strcmp(pname(s, &s->ops[i]), "moe_dispatch"))
                a2a = &s->ops[i];
        CHECK(a2a && s->comms[a2a->arg].nranks == 4);
        for (int j = 0; a2a && j < 4; j++)
            CHECK(s->comms[a2a->arg].ranks[j] == s->streams[a2a->stream].rank + j * tp);
        /* expert gradients over dp/ep replicas; dense over dp */
        int found = 0;
        for (uint32_t i = 0; i < s->nops; i++)
            if (!strcmp(pname(s, &s->ops[i]), "expert_dp_allreduce")) {
                CHECK(s->comms[s->ops[i].arg].nranks == 16 / tp / 4);
                found++;
            }
        CHECK(found == 16);
        sim_schedule *again = wl_gpt_generate(&m, &st, mach, &err);
        CHECK(again && again->nops == s->nops && !memcmp(again->ops, s->ops, sizeof *s->ops * s->nops) &&
              again->npayloads == s->npayloads &&
              !memcmp(again->payloads, s->payloads, sizeof *s->payloads * s->npayloads));
        sim_sched_free(again);
        sim_sched_free(s);
    }
    /* ep=1: every rank holds all experts; their gradients are reduced over
     * the whole gradient group (they were left unreduced once) */
    {
        wl_strategy st1 = wl_test_strategy("tp=1,dp=16,ep=1,mb=2,gb=32,dtype=bf16");
        sim_schedule *s1 = wl_gpt_generate(&m, &st1, mach, &err);
        int found = 0;
        for (uint32_t i = 0; s1 && i < s1->nops; i++)
            if (!strcmp(pname(s1, &s1->ops[i]), "expert_dp_allreduce")) {
                CHECK(s1->comms[s1->ops[i].arg].nranks == 16);
                found++;
            }
        CHECK(s1 && found == 16);
        sim_sched_free(s1);
    }
    /* capacity factor 0.5: half the assignments dropped, half the bytes */
    wl_model c = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0, \"capacity_factor\": 0.5}");
    wl_strategy st = wl_test_strategy("tp=1,dp=16,ep=4,mb=2,gb=32,dtype=bf16");
    sim_schedule *s = wl_gpt_generate(&c, &st, mach, &err);
    int n;
    CHECK(s && sum_of(s, 0, "moe_dispatch", 0, &n) == 4 * 256.0 * 2 * 256 * 2 / 2);
    sim_sched_free(s);
    /* padded to a capacity of 1.5: every slot moves and computes 1.5x the
     * uniform share; padding changes nothing at or below the drop */
    wl_model pad = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0, \"capacity_factor\": 1.5, "
                       "\"pad_to_capacity\": true}");
    s = wl_gpt_generate(&pad, &st, mach, &err);
    int nf;
    CHECK(s && sum_of(s, 0, "moe_dispatch", 0, &n) == 4 * 256.0 * 2 * 256 * 2 * 1.5);
    CHECK(s && fabs(sum_of(s, 0, "expert_fc1", 1, &nf) - 1.5 * 4 * 2 * 256.0 * 2 * 256 * 1024) < 1);
    sim_sched_free(s);
    wl_model half = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0, \"capacity_factor\": 0.5, "
                        "\"pad_to_capacity\": true}");
    s = wl_gpt_generate(&half, &st, mach, &err);
    CHECK(s && sum_of(s, 0, "moe_dispatch", 0, &n) == 4 * 256.0 * 2 * 256 * 2 / 2);
    sim_sched_free(s);
    /* a shared expert of 512 on all tokens beside the routed ones, in MoE
     * layers 1 and 3 (one micro-batch) */
    wl_model sh = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 2, \"first\": 1, \"expert_ffn\": 256, "
                      "\"shared_ffn\": 512}");
    s = wl_gpt_generate(&sh, &st, mach, &err);
    double f = s ? sum_of(s, 0, "shared_fc1", 1, &n) + sum_of(s, 0, "shared_fc2", 1, &n) : 0;
    CHECK(s && n == 2 && fabs(f - 2 * 2 * 2 * 256.0 * 256 * 512) < 1);
    f = s ? sum_of(s, 0, "expert_fc1", 1, &n) : 0; /* fine-grained: expert_ffn 256 */
    CHECK(s && fabs(f - 2 * 2 * (256.0 * 2) * 256 * 256) < 1);
    CHECK(s && sum_of(s, 0, "fc1", 1, &n) > 0 && n == 2); /* layers 0 and 2 stay dense */
    sim_sched_free(s);
    sim_machine_free(mach);
}

/* weights and optimizer state per GPU by hand */
static void test_memory(void)
{
    wl_model m = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0}");
    sim_machine *mach = wl_test_machine(16, 80e9);
    sim_err err;
    double h = 256, E = 8, ep = 4;
    double attn = 3 * h * h + 3 * h + h * h + h + 4 * h + h * E; /* QKV, proj, two norms, router */
    double expert = 2 * h * 1024 + 1024 + h;
    double vp = 1024; /* vocab 1000 padded to 128 */
    double dense = 4 * attn + vp * h + 128 * h + 2 * h, ex = 4 * (E / ep) * expert;
    for (int zero = 0; zero <= 1; zero++) {
        wl_strategy st = wl_test_strategy(zero ? "tp=1,dp=16,ep=4,mb=2,gb=32,dtype=bf16,zero=1"
                                               : "tp=1,dp=16,ep=4,mb=2,gb=32,dtype=bf16");
        wl_memory mem;
        CHECK(wl_gpt_memory(&m, &st, mach, &mem, &err) == 0);
        CHECK(mem.weights == 2 * (dense + ex));
        CHECK(mem.gradients == 4 * (dense + ex)); /* Megatron's fp32 gradients for bf16 */
        double o = zero ? 12 * (ceil(dense / 16) + ceil(ex / 4)) : 12 * (dense + ex);
        CHECK(mem.optimizer == o);
        if (mem.optimizer != o)
            printf("optimizer %.0f want %.0f\n", mem.optimizer, o);
    }
    sim_machine_free(mach);
}

/* ZeRO-3 / FSDP with experts: each MoE layer's experts are all-gathered
 * over their replicas (dp/ep ranks) before the layer runs, forward and
 * backward, and reduce-scattered after its backward, on the FSDP streams
 * with communicators of their own; nothing is reduced after the flush; the
 * experts' weights, gradients and Adam state are sharded at rest. */
static void test_zero3(void)
{
    wl_model m = toy("{\"experts\": 8, \"top_k\": 2, \"every\": 1, \"first\": 0}");
    sim_machine *mach = wl_test_machine(16, 80e9);
    sim_err err;
    double h = 256, E = 8, expert = 2 * h * 1024 + 1024 + h;
    wl_memory peak[2];
    for (int ep = 1; ep <= 4; ep *= 4) {
        char text[96];
        snprintf(text, sizeof text, "tp=1,dp=16,ep=%d,mb=2,gb=64,dtype=bf16,zero=3", ep);
        wl_strategy st = wl_test_strategy(text);
        sim_schedule *s = wl_gpt_generate(&m, &st, mach, &err);
        CHECK(s != NULL);
        if (!s)
            continue;
        double layer = E / ep * expert; /* one MoE layer's experts on a rank */
        int nag, nrs, nar;
        double ag = sum_of(s, 0, "fsdp_expert_allgather", 0, &nag);
        double rs = sum_of(s, 0, "fsdp_expert_reducescatter", 0, &nrs);
        sum_of(s, 0, "expert_dp_allreduce", 0, &nar);
        /* 4 layers x 2 micro-batches, gathered for forward and backward */
        CHECK(nag == 16 && ag == 16 * layer * 2);
        CHECK(nrs == 8 && rs == 8 * layer * 2); /* bf16 gradients (grad_reduce follows the dtype) */
        CHECK(nar == 0);
        for (uint32_t i = 0; i < s->nops; i++)
            if (!strcmp(pname(s, &s->ops[i]), "fsdp_expert_allgather") ||
                !strcmp(pname(s, &s->ops[i]), "fsdp_expert_reducescatter"))
                CHECK(s->comms[s->ops[i].arg].nranks == 16 / ep);
        wl_memory one;
        wl_strategy st1 = wl_test_strategy(ep == 1 ? "tp=1,dp=16,ep=1,mb=2,gb=64,dtype=bf16,zero=1"
                                                   : "tp=1,dp=16,ep=4,mb=2,gb=64,dtype=bf16,zero=1");
        CHECK(wl_gpt_memory(&m, &st, mach, &peak[ep == 4], &err) == 0 && wl_gpt_memory(&m, &st1, mach, &one, &err) == 0);
        CHECK(peak[ep == 4].weights < one.weights && peak[ep == 4].optimizer <= one.optimizer); /* zero=1 shards Adam too */
        sim_sched_free(s);
    }
    /* at rest a rank holds the same share of the experts at ep=1 and ep=4
     * (8/16 or 2/4 of an expert per layer); at the peak, two layers'
     * gathered experts (the one running and the one prefetched): 8 or 2 each */
    CHECK(peak[0].weights - peak[1].weights == 2 * 2 * (8 - 2) * expert);
    sim_machine_free(mach);
}

static void test_params(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_load("mixtral-8x7b", &m, &err) == 0);
    CHECK(fabs(wl_moe_total_params("mixtral-8x7b", &m) / 1e9 - 46.7) < 0.05);
    CHECK(fabs(wl_moe_active_params("mixtral-8x7b", &m) / 1e9 - 12.9) < 0.05);
}

static void test_errors(void)
{
    wl_model m = toy("{\"experts\": 8, \"top_k\": 2}");
    sim_machine *mach = wl_test_machine(16, 80e9);
    sim_err err;
    wl_strategy st = wl_test_strategy("tp=1,dp=16,ep=3");
    CHECK(wl_gpt_check(&m, &st, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "ep=3 does not divide the 8 experts");
    st = wl_test_strategy("tp=4,dp=4,ep=8");
    CHECK(wl_gpt_check(&m, &st, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "ep=8 does not divide dp = 4");
    st = wl_test_strategy("tp=1,dp=16,ep=2,zero=2");
    CHECK(wl_gpt_check(&m, &st, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "ZeRO-2 is not modelled for expert parameters");
    st = wl_test_strategy("tp=1,dp=16,ep=2,schedule=oases");
    CHECK(wl_gpt_check(&m, &st, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "schedule=megatron");
    wl_model dense;
    CHECK(wl_model_load("gpt-3072", &dense, &err) == 0);
    st = wl_test_strategy("tp=1,dp=16,ep=2");
    CHECK(wl_gpt_check(&dense, &st, mach, NULL, &err) == -1);
    CHECK_HAS(err.msg, "no mixture-of-experts layers");
    wl_strategy bad;
    wl_strategy_default(&bad);
    CHECK(wl_strategy_parse("ep=0", &bad, &err) == -1);
    CHECK_HAS(err.msg, "ep");
    CHECK(wl_model_from_json("{\"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq\": 8, \"vocab\": 10, \"moe\": "
                             "{\"experts\": 4, \"shared\": 1}}", "bad.json", &dense, &err) == -1);
    CHECK_HAS(err.msg, "bad.json: moe: unknown field \"shared\"");
    CHECK(wl_model_from_json("{\"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq\": 8, \"vocab\": 10, \"moe\": "
                             "{\"experts\": 4, \"pad_to_capacity\": true}}", "bad.json", &dense, &err) == -1);
    CHECK_HAS(err.msg, "bad.json: moe.pad_to_capacity: padding needs a capacity");
    CHECK(wl_model_from_json("{\"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq\": 8, \"vocab\": 10, \"moe\": "
                             "{\"experts\": 4, \"capacity_factor\": 1, \"pad_to_capacity\": 1}}", "bad.json", &dense,
                             &err) == -1);
    CHECK_HAS(err.msg, "bad.json: moe.pad_to_capacity: expected true or false");
    sim_machine_free(mach);
}

int main(void)
{
    test_alltoall_and_flops();
    test_memory();
    test_zero3();
    test_params();
    test_errors();
    return wl_test_failures ? 1 : 0;
}
