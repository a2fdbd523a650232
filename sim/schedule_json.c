/* schedule_json.c — the schedule as JSON (format "trainsim-schedule", v1).
 *
 *   { "format": "trainsim-schedule", "version": 1,
 *     "meta": { "name", "samples_per_iteration", "tokens_per_iteration",
 *               "model_flops_per_iteration", "dtype" },
 *     "nranks": N,
 *     "layout": { "tp":, "cp":, "dp":, "pp":, "ep": },            (optional: sim_layout)
 *     "communicators": [ { "name": "tp0", "ranks": [0,1,2,3],
 *                          ["whole": { "ranks": 64, "nodes": 16 }] }, ... ],   (id = position)
 *     "ranks": [ { "rank": 0, "streams": [ { "name": "compute", ["role": "compute",] "ops": [ OP, ... ] } ] } ] }
 *
 *   role = "compute" | "tp" | "cp" | "dp" | "pp" | "ep" (sim_role; absent = none);
 *   "whole": the ring a communicator cut from a larger one stands for (sim_comm).
 *
 *   OP = { "id": 7, "op": "compute", "kernel": "gemm", "name": "qkv",
 *          "m":, "n":, "k":, "batch":, "dtype": "tf32",            (gemm)
 *          "batch":, "heads":, "seq":, "head_dim":, "dtype":       (attention)
 *          "bytes":, ["class_bytes": {"cast_up":, "norm":, "reduce":, "strided":},] "dtype":   (elementwise:
 *                 the part of bytes at each class's rate, sim_mem_class; absent = all streaming)
 *          "params":, "bytes":                                     (optimizer)
 *          "seconds":                                              (fixed, delay: the stream waits, GPU free)
 *          "batch":, "heads":, "seq":, "head_dim":, "causal":, ["impl":], "bytes":, "dtype":   (flash_fwd, flash_bwd)
 *        | { "op": "collective", "collective": "allreduce", "comm": 0, "bytes":, ["root":], ["algo":] }
 *        | { "op": "collective", "collective": "alltoallv", "comm": 0, "send_bytes": [b0, b1, ...] }
 *          (one count per communicator member; "bytes" is their sum and is not written)
 *        | { "op": "send" | "recv", "peer": 3, "bytes":, ["tag":] }
 *        | { "op": "memory", "memory": "activations", "bytes": +/-N }
 *        plus optional "layer", "micro", "sub", "phase", "deps": [ids].
 *
 * Ids are any distinct integers on input; on output they are renumbered in
 * (rank, stream, position) order, so write(read(write(S))) == write(S). */
#include "schedule.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fileio.h"
#include "json.h"
#include "outfile.h"

/* ---- writing ---------------------------------------------------------- */

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, cJSON_CreateNumber(v)); }

/* sim_layout's degrees as JSON keys */
static const char *const layout_keys[] = {"tp", "cp", "dp", "pp", "ep", NULL};
static const size_t layout_off[] = {offsetof(sim_layout, tp), offsetof(sim_layout, cp), offsetof(sim_layout, dp),
                                    offsetof(sim_layout, pp), offsetof(sim_layout, ep)};
#define LAYOUT_DEG(l, k) (*(int *)((char *)(l) + layout_off[k]))

static uint32_t *stream_order(const sim_schedule *s)
{
    /* streams sorted by rank, keeping creation order within a rank */
    uint32_t *order = sim_xcalloc((size_t)s->nstreams + 1, sizeof *order, "the schedule's stream order");
    int *count = sim_xcalloc((size_t)s->nranks + 1, sizeof *count, "the schedule's stream order");
    for (uint32_t i = 0; i < s->nstreams; i++)
        count[s->streams[i].rank + 1]++;
    for (int r = 0; r < s->nranks; r++)
        count[r + 1] += count[r];
    for (uint32_t i = 0; i < s->nstreams; i++)
        order[count[s->streams[i].rank]++] = i;
    free(count);
    return order;
}

static cJSON *op_to_json(const sim_schedule *s, uint32_t op, const uint32_t *newid)
{
    const sim_op *o = &s->ops[op];
    const sim_payload *p = &s->payloads[o->payload];
    cJSON *j = cJSON_CreateObject();
    add_num(j, "id", newid[op]);
    cJSON_AddStringToObject(j, "op", sim_op_kind_name(p->kind));
    switch (p->kind) {
    case SIM_OP_COMPUTE:
        cJSON_AddStringToObject(j, "kernel", sim_kernel_name(p->sub));
        break;
    case SIM_OP_COLLECTIVE:
        cJSON_AddStringToObject(j, "collective", sim_coll_name(p->sub));
        break;
    case SIM_OP_MEMORY:
        cJSON_AddStringToObject(j, "memory", sim_mem_kind_name(p->sub));
        break;
    default:
        break;
    }
    if (p->name >= 0)
        cJSON_AddStringToObject(j, "name", sim_sched_strname(s, p->name));
    switch (p->kind) {
    case SIM_OP_COMPUTE:
        switch (p->sub) {
        case SIM_KERNEL_GEMM:
            add_num(j, "m", (double)p->m);
            add_num(j, "n", (double)p->n);
            add_num(j, "k", (double)p->k);
            if (p->batch > 1)
                add_num(j, "batch", (double)p->batch);
            break;
        case SIM_KERNEL_ATTENTION:
        case SIM_KERNEL_ATTENTION_BWD:
            add_num(j, "batch", (double)p->batch);
            add_num(j, "heads", (double)p->m);
            add_num(j, "seq", (double)p->n);
            add_num(j, "head_dim", (double)p->k);
            break;
        case SIM_KERNEL_ELEMENTWISE: {
            add_num(j, "bytes", (double)p->bytes);
            cJSON *cb = NULL;
            for (int c = 1; c < SIM_MEMC_COUNT; c++)
                if (p->class_bytes[c - 1]) {
                    if (!cb)
                        cb = cJSON_AddObjectToObject(j, "class_bytes");
                    add_num(cb, sim_mem_class_name(c), (double)p->class_bytes[c - 1]);
                }
            break;
        }
        case SIM_KERNEL_OPTIMIZER:
            add_num(j, "params", (double)p->m);
            add_num(j, "bytes", (double)p->bytes);
            break;
        case SIM_KERNEL_FIXED:
        case SIM_KERNEL_DELAY:
            add_num(j, "seconds", p->seconds);
            break;
        case SIM_KERNEL_FLASH_FWD:
        case SIM_KERNEL_FLASH_BWD:
            add_num(j, "batch", (double)p->batch);
            add_num(j, "heads", (double)p->m);
            add_num(j, "seq", (double)p->n);
            add_num(j, "head_dim", (double)p->k);
            cJSON_AddBoolToObject(j, "causal", p->tag == 1);
            if (p->algo != SIM_ATTN_BEST)
                cJSON_AddStringToObject(j, "impl", sim_attn_impl_name(p->algo));
            add_num(j, "bytes", (double)p->bytes);
            break;
        }
        if (p->sub != SIM_KERNEL_FIXED && p->sub != SIM_KERNEL_DELAY)
            cJSON_AddStringToObject(j, "dtype", sim_dtype_name(p->dtype));
        break;
    case SIM_OP_COLLECTIVE:
        add_num(j, "comm", o->arg);
        if (p->sub == SIM_COLL_ALLTOALLV) {
            cJSON *v = cJSON_AddArrayToObject(j, "send_bytes");
            for (int64_t q = 0; q < p->n; q++)
                cJSON_AddItemToArray(v, cJSON_CreateNumber((double)s->sizes[p->m + q]));
            break;
        }
        add_num(j, "bytes", (double)p->bytes);
        if (p->sub == SIM_COLL_BROADCAST || p->sub == SIM_COLL_REDUCE)
            add_num(j, "root", p->root);
        if (p->algo != SIM_ALGO_AUTO)
            cJSON_AddStringToObject(j, "algo", sim_algo_name(p->algo));
        break;
    case SIM_OP_SEND:
    case SIM_OP_RECV:
        add_num(j, "peer", o->arg);
        add_num(j, "bytes", (double)p->bytes);
        if (p->tag)
            add_num(j, "tag", p->tag);
        break;
    case SIM_OP_MEMORY:
        add_num(j, "bytes", (double)p->bytes);
        break;
    }
    if (o->layer >= 0)
        add_num(j, "layer", o->layer);
    if (o->micro >= 0)
        add_num(j, "micro", o->micro);
    if (o->subbatch >= 0)
        add_num(j, "sub", o->subbatch);
    if (o->phase != SIM_PHASE_NONE)
        cJSON_AddStringToObject(j, "phase", sim_phase_name(o->phase));
    if (o->ndeps) {
        cJSON *d = cJSON_AddArrayToObject(j, "deps");
        for (uint32_t k = 0; k < o->ndeps; k++)
            cJSON_AddItemToArray(d, cJSON_CreateNumber(newid[s->deps[o->dep_first + k]]));
    }
    return j;
}

