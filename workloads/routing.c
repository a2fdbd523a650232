/* routing.c — synthetic and traced MoE routing (see routing.h).
 *
 * Draw order, fixed so that a seed is reproducible: for each layer its
 * initial popularity (Zipf: a shuffle of expert ranks; Dirichlet: one
 * Dirichlet draw), then for each step, for each layer, the drift of every
 * expert's log-popularity (skipped at step 0) and one multinomial sample per
 * source GPU. */
#include "workloads/routing.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/fileio.h"
#include "sim/json.h"

struct wl_routing {
    int steps, layers, experts, sources;
    int64_t *counts; /* [steps][layers][sources][experts] */
};

void wl_routing_cfg_default(wl_routing_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->dist = WL_ROUTE_UNIFORM;
    c->zipf_s = 1.2;
    c->alpha = 1.0;
    c->drift = 0.05;
    c->seed = 1;
}

const char *wl_route_dist_name(wl_route_dist d)
{
    static const char *n[] = {"uniform", "zipf", "dirichlet", "trace"};
    return (unsigned)d < 4 ? n[d] : "?";
}

static int parse_param(const char *v, double *out, const char *what, sim_err *err)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0) || !isfinite(x))
        return sim_errf(err, "routing: %s: expected a number > 0, got \"%s\"", what, v);
    *out = x;
    return 0;
}

int wl_routing_cfg_parse(const char *text, wl_routing_cfg *c, sim_err *err)
{
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    const char *arg = colon ? colon + 1 : NULL;
    if (n == 7 && !strncmp(text, "uniform", n) && !arg) {
        c->dist = WL_ROUTE_UNIFORM;
        return 0;
    }
    if (n == 4 && !strncmp(text, "zipf", n)) {
        c->dist = WL_ROUTE_ZIPF;
        return arg ? parse_param(arg, &c->zipf_s, "zipf exponent", err) : 0;
    }
    if (n == 9 && !strncmp(text, "dirichlet", n)) {
        c->dist = WL_ROUTE_DIRICHLET;
        return arg ? parse_param(arg, &c->alpha, "dirichlet concentration", err) : 0;
    }
    if (n == 5 && !strncmp(text, "trace", n) && arg && *arg) {
        if (strlen(arg) >= sizeof c->trace)
            return sim_errf(err, "routing: trace file name too long");
        c->dist = WL_ROUTE_TRACE;
        snprintf(c->trace, sizeof c->trace, "%s", arg);
        return 0;
    }
    return sim_errf(err, "routing: expected uniform, zipf[:S], dirichlet[:ALPHA] or trace:FILE, got \"%s\"", text);
}

static wl_routing *alloc_routing(int steps, int layers, int experts, int sources)
{
    wl_routing *r = calloc(1, sizeof *r);
    r->steps = steps;
    r->layers = layers;
    r->experts = experts;
    r->sources = sources;
    r->counts = calloc((size_t)steps * layers * sources * experts + 1, sizeof *r->counts);
    return r;
}

static int64_t *at(const wl_routing *r, int step, int layer)
{
    return r->counts + ((size_t)step * r->layers + layer) * (size_t)r->sources * r->experts;
}

/* ---- trace -------------------------------------------------------------- */

/* Reads one array of `n` non-negative integer counts. */
static int read_counts(const cJSON *a, int n, int64_t *out, const char *src, const char *path, sim_err *err)
{
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        return sim_errf(err, "%s: %s: expected an array of %d counts (one per expert)", src, path, n);
    int k = 0;
    for (const cJSON *x = a->child; x; x = x->next, k++) {
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble != floor(x->valuedouble) ||
            x->valuedouble > 1e15)
            return sim_errf(err, "%s: %s[%d]: expected a token count >= 0", src, path, k);
        out[k] = (int64_t)x->valuedouble;
    }
    return 0;
}

static wl_routing *from_trace(const char *path, int steps, int layers, int experts, int sources, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    wl_routing *r = NULL;
    cJSON *root = sim_json_parse(text, path, err);
    free(text);
    if (!root) {
        sim_err_prefix(err, "expected a trainsim-routing file (workloads/README.md): ");
        return NULL;
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *ne = cJSON_GetObjectItemCaseSensitive(root, "experts");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "steps");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "trainsim-routing") != 0) {
        sim_errf(err, "%s: format: expected \"trainsim-routing\"", path);
        goto out;
    }
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        sim_errf(err, "%s: version: expected 1", path);
        goto out;
    }
    if (!cJSON_IsNumber(ne) || ne->valuedouble != experts) {
        sim_errf(err, "%s: experts: the model has %d experts per MoE layer; the trace must say \"experts\": %d", path,
                 experts, experts);
        goto out;
    }
    if (!cJSON_IsArray(st) || cJSON_GetArraySize(st) < 1) {
        sim_errf(err, "%s: steps: expected a non-empty array of {\"layers\": [...]}", path);
        goto out;
    }
    if (steps <= 0)
        steps = cJSON_GetArraySize(st);
    if (cJSON_GetArraySize(st) < steps) {
        sim_errf(err, "%s: steps: the trace has %d steps but %d are asked for", path, cJSON_GetArraySize(st), steps);
        goto out;
    }
    r = alloc_routing(steps, layers, experts, sources);
    int si = 0;
    for (const cJSON *s = st->child; s && si < steps; s = s->next, si++) {
        char p[128];
        const cJSON *ly = cJSON_GetObjectItemCaseSensitive(s, "layers");
        if (!cJSON_IsArray(ly) || cJSON_GetArraySize(ly) != layers) {
            sim_errf(err, "%s: steps[%d].layers: expected an array with one entry per MoE layer (%d)", path, si, layers);
            goto fail;
        }
        int li = 0;
        for (const cJSON *l = ly->child; l; l = l->next, li++) {
            int64_t *c = at(r, si, li);
            snprintf(p, sizeof p, "steps[%d].layers[%d]", si, li);
            if (cJSON_IsArray(l) && l->child && cJSON_IsArray(l->child)) {
                if (cJSON_GetArraySize(l) != sources) {
                    sim_errf(err, "%s: %s: expected %d per-source arrays (one per GPU of an expert-parallel group), "
                             "or one array of %d totals", path, p, sources, experts);
                    goto fail;
                }
                int k = 0;
                for (const cJSON *x = l->child; x; x = x->next, k++) {
                    char q[160];
                    snprintf(q, sizeof q, "%s[%d]", p, k);
                    if (read_counts(x, experts, c + (size_t)k * experts, path, q, err) < 0)
                        goto fail;
                }
            } else {
                int64_t *tot = malloc((size_t)experts * sizeof *tot);
                if (read_counts(l, experts, tot, path, p, err) < 0) {
                    free(tot);
                    goto fail;
                }
                /* totals split evenly, remainders to the first sources */
                for (int e = 0; e < experts; e++)
                    for (int k = 0; k < sources; k++)
                        c[(size_t)k * experts + e] = tot[e] / sources + (k < tot[e] % sources);
                free(tot);
            }
        }
    }
    goto out;
