/* et.c — PyTorch execution-trace reader (see et.h).
 *
 * Layouts relied on (PyTorch's ExecutionTraceObserver, et_replay's and
 * Chakra's readers of it):
 *   1.0.x: {"schema", "pid", "nodes": [{"name", "id", "rf_id", "parent",
 *          "tid", "inputs": [values], "input_shapes", "input_types",
 *          "outputs", "output_shapes", "output_types"}]};
 *   1.1.x-chakra: node {"name", "id", "ctrl_deps" (the parent), "inputs":
 *          {"values", "shapes", "types"}, "outputs": {...}, "attrs": [{"name",
 *          "type", "value"}]} with rf_id, tid and, on record_param_comms,
 *          collective_name, dtype, in_msg_nelems, in_split_size, pg_name,
 *          pg_size, global_rank_start, global_rank_stride; the process groups
 *          in a "## process_group:init ##" node (a JSON string).
 * record_param_comms's values are (tensors, seq, process group, rank,
 * collective name, in splits, out splits, ...) in both: the rank is the
 * value before the first String, the splits the list after it, so one rule
 * reads both. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "et.h"
#include "sim/alloc.h"
#include "sim/json.h"
#include "sim/schedule.h"

#define ET_ID_MAX ((int64_t)1 << 53)

typedef struct et_group {
    char *name;
    int n;
    int *ranks; /* NULL: 0..n-1 */
} et_group;

struct wl_et {
    char schema[48];
    int64_t pid;
    int n;
    wl_et_node *nodes;
    char **kept;
    int nkept, kept_cap;
    double *bytes;  /* every node's arg_bytes, one block */
    int ngroups;
    et_group *groups;
    char **pg_name; /* [n] a comms node's pg_name until groups are known */
    int64_t *sto;   /* every node's reads then writes (storage ids) while reading, one block */
    int *dense;     /* the same as dense indices */
    int nsto, sto_cap, nstorages;
};

typedef struct erd {
    const char *src;
    sim_err *err;
    int node;
    int bad;
} erd;

const char *wl_et_keep(wl_et *et, const char *s)
{
    if (et->nkept == et->kept_cap) {
        et->kept_cap = et->kept_cap ? 2 * et->kept_cap : 256;
        et->kept = sim_xrealloc(et->kept, (size_t)et->kept_cap, sizeof *et->kept, "an execution trace");
    }
    return et->kept[et->nkept++] = sim_xstrdup(s, "an execution trace");
}

static int64_t eint(erd *R, const cJSON *v, const char *key, int64_t dflt, int64_t lo, int64_t hi)
{
    if (!cJSON_IsNumber(v))
        return dflt;
    double x = v->valuedouble;
    if (x == floor(x) && x >= (double)lo && x <= (double)hi)
        return (int64_t)x;
    if (!R->bad)
        sim_errf(R->err, "%s: nodes[%d].%s: %.17g is not an integer in %lld..%lld", R->src, R->node, key, x,
                 (long long)lo, (long long)hi);
    R->bad = 1;
    return dflt;
}

/* Elements of a tensor shape ([] is a 0-dim tensor: 1), -1 if not a shape. */
static double shape_numel(const cJSON *s)
{
    if (!cJSON_IsArray(s))
        return -1;
    double n = 1;
    for (const cJSON *d = s->child; d; d = d->next) {
        if (!cJSON_IsNumber(d) || d->valuedouble < 0)
            return -1;
        n *= d->valuedouble;
    }
    return n;
}

/* Bytes of the tensors of one argument: "Tensor(T)" with its shape, or a
 * "GenericList[Tensor(T),...]" with a list of shapes; 0 for anything else. */
static double arg_bytes(const cJSON *shape, const cJSON *type)
{
    if (!cJSON_IsString(type))
        return 0;
    const char *t = type->valuestring, *p = strstr(t, "Tensor(");
    int eb = p ? wl_kineto_dtype_bytes(p) : 0;
    if (!eb)
        return 0;
    if (!strncmp(t, "Tensor(", 7)) {
        double n = shape_numel(shape);
        return n > 0 ? n * eb : 0;
    }
    double sum = 0;
    for (const cJSON *s = cJSON_IsArray(shape) ? shape->child : NULL; s; s = s->next) {
        double n = shape_numel(s);
        sum += n > 0 ? n * eb : 0;
    }
    return sum;
}

