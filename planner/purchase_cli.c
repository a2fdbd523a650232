/* purchase_cli.c — `trainsim compare`: which cluster to buy for a job.
 *
 *   trainsim compare --clusters A,B+nodes=8,c.json --model M [--tokens 300B | --steps N]
 *                    [--strategy S | --strategy "S1;S2;S3"] [--vary FIELD=v1,v2 [--scaling weak]]
 *                    [--price-per-gpu-hour P | P1,P2,...] [--costs FILE] [--pue F] [--carbon G]
 *                    [--json | --csv] [--svg FILE] ...
 *
 * The clusters are evaluated one after another (each search in forked
 * workers, purchase.c), every cluster's failure kept in its column; then
 * one table, JSON or CSV on stdout, charts in an SVG.  Progress and timing
 * go to stderr, so stdout is the same for a fresh and a cached run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "planner/purchase.h"
#include "platforms/edit.h"
#include "platforms/platform.h"
#include "sim/json.h"
#include "sim/fileio.h"

#define MAX_CLUSTERS 32

typedef struct copts {
    const char *clusters, *model, *strategy, *vary, *rent, *costs, *svg, *cache;
    const char *costs_text; /* the costs file's contents, recorded in --json */
    const char *axis[64];
    int naxis;
    int gb, jobs, refine, json, csv, quiet, nocache, weak;
    double tokens, steps, pue, carbon;
    sim_dtype dtype;
} copts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim compare --clusters C1,C2,... [options]   which cluster to buy for one training job\n"
            "  --clusters LIST       built-in cluster names, cluster JSON or SimGrid XML files, each optionally\n"
            "                        edited: rtx4090-4x8+nodes=8+nic=IB-HDR (fields: %s)\n"
            "  --model M             model name or JSON (default gpt-13b)\n"
            "  --tokens N            train on N tokens: 300B, 1.5T, 2e11 (default 20 x parameters, Hoffmann et al. 2022)\n"
            "  --steps N             or run N iterations\n"
            "  --global-batch B      sequences per iteration, the same on every cluster (default 4 x the most GPUs)\n"
            "  --dtype D             fp32, tf32, fp16, bf16 (default bf16)\n"
            "  --strategy S          run S on every cluster (\"S1;S2;...\": one per cluster; \"search\" or \"\" searches)\n"
            "                        instead of the planner's best (fast sweep, the --refine fastest simulated whole)\n"
            "  --vary FIELD=V1,V2    the first cluster with FIELD set to each value, each with its own best\n"
            "                        strategy: nic=25GbE,100GbE  nodes=2,4,8  nvlink=none,bridge  gpu=RTX4090,L40S\n"
            "  --scaling strong|weak with --vary nodes: keep the global batch (strong, default) or scale it with the GPUs\n"
            "  --price-per-gpu-hour P   rental price in USD (one for all, or one per cluster: 0.4,1.2,2.5)\n"
            "  --costs FILE          prices and powers overriding the catalogue (platforms/README.md, Purchasing)\n"
            "  --pue F               facility energy / IT energy (default 1: IT equipment only)\n"
            "  --carbon G            grid carbon intensity, g CO2 per kWh (default: not reported)\n"
            "  --axis KEY=V1,V2      the planner's search axes (trainsim plan --help); repeatable; the default\n"
            "                        searches schedule=megatron only (--axis schedule=megatron,merak,oases for all)\n"
            "  --refine K            simulate the K fastest of each sweep whole (default 3)\n"
            "  --jobs N, --cache DIR, --no-cache, --quiet   as for trainsim plan\n"
            "  --json, --csv         machine-readable output (every input recorded, so it can be re-run)\n"
            "  --svg FILE            bars per cluster (time to train, $ and kWh per million tokens), lines for --vary\n",
            plat_cluster_edit_fields());
}

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* "300B", "1.5T", "2e11", "500M", "20k" */
static int parse_count(const char *opt, const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    double mul = 1;
    if (*end && !end[1]) {
        const char *suf = "kKMBGT", *at = strchr(suf, *end);
        static const double muls[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12};
        if (at) {
            mul = muls[at - suf];
            end++;
        }
    }
    if (!*v || *end || !(x > 0) || !isfinite(x * mul)) {
        fprintf(stderr, "trainsim compare: %s: expected a positive count such as 300B, 1.5T or 2e11, got \"%s\"\n",
                opt, v);
        return -1;
    }
    *out = x * mul;
    return 0;
}

