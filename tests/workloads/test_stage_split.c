/* test_stage_split.c — uneven pipeline stages (strategy keys stage_split and
 * pp_layers) and the gradients' collective under ZeRO-1 (grad_collective):
 *  - parsing, the canonical form and its round trip, and the errors;
 *  - which layers each stage runs, read back from the generated schedule
 *    (the layer tags of its operations), for the embedding split with and
 *    without interleaving, a pp_layers list, and Megatron-Core's
 *    embedding-only first virtual stage;
 *  - per-stage memory in closed form: the tiny GPT (weights and 1F1B
 *    activations per stage), BLOOM-176B's production layout (tp 4, pp
 *    12: 5 + embedding, 6 x 10, 5 + embedding, the tr11 README's split) and
 *    Llama 3.1 405B's 126 layers over pp 8 and 16, interleaved (the NeMo
 *    rows' layouts);
 *  - simulated on the uniform star platform: each stage's compute follows
 *    its layers, and ZeRO-1 with all-reduced gradients moves 1.5x the bytes
 *    of reduce-scatter + all-gather. */
#include <math.h>
#include <stdio.h>

#include "../sim/star.h"
#include "wl_test.h"
#include "workloads/gpt.h"

/* tiny, fp32, mb=1: one layer's kept activations, a stage message, the logits
 * (as in test_pipeline.c) */
static const double A = 2048.0 * 66 + 4 * 1024.0 * 9;
static const double LOGITS = 32.0 * 1024 * 4;

static void test_parse(void)
{
    sim_err err;
    char buf[512];
    wl_strategy s = wl_test_strategy("pp=12,stage_split=embedding_as_layer");
    CHECK(s.stage_split == WL_SPLIT_EMBEDDING && s.npp_layers == 0);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",stage_split=embedding_as_layer");
    wl_strategy t = wl_test_strategy("pp=12,stage_split=type:transformer|embedding"); /* DeepSpeed's spelling */
    CHECK(memcmp(&s, &t, sizeof s) == 0);

    s = wl_test_strategy("pp=12,pp_layers=5/6*10/5");
    CHECK(s.stage_split == WL_SPLIT_LIST && s.npp_layers == 12);
    CHECK(s.pp_layers[0] == 5 && s.pp_layers[1] == 6 && s.pp_layers[10] == 6 && s.pp_layers[11] == 5);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",pp_layers=5/6*10/5");
    wl_strategy_default(&t);
    CHECK(wl_strategy_parse(buf, &t, &err) == 0);
    CHECK(memcmp(&s, &t, sizeof s) == 0);
    s = wl_test_strategy("pp=4,pp_layers=0/2/2/0");
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",pp_layers=0/2/2/0"); /* runs of two are written out */

    /* the last split given wins, and leaves no trace of the other */
    s = wl_test_strategy("pp=2,pp_layers=1/3,stage_split=uniform");
    t = wl_test_strategy("pp=2");
    CHECK(memcmp(&s, &t, sizeof s) == 0);

    s = wl_test_strategy("dp=4,zero=1,grad_collective=allreduce");
    CHECK(s.grad_coll == WL_GRAD_ALLREDUCE);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",grad_collective=allreduce");

    static const struct {
        const char *s, *msg;
    } bad[] = {
        {"pp_layers=5/x", "pp_layers: expected the layers of each virtual stage"},
        {"pp_layers=5/", "pp_layers: expected the layers of each virtual stage"},
        {"pp_layers=-1/3", "pp_layers: expected the layers of each virtual stage"},
        {"pp_layers=5;6", "expected '/' between the virtual stages' layers, got ';'"},
        {"pp_layers=6*0", "expected a repeat count 1-512 after '*'"},
        {"pp_layers=1*300/1*300", "more than 512 virtual stages"},
        {"stage_split=parameters", "stage_split: expected uniform"},
        {"grad_collective=ring", "grad_collective: expected auto, allreduce"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        wl_strategy_default(&s);
        CHECK(wl_strategy_parse(bad[k].s, &s, &err) == -1);
        CHECK_HAS(err.msg, bad[k].msg);
    }
}

/* The smallest and largest layer tag of rank `rank`'s operations, and how
 * many distinct layers it ran (layers < 64). */
static void layers_of(const sim_schedule *sc, int rank, int *lo, int *hi, int *n, unsigned long long *mask)
{
    *mask = 0;
    for (uint32_t i = 0; i < sc->nops; i++)
        if (sim_sched_rank_of(sc, i) == rank && sc->ops[i].layer >= 0 && sc->ops[i].layer < 64)
            *mask |= 1ull << sc->ops[i].layer;
    *lo = 64;
    *hi = -1;
    *n = 0;
    for (int l = 0; l < 64; l++)
        if (*mask >> l & 1) {
            *lo = *lo < l ? *lo : l;
            *hi = l;
            (*n)++;
        }
}

