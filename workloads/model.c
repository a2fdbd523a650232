/* model.c — GPT model descriptions and strategy strings.
 *
 * A model is a small JSON object (workloads/models/<name>.json, compiled into the
 * binary by sim/embed.cmake, or any file a user writes).  A strategy is a
 * "key=value,key=value" string with Megatron-like names.  Both readers are
 * strict: an unknown key, a value of the wrong type or an inconsistent shape is
 * an error that names the source, the field and what was expected, because a
 * silently ignored typo ("micro_batch_size=4") would simulate the wrong run. */
#include "workloads/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/embedded.h"
#include "sim/fileio.h"
#include "sim/schedule.h"
#include "sim/json.h"
#include "workloads/routing.h"

/* ---- models ------------------------------------------------------------ */

static const char *const model_keys[] = {"name",     "layers",    "hidden",   "heads",          "ffn",
                                         "seq",      "vocab",     "description", "source",       "moe",
                                         "kv_heads", "ffn_type",  "norm",     "norm_bias",      "position",
                                         "tie_embeddings", "bias", "embedding_norm", "qkv_bias",
                                         "position_table"};
#define NMODEL_KEYS ((int)(sizeof model_keys / sizeof model_keys[0]))
#define MODEL_KEYS_TEXT                                                                                        \
    "name, layers, hidden, heads, ffn, seq, vocab, description, source, moe, kv_heads, ffn_type, norm, "         \
    "norm_bias, position, tie_embeddings, bias, embedding_norm, qkv_bias, position_table"

static const char *const ffn_type_names[WL_FFN_COUNT] = {"gelu", "swiglu", "squared-relu", "relu"};
static const char *const norm_names[WL_NORM_COUNT] = {"layernorm", "rmsnorm"};
static const char *const position_names[WL_POS_COUNT] = {"learned", "rope", "alibi"};

const char *wl_ffn_type_name(wl_ffn_type t)
{
    return (unsigned)t < WL_FFN_COUNT ? ffn_type_names[t] : "?";
}

const char *wl_norm_name(wl_norm n)
{
    return (unsigned)n < WL_NORM_COUNT ? norm_names[n] : "?";
}

const char *wl_position_name(wl_position p)
{
    return (unsigned)p < WL_POS_COUNT ? position_names[p] : "?";
}

/* A short rendering of a JSON value for error messages. */
static void json_repr(const cJSON *it, char *buf, size_t len)
{
    if (cJSON_IsString(it))
        snprintf(buf, len, "\"%.60s\"", it->valuestring);
    else if (cJSON_IsNumber(it))
        snprintf(buf, len, "%.17g", it->valuedouble);
    else if (cJSON_IsBool(it))
        snprintf(buf, len, "%s", cJSON_IsTrue(it) ? "true" : "false");
    else if (cJSON_IsNull(it))
        snprintf(buf, len, "null");
    else if (cJSON_IsArray(it))
        snprintf(buf, len, "an array");
    else if (cJSON_IsObject(it))
        snprintf(buf, len, "an object");
    else
        snprintf(buf, len, "?");
}

/* The largest value of each size field: far above any model trained (the
 * largest hidden size is ~25 k, vocabularies ~256 k), low enough that
 * parameter counts, FLOPs and activation sizes computed from them stay
 * inside int64_t (a hidden size of 2^31 overflowed the default ffn = 4 x
 * hidden, and h x (h + 2 kv) the int64_t of the parameter count). */
static const struct {
    const char *key;
    int max;
} LIMITS[] = {{"layers", 1 << 16}, {"hidden", 1 << 20}, {"heads", 1 << 16}, {"kv_heads", 1 << 16},
              {"ffn", 1 << 22},    {"seq", 1 << 22},    {"vocab", 1 << 24}};

static int limit_of(const char *key)
{
    for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++)
        if (!strcmp(key, LIMITS[i].key))
            return LIMITS[i].max;
    return INT_MAX;
}

/* Reads a positive integer field up to its limit; absent fields keep *out
 * when !required. */
static int get_posint(const cJSON *root, const char *key, int required, int *out, const char *source,
                      sim_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it) {
        if (required)
            return sim_errf(err, "%s: %s: missing (expected a positive integer)", source, key);
        return 0;
    }
    double v = cJSON_IsNumber(it) ? it->valuedouble : 0;
    if (!cJSON_IsNumber(it) || v < 1 || v != floor(v)) {
        char got[80];
        json_repr(it, got, sizeof got);
        return sim_errf(err, "%s: %s: expected a positive integer, got %s", source, key, got);
    }
    if (v > limit_of(key))
        return sim_errf(err, "%s: %s: %.17g is larger than trainsim models (at most %d)", source, key, v,
                        limit_of(key));
    *out = (int)v;
    return 0;
}

/* Reads a string field that must be one of names[0..n); absent keeps *out. */
static int get_enum(const cJSON *root, const char *key, const char *const *names, int n, int *out,
                    const char *source, sim_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it)
        return 0;
    for (int i = 0; i < n && cJSON_IsString(it); i++)
        if (strcmp(it->valuestring, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char got[80], want[160] = "";
    json_repr(it, got, sizeof got);
    for (int i = 0, w = 0; i < n && w < (int)sizeof want; i++)
        w += snprintf(want + w, sizeof want - (size_t)w, "%s\"%s\"", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                      names[i]);
    return sim_errf(err, "%s: %s: expected %s, got %s", source, key, want, got);
}

/* Reads a boolean field; absent keeps *out. */
static int get_bool(const cJSON *root, const char *key, int *out, const char *source, sim_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it)
        return 0;
    if (!cJSON_IsBool(it)) {
        char got[80];
        json_repr(it, got, sizeof got);
        return sim_errf(err, "%s: %s: expected true or false, got %s", source, key, got);
    }
    *out = cJSON_IsTrue(it);
    return 0;
}

/* The architecture fields (zero = GPT-2/3 default, see model.h). */
/* One integer of the "moe" object: absent = def. */
static int moe_int(const cJSON *o, const char *key, int def, int min, int *out, const char *src, sim_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < min || v->valuedouble > 1e9)
        return sim_errf(err, "%s: moe.%s: expected an integer >= %d", src, key, min);
    *out = (int)v->valuedouble;
    return 0;
}

/* The "moe" object (workloads/README.md, "Mixture of experts"), after the
 * dense fields (expert_ffn defaults to ffn, the MoE layers must exist). */
static int read_moe(const cJSON *o, wl_model *m, const char *src, sim_err *err)
{
    static const char *keys[] = {"experts",    "top_k", "capacity_factor", "pad_to_capacity",
                                 "expert_ffn", "shared_ffn", "every", "first"};
    wl_moe x;
    memset(&x, 0, sizeof x);
    if (!cJSON_IsObject(o))
        return sim_errf(err, "%s: moe: expected an object {\"experts\": E, \"top_k\": k, ...} (see "
                        "workloads/README.md)", src);
    for (const cJSON *it = o->child; it; it = it->next) {
        int known = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            known |= it->string && !strcmp(it->string, keys[i]);
        if (!known)
            return sim_errf(err, "%s: moe: unknown field \"%s\" (known: experts, top_k, capacity_factor, "
                            "pad_to_capacity, expert_ffn, shared_ffn, every, first)", src, it->string ? it->string : "?");
    }
    if (!cJSON_GetObjectItemCaseSensitive(o, "experts"))
        return sim_errf(err, "%s: moe.experts: missing (expected the number of experts per MoE layer)", src);
    if (moe_int(o, "experts", 0, 1, &x.experts, src, err) < 0 || moe_int(o, "top_k", 1, 1, &x.top_k, src, err) < 0 ||
        moe_int(o, "expert_ffn", m->ffn, 1, &x.expert_ffn, src, err) < 0 ||
        moe_int(o, "shared_ffn", 0, 0, &x.shared_ffn, src, err) < 0 ||
        moe_int(o, "every", 2, 1, &x.every, src, err) < 0 || moe_int(o, "first", 1, 0, &x.first, src, err) < 0)
        return -1;
    if (x.top_k > x.experts)
        return sim_errf(err, "%s: moe.top_k: %d is more than the %d experts", src, x.top_k, x.experts);
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(o, "capacity_factor");
    if (cf && (!cJSON_IsNumber(cf) || cf->valuedouble < 0 || !isfinite(cf->valuedouble)))
        return sim_errf(err, "%s: moe.capacity_factor: expected a number >= 0 (0 = no capacity limit)", src);
    x.capacity_factor = cf ? cf->valuedouble : 0;
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(o, "pad_to_capacity");
    if (pad && !cJSON_IsBool(pad))
        return sim_errf(err, "%s: moe.pad_to_capacity: expected true or false", src);
    x.pad_to_capacity = cJSON_IsTrue(pad);
    if (x.pad_to_capacity && !(x.capacity_factor > 0))
        return sim_errf(err, "%s: moe.pad_to_capacity: padding needs a capacity: give capacity_factor > 0", src);
    m->moe_cfg = x;
    int n = 0;
    for (int l = 0; l < m->layers; l++)
        n += wl_model_is_moe_layer(m, l);
    if (n < 1)
        return sim_errf(err, "%s: moe: first %d and every %d leave no MoE layer among %d layers", src, x.first,
                        x.every, m->layers);
    return 0;
}

