/* schedule_json.c — the schedule as JSON (format "trainsim-schedule", v1).
 *
 *   { "format": "trainsim-schedule", "version": 1,
 *     "meta": { "name", "samples_per_iteration", "tokens_per_iteration",
 *               "model_flops_per_iteration", "dtype" },
 *     "nranks": N,
 *     "communicators": [ { "name": "tp0", "ranks": [0,1,2,3] }, ... ],   (id = position)
 *     "ranks": [ { "rank": 0, "streams": [ { "name": "compute", "ops": [ OP, ... ] } ] } ] }
 *
 *   OP = { "id": 7, "op": "compute", "kernel": "gemm", "name": "qkv",
 *          "m":, "n":, "k":, "batch":, "dtype": "tf32",            (gemm)
 *          "batch":, "heads":, "seq":, "head_dim":, "dtype":       (attention)
 *          "bytes":, "dtype":                                      (elementwise)
 *          "params":, "bytes":                                     (optimizer)
 *          "seconds":                                              (fixed)
 *          "batch":, "heads":, "seq":, "head_dim":, "causal":, "bytes":, "dtype":   (flash_fwd, flash_bwd)
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
#include <stdlib.h>
#include <string.h>

/* ---- writing ---------------------------------------------------------- */

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, cJSON_CreateNumber(v)); }

