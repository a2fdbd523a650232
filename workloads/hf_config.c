/* hf_config.c — a Hugging Face config.json read as a trainsim model.
 *
 * `--model path/to/config.json` takes the file a model repository ships
 * (detected by its "architectures" or "model_type"), translated here into
 * trainsim's own model object (workloads/README.md, "Hugging Face configs"),
 * which model.c then reads as it reads any model file.  One function per
 * family maps its field names (Llama, Mistral, Mixtral and Qwen2 share one;
 * GPT-2, GPT-NeoX, MPT, Falcon, BLOOM and OPT have their own); Mixtral's experts
 * become the "moe" object that workloads/moe.c reads.
 *
 * Strict, as the native reader is: every field of a config is either mapped,
 * or known not to change what trainsim models (token ids, norm epsilons,
 * RoPE's base, dropout rates, dtype), or rejected by name — a field this file
 * does not know may change the model (sliding windows, a head_dim of its own,
 * Falcon-7B's single-norm parallel block), and silently ignoring it would
 * simulate another model. */
#include "workloads/model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Fields of any PretrainedConfig that change nothing trainsim models. */
static const char *const generic_ignored[] = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "_name_or_path",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "unk_token_id", "decoder_start_token_id",
    "initializer_range", "use_cache", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta",
    "rope_scaling", "attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "pretraining_tp", "auto_map", "tokenizer_class", "output_attentions", "output_hidden_states", "return_dict",
    "id2label", "label2id", "task_specific_params", "is_decoder", "max_window_layers", "classifier_dropout",
    "_attn_implementation", "gradient_checkpointing", "tie_encoder_decoder", "bad_words_ids", NULL};

typedef struct hf {
    const cJSON *in;
    cJSON *out;
    const char *src, *family;
    sim_err *err;
    int rc;
} hf;

/* The item, or NULL when absent or JSON null (HF writes unset fields as null). */
static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(it) ? NULL : it;
}

static int fail(hf *x, const char *fmt, const char *a, const char *b)
{
    if (!x->rc) {
        char msg[512];
        snprintf(msg, sizeof msg, fmt, a, b);
        sim_errf(x->err, "%s (a Hugging Face %s config): %s", x->src, x->family, msg);
    }
    x->rc = -1;
    return -1;
}

/* A positive integer field (the first of the aliases present) written to the
 * native object as `to`; absent: def (0 = required). */
/* The FFN width when a config gives none: 4 x hidden (GPT-2's n_inner
 * default), not overflowing for absurd widths, which the model's own
 * bounds then refuse. */
static int ffn_default(int h) { return h > 0 && h <= INT_MAX / 4 ? 4 * h : 1; }