/* The storages of the GPU tensors of a value: [tensor id, storage id,
 * offset, elements, element size, "cuda:N"], or a list of them. */
static int storages(wl_et *et, const cJSON *v, int depth)
{
    int n = 0;
    if (!cJSON_IsArray(v))
        return 0;
    const cJSON *dev = cJSON_GetArrayItem(v, 5), *sid = cJSON_GetArrayItem(v, 1);
    if (cJSON_GetArraySize(v) == 6 && cJSON_IsString(dev) && !strncmp(dev->valuestring, "cuda", 4) &&
        cJSON_IsNumber(sid) && sid->valuedouble >= 0 && sid->valuedouble < (double)ET_ID_MAX) {
        if (et->nsto == et->sto_cap) {
            et->sto_cap = et->sto_cap ? 2 * et->sto_cap : 1024;
            et->sto = sim_xrealloc(et->sto, (size_t)et->sto_cap, sizeof *et->sto, "an execution trace");
        }
        et->sto[et->nsto++] = (int64_t)sid->valuedouble;
        return 1;
    }
    for (const cJSON *x = v->child; x && depth < 2; x = x->next)
        n += storages(et, x, depth + 1);
    return n;
}

static const cJSON *attr(const cJSON *attrs, const char *name)
{
    for (const cJSON *a = cJSON_IsArray(attrs) ? attrs->child : NULL; a; a = a->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(a, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name))
            return cJSON_GetObjectItemCaseSensitive(a, "value");
    }
    return NULL;
}

/* A node's field: top level (1.0.x) or in attrs (1.1.x). */
static const cJSON *field(const cJSON *n, const cJSON *attrs, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, name);
    return v ? v : attr(attrs, name);
}

static char *print_list(const cJSON *a)
{
    return cJSON_IsArray(a) ? cJSON_PrintUnformatted(a) : NULL;
}

/* record_param_comms: collective, sizes, splits, peer, group (module comment). */
static void comms_node(erd *R, wl_et *et, int i, const cJSON *vals, const cJSON *shapes, const cJSON *types,
                       const cJSON *attrs)
{
    wl_et_node *x = &et->nodes[i];
    x->comm = 1;
    int s = 0;
    const cJSON *v = cJSON_IsArray(vals) ? vals->child : NULL, *prev = NULL, *ty = cJSON_IsArray(types) ? types->child : NULL;
    for (; v && !cJSON_IsString(v); prev = v, v = v->next, ty = ty ? ty->next : NULL, s++)
        ;
    if (v)
        snprintf(x->coll, sizeof x->coll, "%s", v->valuestring);
    if (prev && cJSON_IsNumber(prev))
        x->peer = eint(R, prev, "inputs (rank)", -1, -1, SIM_MAX_GPUS - 1);
    const cJSON *sp = v ? v->next : NULL;
    if (cJSON_IsArray(sp) && cJSON_GetArraySize(sp) > 0) {
        char *t = print_list(sp);
        x->in_splits = wl_et_keep(et, t);
        free(t);
    }
    const cJSON *t0 = cJSON_GetArrayItem(types, 0), *s0 = cJSON_GetArrayItem(shapes, 0);
    const char *tn = cJSON_IsString(t0) ? strstr(t0->valuestring, "Tensor(") : NULL;
    x->elem_size = tn ? wl_kineto_dtype_bytes(tn) : 0;
    if (x->elem_size && cJSON_IsString(t0) && !strncmp(t0->valuestring, "Tensor(", 7))
        x->in_nelems = (int64_t)fmax(-1, shape_numel(s0));
    const cJSON *a;
    if ((a = attr(attrs, "collective_name")) && cJSON_IsString(a))
        snprintf(x->coll, sizeof x->coll, "%s", a->valuestring);
    if ((a = attr(attrs, "dtype")) && cJSON_IsString(a) && wl_kineto_dtype_bytes(a->valuestring))
        x->elem_size = wl_kineto_dtype_bytes(a->valuestring);
    x->in_nelems = eint(R, attr(attrs, "in_msg_nelems"), "attrs.in_msg_nelems", x->in_nelems, 0, ET_ID_MAX);
    if ((a = attr(attrs, "in_split_size")) && cJSON_IsString(a))
        x->in_splits = strcmp(a->valuestring, "[]") && a->valuestring[0] ? wl_et_keep(et, a->valuestring) : NULL;
    x->pg_size = eint(R, attr(attrs, "pg_size"), "attrs.pg_size", -1, 0, SIM_MAX_GPUS);
    x->rank_start = eint(R, attr(attrs, "global_rank_start"), "attrs.global_rank_start", -1, 0, SIM_MAX_GPUS);
    x->rank_stride = eint(R, attr(attrs, "global_rank_stride"), "attrs.global_rank_stride", -1, 0, SIM_MAX_GPUS);
    if ((a = attr(attrs, "pg_name")) && cJSON_IsString(a))
        et->pg_name[i] = sim_xstrdup(a->valuestring, "an execution trace");
}

