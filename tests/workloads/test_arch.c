/* test_arch.c — the architecture fields of a model (kv_heads, ffn_type,
 * norm, position, tie_embeddings, bias, embedding_norm): what each reads,
 * the errors on bad values, and their effect on parameters, model FLOPs,
 * activation memory and the generated kernels, each checked against an
 * independent count (a tensor-by-tensor enumeration, the FLOPs of the
 * generated schedule's kernels, hand-written activation terms). */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "sim/costmodel.h"
#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/layer.h"

static wl_model load(const char *json)
{
    wl_model m;
    sim_err err;
    if (wl_model_from_json(json, "arch.json", &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return m;
}

#define LLAMA_TINY                                                                                             \
    "{\"name\":\"llama-tiny\",\"layers\":3,\"hidden\":64,\"heads\":8,\"kv_heads\":2,\"ffn\":96,\"seq\":32,"        \
    "\"vocab\":1024,\"ffn_type\":\"swiglu\",\"norm\":\"rmsnorm\",\"position\":\"rope\",\"tie_embeddings\":false,"   \
    "\"bias\":false}"
#define GPT_TINY "{\"name\":\"gpt-tiny\",\"layers\":3,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024}"

/* Every field read, defaults that are the GPT defaults, and a file that spells
 * the defaults out is the same model, byte for byte. */
static void test_fields(void)
{
    wl_model g = load(GPT_TINY), l = load(LLAMA_TINY);
    CHECK(wl_model_kv_heads(&g) == 4 && g.ffn_type == WL_FFN_GELU && g.norm == WL_NORM_LAYERNORM);
    CHECK(g.position == WL_POS_LEARNED && !g.untied && !g.no_bias && !g.norm_no_bias && !g.embed_norm);
    CHECK(wl_model_kv_heads(&l) == 2 && l.ffn_type == WL_FFN_SWIGLU && l.norm == WL_NORM_RMSNORM);
    CHECK(l.position == WL_POS_ROPE && l.untied && l.no_bias);
    wl_model spelled = load("{\"name\":\"gpt-tiny\",\"layers\":3,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,"
                            "\"vocab\":1024,\"kv_heads\":4,\"ffn_type\":\"gelu\",\"norm\":\"layernorm\","
                            "\"norm_bias\":true,\"position\":\"learned\",\"tie_embeddings\":true,\"bias\":true,"
                            "\"embedding_norm\":false}");
    CHECK(memcmp(&g, &spelled, sizeof g) == 0);
    CHECK(wl_model_qkv_out(&l) == 64 + 2 * 2 * 8 && wl_model_fc1_out(&l, 96) == 192);
    CHECK(wl_model_qkv_out(&g) == 3 * 64 && wl_model_fc1_out(&g, 256) == 256);
    CHECK(wl_model_norm_params(&g) == 128 && wl_model_norm_params(&l) == 64);
}

static void test_errors(void)
{
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"kv_heads\":3}",
         "arch.json: kv_heads: 3 does not divide heads (4) (expected a divisor"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"kv_heads\":0}",
         "arch.json: kv_heads: expected a positive integer, got 0"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"ffn_type\":\"silu\"}",
         "arch.json: ffn_type: expected \"gelu\", \"swiglu\", \"squared-relu\" or \"relu\", got \"silu\""},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"seq\":128,\"position_table\":100}",
         "arch.json: position_table: 100 rows cannot place seq 128 tokens (expected at least seq)"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"norm\":1}",
         "arch.json: norm: expected \"layernorm\" or \"rmsnorm\", got 1"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"position\":\"sinusoidal\"}",
         "arch.json: position: expected \"learned\", \"rope\" or \"alibi\", got \"sinusoidal\""},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"tie_embeddings\":\"yes\"}",
         "arch.json: tie_embeddings: expected true or false, got \"yes\""},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"bias\":0}", "arch.json: bias: expected true or false, got 0"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"norm\":\"rmsnorm\",\"norm_bias\":true}",
         "arch.json: norm_bias: rmsnorm has no bias"},
        {"{\"layers\":1,\"hidden\":64,\"heads\":4,\"rope_theta\":10000}", "arch.json: unknown field \"rope_theta\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wl_model m;
        sim_err err = {{0}};
        CHECK(wl_model_from_json(bad[i].json, "arch.json", &m, &err) == -1);
        CHECK_HAS(err.msg, bad[i].want);
    }
    /* tp must divide kv_heads (Megatron-Core), even when it divides heads */
    wl_model l = load(LLAMA_TINY);
    sim_machine *m4 = wl_test_machine(4, 0);
    wl_strategy s = wl_test_strategy("tp=4");
    sim_err err;
    CHECK(wl_gpt_check(&l, &s, m4, NULL, &err) == -1);
    CHECK_HAS(err.msg, "tp=4 does not divide the 2 K/V heads (kv_heads) of llama-tiny");
    CHECK_HAS(err.msg, "Megatron-Core");
    s = wl_test_strategy("tp=2,dp=2");
    CHECK(wl_gpt_check(&l, &s, m4, NULL, &err) == 0);
    sim_machine_free(m4);
}

