/* reshard.c — cross-mesh resharding (papers.md §6.2, AlpaComm).
 *
 * Unit tasks: every tensor dimension is cut at the union of the source's and
 * the destination's chunk boundaries; each resulting tile is one task, with
 * the source devices that hold it and the destination devices that need it
 * (Alpa's ReshardingTaskSpec.dst_tile_to_src_tiles_map).
 *
 * Implementations, as schedules the engine runs:
 *   send_recv            one point-to-point message per (task, receiver),
 *                        holders taken in turn;
 *   send_recv+allgather  for the k receivers of a task on one host, 1/k of
 *                        the tile to each, then an all-gather among them over
 *                        the host's links (Alpa's original local all-gather);
 *   broadcast            one broadcast per task in a communicator of the
 *                        sender and all its receivers (NCCL's pipelined chain:
 *                        each byte crosses each host boundary once);
 *   + loadbalance_size   the sender of each task is a holder on the host
 *                        that has sent the fewest bytes so far (Alpa groups
 *                        the GPUs sharing a NIC into one worker);
 *   + loadbalance_order  task order and senders from a depth-first search
 *                        with pruning over Alpa's evaluation model (a task
 *                        starts when its sender's and receivers' hosts are
 *                        free and occupies them for bytes-many time units),
 *                        bounded to 200,000 nodes instead of Alpa's 1 s so
 *                        the result is deterministic, seeded with the
 *                        size-balanced solution so it is never worse in the
 *                        model.
 * Every rank issues its part of the tasks in one global order, so the
 * messages and collectives cannot deadlock.  Tasks that share no GPU run
 * concurrently; the network model decides how they share the NICs. */
#include "workloads/reshard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "workloads/pipeline.h"

const char *wl_rs_impl_name(int i)
{
    static const char *n[] = {"send_recv", "send_recv+allgather", "broadcast", "broadcast+lb_size",
                              "broadcast+lb_order"};
    return (unsigned)i < WL_RS_IMPL_COUNT ? n[i] : "?";
}

/* ---- tiles -------------------------------------------------------------- */

static int mesh_size(const wl_mesh *m) { return m->nodes * m->gpus; }

static int mesh_rank(const wl_mesh *me, const sim_machine *m, int i)
{
    int node = me->first_node + i / me->gpus, g = i % me->gpus, seen = 0;
    for (int r = 0; r < m->ngpus; r++)
        if (m->node[r] == node && seen++ == g)
            return r;
    return -1;
}

/* Chunk index per dimension of device i of a mesh. */
static void device_chunks(const wl_shard_spec *sp, int ndims, int i, int *idx)
{
    for (int d = 0; d < ndims; d++)
        idx[d] = 0;
    for (int a = sp->nax - 1; a >= 0; a--) {
        int digit = i % sp->ax_size[a];
        i /= sp->ax_size[a];
        if (sp->ax_dim[a] >= 0)
            idx[sp->ax_dim[a]] = digit;
    }
}

static int64_t bound(int64_t shape, int chunks, int k) { return shape * k / chunks; }

static void tile_of(const wl_reshard_case *c, const wl_shard_spec *sp, int i, int64_t *lo, int64_t *hi)
{
    int idx[WL_RS_MAXDIM];
    device_chunks(sp, c->ndims, i, idx);
    for (int d = 0; d < c->ndims; d++) {
        lo[d] = bound(c->shape[d], sp->chunks[d], idx[d]);
        hi[d] = bound(c->shape[d], sp->chunks[d], idx[d] + 1);
    }
}

static int check_spec(const wl_reshard_case *c, const wl_shard_spec *sp, const wl_mesh *me, const char *which,
                      sim_err *err)
{
    int prod = 1;
    for (int a = 0; a < sp->nax; a++) {
        prod *= sp->ax_size[a];
        int d = sp->ax_dim[a];
        if (d >= c->ndims || (d >= 0 && sp->chunks[d] != sp->ax_size[a]))
            return sim_errf(err, "reshard %s: %s spec: mesh axis %d shards dimension %d into %d but the dimension has %d chunks",
                            c->name, which, a, d, sp->ax_size[a], d >= 0 && d < c->ndims ? sp->chunks[d] : 0);
    }
    if (prod != mesh_size(me))
        return sim_errf(err, "reshard %s: %s spec covers %d devices but the mesh (%d,%d) has %d", c->name, which, prod,
                        me->nodes, me->gpus, mesh_size(me));
    return 0;
}