/* Layers per stage: mask of the layers each of the pp ranks (tp = dp = 1) runs. */
static void check_layers(int L, const char *strategy, int pp, const unsigned long long *want)
{
    wl_model m = wl_test_tiny(L);
    sim_machine *mach = wl_test_machine(pp, 0);
    sim_schedule *sc = wl_test_generate(&m, strategy, mach);
    for (int r = 0; r < pp; r++) {
        int lo, hi, n;
        unsigned long long got;
        layers_of(sc, r, &lo, &hi, &n, &got);
        if (got != want[r])
            fprintf(stderr, "%s, L=%d: stage %d runs layers %#llx, want %#llx\n", strategy, L, r, got, want[r]);
        CHECK(got == want[r]);
    }
    sim_sched_free(sc);
    sim_machine_free(mach);
}

#define RUN(a, b) (((1ull << ((b) + 1)) - 1) & ~((1ull << (a)) - 1)) /* layers a..b */

static void test_layers(void)
{
    /* (10 + 2) / 4 = 3 units: the embedding and 2 layers, 3, 3, 2 and the output layer */
    unsigned long long emb[4] = {RUN(0, 1), RUN(2, 4), RUN(5, 7), RUN(8, 9)};
    check_layers(10, "pp=4,gb=8,stage_split=embedding_as_layer", 4, emb);
    /* the same split given as a list; and another one */
    check_layers(10, "pp=4,gb=8,pp_layers=2/3/3/2", 4, emb);
    unsigned long long list[4] = {RUN(0, 0), RUN(1, 3), RUN(4, 6), RUN(7, 9)};
    check_layers(10, "pp=4,gb=8,pp_layers=1/3/3/3", 4, list);
    /* uniform stays L/pp in order */
    unsigned long long uni[4] = {RUN(0, 1), RUN(2, 3), RUN(4, 5), RUN(6, 7)};
    check_layers(8, "pp=4,gb=8", 4, uni);
    /* interleaved, 14 layers over 4 x 2 virtual stages: (14 + 2) / 8 = 2
     * units; virtual stage k = chunk·4 + stage runs the k-th run: 1, 2 x 6, 1 */
    unsigned long long il[4] = {RUN(0, 0) | RUN(7, 8), RUN(1, 2) | RUN(9, 10), RUN(3, 4) | RUN(11, 12),
                                RUN(5, 6) | RUN(13, 13)};
    check_layers(14, "pp=4,gb=8,pipeline=interleaved,vstages=2,stage_split=embedding_as_layer", 4, il);
    /* Megatron-Core's case of one unit per virtual stage: the first virtual
     * stage is the embedding alone, the last the output layer alone */
    unsigned long long one[4] = {RUN(3, 3), RUN(0, 0) | RUN(4, 4), RUN(1, 1) | RUN(5, 5), RUN(2, 2)};
    check_layers(6, "pp=4,gb=8,pipeline=interleaved,vstages=2,stage_split=embedding_as_layer", 4, one);
}

static void expect_error(int L, const char *strategy, int gpus, const char *msg)
{
    wl_model m = wl_test_tiny(L);
    sim_machine *mach = wl_test_machine(gpus, 0);
    wl_strategy s = wl_test_strategy(strategy);
    sim_err err;
    wl_memory mem;
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == -1);
    CHECK_HAS(err.msg, msg);
    sim_machine_free(mach);
}

static void test_errors(void)
{
    expect_error(10, "pp=4,gb=8", 4, "pp=4 does not divide the 10 layers of tiny (uneven stages: stage_split=");
    expect_error(9, "pp=4,gb=8,stage_split=embedding_as_layer", 4,
                 "stage_split=embedding_as_layer: the 9 layers and the 2 embeddings (11 units) do not divide into the "
                 "4 virtual stages of pp=4 x vstages=1");
    expect_error(14, "pp=4,gb=8,pipeline=interleaved,vstages=3,stage_split=embedding_as_layer", 4,
                 "(16 units) do not divide into the 12 virtual stages of pp=4 x vstages=3");
    expect_error(10, "pp=4,gb=8,pp_layers=5/5", 4, "pp_layers gives 2 virtual stages, but pp=4 x vstages=1 has 4");
    expect_error(10, "pp=4,gb=8,pp_layers=2/3/3/3", 4, "pp_layers adds up to 11 layers, but model tiny has 10");
    expect_error(8, "pp=2,gb=8,pipeline=interleaved,vstages=2,pp_layers=2/2/2/2/2", 2, "pp_layers gives 5");
    expect_error(8, "dp=4,gb=8,zero=2,grad_collective=allreduce", 4,
                 "grad_collective=allreduce: zero=2 keeps only this rank's shard");
    expect_error(8, "dp=4,gb=8,fsdp=full,grad_collective=allreduce", 4, "grad_collective=allreduce: fsdp keeps");
    expect_error(8, "dp=4,gb=8,grad_collective=reducescatter", 4,
                 "grad_collective=reducescatter needs sharded optimizer state");
    expect_error(8, "dp=4,gb=8,zero=1,dp_overlap=1,param_overlap=1,grad_collective=allreduce", 4,
                 "does not go with grad_collective=allreduce");
}

