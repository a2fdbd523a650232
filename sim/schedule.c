/* schedule.c — building, checking and (de)serialising schedules.
 *
 * Payloads are interned in an open-addressing hash table so that the millions
 * of operations of a large iteration share a few hundred shapes.  The checker
 * is a dry run of the synchronisation the engine will perform (stream order,
 * dependencies, collectives matched by order, messages matched by order): if
 * the dry run cannot finish, neither can the simulation, and the stuck
 * operations are named.  It runs in time linear in operations + dependencies. */
#include "schedule.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* ---- growable arrays -------------------------------------------------- */

static void *grow(void *ptr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return ptr;
    uint32_t c = *cap ? *cap : 16;
    while (c < need)
        c = c < 0x40000000u ? c * 2 : 0xffffffffu;
    void *p = sim_xrealloc(ptr, c, elem, "the schedule");
    *cap = c;
    return p;
}

/* ---- string table ----------------------------------------------------- */

struct sim_strtab {
    uint32_t n, cap;
    char **str;
    uint32_t hcap;
    int32_t *hash; /* open addressing, -1 empty */
};

static uint64_t hash_bytes(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void strtab_rehash(struct sim_strtab *t)
{
    uint32_t hcap = t->hcap ? t->hcap * 2 : 64;
    int32_t *h = sim_xcalloc(hcap, sizeof *h, "the schedule's names");
    memset(h, 0xff, hcap * sizeof *h);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t j = (uint32_t)hash_bytes(t->str[i], strlen(t->str[i])) & (hcap - 1);
        while (h[j] >= 0)
            j = (j + 1) & (hcap - 1);
        h[j] = (int32_t)i;
    }
    free(t->hash);
    t->hash = h;
    t->hcap = hcap;
}

int32_t sim_sched_str(sim_schedule *s, const char *str)
{
    if (!str)
        return -1;
    struct sim_strtab *t = s->strings;
    if ((t->n + 1) * 2 > t->hcap)
        strtab_rehash(t);
    uint32_t j = (uint32_t)hash_bytes(str, strlen(str)) & (t->hcap - 1);
    while (t->hash[j] >= 0) {
        if (strcmp(t->str[t->hash[j]], str) == 0)
            return t->hash[j];
        j = (j + 1) & (t->hcap - 1);
    }
    t->str = grow(t->str, &t->cap, t->n + 1, sizeof *t->str);
    t->str[t->n] = sim_xstrdup(str, "the schedule's names");
    t->hash[j] = (int32_t)t->n;
    return (int32_t)t->n++;
}

const char *sim_sched_strname(const sim_schedule *s, int32_t id)
{
    return (id >= 0 && (uint32_t)id < s->strings->n) ? s->strings->str[id] : "";
}

uint32_t sim_sched_nstrings(const sim_schedule *s) { return s->strings->n; }

/* ---- construction ----------------------------------------------------- */

sim_schedule *sim_sched_new(int nranks)
{
    sim_schedule *s = sim_xcalloc(1, sizeof *s, "a schedule");
    s->strings = sim_xcalloc(1, sizeof *s->strings, "a schedule");
    s->nranks = nranks;
    s->meta.dtype = SIM_DTYPE_FP32;
    return s;
}

void sim_sched_free(sim_schedule *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nstreams; i++)
        free(s->streams[i].ops);
    for (int i = 0; i < s->ncomms; i++)
        free(s->comms[i].ranks);
    for (uint32_t i = 0; i < s->strings->n; i++)
        free(s->strings->str[i]);
    free(s->strings->str);
    free(s->strings->hash);
    free(s->strings);
    free(s->streams);
    free(s->comms);
    free(s->ops);
    free(s->deps);
    free(s->payloads);
    free(s->payload_hash);
    free(s->sizes);
    free(s);
}

int sim_sched_stream(sim_schedule *s, int rank, const char *name)
{
    int32_t nm = sim_sched_str(s, name);
    for (uint32_t i = s->nstreams; i-- > 0;) /* recent streams first: generators ask for them */
        if (s->streams[i].rank == rank && s->streams[i].name == nm)
            return (int)i;
    s->streams = grow(s->streams, &s->streams_cap, s->nstreams + 1, sizeof *s->streams);
    s->streams[s->nstreams] = (sim_stream){.rank = rank, .name = nm};
    return (int)s->nstreams++;
}