static uint32_t *stream_order(const sim_schedule *s)
{
    /* streams sorted by rank, keeping creation order within a rank */
    uint32_t *order = malloc((s->nstreams + 1) * sizeof *order);
    int *count = calloc((size_t)s->nranks + 1, sizeof *count);
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
            add_num(j, "batch", (double)p->batch);
            add_num(j, "heads", (double)p->m);
            add_num(j, "seq", (double)p->n);
            add_num(j, "head_dim", (double)p->k);
            break;
        case SIM_KERNEL_ELEMENTWISE:
            add_num(j, "bytes", (double)p->bytes);
            break;
        case SIM_KERNEL_OPTIMIZER:
            add_num(j, "params", (double)p->m);
            add_num(j, "bytes", (double)p->bytes);
            break;
        case SIM_KERNEL_FIXED:
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
        if (p->sub != SIM_KERNEL_FIXED)
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
    uint32_t *newid = malloc(((size_t)s->nops + 1) * sizeof *newid);
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
    cJSON *comms = cJSON_AddArrayToObject(root, "communicators");
    for (int c = 0; c < s->ncomms; c++) {
        cJSON *cj = cJSON_CreateObject();
        if (s->comms[c].name >= 0)
            cJSON_AddStringToObject(cj, "name", sim_sched_strname(s, s->comms[c].name));
        cJSON_AddItemToObject(cj, "ranks", cJSON_CreateIntArray(s->comms[c].ranks, s->comms[c].nranks));
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
    FILE *f = fopen(path, "w");
    if (!f) {
        free(text);
        return sim_errf(err, "%s: cannot write: %s", path, strerror(errno));
    }
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    free(text);
    return ok ? 0 : sim_errf(err, "%s: write failed: %s", path, strerror(errno));
}

/* ---- reading ---------------------------------------------------------- */

/* Line and column of a position in text, for parse errors. */
static void line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p && at && p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

typedef struct reader {
    const char *src;
    sim_err *err;
    char path[256];
} reader;

static int get_int(reader *R, const cJSON *obj, const char *key, int64_t *out, int required, int64_t min)
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
    if (v->valuedouble < (double)min)
        return sim_errf(R->err, "%s: %s.%s: expected an integer >= %lld, got %.0f", R->src, R->path, key,
                        (long long)min, v->valuedouble);
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
    sim_errf(R->err, "%s: %s.%s: expected one of %s; got %s", R->src, R->path, key, known, t ? t : "?");
    free(t);
    return -1;
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

static int read_deps(reader *R, sim_schedule *s, uint32_t op, const cJSON *j, const idmap *ids, size_t nids)
{
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(j, "deps");
    if (deps) {
        if (!cJSON_IsArray(deps))
            return sim_errf(R->err, "%s: %s.deps: expected an array of op ids", R->src, R->path);
        int k = 0;
        for (const cJSON *d = deps->child; d; d = d->next, k++) {
            uint32_t target;
            if (!cJSON_IsNumber(d) || lookup_id(ids, nids, (int64_t)d->valuedouble, &target) < 0) {
                char *txt = cJSON_PrintUnformatted(d);
                sim_errf(R->err, "%s: %s.deps[%d]: no op has id %s", R->src, R->path, k, txt ? txt : "?");
                free(txt);
                return -1;
            }
            sim_sched_add_dep(s, op, target);
        }
    }
    return 0;
}

static int read_op(reader *R, sim_schedule *s, int stream, const cJSON *j, const idmap *ids, size_t nids)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.name = -1;
    int kind = 0, sub = 0, dt = SIM_DTYPE_FP32, algo = SIM_ALGO_AUTO, phase = SIM_PHASE_NONE;
    int64_t v = 0, arg = -1, layer = -1, micro = -1, subb = -1;
    if (!cJSON_IsObject(j))
        return sim_errf(R->err, "%s: %s: expected an object", R->src, R->path);
    if (get_enum(R, j, "op", sim_op_kind_name, SIM_OP_KIND_COUNT, &kind, 1) < 0)
        return -1;
    p.kind = (uint8_t)kind;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (name) {
        if (!cJSON_IsString(name))
            return sim_errf(R->err, "%s: %s.name: expected a string", R->src, R->path);
        p.name = sim_sched_str(s, name->valuestring);
    }
    switch (kind) {
    case SIM_OP_COMPUTE:
        if (get_enum(R, j, "kernel", sim_kernel_name, SIM_KERNEL_COUNT, &sub, 1) < 0)
            return -1;
        if (sub != SIM_KERNEL_FIXED && get_enum(R, j, "dtype", dtype_name_int, SIM_DTYPE_COUNT, &dt, 0) < 0)
            return -1;
        p.dtype = (uint8_t)dt;
        if (sub == SIM_KERNEL_GEMM) {
            p.batch = 1;
            if (get_int(R, j, "m", &p.m, 1, 1) < 0 || get_int(R, j, "n", &p.n, 1, 1) < 0 ||
                get_int(R, j, "k", &p.k, 1, 1) < 0 || get_int(R, j, "batch", &p.batch, 0, 1) < 0)
                return -1;
            if (p.batch == 1)
                p.batch = 0; /* canonical: absent */
        } else if (sub == SIM_KERNEL_ATTENTION) {
            if (get_int(R, j, "batch", &p.batch, 1, 1) < 0 || get_int(R, j, "heads", &p.m, 1, 1) < 0 ||
                get_int(R, j, "seq", &p.n, 1, 1) < 0 || get_int(R, j, "head_dim", &p.k, 1, 1) < 0)
                return -1;
        } else if (sub == SIM_KERNEL_FLASH_FWD || sub == SIM_KERNEL_FLASH_BWD) {
            if (get_int(R, j, "batch", &p.batch, 1, 1) < 0 || get_int(R, j, "heads", &p.m, 1, 1) < 0 ||
                get_int(R, j, "seq", &p.n, 1, 1) < 0 || get_int(R, j, "head_dim", &p.k, 1, 1) < 0 ||
                get_int(R, j, "bytes", &p.bytes, 1, 0) < 0)
                return -1;
            const cJSON *causal = cJSON_GetObjectItemCaseSensitive(j, "causal");
            if (causal && !cJSON_IsBool(causal))
                return sim_errf(R->err, "%s: %s.causal: expected true or false", R->src, R->path);
            p.tag = cJSON_IsTrue(causal);
            const cJSON *impl = cJSON_GetObjectItemCaseSensitive(j, "impl");
            int found = !impl;
            for (int i = 0; impl && i < SIM_ATTN_IMPL_COUNT && !found; i++)
                if (cJSON_IsString(impl) && !strcmp(impl->valuestring, sim_attn_impl_name(i)))
                    p.algo = (uint8_t)i, found = 1;
            if (!found)
                return sim_errf(R->err, "%s: %s.impl: expected flash, flash2, flash1 or flash-triton", R->src, R->path);
        } else if (sub == SIM_KERNEL_ELEMENTWISE) {
            if (get_int(R, j, "bytes", &p.bytes, 1, 0) < 0)
                return -1;
        } else if (sub == SIM_KERNEL_OPTIMIZER) {
            if (get_int(R, j, "params", &p.m, 1, 0) < 0 || get_int(R, j, "bytes", &p.bytes, 1, 0) < 0)
                return -1;
        } else {
            const cJSON *sec = cJSON_GetObjectItemCaseSensitive(j, "seconds");
            if (!cJSON_IsNumber(sec) || sec->valuedouble < 0 || !isfinite(sec->valuedouble))
                return sim_errf(R->err, "%s: %s.seconds: expected a duration >= 0 in seconds", R->src, R->path);
            p.seconds = sec->valuedouble;
        }
        break;
    case SIM_OP_COLLECTIVE:
        if (get_enum(R, j, "collective", sim_coll_name, SIM_COLL_COUNT, &sub, 1) < 0 ||
            get_enum(R, j, "algo", sim_algo_name, SIM_ALGO_COUNT, &algo, 0) < 0 ||
            get_int(R, j, "comm", &arg, 1, 0) < 0 ||
            (sub != SIM_COLL_ALLTOALLV && get_int(R, j, "bytes", &p.bytes, 1, 0) < 0))
            return -1;
        if (arg >= s->ncomms)
            return sim_errf(R->err, "%s: %s.comm: communicator %lld does not exist (the file defines %d)", R->src,
                            R->path, (long long)arg, s->ncomms);
        if (sub == SIM_COLL_ALLTOALLV) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "send_bytes");
            int n = s->comms[arg].nranks;
            if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
                return sim_errf(R->err, "%s: %s.send_bytes: expected an array of %d byte counts (one per member of "
                                "communicator %lld)", R->src, R->path, n, (long long)arg);
            int64_t *sz = malloc((size_t)n * sizeof *sz);
            int q = 0;
            for (const cJSON *x = v->child; x; x = x->next, q++) {
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble != floor(x->valuedouble) ||
                    x->valuedouble > 9.007199254740992e15) {
                    free(sz);
                    return sim_errf(R->err, "%s: %s.send_bytes[%d]: expected a byte count >= 0", R->src, R->path, q);
                }
                sz[q] = (int64_t)x->valuedouble;
            }
            p.m = sim_sched_sizes(s, sz, n);
            p.n = n;
            for (int k = 0; k < n; k++)
                p.bytes += sz[k];
            free(sz);
        }
        if (sub == SIM_COLL_BROADCAST || sub == SIM_COLL_REDUCE) {
            if (get_int(R, j, "root", &v, 1, 0) < 0)
                return -1;
            p.root = (int32_t)v;
        }
        p.algo = (uint8_t)algo;
        break;
    case SIM_OP_SEND:
    case SIM_OP_RECV:
        if (get_int(R, j, "peer", &arg, 1, 0) < 0 || get_int(R, j, "bytes", &p.bytes, 1, 0) < 0)
            return -1;
        v = 0;
        if (get_int(R, j, "tag", &v, 0, INT32_MIN) < 0)
            return -1;
        p.tag = (int32_t)v;
        break;
    case SIM_OP_MEMORY:
        if (get_enum(R, j, "memory", sim_mem_kind_name, SIM_MEM_KIND_COUNT, &sub, 1) < 0 ||
            get_int(R, j, "bytes", &p.bytes, 1, INT64_MIN / 2) < 0)
            return -1;
        break;
    }
    p.sub = (uint8_t)sub;
    if (get_int(R, j, "layer", &layer, 0, -1) < 0 || get_int(R, j, "micro", &micro, 0, -1) < 0 ||
        get_int(R, j, "sub", &subb, 0, -1) < 0 ||
        get_enum(R, j, "phase", sim_phase_name, SIM_PHASE_COUNT, &phase, 0) < 0)
        return -1;
    if (subb > 127)
        return sim_errf(R->err, "%s: %s.sub: expected a sub-batch index below 128", R->src, R->path);
    sim_tags t = {(int32_t)layer, (int32_t)micro, (int8_t)subb, (uint8_t)phase};
    uint32_t op = sim_sched_add(s, stream, sim_sched_payload(s, &p), (int32_t)arg, t, NULL, 0);
    return read_deps(R, s, op, j, ids, nids);
}