/* Weights and 1F1B activations per stage, tiny, fp32, pp=4, gb=8, mb=1,
 * (10 + 2)/4 units: stage i keeps (4 - i) micro-batches of its layers. */
static void test_memory_tiny(void)
{
    wl_model m = wl_test_tiny(10);
    sim_machine *mach = wl_test_machine(4, 0);
    sim_err err;
    wl_memory mem[4];
    wl_strategy s = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,stage_split=embedding_as_layer");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    double h = 64, layer = 12 * h * h + 13 * h, emb = 1024 * h, pos = 32 * h, norm = 2 * h;
    int layers[4] = {2, 3, 3, 2};
    double root[4] = {emb + pos, 0, 0, norm + emb}; /* the last stage's own copy of the tied embedding */
    for (int i = 0; i < 4; i++) {
        double w = 4 * (layers[i] * layer + root[i]);
        double act = (4 - i) * layers[i] * A + (i == 3 ? LOGITS : 0);
        if (mem[i].weights != w || mem[i].activations != act)
            fprintf(stderr, "stage %d: weights %.0f want %.0f, activations %.0f want %.0f\n", i, mem[i].weights, w,
                    mem[i].activations, act);
        CHECK(mem[i].weights == w);
        CHECK(mem[i].optimizer == 2 * w); /* fp32 Adam: 8 bytes per parameter */
        CHECK(mem[i].activations == act);
    }
    sim_machine_free(mach);
}

/* BLOOM-176B as trained (tr11-176B-ml README): tp 4, pp 12, dp 8, mb 2, gb
 * 2048, bf16, ZeRO-1 with fp32 gradients.  Per TP rank a layer holds (12h² +
 * 7h)/4 split and 6h replicated parameters; the word embeddings 250880/4 · h
 * on stages 0 and 11, the embedding norm on stage 0 and the final norm on
 * stage 11 (2h each).  The README: "pp rank 0: [embed | 5 transformer
 * blocks], ranks 1-10: 6, rank 11: [5 transformer blocks | embed] ... each
 * gpu has about the same amount of memory used". */
static void test_memory_bloom(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_load("bloom-176b", &m, &err) == 0);
    sim_machine *mach = wl_test_machine(384, 0);
    wl_strategy s = wl_test_strategy("tp=4,pp=12,dp=8,mb=2,gb=2048,dtype=bf16,recompute=full,zero=1,"
                                     "grad_collective=allreduce,stage_split=embedding_as_layer");
    wl_memory mem[12];
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
    double h = 14336, layer = (12 * h * h + 7 * h) / 4 + 6 * h, emb = 250880.0 / 4 * h;
    CHECK(layer == 616673792.0);
    double P[12];
    for (int i = 0; i < 12; i++)
        P[i] = i == 0 || i == 11 ? 5 * layer + emb + 2 * h : 6 * layer;
    CHECK(P[0] == 3982551552.0 && P[5] == 3700042752.0);
    for (int i = 0; i < 12; i++) {
        if (mem[i].weights != 2 * P[i] || mem[i].gradients != 4 * P[i])
            fprintf(stderr, "bloom stage %d: weights %.0f want %.0f\n", i, mem[i].weights, 2 * P[i]);
        CHECK(mem[i].weights == 2 * P[i]);
        CHECK(mem[i].gradients == 4 * P[i]); /* BF16_Optimizer: fp32 gradients, not sharded */
        CHECK(mem[i].optimizer == 12 * ceil(P[i] / 8));
    }
    /* the first and last stages within 8 % of the others' parameters, where
     * a uniform split (not possible: 70 / 12) would put a whole embedding on top */
    CHECK(P[0] / P[5] < 1.08);
    /* uniform is refused, and says what to use */
    s = wl_test_strategy("tp=4,pp=12,dp=8,mb=2,gb=2048,dtype=bf16");
    CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == -1);
    CHECK_HAS(err.msg, "pp=12 does not divide the 70 layers of bloom-176b");
    sim_machine_free(mach);
}