double wl_model_moe_params(const wl_model *m, int active)
{
    double p = wl_model_params(m);
    if (!m->moe)
        return p;
    const wl_moe *x = &m->moe_cfg;
    double expert = wl_model_ffn_params(m, x->expert_ffn);
    int n = 0;
    for (int l = 0; l < m->layers; l++)
        n += wl_model_is_moe_layer(m, l);
    return p + n * ((active ? x->top_k : x->experts) * expert - wl_model_ffn_params(m, m->ffn) +
                    wl_model_moe_dense_params(m));
}

int wl_model_is_moe_layer(const wl_model *m, int layer)
{
    const wl_moe *x = &m->moe_cfg;
    return m->moe && x->every > 0 && layer >= x->first && (layer - x->first) % x->every == 0;
}

/* The router (gate) is h x E without bias (Megatron-Core's TopKRouter). */
double wl_model_moe_dense_params(const wl_model *m)
{
    if (!m->moe)
        return 0;
    double shared = m->moe_cfg.shared_ffn ? wl_model_ffn_params(m, m->moe_cfg.shared_ffn) : 0;
    return (double)m->hidden * m->moe_cfg.experts + shared;
}

static int read_architecture(const cJSON *root, wl_model *m, const char *source, sim_err *err)
{
    int ffn_type = WL_FFN_GELU, norm = WL_NORM_LAYERNORM, pos = WL_POS_LEARNED;
    int tie = 1, bias = 1, norm_bias = -1, embed_norm = 0, qkv_bias = -1;
    if (get_posint(root, "kv_heads", 0, &m->kv_heads, source, err) ||
        get_enum(root, "ffn_type", ffn_type_names, WL_FFN_COUNT, &ffn_type, source, err) ||
        get_enum(root, "norm", norm_names, WL_NORM_COUNT, &norm, source, err) ||
        get_enum(root, "position", position_names, WL_POS_COUNT, &pos, source, err) ||
        get_bool(root, "tie_embeddings", &tie, source, err) || get_bool(root, "bias", &bias, source, err) ||
        get_bool(root, "norm_bias", &norm_bias, source, err) ||
        get_bool(root, "embedding_norm", &embed_norm, source, err) ||
        get_bool(root, "qkv_bias", &qkv_bias, source, err))
        return -1;
    if (qkv_bias == 0 && bias)
        return sim_errf(err, "%s: qkv_bias: false with bias: true (every linear biased but QKV) is not modelled "
                        "(expected qkv_bias: true, or bias: false)", source);
    m->qkv_bias = !bias && qkv_bias == 1;
    m->ffn_type = (wl_ffn_type)ffn_type;
    m->norm = (wl_norm)norm;
    m->position = (wl_position)pos;
    m->untied = !tie;
    m->no_bias = !bias;
    m->embed_norm = embed_norm;
    if (norm_bias == 1 && norm == WL_NORM_RMSNORM)
        return sim_errf(err, "%s: norm_bias: rmsnorm has no bias (expected false or no norm_bias with norm "
                        "\"rmsnorm\")", source);
    m->norm_no_bias = norm == WL_NORM_LAYERNORM && norm_bias == 0;
    if (m->kv_heads && m->heads % m->kv_heads)
        return sim_errf(err, "%s: kv_heads: %d does not divide heads (%d) (expected a divisor: each K/V head "
                        "serves heads/kv_heads query heads)", source, m->kv_heads, m->heads);
    if (m->kv_heads == m->heads)
        m->kv_heads = 0; /* the default, stored as such */
    return 0;
}

cJSON *wl_model_parse(const char *text, const char *source, sim_err *err)
{
    if (!source)
        source = "model";
    if (!text) {
        sim_errf(err, "%s: no text", source);
        return NULL;
    }
    cJSON *root = sim_json_parse(text, source, err);
    if (!root)
        return NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        sim_errf(err, "%s: expected a JSON object {\"name\": ..., \"layers\": ..., ...}", source);
        return NULL;
    }
    /* a Hugging Face config.json names its class or its model type */
    if (cJSON_GetObjectItemCaseSensitive(root, "architectures") || cJSON_GetObjectItemCaseSensitive(root, "model_type")) {
        cJSON *native = wl_hf_translate(root, source, err);
        cJSON_Delete(root);
        return native;
    }
    return root;
}

int wl_model_from_json(const char *text, const char *source, wl_model *out, sim_err *err)
{
    if (!source)
        source = "model";
    cJSON *root = wl_model_parse(text, source, err);
    if (!root)
        return -1;
    for (const cJSON *it = root->child; it; it = it->next) {
        int known = 0;
        for (int i = 0; i < NMODEL_KEYS && !known; i++)
            known = it->string && strcmp(it->string, model_keys[i]) == 0;
        if (!known) {
            sim_errf(err, "%s: unknown field \"%s\" (known: " MODEL_KEYS_TEXT ")", source,
                     it->string ? it->string : "?");
            cJSON_Delete(root);
            return -1;
        }
    }

    wl_model m;
    memset(&m, 0, sizeof m);
    m.seq = 1024;
    m.vocab = 50257;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (name) {
        if (!cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) >= sizeof m.name) {
            char got[80];
            json_repr(name, got, sizeof got);
            sim_errf(err, "%s: name: expected a non-empty string of at most %d characters, got %s", source,
                     (int)sizeof m.name - 1, got);
            cJSON_Delete(root);
            return -1;
        }
        snprintf(m.name, sizeof m.name, "%s", name->valuestring);
    } else {
        /* the file name without directory and extension */
        const char *base = strrchr(source, '/');
        base = base ? base + 1 : source;
        size_t n = strcspn(base, ".");
        if (n >= sizeof m.name)
            n = sizeof m.name - 1;
        memcpy(m.name, base, n);
        m.name[n] = 0;
    }
    int rc = 0;
    rc = rc ? rc : get_posint(root, "layers", 1, &m.layers, source, err);
    rc = rc ? rc : get_posint(root, "hidden", 1, &m.hidden, source, err);
    rc = rc ? rc : get_posint(root, "heads", 1, &m.heads, source, err);
    m.ffn = 4 * m.hidden;
    rc = rc ? rc : get_posint(root, "ffn", 0, &m.ffn, source, err);
    rc = rc ? rc : get_posint(root, "seq", 0, &m.seq, source, err);
    rc = rc ? rc : get_posint(root, "vocab", 0, &m.vocab, source, err);
    rc = rc ? rc : get_posint(root, "position_table", 0, &m.pos_table, source, err);
    if (!rc && m.pos_table && m.pos_table < m.seq)
        rc = sim_errf(err, "%s: position_table: %d rows cannot place seq %d tokens (expected at least seq)", source,
                      m.pos_table, m.seq);
    m.moe = cJSON_GetObjectItemCaseSensitive(root, "moe") != NULL;
    if (!rc && m.hidden % m.heads)
        rc = sim_errf(err, "%s: hidden: %d is not divisible by heads (%d)", source, m.hidden, m.heads);
    rc = rc ? rc : read_architecture(root, &m, source, err);
    if (!rc && m.moe)
        rc = read_moe(cJSON_GetObjectItemCaseSensitive(root, "moe"), &m, source, err);
    cJSON_Delete(root);
    if (rc)
        return -1;
    *out = m;
    return 0;
}