static int map_int(hf *x, const cJSON *o, const char *const *aliases, const char *to, int def)
{
    const cJSON *it = NULL;
    for (int i = 0; aliases[i] && !it; i++)
        it = get(o, aliases[i]);
    if (!it) {
        if (!def)
            return fail(x, "%s: missing (expected a positive integer)%s", aliases[0], "");
        if (to)
            cJSON_AddNumberToObject(x->out, to, def);
        return def;
    }
    double v = cJSON_IsNumber(it) ? it->valuedouble : 0;
    if (!(v >= 1 && v <= 1e9 && v == floor(v)))
        return fail(x, "%s: expected a positive integer%s", it->string, "");
    if (to)
        cJSON_AddNumberToObject(x->out, to, v);
    return (int)v;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A boolean field; absent: def. */
static int get_flag(hf *x, const cJSON *o, const char *key, int def)
{
    const cJSON *it = get(o, key);
    if (!it)
        return def;
    if (!cJSON_IsBool(it))
        return fail(x, "%s: expected true or false%s", key, ""), def;
    return cJSON_IsTrue(it);
}

static const char *get_str(hf *x, const cJSON *o, const char *key, const char *def)
{
    const cJSON *it = get(o, key);
    if (!it)
        return def;
    if (!cJSON_IsString(it))
        return fail(x, "%s: expected a string%s", key, ""), def;
    return it->valuestring;
}

static int in_list(const char *key, const char *const *list)
{
    for (int i = 0; list && list[i]; i++)
        if (!strcmp(key, list[i]))
            return 1;
    return 0;
}

/* Every field of o must be mapped (known) or harmless (generic_ignored). */
static int check_fields(hf *x, const cJSON *o, const char *const *known, const char *where)
{
    for (const cJSON *it = o->child; it && !x->rc; it = it->next)
        if (!in_list(it->string, known) && (where[0] || !in_list(it->string, generic_ignored))) {
            char key[128];
            snprintf(key, sizeof key, "%s%s", where, it->string);
            return fail(x, "field \"%s\" is not supported: it is neither mapped to a trainsim model field nor known "
                        "to leave the simulated training unchanged (workloads/README.md lists what is read)%s",
                        key, "");
        }
    return x->rc;
}

static void add_str(hf *x, const char *key, const char *v)
{
    cJSON_AddStringToObject(x->out, key, v);
}

static void add_bool(hf *x, const char *key, int v)
{
    cJSON_AddBoolToObject(x->out, key, v);
}

/* The FFN's activation function: a gelu variant, or (for gated FFNs) SiLU. */
static int is_gelu(const char *act)
{
    return !strcmp(act, "gelu") || !strcmp(act, "gelu_new") || !strcmp(act, "gelu_fast") ||
           !strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_python");
}

/* ---- Llama, Mistral, Mixtral, Qwen2 --------------------------------------
 * Pre-norm RMSNorm decoder, RoPE, gated SiLU FFN (gate, up, down), grouped K/V
 * heads (transformers' modeling_llama.py and its copies). */
static void llama_like(hf *x)
{
    static const char *const known[] = {"num_hidden_layers", "hidden_size", "num_attention_heads",
                                        "num_key_value_heads", "intermediate_size", "vocab_size",
                                        "max_position_embeddings", "tie_word_embeddings", "hidden_act",
                                        "attention_bias", "mlp_bias", "head_dim", "sliding_window",
                                        "use_sliding_window", "num_local_experts", "num_experts_per_tok",
                                        "router_aux_loss_coef", "output_router_logits", "router_jitter_noise",
                                        NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    int moe = !strcmp(x->family, "mixtral");
    if (!moe && (get(in, "num_local_experts") || get(in, "num_experts_per_tok")))
        fail(x, "field \"%s\" (experts) belongs to a mixture-of-experts model type, not to %s", "num_local_experts",
             x->family);
    map_int(x, in, KEYS("num_hidden_layers"), "layers", 0);
    int h = map_int(x, in, KEYS("hidden_size"), "hidden", 0);
    int a = map_int(x, in, KEYS("num_attention_heads"), "heads", 0);
    map_int(x, in, KEYS("num_key_value_heads"), "kv_heads", a > 0 ? a : 1);
    int f = map_int(x, in, KEYS("intermediate_size"), moe ? NULL : "ffn", 0);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    int seq = map_int(x, in, KEYS("max_position_embeddings"), "seq", 2048);
    if (x->rc)
        return;
    int hd = get(in, "head_dim") ? map_int(x, in, KEYS("head_dim"), NULL, 1) : h / a;
    if (!x->rc && (int64_t)hd * a != h) {
        char v[64];
        snprintf(v, sizeof v, "%d (hidden_size / num_attention_heads = %d)", hd, h / a);
        fail(x, "head_dim: %s: heads of their own width are not modelled%s", v, "");
    }
    const char *act = get_str(x, in, "hidden_act", "silu");
    if (strcmp(act, "silu"))
        fail(x, "hidden_act: \"%s\": the gated FFN is modelled with SiLU (swiglu) only%s", act, "");
    int sw = get(in, "sliding_window") ? map_int(x, in, KEYS("sliding_window"), NULL, 1) : 0;
    if (!strcmp(x->family, "qwen2") && !get_flag(x, in, "use_sliding_window", 0))
        sw = 0;
    if (sw && sw < seq) {
        char v[96];
        snprintf(v, sizeof v, "%d < max_position_embeddings %d", sw, seq);
        fail(x, "sliding_window: %s: sliding-window attention is not modelled (trainsim computes full causal "
             "attention over seq); write a trainsim model file with seq <= the window%s", v, "");
    }
    int ab = get_flag(x, in, "attention_bias", 0), mb = get_flag(x, in, "mlp_bias", 0);
    if (ab != mb)
        fail(x, "attention_bias and mlp_bias differ (%s): biases on some linears only are not modelled%s",
             ab ? "attention only" : "MLP only", "");
    add_str(x, "ffn_type", "swiglu");
    add_str(x, "norm", "rmsnorm");
    add_str(x, "position", "rope");
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 0));
    add_bool(x, "bias", ab);
    if (!strcmp(x->family, "qwen2") && !ab)
        add_bool(x, "qkv_bias", 1); /* Qwen2's q, k, v projections carry biases, o_proj and the MLP none */
    if (moe && !x->rc) {
        cJSON_AddNumberToObject(x->out, "ffn", f);
        cJSON *o = cJSON_AddObjectToObject(x->out, "moe");
        cJSON *keep = x->out;
        x->out = o;
        map_int(x, in, KEYS("num_local_experts"), "experts", 0);
        map_int(x, in, KEYS("num_experts_per_tok"), "top_k", 2);
        cJSON_AddNumberToObject(o, "expert_ffn", f);
        cJSON_AddNumberToObject(o, "every", 1);
        cJSON_AddNumberToObject(o, "first", 0);
        x->out = keep;
    }
}

