/* import_et.c — an execution trace joined to its Kineto trace (et.h).
 *
 * The link is Chakra's (trace_link): an ET node and a Kineto host op are the
 * same operator when the node's rf_id is the op's "Record function id"
 * (PyTorch >= 2.2 traces).  Older traces lack that field; there the ET
 * holds every op of each host thread in rf_id order, which is the order of
 * the thread's Kineto ops by "External id" (checked on the DLRM traces: all
 * 1,672 ops of each rank, name for name), so the ET's sequence of a thread
 * is found, name for name, in one of the trace's threads.  A kernel then
 * belongs to the ET node of the innermost host op around its launch
 * (kineto.c), and gains from the node and its ancestors what the trace
 * lacks:
 *   - a GEMM shape (aten::mm/addmm/bmm/baddbmm with input shapes), through
 *     kineto.c's own rule;
 *   - element-wise bytes of a memory-bound op: the pointwise ops of
 *     kineto.c's table and a few more that read whole tensors (addcmul,
 *     addcdiv, cat, sum), the read arguments' bytes plus the outputs'
 *     bytes: the ET records output shapes, so broadcasting needs no guess;
 *   - from the record_param_comms above an NCCL kernel: the all-to-all's
 *     splits, the process group's ranks, a send's or receive's peer and
 *     size.
 * An op whose Kineto "Input Dims" differ from the ET node's input shapes
 * means the ET is of another step (or rank): refused, not joined. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "et.h"
#include "sim/alloc.h"
#include "sim/schedule.h"

/* Memory-bound ops the ET prices beyond kineto.c's pointwise table:
 * arguments read (-3: every tensor of the first, a list). */
static const struct {
    const char *name;
    int reads;
} MEMBOUND[] = {
    {"aten::addcmul", 3}, {"aten::addcmul_", 3}, {"aten::addcdiv", 3}, {"aten::addcdiv_", 3},
    {"aten::lerp", 3},    {"aten::lerp_", 3},    {"aten::cat", 1},     {"aten::sum", 1},
    {"aten::mean", 1},
};

static int reads_of(const char *op)
{
    int a = wl_kineto_pointwise_arity(op);
    for (size_t i = 0; a == -2 && i < sizeof MEMBOUND / sizeof MEMBOUND[0]; i++)
        if (!strcmp(op, MEMBOUND[i].name))
            a = MEMBOUND[i].reads;
    return a;
}

/* Bytes a memory-bound op moves, from its node; 0 when unknown. */
static int64_t node_bytes(const wl_et_node *n)
{
    int a = reads_of(n->name);
    if (a == -2)
        return 0;
    double rd = 0;
    for (int i = 0; i < n->nargs; i++)
        if (i < a || (a == -1 && i == 1))
            rd += n->arg_bytes[i];
    double wr = n->out_bytes > 0 ? n->out_bytes : n->nargs ? n->arg_bytes[0] : 0;
    double b = rd + wr;
    return b > 0 && b <= (double)SIM_MAX_BYTES ? (int64_t)b : 0;
}

typedef struct joiner {
    wl_et *et;
    const wl_kineto *t;
    const char *ep, *tp;
    const wl_et_node **of; /* [host ops]: the ET node of each, or NULL */
    sim_err *err;
} joiner;

static int is_annotation(const char *name) { return !strncmp(name, "[pytorch|profiler|execution_", 28); }

static int cmp_rf_only(const void *a, const void *b)
{
    const wl_et_node *x = *(const wl_et_node *const *)a, *y = *(const wl_et_node *const *)b;
    return (x->rf_id > y->rf_id) - (x->rf_id < y->rf_id);
}