int wl_model_load(const char *spec, wl_model *out, sim_err *err)
{
    if (!spec || !*spec)
        return sim_errf(err, "model: expected a built-in model name or a JSON file path");
    /* a built-in name first: "gpt-3072" → workloads/models/gpt-3072.json */
    if (!strchr(spec, '/') && strlen(spec) < 200) {
        char key[256];
        snprintf(key, sizeof key, "workloads/models/%s%s", spec,
                 strstr(spec, ".json") ? "" : ".json");
        const char *text = sim_embedded(key);
        if (text)
            return wl_model_from_json(text, key, out, err);
    }
    FILE *probe = fopen(spec, "rb");
    if (!probe) {
        int e = errno;
        char names[512] = "";
        size_t w = 0;
        for (int i = 0; sim_embedded_path(i); i++) {
            const char *p = sim_embedded_path(i);
            if (strncmp(p, "workloads/models/", 17) != 0)
                continue;
            int k = snprintf(names + w, sizeof names - w, "%s%.*s", w ? ", " : "", (int)(strlen(p) - 22), p + 17);
            if (k < 0 || (size_t)k >= sizeof names - w)
                break;
            w += (size_t)k;
        }
        return sim_errf(err, "%s: cannot open model: %s (not a file, nor a built-in model: %s)", spec, strerror(e),
                        w ? names : "none");
    }
    fclose(probe);
    char *text = sim_read_file(spec, err);
    if (!text)
        return -1;
    int rc = wl_model_from_json(text, spec, out, err);
    free(text);
    return rc;
}

/* ---- shapes and parameters ----------------------------------------------- */

int64_t wl_model_pos_rows(const wl_model *m)
{
    return m->position != WL_POS_LEARNED ? 0 : m->pos_table ? m->pos_table : m->seq;
}

int wl_model_kv_heads(const wl_model *m)
{
    return m->kv_heads > 0 ? m->kv_heads : m->heads;
}

int64_t wl_model_qkv_out(const wl_model *m)
{
    int64_t h = m->hidden, hd = m->heads > 0 ? h / m->heads : 0;
    return h + 2 * (int64_t)wl_model_kv_heads(m) * hd;
}

int64_t wl_model_fc1_out(const wl_model *m, int64_t ffn)
{
    return m->ffn_type == WL_FFN_SWIGLU ? 2 * ffn : ffn;
}

int64_t wl_model_norm_params(const wl_model *m)
{
    return m->norm == WL_NORM_LAYERNORM && !m->norm_no_bias ? 2 * (int64_t)m->hidden : m->hidden;
}

/* Per layer: QKV h*(h + 2*kv_dim) (+ its bias), output projection h^2 (+ h),
 * fc1 h*fc1_out (+ fc1_out), fc2 ffn*h (+ h), two norms.  For GPT (gelu,
 * biases, layernorm, kv_heads = heads) 4h^2 + 2h*ffn + ffn + 9h, i.e.
 * 12h^2 + 13h for ffn = 4h (Narayanan et al. 2021, Sec. 5.1). */
wl_layer_param_split wl_model_layer_params(const wl_model *m)
{
    int64_t h = m->hidden, f = m->ffn, qkv = wl_model_qkv_out(m), fc1 = wl_model_fc1_out(m, f);
    int64_t b = !m->no_bias, np = wl_model_norm_params(m);
    wl_layer_param_split p;
    p.attn_split = h * qkv + h * h + (b || m->qkv_bias) * qkv;
    p.attn_rep = b * h + np;
    p.mlp_split = h * fc1 + f * h + b * fc1;
    p.mlp_rep = b * h + np;
    return p;
}

double wl_model_ffn_params(const wl_model *m, int64_t ffn)
{
    int64_t h = m->hidden, fc1 = wl_model_fc1_out(m, ffn), b = !m->no_bias;
    return (double)(h * fc1 + ffn * h + b * (fc1 + h));
}

/* The layers, the word embeddings V*h (once more for an untied output
 * layer), the position table s*h (learned positions only), the final norm and
 * BLOOM's embedding norm.  Exact in doubles: every term is an integer below
 * 2^53. */
double wl_model_params(const wl_model *m)
{
    wl_layer_param_split p = wl_model_layer_params(m);
    int64_t h = m->hidden, np = wl_model_norm_params(m);
    int64_t layer = p.attn_split + p.attn_rep + p.mlp_split + p.mlp_rep;
    int64_t emb = (int64_t)m->vocab * h * (m->untied ? 2 : 1);
    int64_t pos = wl_model_pos_rows(m) * h;
    return (double)m->layers * (double)layer + (double)(emb + pos + np + (m->embed_norm ? np : 0));
}

cJSON *wl_model_describe(const wl_model *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddNumberToObject(o, "layers", m->layers);
    cJSON_AddNumberToObject(o, "hidden", m->hidden);
    cJSON_AddNumberToObject(o, "heads", m->heads);
    cJSON_AddNumberToObject(o, "kv_heads", wl_model_kv_heads(m));
    cJSON_AddNumberToObject(o, "ffn", m->ffn);
    cJSON_AddStringToObject(o, "ffn_type", wl_ffn_type_name(m->ffn_type));
    cJSON_AddStringToObject(o, "norm", wl_norm_name(m->norm));
    cJSON_AddStringToObject(o, "position", wl_position_name(m->position));
    cJSON_AddBoolToObject(o, "tie_embeddings", !m->untied);
    cJSON_AddBoolToObject(o, "bias", !m->no_bias);
    cJSON_AddBoolToObject(o, "qkv_bias", !m->no_bias || m->qkv_bias);
    cJSON_AddNumberToObject(o, "seq", m->seq);
    if (m->pos_table)
        cJSON_AddNumberToObject(o, "position_table", m->pos_table);
    cJSON_AddNumberToObject(o, "vocab", m->vocab);
    cJSON_AddNumberToObject(o, "parameters", wl_model_params(m));
    if (m->moe) {
        /* the parameters above are the dense model's; the experts here */
        const wl_moe *x = &m->moe_cfg;
        const struct { const char *key; double v; } f[] = {
            {"experts", x->experts}, {"top_k", x->top_k}, {"expert_ffn", x->expert_ffn},
            {"shared_ffn", x->shared_ffn}, {"capacity_factor", x->capacity_factor}, {"every", x->every},
            {"first", x->first}, {"total_parameters", wl_model_moe_params(m, 0)},
            {"active_parameters", wl_model_moe_params(m, 1)}};
        cJSON *e = cJSON_AddObjectToObject(o, "moe");
        for (size_t i = 0; i < sizeof f / sizeof *f; i++)
            cJSON_AddNumberToObject(e, f[i].key, f[i].v);
        cJSON_AddBoolToObject(e, "pad_to_capacity", x->pad_to_capacity);
        cJSON_AddStringToObject(e, "routing", "uniform");
    }
    return o;
}

/* ---- strategies -------------------------------------------------------- */

void wl_strategy_default(wl_strategy *s)
{
    memset(s, 0, sizeof *s);
    s->tp = 1;
    s->pp = 1;
    s->cp = 1;
    s->dp = 0;
    s->mb = 1;
    s->gb = 0;
    s->dtype = SIM_DTYPE_TF32;
    s->recompute = WL_RECOMPUTE_NONE;
    s->dp_bucket_bytes = 0; /* auto */
    s->grad_reduce = SIM_DTYPE_COUNT; /* auto */
    s->pipeline = WL_PIPE_1F1B;
    s->vstages = 1;
    s->ckpt_ratio = -1;
    s->recompute_layers = -1;
    s->dp_overlap = 0;
    s->zero = 0;
    s->osdp[0] = 0;
    s->osdp_split = 1;
    s->fsdp_impl = WL_FSDP_IMPL_FSDP1;
    s->fp8_recipe = WL_FP8_DELAYED;

    s->schedule = WL_TP_MEGATRON;
    s->sp = 0;
    s->tp_overlap = 3;
    s->tess_depth = 1;
    s->tp_cut_layers = 0;
    s->tp_cut_tp = 0;
}