int wl_reshard_dst_tile(const wl_reshard_case *c, const sim_machine *m, int rank, int64_t *lo, int64_t *hi)
{
    for (int i = 0; i < mesh_size(&c->dst); i++)
        if (mesh_rank(&c->dst, m, i) == rank) {
            tile_of(c, &c->dst_spec, i, lo, hi);
            return 1;
        }
    return 0;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int wl_reshard_tasks(const wl_reshard_case *c, const sim_machine *m, wl_rs_tasks *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    if (check_spec(c, &c->src_spec, &c->src, "source", err) < 0 ||
        check_spec(c, &c->dst_spec, &c->dst, "destination", err) < 0)
        return -1;
    int ns = mesh_size(&c->src), nd = mesh_size(&c->dst);
    int *sr = malloc(sizeof(int) * (size_t)(ns + nd)), *dr = sr + ns;
    for (int i = 0; i < ns; i++)
        sr[i] = mesh_rank(&c->src, m, i);
    for (int i = 0; i < nd; i++)
        dr[i] = mesh_rank(&c->dst, m, i);
    for (int i = 0; i < ns + nd; i++)
        if (sr[i] < 0) {
            free(sr);
            return sim_errf(err, "reshard %s: the meshes need nodes %d..%d with %d GPUs each; platform %s has %d nodes",
                            c->name, c->src.first_node, c->dst.first_node + c->dst.nodes - 1,
                            c->src.gpus > c->dst.gpus ? c->src.gpus : c->dst.gpus, m->name, m->nnodes);
        }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nd; j++)
            if (sr[i] == dr[j]) {
                int both = sr[i];
                free(sr);
                return sim_errf(err, "reshard %s: GPU %d is in both meshes; cross-mesh resharding needs disjoint meshes",
                                c->name, both);
            }
    /* union boundaries per dimension */
    int64_t *cuts[WL_RS_MAXDIM];
    int ncuts[WL_RS_MAXDIM];
    int total = 1;
    for (int d = 0; d < c->ndims; d++) {
        int a = c->src_spec.chunks[d], b = c->dst_spec.chunks[d];
        cuts[d] = malloc(sizeof(int64_t) * (size_t)(a + b + 2));
        int k = 0;
        for (int i = 0; i <= a; i++)
            cuts[d][k++] = bound(c->shape[d], a, i);
        for (int i = 0; i <= b; i++)
            cuts[d][k++] = bound(c->shape[d], b, i);
        qsort(cuts[d], (size_t)k, sizeof(int64_t), cmp64);
        int u = 0;
        for (int i = 0; i < k; i++)
            if (!u || cuts[d][i] != cuts[d][u - 1])
                cuts[d][u++] = cuts[d][i];
        ncuts[d] = u - 1; /* intervals */
        total *= ncuts[d];
    }
    out->t = calloc((size_t)total, sizeof *out->t);
    int64_t lo[WL_RS_MAXDIM], hi[WL_RS_MAXDIM];
    for (int k = 0; k < total; k++) {
        wl_rs_task *t = &out->t[out->n];
        int rem = k;
        t->bytes = c->elem_bytes;
        for (int d = c->ndims - 1; d >= 0; d--) {
            int i = rem % ncuts[d];
            rem /= ncuts[d];
            t->lo[d] = cuts[d][i];
            t->hi[d] = cuts[d][i + 1];
            t->bytes *= t->hi[d] - t->lo[d];
        }
        t->src = malloc(sizeof(int) * (size_t)(ns + nd));
        t->dst = t->src + ns;
        for (int pass = 0; pass < 2; pass++) {
            const wl_shard_spec *sp = pass ? &c->dst_spec : &c->src_spec;
            int n = pass ? nd : ns;
            for (int i = 0; i < n; i++) {
                tile_of(c, sp, i, lo, hi);
                int inside = 1;
                for (int d = 0; d < c->ndims; d++)
                    inside &= lo[d] <= t->lo[d] && t->hi[d] <= hi[d];
                if (!inside)
                    continue;
                if (pass)
                    t->dst[t->ndst++] = dr[i];
                else
                    t->src[t->nsrc++] = sr[i];
            }
        }
        if (t->ndst == 0) { /* no receiver needs it: nothing to move */
            free(t->src);
            memset(t, 0, sizeof *t);
            continue;
        }
        out->n++;
    }
    for (int d = 0; d < c->ndims; d++)
        free(cuts[d]);
    free(sr);
    return 0;
}