char *sim_sched_to_json(const sim_schedule *s, int pretty)
{
    uint32_t *order = stream_order(s);
    uint32_t *newid = sim_xcalloc((size_t)s->nops + 1, sizeof *newid, "the schedule's operation ids");
    uint32_t next = 0;
    for (uint32_t i = 0; i < s->nstreams; i++) {
        const sim_stream *st = &s->streams[order[i]];
        for (uint32_t k = 0; k < st->nops; k++)
            newid[st->ops[k]] = next++;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "trainsim-schedule");
    add_num(root, "version", 1);
    cJSON *meta = cJSON_AddObjectToObject(root, "meta");
    cJSON_AddStringToObject(meta, "name", s->meta.name);
    add_num(meta, "samples_per_iteration", s->meta.samples_per_iteration);
    add_num(meta, "tokens_per_iteration", s->meta.tokens_per_iteration);
    add_num(meta, "model_flops_per_iteration", s->meta.model_flops_per_iteration);
    cJSON_AddStringToObject(meta, "dtype", sim_dtype_name(s->meta.dtype));
    add_num(root, "nranks", s->nranks);
    if (s->layout.tp > 0) {
        cJSON *lay = cJSON_AddObjectToObject(root, "layout");
        for (int k = 0; layout_keys[k]; k++)
            add_num(lay, layout_keys[k], LAYOUT_DEG(&s->layout, k));
    }
    cJSON *comms = cJSON_AddArrayToObject(root, "communicators");
    for (int c = 0; c < s->ncomms; c++) {
        cJSON *cj = cJSON_CreateObject();
        if (s->comms[c].name >= 0)
            cJSON_AddStringToObject(cj, "name", sim_sched_strname(s, s->comms[c].name));
        cJSON_AddItemToObject(cj, "ranks", cJSON_CreateIntArray(s->comms[c].ranks, s->comms[c].nranks));
        if (s->comms[c].whole_ranks > 0) {
            cJSON *w = cJSON_AddObjectToObject(cj, "whole");
            add_num(w, "ranks", s->comms[c].whole_ranks);
            add_num(w, "nodes", s->comms[c].whole_nodes);
        }
        cJSON_AddItemToArray(comms, cj);
    }
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    cJSON *rank_obj = NULL, *streams = NULL;
    int cur = -1;
    for (uint32_t i = 0; i < s->nstreams; i++) {
        const sim_stream *st = &s->streams[order[i]];
        if (st->rank != cur) {
            cur = st->rank;
            rank_obj = cJSON_CreateObject();
            add_num(rank_obj, "rank", cur);
            streams = cJSON_AddArrayToObject(rank_obj, "streams");
            cJSON_AddItemToArray(ranks, rank_obj);
        }
        cJSON *sj = cJSON_CreateObject();
        cJSON_AddStringToObject(sj, "name", sim_sched_strname(s, st->name));
        if (st->role != SIM_ROLE_NONE)
            cJSON_AddStringToObject(sj, "role", sim_role_name(st->role));
        cJSON *ops = cJSON_AddArrayToObject(sj, "ops");
        for (uint32_t k = 0; k < st->nops; k++)
            cJSON_AddItemToArray(ops, op_to_json(s, st->ops[k], newid));
        cJSON_AddItemToArray(streams, sj);
    }
    char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(order);
    free(newid);
    return text;
}

int sim_sched_save(const sim_schedule *s, const char *path, sim_err *err)
{
    char *text = sim_sched_to_json(s, 1);
    if (!text)
        return sim_errf(err, "%s: out of memory writing the schedule", path);
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON's buffer ends in a NUL we may overwrite */
    int rc = sim_out_write(path, text, n + 1, err);
    free(text);
    return rc;
}

/* ---- reading ----------------------------------------------------------
 *
 * The document is not parsed whole: a cJSON tree takes ~1.5 KB per
 * operation (1.1 GB for the default scenario's 628 k operations), so the
 * skeleton (top-level object, ranks, streams) is walked by a small scanner
 * and each operation is parsed on its own and dropped once read.  Memory is
 * then the text plus the schedule.  Every value that is parsed goes through
 * sim_json_parse_slice (duplicate keys, numbers out of range), and the
 * skeleton refuses duplicate and unknown keys and trailing text itself.
 * Dependencies name ids that may come later in the file, so they are kept
 * as read and resolved once every id is known. */