#define KNOWN_KEYS                                                                                                                                                \
    "tp, pp, cp, ep, dp, mb, gb, dtype, recompute, recompute_layers, bucket, pipeline, vstages, ckpt_ratio, "                                                     \
    "dp_overlap, param_overlap, "                                                                                                                                 \
    "grad_reduce, zero, fsdp, fsdp_impl, fp8_recipe, fp8_casts, osdp, osdp_split, schedule, sp, tp_overlap_comm, tp_overlap, tess_depth, tp_cut, attn, kernels, " \
    "autocast, launch_blocking, p2p_sync, stage_split, pp_layers, grad_collective, grad_accum, loss, optimizer, routing, balance"

static const char *const tp_schedule_names[WL_TP_SCHEDULE_COUNT] = {
    "megatron", "default_checkpoint", "optim_comm_checkpoint", "overlap_checkpoint", "oases", "merak", "tesseract"};
static const char *const recompute_names[] = {"none", "full", "selective", "oases"};
static const char *const fsdp_names[WL_FSDP_COUNT] = {"none", "full", "grad_op", "hybrid"};
static const char *const fsdp_impl_names[WL_FSDP_IMPL_COUNT] = {"fsdp1", "fsdp2", "megatron"};
static const char *const fp8_recipe_names[WL_FP8_RECIPE_COUNT] = {"delayed", "tensorwise", "mxfp8"};
static const char *const fp8_casts_names[2] = {"fused", "standalone"};
static const char *const split_names[WL_SPLIT_COUNT] = {"uniform", "embedding_as_layer", "list"};
static const char *const grad_coll_names[WL_GRAD_COUNT] = {"auto", "allreduce", "reducescatter"};
static const char *const grad_accum_names[WL_GACC_COUNT] = {"fused", "cast_add"};
static const char *const balance_names[WL_BAL_COUNT] = {"none", "fastermoe", "prophet"};
static const char *const optimizer_names[WL_OPT_COUNT] = {"fused", "foreach", "megatron", "megatron_legacy"};

/* The index of val in names[0..n), -1 when it is none of them. */
static int name_index(const char *val, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(val, names[i]) == 0)
            return i;
    return -1;
}

const char *wl_balance_name(int b)
{
    return (unsigned)b < WL_BAL_COUNT ? balance_names[b] : "?";
}

int wl_strategy_set_routing(wl_strategy *s, const char *spec, sim_err *err)
{
    wl_routing_cfg c;
    wl_routing_cfg_default(&c);
    size_t n = strlen(spec);
    if (n > WL_ROUTING_SPEC_MAX)
        return sim_errf(err, "at most %d characters, got %zu", WL_ROUTING_SPEC_MAX, n);
    if (wl_routing_cfg_parse(spec, &c, err) < 0)
        return -1;
    memset(s->routing, 0, sizeof s->routing); /* whole, so that equal strategies compare equal */
    memcpy(s->routing, spec, n + 1);
    return 0;
}

const char *wl_stage_split_name(wl_stage_split k)
{
    return k >= 0 && k < WL_SPLIT_COUNT ? split_names[k] : "?";
}
static const char *const attn_names[WL_ATTN_COUNT] = {"auto",   "flash",  "unfused",
                                                       "flash2", "flash1", "flash-triton"};
static const char *const loss_names[WL_LOSS_COUNT] = {"megatron", "torch", "fused", "megatron_fused"};

int wl_attn_impl(wl_attn a)
{
    return a == WL_ATTN_FLASH2 ? SIM_ATTN_FA2 : a == WL_ATTN_FLASH1 ? SIM_ATTN_FA1
                                                : a == WL_ATTN_TRITON ? SIM_ATTN_TRITON : SIM_ATTN_BEST;
}

const char *wl_tp_schedule_name(wl_tp_schedule s)
{
    return (unsigned)s < WL_TP_SCHEDULE_COUNT ? tp_schedule_names[s] : "?";
}

const char *wl_recompute_name(wl_recompute r)
{
    return (unsigned)r < sizeof recompute_names / sizeof recompute_names[0] ? recompute_names[r] : "?";
}

/* The recompute mode each rung of the Oases ladder is defined by (papers.md
 * Sec. 1.3), or -1 when the schedule leaves it free. */
static int implied_recompute(wl_tp_schedule s)
{
    switch (s) {
    case WL_TP_DEFAULT_CKPT:
    case WL_TP_OVERLAP_CKPT:
        return WL_RECOMPUTE_FULL;
    case WL_TP_OPTIM_COMM_CKPT:
    case WL_TP_OASES:
        return WL_RECOMPUTE_OASES;
    default:
        return -1;
    }
}

int wl_strategy_cp(const wl_strategy *s)
{
    return s->cp > 1 ? s->cp : 1;
}

int wl_strategy_resolve_world(wl_strategy *st, const sim_machine *mach, sim_err *err)
{
    int cp = wl_strategy_cp(st);
    long long tpp = (long long)st->tp * st->pp * cp;
    /* "cp*" in the messages only when context parallelism is used */
    char cps[24] = "", cpv[24] = "";
    if (cp > 1) {
        snprintf(cps, sizeof cps, "*cp");
        snprintf(cpv, sizeof cpv, "*%d", cp);
    }
    if (st->dp == 0) {
        if (!mach)
            return sim_errf(err, "strategy: dp=auto needs a platform to take the GPU count from");
        if (mach->ngpus % tpp)
            return sim_errf(err, "tp*pp%s = %d*%d%s = %lld does not divide the %d GPUs of the platform%s%s; "
                            "give dp explicitly or change tp/pp%s", cps,
                            st->tp, st->pp, cpv, tpp, mach->ngpus, mach->name[0] ? " " : "", mach->name,
                            cp > 1 ? "/cp" : "");
        st->dp = (int)(mach->ngpus / tpp);
    } else if (mach && tpp * st->dp != mach->ngpus) {
        return sim_errf(err, "tp*pp%s*dp = %d*%d%s*%d = %lld GPUs, but the platform%s%s has %d GPUs", cps, st->tp,
                        st->pp, cpv, st->dp, tpp * st->dp, mach->name[0] ? " " : "", mach->name, mach->ngpus);
    }
    long long mbdp = (long long)st->mb * st->dp;
    if (st->gb == 0) {
        if (mbdp > 0x7fffffff)
            return sim_errf(err, "gb = mb*dp = %lld is too large", mbdp);
        st->gb = (int)mbdp;
    }
    return 0;
}

int wl_strategy_ep(const wl_strategy *s)
{
    return s->ep > 1 ? s->ep : 1;
}