/* By "Record function id": every op that has one must find its node. */
static int link_by_rf(joiner *J, wl_et_stats *st)
{
    int n = wl_et_nnodes(J->et), no = wl_kineto_nops(J->t);
    const wl_et_node **byrf = sim_xcalloc((size_t)n + 1, sizeof *byrf, "the join");
    int m = 0;
    for (int i = 0; i < n; i++)
        if (wl_et_node_at(J->et, i)->rf_id >= 0 && !is_annotation(wl_et_node_at(J->et, i)->name))
            byrf[m++] = wl_et_node_at(J->et, i);
    if (m > 1)
        qsort(byrf, (size_t)m, sizeof *byrf, cmp_rf_only);
    int rc = 0;
    for (int o = 0; o < no && !rc; o++) {
        const wl_host_op *h = wl_kineto_op(J->t, o);
        if (h->rf_id < 0)
            continue;
        wl_et_node key = {.rf_id = h->rf_id};
        const wl_et_node *kp = &key, **f = m ? bsearch(&kp, byrf, (size_t)m, sizeof *byrf, cmp_rf_only) : NULL;
        const wl_et_node *x = f ? *f : NULL;
        if (x && strcmp(x->name, h->name))
            rc = sim_errf(J->err, "%s: node rf_id %lld is %s, but %s's op with that Record function id is %s: the "
                          "execution trace of another step or rank", J->ep, (long long)h->rf_id, x->name, J->tp,
                          h->name);
        J->of[o] = x;
        st->linked += x != NULL;
    }
    free(byrf);
    if (!rc && !st->linked)
        rc = sim_errf(J->err, "%s: no node's rf_id matches a Record function id of %s: the execution trace of "
                      "another run", J->ep, J->tp);
    return rc;
}

static int cmp_rf(const void *a, const void *b)
{
    const wl_et_node *x = *(const wl_et_node *const *)a, *y = *(const wl_et_node *const *)b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->rf_id > y->rf_id) - (x->rf_id < y->rf_id);
}

typedef struct hop {
    const wl_host_op *h;
    int i;
} hop;