/* Llama 3.1 405B's 126 layers under Megatron-Bridge's recipe
 * (llama31_405b_pretrain_config: account_for_embedding_in_pipeline_split
 * and account_for_loss_in_pipeline_split) at the NeMo rows' layouts: pp 8 x
 * vp 8 gives 128 / 64 = 2 units per virtual stage, so stages 0 and 7 hold
 * 15 layers (one chunk of 1) and the others 16; pp 16 x vp 8 one unit each,
 * the first virtual stage the embedding alone: 7, 8 x 14, 7.  Per TP rank
 * (tp 8) a layer holds (h(h + 2·1024) + h² + 3·53248·h)/8 + 2h (GQA with 8
 * K/V heads of 128, SwiGLU, RMSNorm, no biases); the untied embeddings
 * 129024/8 · h on stage 0, the output layer and final norm on the last. */
static void test_memory_llama405b(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_load("llama3.1-405b", &m, &err) == 0);
    double h = 16384, layer = (h * (h + 2 * 1024) + h * h + 3 * 53248 * h) / 8 + 2 * h, emb = 129024.0 / 8 * h;
    static const struct {
        int pp, gb, end, mid; /* layers on the first and last stage, and on the others */
    } c[] = {{8, 8, 15, 16}, {16, 16, 7, 8}};
    for (int k = 0; k < 2; k++) {
        sim_machine *mach = wl_test_machine(8 * c[k].pp, 0);
        char text[160];
        snprintf(text, sizeof text, "tp=8,pp=%d,mb=1,gb=%d,dtype=bf16,pipeline=interleaved,vstages=8,"
                 "stage_split=embedding_as_layer", c[k].pp, c[k].gb);
        wl_strategy s = wl_test_strategy(text);
        wl_memory mem[16];
        CHECK(wl_gpt_memory(&m, &s, mach, mem, &err) == 0);
        for (int i = 0; i < c[k].pp; i++) {
            int first = i == 0, last = i == c[k].pp - 1;
            double P = (first || last ? c[k].end : c[k].mid) * layer + (first ? emb : 0) + (last ? emb + h : 0);
            if (mem[i].weights != 2 * P)
                fprintf(stderr, "405b pp=%d stage %d: weights %.0f want %.0f\n", c[k].pp, i, mem[i].weights, 2 * P);
            CHECK(mem[i].weights == 2 * P);
        }
        sim_machine_free(mach);
    }
}

/* Compute per stage on the star platform (kernels cost their FLOPs only,
 * communication nearly free): stage i's compute is its layers' share (the
 * embedding and the 128-entry logits add ~1 %).  The step: the busiest
 * stages (3 layers) run m forward-backward passes after stage 0's first
 * forward and before its last backward (2 layers each way, backward twice
 * the forward): >= (2/3 + 8·3 + 4/3) layer passes; and no slower than a
 * uniform 12-layer pipeline (3 per stage), whose every operation takes at
 * least as long in the same order; the list giving the same split is the
 * same schedule. */
static int test_simulated_split(void)
{
    int fails = 0;
    wl_model m, m12;
    sim_err err;
    const char *json = "{\"name\":\"u\",\"layers\":10,\"hidden\":512,\"heads\":8,\"ffn\":2048,\"seq\":128,\"vocab\":128}";
    const char *json12 = "{\"name\":\"u\",\"layers\":12,\"hidden\":512,\"heads\":8,\"ffn\":2048,\"seq\":128,\"vocab\":128}";
    if (wl_model_from_json(json, "u.json", &m, &err) || wl_model_from_json(json12, "u12.json", &m12, &err))
        abort();
    sim_machine *mach = star_flops_machine(4, 1e15, 100e12, 1);
    sim_result r, l, u;
    if (wl_test_simulate(&m, "pp=4,mb=1,gb=8,dtype=fp32,stage_split=embedding_as_layer", mach, &r, NULL) ||
        wl_test_simulate(&m, "pp=4,mb=1,gb=8,dtype=fp32,pp_layers=2/3*2/2", mach, &l, NULL) ||
        wl_test_simulate(&m12, "pp=4,mb=1,gb=8,dtype=fp32", mach, &u, NULL)) {
        sim_machine_free(mach);
        return 1;
    }
    double tau = r.rank[1].compute_s / 3 / 8; /* one layer's forward and backward */
    fails += near(r.rank[0].compute_s / r.rank[1].compute_s, 2.0 / 3, 0.02, "stage 0 / stage 1 compute (2 of 3 layers)");
    fails += near(r.rank[2].compute_s / r.rank[1].compute_s, 1.0, 1e-4, "stage 2 / stage 1 compute (3 layers each)");
    fails += near(r.rank[3].compute_s / r.rank[1].compute_s, 2.0 / 3, 0.02, "stage 3 / stage 1 compute (2 of 3)");
    fails += near(l.iteration_s, r.iteration_s, 1e-12, "pp_layers=2/3/3/2 is the embedding split");
    printf("1F1B step %.4f layer passes: bounds [26, %.4f]\n", r.iteration_s / tau, u.iteration_s / tau);
    if (!(r.iteration_s >= 26 * tau * (1 - 1e-9) && r.iteration_s <= u.iteration_s)) {
        printf("FAIL: the split's step %.6g s is outside [%.6g, %.6g]\n", r.iteration_s, 26 * tau, u.iteration_s);
        fails++;
    }
    sim_result_free(&r);
    sim_result_free(&l);
    sim_result_free(&u);
    sim_machine_free(mach);
    return fails;
}