int wl_strategy_check_tp(const wl_strategy *s, sim_err *err)
{
    if ((unsigned)s->schedule >= WL_TP_SCHEDULE_COUNT)
        return sim_errf(err, "strategy: schedule: unknown schedule %d", (int)s->schedule);
    int want = implied_recompute(s->schedule);
    if (want >= 0 && (int)s->recompute != want)
        return sim_errf(err, "strategy: schedule=%s recomputes %s (docs/papers.md Sec. 1.3), but recompute=%s was given; "
                        "drop recompute or give recompute=%s",
                        wl_tp_schedule_name(s->schedule), wl_recompute_name((wl_recompute)want),
                        wl_recompute_name(s->recompute), wl_recompute_name((wl_recompute)want));
    if (s->recompute == WL_RECOMPUTE_OASES && s->schedule != WL_TP_MEGATRON && want < 0)
        return sim_errf(err, "strategy: recompute=oases (block-level, without communication) needs schedule=megatron, "
                        "optim_comm_checkpoint or oases, not schedule=%s", wl_tp_schedule_name(s->schedule));
    if (wl_strategy_cp(s) > 1 && s->schedule != WL_TP_MEGATRON)
        return sim_errf(err, "strategy: cp=%d (Megatron-Core context parallelism) is modelled for schedule=megatron "
                        "only, not schedule=%s", s->cp, wl_tp_schedule_name(s->schedule));
    if (s->sp && s->schedule != WL_TP_MEGATRON)
        return sim_errf(err, "strategy: sp=1 (Megatron sequence parallelism) needs schedule=megatron, not schedule=%s",
                        wl_tp_schedule_name(s->schedule));
    if (s->tp_overlap_comm && !s->sp)
        return sim_errf(err, "strategy: tp_overlap_comm=1 overlaps sequence parallelism's all-gathers and "
                        "reduce-scatters with the GEMMs (Megatron asserts --sequence-parallel with "
                        "--tp-comm-overlap): give sp=1");
    if (s->sp && s->recompute == WL_RECOMPUTE_OASES)
        return sim_errf(err, "strategy: sp=1 does not combine with recompute=oases (Oases saves the all-reduced, "
                        "unsharded block outputs)");
    if (s->tp_overlap < 1 || s->tp_overlap > 3)
        return sim_errf(err, "strategy: tp_overlap: expected 1, 2 or 3, got %d", s->tp_overlap);
    if (s->tess_depth < 1)
        return sim_errf(err, "strategy: tess_depth: expected a positive integer, got %d", s->tess_depth);
    if (s->tess_depth > 1 && s->schedule != WL_TP_TESSERACT)
        return sim_errf(err, "strategy: tess_depth=%d needs schedule=tesseract", s->tess_depth);
    if (s->schedule == WL_TP_TESSERACT) {
        if (s->tp % s->tess_depth)
            return sim_errf(err, "strategy: schedule=tesseract needs tp = q*q*tess_depth, but tess_depth=%d does not "
                            "divide tp=%d", s->tess_depth, s->tp);
        int qq = s->tp / s->tess_depth, q = 1;
        while (q * q < qq)
            q++;
        if (q * q != qq)
            return sim_errf(err, "strategy: schedule=tesseract needs tp = q*q*tess_depth, but tp/tess_depth = %d/%d = %d "
                            "is not a square", s->tp, s->tess_depth, qq);
    }
    if (s->tp_cut_tp) {
        if (s->schedule != WL_TP_OASES && s->schedule != WL_TP_OPTIM_COMM_CKPT && s->schedule != WL_TP_OVERLAP_CKPT &&
            s->schedule != WL_TP_DEFAULT_CKPT && s->schedule != WL_TP_MEGATRON)
            return sim_errf(err, "strategy: tp_cut (Oases' cut-point resharding) needs a 1-D schedule (megatron or the "
                            "Oases ladder), not schedule=%s", wl_tp_schedule_name(s->schedule));
        if (s->sp)
            return sim_errf(err, "strategy: tp_cut does not combine with sp=1");
        if (s->tp_cut_tp >= s->tp || s->tp % s->tp_cut_tp)
            return sim_errf(err, "strategy: tp_cut=%d:%d: the TP degree before the cut must be smaller than tp=%d and "
                            "divide it (Oases all-gathers along the batch over tp/%d ranks at the cut)",
                            s->tp_cut_layers, s->tp_cut_tp, s->tp, s->tp_cut_tp);
        if (s->tp_cut_layers < 1)
            return sim_errf(err, "strategy: tp_cut: expected at least one layer before the cut, got %d", s->tp_cut_layers);
    }
    return 0;
}

static int parse_int(const char *key, const char *val, int allow_auto, int *out, sim_err *err)
{
    if (allow_auto && strcmp(val, "auto") == 0) {
        *out = 0;
        return 0;
    }
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (!*val || *end || errno || v < 1 || v > INT_MAX)
        return sim_errf(err, "strategy: %s: expected a positive integer%s, got \"%s\"", key,
                        allow_auto ? " or auto" : "", val);
    *out = (int)v;
    return 0;
}

/* A 0/1 switch; `what` explains the two values in the error message. */
static int parse_bool(const char *key, const char *val, const char *what, int *out, sim_err *err)
{
    if (strcmp(val, "0") && strcmp(val, "1"))
        return sim_errf(err, "strategy: %s: expected 0 or 1%s, got \"%s\"", key, what, val);
    *out = val[0] == '1';
    return 0;
}

/* pp_layers: the transformer layers of each virtual stage, '/'-separated,
 * N*K for K stages of N layers ("5/6*10/5"); 0 is allowed (Megatron-Core's
 * embedding-only first virtual stage). */
static int parse_pp_layers(const char *val, wl_strategy *s, sim_err *err)
{
    int n = 0;
    const char *p = val;
    memset(s->pp_layers, 0, sizeof s->pp_layers);
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10), k = 1;
        if (end == p || errno || v < 0 || v > 32767)
            return sim_errf(err, "strategy: pp_layers: expected the layers of each virtual stage, '/'-separated "
                            "whole numbers 0-32767 (N*K for K stages of N), got \"%s\"", val);
        if (*end == '*') {
            const char *q = end + 1;
            k = strtol(q, &end, 10);
            if (end == q || errno || k < 1 || k > WL_PP_LAYERS_MAX)
                return sim_errf(err, "strategy: pp_layers: expected a repeat count 1-%d after '*' in \"%s\"",
                                WL_PP_LAYERS_MAX, val);
        }
        if (n + k > WL_PP_LAYERS_MAX)
            return sim_errf(err, "strategy: pp_layers: more than %d virtual stages in \"%s\"", WL_PP_LAYERS_MAX, val);
        while (k-- > 0)
            s->pp_layers[n++] = (short)v;
        if (!*end)
            break;
        if (*end != '/')
            return sim_errf(err, "strategy: pp_layers: expected '/' between the virtual stages' layers, got '%c' in "
                            "\"%s\"", *end, val);
        p = end + 1;
    }
    s->npp_layers = n;
    s->stage_split = WL_SPLIT_LIST;
    return 0;
}

static void trim(char **b, char **e)
{
    while (*b < *e && (**b == ' ' || **b == '\t' || **b == '\n' || **b == '\r'))
        (*b)++;
    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\n' || (*e)[-1] == '\r'))
        (*e)--;
}

