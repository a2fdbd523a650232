/* test_hf.c — Hugging Face config.json files read as models: each supported
 * family's fields mapped (checked through the parameter count, which every
 * field feeds, against published counts or a tensor-by-tensor enumeration),
 * Mixtral's experts reaching the MoE reader, and the errors that name an
 * unsupported architecture or field.  The configs are in tests/workloads/hf/
 * (written for these tests; the real-size ones with the fields and values of
 * the models' published config.json). */
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/moe.h"

/* The configs' directory, under the source tree ctest passes as SRC. */
static const char *hf_dir(void)
{
    static char dir[512];
    const char *src = getenv("SRC");
    snprintf(dir, sizeof dir, "%s/tests/workloads/hf", src ? src : ".");
    return dir;
}

static int load(const char *file, wl_model *m, sim_err *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", hf_dir(), file);
    return wl_model_load(path, m, err);
}

static wl_model must(const char *file)
{
    wl_model m;
    sim_err err;
    if (load(file, &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return m;
}

/* Published totals (the model cards' / transformers' num_parameters()):
 * Llama-2-7B 6,738,415,616 (Touvron et al. 2023: "7B"; the checkpoint's
 * count), GPT-2 small 124,439,808, Pythia-160M 162,322,944 (untied
 * embed_in / embed_out), BLOOM-560M 559,214,592. */
static void test_published(void)
{
    wl_model l = must("llama2-7b/config.json");
    CHECK_STR(l.name, "llama2-7b");
    CHECK(l.layers == 32 && l.hidden == 4096 && l.heads == 32 && wl_model_kv_heads(&l) == 32);
    CHECK(l.ffn == 11008 && l.seq == 4096 && l.vocab == 32000);
    CHECK(l.ffn_type == WL_FFN_SWIGLU && l.norm == WL_NORM_RMSNORM && l.position == WL_POS_ROPE);
    CHECK(l.untied && l.no_bias && !l.moe);
    CHECK(wl_model_params(&l) == 6738415616.0);

    wl_model g = must("gpt2.json");
    CHECK(g.ffn == 4 * 768 && g.seq == 1024 && !g.untied && !g.no_bias && g.position == WL_POS_LEARNED);
    CHECK(wl_model_params(&g) == 124439808.0);

    wl_model p = must("pythia-160m.json");
    CHECK(p.untied && p.position == WL_POS_ROPE && p.ffn_type == WL_FFN_GELU && !p.no_bias && p.seq == 2048);
    CHECK(wl_model_params(&p) == 162322944.0);

    /* OPT-125m (facebook/opt-125m's config.json): ReLU, tied, biases, and a
     * learned position table of max_position_embeddings + 2 rows (ids offset
     * by 2): 125,239,296 tensor by tensor, as num_parameters() gives */
    wl_model o = must("opt-125m.json");
    CHECK(o.ffn_type == WL_FFN_RELU && o.position == WL_POS_LEARNED && !o.untied && !o.no_bias);
    CHECK(o.seq == 2048 && o.pos_table == 2050 && o.ffn == 3072 && o.vocab == 50272);
    CHECK(wl_model_params(&o) == 125239296.0);

    wl_model b = must("bloom-560m.json");
    CHECK(b.position == WL_POS_ALIBI && b.embed_norm && !b.untied && b.ffn == 4096 && b.seq == 2048);
    CHECK(wl_model_params(&b) == 559214592.0);
}

/* The small configs, counted tensor by tensor. */
static void test_small(void)
{
    /* Llama-3 style GQA: h 256, 8 heads of 32, 2 K/V heads, ffn 896 */
    wl_model l = must("llama3-gqa.json");
    CHECK_STR(l.name, "llama3-gqa"); /* from _name_or_path */
    CHECK(wl_model_kv_heads(&l) == 2 && l.seq == 512);
    double layer = 256.0 * 256 * 2 + 2 * 256.0 * 64 + 3 * 256.0 * 896 + 2 * 256;
    CHECK(wl_model_params(&l) == 4 * layer + 2 * 2048.0 * 256 + 256);

    /* Qwen2: biases on q, k, v only; tied; its sliding window off */
    wl_model q = must("qwen2-tiny.json");
    CHECK(q.no_bias && q.qkv_bias && !q.untied && wl_model_kv_heads(&q) == 2);
    layer = 128.0 * 128 * 2 + 2 * 128.0 * 64 + (128 + 64 + 64) + 3 * 128.0 * 320 + 2 * 128;
    CHECK(wl_model_params(&q) == 2 * layer + 1024.0 * 128 + 128);

    /* MPT: ALiBi (no position table), no biases in linears nor layernorms */
    wl_model m = must("mpt-tiny.json");
    CHECK(m.position == WL_POS_ALIBI && m.no_bias && m.norm_no_bias && m.ffn == 512 && m.seq == 256);
    layer = 4 * 128.0 * 128 + 2 * 128.0 * 512 + 2 * 128;
    CHECK(wl_model_params(&m) == 2 * layer + 1024.0 * 128 + 128);

    /* Falcon-40B's decoder: GQA, two layernorms with biases, no linear biases */
    wl_model f = must("falcon-40b-tiny.json");
    CHECK(wl_model_kv_heads(&f) == 2 && f.no_bias && !f.norm_no_bias && f.position == WL_POS_ROPE);
    layer = 128.0 * 128 * 2 + 2 * 128.0 * 32 + 2 * 128.0 * 512 + 2 * 256;
    CHECK(wl_model_params(&f) == 2 * layer + 1024.0 * 128 + 256);
}

/* Mixtral: the experts become the "moe" object; `run` and `trainsim moe`
 * both take it (one generator). */
static void test_mixtral(void)
{
    wl_model m;
    wl_moe moe;
    sim_err err;
    char path[512];
    snprintf(path, sizeof path, "%s/mixtral-tiny/config.json", hf_dir());
    CHECK(wl_moe_model_load(path, &m, &moe, &err) == 0);
    CHECK(m.moe && moe.experts == 8 && moe.top_k == 2 && moe.expert_ffn == 448 && moe.every == 1 && moe.first == 0);
    CHECK(wl_moe_count(&moe, m.layers) == 2);
    /* every layer: 8 swiglu experts and a router instead of one FFN */
    double dense = wl_model_params(&m);
    CHECK(wl_moe_total_params(path, &m) == dense + 2 * (8 * 3 * 128.0 * 448 - 3 * 128.0 * 448 + 128 * 8));
    sim_machine *mach = wl_test_machine(1, 0);
    wl_strategy s;
    wl_strategy_default(&s);
    CHECK(wl_gpt_check(&m, &s, mach, NULL, &err) == 0); /* MoE through the main generator (issue 15) */
    /* trainsim moe's steps are the same generator's: a routed step of it */
    wl_moe_strategy ms;
    wl_moe_strategy_default(&ms);
    CHECK(wl_moe_strategy_parse("ep=1,mb=1,gb=1,dtype=bf16,steps=1", &ms, &err) == 0);
    CHECK(wl_moe_resolve(&m, &moe, &ms, mach, &err) == 0);
    wl_routing_cfg rc;
    wl_routing_cfg_default(&rc);
    wl_routing *r = wl_routing_new(&rc, 1, 2, 8, 1, (int64_t)m.seq * 2, &err);
    CHECK(r != NULL);
    sim_schedule *sch = r ? wl_moe_generate(&m, &moe, &ms, mach, r, 0, NULL, &err) : NULL;
    CHECK(sch != NULL);
    CHECK(sch && strstr(sch->meta.name, "moe step 0"));
    sim_sched_free(sch);
    wl_routing_free(r);
    sim_machine_free(mach);
}

static void test_errors(void)
{
    wl_model m;
    sim_err err = {{0}};
    CHECK(load("falcon-7b-tiny.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "falcon-7b-tiny.json (a Hugging Face falcon config): parallel_attn");
    CHECK(load("mistral-window.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "sliding_window: 256 < max_position_embeddings 1024");
    CHECK(load("gemma-tiny.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "model_type \"gemma\": this Hugging Face architecture is not supported (supported: llama,");

    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"intermediate_size\":96,\"vocab_size\":100,\"foo_bar\":1}",
         "cfg.json (a Hugging Face llama config): field \"foo_bar\" is not supported"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"vocab_size\":100}",
         "intermediate_size: missing (expected a positive integer)"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"intermediate_size\":96,\"vocab_size\":100,\"head_dim\":32}",
         "head_dim: 32 (hidden_size / num_attention_heads = 16)"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"intermediate_size\":96,\"vocab_size\":100,\"hidden_act\":\"gelu\"}",
         "hidden_act: \"gelu\""},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"intermediate_size\":96,\"vocab_size\":100,\"num_key_value_heads\":3}",
         "kv_heads: 3 does not divide heads (4)"},
        {"{\"architectures\":[\"T5ForConditionalGeneration\"],\"d_model\":64}",
         "architectures: \"T5ForConditionalGeneration\" is not a supported Hugging Face architecture"},
        {"{\"model_type\":\"mpt\",\"d_model\":64,\"n_heads\":4,\"n_layers\":2,\"vocab_size\":100,"
         "\"attn_config\":{\"alibi\":true,\"rotary\":1}}",
         "field \"attn_config.rotary\" is not supported"},
        {"{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_embd\":64,\"n_head\":4,\"vocab_size\":100,"
         "\"activation_function\":\"relu\"}",
         "activation_function: \"relu\""},
        {"{\"model_type\":\"opt\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"ffn_dim\":256,\"vocab_size\":100,\"word_embed_proj_dim\":32}",
         "cfg.json (a Hugging Face opt config): word_embed_proj_dim differs from hidden_size"},
        {"{\"model_type\":\"opt\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"ffn_dim\":256,\"vocab_size\":100,\"activation_function\":\"silu\"}",
         "activation_function: \"silu\": relu and gelu variants are modelled for OPT"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(wl_model_from_json(bad[i].json, "cfg.json", &m, &err) == -1);
        CHECK_HAS(err.msg, bad[i].want);
    }
    /* absurd widths (fuzz_model): refused by the model's bounds, the default
     * FFN width and the head-width check computed without overflow (UBSan) */
    static const char *const huge[] = {
        "{\"model_type\":\"falcon\",\"hidden_size\":6E8,\"new_decoder_architecture\":true,\"num_attention_heads\":8,"
        "\"num_hidden_layers\":2,\"num_kv_heads\":2,\"vocab_size\":2048}",
        "{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_embd\":2000000000,\"n_head\":4,\"vocab_size\":100}",
        "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
        "\"intermediate_size\":96,\"vocab_size\":100,\"head_dim\":1073741824}",
    };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
        CHECK(wl_model_from_json(huge[i], "cfg.json", &m, &err) == -1 && err.msg[0]);
    /* architectures alone identify the family */
    CHECK(wl_model_from_json("{\"architectures\":[\"GPT2LMHeadModel\"],\"n_layer\":2,\"n_embd\":64,\"n_head\":4,"
                             "\"vocab_size\":100}",
                             "dir/config.json", &m, &err) == 0);
    CHECK_STR(m.name, "dir");
    CHECK(m.layers == 2 && m.ffn == 256 && m.seq == 1024);
}

int main(void)
{
    test_published();
    test_small();
    test_mixtral();
    test_errors();
    return wl_test_done();
}
