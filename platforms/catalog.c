/* catalog.c — reads the hardware catalogue (the JSON files in platforms/catalog/).
 *
 * GPU entries become sim_gpu records: TFLOP/s to FLOP/s, GB to bytes, and
 * the efficiency curves (the GPU's own, else the provisional `defaults`).
 * A dtype the hardware lacks (0 in the catalogue) takes the rate of the type
 * the frameworks actually fall back to, so the cost model never divides by
 * zero: tf32 -> fp32 (V100 has no TF32 tensor cores), bf16 -> fp32 (V100
 * has fp16 tensor cores only), fp8 -> bf16 (or fp16).  The catalogue files
 * keep the honest 0. */
#include "catalog.h"
#include "platform.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/embedded.h"
#include "sim/json.h"

#define GPUS_JSON PLAT_GPUS_JSON
#define NICS_JSON PLAT_NICS_JSON
#define ICON_JSON "platforms/catalog/interconnects.json"

int plat_name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == '-' || *a == '_' || *a == ' ')
            a++;
        while (*b == '-' || *b == '_' || *b == ' ')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++, b++;
    }
}

static cJSON *parse_embedded(const char *path, sim_err *err)
{
    const char *text = sim_embedded(path);
    if (!text) {
        sim_errf(err, "%s: not compiled into this binary (re-run cmake)", path);
        return NULL;
    }
    return sim_json_parse(text, path, err);
}