typedef struct reader {
    const char *src;  /* file name */
    const char *text; /* the whole document */
    sim_err *err;
    char path[256];
    int64_t *raw;     /* per s->deps entry: the id as written */
    size_t raw_cap;
    uint16_t *sfile;  /* per stream: its file indices (rank, stream), for messages */
    uint32_t sfile_cap;
} reader;

typedef struct cursor {
    const char *p, *end;
} cursor;

static int at_error(reader *R, const char *at, const char *expected)
{
    int line, col;
    sim_json_line_col(R->text, at, &line, &col);
    if (*at)
        return sim_errf(R->err, "%s:%d:%d: malformed JSON: expected %s near \"%.20s\"", R->src, line, col, expected,
                        at);
    return sim_errf(R->err, "%s:%d:%d: malformed JSON: the text ends where %s was expected", R->src, line, col,
                    expected);
}

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int skip_string(reader *R, cursor *c)
{
    const char *start = c->p, *p = c->p + 1;
    for (;;) {
        p = memchr(p, '"', (size_t)(c->end - p));
        if (!p)
            return at_error(R, start, "a closed string");
        const char *q = p; /* the quote ends the string unless an odd number of backslashes precede it */
        while (q > start + 1 && q[-1] == '\\')
            q--;
        if ((p - q) % 2 == 0)
            break;
        p++;
    }
    c->p = p + 1;
    return 0;
}

/* Moves past one value (its syntax inside is checked when it is parsed).
 * Inside a container only quotes and brackets matter. */
static int skip_value(reader *R, cursor *c)
{
    static unsigned char special[256];
    if (!special['"'])
        special['"'] = special['{'] = special['['] = special['}'] = special[']'] = 1;
    char close[CJSON_NESTING_LIMIT];
    int d = 0;
    skip_ws(c);
    if (c->p >= c->end || strchr(",:]}", *c->p))
        return at_error(R, c->p, "a value");
    if (!special[(unsigned char)*c->p]) { /* a scalar */
        while (c->p < c->end && !strchr(",:]} \t\r\n", *c->p))
            c->p++;
        return 0;
    }
    do {
        while (c->p < c->end && !special[(unsigned char)*c->p])
            c->p++;
        if (c->p >= c->end)
            return at_error(R, c->p, "a closing bracket");
        char ch = *c->p;
        if (ch == '"') {
            if (skip_string(R, c) < 0)
                return -1;
        } else if (ch == '{' || ch == '[') {
            if (d == CJSON_NESTING_LIMIT)
                return sim_errf(R->err, "%s: JSON nested deeper than %d levels", R->src, CJSON_NESTING_LIMIT);
            close[d++] = ch == '{' ? '}' : ']';
            c->p++;
        } else {
            if (d == 0 || close[d - 1] != ch)
                return at_error(R, c->p, "a matching bracket");
            d--;
            c->p++;
        }
    } while (d > 0);
    return 0;
}

/* Opens an object or array at c (after whitespace); open is '{' or '['. */
static int open_container(reader *R, cursor *c, char open, const char *what)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != open)
        return at_error(R, c->p, what);
    c->p++;
    return 0;
}

/* The next element of an open container: 1 with c at its value (after the
 * key and colon for an object; key gets it, decoded), 0 at the closing
 * bracket (consumed).  *n counts the elements seen. */
static int next_element(reader *R, cursor *c, int *n, char *key, size_t keycap)
{
    int obj = key != NULL;
    skip_ws(c);
    if (c->p < c->end && *c->p == (obj ? '}' : ']')) {
        c->p++;
        return 0;
    }
    if (*n > 0) {
        if (c->p >= c->end || *c->p != ',')
            return at_error(R, c->p, obj ? "',' or '}'" : "',' or ']'");
        c->p++;
        skip_ws(c);
    }
    (*n)++;
    if (!obj)
        return 1;
    const char *k = c->p;
    if (c->p >= c->end || *c->p != '"')
        return at_error(R, c->p, "a key string");
    if (skip_string(R, c) < 0)
        return -1;
    size_t klen = (size_t)(c->p - k) - 2;
    if (memchr(k + 1, '\\', klen)) { /* escapes: let cJSON decode the key */
        cJSON *dk = cJSON_ParseWithLength(k, klen + 2);
        snprintf(key, keycap, "%s", cJSON_IsString(dk) ? dk->valuestring : "?");
        cJSON_Delete(dk);
    } else {
        snprintf(key, keycap, "%.*s", (int)(klen < keycap ? klen : keycap - 1), k + 1);
        if (klen >= keycap)
            key[0] = '?'; /* too long to be a key of the format */
    }
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return at_error(R, c->p, "':' after the key");
    c->p++;
    skip_ws(c);
    return 1;
}

/* Parses the value at c (moving past it) with the shared checks. */
static cJSON *parse_here(reader *R, cursor *c, const char *path)
{
    const char *v = c->p;
    if (skip_value(R, c) < 0)
        return NULL;
    return sim_json_parse_slice(R->text, (size_t)(v - R->text), (size_t)(c->p - v), R->src, path, R->err);
}

static int one_of(const char *key, const char *const *known)
{
    for (int i = 0; known[i]; i++)
        if (!strcmp(key, known[i]))
            return i;
    return -1;
}

static int unknown_key(reader *R, const char *path, const char *key, const char *const *known)
{
    char list[512] = "";
    for (int i = 0; known[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", known[i]);
    return sim_errf(R->err, "%s: %s%s%s: unknown field; known: %s", R->src, path, *path ? "." : "", key, list);
}

static int twice(reader *R, const char *path, const char *key)
{
    return sim_errf(R->err, "%s: %s%s%s: the key is given twice (each key may appear once per object)", R->src, path,
                    *path ? "." : "", key);
}

/* Integer field in [min, max]; absent: 1 (an error when required). */
static int get_int(reader *R, const cJSON *obj, const char *key, int64_t *out, int required, int64_t min, int64_t max)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return sim_errf(R->err, "%s: %s: missing field \"%s\"", R->src, R->path, key);
        return 1;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9.007199254740992e15) {
        char *t = cJSON_PrintUnformatted(v);
        sim_errf(R->err, "%s: %s.%s: expected an integer, got %s", R->src, R->path, key, t ? t : "?");
        free(t);
        return -1;
    }
    if (v->valuedouble < (double)min || v->valuedouble > (double)max)
        return sim_errf(R->err, "%s: %s.%s: expected an integer in %lld..%lld, got %.17g", R->src, R->path, key,
                        (long long)min, (long long)max, v->valuedouble);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int get_enum(reader *R, const cJSON *obj, const char *key, const char *(*name)(int), int count, int *out,
                    int required)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return sim_errf(R->err, "%s: %s: missing field \"%s\"", R->src, R->path, key);
        return 1;
    }
    if (cJSON_IsString(v))
        for (int i = 0; i < count; i++)
            if (strcmp(v->valuestring, name(i)) == 0) {
                *out = i;
                return 0;
            }
    char known[512] = "";
    for (int i = 0; i < count; i++) {
        strncat(known, name(i), sizeof known - strlen(known) - 1);
        if (i + 1 < count)
            strncat(known, ", ", sizeof known - strlen(known) - 1);
    }
    char *t = cJSON_PrintUnformatted(v);
    sim_errf(R->err, "%s: %s.%s: expected one of %s; got %.200s", R->src, R->path, key, known, t ? t : "?");
    free(t);
    return -1;
}