/* One tensor of a checkpoint: its element count. */
typedef struct tensor {
    const char *name;
    double n;
} tensor;

static double sum(const tensor *t, int n)
{
    double x = 0;
    for (int i = 0; i < n; i++)
        x += t[i].n;
    return x;
}

/* The parameter count against the tensors a checkpoint of the model holds
 * (Hugging Face names), enumerated one by one. */
static void test_params(void)
{
    /* Llama-style: h 64, 8 heads of 8, 2 K/V heads, ffn 96, no biases */
    const tensor llama_layer[] = {
        {"q_proj", 64 * 64},   {"k_proj", 16 * 64}, {"v_proj", 16 * 64},         {"o_proj", 64 * 64},
        {"gate_proj", 96 * 64}, {"up_proj", 96 * 64}, {"down_proj", 64 * 96},     {"input_layernorm", 64},
        {"post_attention_layernorm", 64},
    };
    const tensor llama_rest[] = {{"embed_tokens", 1024 * 64}, {"lm_head", 1024 * 64}, {"norm", 64}};
    wl_model l = load(LLAMA_TINY);
    double want = 3 * sum(llama_layer, 9) + sum(llama_rest, 3);
    CHECK(wl_model_params(&l) == want);
    /* GPT-2 style: c_attn [h, 3h] + bias, c_proj, c_fc, mlp c_proj, two
     * layernorms with biases, wte, wpe (seq x h), ln_f */
    const tensor gpt_layer[] = {
        {"c_attn.w", 64 * 192}, {"c_attn.b", 192}, {"attn.c_proj.w", 64 * 64}, {"attn.c_proj.b", 64},
        {"c_fc.w", 64 * 256},   {"c_fc.b", 256},   {"mlp.c_proj.w", 256 * 64}, {"mlp.c_proj.b", 64},
        {"ln_1", 128},          {"ln_2", 128},
    };
    const tensor gpt_rest[] = {{"wte", 1024 * 64}, {"wpe", 32 * 64}, {"ln_f", 128}};
    wl_model g = load(GPT_TINY);
    CHECK(wl_model_params(&g) == 3 * sum(gpt_layer, 10) + sum(gpt_rest, 3));
    /* MPT-style: no biases anywhere (linears and layernorms), ALiBi (no
     * position table), tied; BLOOM-style: an embedding layernorm */
    wl_model mpt = load("{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024,"
                        "\"position\":\"alibi\",\"bias\":false,\"norm_bias\":false}");
    const tensor mpt_layer[] = {{"Wqkv", 64 * 192}, {"out_proj", 64 * 64}, {"up_proj", 64 * 256},
                                {"down_proj", 256 * 64}, {"norm_1", 64}, {"norm_2", 64}};
    CHECK(wl_model_params(&mpt) == 2 * sum(mpt_layer, 6) + 1024 * 64 + 64);
    wl_model bloom = load("{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024,"
                          "\"position\":\"alibi\",\"embedding_norm\":true}");
    CHECK(wl_model_params(&bloom) == 2 * sum(gpt_layer, 10) + 1024 * 64 + 128 + 128);
    /* relu is gelu-shaped; a position table of its own size */
    wl_model re = load("{\"layers\":3,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024,"
                       "\"ffn_type\":\"relu\",\"position_table\":34}");
    CHECK(wl_model_params(&re) == wl_model_params(&g) + 2 * 64);
    /* squared-relu is gelu-shaped */
    wl_model sq = load("{\"layers\":3,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024,"
                       "\"ffn_type\":\"squared-relu\"}");
    CHECK(wl_model_params(&sq) == wl_model_params(&g));
    /* an FFN's parameters: swiglu three matrices, gelu two with biases */
    CHECK(wl_model_ffn_params(&l, 96) == 3 * 64 * 96);
    CHECK(wl_model_ffn_params(&g, 256) == 2 * 64 * 256 + 256 + 64);
}

/* The parameters one rank holds, summed over the ranks, give the model's: at
 * tp = 1 every stage's count adds up (plus the tied embedding copy of the
 * last stage when pp > 1), and at tp = 2 the replicated tensors (norms,
 * row-parallel biases) are held twice. */