static int apply_kv(const char *key, const char *val, wl_strategy *s, int *recompute_given, sim_err *err)
{
    if (strcmp(key, "tp") == 0)
        return parse_int("tp", val, 0, &s->tp, err);
    if (strcmp(key, "pp") == 0)
        return parse_int("pp", val, 0, &s->pp, err);
    if (strcmp(key, "cp") == 0 || strcmp(key, "context_parallel") == 0)
        return parse_int("cp", val, 0, &s->cp, err);
    if (strcmp(key, "dp") == 0)
        return parse_int("dp", val, 1, &s->dp, err);
    if (strcmp(key, "ep") == 0 || strcmp(key, "expert_parallel") == 0)
        return parse_int("ep", val, 0, &s->ep, err);
    if (strcmp(key, "mb") == 0 || strcmp(key, "micro-batch") == 0 || strcmp(key, "micro_batch") == 0)
        return parse_int("mb", val, 0, &s->mb, err);
    if (strcmp(key, "gb") == 0 || strcmp(key, "global-batch") == 0 || strcmp(key, "global_batch") == 0)
        return parse_int("gb", val, 1, &s->gb, err);
    if (strcmp(key, "dtype") == 0) {
        sim_dtype d;
        if (sim_dtype_parse(val, &d))
            return sim_errf(err, "strategy: dtype: expected fp32, tf32, fp16, bf16 or fp8, got \"%s\"", val);
        s->dtype = d;
        return 0;
    }
    if (strcmp(key, "recompute") == 0) {
        for (int i = 0; i < (int)(sizeof recompute_names / sizeof recompute_names[0]); i++)
            if (strcmp(val, recompute_names[i]) == 0) {
                s->recompute = (wl_recompute)i;
                *recompute_given = 1;
                return 0;
            }
        return sim_errf(err, "strategy: recompute: expected none, full, selective or oases, got \"%s\"", val);
    }
    if (strcmp(key, "schedule") == 0) {
        for (int i = 0; i < WL_TP_SCHEDULE_COUNT; i++)
            if (strcmp(val, tp_schedule_names[i]) == 0) {
                s->schedule = (wl_tp_schedule)i;
                /* a rung of the Oases ladder is its recompute mode: it
                 * replaces a recompute given before it (a base strategy
                 * followed by schedule=oases); one given after it must agree
                 * (wl_strategy_check_tp) */
                if (implied_recompute(s->schedule) >= 0) {
                    s->recompute = (wl_recompute)implied_recompute(s->schedule);
                    *recompute_given = 0;
                }
                return 0;
            }
        return sim_errf(err, "strategy: schedule: expected megatron, default_checkpoint, optim_comm_checkpoint, "
                        "overlap_checkpoint, oases, merak or tesseract, got \"%s\"", val);
    }
    if (strcmp(key, "sp") == 0 || strcmp(key, "sequence_parallel") == 0)
        return parse_bool("sp", val, "", &s->sp, err);
    if (strcmp(key, "tp_overlap_comm") == 0 || strcmp(key, "tp_comm_overlap") == 0 ||
        strcmp(key, "tp-comm-overlap") == 0)
        return parse_bool("tp_overlap_comm", val, " (Megatron-Core's TP communication overlap)", &s->tp_overlap_comm,
                          err);
    if (strcmp(key, "tp_overlap") == 0 || strcmp(key, "tp_overlapping_level") == 0) {
        if (strcmp(val, "1") && strcmp(val, "2") && strcmp(val, "3"))
            return sim_errf(err, "strategy: tp_overlap: expected 1, 2 or 3 (Merak's tp_overlapping_level), got \"%s\"",
                            val);
        s->tp_overlap = val[0] - '0';
        return 0;
    }
    if (strcmp(key, "tess_depth") == 0)
        return parse_int("tess_depth", val, 0, &s->tess_depth, err);
    if (strcmp(key, "attn") == 0 || strcmp(key, "attention") == 0 || strcmp(key, "attention-backend") == 0 ||
        strcmp(key, "attention_backend") == 0) {
        int i = name_index(val, attn_names, WL_ATTN_COUNT);
        if (i >= 0) {
            s->attn = (wl_attn)i;
            return 0;
        }
        return sim_errf(err, "strategy: attn: expected auto (fused FlashAttention in fp16/bf16/fp8 on sm80+ GPUs, "
                        "unfused otherwise), flash (the GPU's best fused kernel), flash2, flash1, flash-triton or "
                        "unfused, got \"%s\"", val);
    }
    if (strcmp(key, "kernels") == 0) {
        if (strcmp(val, "fused") && strcmp(val, "eager"))
            return sim_errf(err, "strategy: kernels: expected fused (Megatron / Transformer Engine fusions: bias-GELU, "
                            "bias-dropout-add, fused norms) or eager (PyTorch eager: one kernel per element-wise op), "
                            "got \"%s\"", val);
        s->eager_kernels = strcmp(val, "eager") == 0;
        return 0;
    }
    if (strcmp(key, "loss") == 0) {
        int i = name_index(val, loss_names, WL_LOSS_COUNT);
        if (i >= 0) {
            s->loss = (wl_loss)i;
            return 0;
        }
        return sim_errf(err, "strategy: loss: expected megatron (Megatron's unfused vocab-parallel cross-entropy: 52 bytes "
                        "per bf16 logit), megatron_fused (Megatron-Core's cross_entropy_loss_fusion: 32), torch "
                        "(PyTorch's cross_entropy: 48 on logits cast up, 18 on bf16 logits without autocast) or "
                        "fused (flash-attn's Triton cross-entropy: 3 x the logits' size), got \"%s\"", val);
    }
    if (strcmp(key, "optimizer") == 0) {
        int i = name_index(val, optimizer_names, WL_OPT_COUNT);
        if (i >= 0) {
            s->optimizer = (wl_optimizer)i;
            return 0;
        }
        return sim_errf(err, "strategy: optimizer: expected fused (one fused AdamW pass, 28 bytes per parameter), "
                        "foreach (PyTorch's multi-tensor AdamW: 80), megatron (Megatron's step: fused Adam, the "
                        "gradient norm, the buffer zeroed, fp16's unscale) or megatron_legacy (Megatron-LM of "
                        "early 2021: its DDP's flattening copies, 16-bit gradients copied to fp32 and the weights "
                        "back: 64 under fp16), got \"%s\"", val);
    }
    if (strcmp(key, "routing") == 0)
        return wl_strategy_set_routing(s, val, err) < 0 ? sim_err_prefix(err, "strategy: routing: ") : 0;
    if (strcmp(key, "balance") == 0) {
        int i = name_index(val, balance_names, WL_BAL_COUNT);
        if (i >= 0) {
            s->balance = (wl_balance)i;
            return 0;
        }
        return sim_errf(err, "strategy: balance: expected none (DeepSpeed-MoE), fastermoe (FasterMoE's dynamic "
                        "shadowing) or prophet (Pro-Prophet's planned replication), got \"%s\"", val);
    }
    if (strcmp(key, "launch_blocking") == 0)
        return parse_bool("launch_blocking", val,
                          " (1: CUDA_LAUNCH_BLOCKING=1, each operation of a GPU launched only when its previous one "
                          "has finished, whatever its stream; 0: asynchronous launches)",
                          &s->launch_blocking, err);
    if (strcmp(key, "p2p_sync") == 0)
        return parse_bool("p2p_sync", val,
                          " (1: torch.cuda.synchronize() after every pipeline exchange, as Megatron-LM's "
                          "p2p_communication.py before Megatron-Core; 0: exchanges beside the compute)",
                          &s->p2p_sync, err);
    if (strcmp(key, "autocast") == 0)
        return parse_bool("autocast", val,
                          " (1: torch.autocast over fp32 parameters, casting the weights in every forward; "
                          "0: a 16-bit copy of the weights kept by the framework)",
                          &s->autocast, err);
    if (strcmp(key, "tp_cut") == 0) {
        if (strcmp(val, "none") == 0) {
            s->tp_cut_layers = s->tp_cut_tp = 0;
            return 0;
        }
        const char *colon = strchr(val, ':');
        char a[32];
        if (!colon || (size_t)(colon - val) >= sizeof a)
            return sim_errf(err, "strategy: tp_cut: expected LAYERS:TP (the first LAYERS layers run at TP degree TP, "
                            "the rest at tp) or none, got \"%s\"", val);
        memcpy(a, val, (size_t)(colon - val));
        a[colon - val] = 0;
        int nl, t;
        if (parse_int("tp_cut (layers)", a, 0, &nl, err) || parse_int("tp_cut (TP degree)", colon + 1, 0, &t, err))
            return -1;
        s->tp_cut_layers = nl;
        s->tp_cut_tp = t;
        return 0;
    }
    if (strcmp(key, "bucket") == 0) {
        if (strcmp(val, "auto") == 0) {
            s->dp_bucket_bytes = 0;
            return 0;
        }
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        if (!*val || *end || errno || !(v > 0) || v > 1e9 || v * 1048576.0 < 1)
            return sim_errf(err, "strategy: bucket: expected a positive size in MiB or auto, got \"%s\"", val);
        s->dp_bucket_bytes = llround(v * 1048576.0);
        return 0;
    }
    if (strcmp(key, "pipeline") == 0 || strcmp(key, "pipeline-schedule") == 0 ||
        strcmp(key, "pipeline_schedule") == 0) {
        if (wl_pipe_parse(val, &s->pipeline))
            return sim_errf(err, "strategy: pipeline: expected one of " WL_PIPE_NAMES ", got \"%s\"", val);
        return 0;
    }
    if (strcmp(key, "vstages") == 0 || strcmp(key, "vpp") == 0 ||
        strcmp(key, "virtual-pipeline-stages") == 0 || strcmp(key, "virtual_pipeline_stages") == 0)
        return parse_int("vstages", val, 0, &s->vstages, err);
    if (strcmp(key, "ckpt_ratio") == 0 || strcmp(key, "activation_checkpoint_ratio") == 0) {
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        if (!*val || *end || errno || !(v >= 0 && v <= 1))
            return sim_errf(err, "strategy: ckpt_ratio: expected a number between 0 and 1, got \"%s\"", val);
        s->ckpt_ratio = v;
        return 0;
    }
    if (strcmp(key, "recompute_layers") == 0 || strcmp(key, "recompute_num_layers") == 0 ||
        strcmp(key, "recompute-num-layers") == 0) {
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (!*val || *end || errno || v < 0 || v > (1 << 16))
            return sim_errf(err,
                            "strategy: recompute_layers: expected the number of layers of each model chunk "
                            "that recompute=full recomputes, 0 to %d, got \"%s\"",
                            1 << 16, val);
        s->recompute_layers = (int)v;
        return 0;
    }
    if (strcmp(key, "dp_overlap") == 0 || strcmp(key, "overlap-grad-reduce") == 0 ||
        strcmp(key, "overlap_grad_reduce") == 0)
        return parse_bool("dp_overlap", val, " (0: all-reduce after the flush, 1: buckets all-reduced while backward "
                          "runs)", &s->dp_overlap, err);
    if (strcmp(key, "param_overlap") == 0 || strcmp(key, "overlap-param-gather") == 0 ||
        strcmp(key, "overlap_param_gather") == 0)
        return parse_bool("param_overlap", val, " (0: parameters all-gathered after the optimizer step, 1: while "
                          "the next forward runs)", &s->param_overlap, err);
    if (strcmp(key, "grad_reduce") == 0) {
        sim_dtype d;
        if (strcmp(val, "auto") == 0)
            d = SIM_DTYPE_COUNT;
        else if (sim_dtype_parse(val, &d) || (d != SIM_DTYPE_FP32 && d != SIM_DTYPE_BF16 && d != SIM_DTYPE_FP16))
            return sim_errf(err, "strategy: grad_reduce: expected auto, fp32, bf16 or fp16 (the dtype gradients are "
                            "reduced in), got \"%s\"", val);
        s->grad_reduce = d;
        return 0;
    }
    if (strcmp(key, "zero") == 0 || strcmp(key, "zero_stage") == 0 || strcmp(key, "zero-stage") == 0) {
        if (strcmp(val, "fsdp") == 0) {
            s->zero = 3;
            return 0;
        }
        if (strlen(val) != 1 || val[0] < '0' || val[0] > '3')
            return sim_errf(err, "strategy: zero: expected 0, 1, 2, 3 (or fsdp = 3), got \"%s\"", val);
        s->zero = val[0] - '0';
        return 0;
    }
    if (strcmp(key, "fsdp") == 0) {
        static const char *const aliases[WL_FSDP_COUNT] = {"no_shard", "full_shard", "shard_grad_op", "hybrid_shard"};
        for (int i = 0; i < WL_FSDP_COUNT; i++)
            if (strcmp(val, fsdp_names[i]) == 0 || strcmp(val, aliases[i]) == 0) {
                s->fsdp = (wl_fsdp)i;
                return 0;
            }
        return sim_errf(err, "strategy: fsdp: expected none, full, grad_op or hybrid (PyTorch FSDP's FULL_SHARD, "
                        "SHARD_GRAD_OP, HYBRID_SHARD), got \"%s\"", val);
    }
    if (strcmp(key, "grad_accum") == 0) {
        for (int i = 0; i < WL_GACC_COUNT; i++)
            if (strcmp(val, grad_accum_names[i]) == 0) {
                s->grad_accum = (wl_grad_accum)i;
                return 0;
            }
        return sim_errf(err, "strategy: grad_accum: expected fused (the weight-gradient GEMMs add into the buffer) or "
                        "cast_add (each micro-batch's 16-bit gradients cast and added into fp32, DeepSpeed's "
                        "BF16_Optimizer), got \"%s\"", val);
    }
    if (strcmp(key, "fsdp_impl") == 0) {
        static const char *const aliases[WL_FSDP_IMPL_COUNT] = {"FullyShardedDataParallel", "fully_shard",
                                                                "megatron_fsdp"};
        for (int i = 0; i < WL_FSDP_IMPL_COUNT; i++)
            if (strcmp(val, fsdp_impl_names[i]) == 0 || strcmp(val, aliases[i]) == 0) {
                s->fsdp_impl = (wl_fsdp_impl)i;
                return 0;
            }
        return sim_errf(err, "strategy: fsdp_impl: expected fsdp1 (PyTorch's FullyShardedDataParallel), fsdp2 "
                        "(PyTorch's fully_shard) or megatron (Megatron-Core's Megatron-FSDP), got \"%s\"", val);
    }
    if (strcmp(key, "fp8_recipe") == 0) {
        /* Megatron's names, Transformer Engine's recipe classes and the
         * Megatron-Bridge tables' abbreviations */
        static const char *const aliases[WL_FP8_RECIPE_COUNT][2] = {
            {"DelayedScaling", "fp8-ds"}, {"Float8CurrentScaling", "fp8-cs"}, {"MXFP8BlockScaling", "fp8-mx"}};
        for (int i = 0; i < WL_FP8_RECIPE_COUNT; i++)
            if (!strcmp(val, fp8_recipe_names[i]) || !strcmp(val, aliases[i][0]) || !strcmp(val, aliases[i][1])) {
                s->fp8_recipe = (wl_fp8_recipe)i;
                return 0;
            }
        return sim_errf(err, "strategy: fp8_recipe: expected delayed (Transformer Engine's DelayedScaling), "
                        "tensorwise (Float8CurrentScaling) or mxfp8 (MXFP8BlockScaling), got \"%s\"", val);
    }
    if (strcmp(key, "fp8_casts") == 0) {
        int i = name_index(val, fp8_casts_names, 2);
        if (i >= 0) {
            s->fp8_standalone = i;
            return 0;
        }
        return sim_errf(err, "strategy: fp8_casts: expected fused (Transformer Engine's LayerNormLinear / "
                        "LayerNormMLP: the norms and the activation write FP8 for the next GEMM) or standalone "
                        "(te.Linear alone: each linear casts its own input), got \"%s\"", val);
    }
    if (strcmp(key, "osdp_split") == 0) {
        char *end;
        long k = strtol(val, &end, 10);
        if (end == val || *end || k < 1 || k > 64)
            return sim_errf(err, "strategy: osdp_split: expected the number of slices each sharded linear is gathered "
                            "in, an integer 1-64 (1 = whole units), got \"%s\"", val);
        s->osdp_split = (int)k;
        return 0;
    }
    if (strcmp(key, "osdp") == 0) {
        /* one level per layer ('0'..'3'), '_' or '.' allowed as separators
         * for readability; "" or "off" turns OSDP off */
        if (strcmp(val, "off") == 0) {
            s->osdp[0] = 0;
            return 0;
        }
        size_t n = 0;
        for (const char *c = val; *c; c++) {
            if (*c == '_' || *c == '.')
                continue;
            if (*c < '0' || *c > '3')
                return sim_errf(err, "strategy: osdp: expected one sharding level 0-3 per layer (bit 0: attention "
                                "linears sharded, bit 1: MLP linears sharded), got '%c' in \"%s\"", *c, val);
            if (n >= WL_OSDP_MAX)
                return sim_errf(err, "strategy: osdp: more than %d layers", WL_OSDP_MAX);
            s->osdp[n++] = *c;
        }
        if (n == 0)
            return sim_errf(err, "strategy: osdp: expected one sharding level 0-3 per layer, got \"%s\"", val);
        s->osdp[n] = 0;
        return 0;
    }
    if (strcmp(key, "stage_split") == 0) {
        /* also DeepSpeed's own spelling of the embedding split (its other
         * methods, 'parameters' and 'uniform' over its whole layer list,
         * are not these) */
        if (strcmp(val, "uniform") == 0)
            s->stage_split = WL_SPLIT_UNIFORM;
        else if (strcmp(val, "embedding_as_layer") == 0 || strcmp(val, "type:transformer|embedding") == 0)
            s->stage_split = WL_SPLIT_EMBEDDING;
        else
            return sim_errf(err, "strategy: stage_split: expected uniform (L/(pp*vstages) layers per virtual stage) "
                            "or embedding_as_layer (the embedding and the output layer count as one layer each; "
                            "DeepSpeed's 'type:transformer|embedding'), or give the layers per virtual stage with "
                            "pp_layers=, got \"%s\"", val);
        s->npp_layers = 0; /* one split at a time: the last key given wins */
        memset(s->pp_layers, 0, sizeof s->pp_layers);
        return 0;
    }
    if (strcmp(key, "pp_layers") == 0)
        return parse_pp_layers(val, s, err);
    if (strcmp(key, "grad_collective") == 0) {
        int i = name_index(val, grad_coll_names, WL_GRAD_COUNT);
        if (i >= 0) {
            s->grad_coll = (wl_grad_coll)i;
            return 0;
        }
        return sim_errf(err, "strategy: grad_collective: expected auto, allreduce (zero=1: the whole gradient "
                        "all-reduced, each rank updating its shard, as DeepSpeed's BF16_Optimizer) or reducescatter "
                        "(Megatron's distributed optimizer), got \"%s\"", val);
    }
    return sim_errf(err, "strategy: unknown key \"%s\" (known: " KNOWN_KEYS ")", key);
}