/* A name: a string of at most SIM_NAME_MAX bytes. */
static int get_name(reader *R, const cJSON *v, const char *what, const char **out)
{
    if (!cJSON_IsString(v))
        return sim_errf(R->err, "%s: %s: expected a string", R->src, what);
    size_t n = strlen(v->valuestring);
    if (n > SIM_NAME_MAX)
        return sim_errf(R->err, "%s: %s: a name of %zu bytes; names have at most %d", R->src, what, n, SIM_NAME_MAX);
    *out = v->valuestring;
    return 0;
}

static const char *dtype_name_int(int d) { return sim_dtype_name((sim_dtype)d); }

typedef struct idmap {
    int64_t id;
    uint32_t index;
} idmap;

static int cmp_idmap(const void *a, const void *b)
{
    const idmap *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int lookup_id(const idmap *m, size_t n, int64_t id, uint32_t *out)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && m[lo].id == id) {
        *out = m[lo].index;
        return 0;
    }
    return -1;
}

#define TRY(x)                                                                                                    \
    do {                                                                                                          \
        if ((x) < 0)                                                                                              \
            goto fail;                                                                                            \
    } while (0)

#define MAX_ID 9.007199254740992e15 /* 2^53: integers a double holds exactly */

/* The op's dependencies as written (resolved by resolve_deps). */
static int read_deps(reader *R, sim_schedule *s, uint32_t op, const cJSON *j)
{
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(j, "deps");
    if (!deps)
        return 0;
    if (!cJSON_IsArray(deps))
        return sim_errf(R->err, "%s: %s.deps: expected an array of op ids", R->src, R->path);
    int n = cJSON_GetArraySize(deps);
    if (n > SIM_MAX_DEPS)
        return sim_errf(R->err, "%s: %s.deps: %d dependencies; an operation has at most %d", R->src, R->path, n,
                        SIM_MAX_DEPS);
    if ((uint64_t)s->ndeps + (uint64_t)n > SIM_MAX_OPS)
        return sim_errf(R->err, "%s: %s.deps: more than %u dependencies in all", R->src, R->path, SIM_MAX_OPS);
    int k = 0;
    for (const cJSON *d = deps->child; d; d = d->next, k++) {
        if (!cJSON_IsNumber(d) || d->valuedouble != floor(d->valuedouble) || fabs(d->valuedouble) > MAX_ID) {
            char *txt = cJSON_PrintUnformatted(d);
            sim_errf(R->err, "%s: %s.deps[%d]: expected an op id (an integer), got %.100s", R->src, R->path, k,
                     txt ? txt : "?");
            free(txt);
            return -1;
        }
        if (s->ndeps == R->raw_cap) {
            R->raw_cap = R->raw_cap ? 2 * R->raw_cap : 1024;
            R->raw = sim_xrealloc(R->raw, R->raw_cap, sizeof *R->raw, "the schedule's dependencies");
        }
        R->raw[s->ndeps] = (int64_t)d->valuedouble;
        sim_sched_add_dep(s, op, 0);
    }
    return 0;
}