static void test_rank_params(void)
{
    const char *models[] = {GPT_TINY, LLAMA_TINY,
                            "{\"name\":\"m\",\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,"
                            "\"vocab\":1024,\"position\":\"alibi\",\"bias\":false,\"norm_bias\":false,"
                            "\"embedding_norm\":true}"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        wl_model m = load(models[i]);
        if (m.layers % 2)
            m.layers = 2;
        double total = wl_model_params(&m), hv = (double)m.hidden * m.vocab;
        for (int pp = 1; pp <= 2; pp++) {
            sim_machine *mach = wl_test_machine(pp, 0);
            char text[64];
            snprintf(text, sizeof text, "pp=%d,dtype=bf16", pp);
            wl_strategy s = wl_test_strategy(text);
            wl_memory per[2];
            sim_err err;
            CHECK(wl_gpt_memory(&m, &s, mach, per, &err) == 0);
            double held = 0;
            for (int k = 0; k < pp; k++)
                held += per[k].weights / 2;
            double want = total + (pp > 1 && !m.untied ? hv : 0);
            if (held != want)
                fprintf(stderr, "%s pp=%d: ranks hold %.0f, model %.0f\n", m.name, pp, held, want);
            CHECK(held == want);
            sim_machine_free(mach);
        }
        /* tp = 2: one rank holds the split tensors' half and the replicated ones whole */
        sim_machine *mach = wl_test_machine(2, 0);
        wl_strategy s = wl_test_strategy("tp=2,dtype=bf16");
        wl_memory mem;
        sim_err err;
        CHECK(wl_gpt_memory(&m, &s, mach, &mem, &err) == 0);
        wl_layer_param_split p = wl_model_layer_params(&m);
        double np = (double)wl_model_norm_params(&m);
        double root = hv / 2 * (m.untied ? 2 : 1) + (m.position == WL_POS_LEARNED ? 32.0 * m.hidden : 0) + np +
                      (m.embed_norm ? np : 0);
        double want = m.layers * ((double)(p.attn_split + p.mlp_split) / 2 + (double)(p.attn_rep + p.mlp_rep)) + root;
        CHECK(mem.weights / 2 == want);
        sim_machine_free(mach);
    }
}

/* Model FLOPs against the FLOPs of the kernels the generator emits: without
 * recomputation every GEMM and attention core runs three times (forward,
 * and the backward's two), so at tp = pp = dp = 1 the generated schedule's
 * GEMM and attention FLOPs are exactly wl_gpt_model_flops (vocabulary 1024
 * needs no padding). */
static double schedule_flops(const wl_model *m, const char *text)
{
    sim_machine *mach = wl_test_machine(1, 0);
    wl_strategy s = wl_test_strategy(text);
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    sim_machine_free(mach);
    if (!sc) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    double f = 0;
    for (uint32_t i = 0; i < sc->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(sc, i);
        if (p->kind == SIM_OP_COMPUTE)
            f += sim_cost_flops(p);
    }
    sim_sched_free(sc);
    return f;
}

static void test_flops(void)
{
    const char *models[] = {GPT_TINY, LLAMA_TINY,
                            "{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1024,"
                            "\"kv_heads\":1,\"ffn_type\":\"squared-relu\",\"position\":\"alibi\"}"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        wl_model m = load(models[i]);
        wl_strategy s = wl_test_strategy("gb=2,mb=2");
        double want = wl_gpt_model_flops(&m, &s), got = schedule_flops(&m, "gb=2,mb=2");
        if (got != want)
            fprintf(stderr, "%s: kernels %.0f FLOPs, model FLOPs %.0f\n", m.name, got, want);
        CHECK(got == want);
    }
    /* by hand for the Llama-style model, per token of the forward: QKV
     * 2*64*96, projection 2*64*64, fc1 (gate and up) 2*64*192, fc2 2*96*64,
     * attention 4*32*64; logits 2*64*1024; training = 3 x forward */
    wl_model l = load(LLAMA_TINY);
    wl_strategy s = wl_test_strategy("gb=1");
    double per_token = 3 * (2.0 * 64 * 96 + 2.0 * 64 * 64 + 2.0 * 64 * 192 + 2.0 * 96 * 64 + 4.0 * 32 * 64) +
                       2.0 * 64 * 1024;
    CHECK(wl_gpt_model_flops(&l, &s) == 3 * 32 * per_token);
    /* GQA saves K/V projection FLOPs, swiglu adds a third FFN matrix */
    wl_model mha = l;
    mha.kv_heads = 0;
    CHECK(wl_gpt_model_flops(&mha, &s) - wl_gpt_model_flops(&l, &s) == 3 * 32 * 3 * 2.0 * 64 * 2 * 6 * 8);
}