int wl_strategy_parse(const char *text, wl_strategy *s, sim_err *err)
{
    if (!text)
        return 0;
    char *copy = strdup(text);
    if (!copy)
        return sim_errf(err, "strategy: out of memory");
    wl_strategy tmp = *s;
    int rc = 0, recompute_given = 0;
    for (char *item = copy; item && !rc;) {
        char *comma = strchr(item, ',');
        char *end = comma ? comma : item + strlen(item);
        char *b = item, *e = end;
        trim(&b, &e);
        if (b < e) {
            *e = 0;
            char *eq = strchr(b, '=');
            if (!eq) {
                rc = sim_errf(err, "strategy: \"%s\": expected key=value (keys: " KNOWN_KEYS ")", b);
                break;
            }
            char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
            trim(&kb, &ke);
            trim(&vb, &ve);
            *ke = 0;
            *ve = 0;
            if (!*kb)
                rc = sim_errf(err, "strategy: \"%s\": missing key before '='", b);
            else
                rc = apply_kv(kb, vb, &tmp, &recompute_given, err);
        }
        item = comma ? comma + 1 : NULL;
    }
    free(copy);
    if (!rc && !recompute_given && implied_recompute(tmp.schedule) >= 0)
        tmp.recompute = (wl_recompute)implied_recompute(tmp.schedule);
    if (!rc)
        rc = wl_strategy_check_tp(&tmp, err);
    if (!rc)
        *s = tmp;
    return rc;
}