fail:
    wl_routing_free(r);
    r = NULL;
out:
    cJSON_Delete(root);
    return r;
}

/* ---- synthetic ---------------------------------------------------------- */

wl_routing *wl_routing_new(const wl_routing_cfg *c, int steps, int layers, int experts, int sources,
                           int64_t per_source, sim_err *err)
{
    if (layers < 1 || experts < 1 || sources < 1)
        return sim_errf(err, "routing: needs at least one MoE layer, expert and source GPU"), NULL;
    if (c->dist == WL_ROUTE_TRACE)
        return from_trace(c->trace, steps, layers, experts, sources, err);
    if (steps < 1 || per_source < 0)
        return sim_errf(err, "routing: steps must be >= 1"), NULL;
    if (c->drift < 0 || !isfinite(c->drift))
        return sim_errf(err, "routing: drift must be a number >= 0"), NULL;
    wl_routing *r = alloc_routing(steps, layers, experts, sources);
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, c->seed);
    double *logp = malloc((size_t)layers * experts * sizeof *logp);
    double *p = malloc((size_t)experts * sizeof *p);
    double *alpha = malloc((size_t)experts * sizeof *alpha);
    unsigned int *n = malloc((size_t)experts * sizeof *n);
    int *perm = malloc((size_t)experts * sizeof *perm);
    for (int l = 0; l < layers; l++) {
        double *lp = logp + (size_t)l * experts;
        if (c->dist == WL_ROUTE_ZIPF) {
            for (int e = 0; e < experts; e++)
                perm[e] = e;
            gsl_ran_shuffle(g, perm, (size_t)experts, sizeof *perm);
            for (int e = 0; e < experts; e++)
                lp[perm[e]] = -c->zipf_s * log(e + 1.0);
        } else if (c->dist == WL_ROUTE_DIRICHLET) {
            for (int e = 0; e < experts; e++)
                alpha[e] = c->alpha;
            gsl_ran_dirichlet(g, (size_t)experts, alpha, p);
            for (int e = 0; e < experts; e++)
                lp[e] = log(p[e] > 1e-300 ? p[e] : 1e-300);
        } else {
            for (int e = 0; e < experts; e++)
                lp[e] = 0;
        }
    }
    for (int s = 0; s < steps; s++)
        for (int l = 0; l < layers; l++) {
            double *lp = logp + (size_t)l * experts;
            if (s > 0 && c->drift > 0)
                for (int e = 0; e < experts; e++)
                    lp[e] += gsl_ran_gaussian(g, c->drift);
            double mx = lp[0], sum = 0;
            for (int e = 1; e < experts; e++)
                mx = lp[e] > mx ? lp[e] : mx;
            for (int e = 0; e < experts; e++)
                sum += p[e] = exp(lp[e] - mx);
            for (int e = 0; e < experts; e++)
                p[e] /= sum;
            int64_t *cnt = at(r, s, l);
            for (int k = 0; k < sources; k++) {
                gsl_ran_multinomial(g, (size_t)experts, (unsigned int)per_source, p, n);
                for (int e = 0; e < experts; e++)
                    cnt[(size_t)k * experts + e] = n[e];
            }
        }
    free(logp);
    free(p);
    free(alpha);
    free(n);
    free(perm);
    gsl_rng_free(g);
    return r;
}

wl_routing *wl_routing_from_counts(int layers, int experts, int sources, const int64_t *counts)
{
    wl_routing *r = alloc_routing(1, layers, experts, sources);
    memcpy(r->counts, counts, (size_t)layers * sources * experts * sizeof *counts);
    return r;
}

void wl_routing_free(wl_routing *r)
{
    if (!r)
        return;
    free(r->counts);
    free(r);
}

const int64_t *wl_routing_counts(const wl_routing *r, int step, int layer) { return at(r, step, layer); }

void wl_routing_totals(const wl_routing *r, int step, int layer, int64_t *out)
{
    const int64_t *c = at(r, step, layer);
    for (int e = 0; e < r->experts; e++) {
        out[e] = 0;
        for (int k = 0; k < r->sources; k++)
            out[e] += c[(size_t)k * r->experts + e];
    }
}

int wl_routing_steps(const wl_routing *r) { return r->steps; }