static int cmp_hop(const void *a, const void *b)
{
    const hop *x = a, *y = b;
    if (x->h->tid != y->h->tid)
        return x->h->tid < y->h->tid ? -1 : 1;
    if (x->h->ext_id != y->h->ext_id)
        return x->h->ext_id < y->h->ext_id ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The start in H[lo..hi) where the names of E[0..m) follow one another, -1. */
static int find_run(const hop *H, int lo, int hi, const wl_et_node *const *E, int m)
{
    for (int s = lo; s + m <= hi; s++) {
        int k = 0;
        while (k < m && !strcmp(H[s + k].h->name, E[k]->name))
            k++;
        if (k == m)
            return s;
    }
    return -1;
}

/* By order: each ET thread's ops, name for name, in one trace thread. */
static int link_by_order(joiner *J, wl_et_stats *st)
{
    int n = wl_et_nnodes(J->et), no = wl_kineto_nops(J->t), m = 0;
    const wl_et_node **E = sim_xcalloc((size_t)n + 1, sizeof *E, "the join");
    hop *H = sim_xcalloc((size_t)no + 1, sizeof *H, "the join");
    unsigned char *used = sim_xcalloc((size_t)no + 1, 1, "the join");
    for (int i = 0; i < n; i++)
        if (!is_annotation(wl_et_node_at(J->et, i)->name))
            E[m++] = wl_et_node_at(J->et, i);
    if (m > 1)
        qsort(E, (size_t)m, sizeof *E, cmp_rf);
    for (int o = 0; o < no; o++)
        H[o] = (hop){wl_kineto_op(J->t, o), o};
    if (no > 1)
        qsort(H, (size_t)no, sizeof *H, cmp_hop);
    int rc = 0;
    for (int a = 0; a < m && !rc;) {
        int b = a;
        while (b < m && E[b]->tid == E[a]->tid)
            b++;
        int s = -1;
        for (int lo = 0; lo < no && s < 0;) { /* each trace thread not yet used */
            int hi = lo;
            while (hi < no && H[hi].h->tid == H[lo].h->tid)
                hi++;
            if (!used[lo])
                s = find_run(H, lo, hi, E + a, b - a);
            if (s >= 0)
                used[lo] = 1;
            lo = hi;
        }
        if (s < 0)
            rc = sim_errf(J->err, "%s: the %d operators of its host thread %lld (%s, ...) do not run in that order on "
                          "any host thread of %s: the execution trace of another step, rank or program", J->ep, b - a,
                          (long long)E[a]->tid, E[a]->name, J->tp);
        for (int k = 0; s >= 0 && k < b - a; k++)
            J->of[H[s + k].i] = E[a + k];
        st->linked += s >= 0 ? b - a : 0;
        a = b;
    }
    free(E);
    free(H);
    free(used);
    return rc;
}

/* Input shapes recorded by both must agree (tensors only). */
static int check_shapes(joiner *J)
{
    int rc = 0;
    for (int o = 0; o < wl_kineto_nops(J->t) && !rc; o++) {
        const wl_host_op *h = wl_kineto_op(J->t, o);
        const wl_et_node *x = J->of[o];
        if (!x || !h->dims || !x->in_dims || !x->in_types)
            continue;
        cJSON *kd = cJSON_Parse(h->dims), *ed = cJSON_Parse(x->in_dims), *ty = cJSON_Parse(x->in_types);
        int i = 0;
        for (const cJSON *a = kd ? kd->child : NULL; a && !rc; a = a->next, i++) {
            const cJSON *b = cJSON_GetArrayItem(ed, i), *t = cJSON_GetArrayItem(ty, i);
            if (!cJSON_IsString(t) || strncmp(t->valuestring, "Tensor(", 7) || !cJSON_IsArray(b) ||
                !cJSON_GetArraySize(a) || cJSON_Compare(a, b, 1))
                continue;
            char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
            rc = sim_errf(J->err, "%s: %s (rf_id %lld) has input %d of shape %s, but %s recorded %s for it: the "
                          "execution trace of another step or rank", J->ep, x->name, (long long)x->rf_id, i, sb,
                          J->tp, sa);
            free(sa);
            free(sb);
        }
        cJSON_Delete(kd);
        cJSON_Delete(ed);
        cJSON_Delete(ty);
    }
    return rc;
}

static const wl_et_node *ancestor(const wl_et *et, const wl_et_node *x, int (*want)(const wl_et_node *), int depth)
{
    for (int d = 0; x && d <= depth; d++, x = x->parent >= 0 && x->parent != x->id ? wl_et_find(et, x->parent) : NULL)
        if (want(x))
            return x;
    return NULL;
}

static int is_comm(const wl_et_node *x) { return x->comm && strcmp(x->coll, "wait"); }
static int is_gemm(const wl_et_node *x)
{
    return !strcmp(x->name, "aten::mm") || !strcmp(x->name, "aten::addmm") || !strcmp(x->name, "aten::bmm") ||
           !strcmp(x->name, "aten::baddbmm");
}

static const char *list_text(wl_et *et, const int *v, int n)
{
    char buf[SIM_MAX_GPUS * 8 + 4];
    size_t l = 0;
    buf[l++] = '[';
    for (int i = 0; i < n && l + 16 < sizeof buf; i++)
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%d", i ? ", " : "", v[i]);
    snprintf(buf + l, sizeof buf - l, "]");
    return wl_et_keep(et, buf);
}

/* What a record_param_comms adds to an NCCL kernel. */
static int nccl_from(joiner *J, wl_kernel *k, const wl_et_node *c, int nranks, int *ranks, wl_et_stats *st)
{
    int g = wl_et_group_ranks(J->et, c, ranks, nranks);
    if (g < 0)
        return sim_errf(J->err, "%s: %s (rf_id %lld): its process group names ranks outside the %d of the job",
                        J->ep, c->coll, (long long)c->rf_id, nranks);
    int p2p = !strcmp(c->coll, "send") ? WL_P2P_SEND : !strcmp(c->coll, "recv") ? WL_P2P_RECV : WL_P2P_NONE;
    if (k->coll < 0 && p2p && k->peer < 0) {
        int64_t peer = c->peer;
        if (peer >= 0 && g > 0)
            peer = peer < g ? ranks[peer] : -1;
        if (peer >= 0 && peer < nranks) {
            k->p2p = p2p;
            k->peer = (int)peer;
            st->peers++;
        }
        if (k->bytes <= 0 && c->in_nelems > 0 && c->elem_size > 0)
            k->bytes = c->in_nelems * c->elem_size;
        return 0;
    }
    if (g > 0) {
        st->groups++;
        int world = g == nranks;
        for (int i = 0; world && i < g; i++)
            world = ranks[i] == i;
        if (!k->pg_ranks && !world) {
            k->pg_ranks = list_text(J->et, ranks, g);
            k->group_size = g;
        }
    }
    if (k->coll == SIM_COLL_ALLTOALL && !k->in_splits && c->in_splits && c->elem_size > 0) {
        int64_t v[SIM_MAX_GPUS], sum = 0;
        const char *p = c->in_splits + 1;
        int n = 0;
        for (char *end; n < SIM_MAX_GPUS; p = end) {
            while (*p == ' ' || *p == ',')
                p++;
            v[n] = strtoll(p, &end, 10);
            if (end == p)
                break;
            sum += v[n++];
        }
        if (k->bytes > 0 && sum * c->elem_size != k->bytes)
            return sim_errf(J->err, "%s: all-to-all (rf_id %lld) splits %s add up to %lld bytes, but %s's kernel at "
                            "%.0f us sends %lld: the execution trace of another step or rank", J->ep,
                            (long long)c->rf_id, c->in_splits, (long long)(sum * c->elem_size), J->tp, k->ts_us,
                            (long long)k->bytes);
        k->in_splits = c->in_splits;
        k->elem_size = c->elem_size;
        st->splits++;
    }
    return 0;
}

static int enrich(joiner *J, wl_kernel *K, int nk, int nranks, wl_et_stats *st)
{
    int base = 0, rc = 0;
    for (int i = 0; i < nk; i++)
        base = K[i].op_index >= base ? K[i].op_index + 1 : base;
    int *ranks = sim_xcalloc((size_t)nranks + 1, sizeof *ranks, "the join");
    for (int i = 0; i < nk && !rc; i++) {
        wl_kernel *k = &K[i];
        const wl_et_node *x = k->host_op >= 0 ? J->of[k->host_op] : NULL, *a;
        if (!x)
            continue;
        if (k->cls == WL_K_NCCL) {
            if ((a = ancestor(J->et, x, is_comm, 3)))
                rc = nccl_from(J, k, a, nranks, ranks, st);
        } else if (k->cls == WL_K_GEMM && !k->has_shape && (a = ancestor(J->et, x, is_gemm, 3))) {
            wl_op_work w;
            char src[512];
            snprintf(src, sizeof src, "%s: %s (rf_id %lld)", J->ep, a->name, (long long)a->rf_id);
            if (wl_kineto_op_work(a->name, a->in_dims, a->in_types, src, &w, J->err) < 0)
                rc = -1;
            else if (w.gemm) {
                k->has_shape = 1;
                k->m = w.m, k->n = w.n, k->k = w.k, k->batch = w.batch, k->dtype = w.dtype;
                k->op = w.op;
                k->op_index = base + k->host_op;
                st->shapes++;
            }
        } else if (k->cls == WL_K_OTHER && k->elem_bytes <= 0) {
            int64_t b = node_bytes(x);
            if (b > 0) {
                k->elem_bytes = b;
                k->op = x->name;
                k->op_index = base + k->host_op;
                st->shapes++;
            }
        }
    }
    free(ranks);
    return rc;
}

/* A linked op in the order the host ran it. */
typedef struct run_op {
    double ts;
    int tid_rank; /* ties: an enclosing op first (it started first or with its child) */
    int node;
} run_op;

static int cmp_run(const void *a, const void *b)
{
    const run_op *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->tid_rank > y->tid_rank) - (x->tid_rank < y->tid_rank);
}