static double num(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* An integer field, or dflt when absent, fractional or beyond int. */
static int inum(const cJSON *obj, const char *key, int dflt)
{
    double v = num(obj, key, dflt);
    return v == floor(v) && v >= INT_MIN && v <= INT_MAX ? (int)v : dflt;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* True when name matches the entry's model or one of its aliases. */
static int entry_matches(const cJSON *e, const char *name)
{
    const char *model = str(e, "model");
    if (model && plat_name_eq(model, name))
        return 1;
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(e, "aliases"))
        if (cJSON_IsString(a) && plat_name_eq(a->valuestring, name))
            return 1;
    return 0;
}

/* "known: A, B, C" for error messages. */
static void known_list(const cJSON *arr, char *buf, size_t n)
{
    size_t len = 0;
    const cJSON *e;
    buf[0] = 0;
    cJSON_ArrayForEach(e, arr)
    {
        const char *m = str(e, "model");
        if (m && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", m);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A curve object {"log10 work": efficiency, ...} in any key order. */
static int parse_curve(const cJSON *obj, sim_curve *c, const char *where, const char *what, sim_err *err)
{
    double pts[SIM_CURVE_MAX][2];
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, obj)
    {
        char *end;
        double x = strtod(p->string, &end);
        if (*end || end == p->string || !isfinite(x) || !cJSON_IsNumber(p) || p->valuedouble <= 0 ||
            p->valuedouble > 1)
            return sim_errf(err, "%s: %s: point \"%s\" must map a log10 work to an efficiency in (0, 1]",
                            where, what, p->string);
        if (n == SIM_CURVE_MAX)
            return sim_errf(err, "%s: %s: more than %d points", where, what, SIM_CURVE_MAX);
        pts[n][0] = x;
        pts[n][1] = p->valuedouble;
        n++;
    }
    if (n == 0)
        return sim_errf(err, "%s: %s: %s curve", where, what, obj ? "empty" : "missing");
    qsort(pts, (size_t)n, sizeof pts[0], cmp_double);
    c->n = n;
    for (int i = 0; i < n; i++) {
        c->log10_work[i] = pts[i][0];
        c->efficiency[i] = pts[i][1];
    }
    return 0;
}

/* One fused-attention kernel family (sim_flash): {"fwd": {curve}, "bwd":
 * {curve}, "causal": factor, "causal_bwd": factor (default: causal),
 * "score_share": {"fwd": x, "bwd": y} (default 0), "score_scale": {"fwd": k,
 * "bwd": k} (default 1), "head_dims": [the kernel's instantiations,
 * increasing]} of `fa`, named `what` in errors. */
static int parse_flash_set(const cJSON *fa, const char *where, const char *what, sim_flash *f, sim_err *err)
{
    static const char *const DIR[2] = {"fwd", "bwd"};
    char name[128];
    memset(f, 0, sizeof *f);
    for (int d = 0; d < 2; d++) {
        snprintf(name, sizeof name, "%s.%s", what, DIR[d]);
        if (parse_curve(cJSON_GetObjectItemCaseSensitive(fa, DIR[d]), &f->eff[d], where, name, err))
            return -1;
    }
    f->causal[0] = num(fa, "causal", 1);
    f->causal[1] = num(fa, "causal_bwd", f->causal[0]);
    for (int d = 0; d < 2; d++)
        if (!(f->causal[d] > 0 && f->causal[d] <= 2))
            return sim_errf(err, "%s: %s.%s: expected a factor in (0, 2]", where, what, d ? "causal_bwd" : "causal");
    const cJSON *share = cJSON_GetObjectItemCaseSensitive(fa, "score_share");
    if (share && !cJSON_IsObject(share))
        return sim_errf(err, "%s: %s.score_share: expected {\"fwd\": share, \"bwd\": share}", where, what);
    for (int d = 0; share && d < 2; d++) {
        f->score_share[d] = num(share, DIR[d], 0);
        if (!(f->score_share[d] >= 0 && f->score_share[d] < 1))
            return sim_errf(err, "%s: %s.score_share.%s: expected a share in [0, 1)", where, what, DIR[d]);
    }
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(fa, "score_scale");
    if (scale && !cJSON_IsObject(scale))
        return sim_errf(err, "%s: %s.score_scale: expected {\"fwd\": factor, \"bwd\": factor}", where, what);
    for (int d = 0; d < 2; d++) {
        f->score_scale[d] = num(scale, DIR[d], 1);
        if (!(f->score_scale[d] >= 0.25 && f->score_scale[d] <= 8))
            return sim_errf(err, "%s: %s.score_scale.%s: expected a factor in [0.25, 8], got %g", where, what, DIR[d],
                            f->score_scale[d]);
    }
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(fa, "head_dims");
    if (hd && (!cJSON_IsArray(hd) || cJSON_GetArraySize(hd) < 1 || cJSON_GetArraySize(hd) > SIM_FLASH_MAX_HD))
        return sim_errf(err, "%s: %s.head_dims: expected an array of 1 to %d head dimensions", where, what,
                        SIM_FLASH_MAX_HD);
    const cJSON *it;
    cJSON_ArrayForEach(it, hd)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
        int prev = f->n_head_dims ? f->head_dims[f->n_head_dims - 1] : 0;
        if (!(v == floor(v) && v > prev && v <= 4096))
            return sim_errf(err, "%s: %s.head_dims[%d]: expected an integer head dimension above %d (increasing, "
                            "at most 4096)", where, what, f->n_head_dims, prev);
        f->head_dims[f->n_head_dims++] = (int)v;
    }
    return 0;
}

/* "flash_attention": {the best kernel's set, "fa2": {the same for
 * FlashAttention-2}, "source": ...}: fused attention's efficiency by log10
 * sequence length, the factors a causal kernel runs at and the head
 * dimension's, the GPU's own or the defaults' (platforms/README.md,
 * "Calibration").  The main set is the best kernel the GPU runs (FA2 on
 * Ampere and Ada, FA3 or cuDNN on Hopper); "fa2" is FlashAttention-2 where
 * that differs. */
static int parse_flash(const cJSON *e, const cJSON *defaults, const char *where, sim_gpu *g, sim_err *err)
{
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(e, "flash_attention");
    const cJSON *fa = own ? own : cJSON_GetObjectItemCaseSensitive(defaults, "flash_attention");
    if (!fa)
        return 0; /* no curve: sim_curve_eval gives 1 (an ideal kernel) */
    const char *src = own ? where : GPUS_JSON;
    char what[96];
    snprintf(what, sizeof what, "%s.flash_attention", own ? g->model : "defaults");
    if (parse_flash_set(fa, src, what, &g->flash, err))
        return -1;
    const cJSON *fa2 = cJSON_GetObjectItemCaseSensitive(fa, "fa2");
    if (!fa2) {
        g->flash2 = g->flash;
        return 0;
    }
    snprintf(what, sizeof what, "%s.flash_attention.fa2", own ? g->model : "defaults");
    return parse_flash_set(fa2, src, what, &g->flash2, err);
}

/* "nccl": {"base_us": {"LL":, "LL128":, "Simple":}, "step_us": {...},
 * "efficiency": {...}}: each protocol from the GPU's own object, else the
 * defaults' (see sim_collparams).  Hops through NICs take the defaults'
 * efficiencies (NCCL's priors): a GPU's fitted ones describe its own
 * NVLink or PCIe links, measured on one node. */
static int parse_nccl(const cJSON *own, const cJSON *dflt, sim_collparams *cp, const char *where, const char *model,
                      sim_err *err)
{
    static const char *const groups[3] = {"base_us", "step_us", "efficiency"};
    for (int gi = 0; gi < 3; gi++)
        for (int p = 0; p < SIM_PROTO_COUNT; p++) {
            const char *pn = sim_proto_name((sim_proto)p);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(own, groups[gi]), pn);
            const char *who = model;
            if (!v) {
                v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dflt, groups[gi]), pn);
                who = "defaults";
            }
            if (!cJSON_IsNumber(v) || v->valuedouble < 0 || (gi == 2 && (v->valuedouble <= 0 || v->valuedouble > 1)))
                return sim_errf(err, "%s: %s: nccl.%s.%s: expected %s", where, who, groups[gi], pn,
                                gi == 2 ? "an efficiency in (0, 1]" : "a latency in microseconds >= 0");
            double x = v->valuedouble;
            if (gi == 0)
                cp->base_s[p] = x * 1e-6;
            else if (gi == 1)
                cp->step_s[p] = x * 1e-6;
            else
                cp->eff[p] = x;
            if (gi == 2) {
                v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dflt, groups[gi]), pn);
                if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || v->valuedouble > 1)
                    return sim_errf(err, "%s: defaults: nccl.efficiency.%s: expected an efficiency in (0, 1]",
                                    GPUS_JSON, pn);
                cp->net_eff[p] = v->valuedouble;
            }
        }
    /* NVLink SHARP, only where the GPU's own entry gives its numbers */
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(own, "nvls");
    cp->nvls_base_s = cp->nvls_eff = 0;
    if (nv) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(nv, "base_us"), *e = cJSON_GetObjectItemCaseSensitive(nv, "efficiency");
        if (!cJSON_IsNumber(b) || b->valuedouble < 0 || !cJSON_IsNumber(e) || e->valuedouble <= 0 || e->valuedouble > 1)
            return sim_errf(err, "%s: %s: nccl.nvls: expected {\"base_us\": a latency >= 0, \"efficiency\": a fraction in (0, 1]}",
                            where, model);
        cp->nvls_base_s = b->valuedouble * 1e-6;
        cp->nvls_eff = e->valuedouble;
    }
    return 0;
}