/* Activations kept per layer (recompute=none, tp = 1, one sequence of 32
 * tokens, d = 4 bytes): LN1 and QKV inputs and the dropout mask sbh(2d+1),
 * Q, K, V and the projection input d*s*(qkv + h), the attention core
 * (2d+1)*a*s^2, LN2 and fc1 inputs with their mask sbh(2d+1), the FFN's
 * activation input and fc2's input d*s*(fc1 + ffn). */
static void test_activations(void)
{
    wl_model l = load(LLAMA_TINY);
    wl_strategy s = wl_test_strategy("mb=1");
    int64_t d = 4, sh = 32 * 64, core = 9 * 8 * 32 * 32;
    int64_t want = sh * 9 + d * 32 * (96 + 64) + core + sh * 9 + d * 32 * (192 + 96);
    CHECK(wl_layer_kept_bytes(&l, &s) == want);
    wl_model g = load(GPT_TINY);
    int64_t want_g = sh * 9 + d * 32 * (192 + 64) + 9 * 4 * 32 * 32 + sh * 9 + d * 32 * (256 + 256);
    CHECK(wl_layer_kept_bytes(&g, &s) == want_g);
}

/* The generated kernels follow the shapes, and the tied embeddings'
 * all-reduce between first and last stage goes with an untied output layer. */
static void test_kernels(void)
{
    wl_model l = load(LLAMA_TINY);
    l.layers = 2;
    sim_machine *mach = wl_test_machine(4, 0);
    wl_strategy s = wl_test_strategy("tp=2,pp=2,mb=1,gb=2,dtype=bf16");
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(&l, &s, mach, &err);
    CHECK(sc != NULL);
    int qkv = 0, fc1 = 0, act = 0, emb = 0, gelu = 0, rope = 0, rope_b = 0;
    for (uint32_t i = 0; sc && i < sc->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(sc, i);
        const char *n = sim_sched_strname(sc, p->name);
        if (!strcmp(n, "qkv"))
            qkv += p->n == 96 / 2 && p->k == 64;
        if (!strcmp(n, "fc1"))
            fc1 += p->n == 192 / 2;
        act += !strcmp(n, "swiglu") && p->bytes == 3 * 32 * 48 * 2;
        gelu += !strcmp(n, "gelu");
        emb += !strcmp(n, "embed_allreduce");
        /* Q (64/2 wide) and K (16/2) of 32 tokens, read and written, 2 bytes */
        rope += !strcmp(n, "rope") && p->bytes == 2 * 32 * (32 + 8) * 2;
        rope_b += !strcmp(n, "rope_bwd") && p->bytes == 2 * 32 * (32 + 8) * 2;
    }
    CHECK(qkv > 0 && fc1 > 0 && act > 0 && gelu == 0 && emb == 0);
    CHECK(rope == 4 * 2 && rope_b == 4 * 2); /* 4 ranks, one layer each, 2 micro-batches */
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    sim_sched_free(sc);
    l.untied = 0;
    sc = wl_gpt_generate(&l, &s, mach, &err);
    emb = 0;
    for (uint32_t i = 0; sc && i < sc->nops; i++)
        emb += !strcmp(sim_sched_strname(sc, sim_sched_payload_of(sc, i)->name), "embed_allreduce");
    CHECK(emb == 4); /* one per first- and last-stage rank */
    sim_sched_free(sc);
    sim_machine_free(mach);
}

/* The model's description for --json results. */
static void test_describe(void)
{
    wl_model l = load(LLAMA_TINY);
    cJSON *o = wl_model_describe(&l);
    char *t = cJSON_PrintUnformatted(o);
    CHECK_HAS(t, "\"kv_heads\":2");
    CHECK_HAS(t, "\"ffn_type\":\"swiglu\"");
    CHECK_HAS(t, "\"norm\":\"rmsnorm\"");
    CHECK_HAS(t, "\"position\":\"rope\"");
    CHECK_HAS(t, "\"tie_embeddings\":false");
    CHECK_HAS(t, "\"bias\":false");
    char want[64];
    snprintf(want, sizeof want, "\"parameters\":%.0f", wl_model_params(&l));
    CHECK_HAS(t, want);
    free(t);
    cJSON_Delete(o);
}

int main(void)
{
    test_fields();
    test_errors();
    test_params();
    test_rank_params();
    test_flops();
    test_activations();
    test_kernels();
    test_describe();
    return wl_test_done();
}
