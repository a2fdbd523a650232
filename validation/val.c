/* val.c — cases, error statistics and thresholds of the validation harness
 * (see val.h).  The statistics are the plain ones the issue asks for: mean
 * absolute percentage error and worst case, over a group or a subset. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fileio.h"
#include "sim/json.h"
#include "val.h"
#include "val_csv.h"

struct val_set {
    int n, cap;
    val_case *v;
    int nskip, capskip;
    val_skipped *skip;
    int in_data, expressible; /* -1 = not given */
};

val_set *val_set_new(void)
{
    val_set *s = calloc(1, sizeof(val_set));
    if (s)
        s->in_data = s->expressible = -1;
    return s;
}

void val_set_free(val_set *s)
{
    if (!s)
        return;
    free(s->v);
    free(s->skip);
    free(s);
}

/* Room for one more element in an array of n of cap (doubling). */
static int grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 32;
    void *v = realloc(*arr, (size_t)c * elem);
    if (!v)
        return -1;
    *arr = v;
    *cap = c;
    return 0;
}

int val_add(val_set *s, const char *subset, const char *name, double measured, double simulated, const char *unit,
            double x, sim_err *err)
{
    if (!(measured > 0) || !isfinite(measured))
        return sim_errf(err, "case \"%s\": measured value %g is not a positive number", name, measured);
    if (!isfinite(simulated) || simulated < 0)
        return sim_errf(err, "case \"%s\": simulated value %g is not a non-negative number", name, simulated);
    if (grow((void **)&s->v, &s->cap, s->n, sizeof *s->v) < 0)
        return sim_errf(err, "out of memory");
    val_case *k = &s->v[s->n++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->subset, sizeof k->subset, "%s", subset ? subset : "");
    snprintf(k->unit, sizeof k->unit, "%s", unit ? unit : "");
    k->measured = measured;
    k->simulated = simulated;
    k->x = x;
    return 0;
}

void val_case_detail(val_set *s, double compute_s, double exposed_s, double bubble_s, const char *note)
{
    if (!s || s->n == 0)
        return;
    val_case *k = &s->v[s->n - 1];
    k->compute_s = compute_s;
    k->exposed_s = exposed_s;
    k->bubble_s = bubble_s;
    snprintf(k->note, sizeof k->note, "%s", note ? note : "");
}

void val_case_kernels(val_set *s, const double kernel_s[SIM_KCLASS_COUNT])
{
    if (!s || s->n == 0)
        return;
    memcpy(s->v[s->n - 1].kernel_s, kernel_s, sizeof s->v[s->n - 1].kernel_s);
}

int val_skip(val_set *s, const char *subset, const char *name, const char *kind, const char *reason, sim_err *err)
{
    if (grow((void **)&s->skip, &s->capskip, s->nskip, sizeof *s->skip) < 0)
        return sim_errf(err, "out of memory");
    val_skipped *k = &s->skip[s->nskip++];
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->subset, sizeof k->subset, "%s", subset ? subset : "");
    snprintf(k->kind, sizeof k->kind, "%s", kind ? kind : "");
    snprintf(k->reason, sizeof k->reason, "%s", reason ? reason : "");
    return 0;
}

int val_skip_count(const val_set *s) { return s ? s->nskip : 0; }

const val_skipped *val_skip_get(const val_set *s, int i) { return (s && i >= 0 && i < s->nskip) ? &s->skip[i] : NULL; }

void val_set_rows(val_set *s, int in_data, int expressible)
{
    s->in_data = in_data;
    s->expressible = expressible;
}

void val_get_rows(const val_set *s, int *in_data, int *expressible)
{
    *in_data = s ? s->in_data : -1;
    *expressible = s ? s->expressible : -1;
}

int val_set_count(const val_set *s) { return s ? s->n : 0; }

const val_case *val_set_get(const val_set *s, int i) { return (s && i >= 0 && i < s->n) ? &s->v[i] : NULL; }

double val_error_pct(double measured, double simulated) { return 100.0 * (simulated - measured) / measured; }