int sim_sched_stream_role(sim_schedule *s, int rank, const char *name, sim_role role)
{
    int i = sim_sched_stream(s, rank, name);
    if (s->streams[i].role == SIM_ROLE_NONE)
        s->streams[i].role = (uint8_t)role;
    return i;
}

int sim_sched_comm(sim_schedule *s, const char *name, const int *ranks, int n)
{
    uint32_t cap = (uint32_t)s->comms_cap;
    s->comms = grow(s->comms, &cap, (uint32_t)s->ncomms + 1, sizeof *s->comms);
    s->comms_cap = (int)cap;
    sim_comm *c = &s->comms[s->ncomms];
    c->name = sim_sched_str(s, name);
    c->nranks = n;
    c->whole_ranks = c->whole_nodes = 0;
    c->ranks = sim_xcalloc((size_t)(n > 0 ? n : 1), sizeof *c->ranks, "a communicator");
    if (n > 0)
        memcpy(c->ranks, ranks, (size_t)n * sizeof *ranks);
    return s->ncomms++;
}

static void payload_rehash(sim_schedule *s)
{
    uint32_t hcap = s->payload_hash_cap ? s->payload_hash_cap * 2 : 256;
    uint32_t *h = sim_xcalloc(hcap, sizeof *h, "the schedule's payloads");
    memset(h, 0xff, hcap * sizeof *h);
    for (uint32_t i = 0; i < s->npayloads; i++) {
        uint32_t j = (uint32_t)hash_bytes(&s->payloads[i], sizeof(sim_payload)) & (hcap - 1);
        while (h[j] != UINT32_MAX)
            j = (j + 1) & (hcap - 1);
        h[j] = i;
    }
    free(s->payload_hash);
    s->payload_hash = h;
    s->payload_hash_cap = hcap;
}

uint32_t sim_sched_payload(sim_schedule *s, const sim_payload *p)
{
    sim_payload key = *p; /* sim_payload has no padding, so memcmp and hashing see only fields */
    if ((s->npayloads + 1) * 2 > s->payload_hash_cap)
        payload_rehash(s);
    uint32_t j = (uint32_t)hash_bytes(&key, sizeof key) & (s->payload_hash_cap - 1);
    while (s->payload_hash[j] != UINT32_MAX) {
        if (memcmp(&s->payloads[s->payload_hash[j]], &key, sizeof key) == 0)
            return s->payload_hash[j];
        j = (j + 1) & (s->payload_hash_cap - 1);
    }
    s->payloads = grow(s->payloads, &s->payloads_cap, s->npayloads + 1, sizeof *s->payloads);
    s->payloads[s->npayloads] = key;
    s->payload_hash[j] = s->npayloads;
    return s->npayloads++;
}

uint32_t sim_sched_add(sim_schedule *s, int stream, uint32_t payload, int32_t arg, sim_tags tags,
                       const uint32_t *deps, int ndeps)
{
    s->ops = grow(s->ops, &s->ops_cap, s->nops + 1, sizeof *s->ops);
    uint32_t id = s->nops++;
    sim_op *op = &s->ops[id];
    op->payload = payload;
    op->stream = (uint32_t)stream;
    op->arg = arg;
    op->layer = tags.layer;
    op->micro = tags.micro;
    op->subbatch = tags.subbatch;
    op->phase = tags.phase;
    op->dep_first = s->ndeps;
    op->ndeps = 0;
    for (int i = 0; i < ndeps; i++)
        sim_sched_add_dep(s, id, deps[i]);
    sim_stream *st = &s->streams[stream];
    op->seq = st->nops;
    st->ops = grow(st->ops, &st->cap, st->nops + 1, sizeof *st->ops);
    st->ops[st->nops++] = id;
    return id;
}

void sim_sched_add_dep(sim_schedule *s, uint32_t op, uint32_t dep)
{
    sim_op *o = &s->ops[op];
    if (o->dep_first + o->ndeps != s->ndeps) {
        fprintf(stderr, "trainsim: internal error: dependency added to op %u after later ops\n", op);
        abort();
    }
    if (o->ndeps == UINT16_MAX) {
        fprintf(stderr, "trainsim: internal error: op %u has too many dependencies\n", op);
        abort();
    }
    s->deps = grow(s->deps, &s->deps_cap, s->ndeps + 1, sizeof *s->deps);
    s->deps[s->ndeps++] = dep;
    o->ndeps++;
}

/* A schedule's dependency array rebuilt op by op with room for more: each
 * op's own dependencies copied (db_copy), then the ones a mode adds
 * (db_add), the result swapped in (db_end). */