/* ---- GPT-2 (modeling_gpt2.py): learned positions, tied, biases ---------- */
static void gpt2(hf *x)
{
    static const char *const known[] = {"n_layer", "n_embd", "n_head", "n_inner", "n_positions", "n_ctx",
                                        "vocab_size", "activation_function", "scale_attn_weights",
                                        "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                                        "summary_type", "summary_use_proj", "summary_activation",
                                        "summary_proj_to_labels", "summary_first_dropout", "add_cross_attention",
                                        "tie_word_embeddings", NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    if (get(in, "add_cross_attention") && get_flag(x, in, "add_cross_attention", 0))
        fail(x, "add_cross_attention: true: encoder-decoder cross-attention is not modelled%s%s", "", "");
    if (!get_flag(x, in, "tie_word_embeddings", 1))
        fail(x, "tie_word_embeddings: false: GPT-2's output layer is tied in transformers%s%s", "", "");
    map_int(x, in, KEYS("n_layer"), "layers", 0);
    int h = map_int(x, in, KEYS("n_embd"), "hidden", 0);
    map_int(x, in, KEYS("n_head"), "heads", 0);
    map_int(x, in, KEYS("n_inner"), "ffn", ffn_default(h));
    map_int(x, in, KEYS("n_positions", "n_ctx"), "seq", 1024);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    const char *act = get_str(x, in, "activation_function", "gelu_new");
    if (!is_gelu(act))
        fail(x, "activation_function: \"%s\": only gelu variants are modelled for GPT-2%s", act, "");
}

/* ---- GPT-NeoX / Pythia (modeling_gpt_neox.py): RoPE, biases, untied ----- */
static void gpt_neox(hf *x)
{
    static const char *const known[] = {"num_hidden_layers", "hidden_size", "num_attention_heads",
                                        "intermediate_size", "max_position_embeddings", "vocab_size", "hidden_act",
                                        "rotary_pct", "rotary_emb_base", "use_parallel_residual",
                                        "tie_word_embeddings", "attention_bias", NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    map_int(x, in, KEYS("num_hidden_layers"), "layers", 0);
    int h = map_int(x, in, KEYS("hidden_size"), "hidden", 0);
    map_int(x, in, KEYS("num_attention_heads"), "heads", 0);
    map_int(x, in, KEYS("intermediate_size"), "ffn", ffn_default(h));
    map_int(x, in, KEYS("max_position_embeddings"), "seq", 2048);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    const char *act = get_str(x, in, "hidden_act", "gelu");
    if (!is_gelu(act))
        fail(x, "hidden_act: \"%s\": only gelu variants are modelled for GPT-NeoX%s", act, "");
    /* use_parallel_residual: attention and MLP read the same input; the same
     * parameters, FLOPs and activations, simulated one after the other */
    get_flag(x, in, "use_parallel_residual", 1);
    add_str(x, "position", "rope");
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 0));
    add_bool(x, "bias", get_flag(x, in, "attention_bias", 1));
}

