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

#define GPUS_JSON "platforms/catalog/gpus.json"
#define NICS_JSON "platforms/catalog/nics.json"
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
static int parse_curve(const cJSON *obj, sim_curve *c, const char *what, sim_err *err)
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
                            GPUS_JSON, what, p->string);
        if (n == SIM_CURVE_MAX)
            return sim_errf(err, "%s: %s: more than %d points", GPUS_JSON, what, SIM_CURVE_MAX);
        pts[n][0] = x;
        pts[n][1] = p->valuedouble;
        n++;
    }
    if (n == 0)
        return sim_errf(err, "%s: %s: empty curve", GPUS_JSON, what);
    qsort(pts, (size_t)n, sizeof pts[0], cmp_double);
    c->n = n;
    for (int i = 0; i < n; i++) {
        c->log10_work[i] = pts[i][0];
        c->efficiency[i] = pts[i][1];
    }
    return 0;
}

/* "nccl": {"base_us": {"LL":, "LL128":, "Simple":}, "step_us": {...},
 * "efficiency": {...}}: each protocol from the GPU's own object, else the
 * defaults' (see sim_collparams). */
static int parse_nccl(const cJSON *own, const cJSON *dflt, sim_collparams *cp, const char *model, sim_err *err)
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
                return sim_errf(err, "%s: %s: nccl.%s.%s: expected %s", GPUS_JSON, who, groups[gi], pn,
                                gi == 2 ? "an efficiency in (0, 1]" : "a latency in microseconds >= 0");
            double x = v->valuedouble;
            if (gi == 0)
                cp->base_s[p] = x * 1e-6;
            else if (gi == 1)
                cp->step_s[p] = x * 1e-6;
            else
                cp->eff[p] = x;
        }
    return 0;
}

static int fill_gpu(const cJSON *e, const cJSON *defaults, sim_gpu *g, plat_gpu_info *info, sim_err *err)
{
    static const char *keys[SIM_DTYPE_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
    memset(g, 0, sizeof *g);
    snprintf(g->model, sizeof g->model, "%s", str(e, "model") ? str(e, "model") : "?");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tflops");
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        g->peak_flops[d] = num(t, keys[d], 0) * 1e12;
    if (g->peak_flops[SIM_DTYPE_FP32] <= 0)
        return sim_errf(err, "%s: %s: tflops.fp32 must be positive", GPUS_JSON, g->model);
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
    g->mem_bw = num(e, "memory_GBps", 0) * 1e9;
    g->mem_capacity = num(e, "memory_GB", 0) * 1e9;
    g->launch_s = num(e, "launch_s", num(defaults, "launch_s", 5e-6));
    g->power_w = num(e, "power_W", 0);
    g->price_usd = num(e, "price_USD", 0);
    if (g->mem_bw <= 0 || g->mem_capacity <= 0)
        return sim_errf(err, "%s: %s: memory_GB and memory_GBps must be positive", GPUS_JSON, g->model);

    struct { const char *key; sim_curve *c; } curves[] = {
        {"gemm", &g->gemm_eff}, {"attention", &g->attn_eff}, {"memory", &g->mem_eff}};
    for (size_t i = 0; i < sizeof curves / sizeof curves[0]; i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, curves[i].key);
        char what[96];
        snprintf(what, sizeof what, "%s.%s", c ? g->model : "defaults", curves[i].key);
        if (!c)
            c = cJSON_GetObjectItemCaseSensitive(defaults, curves[i].key);
        if (parse_curve(c, curves[i].c, what, err))
            return -1;
    }

    if (parse_nccl(cJSON_GetObjectItemCaseSensitive(e, "nccl"), cJSON_GetObjectItemCaseSensitive(defaults, "nccl"),
                   &g->coll, g->model, err))
        return -1;
    const cJSON *ov = cJSON_GetObjectItemCaseSensitive(e, "overlap");
    if (!ov)
        ov = cJSON_GetObjectItemCaseSensitive(defaults, "overlap");
    g->overlap_compute = num(ov, "compute", 0);
    g->overlap_comm = num(ov, "comm", 0);
    if (g->overlap_compute < 1 || g->overlap_compute >= 2 || g->overlap_comm < 1 || g->overlap_comm >= 2)
        return sim_errf(err, "%s: %s: overlap.compute and overlap.comm must be slowdown factors in [1, 2)", GPUS_JSON,
                        g->model);

    if (info) {
        memset(info, 0, sizeof *info);
        info->pcie_gen = inum(e, "pcie_gen", 4);
        info->p2p = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "p2p"));
        const cJSON *nv = cJSON_GetObjectItemCaseSensitive(e, "nvlink");
        const char *kind = str(nv, "kind");
        info->nvlink = !kind                        ? PLAT_NVLINK_NONE
                       : strcmp(kind, "bridge") == 0   ? PLAT_NVLINK_BRIDGE
                       : strcmp(kind, "mesh") == 0     ? PLAT_NVLINK_MESH
                       : strcmp(kind, "nvswitch") == 0 ? PLAT_NVLINK_NVSWITCH
                                                       : PLAT_NVLINK_NONE;
        info->nvlink_GBps = num(nv, "GBps", 0);
    }
    return 0;
}