typedef struct dep_builder {
    uint32_t *deps, nd;
    size_t cap;
} dep_builder;

static int db_begin(dep_builder *b, const sim_schedule *s, size_t extra_per_op)
{
    b->nd = 0;
    b->cap = (size_t)s->ndeps + (size_t)s->nops * extra_per_op + 1;
    b->deps = b->cap <= UINT32_MAX ? malloc(sizeof *b->deps * b->cap) : NULL;
    return b->deps ? 0 : -1;
}

/* op i's own dependencies; returns where they start */
static uint32_t db_copy(dep_builder *b, sim_schedule *s, uint32_t i)
{
    sim_op *o = &s->ops[i];
    uint32_t first = b->nd;
    for (uint32_t k = 0; k < o->ndeps; k++)
        b->deps[b->nd++] = s->deps[o->dep_first + k];
    o->dep_first = first;
    return first;
}

/* d, unless op o (whose dependencies start at first) has it or d is none */
static void db_add(dep_builder *b, sim_op *o, uint32_t first, uint32_t d)
{
    if (d == UINT32_MAX || o->ndeps == UINT16_MAX)
        return;
    for (uint32_t k = first; k < b->nd; k++)
        if (b->deps[k] == d)
            return;
    b->deps[b->nd++] = d;
    o->ndeps++;
}

static void db_end(dep_builder *b, sim_schedule *s)
{
    uint32_t *fit = realloc(b->deps, sizeof *b->deps * ((size_t)b->nd + 1)); /* the bound's slack back */
    if (fit) {
        b->deps = fit;
        b->cap = (size_t)b->nd + 1;
    }
    free(s->deps);
    s->deps = b->deps;
    s->ndeps = b->nd;
    s->deps_cap = (uint32_t)b->cap;
}

/* SIM_HOST_LAUNCH_BLOCKING: each op after the rank's previous one (same
 * stream: ordered already), receives left to their consumers */
static int chain_launches(sim_schedule *s)
{
    dep_builder b;
    uint32_t *prev = malloc(sizeof *prev * ((size_t)s->nranks + 1));
    if (!prev || db_begin(&b, s, 1)) {
        free(prev);
        return -1;
    }
    for (int r = 0; r < s->nranks; r++)
        prev[r] = UINT32_MAX;
    for (uint32_t i = 0; i < s->nops; i++) {
        uint32_t first = db_copy(&b, s, i);
        int kind = sim_sched_payload_of(s, i)->kind, r = sim_sched_rank_of(s, i);
        if (kind == SIM_OP_MEMORY || kind == SIM_OP_RECV)
            continue;
        if (prev[r] != UINT32_MAX && s->ops[prev[r]].stream != s->ops[i].stream)
            db_add(&b, &s->ops[i], first, prev[r]);
        prev[r] = i;
    }
    free(prev);
    db_end(&b, s);
    return 0;
}

#define EXCHANGE_MAX 8 /* sends and receives of one exchange (Megatron's: at most 4) */

/* SIM_HOST_P2P_SYNC: consecutive sends and receives of a rank make one
 * exchange; each waits for the rank's last op on every other stream, and
 * the first op on each stream after it waits for all of the exchange */
