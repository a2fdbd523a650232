/* fit_cluster.c — a built-in cluster with some of its node fields replaced
 * (fit.h), so that a fit evaluates its trial values on the very file it
 * calibrates: the cluster JSON compiled into the binary, read with cJSON,
 * the named fields set, handed to plat_from_json.  A field is a key of
 * "node" ("nic_efficiency") or, written "switches[].KEY", that key on every
 * switch of the node.  The same paths read the stored value back for the
 * calibration report. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fit.h"
#include "platforms/platform.h"
#include "sim/embedded.h"
#include "sim/json.h"

static cJSON *cluster_json(const char *name, sim_err *err)
{
    char key[256];
    snprintf(key, sizeof key, "platforms/clusters/%s.json", name);
    const char *text = sim_embedded(key);
    if (!text) {
        sim_errf(err, "%s: no built-in cluster of that name", key);
        return NULL;
    }
    cJSON *root = sim_json_parse(text, key, err);
    if (root && !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "node"))) {
        cJSON_Delete(root);
        sim_errf(err, "%s: no node object", key);
        return NULL;
    }
    return root;
}

#define SW_PREFIX "switches[]."

/* The objects a field lives in (node, or each switch), and its key. */
static int field_objs(cJSON *node, const char *field, cJSON **objs, int max, const char **key)
{
    if (strncmp(field, SW_PREFIX, strlen(SW_PREFIX)) != 0) {
        *key = field;
        objs[0] = node;
        return 1;
    }
    *key = field + strlen(SW_PREFIX);
    int n = 0;
    cJSON *sw;
    cJSON_ArrayForEach(sw, cJSON_GetObjectItemCaseSensitive(node, "switches")) if (n < max) objs[n++] = sw;
    return n;
}

sim_machine *val_fit_cluster(const char *name, const char *const *fields, const double *values, int n, sim_err *err)
{
    cJSON *root = cluster_json(name, err);
    if (!root)
        return NULL;
    cJSON *node = cJSON_GetObjectItemCaseSensitive(root, "node");
    for (int i = 0; i < n; i++) {
        cJSON *objs[64];
        const char *key;
        int k = field_objs(node, fields[i], objs, 64, &key);
        for (int j = 0; j < k; j++) {
            cJSON_DeleteItemFromObjectCaseSensitive(objs[j], key);
            cJSON_AddNumberToObject(objs[j], key, values[i]);
        }
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return sim_errf(err, "%s: out of memory", name), NULL;
    sim_machine *m = plat_from_json(text, name, err);
    free(text);
    return m;
}

double val_fit_stored(const char *name, const char *field)
{
    sim_err err;
    cJSON *root = cluster_json(name, &err);
    if (!root)
        return NAN;
    cJSON *objs[64];
    const char *key;
    int k = field_objs(cJSON_GetObjectItemCaseSensitive(root, "node"), field, objs, 64, &key);
    const cJSON *v = k > 0 ? cJSON_GetObjectItemCaseSensitive(objs[0], key) : NULL;
    double out = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(root);
    return out;
}

/* Log-scale logistic: x in R to (lo, hi), so that a trial never leaves the
 * physical range (an unbounded exp can overflow to a value JSON cannot
 * hold); val_fit_unbound is its inverse. */
double val_fit_bound(double x, double lo, double hi)
{
    return exp(log(lo) + (log(hi) - log(lo)) / (1 + exp(-x)));
}

double val_fit_unbound(double v, double lo, double hi)
{
    double f = (log(v) - log(lo)) / (log(hi) - log(lo));
    f = fmin(fmax(f, 1e-6), 1 - 1e-6);
    return log(f / (1 - f));
}

static int only_first_start;

void val_fit_first_start_only(int on) { only_first_start = on; }

int val_fit_starts(val_fit_fn f, void *user, int n, int p, const double *lo, const double *hi, const double *starts,
                   int nstarts, double *v, double *rms, sim_err *err)
{
    if (only_first_start)
        nstarts = 1;
    double x[32], y[32], r;
    *rms = INFINITY;
    if (p > 32)
        return sim_errf(err, "internal: fit of %d parameters", p);
    for (int k = 0; k < nstarts; k++) {
        for (int i = 0; i < p; i++) {
            double s = starts[k * p + i];
            y[i] = val_fit_unbound(isfinite(s) && s > 0 ? s : sqrt(lo[i] * hi[i]), lo[i], hi[i]);
        }
        if (val_fit_lm(f, user, n, p, y, &r, err))
            return -1;
        if (r < *rms - 1e-9) /* ties keep the earlier start */
            *rms = r, memcpy(x, y, (size_t)p * sizeof *x);
    }
    for (int i = 0; i < p; i++)
        v[i] = val_fit_bound(x[i], lo[i], hi[i]);
    return 0;
}