/* The keys a cluster's inline "gpu" object may carry (a built-in entry's);
 * notes and sources are free text.  A new per-GPU key read by fill_gpu
 * belongs here too. */
static const char *const GPU_KEYS[] = {"model",        "aliases",    "tflops",         "memory_GB", "memory_GBps",
                                       "pcie_gen",     "p2p",        "nvlink",         "power_W",   "price_USD",
                                       "source",       "gemm",       "attention",      "memory",    "launch_s",
                                       "kernel_min_s", "gemm_scale", "gemm_unaligned", "power",     "flash_attention",
                                       "memory_class", "nccl",       "overlap",        "note",      "calibrated_like",
                                       "optimizer_rate", NULL};

/* A number field of obj within [lo, hi] (or absent: dflt); -1 with a message naming where.key. */
static int field(const cJSON *obj, const char *key, double dflt, double lo, double hi, const char *where,
                 const char *model, double *out, sim_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = dflt;
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return sim_errf(err, "%s: %s: %s: expected a number in [%g, %g]", where, model, key, lo, hi);
    *out = v->valuedouble;
    return 0;
}

/* "power": {"load": [...], "gemm_rate": [...]}: the rate of tensor-core
 * kernels (a fraction of the curves', which are the cool state's) at each
 * tensor load, 2 to 8 points, loads increasing in [0, 1], rates in (0, 1]. */
static int parse_power(const cJSON *pw, const char *where, sim_gpu *g, sim_err *err)
{
    g->power_n = 0;
    if (!pw)
        return 0;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(pw, "load"), *r = cJSON_GetObjectItemCaseSensitive(pw, "gemm_rate");
    int n = cJSON_GetArraySize(l);
    if (!cJSON_IsObject(pw) || !cJSON_IsArray(l) || !cJSON_IsArray(r) || n < 2 || n > 8 || cJSON_GetArraySize(r) != n)
        return sim_errf(err, "%s: %s: power: expected {\"load\": [...], \"gemm_rate\": [...]}, 2 to 8 points each",
                        where, g->model);
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(l, i), *b = cJSON_GetArrayItem(r, i);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !(a->valuedouble >= 0 && a->valuedouble <= 1) ||
            !(b->valuedouble > 0 && b->valuedouble <= 1) || (i > 0 && !(a->valuedouble > g->power_load[i - 1])))
            return sim_errf(err, "%s: %s: power: point %d: expected a load in [0, 1] above the previous one and a "
                            "gemm_rate in (0, 1]", where, g->model, i + 1);
        g->power_load[i] = a->valuedouble;
        g->power_rate[i] = b->valuedouble;
    }
    g->power_n = n;
    return 0;
}

/* "memory_class": {"cast_up": f, ...}: the element-wise classes slower than
 * streaming (sim_mem_class), each a fraction in (0, 1] of the memory curve;
 * a class not given runs as streaming. */