static int chain_exchanges(sim_schedule *s)
{
    /* each rank's streams: rank r's are rs[rs_at[r] .. rs_at[r + 1]) */
    uint32_t *rs_at = calloc((size_t)s->nranks + 2, sizeof *rs_at), *rs = malloc(sizeof *rs * (s->nstreams + 1u));
    uint32_t *last = malloc(sizeof *last * ((size_t)s->nstreams + 1));   /* a stream's last op not of an exchange */
    uint32_t *waited = malloc(sizeof *waited * ((size_t)s->nstreams + 1)); /* the exchange it waited for */
    uint32_t *xch = malloc(sizeof *xch * ((size_t)s->nranks * EXCHANGE_MAX + 1)); /* a rank's last exchange */
    uint32_t *xid = calloc((size_t)s->nranks + 1, sizeof *xid);                  /* its number, from 1 */
    int *nx = calloc((size_t)s->nranks + 1, sizeof *nx), *closed = calloc((size_t)s->nranks + 1, sizeof *closed);
    dep_builder b = {0};
    int rc = -1;
    if (!rs_at || !rs || !last || !waited || !xch || !xid || !nx || !closed)
        goto done;
    for (uint32_t t = 0; t < s->nstreams; t++)
        rs_at[s->streams[t].rank + 2]++;
    uint32_t per_rank = 0;
    for (int r = 0; r < s->nranks; r++) {
        per_rank = rs_at[r + 2] > per_rank ? rs_at[r + 2] : per_rank;
        rs_at[r + 2] += rs_at[r + 1];
    }
    for (uint32_t t = 0; t < s->nstreams; t++) {
        rs[rs_at[s->streams[t].rank + 1]++] = t;
        last[t] = waited[t] = UINT32_MAX;
    }
    if (db_begin(&b, s, (size_t)per_rank + EXCHANGE_MAX))
        goto done;
    for (uint32_t i = 0; i < s->nops; i++) {
        uint32_t first = db_copy(&b, s, i);
        sim_op *o = &s->ops[i];
        int kind = sim_sched_payload_of(s, i)->kind, r = sim_sched_rank_of(s, i);
        if (kind == SIM_OP_MEMORY)
            continue;
        if (kind == SIM_OP_SEND || kind == SIM_OP_RECV) {
            if (closed[r] || nx[r] == EXCHANGE_MAX) { /* a new exchange */
                nx[r] = closed[r] = 0;
                xid[r]++;
            }
            /* not on the exchange's own sends and receives: posted together */
            for (uint32_t k = rs_at[r]; k < rs_at[r + 1]; k++)
                if (rs[k] != o->stream)
                    db_add(&b, o, first, last[rs[k]]);
            xch[(size_t)r * EXCHANGE_MAX + nx[r]++] = i;
            continue;
        }
        closed[r] = nx[r] > 0;
        if (nx[r] > 0 && waited[o->stream] != xid[r]) { /* once a stream: its later ops follow it */
            for (int k = 0; k < nx[r]; k++) {
                uint32_t x = xch[(size_t)r * EXCHANGE_MAX + k];
                if (s->ops[x].stream != o->stream)
                    db_add(&b, o, first, x);
            }
            waited[o->stream] = xid[r];
        }
        last[o->stream] = i;
    }
    db_end(&b, s);
    rc = 0;
done:
    free(rs_at), free(rs), free(last), free(waited), free(xch), free(xid), free(nx), free(closed);
    return rc;
}

int sim_sched_chain_host(sim_schedule *s, sim_host_sync how)
{
    return how == SIM_HOST_LAUNCH_BLOCKING ? chain_launches(s) : chain_exchanges(s);
}

static sim_payload payload_init(sim_schedule *s, sim_op_kind kind, int sub, const char *name)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = (uint8_t)kind;
    p.sub = (uint8_t)sub;
    p.name = sim_sched_str(s, name);
    return p;
}

uint32_t sim_sched_gemm(sim_schedule *s, int stream, const char *name, int64_t m, int64_t n, int64_t k,
                        int64_t batch, sim_dtype dt, sim_tags t, const uint32_t *deps, int ndeps)
{
    return sim_sched_kernel(s, stream, name, SIM_KERNEL_GEMM, m, n, k, batch, 0, dt, t, deps, ndeps);
}

uint32_t sim_sched_kernel(sim_schedule *s, int stream, const char *name, sim_kernel kind, int64_t m,
                          int64_t n, int64_t k, int64_t batch, int64_t bytes, sim_dtype dt, sim_tags t,
                          const uint32_t *deps, int ndeps)
{
    sim_payload p = payload_init(s, SIM_OP_COMPUTE, kind, name);
    p.dtype = (uint8_t)dt;
    p.m = m;
    p.n = n;
    p.k = k;
    p.batch = batch;
    p.bytes = bytes;
    return sim_sched_add(s, stream, sim_sched_payload(s, &p), -1, t, deps, ndeps);
}

uint32_t sim_sched_collective(sim_schedule *s, int stream, const char *name, sim_coll c, int comm,
                              int64_t bytes, int root, sim_tags t, const uint32_t *deps, int ndeps)
{
    sim_payload p = payload_init(s, SIM_OP_COLLECTIVE, c, name);
    p.bytes = bytes;
    p.root = root;
    return sim_sched_add(s, stream, sim_sched_payload(s, &p), comm, t, deps, ndeps);
}

uint32_t sim_sched_sizes(sim_schedule *s, const int64_t *v, int n)
{
    s->sizes = grow(s->sizes, &s->sizes_cap, s->nsizes + (uint32_t)n, sizeof *s->sizes);
    uint32_t at = s->nsizes;
    if (n > 0)
        memcpy(&s->sizes[at], v, (size_t)n * sizeof *v);
    s->nsizes += (uint32_t)n;
    return at;
}