/* Every dependency's id to its operation, once all ids are known. */
static int resolve_deps(reader *R, sim_schedule *s, idmap *ids, size_t nids)
{
    if (nids > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(ids, nids, sizeof *ids, cmp_idmap);
    for (size_t i = 1; i < nids; i++)
        if (ids[i].id == ids[i - 1].id)
            return sim_errf(R->err, "%s: op id %lld is used twice", R->src, (long long)ids[i].id);
    for (uint32_t i = 0; i < s->ndeps; i++)
        if (lookup_id(ids, nids, R->raw[i], &s->deps[i]) < 0) {
            uint32_t op = 0;
            while (op + 1 < s->nops && s->ops[op + 1].dep_first <= i)
                op++;
            const sim_op *o = &s->ops[op];
            return sim_errf(R->err, "%s: ranks[%u].streams[%u].ops[%u].deps[%u]: no op has id %lld", R->src,
                            R->sfile[2 * o->stream], R->sfile[2 * o->stream + 1], o->seq, i - o->dep_first,
                            (long long)R->raw[i]);
        }
    return 0;
}

/* The keys an operation may have, sorted (bsearch: millions of lookups). */
static const char *const op_keys[] = {
    "algo",   "batch", "bytes", "causal", "class_bytes", "collective", "comm",   "deps",  "dtype", "head_dim", "heads",
    "id",     "impl",  "k",     "kernel", "layer",       "m",          "memory", "micro", "n",     "name",     "op",
    "params", "peer",  "phase", "root",   "seconds",     "send_bytes", "seq",    "sub",   "tag",   NULL};

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int is_op_key(const char *key)
{
    return bsearch(&key, op_keys, sizeof op_keys / sizeof op_keys[0] - 1, sizeof op_keys[0], cmp_str) != NULL;
}

/* An element-wise op's optional "class_bytes": {"cast_up": N, ...}, the part
 * of its bytes at each class's rate (sim_payload.class_bytes); absent: all
 * streaming (the files written before classes existed). */
static int read_class_bytes(reader *R, const cJSON *j, sim_payload *p)
{
    const cJSON *cb = cJSON_GetObjectItemCaseSensitive(j, "class_bytes");
    if (!cb)
        return 0;
    if (!cJSON_IsObject(cb))
        return sim_errf(R->err,
                        "%s: %s.class_bytes: expected an object of byte counts by class (cast_up, norm, "
                        "reduce, strided)",
                        R->src, R->path);
    int64_t sum = 0;
    for (const cJSON *c = cb->child; c; c = c->next) {
        int k = sim_mem_class_parse(c->string);
        if (k <= SIM_MEMC_STREAM)
            return sim_errf(R->err, "%s: %s.class_bytes.%s: unknown class; known: cast_up, norm, reduce, strided",
                            R->src, R->path, c->string);
        if (!cJSON_IsNumber(c) || c->valuedouble != floor(c->valuedouble) || !(c->valuedouble >= 0) ||
            c->valuedouble > (double)p->bytes)
            return sim_errf(R->err, "%s: %s.class_bytes.%s: expected a byte count in 0..%lld (the op's bytes)", R->src,
                            R->path, c->string, (long long)p->bytes);
        p->class_bytes[k - 1] = (int64_t)c->valuedouble;
        sum += p->class_bytes[k - 1];
    }
    if (sum > p->bytes)
        return sim_errf(R->err, "%s: %s.class_bytes: the classes' bytes add up to %lld, more than the op's %lld",
                        R->src, R->path, (long long)sum, (long long)p->bytes);
    return 0;
}

static int read_compute(reader *R, const cJSON *j, sim_payload *p, int *sub)
{
    int dt = SIM_DTYPE_FP32;
    if (get_enum(R, j, "kernel", sim_kernel_name, SIM_KERNEL_COUNT, sub, 1) < 0)
        return -1;
    if (*sub != SIM_KERNEL_FIXED && *sub != SIM_KERNEL_DELAY && get_enum(R, j, "dtype", dtype_name_int, SIM_DTYPE_COUNT, &dt, 0) < 0)
        return -1;
    p->dtype = (uint8_t)dt;
    if (*sub == SIM_KERNEL_GEMM) {
        p->batch = 1;
        if (get_int(R, j, "m", &p->m, 1, 1, SIM_MAX_DIM) < 0 || get_int(R, j, "n", &p->n, 1, 1, SIM_MAX_DIM) < 0 ||
            get_int(R, j, "k", &p->k, 1, 1, SIM_MAX_DIM) < 0 ||
            get_int(R, j, "batch", &p->batch, 0, 1, SIM_MAX_DIM) < 0)
            return -1;
        if (p->batch == 1)
            p->batch = 0; /* canonical: absent */
    } else if (*sub == SIM_KERNEL_ATTENTION || *sub == SIM_KERNEL_ATTENTION_BWD || *sub == SIM_KERNEL_FLASH_FWD ||
               *sub == SIM_KERNEL_FLASH_BWD) {
        if (get_int(R, j, "batch", &p->batch, 1, 1, SIM_MAX_DIM) < 0 ||
            get_int(R, j, "heads", &p->m, 1, 1, SIM_MAX_DIM) < 0 ||
            get_int(R, j, "seq", &p->n, 1, 1, SIM_MAX_DIM) < 0 ||
            get_int(R, j, "head_dim", &p->k, 1, 1, SIM_MAX_DIM) < 0)
            return -1;
        if (*sub == SIM_KERNEL_FLASH_FWD || *sub == SIM_KERNEL_FLASH_BWD) { /* its memory traffic, the causal mask */
            if (get_int(R, j, "bytes", &p->bytes, 1, 0, SIM_MAX_BYTES) < 0)
                return -1;
            const cJSON *causal = cJSON_GetObjectItemCaseSensitive(j, "causal");
            if (causal && !cJSON_IsBool(causal))
                return sim_errf(R->err, "%s: %s.causal: expected true or false", R->src, R->path);
            p->tag = cJSON_IsTrue(causal);
            const cJSON *impl = cJSON_GetObjectItemCaseSensitive(j, "impl");
            int found = !impl;
            for (int i = 0; impl && i < SIM_ATTN_IMPL_COUNT && !found; i++)
                if (cJSON_IsString(impl) && !strcmp(impl->valuestring, sim_attn_impl_name(i)))
                    p->algo = (uint8_t)i, found = 1;
            if (!found)
                return sim_errf(R->err, "%s: %s.impl: expected flash, flash2, flash1 or flash-triton", R->src, R->path);
        }
    } else if (*sub == SIM_KERNEL_ELEMENTWISE) {
        if (get_int(R, j, "bytes", &p->bytes, 1, 0, SIM_MAX_BYTES) < 0 || read_class_bytes(R, j, p) < 0)
            return -1;
    } else if (*sub == SIM_KERNEL_OPTIMIZER) {
        if (get_int(R, j, "params", &p->m, 1, 0, SIM_MAX_BYTES) < 0 ||
            get_int(R, j, "bytes", &p->bytes, 1, 0, SIM_MAX_BYTES) < 0)
            return -1;
    } else {
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(j, "seconds");
        if (!cJSON_IsNumber(sec) || !(sec->valuedouble >= 0) || sec->valuedouble > SIM_MAX_SECONDS)
            return sim_errf(R->err, "%s: %s.seconds: expected a duration in seconds in [0, %g]", R->src, R->path,
                            SIM_MAX_SECONDS);
        p->seconds = sec->valuedouble;
    }
    return 0;
}

static int read_collective(reader *R, sim_schedule *s, const cJSON *j, sim_payload *p, int *sub, int64_t *arg)
{
    int algo = SIM_ALGO_AUTO;
    if (get_enum(R, j, "collective", sim_coll_name, SIM_COLL_COUNT, sub, 1) < 0 ||
        get_enum(R, j, "algo", sim_algo_name, SIM_ALGO_COUNT, &algo, 0) < 0 ||
        get_int(R, j, "comm", arg, 1, 0, INT32_MAX) < 0 ||
        (*sub != SIM_COLL_ALLTOALLV && get_int(R, j, "bytes", &p->bytes, 1, 0, SIM_MAX_BYTES) < 0))
        return -1;
    if (*arg >= s->ncomms)
        return sim_errf(R->err, "%s: %s.comm: communicator %lld does not exist (the file defines %d)", R->src,
                        R->path, (long long)*arg, s->ncomms);
    if (*sub == SIM_COLL_ALLTOALLV) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "send_bytes");
        int n = s->comms[*arg].nranks;
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
            return sim_errf(R->err, "%s: %s.send_bytes: expected an array of %d byte counts (one per member of "
                            "communicator %lld)", R->src, R->path, n, (long long)*arg);
        int64_t *sz = sim_xcalloc((size_t)n, sizeof *sz, "an all-to-allv's sizes");
        int q = 0;
        for (const cJSON *x = v->child; x; x = x->next, q++) {
            if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || x->valuedouble != floor(x->valuedouble) ||
                x->valuedouble > (double)SIM_MAX_BYTES) {
                free(sz);
                return sim_errf(R->err, "%s: %s.send_bytes[%d]: expected a byte count in 0..%lld", R->src, R->path,
                                q, (long long)SIM_MAX_BYTES);
            }
            sz[q] = (int64_t)x->valuedouble;
            p->bytes += sz[q];
        }
        p->m = sim_sched_sizes(s, sz, n);
        p->n = n;
        free(sz);
    }
    if (*sub == SIM_COLL_BROADCAST || *sub == SIM_COLL_REDUCE) {
        int64_t root;
        if (get_int(R, j, "root", &root, 1, 0, s->comms[*arg].nranks - 1) < 0)
            return -1;
        p->root = (int32_t)root;
    }
    p->algo = (uint8_t)algo;
    return 0;
}