static int parse_mem_class(const cJSON *mc, const char *where, sim_gpu *g, sim_err *err)
{
    for (int c = 0; c < SIM_MEMC_COUNT; c++)
        g->mem_class[c] = 1;
    if (!mc)
        return 0;
    if (!cJSON_IsObject(mc))
        return sim_errf(err,
                        "%s: %s: memory_class: expected an object of fractions of the memory curve by class "
                        "(cast_up, norm, reduce, strided)",
                        where, g->model);
    for (const cJSON *c = mc->child; c; c = c->next) {
        int k = sim_mem_class_parse(c->string);
        if (k <= SIM_MEMC_STREAM)
            return sim_errf(err, "%s: %s: memory_class: unknown class \"%s\"; known: cast_up, norm, reduce, strided",
                            where, g->model, c->string);
        if (!cJSON_IsNumber(c) || !(c->valuedouble > 0 && c->valuedouble <= 1))
            return sim_errf(err, "%s: %s: memory_class.%s: expected a fraction of the memory curve in (0, 1]", where,
                            g->model, c->string);
        g->mem_class[k] = c->valuedouble;
    }
    return 0;
}

static int check_gpu_keys(const cJSON *e, const char *where, const char *model, sim_err *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, e)
    {
        size_t n = strlen(it->string);
        int ok = n > 7 && !strcmp(it->string + n - 7, "_source"); /* gemm_source, calibration_source, ... */
        for (int i = 0; GPU_KEYS[i] && !ok; i++)
            ok = !strcmp(it->string, GPU_KEYS[i]);
        if (!ok)
            return sim_errf(err,
                            "%s: %s: unknown field \"%s\"; known: model, aliases, tflops, memory_GB, memory_GBps, "
                            "pcie_gen, p2p, nvlink, power_W, price_USD, source, gemm, attention, memory, launch_s, "
                            "kernel_min_s, gemm_scale, gemm_unaligned, power, flash_attention, memory_class, "
                            "optimizer_rate, nccl, overlap, calibrated_like, note, *_source",
                            where, model, it->string);
    }
    return 0;
}