static int parse_num(const char *opt, const char *v, double min, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= min) || !isfinite(x)) {
        fprintf(stderr, "trainsim compare: %s: expected a number >= %g, got \"%s\"\n", opt, min, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_int(const char *opt, const char *v, int *out)
{
    double x;
    if (parse_num(opt, v, 0, &x) < 0 || x != floor(x) || x > 1 << 30) {
        fprintf(stderr, "trainsim compare: %s: expected a non-negative integer, got \"%s\"\n", opt, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* 0 ok, 1 help, 2 usage error */
static int parse(int argc, char **argv, copts *o)
{
    memset(o, 0, sizeof *o);
    o->model = "gpt-13b";
    o->cache = ".trainsim-cache";
    o->refine = 3;
    o->pue = 1;
    o->carbon = -1;
    o->dtype = SIM_DTYPE_BF16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout), 1;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--csv")) { o->csv = 1; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
        if (!strcmp(a, "--no-cache")) { o->nocache = 1; continue; }
        if (i + 1 >= argc) {
            fprintf(stderr, "trainsim compare: %s needs a value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--clusters")) o->clusters = v;
        else if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--strategy")) o->strategy = v;
        else if (!strcmp(a, "--vary")) o->vary = v;
        else if (!strcmp(a, "--price-per-gpu-hour")) o->rent = v;
        else if (!strcmp(a, "--costs")) o->costs = v;
        else if (!strcmp(a, "--svg")) o->svg = v;
        else if (!strcmp(a, "--cache")) o->cache = v;
        else if (!strcmp(a, "--tokens")) bad = parse_count(a, v, &o->tokens);
        else if (!strcmp(a, "--steps")) bad = parse_count(a, v, &o->steps);
        else if (!strcmp(a, "--global-batch")) bad = parse_int(a, v, &o->gb);
        else if (!strcmp(a, "--jobs")) bad = parse_int(a, v, &o->jobs);
        else if (!strcmp(a, "--refine")) bad = parse_int(a, v, &o->refine);
        else if (!strcmp(a, "--pue")) bad = parse_num(a, v, 1, &o->pue);
        else if (!strcmp(a, "--carbon")) bad = parse_num(a, v, 0, &o->carbon);
        else if (!strcmp(a, "--scaling")) {
            if (strcmp(v, "strong") && strcmp(v, "weak"))
                bad = fprintf(stderr, "trainsim compare: --scaling: expected strong or weak, got \"%s\"\n", v);
            o->weak = !strcmp(v, "weak");
        } else if (!strcmp(a, "--dtype")) {
            if (sim_dtype_parse(v, &o->dtype) || o->dtype == SIM_DTYPE_FP8)
                bad = fprintf(stderr, "trainsim compare: --dtype: expected fp32, tf32, fp16 or bf16, got \"%s\"\n", v);
        } else if (!strcmp(a, "--axis")) {
            if (o->naxis == 64)
                bad = fprintf(stderr, "trainsim compare: --axis: at most 64\n");
            else
                o->axis[o->naxis++] = v;
        } else {
            fprintf(stderr, "trainsim compare: unknown option \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
    }
    if (!o->clusters) {
        fprintf(stderr, "trainsim compare: give the clusters with --clusters A,B,... (trainsim list shows the built-in ones)\n");
        return 2;
    }
    if (o->tokens > 0 && o->steps > 0) {
        fprintf(stderr, "trainsim compare: give --tokens or --steps, not both\n");
        return 2;
    }
    if (o->weak && !(o->vary && !strncmp(o->vary, "nodes=", 6))) {
        fprintf(stderr, "trainsim compare: --scaling weak scales the global batch with --vary nodes=...\n");
        return 2;
    }
    return 0;
}

/* ---- the clusters ---- */

/* Splits v at sep into at most max pieces (strdup'd into out). */
static int split(const char *v, char sep, char **out, int max)
{
    int n = 0;
    const char *p = v;
    while (n < max) {
        size_t l = strcspn(p, (char[2]){sep, 0});
        out[n++] = strndup(p, l);
        if (!p[l])
            break;
        p += l + 1;
    }
    return n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
}

/* Clusters from --clusters and --vary, with strategies, prices and batches.
 * Returns how many, or -1 after printing a usage error. */
static int build_clusters(const copts *o, plan_cluster *cl)
{
    const char *lists[2] = {o->clusters, o->vary};
    for (int l = 0; l < 2; l++) {
        int k = 1;
        for (const char *p = lists[l]; p && *p; p++)
            k += *p == ',';
        if (k > MAX_CLUSTERS)
            return fprintf(stderr, "trainsim compare: %s: at most %d clusters, got %d\n", l ? "--vary" : "--clusters",
                           MAX_CLUSTERS, k), -1;
    }
    char *names[MAX_CLUSTERS], *vals[MAX_CLUSTERS];
    int n = split(o->clusters, ',', names, MAX_CLUSTERS), nv = 0;
    char field[64] = "";
    if (o->vary) {
        const char *eq = strchr(o->vary, '=');
        if (!eq || eq == o->vary || !eq[1] || (size_t)(eq - o->vary) >= sizeof field) {
            free_list(names, n);
            return fprintf(stderr, "trainsim compare: --vary: expected FIELD=V1,V2,... (fields: %s), got \"%s\"\n",
                           plat_cluster_edit_fields(), o->vary), -1;
        }
        snprintf(field, sizeof field, "%.*s", (int)(eq - o->vary), o->vary);
        nv = split(eq + 1, ',', vals, MAX_CLUSTERS);
    }
    if (nv && n != 1) {
        free_list(names, n);
        free_list(vals, nv);
        return fprintf(stderr, "trainsim compare: --vary varies one cluster; --clusters names %d\n", n), -1;
    }
    if (nv) {
        plan_cluster base;
        plan_cluster_prepare(names[0], &base);
        for (int i = 0; i < nv; i++)
            plan_cluster_vary(&base, field, vals[i], &cl[i]);
        plan_cluster_free(&base);
        n = nv;
    } else {
        for (int i = 0; i < n; i++)
            plan_cluster_prepare(names[i], &cl[i]);
    }
    free_list(names, o->vary ? 1 : n);
    free_list(vals, nv);
    return n;
}

/* Per-cluster strategies and rental prices (one for all or one each), and
 * the global batch; 0 or -1 after printing the error. */
static int assign(const copts *o, plan_cluster *cl, int n, const int *gpus)
{
    char *s[MAX_CLUSTERS], *r[MAX_CLUSTERS];
    int ns = o->strategy ? split(o->strategy, ';', s, MAX_CLUSTERS) : 0;
    int nr = o->rent ? split(o->rent, ',', r, MAX_CLUSTERS) : 0;
    int rc = 0, gmax = 1, g0 = 0;
    if (ns > 1 && ns != n)
        rc = fprintf(stderr, "trainsim compare: --strategy: %d strategies for %d clusters (give one, or one per cluster)\n",
                     ns, n);
    if (!rc && nr > 1 && nr != n)
        rc = fprintf(stderr, "trainsim compare: --price-per-gpu-hour: %d prices for %d clusters (give one, or one per "
                             "cluster)\n", nr, n);
    for (int i = 0; i < n; i++) {
        gmax = gpus[i] > gmax ? gpus[i] : gmax;
        if (!g0 && gpus[i])
            g0 = gpus[i];
    }
    for (int i = 0; i < n && !rc; i++) {
        const char *st = ns ? s[ns > 1 ? i : 0] : "";
        snprintf(cl[i].strategy, sizeof cl[i].strategy, "%s", strcmp(st, "search") ? st : "");
        if (nr) {
            char *end;
            const char *v = r[nr > 1 ? i : 0];
            double x = strtod(v, &end);
            if (!*v || *end || !(x >= 0) || !isfinite(x))
                rc = fprintf(stderr, "trainsim compare: --price-per-gpu-hour: cluster %s: expected a price >= 0 "
                                     "(USD per GPU hour), got \"%s\"\n", cl[i].label, v);
            cl[i].rent_usd_per_gpu_h = x;
        }
        int gb = o->gb ? o->gb : 4 * gmax;
        /* weak scaling: the batch per GPU of the first point */
        cl[i].gb = o->weak && g0 && gpus[i] ? (int)((double)gb * gpus[i] / g0 + 0.5) : gb;
    }
    free_list(s, ns);
    free_list(r, nr);
    return rc ? -1 : 0;
}

/* GPU count of a prepared cluster (0 when it cannot be built: its row will say why). */
static int gpus_of(const plan_cluster *c)
{
    if (c->error[0])
        return 0;
    sim_err e;
    sim_machine *m = c->json ? plat_from_json(c->json, c->source, &e) : plat_load(c->xml_path, &e);
    int g = m ? m->ngpus : 0;
    sim_machine_free(m);
    return g;
}

/* ---- output ---- */

/* What a line of the table needs beyond a run. */
enum { NEED_RUN, NEED_TCO, NEED_CAPEX, NEED_RENT, NEED_CO2 };

static int has(const plan_purchase_row *r, int need)
{
    switch (need) {
    case NEED_RUN: return r->ok;
    case NEED_TCO: return r->ok && r->tco_ok;
    case NEED_CAPEX: return r->ok && r->tco_ok && r->tco.capex_ok;
    case NEED_RENT: return r->ok && r->tco_ok && r->tco.rent_ok;
    default: return r->ok && r->tco_ok && r->tco.run_co2_kg >= 0;
    }
}

static double v_iter(const plan_purchase_row *r) { return r->best.iteration_s; }
static double v_tokens(const plan_purchase_row *r) { return r->best.tokens_per_s; }
static double v_tflops(const plan_purchase_row *r) { return r->best.tflops_per_gpu; }
static double v_mfu(const plan_purchase_row *r) { return 100 * r->mfu; }
static double v_mem(const plan_purchase_row *r) { return r->best.peak_mem / 1e9; }
static double v_days(const plan_purchase_row *r) { return r->tco.time_s / 86400; }
static double v_steps(const plan_purchase_row *r) { return r->tco.steps; }
static double v_power(const plan_purchase_row *r) { return r->tco.mean_power_w / 1e3; }
static double v_kwh_mtok(const plan_purchase_row *r) { return r->tco.kwh_per_mtok; }
static double v_mwh(const plan_purchase_row *r) { return r->tco.run_kwh / 1e3; }
static double v_co2(const plan_purchase_row *r) { return r->tco.run_co2_kg / 1e3; }
static double v_capex(const plan_purchase_row *r) { return r->tco.capex_usd / 1e3; }
static double v_capex_gpu(const plan_purchase_row *r) { return r->tco.capex_by_kind[PLAT_ITEM_GPU] / 1e3; }
static double v_capex_srv(const plan_purchase_row *r) { return r->tco.capex_by_kind[PLAT_ITEM_SERVER] / 1e3; }
static double v_capex_net(const plan_purchase_row *r)
{
    const double *k = r->tco.capex_by_kind;
    return (k[PLAT_ITEM_NIC] + k[PLAT_ITEM_SWITCH_PORT] + k[PLAT_ITEM_NVLINK_BRIDGE]) / 1e3;
}
static double v_own_mtok(const plan_purchase_row *r) { return r->tco.own_usd_per_mtok; }
static double v_own_run(const plan_purchase_row *r) { return r->tco.own_usd / 1e3; }
static double v_energy_run(const plan_purchase_row *r) { return r->tco.own_energy_usd / 1e3; }
static double v_rent_mtok(const plan_purchase_row *r) { return r->tco.rent_usd_per_mtok; }
static double v_rent_run(const plan_purchase_row *r) { return r->tco.rent_usd / 1e3; }

static const struct line {
    const char *label, *fmt, *csv;
    int need;
    double (*get)(const plan_purchase_row *);
} LINES[] = {
    {"iteration time (s)", "%.3f", "iteration_s", NEED_RUN, v_iter},
    {"tokens/s", "%.0f", "tokens_per_s", NEED_RUN, v_tokens},
    {"TFLOP/s per GPU", "%.1f", "tflops_per_gpu", NEED_RUN, v_tflops},
    {"MFU (%)", "%.1f", "mfu_percent", NEED_RUN, v_mfu},
    {"peak memory (GB)", "%.1f", "peak_memory_gb", NEED_RUN, v_mem},
    {"time to train (days)", "%.4g", "time_to_train_days", NEED_TCO, v_days},
    {"iterations", "%.0f", "steps", NEED_TCO, v_steps},
    {"mean power (kW)", "%.4g", "mean_power_kw", NEED_TCO, v_power},
    {"kWh per M tokens", "%.4g", "kwh_per_mtok", NEED_TCO, v_kwh_mtok},
    {"energy for the run (MWh)", "%.4g", "run_mwh", NEED_TCO, v_mwh},
    {"CO2 for the run (t)", "%.4g", "run_co2_t", NEED_CO2, v_co2},
    {"capital cost (k$)", "%.4g", "capex_kusd", NEED_CAPEX, v_capex},
    {"  GPUs (k$)", "%.4g", "capex_gpus_kusd", NEED_CAPEX, v_capex_gpu},
    {"  servers (k$)", "%.4g", "capex_servers_kusd", NEED_CAPEX, v_capex_srv},
    {"  network (k$)", "%.4g", "capex_network_kusd", NEED_CAPEX, v_capex_net},
    {"owned: $ per M tokens", "%.4g", "own_usd_per_mtok", NEED_CAPEX, v_own_mtok},
    {"owned: the run (k$)", "%.4g", "own_run_kusd", NEED_CAPEX, v_own_run},
    {"  of it electricity (k$)", "%.4g", "own_energy_kusd", NEED_TCO, v_energy_run},
    {"rented: $ per M tokens", "%.4g", "rent_usd_per_mtok", NEED_RENT, v_rent_mtok},
    {"rented: the run (k$)", "%.4g", "rent_run_kusd", NEED_RENT, v_rent_run},
};
#define NLINES ((int)(sizeof LINES / sizeof LINES[0]))

static const char *human(double x, char *buf, size_t n)
{
    if (x >= 1e12)
        snprintf(buf, n, "%.3gT", x / 1e12);
    else if (x >= 1e9)
        snprintf(buf, n, "%.3gB", x / 1e9);
    else if (x >= 1e6)
        snprintf(buf, n, "%.3gM", x / 1e6);
    else
        snprintf(buf, n, "%.0f", x);
    return buf;
}

static void print_header(const copts *o, const wl_model *m, int gb)
{
    char p[32], t[32], tpi[32];
    printf("trainsim %s compare: %s (%s parameters, %d layers, hidden %d, seq %d), ", TRAINSIM_VERSION, m->name,
           human(wl_model_params(m), p, sizeof p), m->layers, m->hidden, m->seq);
    if (o->tokens > 0)
        printf("%s tokens", human(o->tokens, t, sizeof t));
    else
        printf("%.0f iterations", o->steps);
    printf(", global batch %d (%s tokens per iteration)%s unless a strategy sets gb, %s\n", gb,
           human((double)gb * m->seq, tpi, sizeof tpi), o->weak ? " at the first point, scaled with the GPUs" : "",
           sim_dtype_name(o->dtype));
}

/* A source for the table: its first 100 characters (--json has it whole). */
static const char *brief(const char *s, char *buf, size_t n)
{
    if (strlen(s) <= 100)
        return s;
    snprintf(buf, n, "%.97s...", s);
    return buf;
}

/* One price or power source per distinct figure, assumptions marked. */
static void print_sources(const plan_purchase_row *rows, int n)
{
    printf("\nprices and powers (\"*\" = assumption of the catalogue, to be replaced by a quote with --costs):\n");
    const plat_item *seen[MAX_CLUSTERS * PLAT_BOM_MAX];
    int nseen = 0;
    const char *gpus_seen[MAX_CLUSTERS];
    int ngpus_seen = 0;
    for (int i = 0; i < n; i++) {
        const plat_bom *b = &rows[i].bom;
        if (!rows[i].bom_ok)
            continue;
        for (int k = 0; k < b->nitems; k++) {
            const plat_item *it = &b->item[k];
            int dup = 0;
            for (int s = 0; s < nseen && !dup; s++)
                dup = seen[s]->kind == it->kind && !strcmp(seen[s]->model, it->model) &&
                      seen[s]->price_usd == it->price_usd && seen[s]->power_w == it->power_w;
            if (dup)
                continue;
            seen[nseen++] = it;
            int pa = !strncmp(it->price_source, "assumption", 10), wa = !strncmp(it->power_source, "assumption", 10);
            printf("  %-13s %-16s ", plat_item_kind_name(it->kind), it->model[0] ? it->model : "-");
            if (it->price_usd >= 0)
                printf("$%.0f%s", it->price_usd, pa ? "*" : "");
            else
                printf("no price");
            char b1[128], b2[128];
            printf(" (%s%s%s)", brief(it->price_source, b1, sizeof b1), it->date[0] ? ", " : "", it->date);
            if (it->kind != PLAT_ITEM_GPU)
                printf("; %.0f W%s%s%s", it->power_w, wa ? "*" : "",
                       strcmp(it->power_source, it->price_source) ? " (" : "",
                       strcmp(it->power_source, it->price_source) ? brief(it->power_source, b2, sizeof b2) : "");
            if (it->kind != PLAT_ITEM_GPU && strcmp(it->power_source, it->price_source))
                printf(")");
            printf("\n");
        }
        int dup = 0;
        for (int s = 0; s < ngpus_seen && !dup; s++)
            dup = !strcmp(gpus_seen[s], b->gpu_model);
        if (!dup) {
            gpus_seen[ngpus_seen++] = b->gpu_model;
            char b1[128], b2[128], b3[128];
            printf("  %-13s %-16s busy %s\n  %-13s %-16s comm-only %s\n  %-13s %-16s idle %s\n", "gpu power",
                   b->gpu_model, brief(b->gpu_power.busy_source, b1, sizeof b1), "", "",
                   brief(b->gpu_power.comm_source, b2, sizeof b2), "", "", brief(b->gpu_power.idle_source, b3, sizeof b3));
        }
    }
    for (int i = 0; i < n; i++)
        if (rows[i].bom_ok) {
            char b1[128], b2[128];
            printf("  electricity   $%.3f per kWh (%s)\n  amortisation  %.1f years (%s)\n",
                   rows[i].bom.electricity_usd_kwh, brief(rows[i].bom.electricity_source, b1, sizeof b1),
                   rows[i].bom.amortization_years, brief(rows[i].bom.amortization_source, b2, sizeof b2));
            break;
        }
}

static void print_text(const copts *o, const wl_model *m, const plan_cluster *cl, const plan_purchase_row *rows,
                       int n)
{
    print_header(o, m, n ? cl[0].gb : 0);
    int w[MAX_CLUSTERS];
    char g[MAX_CLUSTERS][96];
    for (int i = 0; i < n; i++) {
        snprintf(g[i], sizeof g[i], rows[i].ngpus ? "%d x %s" : "-", rows[i].ngpus, rows[i].gpu_model);
        w[i] = 2 + (int)(strlen(cl[i].label) > strlen(g[i]) ? strlen(cl[i].label) : strlen(g[i]));
        w[i] = w[i] < 14 ? 14 : w[i];
    }
    printf("%-26s", o->vary ? o->vary : "cluster");
    for (int i = 0; i < n; i++)
        printf("%*s", w[i], cl[i].label);
    printf("\n%-26s", "GPUs");
    for (int i = 0; i < n; i++)
        printf("%*s", w[i], g[i]);
    printf("\n%-26s", "global batch");
    for (int i = 0; i < n; i++)
        printf("%*d", w[i], rows[i].gb);
    printf("\n");
    for (int l = 0; l < NLINES; l++) {
        int any = 0;
        for (int i = 0; i < n; i++)
            any |= has(&rows[i], LINES[l].need);
        if (!any)
            continue;
        printf("%-26s", LINES[l].label);
        for (int i = 0; i < n; i++) {
            char cell[64] = "-";
            if (has(&rows[i], LINES[l].need))
                snprintf(cell, sizeof cell, LINES[l].fmt, LINES[l].get(&rows[i]));
            else if (l == 0)
                snprintf(cell, sizeof cell, "cannot run");
            printf("%*s", w[i], cell);
        }
        printf("\n");
    }
    printf("\n");
    for (int i = 0; i < n; i++) {
        const plan_purchase_row *r = &rows[i];
        if (!r->ok) {
            printf("%s: cannot run: %s\n", cl[i].label, r->error);
            continue;
        }
        printf("%s: %s", cl[i].label, r->best.strategy);
        if (r->searched)
            printf(" (the planner's best of %d candidates, simulated whole)\n", r->candidates);
        else
            printf(" (given)\n");
        if (!r->bom_ok)
            printf("  no costs: %s\n", r->bom_error);
        else if (!r->tco_ok)
            printf("  no costs: %s\n", r->tco_error);
        else if (!r->tco.capex_ok)
            printf("  no capital cost: %s\n", r->tco.capex_missing);
        if (r->bom_ok && r->bom.note[0])
            printf("  note: %s\n", r->bom.note);
    }
    print_sources(rows, n);
    printf("\ninputs: trainsim %s; clusters", TRAINSIM_VERSION);
    for (int i = 0; i < n; i++)
        if (rows[i].cluster_hash)
            printf(" %s=%016llx", cl[i].label, (unsigned long long)rows[i].cluster_hash);
    printf(" (FNV-1a of each cluster JSON); --json records them in full\n");
}

static void print_csv(const plan_cluster *cl, const plan_purchase_row *rows, int n)
{
    printf("cluster,name,gpus,gpu_model,global_batch,strategy,status");
    for (int l = 0; l < NLINES; l++)
        printf(",%s", LINES[l].csv);
    printf(",cluster_hash,error\n");
    for (int i = 0; i < n; i++) {
        const plan_purchase_row *r = &rows[i];
        printf("\"%s\",\"%s\",%d,%s,%d,\"%s\",%s", cl[i].label, r->name, r->ngpus, r->gpu_model, r->gb,
               r->ok ? r->best.strategy : "", r->ok ? "ok" : "failed");
        for (int l = 0; l < NLINES; l++)
            if (has(r, LINES[l].need))
                printf(",%.9g", LINES[l].get(r));
            else
                printf(",");
        const char *why = !r->ok ? r->error : !r->bom_ok ? r->bom_error : !r->tco_ok ? r->tco_error
                          : !r->tco.capex_ok ? r->tco.capex_missing : "";
        printf(",%016llx,\"", (unsigned long long)r->cluster_hash);
        for (const char *p = why; *p; p++)
            putchar(*p == '"' ? '\'' : *p == '\n' ? ' ' : *p);
        printf("\"\n");
    }
}

/* ---- JSON: every result with every input ---- */

typedef struct kv {
    const char *key;
    double v;
} kv;

static void add_numbers(cJSON *o, const kv *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cJSON_AddNumberToObject(o, x[i].key, x[i].v);
}
#define ADD_NUMBERS(o, ...)                                                                                           \
    do {                                                                                                              \
        const kv x_[] = {__VA_ARGS__};                                                                                \
        add_numbers(o, x_, sizeof x_ / sizeof x_[0]);                                                                 \
    } while (0)

static cJSON *json_bom(const plat_bom *b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "server_class", b->server_class);
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    for (int i = 0; i < b->nitems; i++) {
        const plat_item *it = &b->item[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "part", plat_item_kind_name(it->kind));
        cJSON_AddStringToObject(x, "model", it->model);
        cJSON_AddNumberToObject(x, "count", it->count);
        if (it->price_usd >= 0)
            cJSON_AddNumberToObject(x, "unit_price_usd", it->price_usd);
        else
            cJSON_AddNullToObject(x, "unit_price_usd");
        cJSON_AddStringToObject(x, "price_source", it->price_source);
        cJSON_AddBoolToObject(x, "price_assumed", !strncmp(it->price_source, "assumption", 10));
        cJSON_AddStringToObject(x, "date", it->date);
        cJSON_AddNumberToObject(x, "unit_power_w", it->power_w);
        cJSON_AddStringToObject(x, "power_source", it->power_source);
        cJSON_AddBoolToObject(x, "power_assumed", !strncmp(it->power_source, "assumption", 10));
        cJSON_AddItemToArray(items, x);
    }
    cJSON *gp = cJSON_AddObjectToObject(o, "gpu_power_w");
    ADD_NUMBERS(gp, {"busy", b->gpu_power.busy_w}, {"comm_only", b->gpu_power.comm_w}, {"idle", b->gpu_power.idle_w});
    cJSON_AddStringToObject(gp, "busy_source", b->gpu_power.busy_source);
    cJSON_AddStringToObject(gp, "comm_only_source", b->gpu_power.comm_source);
    cJSON_AddStringToObject(gp, "idle_source", b->gpu_power.idle_source);
    cJSON_AddNumberToObject(o, "electricity_usd_per_kwh", b->electricity_usd_kwh);
    cJSON_AddStringToObject(o, "electricity_source", b->electricity_source);
    cJSON_AddNumberToObject(o, "amortization_years", b->amortization_years);
    cJSON_AddStringToObject(o, "amortization_source", b->amortization_source);
    if (b->note[0])
        cJSON_AddStringToObject(o, "note", b->note);
    return o;
}

static cJSON *json_tco(const plan_tco *t)
{
    cJSON *o = cJSON_CreateObject();
    ADD_NUMBERS(o, {"tokens", t->tokens}, {"steps", t->steps}, {"time_to_train_s", t->time_s},
                {"time_to_train_days", t->time_s / 86400});
    cJSON *e = cJSON_AddObjectToObject(o, "energy");
    cJSON *j = cJSON_AddObjectToObject(e, "per_iteration_j");
    ADD_NUMBERS(j, {"gpu_busy", t->gpu_busy_j}, {"gpu_comm_only", t->gpu_comm_j}, {"gpu_idle", t->gpu_idle_j},
                {"servers", t->node_j}, {"network", t->network_j}, {"total_with_pue", t->iter_j});
    ADD_NUMBERS(e, {"mean_power_w", t->mean_power_w}, {"kwh_per_million_tokens", t->kwh_per_mtok},
                {"run_kwh", t->run_kwh});
    if (t->run_co2_kg >= 0)
        cJSON_AddNumberToObject(e, "run_co2_kg", t->run_co2_kg);
    cJSON *c = cJSON_AddObjectToObject(o, "cost");
    if (t->capex_ok) {
        cJSON_AddNumberToObject(c, "capital_usd", t->capex_usd);
        cJSON *k = cJSON_AddObjectToObject(c, "capital_by_part_usd");
        for (int i = 0; i < PLAT_ITEM_KINDS; i++)
            cJSON_AddNumberToObject(k, plat_item_kind_name((plat_item_kind)i), t->capex_by_kind[i]);
        cJSON *own = cJSON_AddObjectToObject(c, "owned");
        ADD_NUMBERS(own, {"run_usd", t->own_usd}, {"capital_share_usd", t->own_capital_usd},
                    {"electricity_usd", t->own_energy_usd}, {"usd_per_million_tokens", t->own_usd_per_mtok});
    } else {
        cJSON_AddStringToObject(c, "capital_missing", t->capex_missing);
    }
    if (t->rent_ok) {
        cJSON *r = cJSON_AddObjectToObject(c, "rented");
        cJSON_AddNumberToObject(r, "run_usd", t->rent_usd);
        cJSON_AddNumberToObject(r, "usd_per_million_tokens", t->rent_usd_per_mtok);
    }
    return o;
}

static cJSON *json_row(const plan_cluster *c, const plan_purchase_row *r)
{
    cJSON *x = cJSON_CreateObject();
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->cluster_hash);
    cJSON_AddStringToObject(x, "cluster", c->label);
    cJSON_AddStringToObject(x, "name", r->name);
    cJSON_AddStringToObject(x, "source", c->source);
    cJSON_AddStringToObject(x, "cluster_hash", hash);
    cJSON *def = c->json ? cJSON_Parse(c->json) : NULL;
    if (def)
        cJSON_AddItemToObject(x, "cluster_json", def);
    cJSON_AddBoolToObject(x, "ok", r->ok);
    ADD_NUMBERS(x, {"gpus", r->ngpus}, {"nodes", r->nodes}, {"global_batch", r->gb});
    cJSON_AddStringToObject(x, "gpu_model", r->gpu_model);
    if (c->rent_usd_per_gpu_h >= 0)
        cJSON_AddNumberToObject(x, "price_per_gpu_hour_usd", c->rent_usd_per_gpu_h);
    if (!r->ok) {
        cJSON_AddStringToObject(x, "error", r->error);
        return x;
    }
    cJSON_AddStringToObject(x, "strategy", r->best.strategy);
    cJSON_AddStringToObject(x, "strategy_from", r->searched ? "search" : "given");
    if (r->searched) {
        cJSON_AddNumberToObject(x, "candidates", r->candidates);
        cJSON_AddNumberToObject(x, "enumerated", r->enumerated);
    }
    ADD_NUMBERS(x, {"iteration_time_s", r->best.iteration_s}, {"samples_per_s", r->best.samples_per_s},
                {"tokens_per_s", r->best.tokens_per_s}, {"tflops_per_gpu", r->best.tflops_per_gpu}, {"mfu", r->mfu},
                {"peak_memory_bytes", r->best.peak_mem}, {"memory_capacity_bytes", r->mem_capacity});
    cJSON *b = cJSON_AddObjectToObject(x, "breakdown_per_gpu_s");
    ADD_NUMBERS(b, {"compute", r->best.compute_s}, {"exposed_comm", r->best.exposed_comm_s}, {"idle", r->best.idle_s},
                {"comm_total", r->best.comm_s});
    if (r->bom_ok)
        cJSON_AddItemToObject(x, "bill_of_materials", json_bom(&r->bom));
    else
        cJSON_AddStringToObject(x, "bill_of_materials_error", r->bom_error);
    if (r->tco_ok)
        cJSON_AddItemToObject(x, "run", json_tco(&r->tco));
    else if (r->bom_ok)
        cJSON_AddStringToObject(x, "run_error", r->tco_error);
    return x;
}

static void print_json(const copts *o, const wl_model *m, const plan_cluster *cl, const plan_purchase_row *rows,
                       int n, int argc, char **argv)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "trainsim_version", TRAINSIM_VERSION);
    cJSON *cmd = cJSON_AddArrayToObject(root, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("trainsim"));
    for (int i = 0; i < argc; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
    cJSON *mo = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(mo, "name", m->name);
    ADD_NUMBERS(mo, {"layers", m->layers}, {"hidden", m->hidden}, {"heads", m->heads}, {"ffn", m->ffn},
                {"seq", m->seq}, {"vocab", m->vocab}, {"parameters", wl_model_params(m)});
    cJSON *job = cJSON_AddObjectToObject(root, "job");
    if (o->tokens > 0)
        cJSON_AddNumberToObject(job, "tokens", o->tokens);
    else
        cJSON_AddNumberToObject(job, "steps", o->steps);
    cJSON_AddStringToObject(job, "dtype", sim_dtype_name(o->dtype));
    cJSON_AddStringToObject(job, "scaling", o->weak ? "weak" : "strong");
    cJSON *opt = cJSON_AddObjectToObject(root, "options");
    cJSON_AddStringToObject(opt, "search", "planner space at fast fidelity, the fastest simulated whole");
    cJSON_AddNumberToObject(opt, "refine", o->refine < 1 ? 1 : o->refine);
    cJSON *ax = cJSON_AddArrayToObject(opt, "axis");
    for (int i = 0; i < o->naxis; i++)
        cJSON_AddItemToArray(ax, cJSON_CreateString(o->axis[i]));
    cJSON_AddNumberToObject(opt, "pue", o->pue);
    if (o->carbon >= 0)
        cJSON_AddNumberToObject(opt, "carbon_g_per_kwh", o->carbon);
    if (o->costs) {
        cJSON_AddStringToObject(opt, "costs_file", o->costs);
        cJSON *ct = cJSON_Parse(o->costs_text);
        if (ct)
            cJSON_AddItemToObject(opt, "costs", ct);
    }
    if (o->vary)
        cJSON_AddStringToObject(opt, "vary", o->vary);
    cJSON *arr = cJSON_AddArrayToObject(root, "clusters");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, json_row(&cl[i], &rows[i]));
    sim_json_print(stdout, root);
}

/* ---- charts: bars per cluster, lines for a --vary sweep ---- */

static const struct chart {
    const char *title;
    int need;
    double (*get)(const plan_purchase_row *);
} CHARTS[] = {
    {"time to train (days)", NEED_TCO, v_days},
    {"$ per million tokens", NEED_CAPEX, v_own_mtok},
    {"kWh per million tokens", NEED_TCO, v_kwh_mtok},
};

/* The $ chart shows owning when any cluster has a capital cost, else renting. */
static int chart_rented(const plan_purchase_row *rows, int n)
{
    for (int i = 0; i < n; i++)
        if (has(&rows[i], NEED_CAPEX))
            return 0;
    return 1;
}

static double chart_value(int c, int rented, const plan_purchase_row *r, int *ok)
{
    if (c == 1 && rented) {
        *ok = has(r, NEED_RENT);
        return *ok ? r->tco.rent_usd_per_mtok : 0;
    }
    *ok = has(r, CHARTS[c].need);
    return *ok ? CHARTS[c].get(r) : 0;
}

static void chart_panel(FILE *f, int c, const plan_cluster *cl, const plan_purchase_row *rows, int n, int lines)
{
    plan_svg_panel p = {c * 320 + 80, 70, 220, 220, n, 0};
    int ok, rented = chart_rented(rows, n);
    for (int i = 0; i < n; i++) {
        double v = chart_value(c, rented, &rows[i], &ok);
        if (ok && v > p.ymax)
            p.ymax = v;
    }
    p.ymax = plan_svg_nice(p.ymax * 1.05);
    plan_svg_axes(f, &p, "", "", 0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">%s%s</text>\n",
            p.left + p.width / 2, p.top - 14, CHARTS[c].title, c == 1 ? (rented ? " (rented)" : " (owned)") : "");
    double slot = p.width / (n ? n : 1);
    if (lines)
        fprintf(f, "<polyline fill=\"none\" stroke=\"#4a7bd0\" stroke-width=\"2\" points=\"");
    for (int i = 0, first = 1; lines && i < n; i++) {
        double v = chart_value(c, rented, &rows[i], &ok);
        if (ok)
            fprintf(f, "%s%.1f,%.1f", first ? "" : " ", p.left + (i + 0.5) * slot, plan_svg_y(&p, v));
        first &= !ok;
    }
    if (lines)
        fprintf(f, "\"/>\n");
    for (int i = 0; i < n; i++) {
        double v = chart_value(c, rented, &rows[i], &ok), x = p.left + (i + 0.5) * slot;
        if (!ok)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#d04a4a\">n/a</text>\n", x,
                    p.top + p.height - 6);
        else if (lines)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#4a7bd0\"><title>%.4g</title></circle>\n", x,
                    plan_svg_y(&p, v), v);
        else
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4a7bd0\"><title>%.4g</title>"
                       "</rect>\n", x - 0.35 * slot, plan_svg_y(&p, v), 0.7 * slot, p.top + p.height - plan_svg_y(&p, v),
                    v);
        if (ok)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%.3g</text>\n", x,
                    plan_svg_y(&p, v) - 6, v);
        fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-30)\" text-anchor=\"end\" font-size=\"10\">", x,
                p.top + p.height + 14);
        plan_svg_text(f, cl[i].label);
        fprintf(f, "</text>\n");
    }
}