static int read_op(reader *R, sim_schedule *s, int stream, const cJSON *j, idmap *ids)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.name = -1;
    int kind = 0, sub = 0, phase = SIM_PHASE_NONE;
    int64_t v = 0, arg = -1, layer = -1, micro = -1, subb = -1, id;
    if (!cJSON_IsObject(j))
        return sim_errf(R->err, "%s: %s: expected an object", R->src, R->path);
    for (const cJSON *c = j->child; c; c = c->next)
        if (!is_op_key(c->string))
            return unknown_key(R, R->path, c->string, op_keys);
    if (get_int(R, j, "id", &id, 1, -(int64_t)MAX_ID, (int64_t)MAX_ID) < 0 ||
        get_enum(R, j, "op", sim_op_kind_name, SIM_OP_KIND_COUNT, &kind, 1) < 0)
        return -1;
    p.kind = (uint8_t)kind;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (name) {
        const char *nm = NULL;
        char what[300];
        snprintf(what, sizeof what, "%s.name", R->path);
        if (get_name(R, name, what, &nm) < 0)
            return -1;
        p.name = sim_sched_str(s, nm);
    }
    switch (kind) {
    case SIM_OP_COMPUTE:
        if (read_compute(R, j, &p, &sub) < 0)
            return -1;
        break;
    case SIM_OP_COLLECTIVE:
        if (read_collective(R, s, j, &p, &sub, &arg) < 0)
            return -1;
        break;
    case SIM_OP_SEND:
    case SIM_OP_RECV:
        if (get_int(R, j, "peer", &arg, 1, 0, s->nranks - 1) < 0 ||
            get_int(R, j, "bytes", &p.bytes, 1, 0, SIM_MAX_BYTES) < 0 ||
            get_int(R, j, "tag", &v, 0, INT32_MIN, INT32_MAX) < 0)
            return -1;
        p.tag = (int32_t)v;
        break;
    case SIM_OP_MEMORY:
        if (get_enum(R, j, "memory", sim_mem_kind_name, SIM_MEM_KIND_COUNT, &sub, 1) < 0 ||
            get_int(R, j, "bytes", &p.bytes, 1, -SIM_MAX_BYTES, SIM_MAX_BYTES) < 0)
            return -1;
        break;
    }
    p.sub = (uint8_t)sub;
    if (get_int(R, j, "layer", &layer, 0, -1, INT32_MAX) < 0 || get_int(R, j, "micro", &micro, 0, -1, INT32_MAX) < 0 ||
        get_int(R, j, "sub", &subb, 0, -1, 127) < 0 ||
        get_enum(R, j, "phase", sim_phase_name, SIM_PHASE_COUNT, &phase, 0) < 0)
        return -1;
    if (s->nops >= SIM_MAX_OPS)
        return sim_errf(R->err, "%s: %s: more than %u operations; a schedule holds at most that many", R->src,
                        R->path, SIM_MAX_OPS);
    sim_tags t = {(int32_t)layer, (int32_t)micro, (int8_t)subb, (uint8_t)phase};
    uint32_t op = sim_sched_add(s, stream, sim_sched_payload(s, &p), (int32_t)arg, t, NULL, 0);
    ids[op] = (idmap){id, op};
    return read_deps(R, s, op, j);
}

/* ---- the skeleton: top level, ranks, streams ---- */

static int read_meta(reader *R, sim_schedule *s, const cJSON *meta)
{
    static const char *const keys[] = {"name", "samples_per_iteration", "tokens_per_iteration",
                                       "model_flops_per_iteration", "dtype", NULL};
    double *num[] = {NULL, &s->meta.samples_per_iteration, &s->meta.tokens_per_iteration,
                     &s->meta.model_flops_per_iteration};
    if (!cJSON_IsObject(meta))
        return sim_errf(R->err, "%s: meta: expected an object", R->src);
    for (const cJSON *c = meta->child; c; c = c->next) {
        int k = one_of(c->string, keys);
        if (k < 0)
            return unknown_key(R, "meta", c->string, keys);
        if (k == 0 && (!cJSON_IsString(c) || strlen(c->valuestring) >= sizeof s->meta.name))
            return sim_errf(R->err, "%s: meta.name: expected a string of at most %zu bytes", R->src,
                            sizeof s->meta.name - 1);
        if (k == 0)
            snprintf(s->meta.name, sizeof s->meta.name, "%s", c->valuestring);
        if (k >= 1 && k <= 3) {
            if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0))
                return sim_errf(R->err, "%s: meta.%s: expected a number >= 0", R->src, c->string);
            *num[k] = c->valuedouble;
        }
    }
    int dt = SIM_DTYPE_FP32;
    strcpy(R->path, "meta");
    if (get_enum(R, meta, "dtype", dtype_name_int, SIM_DTYPE_COUNT, &dt, 0) < 0)
        return -1;
    s->meta.dtype = dt;
    return 0;
}

/* A communicator's "whole": {"ranks", "nodes"}, the ring it stands for. */
static int read_whole(reader *R, const cJSON *w, const char *p, int n, sim_comm *cm)
{
    static const char *const keys[] = {"ranks", "nodes", NULL};
    if (!cJSON_IsObject(w))
        return sim_errf(R->err, "%s: %s.whole: expected an object {\"ranks\", \"nodes\"}", R->src, p);
    for (const cJSON *k = w->child; k; k = k->next)
        if (one_of(k->string, keys) < 0) {
            char q[96];
            snprintf(q, sizeof q, "%s.whole", p);
            return unknown_key(R, q, k->string, keys);
        }
    int64_t ranks = 0, nodes = 0;
    snprintf(R->path, sizeof R->path, "%s.whole", p);
    if (get_int(R, w, "ranks", &ranks, 1, n, SIM_MAX_GPUS) < 0 || get_int(R, w, "nodes", &nodes, 1, 1, SIM_MAX_GPUS) < 0)
        return -1;
    cm->whole_ranks = (int)ranks;
    cm->whole_nodes = (int)nodes;
    return 0;
}