/* "## process_group:init ##": [{"pg_name", "ranks" ([] = all), "group_size"}]. */
static void pg_init(erd *R, wl_et *et, const cJSON *vals)
{
    const cJSON *v = cJSON_GetArrayItem(vals, 0);
    cJSON *l = cJSON_IsString(v) ? cJSON_Parse(v->valuestring) : NULL;
    if (!cJSON_IsArray(l)) {
        cJSON_Delete(l);
        if (!R->bad)
            sim_errf(R->err, "%s: nodes[%d] (## process_group:init ##): expected a JSON list of process groups",
                     R->src, R->node);
        R->bad = 1;
        return;
    }
    for (const cJSON *g = l->child; g && !R->bad; g = g->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(g, "pg_name");
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(g, "ranks");
        int64_t size = eint(R, cJSON_GetObjectItemCaseSensitive(g, "group_size"), "group_size", 0, 0, SIM_MAX_GPUS);
        if (!cJSON_IsString(nm))
            continue;
        et->groups = sim_xrealloc(et->groups, (size_t)et->ngroups + 1, sizeof *et->groups, "the process groups");
        et_group *G = &et->groups[et->ngroups++];
        G->name = sim_xstrdup(nm->valuestring, "the process groups");
        G->ranks = NULL;
        G->n = (int)size;
        int nr = cJSON_IsArray(rk) ? cJSON_GetArraySize(rk) : 0;
        if (nr > 0 && nr <= SIM_MAX_GPUS) {
            G->ranks = sim_xcalloc((size_t)nr, sizeof *G->ranks, "the process groups");
            G->n = nr;
            int j = 0;
            for (const cJSON *r = rk->child; r; r = r->next)
                G->ranks[j++] = (int)eint(R, r, "ranks", -1, -1, SIM_MAX_GPUS - 1);
        }
    }
    cJSON_Delete(l);
}