/* ---- MPT (MosaicML's modeling_mpt.py): ALiBi, no biases at all ---------- */
static void mpt(hf *x)
{
    static const char *const known[] = {"d_model", "n_heads", "n_layers", "expansion_ratio", "max_seq_len",
                                        "vocab_size", "no_bias", "attn_config", "ffn_config", "norm_type",
                                        "learned_pos_emb", "emb_pdrop", "logit_scale", "init_device",
                                        "init_config", "embedding_fraction", "verbose", "tie_word_embeddings",
                                        "use_pad_tok_in_ffn", "fc_type", NULL};
    static const char *const attn_known[] = {"alibi", "alibi_bias_max", "attn_impl", "attn_pdrop", "attn_type",
                                             "clip_qkv", "prefix_lm", "qk_ln", "softmax_scale",
                                             "attn_uses_sequence_id", "kv_n_heads", "rope", "rope_theta",
                                             "sliding_window_size", NULL};
    static const char *const ffn_known[] = {"ffn_type", "ffn_act_fn", "fc_type", NULL};
    const cJSON *in = x->in, *attn = get(in, "attn_config"), *ffn = get(in, "ffn_config");
    if (check_fields(x, in, known, ""))
        return;
    if ((attn && !cJSON_IsObject(attn)) || (ffn && !cJSON_IsObject(ffn)))
        fail(x, "%s: expected an object%s", attn && !cJSON_IsObject(attn) ? "attn_config" : "ffn_config", "");
    if ((attn && check_fields(x, attn, attn_known, "attn_config.")) ||
        (ffn && check_fields(x, ffn, ffn_known, "ffn_config.")))
        return;
    map_int(x, in, KEYS("n_layers"), "layers", 0);
    int h = map_int(x, in, KEYS("d_model"), "hidden", 0);
    int a = map_int(x, in, KEYS("n_heads"), "heads", 0);
    int r = map_int(x, in, KEYS("expansion_ratio"), NULL, 4);
    cJSON_AddNumberToObject(x->out, "ffn", (double)h * r);
    map_int(x, in, KEYS("max_seq_len"), "seq", 2048);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    int nb = get_flag(x, in, "no_bias", 0);
    add_bool(x, "bias", !nb);
    add_bool(x, "norm_bias", !nb); /* MPT's layernorms drop their bias with no_bias too */
    const char *nt = get_str(x, in, "norm_type", "low_precision_layernorm");
    if (strcmp(nt, "low_precision_layernorm") && strcmp(nt, "layernorm"))
        fail(x, "norm_type: \"%s\": expected a layernorm%s", nt, "");
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 1));
    int alibi = attn ? get_flag(x, attn, "alibi", 0) : 0, rope = attn ? get_flag(x, attn, "rope", 0) : 0;
    int learned = get_flag(x, in, "learned_pos_emb", 1);
    add_str(x, "position", alibi ? "alibi" : rope ? "rope" : "learned");
    if (!alibi && !rope && !learned)
        fail(x, "learned_pos_emb: false without alibi or rope: a model without positions is not modelled%s%s", "", "");
    if (attn && get(attn, "kv_n_heads")) {
        const char *type = get_str(x, attn, "attn_type", "multihead_attention");
        int kv = map_int(x, attn, KEYS("kv_n_heads"), NULL, 1);
        if (!strcmp(type, "grouped_query_attention"))
            cJSON_AddNumberToObject(x->out, "kv_heads", kv);
        else if (!strcmp(type, "multiquery_attention"))
            cJSON_AddNumberToObject(x->out, "kv_heads", 1);
    } else if (attn && !strcmp(get_str(x, attn, "attn_type", "multihead_attention"), "multiquery_attention")) {
        cJSON_AddNumberToObject(x->out, "kv_heads", 1);
    }
    if (attn && get_flag(x, attn, "qk_ln", 0))
        fail(x, "attn_config.qk_ln: true: layernorms on Q and K are not modelled%s%s", "", "");
    if (attn && get(attn, "sliding_window_size") && cJSON_IsNumber(get(attn, "sliding_window_size")) &&
        get(attn, "sliding_window_size")->valuedouble >= 0)
        fail(x, "attn_config.sliding_window_size: sliding-window attention is not modelled%s%s", "", "");
    const char *ft = ffn ? get_str(x, ffn, "ffn_type", "mptmlp") : "mptmlp";
    const char *fa = ffn ? get_str(x, ffn, "ffn_act_fn", NULL) : NULL;
    if (!strcmp(ft, "mptglu"))
        add_str(x, "ffn_type", "swiglu");
    else if (strcmp(ft, "mptmlp") && strcmp(ft, "te_ln_mlp"))
        fail(x, "ffn_config.ffn_type: \"%s\": expected mptmlp or mptglu%s", ft, "");
    if (fa && !cJSON_IsNull(get(ffn, "ffn_act_fn")))
        fail(x, "ffn_config.ffn_act_fn: a custom activation is not modelled%s%s", "", "");
    (void)a;
}