static int is_ancestor(const wl_et *et, const wl_et_node *a, const wl_et_node *x)
{
    for (int d = 0; x && d < 64; d++, x = x->parent >= 0 && x->parent != x->id ? wl_et_find(et, x->parent) : NULL)
        if (x == a)
            return 1;
    return 0;
}

/* Data flow (et.h, wl_et_join's producer): the host ops in the order they
 * ran; an op reading a storage depends on the last op (not one of its own
 * ancestors) that wrote it, through the last kernel launched under it. */
static int *data_flow(joiner *J, const wl_kernel *K, int nk)
{
    const wl_et_node *base = wl_et_node_at(J->et, 0);
    int n = wl_et_nnodes(J->et), no = wl_kineto_nops(J->t);
    int *last_k = sim_xcalloc((size_t)n + 1, sizeof *last_k, "the join"); /* per node: last kernel launched under it */
    int *from = sim_xcalloc((size_t)n + 1, sizeof *from, "the join");     /* per node: the kernel it reads from */
    int *writer = sim_xcalloc((size_t)wl_et_nstorages(J->et) + 1, sizeof *writer, "the join");
    int *prod = sim_xcalloc((size_t)nk + 1, sizeof *prod, "the join");
    for (int i = 0; i < n; i++)
        last_k[i] = from[i] = -1;
    for (int i = 0; i < wl_et_nstorages(J->et); i++)
        writer[i] = -1;
    for (int i = 0; i < nk; i++) {
        prod[i] = -1;
        const wl_et_node *x = K[i].host_op >= 0 ? J->of[K[i].host_op] : NULL;
        for (int d = 0; x && d < 8; d++, x = x->parent >= 0 && x->parent != x->id ? wl_et_find(J->et, x->parent) : NULL) {
            int j = (int)(x - base), *l = &last_k[j];
            if (*l < 0 || K[*l].launch_ts_us < K[i].launch_ts_us)
                *l = i;
        }
    }
    run_op *ops = sim_xcalloc((size_t)no + 1, sizeof *ops, "the join");
    int m = 0;
    for (int o = 0; o < no; o++)
        if (J->of[o])
            ops[m++] = (run_op){wl_kineto_op(J->t, o)->ts_us, o, (int)(J->of[o] - base)};
    if (m > 1)
        qsort(ops, (size_t)m, sizeof *ops, cmp_run);
    for (int i = 0; i < m; i++) {
        const wl_et_node *b = base + ops[i].node;
        for (int r = 0; r < b->nreads; r++) {
            int w = writer[b->reads[r]];
            if (w < 0 || last_k[w] < 0 || is_ancestor(J->et, base + w, b))
                continue;
            int *f = &from[ops[i].node];
            if (*f < 0 || K[*f].launch_ts_us < K[last_k[w]].launch_ts_us)
                *f = last_k[w];
        }
        for (int w = 0; w < b->nwrites; w++)
            writer[b->writes[w]] = ops[i].node;
    }
    for (int i = 0; i < nk; i++) {
        const wl_et_node *x = K[i].host_op >= 0 ? J->of[K[i].host_op] : NULL;
        int f = x ? from[x - base] : -1;
        if (f < 0 && x && x->parent >= 0 && wl_et_find(J->et, x->parent))
            f = from[wl_et_find(J->et, x->parent) - base];
        prod[i] = f != i ? f : -1;
    }
    free(ops);
    free(last_k);
    free(from);
    free(writer);
    return prod;
}