static int write_charts(const char *path, const copts *o, const wl_model *m, const plan_cluster *cl,
                        const plan_purchase_row *rows, int n, sim_err *err)
{
    sim_outfile out;
    FILE *f = sim_out_open(&out, path, err);
    if (!f)
        return -1;
    char title[256], t[32];
    if (o->tokens > 0)
        snprintf(title, sizeof title, "%s on %s tokens%s%s", m->name, human(o->tokens, t, sizeof t),
                 o->vary ? ": " : "", o->vary ? o->vary : "");
    else
        snprintf(title, sizeof title, "%s, %.0f iterations%s%s", m->name, o->steps, o->vary ? ": " : "",
                 o->vary ? o->vary : "");
    plan_svg_begin(f, 960, 380, title);
    for (int c = 0; c < (int)(sizeof CHARTS / sizeof CHARTS[0]); c++)
        chart_panel(f, c, cl, rows, n, o->vary != NULL);
    return plan_svg_end(&out, err);
}

static void output(const copts *o, const wl_model *m, const plan_cluster *cl, const plan_purchase_row *rows, int n,
                   int argc, char **argv)
{
    if (o->json)
        print_json(o, m, cl, rows, n, argc, argv);
    else if (o->csv)
        print_csv(cl, rows, n);
    else
        print_text(o, m, cl, rows, n);
    sim_err e;
    if (o->svg && write_charts(o->svg, o, m, cl, rows, n, &e) < 0)
        fprintf(stderr, "trainsim compare: %s\n", e.msg);
}