/* ---- Falcon (modeling_falcon.py): parallel attention and MLP, no linear
 * biases, tied, RoPE or ALiBi, multi-query or grouped K/V (the "new decoder
 * architecture" of Falcon-40B/180B, two layernorms per layer). */
static void falcon(hf *x)
{
    static const char *const known[] = {"hidden_size", "n_embed", "num_hidden_layers", "n_layer",
                                        "num_attention_heads", "n_head", "num_kv_heads", "n_head_kv", "multi_query",
                                        "new_decoder_architecture", "parallel_attn", "alibi", "bias", "vocab_size",
                                        "ffn_hidden_size", "max_position_embeddings", "tie_word_embeddings",
                                        "num_ln_in_parallel_attn", "activation", NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    map_int(x, in, KEYS("num_hidden_layers", "n_layer"), "layers", 0);
    int h = map_int(x, in, KEYS("hidden_size", "n_embed"), "hidden", 0);
    int a = map_int(x, in, KEYS("num_attention_heads", "n_head"), "heads", 0);
    map_int(x, in, KEYS("ffn_hidden_size"), "ffn", ffn_default(h));
    map_int(x, in, KEYS("max_position_embeddings"), "seq", 2048);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    int nda = get_flag(x, in, "new_decoder_architecture", 0), par = get_flag(x, in, "parallel_attn", 1);
    if (nda) {
        map_int(x, in, KEYS("num_kv_heads", "n_head_kv"), "kv_heads", a > 0 ? a : 1);
        if (map_int(x, in, KEYS("num_ln_in_parallel_attn"), NULL, 2) != 2)
            fail(x, "num_ln_in_parallel_attn: one shared layernorm per layer is not modelled (trainsim counts "
                 "two)%s%s", "", "");
    } else if (par) {
        fail(x, "parallel_attn: true without new_decoder_architecture (Falcon-7B's block: attention and MLP side "
             "by side behind one shared layernorm) is not modelled: trainsim's layer has two norms%s%s", "", "");
    } else if (get_flag(x, in, "multi_query", 1)) {
        cJSON_AddNumberToObject(x->out, "kv_heads", 1);
    }
    const char *act = get_str(x, in, "activation", "gelu");
    if (!is_gelu(act))
        fail(x, "activation: \"%s\": only gelu is modelled for Falcon%s", act, "");
    add_str(x, "position", get_flag(x, in, "alibi", 0) ? "alibi" : "rope");
    add_bool(x, "bias", get_flag(x, in, "bias", 0));
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 1));
}

/* ---- BLOOM (modeling_bloom.py): ALiBi, an embedding layernorm, biases,
 * tied, ffn = 4h; the config has no sequence length (BLOOM trained at 2048,
 * Le Scao et al. 2022), so "seq_length" is read when present. */