/* ZeRO-1's gradient collective, free compute, dp=4, fp32 (4-byte
 * gradients and weights): reduce-scatter + all-gather of the updated shards
 * move 2·(3/4)·4P bytes per rank; all-reduce + all-gather 3·(3/4)·4P. */
static int test_grad_collective(void)
{
    int fails = 0;
    wl_model m = wl_test_tiny(4);
    sim_err err;
    sim_machine *mach = star_flops_machine(4, 1e11, 1e20, 1);
    const char *rs = "dp=4,mb=1,gb=4,dtype=fp32,zero=1", *ar = "dp=4,mb=1,gb=4,dtype=fp32,zero=1,grad_collective=allreduce";
    for (int k = 0; k < 2; k++) {
        wl_strategy s = wl_test_strategy(k ? ar : rs);
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        if (!sc)
            continue;
        int nar = 0, nrs = 0, nag = 0;
        for (uint32_t i = 0; i < sc->nops; i++) {
            const sim_payload *p = sim_sched_payload_of(sc, i);
            if (sim_sched_rank_of(sc, i) != 0 || p->kind != SIM_OP_COLLECTIVE)
                continue;
            nar += p->sub == SIM_COLL_ALLREDUCE;
            nrs += p->sub == SIM_COLL_REDUCESCATTER;
            nag += p->sub == SIM_COLL_ALLGATHER;
        }
        /* Megatron's distributed optimizer gives the word embeddings a bucket
         * of their own; DeepSpeed all-reduces the one flat fp32 buffer */
        if (!(k ? nar == 1 && nrs == 0 && nag == 1 : nar == 0 && nrs == 2 && nag == 2))
            fprintf(stderr, "%s: rank 0 has %d all-reduces, %d reduce-scatters, %d all-gathers\n", k ? ar : rs, nar, nrs,
                    nag);
        CHECK(k ? nar == 1 && nrs == 0 && nag == 1 : nar == 0 && nrs == 2 && nag == 2);
        wl_memory a, b;
        wl_strategy z = wl_test_strategy(rs);
        CHECK(wl_gpt_check(&m, &s, mach, &a, &err) == 0 && wl_gpt_check(&m, &z, mach, &b, &err) == 0);
        CHECK(a.total == b.total); /* the same model states: only the collective differs */
        sim_sched_free(sc);
    }
    sim_result a, b;
    if (wl_test_simulate(&m, rs, mach, &a, NULL) || wl_test_simulate(&m, ar, mach, &b, NULL)) {
        sim_machine_free(mach);
        return fails + 1;
    }
    double h = 64, P = 4 * (12 * h * h + 13 * h) + 1024 * h + 32 * h + 2 * h;
    fails += near(a.iteration_s, 2 * 0.75 * 4 * P / 1e11, 0.02, "ZeRO-1 reduce-scatter + all-gather: 2(d-1)/d 4P/B");
    fails += near(b.iteration_s, 3 * 0.75 * 4 * P / 1e11, 0.02, "ZeRO-1 all-reduce + all-gather: 3(d-1)/d 4P/B");
    sim_result_free(&a);
    sim_result_free(&b);
    sim_machine_free(mach);
    return fails;
}

int main(void)
{
    test_parse();
    test_layers();
    test_errors();
    test_memory_tiny();
    test_memory_bloom();
    test_memory_llama405b();
    wl_test_failures += test_simulated_split();
    wl_test_failures += test_grad_collective();
    return wl_test_done();
}