int plan_compare_cli_main(int argc, char **argv)
{
    copts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    sim_err err;
    wl_model model;
    if (wl_model_load(o.model, &model, &err) < 0)
        return fprintf(stderr, "trainsim compare: --model: %s\n", err.msg), 2;
    char *costs = NULL;
    if (o.costs && (!(costs = sim_read_file(o.costs, &err)) || plat_bom_apply_costs(NULL, costs, o.costs, &err) < 0)) {
        free(costs);
        return fprintf(stderr, "trainsim compare: --costs: %s\n", err.msg), 2;
    }
    o.costs_text = costs;
    plan_cluster cl[MAX_CLUSTERS];
    int gpus[MAX_CLUSTERS];
    int n = build_clusters(&o, cl);
    for (int i = 0; i < n; i++)
        gpus[i] = gpus_of(&cl[i]);
    if (n < 0 || assign(&o, cl, n, gpus) < 0) {
        for (int i = 0; i < n; i++)
            plan_cluster_free(&cl[i]);
        free(costs);
        return 2;
    }
    if (!(o.tokens > 0) && !(o.steps > 0))
        o.tokens = 20 * wl_model_params(&model); /* compute-optimal, Hoffmann et al. 2022 */
    /* purchasing compares hardware under the schedule practitioners run
     * (Megatron-LM's); --axis schedule=... searches the research ones too */
    int schedule_given = 0;
    for (int i = 0; i < o.naxis; i++)
        schedule_given |= !strncmp(o.axis[i], "schedule=", 9);
    if (!schedule_given && o.naxis < 64)
        o.axis[o.naxis++] = "schedule=megatron";
    plan_purchase_opts po = {&model, o.dtype, {.jobs = o.jobs ? o.jobs : plan_ncpus(), .cache_dir = o.nocache ? NULL : o.cache,
                             .refine = o.refine < 1 ? 1 : o.refine, .progress = !o.quiet && isatty(2),
                             .mpi_rank = 0, .mpi_size = 1},
                             o.axis, o.naxis, costs, o.costs, o.tokens, o.steps, o.pue, o.carbon};
    plan_purchase_row *rows = calloc((size_t)(n ? n : 1), sizeof *rows);
    if (!rows)
        return fprintf(stderr, "trainsim compare: out of memory\n"), 1;
    int nok = 0;
    for (int i = 0; i < n; i++) {
        double t0 = now();
        if (!o.quiet)
            fprintf(stderr, "trainsim compare: [%d/%d] %s: %s\n", i + 1, n, cl[i].label,
                    cl[i].error[0] ? "cannot be built" : cl[i].strategy[0] ? "simulating the given strategy"
                                                                          : "searching strategies");
        plan_purchase_cluster(&po, &cl[i], &rows[i]);
        nok += rows[i].ok;
        if (!o.quiet && rows[i].ok)
            fprintf(stderr, "trainsim compare: [%d/%d] %s: %s (%d evaluated, %d from the cache) in %.1f s\n", i + 1,
                    n, cl[i].label, rows[i].best.strategy, rows[i].evaluated, rows[i].cached, now() - t0);
    }
    output(&o, &model, cl, rows, n, argc, argv);
    for (int i = 0; i < n; i++)
        plan_cluster_free(&cl[i]);
    free(rows);
    free(costs);
    return nok ? 0 : 1;
}