static void bloom(hf *x)
{
    static const char *const known[] = {"n_layer", "num_hidden_layers", "hidden_size", "n_embed", "n_head",
                                        "num_attention_heads", "vocab_size", "seq_length",
                                        "apply_residual_connection_post_layernorm", "slow_but_exact",
                                        "masked_softmax_fusion", "bias_dropout_fusion", "skip_bias_add",
                                        "skip_bias_add_qkv", "offset_alibi", "attention_softmax_in_fp32",
                                        "unk_token_id", "tie_word_embeddings", NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    if (get_flag(x, in, "apply_residual_connection_post_layernorm", 0))
        fail(x, "apply_residual_connection_post_layernorm: true is not modelled%s%s", "", "");
    map_int(x, in, KEYS("n_layer", "num_hidden_layers"), "layers", 0);
    map_int(x, in, KEYS("hidden_size", "n_embed"), "hidden", 0);
    map_int(x, in, KEYS("n_head", "num_attention_heads"), "heads", 0);
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    map_int(x, in, KEYS("seq_length"), "seq", 2048);
    add_str(x, "position", "alibi");
    add_bool(x, "embedding_norm", 1);
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 1));
}

/* ---- OPT (modeling_opt.py): learned positions offset by 2, ReLU, tied --- */
static void opt(hf *x)
{
    static const char *const known[] = {"num_hidden_layers", "hidden_size", "num_attention_heads", "ffn_dim",
                                        "max_position_embeddings", "vocab_size", "activation_function",
                                        "do_layer_norm_before", "word_embed_proj_dim", "enable_bias",
                                        "layer_norm_elementwise_affine", "_remove_final_layer_norm", "dropout",
                                        "activation_dropout", "layerdrop", "init_std", "prefix",
                                        "tie_word_embeddings", NULL};
    const cJSON *in = x->in;
    if (check_fields(x, in, known, ""))
        return;
    map_int(x, in, KEYS("num_hidden_layers"), "layers", 0);
    int h = map_int(x, in, KEYS("hidden_size"), "hidden", 0);
    map_int(x, in, KEYS("num_attention_heads"), "heads", 0);
    map_int(x, in, KEYS("ffn_dim"), "ffn", ffn_default(h));
    map_int(x, in, KEYS("vocab_size"), "vocab", 0);
    int seq = map_int(x, in, KEYS("max_position_embeddings"), "seq", 2048);
    if (x->rc)
        return;
    /* OPTLearnedPositionalEmbedding: ids offset by 2, so 2 more rows */
    cJSON_AddNumberToObject(x->out, "position_table", seq + 2);
    if (get(in, "word_embed_proj_dim") && map_int(x, in, KEYS("word_embed_proj_dim"), NULL, h) != h)
        fail(x, "word_embed_proj_dim differs from hidden_size: the project_in / project_out layers (OPT-350m) are "
             "not modelled%s%s", "", "");
    if (get_flag(x, in, "_remove_final_layer_norm", 0))
        fail(x, "_remove_final_layer_norm: true: a model without its final norm is not modelled%s%s", "", "");
    if (!get_flag(x, in, "layer_norm_elementwise_affine", 1))
        fail(x, "layer_norm_elementwise_affine: false: norms without weights are not modelled%s%s", "", "");
    /* do_layer_norm_before: false (OPT-350m) moves the norms after the
     * residual adds: the same parameters, FLOPs and activations */
    get_flag(x, in, "do_layer_norm_before", 1);
    const char *act = get_str(x, in, "activation_function", "relu");
    if (!strcmp(act, "relu"))
        add_str(x, "ffn_type", "relu");
    else if (!is_gelu(act))
        fail(x, "activation_function: \"%s\": relu and gelu variants are modelled for OPT%s", act, "");
    add_bool(x, "tie_embeddings", get_flag(x, in, "tie_word_embeddings", 1));
    add_bool(x, "bias", get_flag(x, in, "enable_bias", 1));
}

/* model_type, the class names of "architectures", and the translation. */
typedef struct family {
    const char *type;
    const char *classes[3];
    void (*translate)(hf *x);
} family;