sim_schedule *sim_sched_read_json(const char *text, const char *source, sim_err *err)
{
    reader R = {.src = source, .err = err};
    sim_schedule *s = NULL;
    idmap *ids = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
    if (!root) {
        int line, col;
        line_col(text, cJSON_GetErrorPtr(), &line, &col);
        sim_errf(err, "%s: malformed JSON at line %d, column %d", source, line, col);
        return NULL;
    }
    strcpy(R.path, "(top)");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "trainsim-schedule") != 0) {
        sim_errf(err, "%s: format: expected \"trainsim-schedule\" (is this a schedule file?)", source);
        goto fail;
    }
    int64_t version = 0, nranks = 0;
    TRY(get_int(&R, root, "version", &version, 1, 1));
    if (version != 1) {
        sim_errf(err, "%s: version: this trainsim reads schedule version 1, the file is version %lld", source,
                 (long long)version);
        goto fail;
    }
    TRY(get_int(&R, root, "nranks", &nranks, 1, 1));
    if (nranks > 1 << 24) {
        sim_errf(err, "%s: nranks: %lld is more ranks than trainsim supports (16M)", source, (long long)nranks);
        goto fail;
    }
    s = sim_sched_new((int)nranks);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
    if (meta) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, "name");
        if (cJSON_IsString(v))
            snprintf(s->meta.name, sizeof s->meta.name, "%s", v->valuestring);
        v = cJSON_GetObjectItemCaseSensitive(meta, "samples_per_iteration");
        s->meta.samples_per_iteration = cJSON_IsNumber(v) ? v->valuedouble : 0;
        v = cJSON_GetObjectItemCaseSensitive(meta, "tokens_per_iteration");
        s->meta.tokens_per_iteration = cJSON_IsNumber(v) ? v->valuedouble : 0;
        v = cJSON_GetObjectItemCaseSensitive(meta, "model_flops_per_iteration");
        s->meta.model_flops_per_iteration = cJSON_IsNumber(v) ? v->valuedouble : 0;
        int dt = SIM_DTYPE_FP32;
        strcpy(R.path, "meta");
        TRY(get_enum(&R, meta, "dtype", dtype_name_int, SIM_DTYPE_COUNT, &dt, 0));
        s->meta.dtype = dt;
    }
    const cJSON *comms = cJSON_GetObjectItemCaseSensitive(root, "communicators");
    if (comms && !cJSON_IsArray(comms)) {
        sim_errf(err, "%s: communicators: expected an array", source);
        goto fail;
    }
    int ci = 0;
    for (const cJSON *c = comms ? comms->child : NULL; c; c = c->next, ci++) {
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(c, "ranks");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        int n = cJSON_GetArraySize(rk);
        if (!cJSON_IsArray(rk) || n < 1) {
            sim_errf(err, "%s: communicators[%d].ranks: expected a non-empty array of ranks", source, ci);
            goto fail;
        }
        int *r = malloc((size_t)n * sizeof *r);
        int k = 0;
        for (const cJSON *x = rk->child; x; x = x->next, k++) {
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < 0 ||
                x->valuedouble >= (double)nranks) {
                free(r);
                sim_errf(err, "%s: communicators[%d].ranks[%d]: expected a rank in 0..%lld", source, ci, k,
                         (long long)nranks - 1);
                goto fail;
            }
            r[k] = (int)x->valuedouble;
        }
        sim_sched_comm(s, cJSON_IsString(nm) ? nm->valuestring : NULL, r, n);
        free(r);
    }
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks");
    if (!cJSON_IsArray(ranks)) {
        sim_errf(err, "%s: ranks: expected an array of {rank, streams}", source);
        goto fail;
    }
    /* pass 1: op ids -> dense indices in file order */
    size_t nids = 0, cap = 0;
    int ri = 0;
    for (const cJSON *r = ranks->child; r; r = r->next, ri++) {
        const cJSON *streams = cJSON_GetObjectItemCaseSensitive(r, "streams");
        int si = 0;
        for (const cJSON *st = cJSON_IsArray(streams) ? streams->child : NULL; st; st = st->next, si++) {
            const cJSON *ops = cJSON_GetObjectItemCaseSensitive(st, "ops");
            int oi = 0;
            for (const cJSON *o = cJSON_IsArray(ops) ? ops->child : NULL; o; o = o->next, oi++) {
                snprintf(R.path, sizeof R.path, "ranks[%d].streams[%d].ops[%d]", ri, si, oi);
                int64_t id;
                TRY(get_int(&R, o, "id", &id, 1, INT64_MIN / 2));
                if (nids == cap) {
                    cap = cap ? cap * 2 : 1024;
                    ids = realloc(ids, cap * sizeof *ids);
                }
                ids[nids] = (idmap){id, (uint32_t)nids};
                nids++;
            }
        }
    }
    qsort(ids, nids, sizeof *ids, cmp_idmap);
    for (size_t i = 1; i < nids; i++)
        if (ids[i].id == ids[i - 1].id) {
            sim_errf(err, "%s: op id %lld is used twice", source, (long long)ids[i].id);
            goto fail;
        }
    /* pass 2: build */
    ri = 0;
    for (const cJSON *r = ranks->child; r; r = r->next, ri++) {
        int64_t rank;
        snprintf(R.path, sizeof R.path, "ranks[%d]", ri);
        TRY(get_int(&R, r, "rank", &rank, 1, 0));
        if (rank >= nranks) {
            sim_errf(err, "%s: ranks[%d].rank: unknown rank %lld (nranks is %lld)", source, ri, (long long)rank,
                     (long long)nranks);
            goto fail;
        }
        const cJSON *streams = cJSON_GetObjectItemCaseSensitive(r, "streams");
        if (!cJSON_IsArray(streams)) {
            sim_errf(err, "%s: ranks[%d].streams: expected an array", source, ri);
            goto fail;
        }
        int si = 0;
        for (const cJSON *st = streams->child; st; st = st->next, si++) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(st, "name");
            const cJSON *ops = cJSON_GetObjectItemCaseSensitive(st, "ops");
            if (!cJSON_IsString(nm) || !cJSON_IsArray(ops)) {
                sim_errf(err, "%s: ranks[%d].streams[%d]: expected {\"name\": string, \"ops\": array}", source, ri, si);
                goto fail;
            }
            uint32_t before = s->nstreams;
            int sid = sim_sched_stream(s, (int)rank, nm->valuestring);
            if ((uint32_t)sid < before) {
                sim_errf(err, "%s: ranks[%d].streams[%d]: rank %lld has two streams named \"%s\"", source, ri, si,
                         (long long)rank, nm->valuestring);
                goto fail;
            }
            int oi = 0;
            for (const cJSON *o = ops->child; o; o = o->next, oi++) {
                snprintf(R.path, sizeof R.path, "ranks[%d].streams[%d].ops[%d]", ri, si, oi);
                TRY(read_op(&R, s, sid, o, ids, nids));
            }
        }
    }
    free(ids);
    cJSON_Delete(root);
    return s;
fail:
    free(ids);
    sim_sched_free(s);
    cJSON_Delete(root);
    return NULL;
}

#include "fileio.h"

sim_schedule *sim_sched_load(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    sim_schedule *s = sim_sched_read_json(text, path, err);
    free(text);
    return s;
}