static int fill_gpu(const cJSON *e, const cJSON *defaults, const char *where, sim_gpu *g, plat_gpu_info *info,
                    sim_err *err)
{
    static const char *keys[SIM_DTYPE_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
    memset(g, 0, sizeof *g);
    if (!str(e, "model") || !*str(e, "model") || strlen(str(e, "model")) >= sizeof g->model)
        return sim_errf(err, "%s: model: expected a GPU model name (a string of 1 to %zu bytes)", where,
                        sizeof g->model - 1);
    snprintf(g->model, sizeof g->model, "%s", str(e, "model"));
    /* a user's object must not carry typos; the built-in file is tested as it is
     * (and other kernel classes' curves may be added there before this list) */
    if (strcmp(where, GPUS_JSON) && check_gpu_keys(e, where, g->model, err))
        return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tflops");
    if (!cJSON_IsObject(t))
        return sim_errf(err, "%s: %s: tflops: expected an object of dense TFLOP/s per type (fp32, tf32, fp16, bf16, fp8)",
                        where, g->model);
    for (int d = 0; d < SIM_DTYPE_COUNT; d++) {
        if (field(t, keys[d], 0, 0, 1e6, where, g->model, &g->peak_flops[d], err))
            return sim_err_prefix(err, "tflops: ");
        g->peak_flops[d] *= 1e12;
    }
    if (g->peak_flops[SIM_DTYPE_FP32] <= 0)
        return sim_errf(err, "%s: %s: tflops.fp32 must be positive", where, g->model);
    if (g->peak_flops[SIM_DTYPE_TF32] <= 0)
        g->peak_flops[SIM_DTYPE_TF32] = g->peak_flops[SIM_DTYPE_FP32];
    if (g->peak_flops[SIM_DTYPE_FP16] <= 0)
        g->peak_flops[SIM_DTYPE_FP16] = g->peak_flops[SIM_DTYPE_FP32];
    if (g->peak_flops[SIM_DTYPE_BF16] <= 0)
        g->peak_flops[SIM_DTYPE_BF16] = g->peak_flops[SIM_DTYPE_FP32];
    if (g->peak_flops[SIM_DTYPE_FP8] <= 0) {
        double b = num(t, "bf16", 0) > 0 ? g->peak_flops[SIM_DTYPE_BF16] : g->peak_flops[SIM_DTYPE_FP16];
        g->peak_flops[SIM_DTYPE_FP8] = b;
    }
    double launch_dflt = num(defaults, "launch_s", 5e-6);
    if (field(e, "memory_GBps", 0, 0, 1e6, where, g->model, &g->mem_bw, err) ||
        field(e, "memory_GB", 0, 0, 1e6, where, g->model, &g->mem_capacity, err) ||
        field(e, "launch_s", launch_dflt, 0, 1, where, g->model, &g->launch_s, err) ||
        field(e, "kernel_min_s", 0, 0, 1, where, g->model, &g->kernel_min_s, err) ||
        field(e, "gemm_unaligned", 1, 1e-3, 1, where, g->model, &g->gemm_unaligned, err) ||
        field(e, "optimizer_rate", 1, 1e-3, 1, where, g->model, &g->opt_rate, err) ||
        field(e, "power_W", 0, 0, 1e5, where, g->model, &g->power_w, err) ||
        field(e, "price_USD", 0, 0, 1e9, where, g->model, &g->price_usd, err))
        return -1;
    g->mem_bw *= 1e9;
    g->mem_capacity *= 1e9;
    if (g->mem_bw <= 0 || g->mem_capacity <= 0)
        return sim_errf(err, "%s: %s: memory_GB and memory_GBps must be positive", where, g->model);
    if (parse_power(cJSON_GetObjectItemCaseSensitive(e, "power"), where, g, err) ||
        parse_mem_class(cJSON_GetObjectItemCaseSensitive(e, "memory_class"), where, g, err))
        return -1;
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(e, "gemm_scale");
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        if (field(gs, keys[d], 1, 1e-3, 2, where, g->model, &g->gemm_scale[d], err))
            return sim_err_prefix(err, "gemm_scale: ");

    struct { const char *key; sim_curve *c; } curves[] = {
        {"gemm", &g->gemm_eff}, {"attention", &g->attn_eff}, {"memory", &g->mem_eff}};
    for (size_t i = 0; i < sizeof curves / sizeof curves[0]; i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, curves[i].key);
        char what[96];
        snprintf(what, sizeof what, "%s.%s", c ? g->model : "defaults", curves[i].key);
        if (!c)
            c = cJSON_GetObjectItemCaseSensitive(defaults, curves[i].key);
        if (parse_curve(c, curves[i].c, c == cJSON_GetObjectItemCaseSensitive(e, curves[i].key) ? where : GPUS_JSON,
                        what, err))
            return -1;
    }

    if (parse_flash(e, defaults, where, g, err))
        return -1;
    /* FlashAttention-2 needs sm80+ (Ampere, Ada, Hopper): the GPUs with
     * bf16 tensor cores, which came with sm80 (V100 and Turing have none) */
    g->flash_attn = num(t, "bf16", 0) > 0;

    if (parse_nccl(cJSON_GetObjectItemCaseSensitive(e, "nccl"), cJSON_GetObjectItemCaseSensitive(defaults, "nccl"),
                   &g->coll, where, g->model, err))
        return -1;
    const cJSON *ov = cJSON_GetObjectItemCaseSensitive(e, "overlap");
    if (!ov)
        ov = cJSON_GetObjectItemCaseSensitive(defaults, "overlap");
    g->overlap_compute = num(ov, "compute", 0);
    g->overlap_comm = num(ov, "comm", 0);
    if (g->overlap_compute < 1 || g->overlap_compute >= 2 || g->overlap_comm < 1 || g->overlap_comm >= 2)
        return sim_errf(err, "%s: %s: overlap.compute and overlap.comm must be slowdown factors in [1, 2)", where,
                        g->model);

    plat_gpu_info own;
    if (!info)
        info = &own;
    memset(info, 0, sizeof *info);
    double gen;
    if (field(e, "pcie_gen", 4, 3, 6, where, g->model, &gen, err))
        return -1;
    info->pcie_gen = (int)gen;
    const cJSON *p2p = cJSON_GetObjectItemCaseSensitive(e, "p2p");
    if (p2p && !cJSON_IsBool(p2p))
        return sim_errf(err, "%s: %s: p2p: expected true or false", where, g->model);
    info->p2p = cJSON_IsTrue(p2p);
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(e, "nvlink");
    const char *kind = str(nv, "kind");
    static const struct { const char *name; plat_nvlink_kind kind; } KINDS[] = {
        {"none", PLAT_NVLINK_NONE}, {"bridge", PLAT_NVLINK_BRIDGE}, {"mesh", PLAT_NVLINK_MESH},
        {"nvswitch", PLAT_NVLINK_NVSWITCH}};
    int found = !nv;
    for (size_t i = 0; kind && i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (!strcmp(kind, KINDS[i].name)) {
            info->nvlink = KINDS[i].kind;
            found = 1;
        }
    if (!found)
        return sim_errf(err, "%s: %s: nvlink.kind: expected none, bridge, mesh or nvswitch", where, g->model);
    if (field(nv, "GBps", 0, 0, 1e5, where, g->model, &info->nvlink_GBps, err))
        return sim_err_prefix(err, "nvlink: ");
    if (info->nvlink != PLAT_NVLINK_NONE && info->nvlink_GBps <= 0)
        return sim_errf(err, "%s: %s: nvlink.GBps: a %s needs its per-direction bandwidth", where, g->model, kind);
    return 0;
}

/* The device fields a card without measurements of its own takes from a
 * measured one ("calibrated_like"): how its kernels behave as fractions of
 * its own peaks, bandwidth and clock, not its peaks or links. */
static const char *const LIKE_KEYS[] = {"gemm",     "gemm_scale",   "gemm_unaligned", "power",           "launch_s",
                                        "kernel_min_s", "memory",   "memory_class",   "optimizer_rate",  "flash_attention",
                                        "overlap",      NULL};

/* "calibrated_like": {"model": M, "gemm": r, "score_work": {"fwd": k, "bwd":
 * k}}: e with M's measured device fields wherever e has none of its own,
 * M's GEMM curve times r (a ratio of published best-case GEMM rates, each as
 * a fraction of its card's peak), and M's fused attention with its per-score
 * work k times as dear against the tensor cores (sim_flash.score_scale; the
 * ratio of the cards' per-SM-and-clock rates, from their architectures).
 * Returns a new object (the caller deletes it), or NULL with err set. */
static cJSON *with_like(const cJSON *root, const cJSON *e, const char *where, sim_err *err)
{
    const cJSON *like = cJSON_GetObjectItemCaseSensitive(e, "calibrated_like");
    const char *model = str(e, "model") ? str(e, "model") : "(no model)";
    const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(like, "gemm");
    if (!cJSON_IsObject(like) || !str(like, "model") || (ratio && !cJSON_IsNumber(ratio))) {
        sim_errf(err, "%s: %s: calibrated_like: expected {\"model\": a catalogue GPU, \"gemm\": a ratio in (0, 2]}",
                 where, model);
        return NULL;
    }
    double r = ratio ? ratio->valuedouble : 1;
    if (!(r > 0 && r <= 2)) {
        sim_errf(err, "%s: %s: calibrated_like.gemm: expected a ratio in (0, 2], got %g", where, model, r);
        return NULL;
    }
    const cJSON *src = NULL, *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "gpus"))
        if (entry_matches(it, str(like, "model")))
            src = it;
    if (!src || cJSON_GetObjectItemCaseSensitive(src, "calibrated_like")) {
        sim_errf(err, "%s: %s: calibrated_like.model: \"%s\" is not a catalogue GPU with measurements of its own",
                 where, model, str(like, "model"));
        return NULL;
    }
    const cJSON *work = cJSON_GetObjectItemCaseSensitive(like, "score_work");
    double kf = num(work, "fwd", 0), kb = num(work, "bwd", 0);
    if (work && !(cJSON_IsObject(work) && kf >= 0.25 && kf <= 8 && kb >= 0.25 && kb <= 8)) {
        sim_errf(err,
                 "%s: %s: calibrated_like.score_work: expected {\"fwd\": factor, \"bwd\": factor}, each in "
                 "[0.25, 8]",
                 where, model);
        return NULL;
    }
    cJSON *m = cJSON_Duplicate(e, 1);
    for (int i = 0; m && LIKE_KEYS[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, LIKE_KEYS[i]);
        if (!v || cJSON_GetObjectItemCaseSensitive(m, LIKE_KEYS[i]))
            continue;
        cJSON *copy = cJSON_Duplicate(v, 1);
        if (copy && !strcmp(LIKE_KEYS[i], "gemm"))
            for (cJSON *p = copy->child; p; p = p->next)
                if (cJSON_IsNumber(p))
                    cJSON_SetNumberValue(p, p->valuedouble * r);
        if (copy && work && !strcmp(LIKE_KEYS[i], "flash_attention")) {
            /* both kernel families: the per-score units are the card's, whichever kernel runs */
            cJSON *sets[2] = {copy, cJSON_GetObjectItemCaseSensitive(copy, "fa2")};
            for (int k = 0; copy && k < 2; k++) {
                if (!sets[k])
                    continue;
                cJSON_DeleteItemFromObjectCaseSensitive(sets[k], "score_scale");
                if (!cJSON_AddItemToObject(sets[k], "score_scale", cJSON_Duplicate(work, 1))) {
                    cJSON_Delete(copy);
                    copy = NULL;
                }
            }
        }
        if (!copy || !cJSON_AddItemToObject(m, LIKE_KEYS[i], copy)) {
            cJSON_Delete(copy);
            cJSON_Delete(m);
            m = NULL;
        }
    }
    if (!m)
        sim_errf(err, "%s: %s: out of memory", where, model);
    return m;
}