static void read_node(erd *R, wl_et *et, const cJSON *n, int i, int *off, int *soff, double **bytes, int *nb,
                      int *cap)
{
    wl_et_node *x = &et->nodes[i];
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(n, "name"), *attrs = cJSON_GetObjectItemCaseSensitive(n, "attrs");
    if (!cJSON_IsString(nm) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(n, "id"))) {
        sim_errf(R->err, "%s: nodes[%d]: expected an object with \"name\" and \"id\"", R->src, i);
        R->bad = 1;
        return;
    }
    x->name = wl_et_keep(et, nm->valuestring);
    x->id = eint(R, cJSON_GetObjectItemCaseSensitive(n, "id"), "id", -1, 0, ET_ID_MAX);
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(n, "parent");
    x->parent = eint(R, par ? par : cJSON_GetObjectItemCaseSensitive(n, "ctrl_deps"), "parent", -1, 0, ET_ID_MAX);
    x->rf_id = eint(R, field(n, attrs, "rf_id"), "rf_id", -1, 0, ET_ID_MAX);
    x->tid = eint(R, field(n, attrs, "tid"), "tid", 0, -ET_ID_MAX, ET_ID_MAX);
    x->peer = x->in_nelems = x->pg_size = x->rank_start = x->rank_stride = -1;
    x->pg = -1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(n, "inputs"), *out = cJSON_GetObjectItemCaseSensitive(n, "outputs");
    const cJSON *vals = in, *shapes = cJSON_GetObjectItemCaseSensitive(n, "input_shapes"),
                *types = cJSON_GetObjectItemCaseSensitive(n, "input_types");
    const cJSON *oshapes = cJSON_GetObjectItemCaseSensitive(n, "output_shapes"),
                *otypes = cJSON_GetObjectItemCaseSensitive(n, "output_types");
    if (cJSON_IsObject(in)) { /* 1.1.x */
        vals = cJSON_GetObjectItemCaseSensitive(in, "values");
        shapes = cJSON_GetObjectItemCaseSensitive(in, "shapes");
        types = cJSON_GetObjectItemCaseSensitive(in, "types");
    }
    const cJSON *ovals = out;
    if (cJSON_IsObject(out)) {
        ovals = cJSON_GetObjectItemCaseSensitive(out, "values");
        oshapes = cJSON_GetObjectItemCaseSensitive(out, "shapes");
        otypes = cJSON_GetObjectItemCaseSensitive(out, "types");
    }
    *soff = et->nsto;
    x->nreads = storages(et, vals, 0);
    x->nwrites = storages(et, ovals, 0);
    char *d = print_list(shapes), *t = print_list(types);
    x->in_dims = d ? wl_et_keep(et, d) : NULL;
    x->in_types = t ? wl_et_keep(et, t) : NULL;
    free(d);
    free(t);
    x->nargs = cJSON_IsArray(shapes) ? cJSON_GetArraySize(shapes) : 0;
    if (*nb + x->nargs > *cap) {
        *cap = 2 * (*cap + x->nargs);
        *bytes = sim_xrealloc(*bytes, (size_t)*cap, sizeof **bytes, "an execution trace");
    }
    *off = *nb; /* arg_bytes is set once the block stops moving */
    for (int a = 0; a < x->nargs; a++)
        (*bytes)[(*nb)++] = arg_bytes(cJSON_GetArrayItem(shapes, a), cJSON_GetArrayItem(types, a));
    x->out_bytes = 0;
    for (int a = 0; cJSON_IsArray(oshapes) && a < cJSON_GetArraySize(oshapes); a++)
        x->out_bytes += arg_bytes(cJSON_GetArrayItem(oshapes, a), cJSON_GetArrayItem(otypes, a));
    if (!strcmp(x->name, "record_param_comms"))
        comms_node(R, et, i, vals, shapes, types, attrs);
    else if (!strcmp(x->name, "## process_group:init ##"))
        pg_init(R, et, vals);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Storage ids as dense indices (the join keeps an array per storage), and
 * each node's reads and writes pointed at them. */
static void dense_storages(wl_et *et, const int *soff)
{
    int64_t *u = sim_xcalloc((size_t)et->nsto + 1, sizeof *u, "an execution trace");
    if (et->nsto > 0) /* et->sto is NULL in a trace without tensors */
        memcpy(u, et->sto, (size_t)et->nsto * sizeof *u);
    if (et->nsto > 1)
        qsort(u, (size_t)et->nsto, sizeof *u, cmp_i64);
    int nu = 0;
    for (int i = 0; i < et->nsto; i++)
        if (!nu || u[nu - 1] != u[i])
            u[nu++] = u[i];
    int *d = sim_xcalloc((size_t)et->nsto + 1, sizeof *d, "an execution trace");
    for (int i = 0; i < et->nsto; i++)
        d[i] = (int)((int64_t *)bsearch(&et->sto[i], u, (size_t)nu, sizeof *u, cmp_i64) - u);
    free(u);
    free(et->sto);
    et->sto = NULL;
    et->nstorages = nu;
    et->dense = d;
    for (int i = 0; i < et->n; i++) {
        et->nodes[i].reads = d + soff[i];
        et->nodes[i].writes = d + soff[i] + et->nodes[i].nreads;
    }
}