/* The top level's "layout": the parallel degrees (sim_layout). */
static int read_layout(reader *R, sim_schedule *s, const cJSON *lay)
{
    if (!cJSON_IsObject(lay))
        return sim_errf(R->err, "%s: layout: expected an object {\"tp\", \"cp\", \"dp\", \"pp\", \"ep\"}", R->src);
    for (const cJSON *k = lay->child; k; k = k->next)
        if (one_of(k->string, layout_keys) < 0)
            return unknown_key(R, "layout", k->string, layout_keys);
    int64_t prod = 1;
    strcpy(R->path, "layout");
    for (int k = 0; layout_keys[k]; k++) {
        int64_t v = 0;
        if (get_int(R, lay, layout_keys[k], &v, 1, 1, SIM_MAX_GPUS) < 0)
            return -1;
        LAYOUT_DEG(&s->layout, k) = (int)v;
        if (k < 4)
            prod *= v;
    }
    if (prod != s->nranks)
        return sim_errf(R->err, "%s: layout: tp x cp x dp x pp = %lld, but the schedule has %d ranks", R->src,
                        (long long)prod, s->nranks);
    return 0;
}

static int read_comms(reader *R, sim_schedule *s, const cJSON *comms)
{
    static const char *const keys[] = {"name", "ranks", "whole", NULL};
    if (!cJSON_IsArray(comms))
        return sim_errf(R->err, "%s: communicators: expected an array", R->src);
    int ci = 0;
    for (const cJSON *c = comms->child; c; c = c->next, ci++) {
        char p[64];
        snprintf(p, sizeof p, "communicators[%d]", ci);
        if (!cJSON_IsObject(c))
            return sim_errf(R->err, "%s: %s: expected an object {\"name\", \"ranks\"}", R->src, p);
        for (const cJSON *k = c->child; k; k = k->next)
            if (one_of(k->string, keys) < 0)
                return unknown_key(R, p, k->string, keys);
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(c, "ranks");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        const char *name = NULL;
        char what[96];
        snprintf(what, sizeof what, "%s.name", p);
        if (nm && get_name(R, nm, what, &name) < 0)
            return -1;
        int n = cJSON_GetArraySize(rk);
        if (!cJSON_IsArray(rk) || n < 1)
            return sim_errf(R->err, "%s: %s.ranks: expected a non-empty array of ranks", R->src, p);
        int *r = sim_xcalloc((size_t)n, sizeof *r, "a communicator's ranks");
        int k = 0;
        for (const cJSON *x = rk->child; x; x = x->next, k++) {
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || !(x->valuedouble >= 0) ||
                x->valuedouble >= (double)s->nranks) {
                free(r);
                return sim_errf(R->err, "%s: %s.ranks[%d]: expected a rank in 0..%d", R->src, p, k, s->nranks - 1);
            }
            r[k] = (int)x->valuedouble;
        }
        int id = sim_sched_comm(s, name, r, n);
        free(r);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "whole");
        if (w && read_whole(R, w, p, n, &s->comms[id]) < 0)
            return -1;
    }
    return 0;
}

/* The header fields, held as one small cJSON object. */
static int read_header(reader *R, const cJSON *top, sim_schedule **out)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(top, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "trainsim-schedule") != 0)
        return sim_errf(R->err, "%s: format: expected \"trainsim-schedule\" (is this a schedule file?)", R->src);
    int64_t version = 0, nranks = 0;
    strcpy(R->path, "(top)");
    if (get_int(R, top, "version", &version, 1, 1, INT32_MAX) < 0)
        return -1;
    if (version != 1)
        return sim_errf(R->err, "%s: version: this trainsim reads schedule version 1, the file is version %lld",
                        R->src, (long long)version);
    if (get_int(R, top, "nranks", &nranks, 1, 1, INT64_MAX / 2) < 0)
        return -1;
    if (nranks > SIM_MAX_GPUS)
        return sim_errf(R->err, "%s: nranks: %lld ranks; trainsim simulates at most %d GPUs", R->src,
                        (long long)nranks, SIM_MAX_GPUS);
    sim_schedule *s = *out = sim_sched_new((int)nranks);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(top, "meta");
    const cJSON *comms = cJSON_GetObjectItemCaseSensitive(top, "communicators");
    const cJSON *lay = cJSON_GetObjectItemCaseSensitive(top, "layout");
    if ((meta && read_meta(R, s, meta) < 0) || (lay && read_layout(R, s, lay) < 0) ||
        (comms && read_comms(R, s, comms) < 0))
        return -1;
    return 0;
}

static int read_ops(reader *R, sim_schedule *s, int sid, cursor *c, int ri, int si, idmap **ids, size_t *ids_cap)
{
    if (open_container(R, c, '[', "an array of operations") < 0)
        return -1;
    int oi = 0;
    for (int rc; (rc = next_element(R, c, &oi, NULL, 0)) != 0;) {
        if (rc < 0)
            return -1;
        snprintf(R->path, sizeof R->path, "ranks[%d].streams[%d].ops[%d]", ri, si, oi - 1);
        if (s->nops == *ids_cap) {
            *ids_cap = *ids_cap ? 2 * *ids_cap : 1024;
            *ids = sim_xrealloc(*ids, *ids_cap, sizeof **ids, "the schedule's operation ids");
        }
        cJSON *j = parse_here(R, c, R->path);
        int bad = !j || read_op(R, s, sid, j, *ids) < 0;
        cJSON_Delete(j);
        if (bad)
            return -1;
    }
    return 0;
}

/* An object of two members in any order, both required: keys[0]'s value
 * parsed into *head, keys[1]'s extent (an array, read later) in *body;
 * where keys[2] is given (extra not NULL), that optional member's value in
 * *extra.  The skeleton's rank and stream objects are of this shape. */
static int read_pair(reader *R, cursor *c, const char *path, const char *const keys[], cJSON **head,
                     cursor *body, cJSON **extra)
{
    char key[64];
    *head = NULL;
    *body = (cursor){NULL, NULL};
    if (extra)
        *extra = NULL;
    if (open_container(R, c, '{', "an object") < 0)
        return -1;
    int n = 0, rc;
    while ((rc = next_element(R, c, &n, key, sizeof key)) > 0) {
        int k = one_of(key, keys);
        if (k < 0 || (k == 0 && *head) || (k == 1 && body->p) || (k == 2 && *extra)) {
            rc = k < 0 ? unknown_key(R, path, key, keys) : twice(R, path, key);
            break;
        }
        if ((k == 0 && !(*head = parse_here(R, c, path))) || (k == 2 && !(*extra = parse_here(R, c, path)))) {
            rc = -1;
            break;
        }
        if (k == 1) {
            body->p = c->p;
            if ((rc = skip_value(R, c)) < 0)
                break;
            body->end = c->p;
        }
    }
    if (rc == 0 && !*head)
        rc = sim_errf(R->err, "%s: %s: missing field \"%s\"", R->src, path, keys[0]);
    if (rc == 0 && !body->p)
        rc = sim_errf(R->err, "%s: %s: missing field \"%s\"", R->src, path, keys[1]);
    if (rc < 0) {
        cJSON_Delete(*head);
        *head = NULL;
        if (extra) {
            cJSON_Delete(*extra);
            *extra = NULL;
        }
    }
    return rc;
}