void wl_strategy_format(const wl_strategy *s, char *buf, int len)
{
    if (!buf || len <= 0)
        return;
    char dp[16], gb[16], bucket[32];
    if (s->dp)
        snprintf(dp, sizeof dp, "%d", s->dp);
    else
        snprintf(dp, sizeof dp, "auto");
    if (s->gb)
        snprintf(gb, sizeof gb, "%d", s->gb);
    else
        snprintf(gb, sizeof gb, "auto");
    if (s->dp_bucket_bytes <= 0)
        snprintf(bucket, sizeof bucket, "auto");
    else if (s->dp_bucket_bytes % 1048576 == 0)
        snprintf(bucket, sizeof bucket, "%lld", (long long)(s->dp_bucket_bytes / 1048576));
    else
        snprintf(bucket, sizeof bucket, "%.17g", (double)s->dp_bucket_bytes / 1048576.0);
    int n = snprintf(buf, (size_t)len, "tp=%d,pp=%d,dp=%s,mb=%d,gb=%s,dtype=%s,recompute=%s,bucket=%s", s->tp, s->pp,
                     dp, s->mb, gb, sim_dtype_name(s->dtype), wl_recompute_name(s->recompute),
                     bucket);
    /* the keys of pipeline schedules, DP overlap, ZeRO and OSDP only when
     * they differ from the defaults, so that plain strategies read as before */
#define APPEND(...)                                                         \
    do {                                                                    \
        if (n >= 0 && n < len)                                              \
            n += snprintf(buf + n, (size_t)(len - n), __VA_ARGS__);         \
    } while (0)
    if (wl_strategy_cp(s) > 1)
        APPEND(",cp=%d", s->cp);
    if (wl_strategy_ep(s) > 1)
        APPEND(",ep=%d", s->ep);
    if (s->pipeline != WL_PIPE_1F1B)
        APPEND(",pipeline=%s", wl_pipe_name(s->pipeline));
    if (s->vstages != 1)
        APPEND(",vstages=%d", s->vstages);
    if (s->ckpt_ratio >= 0) {
        char r[32];
        for (int prec = 1; prec <= 17; prec++) { /* shortest form that reads back exactly */
            snprintf(r, sizeof r, "%.*g", prec, s->ckpt_ratio);
            if (strtod(r, NULL) == s->ckpt_ratio)
                break;
        }
        APPEND(",ckpt_ratio=%s", r);
    }
    if (s->recompute_layers >= 0)
        APPEND(",recompute_layers=%d", s->recompute_layers);
    if (s->dp_overlap)
        APPEND(",dp_overlap=1");
    if (s->param_overlap)
        APPEND(",param_overlap=1");
    if (s->grad_reduce != SIM_DTYPE_COUNT)
        APPEND(",grad_reduce=%s", sim_dtype_name(s->grad_reduce));
    if (s->zero)
        APPEND(",zero=%d", s->zero);
    if (s->fsdp)
        APPEND(",fsdp=%s", fsdp_names[s->fsdp]);
    if (s->fsdp_impl != WL_FSDP_IMPL_FSDP1)
        APPEND(",fsdp_impl=%s", fsdp_impl_names[s->fsdp_impl]);
    if (s->fp8_recipe != WL_FP8_DELAYED)
        APPEND(",fp8_recipe=%s", fp8_recipe_names[s->fp8_recipe]);
    if (s->fp8_standalone)
        APPEND(",fp8_casts=%s", fp8_casts_names[1]);
    if (s->osdp[0])
        APPEND(",osdp=%s", s->osdp);
    if (s->osdp_split > 1)
        APPEND(",osdp_split=%d", s->osdp_split);
    if (s->grad_coll != WL_GRAD_AUTO)
        APPEND(",grad_collective=%s", grad_coll_names[s->grad_coll]);
    if (s->grad_accum != WL_GACC_FUSED)
        APPEND(",grad_accum=%s", grad_accum_names[s->grad_accum]);
    if (s->stage_split == WL_SPLIT_EMBEDDING)
        APPEND(",stage_split=embedding_as_layer");
    for (int i = 0; s->stage_split == WL_SPLIT_LIST && i < s->npp_layers;) {
        int k = 1; /* runs of one count as N*K */
        while (i + k < s->npp_layers && s->pp_layers[i + k] == s->pp_layers[i])
            k++;
        if (k > 2)
            APPEND("%s%d*%d", i ? "/" : ",pp_layers=", s->pp_layers[i], k);
        else
            for (int j = 0; j < k; j++)
                APPEND("%s%d", i + j ? "/" : ",pp_layers=", s->pp_layers[i]);
        i += k;
    }
    /* the TP-schedule keys likewise */
    if (s->schedule != WL_TP_MEGATRON)
        APPEND(",schedule=%s", wl_tp_schedule_name(s->schedule));
    if (s->sp)
        APPEND(",sp=1");
    if (s->tp_overlap_comm)
        APPEND(",tp_overlap_comm=1");
    if (s->schedule == WL_TP_MERAK)
        APPEND(",tp_overlap=%d", s->tp_overlap);
    if (s->schedule == WL_TP_TESSERACT)
        APPEND(",tess_depth=%d", s->tess_depth);
    if (s->tp_cut_tp)
        APPEND(",tp_cut=%d:%d", s->tp_cut_layers, s->tp_cut_tp);
    if (s->attn != WL_ATTN_AUTO)
        APPEND(",attn=%s", attn_names[s->attn]);
    if (s->eager_kernels)
        APPEND(",kernels=eager");
    if (s->autocast)
        APPEND(",autocast=1");
    if (s->launch_blocking)
        APPEND(",launch_blocking=1");
    if (s->p2p_sync)
        APPEND(",p2p_sync=1");
    if (s->loss != WL_LOSS_MEGATRON)
        APPEND(",loss=%s", loss_names[s->loss]);
    if (s->optimizer != WL_OPT_FUSED)
        APPEND(",optimizer=%s", optimizer_names[s->optimizer]);
    if (s->routing[0])
        APPEND(",routing=%s", s->routing);
    if (s->balance != WL_BAL_NONE)
        APPEND(",balance=%s", balance_names[s->balance]);
#undef APPEND
}