/* fill_gpu on an entry, its calibrated_like resolved against the catalogue root. */
static int fill_gpu_in(const cJSON *root, const cJSON *e, const char *where, sim_gpu *g, plat_gpu_info *info,
                       sim_err *err)
{
    const cJSON *defaults = cJSON_GetObjectItemCaseSensitive(root, "defaults");
    if (!cJSON_IsObject(e) || !cJSON_GetObjectItemCaseSensitive(e, "calibrated_like"))
        return fill_gpu(e, defaults, where, g, info, err);
    cJSON *m = with_like(root, e, where, err);
    int rc = m ? fill_gpu(m, defaults, where, g, info, err) : -1;
    cJSON_Delete(m);
    return rc;
}

/* model in a parsed gpus.json. */
static int lookup_gpu(const cJSON *root, const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err)
{
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    const cJSON *e;
    cJSON_ArrayForEach(e, gpus)
        if (model && entry_matches(e, model))
            return fill_gpu_in(root, e, GPUS_JSON, out, info, err);
    char known[1024];
    known_list(gpus, known, sizeof known);
    return sim_errf(err, "unknown GPU model \"%s\"; known: %s", model ? model : "(null)", known);
}

int plat_gpu_lookup_info(const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err)
{
    cJSON *root = parse_embedded(GPUS_JSON, err);
    if (!root)
        return -1;
    int rc = lookup_gpu(root, model, out, info, err);
    cJSON_Delete(root);
    return rc;
}