/* model in a parsed gpus.json. */
static int lookup_gpu(const cJSON *root, const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err)
{
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    const cJSON *e;
    cJSON_ArrayForEach(e, gpus)
        if (model && entry_matches(e, model))
            return fill_gpu(e, cJSON_GetObjectItemCaseSensitive(root, "defaults"), out, info, err);
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

int plat_gpu_lookup(const char *model, sim_gpu *out, sim_err *err)
{
    return plat_gpu_lookup_info(model, out, NULL, err);
}

int plat_nic_lookup(const char *model, plat_nic *out, sim_err *err)
{
    cJSON *root = parse_embedded(NICS_JSON, err);
    if (!root)
        return -1;
    const cJSON *nics = cJSON_GetObjectItemCaseSensitive(root, "nics");
    const cJSON *e;
    cJSON_ArrayForEach(e, nics)
    {
        if (model && entry_matches(e, model)) {
            memset(out, 0, sizeof *out);
            snprintf(out->model, sizeof out->model, "%s", str(e, "model"));
            out->bw = num(e, "Gbps", 0) * 1e9 / 8;
            out->latency_s = num(e, "latency_us", 0) * 1e-6;
            cJSON_Delete(root);
            return 0;
        }
    }
    char known[1024];
    known_list(nics, known, sizeof known);
    sim_errf(err, "unknown NIC model \"%s\"; known: %s", model ? model : "(null)", known);
    cJSON_Delete(root);
    return -1;
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
        sim_errf(err, "unknown PCIe generation %d; known: 3, 4, 5", gen);
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
void plat_print_catalogue(FILE *out)
{
    fprintf(out, "Built-in clusters (trainsim --platform NAME):\n");
    const char *path;
    for (int i = 0; (path = sim_embedded_path(i)) != NULL; i++) {
        const char *pre = "platforms/clusters/";
        size_t n = strlen(path);
        if (strncmp(path, pre, strlen(pre)) != 0 || n < 5 || strcmp(path + n - 5, ".json") != 0)
            continue;
        cJSON *c = cJSON_Parse(sim_embedded(path));
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(c, "node");
        int nodes = (int)num(c, "nodes", 0), per = (int)num(node, "gpus_per_node", 0);
        fprintf(out, "  %-22.*s %4d x %-16s %s\n", (int)(n - strlen(pre) - 5), path + strlen(pre), nodes * per,
                str(node, "gpu") ? str(node, "gpu") : "?", str(c, "description") ? str(c, "description") : "");
        cJSON_Delete(c);
    }

    cJSON *root = cJSON_Parse(sim_embedded(GPUS_JSON));
    const cJSON *e;
    fprintf(out, "\nGPUs (dense TFLOP/s fp32/tf32/fp16/bf16/fp8, memory, bandwidth, PCIe, P2P, NVLink, power, price):\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "gpus"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tflops");
        const cJSON *nv = cJSON_GetObjectItemCaseSensitive(e, "nvlink");
        fprintf(out, "  %-16s %6.1f %6.1f %6.1f %6.1f %7.1f  %3.0f GB %6.0f GB/s  gen%d %-3s %-8s %4.0f W  $%.0f\n",
                str(e, "model") ? str(e, "model") : "?", num(t, "fp32", 0), num(t, "tf32", 0), num(t, "fp16", 0), num(t, "bf16", 0),
                num(t, "fp8", 0), num(e, "memory_GB", 0), num(e, "memory_GBps", 0), (int)num(e, "pcie_gen", 0),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "p2p")) ? "yes" : "no",
                str(nv, "kind") ? str(nv, "kind") : "none", num(e, "power_W", 0), num(e, "price_USD", 0));
    }
    cJSON_Delete(root);

    root = cJSON_Parse(sim_embedded(NICS_JSON));
    fprintf(out, "\nNICs:\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "nics"))
        fprintf(out, "  %-8s %4.0f Gb/s  %4.1f us  %s\n", str(e, "model") ? str(e, "model") : "?", num(e, "Gbps", 0), num(e, "latency_us", 0),
                str(e, "kind") ? str(e, "kind") : "");
    cJSON_Delete(root);
}