wl_kernel *wl_et_join(wl_et *et, const char *et_path, const wl_kineto *t, const char *trace_path, int nranks,
                      wl_et_stats *st, int **producer, sim_err *err)
{
    memset(st, 0, sizeof *st);
    int64_t ep = wl_et_pid(et), tp = wl_kineto_pid(t);
    if (ep >= 0 && tp >= 0 && ep != tp) {
        sim_errf(err, "%s: recorded by process %lld, but %s's host ops ran in process %lld: the execution trace of "
                 "another rank or run", et_path, (long long)ep, trace_path, (long long)tp);
        return NULL;
    }
    joiner J = {et, t, et_path, trace_path, NULL, err};
    int no = wl_kineto_nops(t), with_rf = 0;
    J.of = sim_xcalloc((size_t)no + 1, sizeof *J.of, "the join");
    for (int o = 0; o < no; o++)
        with_rf += wl_kineto_op(t, o)->rf_id >= 0;
    st->by_rf_id = with_rf > 0;
    int rc = with_rf ? link_by_rf(&J, st) : link_by_order(&J, st);
    if (!rc)
        rc = check_shapes(&J);
    int nk = wl_kineto_nkernels(t);
    wl_kernel *K = sim_xcalloc((size_t)nk + 1, sizeof *K, "the joined kernels");
    for (int i = 0; i < nk; i++)
        K[i] = *wl_kineto_kernel(t, i);
    if (!rc)
        rc = enrich(&J, K, nk, nranks, st);
    *producer = rc ? NULL : data_flow(&J, K, nk);
    free(J.of);
    if (rc) {
        free(K);
        return NULL;
    }
    return K;
}