int plat_gpu_from_text(const char *text, const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err)
{
    cJSON *root = sim_json_parse(text, GPUS_JSON, err);
    if (!root)
        return -1;
    int rc = lookup_gpu(root, model, out, info, err);
    cJSON_Delete(root);
    return rc;
}

int plat_gpu_from_json(const cJSON *entry, const char *where, sim_gpu *out, plat_gpu_info *info, sim_err *err)
{
    cJSON *root = parse_embedded(GPUS_JSON, err);
    if (!root)
        return -1;
    if (!cJSON_IsObject(entry)) {
        cJSON_Delete(root);
        return sim_errf(err, "%s: expected a GPU object with the catalogue's fields", where);
    }
    int rc = fill_gpu_in(root, entry, where, out, info, err);
    cJSON_Delete(root);
    return rc;
}

int plat_gpu_lookup(const char *model, sim_gpu *out, sim_err *err)
{
    return plat_gpu_lookup_info(model, out, NULL, err);
}

cJSON *plat_catalog_entry(const char *file, const char *array, const char *name, sim_err *err)
{
    cJSON *root = parse_embedded(file, err);
    if (!root)
        return NULL;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, array), *e;
    cJSON *found = NULL;
    cJSON_ArrayForEach(e, list)
        if (name && entry_matches(e, name)) {
            found = cJSON_Duplicate(e, 1);
            break;
        }
    if (!found) {
        char known[1024];
        known_list(list, known, sizeof known);
        sim_errf(err, "unknown %s model \"%s\"; known: %s", strcmp(array, "nics") ? "GPU" : "NIC",
                 name ? name : "(null)", known);
    }
    cJSON_Delete(root);
    return found;
}

int plat_nic_lookup(const char *model, plat_nic *out, sim_err *err)
{
    cJSON *e = plat_catalog_entry(NICS_JSON, "nics", model, err);
    if (!e)
        return -1;
    memset(out, 0, sizeof *out);
    snprintf(out->model, sizeof out->model, "%s", str(e, "model"));
    out->bw = num(e, "Gbps", 0) * 1e9 / 8;
    out->latency_s = num(e, "latency_us", 0) * 1e-6;
    cJSON_Delete(e);
    return 0;
}

double plat_pcie_bw(int gen, int width, sim_err *err)
{
    cJSON *root = parse_embedded(ICON_JSON, err);
    if (!root)
        return -1;
    const cJSON *e;
    double bw = -1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "pcie"))
        if (inum(e, "gen", 0) == gen)
            bw = num(e, "effective_GBps_x16", 0) * 1e9 * width / 16.0;
    cJSON_Delete(root);
    if (bw < 0)
        sim_errf(err, "unknown PCIe generation %d; known: 3, 4, 5, 6", gen);
    return bw;
}