void wl_reshard_tasks_free(wl_rs_tasks *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->t[i].src);
    free(t->t);
    memset(t, 0, sizeof *t);
}

/* ---- load balancing ----------------------------------------------------- */

typedef struct lb {
    const wl_rs_tasks *T;
    const sim_machine *m;
    int nn;                 /* nodes */
    double *free_at;        /* per node */
    int *order, *sender;    /* current partial solution */
    int *best_order, *best_sender;
    double best;
    unsigned char *done;
    double *remain;         /* per node: bytes of unscheduled tasks it receives */
    long nodes_left;
} lb;

static int task_start(const lb *L, int t, int s, double *start)
{
    const wl_rs_task *k = &L->T->t[t];
    double st = L->free_at[L->m->node[s]];
    for (int i = 0; i < k->ndst; i++)
        st = fmax(st, L->free_at[L->m->node[k->dst[i]]]);
    *start = st;
    return 0;
}

static void occupy(lb *L, int t, int s, double end, double *saved)
{
    const wl_rs_task *k = &L->T->t[t];
    for (int i = 0; i < L->nn; i++)
        saved[i] = L->free_at[i];
    L->free_at[L->m->node[s]] = end;
    for (int i = 0; i < k->ndst; i++)
        L->free_at[L->m->node[k->dst[i]]] = end;
}

static void dfs(lb *L, int depth, double makespan)
{
    int n = L->T->n;
    if (L->nodes_left-- <= 0)
        return;
    if (depth == n) {
        if (makespan < L->best) {
            L->best = makespan;
            memcpy(L->best_order, L->order, sizeof(int) * (size_t)n);
            memcpy(L->best_sender, L->sender, sizeof(int) * (size_t)n);
        }
        return;
    }
    double lbnd = makespan;
    for (int i = 0; i < L->nn; i++)
        lbnd = fmax(lbnd, L->free_at[i] + L->remain[i]);
    if (lbnd >= L->best)
        return;
    /* children by earliest finish first, so good solutions come early */
    int cap = n * 8, nc = 0;
    struct cand {
        double end;
        int t, s;
    } *cs = malloc(sizeof *cs * (size_t)cap);
    for (int t = 0; t < n; t++) {
        if (L->done[t])
            continue;
        const wl_rs_task *k = &L->T->t[t];
        for (int i = 0; i < k->nsrc; i++) {
            int dup = 0; /* holders on one node are the same worker */
            for (int j = 0; j < i && !dup; j++)
                dup = L->m->node[k->src[j]] == L->m->node[k->src[i]];
            if (dup)
                continue;
            double st;
            task_start(L, t, k->src[i], &st);
            if (nc == cap)
                cs = realloc(cs, sizeof *cs * (size_t)(cap *= 2));
            cs[nc++] = (struct cand){st + (double)k->bytes, t, k->src[i]};
        }
    }
    for (int a = 1; a < nc; a++) /* insertion sort: stable, deterministic */
        for (int b = a; b > 0 && cs[b].end < cs[b - 1].end; b--) {
            struct cand x = cs[b];
            cs[b] = cs[b - 1];
            cs[b - 1] = x;
        }
    double *saved = malloc(sizeof(double) * (size_t)L->nn);
    for (int i = 0; i < nc && L->nodes_left > 0; i++) {
        int t = cs[i].t;
        const wl_rs_task *k = &L->T->t[t];
        occupy(L, t, cs[i].s, cs[i].end, saved);
        L->done[t] = 1;
        for (int r = 0; r < k->ndst; r++) /* each receiving node once */
            ;
        int seen_nodes[64], ns = 0;
        for (int r = 0; r < k->ndst; r++) {
            int nd = L->m->node[k->dst[r]], dup = 0;
            for (int q = 0; q < ns && !dup; q++)
                dup = seen_nodes[q] == nd;
            if (!dup && ns < 64) {
                seen_nodes[ns++] = nd;
                L->remain[nd] -= (double)k->bytes;
            }
        }
        L->order[depth] = t;
        L->sender[depth] = cs[i].s;
        dfs(L, depth + 1, fmax(makespan, cs[i].end));
        for (int q = 0; q < ns; q++)
            L->remain[seen_nodes[q]] += (double)k->bytes;
        L->done[t] = 0;
        memcpy(L->free_at, saved, sizeof(double) * (size_t)L->nn);
    }
    free(saved);
    free(cs);
}