/* A stream's "role": one of sim_role's names. */
static int read_role(reader *R, const cJSON *v, const char *path, sim_role *role)
{
    *role = SIM_ROLE_NONE;
    if (!v)
        return 0;
    for (int k = SIM_ROLE_NONE + 1; k < SIM_ROLE_COUNT && cJSON_IsString(v); k++)
        if (!strcmp(v->valuestring, sim_role_name(k))) {
            *role = (sim_role)k;
            return 0;
        }
    return sim_errf(R->err, "%s: %s.role: expected \"compute\", \"tp\", \"cp\", \"dp\", \"pp\" or \"ep\"", R->src,
                    path);
}

/* One element of "streams": {"name", ["role",] "ops"}. */
static int read_stream(reader *R, sim_schedule *s, int rank, cursor *c, int ri, int si, idmap **ids,
                       size_t *ids_cap)
{
    static const char *const keys[] = {"name", "ops", "role", NULL};
    char path[64], what[96];
    snprintf(path, sizeof path, "ranks[%d].streams[%d]", ri, si);
    snprintf(what, sizeof what, "%s.name", path);
    cJSON *name, *rj;
    cursor ops;
    const char *nm = NULL;
    sim_role role;
    if (read_pair(R, c, path, keys, &name, &ops, &rj) < 0)
        return -1;
    int bad = get_name(R, name, what, &nm) < 0 || read_role(R, rj, path, &role) < 0;
    cJSON_Delete(rj);
    if (bad)
        return cJSON_Delete(name), -1;
    uint32_t before = s->nstreams;
    int sid = sim_sched_stream_role(s, rank, nm, role);
    if ((uint32_t)sid < before) {
        sim_errf(R->err, "%s: %s: rank %d has two streams named \"%.200s\"", R->src, path, rank, nm);
        return cJSON_Delete(name), -1;
    }
    cJSON_Delete(name);
    if (s->nstreams > R->sfile_cap) {
        R->sfile_cap = R->sfile_cap ? 2 * R->sfile_cap : 64;
        R->sfile = sim_xrealloc(R->sfile, (size_t)R->sfile_cap * 2, sizeof *R->sfile, "the schedule's streams");
    }
    R->sfile[2 * sid] = (uint16_t)(ri < UINT16_MAX ? ri : UINT16_MAX);
    R->sfile[2 * sid + 1] = (uint16_t)(si < UINT16_MAX ? si : UINT16_MAX);
    return read_ops(R, s, sid, &ops, ri, si, ids, ids_cap);
}

/* One element of "ranks": {"rank", "streams"}. */
static int read_rank(reader *R, sim_schedule *s, cursor *c, int ri, idmap **ids, size_t *ids_cap)
{
    static const char *const keys[] = {"rank", "streams", NULL};
    char path[64];
    snprintf(path, sizeof path, "ranks[%d]", ri);
    cJSON *rank;
    cursor st;
    if (read_pair(R, c, path, keys, &rank, &st, NULL) < 0)
        return -1;
    if (!cJSON_IsNumber(rank) || rank->valuedouble != floor(rank->valuedouble) || !(rank->valuedouble >= 0) ||
        rank->valuedouble >= s->nranks) {
        sim_errf(R->err, "%s: %s.rank: expected a rank in 0..%d", R->src, path, s->nranks - 1);
        return cJSON_Delete(rank), -1;
    }
    int r = (int)rank->valuedouble, si = 0, rc;
    cJSON_Delete(rank);
    if (open_container(R, &st, '[', "an array of streams") < 0)
        return -1;
    while ((rc = next_element(R, &st, &si, NULL, 0)) > 0)
        if (read_stream(R, s, r, &st, ri, si - 1, ids, ids_cap) < 0)
            return -1;
    return rc;
}

/* The top-level object: every member but "ranks" parsed into *top, the
 * extent of "ranks" in *ranks. */
static int read_top(reader *R, cursor *c, cJSON *top, cursor *ranks)
{
    static const char *const keys[] = {"format", "version", "meta", "nranks", "communicators", "ranks", "layout", NULL};
    char key[64];
    if (open_container(R, c, '{', "a schedule object") < 0)
        return -1;
    int n = 0, rc;
    while ((rc = next_element(R, c, &n, key, sizeof key)) > 0) {
        int k = one_of(key, keys);
        if (k < 0)
            return unknown_key(R, "", key, keys);
        if ((k == 5 && ranks->p) || cJSON_GetObjectItemCaseSensitive(top, key))
            return twice(R, "", key);
        if (k == 5) {
            ranks->p = c->p;
            if (skip_value(R, c) < 0)
                return -1;
            ranks->end = c->p;
            continue;
        }
        cJSON *v = parse_here(R, c, key);
        if (!v)
            return -1;
        cJSON_AddItemToObject(top, key, v);
    }
    if (rc < 0)
        return -1;
    skip_ws(c);
    if (c->p < c->end)
        return at_error(R, c->p, "nothing after the schedule object");
    return 0;
}

sim_schedule *sim_sched_read_json(const char *text, const char *source, sim_err *err)
{
    reader R = {.src = source, .text = text, .err = err};
    sim_schedule *s = NULL;
    idmap *ids = NULL;
    size_t ids_cap = 0;
    cursor c = {text, text + strlen(text)}, ranks = {NULL, NULL};
    cJSON *top = cJSON_CreateObject();
    TRY(read_top(&R, &c, top, &ranks));
    TRY(read_header(&R, top, &s));
    if (!ranks.p) {
        sim_errf(err, "%s: ranks: missing (expected an array of {rank, streams})", source);
        goto fail;
    }
    TRY(open_container(&R, &ranks, '[', "an array of {rank, streams}"));
    int ri = 0, rc;
    while ((rc = next_element(&R, &ranks, &ri, NULL, 0)) > 0)
        TRY(read_rank(&R, s, &ranks, ri - 1, &ids, &ids_cap));
    TRY(rc);
    TRY(resolve_deps(&R, s, ids, s->nops));
    free(ids);
    free(R.raw);
    free(R.sfile);
    cJSON_Delete(top);
    return s;
fail:
    free(ids);
    free(R.raw);
    free(R.sfile);
    sim_sched_free(s);
    cJSON_Delete(top);
    return NULL;
}

sim_schedule *sim_sched_load(const char *path, sim_err *err)
{
    char *text = sim_read_file_max(path, SIM_SCHED_READ_MAX, NULL, 0, err);
    if (!text)
        return NULL;
    sim_schedule *s = sim_sched_read_json(text, path, err);
    free(text);
    return s;
}