void plat_catalog_defaults(plat_defaults *d)
{
    /* Fallbacks equal the shipped file, so a broken embed still gives sane numbers. */
    d->pcie_lat = 1e-6, d->nvlink_lat = 0.7e-6, d->socket_lat = 0.3e-6, d->fabric_lat = 0.3e-6;
    d->socket_bw = 40e9, d->staging_bw = 20e9, d->staging_read_eff = 1;
    cJSON *root = parse_embedded(ICON_JSON, NULL);
    if (!root)
        return;
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(root, "latency_us");
    d->pcie_lat = num(lat, "pcie", 1.0) * 1e-6;
    d->nvlink_lat = num(lat, "nvlink", 0.7) * 1e-6;
    d->socket_lat = num(lat, "socket", 0.3) * 1e-6;
    d->fabric_lat = num(lat, "fabric_hop", 0.3) * 1e-6;
    d->socket_bw = num(cJSON_GetObjectItemCaseSensitive(root, "socket_link"), "default_GBps", 40) * 1e9;
    d->staging_bw = num(cJSON_GetObjectItemCaseSensitive(root, "host_staging"), "default_GBps", 20) * 1e9;
    d->staging_read_eff = num(cJSON_GetObjectItemCaseSensitive(root, "host_staging"), "read_efficiency", 1);
    cJSON_Delete(root);
}

/* Built-in clusters are listed from the embedded files, so a new JSON under
 * platforms/clusters/ shows up without code changes. */
static void add_str(cJSON *o, const char *key, const char *v) { cJSON_AddStringToObject(o, key, v ? v : ""); }

cJSON *plat_catalogue_doc(void)
{
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "clusters");
    const char *path, *pre = "platforms/clusters/";
    for (int i = 0; (path = sim_embedded_path(i)) != NULL; i++) {
        size_t n = strlen(path);
        if (strncmp(path, pre, strlen(pre)) != 0 || n < 5 || strcmp(path + n - 5, ".json") != 0)
            continue;
        cJSON *c = cJSON_Parse(sim_embedded(path)), *o = cJSON_CreateObject();
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(c, "node");
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n - strlen(pre) - 5), path + strlen(pre));
        add_str(o, "name", name);
        cJSON_AddNumberToObject(o, "gpus", num(c, "nodes", 0) * num(node, "gpus_per_node", 0));
        add_str(o, "gpu", str(node, "gpu") ? str(node, "gpu") : "?");
        add_str(o, "description", str(c, "description"));
        cJSON_AddItemToArray(list, o);
        cJSON_Delete(c);
    }
    static const char *const dtypes[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
    cJSON *root = cJSON_Parse(sim_embedded(GPUS_JSON));
    const cJSON *e;
    list = cJSON_AddArrayToObject(doc, "gpus");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "gpus"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tflops");
        const cJSON *nv = cJSON_GetObjectItemCaseSensitive(e, "nvlink");
        cJSON *o = cJSON_CreateObject(), *tf;
        add_str(o, "model", str(e, "model") ? str(e, "model") : "?");
        tf = cJSON_AddObjectToObject(o, "dense_tflops");
        for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++)
            cJSON_AddNumberToObject(tf, dtypes[k], num(t, dtypes[k], 0));
        cJSON_AddNumberToObject(o, "memory_GB", num(e, "memory_GB", 0));
        cJSON_AddNumberToObject(o, "memory_GBps", num(e, "memory_GBps", 0));
        cJSON_AddNumberToObject(o, "pcie_gen", num(e, "pcie_gen", 0));
        cJSON_AddBoolToObject(o, "p2p", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "p2p")));
        add_str(o, "nvlink", str(nv, "kind") ? str(nv, "kind") : "none");
        cJSON_AddNumberToObject(o, "power_W", num(e, "power_W", 0));
        cJSON_AddNumberToObject(o, "price_USD", num(e, "price_USD", 0));
        /* where its kernel costs come from: a buyer should see which cards rest on priors */
        const cJSON *like = cJSON_GetObjectItemCaseSensitive(e, "calibrated_like");
        char kern[96];
        if (like)
            snprintf(kern, sizeof kern, "like %s", str(like, "model") ? str(like, "model") : "?");
        else
            snprintf(kern, sizeof kern, "%s", cJSON_GetObjectItemCaseSensitive(e, "gemm") ? "calibrated" : "priors");
        add_str(o, "gemm_curve", kern);
        cJSON_AddItemToArray(list, o);
    }
    cJSON_Delete(root);
    root = cJSON_Parse(sim_embedded(NICS_JSON));
    list = cJSON_AddArrayToObject(doc, "nics");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "nics"))
    {
        cJSON *o = cJSON_CreateObject();
        add_str(o, "model", str(e, "model") ? str(e, "model") : "?");
        cJSON_AddNumberToObject(o, "Gbps", num(e, "Gbps", 0));
        cJSON_AddNumberToObject(o, "latency_us", num(e, "latency_us", 0));
        add_str(o, "kind", str(e, "kind"));
        cJSON_AddItemToArray(list, o);
    }
    cJSON_Delete(root);
    return doc;
}