uint32_t sim_sched_alltoallv_payload(sim_schedule *s, const char *name, const int64_t *send_bytes, int n)
{
    sim_payload p = payload_init(s, SIM_OP_COLLECTIVE, SIM_COLL_ALLTOALLV, name);
    p.m = sim_sched_sizes(s, send_bytes, n);
    p.n = n;
    for (int j = 0; j < n; j++)
        p.bytes += send_bytes[j];
    return sim_sched_payload(s, &p);
}

uint32_t sim_sched_alltoallv(sim_schedule *s, int stream, const char *name, int comm, const int64_t *send_bytes,
                             sim_tags t, const uint32_t *deps, int ndeps)
{
    uint32_t pay = sim_sched_alltoallv_payload(s, name, send_bytes, s->comms[comm].nranks);
    return sim_sched_add(s, stream, pay, comm, t, deps, ndeps);
}

uint32_t sim_sched_copy_payload(sim_schedule *dst, const sim_schedule *src, uint32_t payload)
{
    sim_payload p = src->payloads[payload];
    const char *name = p.name >= 0 ? sim_sched_strname(src, p.name) : NULL;
    p.name = name ? sim_sched_str(dst, name) : -1;
    if (p.kind == SIM_OP_COLLECTIVE && p.sub == SIM_COLL_ALLTOALLV)
        p.m = sim_sched_sizes(dst, sim_sched_sizes_of(src, &src->payloads[payload]), (int)p.n);
    return sim_sched_payload(dst, &p);
}

int sim_sched_place(sim_schedule *dst, const sim_schedule *src, const int *map, const char *prefix, sim_err *err)
{
    for (int r = 0; r < src->nranks; r++)
        if (map[r] < 0 || map[r] >= dst->nranks)
            return sim_errf(err, "%srank %d placed on rank %d, outside the %d ranks", prefix, r, map[r], dst->nranks);
    char name[SIM_NAME_MAX + 64];
    uint32_t *stream = sim_xcalloc(src->nstreams + 1, sizeof *stream, "the placed streams");
    for (uint32_t i = 0; i < src->nstreams; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, sim_sched_strname(src, src->streams[i].name));
        stream[i] = (uint32_t)sim_sched_stream_role(dst, map[src->streams[i].rank], name, src->streams[i].role);
    }
    int comm0 = dst->ncomms;
    for (int c = 0; c < src->ncomms; c++) {
        const sim_comm *sc = &src->comms[c];
        int *members = sim_xcalloc((size_t)sc->nranks + 1, sizeof *members, "a placed communicator");
        for (int k = 0; k < sc->nranks; k++)
            members[k] = map[sc->ranks[k]];
        snprintf(name, sizeof name, "%s%s", prefix, sc->name >= 0 ? sim_sched_strname(src, sc->name) : "comm");
        int c2 = sim_sched_comm(dst, name, members, sc->nranks);
        dst->comms[c2].whole_ranks = sc->whole_ranks;
        dst->comms[c2].whole_nodes = sc->whole_nodes;
        free(members);
    }
    uint32_t base = dst->nops, *deps = NULL;
    size_t deps_cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < src->nops && rc == 0; i++) {
        const sim_op *o = &src->ops[i];
        if (o->ndeps > deps_cap) {
            deps_cap = o->ndeps;
            free(deps);
            deps = sim_xcalloc(deps_cap, sizeof *deps, "the placed dependencies");
        }
        for (uint32_t k = 0; k < o->ndeps && rc == 0; k++) {
            uint32_t d = src->deps[o->dep_first + k];
            if (d >= src->nops) /* a later op is fine: ops keep their ids, offset by base */
                rc = sim_errf(err, "%sop %u depends on op %u, which does not exist", prefix, i, d);
            deps[k] = base + d;
        }
        const sim_payload *p = &src->payloads[o->payload];
        int32_t arg = o->arg;
        if (p->kind == SIM_OP_COLLECTIVE)
            arg = comm0 + o->arg;
        else if (p->kind == SIM_OP_SEND || p->kind == SIM_OP_RECV)
            arg = map[o->arg];
        sim_tags t = {o->layer, o->micro, o->subbatch, o->phase};
        if (rc == 0)
            sim_sched_add(dst, (int)stream[o->stream], sim_sched_copy_payload(dst, src, o->payload), arg, t, deps,
                          o->ndeps);
    }
    free(deps);
    free(stream);
    return rc;
}