static const family families[] = {
    {"llama", {"LlamaForCausalLM", "LlamaModel"}, llama_like},
    {"mistral", {"MistralForCausalLM", "MistralModel"}, llama_like},
    {"mixtral", {"MixtralForCausalLM", "MixtralModel"}, llama_like},
    {"qwen2", {"Qwen2ForCausalLM", "Qwen2Model"}, llama_like},
    {"gpt2", {"GPT2LMHeadModel", "GPT2Model"}, gpt2},
    {"gpt_neox", {"GPTNeoXForCausalLM", "GPTNeoXModel"}, gpt_neox},
    {"mpt", {"MPTForCausalLM", "MptForCausalLM", "MPTModel"}, mpt},
    {"falcon", {"FalconForCausalLM", "RWForCausalLM", "FalconModel"}, falcon},
    {"RefinedWeb", {NULL}, falcon},
    {"RefinedWebModel", {NULL}, falcon},
    {"bloom", {"BloomForCausalLM", "BloomModel"}, bloom},
    {"opt", {"OPTForCausalLM", "OPTModel"}, opt},
};
#define NFAMILIES ((int)(sizeof families / sizeof families[0]))
#define SUPPORTED "llama, mistral, mixtral, qwen2, gpt2, gpt_neox, mpt, falcon, bloom, opt"

static const family *find_family(const cJSON *config, const char *src, sim_err *err)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(config, "model_type");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(config, "architectures");
    if (type && !cJSON_IsString(type)) {
        sim_errf(err, "%s: model_type: expected a string (a Hugging Face model type: " SUPPORTED ")", src);
        return NULL;
    }
    if (type) {
        for (int i = 0; i < NFAMILIES; i++)
            if (!strcmp(type->valuestring, families[i].type))
                return &families[i];
        sim_errf(err, "%s: model_type \"%.60s\": this Hugging Face architecture is not supported (supported: " SUPPORTED
                 ")", src, type->valuestring);
        return NULL;
    }
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    if (!cJSON_IsString(first)) {
        sim_errf(err, "%s: architectures: expected a list of class names such as [\"LlamaForCausalLM\"]", src);
        return NULL;
    }
    for (int i = 0; i < NFAMILIES; i++)
        for (int c = 0; c < 3 && families[i].classes[c]; c++)
            if (!strcmp(first->valuestring, families[i].classes[c]))
                return &families[i];
    sim_errf(err, "%s: architectures: \"%.60s\" is not a supported Hugging Face architecture (supported model "
             "types: " SUPPORTED ")", src, first->valuestring);
    return NULL;
}

/* The model's name: the repository name of _name_or_path, else the
 * directory holding a "config.json", else the file name (model.c's default). */
static void add_name(hf *x)
{
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(x->in, "_name_or_path");
    char name[64] = "";
    if (cJSON_IsString(np) && np->valuestring[0]) {
        const char *v = np->valuestring, *slash = strrchr(v, '/');
        snprintf(name, sizeof name, "%s", slash && slash[1] ? slash + 1 : v);
    } else {
        const char *base = strrchr(x->src, '/');
        if (base && !strcmp(base + 1, "config.json")) {
            const char *d = base;
            while (d > x->src && d[-1] != '/')
                d--;
            snprintf(name, sizeof name, "%.*s", (int)(base - d), d);
        }
    }
    if (name[0])
        add_str(x, "name", name);
}

cJSON *wl_hf_translate(const cJSON *config, const char *source, sim_err *err)
{
    const family *f = find_family(config, source, err);
    if (!f)
        return NULL;
    hf x = {config, cJSON_CreateObject(), source, f->type, err, 0};
    if (!x.out) {
        sim_errf(err, "out of memory");
        return NULL;
    }
    add_name(&x);
    char desc[128];
    snprintf(desc, sizeof desc, "translated from a Hugging Face %s config", f->type);
    add_str(&x, "description", desc);
    f->translate(&x);
    if (x.rc) {
        cJSON_Delete(x.out);
        return NULL;
    }
    return x.out;
}