/* Model makespan of tasks in `order` with `sender`. */
static double evaluate(lb *L, const int *order, const int *sender)
{
    for (int i = 0; i < L->nn; i++)
        L->free_at[i] = 0;
    double mk = 0, *saved = malloc(sizeof(double) * (size_t)L->nn), st;
    for (int i = 0; i < L->T->n; i++) {
        task_start(L, order[i], sender[i], &st);
        double end = st + (double)L->T->t[order[i]].bytes;
        occupy(L, order[i], sender[i], end, saved);
        mk = fmax(mk, end);
    }
    free(saved);
    return mk;
}

/* Fills order[] and sender[] (sender of order[i]) for an implementation. */
static void choose(const wl_rs_tasks *T, const sim_machine *m, wl_rs_impl impl, int *order, int *sender)
{
    int n = T->n;
    for (int i = 0; i < n; i++) {
        order[i] = i;
        sender[i] = T->t[i].src[0];
    }
    if (impl != WL_RS_BROADCAST_LB_SIZE && impl != WL_RS_BROADCAST_LB_ORDER)
        return;
    double *load = calloc((size_t)m->nnodes, sizeof *load);
    for (int i = 0; i < n; i++) {
        const wl_rs_task *k = &T->t[i];
        int best = k->src[0];
        for (int j = 1; j < k->nsrc; j++)
            if (load[m->node[k->src[j]]] < load[m->node[best]])
                best = k->src[j];
        sender[i] = best;
        load[m->node[best]] += (double)k->bytes;
    }
    free(load);
    if (impl != WL_RS_BROADCAST_LB_ORDER)
        return;
    lb L;
    memset(&L, 0, sizeof L);
    L.T = T;
    L.m = m;
    L.nn = m->nnodes;
    L.free_at = calloc((size_t)L.nn, sizeof *L.free_at);
    L.remain = calloc((size_t)L.nn, sizeof *L.remain);
    L.order = malloc(sizeof(int) * (size_t)n);
    L.sender = malloc(sizeof(int) * (size_t)n);
    L.best_order = order;
    L.best_sender = sender;
    L.done = calloc((size_t)n, 1);
    L.best = evaluate(&L, order, sender);
    for (int i = 0; i < L.nn; i++)
        L.free_at[i] = 0;
    for (int t = 0; t < n; t++) {
        int seen[64], ns = 0;
        for (int r = 0; r < T->t[t].ndst; r++) {
            int nd = m->node[T->t[t].dst[r]], dup = 0;
            for (int q = 0; q < ns && !dup; q++)
                dup = seen[q] == nd;
            if (!dup && ns < 64) {
                seen[ns++] = nd;
                L.remain[nd] += (double)T->t[t].bytes;
            }
        }
    }
    L.nodes_left = 200000;
    dfs(&L, 0, 0);
    free(L.free_at);
    free(L.remain);
    free(L.order);
    free(L.sender);
    free(L.done);
}

/* ---- schedules ---------------------------------------------------------- */

typedef struct member_sort {
    int node, rank;
} member_sort;

static int cmp_member(const void *a, const void *b)
{
    const member_sort *x = a, *y = b;
    return x->node != y->node ? (x->node < y->node ? -1 : 1) : (x->rank < y->rank ? -1 : x->rank > y->rank);
}

/* Host-boundary bytes of a pipelined chain from root over members sorted by
 * (node, rank), as collectives.c runs a broadcast. */
static void chain_nic(const sim_machine *m, const int *ranks, int n, int root, double bytes, double *nic)
{
    member_sort *v = malloc(sizeof *v * (size_t)n);
    int rp = 0;
    for (int i = 0; i < n; i++)
        v[i] = (member_sort){m->node[ranks[i]], ranks[i]};
    qsort(v, (size_t)n, sizeof *v, cmp_member);
    for (int i = 0; i < n; i++)
        if (v[i].rank == root)
            rp = i;
    for (int h = 0; h < n - 1; h++) {
        int a = (rp + h) % n, b = (rp + h + 1) % n;
        if (v[a].node != v[b].node) {
            nic[v[a].node] += bytes;
            nic[v[b].node] += bytes;
        }
    }
    free(v);
}