static uint32_t p2p(sim_schedule *s, sim_op_kind kind, int stream, const char *name, int peer, int64_t bytes,
                    int tag, sim_tags t, const uint32_t *deps, int ndeps)
{
    sim_payload p = payload_init(s, kind, 0, name);
    p.bytes = bytes;
    p.tag = tag;
    return sim_sched_add(s, stream, sim_sched_payload(s, &p), peer, t, deps, ndeps);
}

uint32_t sim_sched_send(sim_schedule *s, int stream, const char *name, int peer, int64_t bytes, int tag,
                        sim_tags t, const uint32_t *deps, int ndeps)
{
    return p2p(s, SIM_OP_SEND, stream, name, peer, bytes, tag, t, deps, ndeps);
}

uint32_t sim_sched_recv(sim_schedule *s, int stream, const char *name, int peer, int64_t bytes, int tag,
                        sim_tags t, const uint32_t *deps, int ndeps)
{
    return p2p(s, SIM_OP_RECV, stream, name, peer, bytes, tag, t, deps, ndeps);
}

/* ---- names ------------------------------------------------------------ */

static const char *op_kind_names[] = {"compute", "collective", "send", "recv", "memory"};
static const char *kernel_names[] = {"gemm",      "attention", "elementwise", "optimizer",    "fixed",
                                     "flash_fwd", "flash_bwd", "delay",       "attention_bwd"};
static const char *coll_names[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce",
                                    "alltoallv"};
static const char *algo_names[] = {"auto", "ring", "tree", "hierarchical", "nvls"};
static const char *mem_names[] = {"weights", "gradients", "optimizer", "activations", "buffers", "context"};
static const char *role_names[] = {"", "compute", "tp", "cp", "dp", "pp", "ep"};
static const char *phase_names[] = {"none", "forward", "backward", "recompute", "optimizer"};
static const char *attn_impl_names[] = {"flash", "flash2", "flash1", "flash-triton"};

#define NAME_OF(table, i) (((i) >= 0 && (size_t)(i) < sizeof table / sizeof table[0]) ? table[i] : "?")
const char *sim_op_kind_name(int k) { return NAME_OF(op_kind_names, k); }
const char *sim_kernel_name(int k) { return NAME_OF(kernel_names, k); }
const char *sim_coll_name(int c) { return NAME_OF(coll_names, c); }
const char *sim_algo_name(int a) { return NAME_OF(algo_names, a); }
const char *sim_mem_kind_name(int k) { return NAME_OF(mem_names, k); }
const char *sim_role_name(int r) { return NAME_OF(role_names, r); }
const char *sim_phase_name(int p) { return NAME_OF(phase_names, p); }
const char *sim_attn_impl_name(int i) { return NAME_OF(attn_impl_names, i); }

const char *sim_sched_op_label(const sim_schedule *s, uint32_t op)
{
    const sim_payload *p = sim_sched_payload_of(s, op);
    if (p->name >= 0)
        return sim_sched_strname(s, p->name);
    switch (p->kind) {
    case SIM_OP_COMPUTE: return sim_kernel_name(p->sub);
    case SIM_OP_COLLECTIVE: return sim_coll_name(p->sub);
    case SIM_OP_MEMORY: return sim_mem_kind_name(p->sub);
    default: return sim_op_kind_name(p->kind);
    }
}

void sim_sched_describe(const sim_schedule *s, uint32_t op, char *buf, size_t len)
{
    const sim_op *o = &s->ops[op];
    const sim_stream *st = &s->streams[o->stream];
    uint32_t pos = o->seq;
    int w = snprintf(buf, len, "rank %d stream \"%s\" op %u (#%u on the stream: %s", st->rank,
                     sim_sched_strname(s, st->name), op, pos, sim_sched_op_label(s, op));
    if (o->layer >= 0 && w > 0 && (size_t)w < len)
        w += snprintf(buf + w, len - (size_t)w, ", layer %d", o->layer);
    if (o->micro >= 0 && w > 0 && (size_t)w < len)
        w += snprintf(buf + w, len - (size_t)w, ", micro-batch %d", o->micro);
    if (o->phase != SIM_PHASE_NONE && w > 0 && (size_t)w < len)
        w += snprintf(buf + w, len - (size_t)w, ", %s", sim_phase_name(o->phase));
    if (w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, ")");
}