void val_stats_of(const val_set *s, const char *subset, val_stats *out)
{
    memset(out, 0, sizeof *out);
    out->worst_index = -1;
    double sum = 0, sum_signed = 0;
    for (int i = 0; i < val_set_count(s); i++) {
        const val_case *k = &s->v[i];
        if (subset && strcmp(k->subset, subset) != 0)
            continue;
        double e = val_error_pct(k->measured, k->simulated);
        sum += fabs(e);
        sum_signed += e;
        if (out->worst_index < 0 || fabs(e) > out->worst) {
            out->worst = fabs(e);
            out->worst_index = i;
        }
        out->n++;
    }
    if (out->n > 0) {
        out->mape = sum / out->n;
        out->bias = sum_signed / out->n;
    }
}

char *val_data_path(const val_ctx *ctx, const char *rel)
{
    const char *dir = ctx && ctx->data_dir ? ctx->data_dir : "validation/data";
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

val_csv *val_csv_load_data(const val_ctx *ctx, const char *rel, sim_err *err)
{
    char *path = val_data_path(ctx, rel);
    if (!path) {
        sim_errf(err, "validation: out of memory for the path of %s", rel);
        return NULL;
    }
    val_csv *csv = val_csv_load(path, err);
    free(path);
    return csv;
}

/* ---- thresholds ------------------------------------------------------- */

struct val_thresholds {
    cJSON *root;
    const cJSON *groups;
};

val_thresholds *val_thresholds_load(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    cJSON *root = sim_json_parse(text, path, err);
    free(text);
    if (!root)
        return NULL;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "groups");
    if (!cJSON_IsObject(g)) {
        cJSON_Delete(root);
        sim_errf(err, "%s: field \"groups\": expected an object {\"GROUP\": {\"mape\": N, \"worst\": N}}", path);
        return NULL;
    }
    for (const cJSON *e = g->child; e; e = e->next) {
        if (!cJSON_IsObject(e)) {
            sim_errf(err, "%s: groups.\"%s\": expected an object with \"mape\" and/or \"worst\"", path, e->string);
            cJSON_Delete(root);
            return NULL;
        }
        static const char *keys[] = {"mape", "worst", "bias", "cases"};
        for (int k = 0; k < 4; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
            if (v && (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))) {
                sim_errf(err, "%s: groups.\"%s\".%s: expected a non-negative number%s", path, e->string, keys[k],
                         k < 3 ? " of percent" : " of cases");
                cJSON_Delete(root);
                return NULL;
            }
        }
    }
    val_thresholds *t = calloc(1, sizeof *t);
    t->root = root;
    t->groups = g;
    return t;
}

void val_thresholds_free(val_thresholds *t)
{
    if (!t)
        return;
    cJSON_Delete(t->root);
    free(t);
}

static const char *field(const val_thresholds *t, const char *key)
{
    const cJSON *v = t ? cJSON_GetObjectItemCaseSensitive(t->root, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

const char *val_thresholds_set(const val_thresholds *t) { return field(t, "set"); }
const char *val_thresholds_commit(const val_thresholds *t) { return field(t, "commit"); }

int val_thresholds_get(const val_thresholds *t, const char *key, double *mape_max, double *worst_max)
{
    *mape_max = NAN;
    *worst_max = NAN;
    if (!t)
        return 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(t->groups, key);
    if (!e)
        return 0;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "mape");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "worst");
    if (m)
        *mape_max = m->valuedouble;
    if (w)
        *worst_max = w->valuedouble;
    return 1;
}

int val_thresholds_cases(const val_thresholds *t, const char *key)
{
    const cJSON *e = t ? cJSON_GetObjectItemCaseSensitive(t->groups, key) : NULL;
    const cJSON *c = e ? cJSON_GetObjectItemCaseSensitive(e, "cases") : NULL;
    return cJSON_IsNumber(c) ? (int)c->valuedouble : -1;
}

double val_thresholds_bias(const val_thresholds *t, const char *key)
{
    const cJSON *e = t ? cJSON_GetObjectItemCaseSensitive(t->groups, key) : NULL;
    const cJSON *b = e ? cJSON_GetObjectItemCaseSensitive(e, "bias") : NULL;
    return cJSON_IsNumber(b) ? b->valuedouble : NAN;
}