static void p2p_nic(const sim_machine *m, int a, int b, double bytes, double *nic)
{
    if (nic && m->node[a] != m->node[b]) {
        nic[m->node[a]] += bytes;
        nic[m->node[b]] += bytes;
    }
}

#define NONE UINT32_MAX

static uint32_t op_add(uint32_t *done, int rank, uint32_t op)
{
    if (done)
        done[rank] = op;
    return op;
}

int wl_reshard_emit(sim_schedule *s, const sim_machine *m, const wl_rs_tasks *T, wl_rs_impl impl, const char *prefix,
                    const uint32_t *after, uint32_t *done, double *nic, sim_err *err)
{
    if ((unsigned)impl >= WL_RS_IMPL_COUNT)
        return sim_errf(err, "reshard: unknown implementation %d", (int)impl);
    int n = T->n;
    int *order = malloc(sizeof(int) * (size_t)(n + 1)), *sender = malloc(sizeof(int) * (size_t)(n + 1));
    choose(T, m, impl, order, sender);
    char st_send[64], st_recv[64], st_bc[64];
    snprintf(st_send, sizeof st_send, "%ssend", prefix);
    snprintf(st_recv, sizeof st_recv, "%srecv", prefix);
    snprintf(st_bc, sizeof st_bc, "%sbcast", prefix);
    int *members = malloc(sizeof(int) * (size_t)(m->ngpus + 1));
    sim_tags tg = SIM_NO_TAGS;
    int rr = 0; /* send/recv: holders in turn */
#define AFTER(r) (after && after[r] != NONE ? &after[r] : NULL), (after && after[r] != NONE)
    for (int oi = 0; oi < n; oi++) {
        const wl_rs_task *k = &T->t[order[oi]];
        char name[96];
        if (impl == WL_RS_SENDRECV) {
            for (int r = 0; r < k->ndst; r++) {
                int src = k->src[rr++ % k->nsrc];
                sim_sched_send(s, sim_sched_stream(s, src, st_send), "reshard", k->dst[r], k->bytes, 0, tg, AFTER(src));
                op_add(done, k->dst[r],
                       sim_sched_recv(s, sim_sched_stream(s, k->dst[r], st_recv), "reshard", src, k->bytes, 0, tg,
                                      AFTER(k->dst[r])));
                p2p_nic(m, src, k->dst[r], (double)k->bytes, nic);
            }
        } else if (impl == WL_RS_SENDRECV_ALLGATHER) {
            unsigned char *used = calloc((size_t)k->ndst, 1);
            for (int r = 0; r < k->ndst; r++) {
                if (used[r])
                    continue;
                int kk = 0;
                for (int q = r; q < k->ndst; q++)
                    if (!used[q] && m->node[k->dst[q]] == m->node[k->dst[r]]) {
                        used[q] = 1;
                        members[kk++] = k->dst[q];
                    }
                for (int q = 0; q < kk; q++) {
                    int64_t part = k->bytes / kk + (q < k->bytes % kk);
                    int src = k->src[rr++ % k->nsrc];
                    sim_sched_send(s, sim_sched_stream(s, src, st_send), "reshard", members[q], part, 0, tg, AFTER(src));
                    op_add(done, members[q],
                           sim_sched_recv(s, sim_sched_stream(s, members[q], st_recv), "reshard", src, part, 0, tg,
                                          AFTER(members[q])));
                    p2p_nic(m, src, members[q], (double)part, nic);
                }
                if (kk > 1) {
                    snprintf(name, sizeof name, "%sag.t%d.n%d", prefix, order[oi], m->node[k->dst[r]]);
                    int cm = sim_sched_comm(s, name, members, kk);
                    for (int q = 0; q < kk; q++)
                        op_add(done, members[q],
                               sim_sched_collective(s, sim_sched_stream(s, members[q], st_recv), "local_allgather",
                                                    SIM_COLL_ALLGATHER, cm, k->bytes, 0, tg, NULL, 0));
                }
            }
            free(used);
        } else {
            int snd = sender[oi], nm = 0;
            members[nm++] = snd;
            for (int r = 0; r < k->ndst; r++)
                members[nm++] = k->dst[r];
            snprintf(name, sizeof name, "%sbc.t%d", prefix, order[oi]);
            int cm = sim_sched_comm(s, name, members, nm);
            for (int q = 0; q < nm; q++) {
                uint32_t op = sim_sched_collective(s, sim_sched_stream(s, members[q], st_bc), "reshard_bcast",
                                                   SIM_COLL_BROADCAST, cm, k->bytes, 0, tg, AFTER(members[q]));
                if (q > 0)
                    op_add(done, members[q], op);
            }
            if (nic)
                chain_nic(m, members, nm, snd, (double)k->bytes, nic);
        }
    }
#undef AFTER
    free(members);
    free(order);
    free(sender);
    return 0;
}