static int cmp_node(const void *a, const void *b)
{
    const wl_et_node *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

wl_et *wl_et_parse(const char *text, const char *source, sim_err *err)
{
    cJSON *root = sim_json_parse(text, source, err);
    if (!root)
        return NULL;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    if (!cJSON_IsArray(nodes)) {
        cJSON_Delete(root);
        sim_errf(err, "%s: no \"nodes\" array: expected a PyTorch execution trace (ExecutionTraceObserver JSON)",
                 source);
        return NULL;
    }
    wl_et *et = sim_xcalloc(1, sizeof *et, "an execution trace");
    erd R = {source, err, 0, 0};
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "schema");
    snprintf(et->schema, sizeof et->schema, "%s", cJSON_IsString(sc) ? sc->valuestring : "");
    et->pid = eint(&R, cJSON_GetObjectItemCaseSensitive(root, "pid"), "pid", -1, 0, ET_ID_MAX);
    et->n = cJSON_GetArraySize(nodes);
    et->nodes = sim_xcalloc((size_t)et->n + 1, sizeof *et->nodes, "an execution trace");
    et->pg_name = sim_xcalloc((size_t)et->n + 1, sizeof *et->pg_name, "an execution trace");
    int nb = 0, cap = 1, i = 0;
    et->bytes = sim_xcalloc(1, sizeof *et->bytes, "an execution trace"); /* never NULL: nodes point into it */
    int *off = sim_xcalloc((size_t)et->n + 1, sizeof *off, "an execution trace");
    int *soff = sim_xcalloc((size_t)et->n + 1, sizeof *soff, "an execution trace");
    for (const cJSON *n = nodes->child; n && !R.bad; n = n->next, i++) {
        R.node = i;
        read_node(&R, et, n, i, &off[i], &soff[i], &et->bytes, &nb, &cap);
    }
    dense_storages(et, soff);
    cJSON_Delete(root);
    for (i = 0; i < et->n && !R.bad; i++) {
        et->nodes[i].arg_bytes = et->bytes + off[i];
        for (int g = 0; et->pg_name[i] && g < et->ngroups; g++)
            if (!strcmp(et->groups[g].name, et->pg_name[i]))
                et->nodes[i].pg = g;
    }
    for (i = 0; i < et->n; i++)
        free(et->pg_name[i]);
    free(et->pg_name);
    free(off);
    free(soff);
    et->pg_name = NULL;
    if (R.bad) {
        wl_et_free(et);
        return NULL;
    }
    if (et->n > 1)
        qsort(et->nodes, (size_t)et->n, sizeof *et->nodes, cmp_node);
    for (i = 1; i < et->n; i++)
        if (et->nodes[i].id == et->nodes[i - 1].id) {
            sim_errf(err, "%s: node id %lld given twice", source, (long long)et->nodes[i].id);
            wl_et_free(et);
            return NULL;
        }
    return et;
}

wl_et *wl_et_load(const char *path, sim_err *err)
{
    char *text = wl_kineto_read_text(path, err);
    if (!text)
        return NULL;
    wl_et *et = wl_et_parse(text, path, err);
    free(text);
    return et;
}

void wl_et_free(wl_et *et)
{
    if (!et)
        return;
    for (int i = 0; i < et->nkept; i++)
        free(et->kept[i]);
    for (int g = 0; g < et->ngroups; g++) {
        free(et->groups[g].name);
        free(et->groups[g].ranks);
    }
    for (int i = 0; et->pg_name && i < et->n; i++)
        free(et->pg_name[i]);
    free(et->pg_name);
    free(et->groups);
    free(et->kept);
    free(et->bytes);
    free(et->sto);
    free(et->dense);
    free(et->nodes);
    free(et);
}

const char *wl_et_schema(const wl_et *et) { return et->schema; }
int64_t wl_et_pid(const wl_et *et) { return et->pid; }
int wl_et_nnodes(const wl_et *et) { return et->n; }
int wl_et_nstorages(const wl_et *et) { return et->nstorages; }
const wl_et_node *wl_et_node_at(const wl_et *et, int i) { return i >= 0 && i < et->n ? &et->nodes[i] : NULL; }

const wl_et_node *wl_et_find(const wl_et *et, int64_t id)
{
    wl_et_node key = {.id = id};
    return et->n ? bsearch(&key, et->nodes, (size_t)et->n, sizeof *et->nodes, cmp_node) : NULL;
}

int wl_et_group_ranks(const wl_et *et, const wl_et_node *n, int *ranks, int max)
{
    if (n->pg >= 0) {
        const et_group *G = &et->groups[n->pg];
        if (G->n <= 0 || G->n > max)
            return G->n <= 0 ? 0 : -1;
        for (int i = 0; i < G->n; i++) {
            ranks[i] = G->ranks ? G->ranks[i] : i;
            if (ranks[i] < 0 || ranks[i] >= max)
                return -1;
        }
        return G->n;
    }
    if (n->rank_start < 0 || n->rank_stride <= 0 || n->pg_size <= 0)
        return 0;
    if (n->pg_size > max)
        return -1;
    for (int i = 0; i < n->pg_size; i++) {
        int64_t r = n->rank_start + i * n->rank_stride;
        if (r >= max)
            return -1;
        ranks[i] = (int)r;
    }
    return (int)n->pg_size;
}