sim_schedule *wl_reshard_schedule(const wl_reshard_case *c, const sim_machine *m, const wl_rs_tasks *T,
                                  wl_rs_impl impl, double *nic, sim_err *err)
{
    int maxr = 0;
    for (int i = 0; i < T->n; i++) {
        for (int j = 0; j < T->t[i].nsrc; j++)
            maxr = T->t[i].src[j] > maxr ? T->t[i].src[j] : maxr;
        for (int j = 0; j < T->t[i].ndst; j++)
            maxr = T->t[i].dst[j] > maxr ? T->t[i].dst[j] : maxr;
    }
    if (nic)
        memset(nic, 0, sizeof(double) * (size_t)m->nnodes);
    sim_schedule *s = sim_sched_new(maxr + 1);
    snprintf(s->meta.name, sizeof s->meta.name, "reshard %s %s", c->name, wl_rs_impl_name(impl));
    if (wl_reshard_emit(s, m, T, impl, "rs-", NULL, NULL, nic, err) < 0) {
        sim_sched_free(s);
        return NULL;
    }
    return s;
}

/* ---- the paper's suite -------------------------------------------------- */

static wl_shard_spec spec(int c0, int c1, int c2, int nax, int s0, int d0, int s1, int d1)
{
    wl_shard_spec x = {{c0, c1, c2}, nax, {s0, s1, 1}, {d0, d1, -1}};
    return x;
}

int wl_reshard_suite(wl_reshard_case **out)
{
    int cap = 32, n = 0;
    wl_reshard_case *v = calloc((size_t)cap, sizeof *v);
    /* 1 -> m: (2^28,) int32 = 1 GiB from one GPU, replicated on every receiver */
    int dst1[7][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 2}, {3, 2}, {4, 2}};
    for (int i = 0; i < 7; i++) {
        wl_reshard_case *c = &v[n++];
        snprintf(c->name, sizeof c->name, "1->(%d,%d)", dst1[i][0], dst1[i][1]);
        c->ndims = 1;
        c->shape[0] = 1LL << 28;
        c->elem_bytes = 4;
        c->src = (wl_mesh){0, 1, 1};
        c->dst = (wl_mesh){1, dst1[i][0], dst1[i][1]};
        c->src_spec = spec(1, 1, 1, 1, 1, -1, 1, -1);
        c->dst_spec = spec(1, 1, 1, 1, dst1[i][0] * dst1[i][1], -1, 1, -1);
    }
    /* n -> m: (1024, 1024, 512) int32 = 2 GiB, suite.py cases 1-9 */
    struct {
        int sn, sg, dn, dg;
        wl_shard_spec s, d;
    } nm[9] = {
        {2, 4, 2, 4, spec(2, 1, 1, 2, 2, 0, 4, -1), spec(2, 1, 1, 2, 2, 0, 4, -1)},
        {2, 4, 2, 4, spec(1, 1, 1, 1, 8, -1, 1, -1), spec(2, 1, 1, 2, 2, 0, 4, -1)},
        {2, 4, 2, 4, spec(1, 2, 1, 2, 2, 1, 4, -1), spec(2, 1, 1, 2, 2, 0, 4, -1)},
        {2, 4, 2, 4, spec(1, 8, 1, 1, 8, 1, 1, -1), spec(8, 1, 1, 1, 8, 0, 1, -1)},
        {2, 4, 2, 4, spec(4, 1, 1, 2, 2, -1, 4, 0), spec(2, 1, 1, 2, 2, 0, 4, -1)},
        {2, 4, 3, 4, spec(2, 1, 1, 2, 2, 0, 4, -1), spec(3, 1, 1, 2, 3, 0, 4, -1)},
        {1, 4, 2, 4, spec(4, 1, 1, 1, 4, 0, 1, -1), spec(1, 1, 1, 1, 8, -1, 1, -1)},
        {1, 4, 2, 4, spec(4, 1, 1, 1, 4, 0, 1, -1), spec(1, 1, 1, 1, 8, -1, 1, -1)},
        {2, 4, 2, 4, spec(1, 2, 1, 2, 2, 1, 4, -1), spec(1, 1, 2, 2, 2, 2, 4, -1)},
    };
    for (int i = 0; i < 9; i++) {
        wl_reshard_case *c = &v[n++];
        snprintf(c->name, sizeof c->name, "case%d", i + 1);
        c->ndims = 3;
        c->shape[0] = i == 5 ? 3072 : 1024;
        c->shape[1] = 1024;
        c->shape[2] = i == 5 ? 170 : 512;
        c->elem_bytes = 4;
        c->src = (wl_mesh){0, nm[i].sn, nm[i].sg};
        c->dst = (wl_mesh){nm[i].sn, nm[i].dn, nm[i].dg};
        c->src_spec = nm[i].s;
        c->dst_spec = nm[i].d;
    }
    *out = v;
    return n;
}

/* ---- a pipeline with cross-mesh resharding between stages ---------------- */

/* Stage i is the mesh (1, G) on node i; its output is batch-sharded (chunk
 * dim 0 by G) on even stages and replicated on odd ones, so every boundary
 * reshards.  Forward activations go i -> i+1, gradients i+1 -> i. */
static void stage_case(const wl_xmesh_pipe *p, int from, int to, int gpus, wl_reshard_case *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "stage%d->%d", from, to);
    c->ndims = 2;
    c->shape[0] = p->rows;
    c->shape[1] = p->cols;
    c->elem_bytes = p->elem_bytes;
    c->src = (wl_mesh){from, 1, gpus};
    c->dst = (wl_mesh){to, 1, gpus};
    wl_shard_spec sharded = {{gpus, 1, 1}, 1, {gpus, 1, 1}, {0, -1, -1}};
    wl_shard_spec repl = {{1, 1, 1}, 1, {gpus, 1, 1}, {-1, -1, -1}};
    c->src_spec = from % 2 ? repl : sharded;
    c->dst_spec = to % 2 ? repl : sharded;
}

double wl_reshard_pipeline_time(const sim_machine *m, const wl_xmesh_pipe *p, wl_pipeline kind, wl_rs_impl impl,
                                sim_err *err)
{
    int S = p->stages, M = p->micro, G = m->ngpus / (m->nnodes > 0 ? m->nnodes : 1);
    if (S < 2 || S > m->nnodes || M < 1)
        return sim_errf(err, "reshard pipeline: needs 2..%d stages (one node each) and at least one micro-batch",
                        m->nnodes);
    if (wl_pipe_validate(kind, S, 1, M, err) < 0)
        return -1;
    wl_rs_tasks *tf = calloc((size_t)S, sizeof *tf), *tb = calloc((size_t)S, sizeof *tb);
    int rc = 0;
    for (int i = 0; i + 1 < S && !rc; i++) {
        wl_reshard_case c;
        stage_case(p, i, i + 1, G, &c);
        rc = wl_reshard_tasks(&c, m, &tf[i], err);
        stage_case(p, i + 1, i, G, &c);
        rc = rc ? rc : wl_reshard_tasks(&c, m, &tb[i], err);
    }
    int n = m->ngpus;
    sim_schedule *s = sim_sched_new(S * G);
    wl_pipe_step **order = calloc((size_t)S, sizeof *order);
    int *len = calloc((size_t)S, sizeof *len), *pos = calloc((size_t)S, sizeof *pos);
    unsigned char *fdone = calloc((size_t)S * M, 1), *bdone = calloc((size_t)S * M, 1);
    uint32_t *in_f = malloc(sizeof(uint32_t) * (size_t)S * M * n), *in_b = malloc(sizeof(uint32_t) * (size_t)S * M * n);
    uint32_t *after = malloc(sizeof(uint32_t) * (size_t)n), *last = malloc(sizeof(uint32_t) * (size_t)n);
    memset(last, 0xff, sizeof(uint32_t) * (size_t)n);
    memset(in_f, 0xff, sizeof(uint32_t) * (size_t)S * M * n);
    memset(in_b, 0xff, sizeof(uint32_t) * (size_t)S * M * n);
    for (int i = 0; i < S; i++) {
        order[i] = malloc(sizeof **order * (size_t)(2 * M + 1));
        len[i] = wl_pipe_order(kind, S, 1, M, i, order[i]);
    }
    /* emit stage passes in an order that respects the data: a pass is
     * emitted once what it consumes has been, so dependencies point back */
    for (int progress = 1; progress && !rc;) {
        progress = 0;
        for (int i = 0; i < S && !rc; i++)
            while (pos[i] < len[i] && !rc) {
                wl_pipe_step st = order[i][pos[i]];
                int j = st.micro;
                int ready = st.backward ? (i == S - 1 || bdone[(i + 1) * M + j]) : (i == 0 || fdone[(i - 1) * M + j]);
                if (!ready)
                    break;
                const uint32_t *in = st.backward ? &in_b[((size_t)i * M + j) * n] : &in_f[((size_t)i * M + j) * n];
                for (int r = 0; r < n; r++)
                    after[r] = NONE;
                for (int g = 0; g < G; g++) {
                    int r = mesh_rank(&(wl_mesh){i, 1, G}, m, g);
                    sim_payload pl;
                    memset(&pl, 0, sizeof pl);
                    pl.kind = SIM_OP_COMPUTE;
                    pl.sub = SIM_KERNEL_FIXED;
                    pl.name = sim_sched_str(s, st.backward ? "backward" : "forward");
                    pl.seconds = st.backward ? 2 * p->fwd_s : p->fwd_s;
                    sim_tags tg = {-1, j, -1, st.backward ? SIM_PHASE_BACKWARD : SIM_PHASE_FORWARD};
                    after[r] = last[r] = sim_sched_add(s, sim_sched_stream(s, r, "compute"), sim_sched_payload(s, &pl),
                                                       -1, tg, in[r] != NONE ? &in[r] : NULL, in[r] != NONE);
                }
                /* the receiving stage takes the data when its instruction
                 * stream gets there (after its latest pass), as Alpa's mesh
                 * executables do; a receive posted earlier would count as
                 * communication beside its compute */
                int peer = st.backward ? i - 1 : i + 1;
                if (peer >= 0 && peer < S)
                    for (int g = 0; g < G; g++) {
                        int r = mesh_rank(&(wl_mesh){peer, 1, G}, m, g);
                        after[r] = last[r];
                    }
                char prefix[32];
                if (!st.backward && i + 1 < S) {
                    snprintf(prefix, sizeof prefix, "f%d-", i);
                    rc = wl_reshard_emit(s, m, &tf[i], impl, prefix, after, &in_f[((size_t)(i + 1) * M + j) * n], NULL,
                                         err);
                } else if (st.backward && i > 0) {
                    snprintf(prefix, sizeof prefix, "b%d-", i);
                    rc = wl_reshard_emit(s, m, &tb[i - 1], impl, prefix, after, &in_b[((size_t)(i - 1) * M + j) * n],
                                         NULL, err);
                }
                (st.backward ? bdone : fdone)[i * M + j] = 1;
                pos[i]++;
                progress = 1;
            }
    }
    for (int i = 0; i < S && !rc; i++)
        if (pos[i] < len[i])
            rc = sim_errf(err, "reshard pipeline: internal: stage %d stuck at pass %d", i, pos[i]);
    double t = -1;
    if (!rc) {
        snprintf(s->meta.name, sizeof s->meta.name, "cross-mesh pipeline %s %s", wl_pipe_name(kind),
                 wl_rs_impl_name(impl));
        sim_result r;
        if (sim_run_isolated(s, m, NULL, &r, err) == 0) {
            t = r.iteration_s;
            sim_result_free(&r);
        }
    }
    for (int i = 0; i < S; i++) {
        free(order[i]);
        wl_reshard_tasks_free(&tf[i]);
        wl_reshard_tasks_free(&tb[i]);
    }
    free(order);
    free(len);
    free(pos);
    free(fdone);
    free(bdone);
    free(in_f);
    free(in_b);
    free(after);
    free(last);
    free(tf);
    free(tb);
    sim_sched_free(s);
    return t;
}

/* ---- one implementation's time ------------------------------------------ */

double wl_reshard_time(const wl_reshard_case *c, const sim_machine *m, const wl_rs_tasks *T, wl_rs_impl impl,
                       sim_err *err)
{
    sim_schedule *s = wl_reshard_schedule(c, m, T, impl, NULL, err);
    if (!s)
        return -1;
    sim_result r;
    double t = -1;
    if (sim_run_isolated(s, m, NULL, &r, err) == 0) {
        t = r.iteration_s;
        sim_result_free(&r);
    }
    sim_sched_free(s);
    return t;
}
