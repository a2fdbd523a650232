/* collectives.c — collectives as NCCL runs them, decomposed into flows.
 *
 * Rings are built in topology order (members sorted by node, then rank), so
 * a ring crosses each node boundary once in each direction, as NCCL's rings
 * do.  Algorithms:
 *   ring all-reduce       2(N-1) steps of S/N (reduce-scatter then all-gather)
 *   ring all-gather /     N-1 steps of S/N
 *     reduce-scatter
 *   hierarchical          intra-node reduce-scatter, inter-node all-reduce of
 *     all-reduce          S/G among same-local-index GPUs (G rings share the
 *                         NIC), intra-node all-gather
 *   tree all-reduce       NCCL's double binary tree: two trees, each carrying
 *                         half the data in pipelined chunks, reduce up then
 *                         broadcast down (the two phases are not overlapped)
 *   broadcast / reduce    pipelined chain along the ring from / to the root
 *   all-to-all            one flow per ordered pair
 *   all-to-allv           the same with a size per pair (MoE dispatch and
 *                         combine); a zero-byte pair still pays its latency,
 *                         since a receiver cannot know in advance that a
 *                         sender has nothing for it
 * Step mode sends every step as its own flow, so a step waits for the slowest
 * link, as NCCL's lock-step rings do.  Aggregated mode sends each member's
 * whole ring traffic as one flow to its successor and adds the latency terms
 * the steps would have paid; on uncontended platforms both give the same time
 * (tested), and aggregated mode needs 2(N-1) times fewer flows.
 *
 * Mailboxes: one inbox per ring position and direction, so each inbox has a
 * single sender and SimGrid's FIFO matching is the collective's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "engine_internal.h"

typedef struct ring {
    int n;
    int *rank;              /* rank at each ring position */
    sg_mailbox_t *from_prev; /* inbox at each position for its predecessor's data */
    sg_mailbox_t *from_next; /* inbox at each position for its successor's data */
    double *lat_next;       /* route latency to the successor, <0 = not measured yet */
    double *bw_next;        /* route bandwidth to the successor */
} ring;

typedef struct sim_comm_rt {
    int built;
    int n;
    ring full;
    int *pos_full;          /* member -> position in full */
    int hier;               /* 1: hierarchical all-reduce possible */
    int nnodes, per_node;
    ring *intra, *inter;    /* [nnodes] rings within a node, [per_node] across nodes */
    int *intra_of, *inter_of, *pos_intra, *pos_inter; /* per member */
    sg_mailbox_t *pair;     /* [n*n] lazily: inbox of dst from src (all-to-all, trees) */
} sim_comm_rt;

static char token; /* non-NULL payload for collective flows */

static void ring_init(ring *R, int comm, const char *kind, int index, const int *ranks, int n)
{
    R->n = n;
    R->rank = malloc((size_t)n * sizeof *R->rank);
    memcpy(R->rank, ranks, (size_t)n * sizeof *ranks);
    R->from_prev = malloc((size_t)n * sizeof *R->from_prev);
    R->from_next = malloc((size_t)n * sizeof *R->from_next);
    R->lat_next = malloc((size_t)n * sizeof *R->lat_next);
    R->bw_next = malloc((size_t)n * sizeof *R->bw_next);
    for (int i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof name, "c%d/%s%d/%d<", comm, kind, index, i);
        R->from_prev[i] = sg_mailbox_by_name(name);
        snprintf(name, sizeof name, "c%d/%s%d/%d>", comm, kind, index, i);
        R->from_next[i] = sg_mailbox_by_name(name);
        R->lat_next[i] = -1;
        R->bw_next[i] = -1;
    }
}

static void ring_free(ring *R)
{
    free(R->rank);
    free(R->from_prev);
    free(R->from_next);
    free(R->lat_next);
    free(R->bw_next);
}

static double ring_lat(ring *R, int pos)
{
    if (R->lat_next[pos] < 0) {
        sg_host_t a = E.hosts[R->rank[pos]], b = E.hosts[R->rank[(pos + 1) % R->n]];
        R->lat_next[pos] = sg_host_get_route_latency(a, b);
        R->bw_next[pos] = sg_host_get_route_bandwidth(a, b);
    }
    return R->lat_next[pos];
}

static double ring_bw(ring *R, int pos)
{
    ring_lat(R, pos);
    return R->bw_next[pos];
}

static const sim_comm *comm_of(int c) { return &E.s->comms[c]; }

typedef struct member_order {
    int node, rank, member;
} member_order;

static int cmp_member(const void *x, const void *y)
{
    const member_order *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Builds the rings of a communicator (once, from sim_coll_setup). */
static sim_comm_rt *comm_rt(int c)
{
    sim_comm_rt *C = &E.comms[c];
    if (C->built)
        return C;
    C->built = 1;
    const sim_comm *cm = comm_of(c);
    int n = cm->nranks;
    C->n = n;
    member_order *ord = malloc((size_t)n * sizeof *ord);
    for (int i = 0; i < n; i++)
        ord[i] = (member_order){E.m->node[cm->ranks[i]], cm->ranks[i], i};
    qsort(ord, (size_t)n, sizeof *ord, cmp_member);
    int *ranks = malloc((size_t)n * sizeof *ranks);
    C->pos_full = malloc((size_t)n * sizeof *C->pos_full);
    for (int i = 0; i < n; i++) {
        ranks[i] = ord[i].rank;
        C->pos_full[ord[i].member] = i;
    }
    ring_init(&C->full, c, "f", 0, ranks, n);

    /* hierarchical needs >1 node and the same number (>1) of members on each */
    int nnodes = 1, per = 0, ok = 1;
    for (int i = 1; i < n; i++)
        if (ord[i].node != ord[i - 1].node)
            nnodes++;
    per = n / nnodes;
    for (int i = 0, node_start = 0; i <= n && ok; i++)
        if (i == n || (i > 0 && ord[i].node != ord[i - 1].node)) {
            ok = (i - node_start) == per;
            node_start = i;
        }
    C->hier = ok && nnodes > 1 && per > 1;
    if (C->hier) {
        C->nnodes = nnodes;
        C->per_node = per;
        C->intra = calloc((size_t)nnodes, sizeof *C->intra);
        C->inter = calloc((size_t)per, sizeof *C->inter);
        C->intra_of = malloc((size_t)n * sizeof(int));
        C->inter_of = malloc((size_t)n * sizeof(int));
        C->pos_intra = malloc((size_t)n * sizeof(int));
        C->pos_inter = malloc((size_t)n * sizeof(int));
        int *tmp = malloc((size_t)(nnodes > per ? nnodes : per) * sizeof *tmp);
        for (int g = 0; g < nnodes; g++) {
            for (int l = 0; l < per; l++) {
                int m = ord[g * per + l].member;
                tmp[l] = ord[g * per + l].rank;
                C->intra_of[m] = g;
                C->pos_intra[m] = l;
                C->inter_of[m] = l;
                C->pos_inter[m] = g;
            }
            ring_init(&C->intra[g], c, "i", g, tmp, per);
        }
        for (int l = 0; l < per; l++) {
            for (int g = 0; g < nnodes; g++)
                tmp[g] = ord[g * per + l].rank;
            ring_init(&C->inter[l], c, "x", l, tmp, nnodes);
        }
        free(tmp);
    }
    free(ranks);
    free(ord);
    return C;
}

/* Rings are built before the simulation starts: creating a mailbox is a
 * simcall that yields, so building lazily from actors would let another
 * actor see a half-built ring. */
int sim_coll_setup(sim_err *err)
{
    (void)err;
    E.comms = calloc((size_t)E.s->ncomms + 1, sizeof *E.comms);
    for (int c = 0; c < E.s->ncomms; c++)
        comm_rt(c);
    return 0;
}

void sim_coll_teardown(void)
{
    for (int c = 0; c < E.s->ncomms; c++) {
        sim_comm_rt *C = &E.comms[c];
        if (!C->built)
            continue;
        ring_free(&C->full);
        free(C->pos_full);
        if (C->hier) {
            for (int g = 0; g < C->nnodes; g++)
                ring_free(&C->intra[g]);
            for (int l = 0; l < C->per_node; l++)
                ring_free(&C->inter[l]);
            free(C->intra);
            free(C->inter);
            free(C->intra_of);
            free(C->inter_of);
            free(C->pos_intra);
            free(C->pos_inter);
        }
        free(C->pair);
    }
    free(E.comms);
    E.comms = NULL;
}

/* ---- primitives --------------------------------------------------------- */

/* Sends bytes to `to` while receiving from `from`; waits for both. */
static void exchange(uint32_t stream, sg_mailbox_t to, int to_rank, sg_mailbox_t from, double bytes)
{
    double t0 = simgrid_get_clock();
    void *data;
    sg_comm_t s = sg_mailbox_put_async(to, &token, (long)bytes);
    sg_comm_t r = sg_mailbox_get_async(from, &data);
    E.flows++;
    sg_comm_wait(s);
    sim_engine_trace_transfer(stream, to_rank, bytes, t0, simgrid_get_clock());
    sg_comm_wait(r);
}

static int aggregated(const ring *R)
{
    return E.opt.coll_mode == SIM_COLLMODE_AGGREGATED ||
           (E.opt.coll_mode == SIM_COLLMODE_AUTO && R->n > E.opt.step_max_ring);
}

/* `steps` ring steps of `chunk` bytes each: every position sends to its
 * successor and receives from its predecessor, in lock step. */
static void ring_steps(uint32_t stream, ring *R, int pos, int steps, double chunk)
{
    if (R->n < 2 || steps < 1)
        return;
    int succ = (pos + 1) % R->n;
    if (aggregated(R)) {
        exchange(stream, R->from_prev[succ], R->rank[succ], R->from_prev[pos], chunk * steps);
        if (steps > 1)
            sg_actor_sleep_for((steps - 1) * ring_lat(R, pos));
        return;
    }
    for (int s = 0; s < steps; s++)
        exchange(stream, R->from_prev[succ], R->rank[succ], R->from_prev[pos], chunk);
}

static int chunks_for(double bytes)
{
    double c = ceil(bytes / (E.opt.chunk_bytes > 0 ? E.opt.chunk_bytes : 4194304.0));
    return c < 1 ? 1 : c > 1024 ? 1024 : (int)c;
}

/* Pipelined chain along the ring.  toward_root = 0: broadcast from the root
 * (data flows forward); 1: reduce to the root (data flows backward). */
static void chain(uint32_t stream, ring *R, int pos, int root_pos, double bytes, int toward_root)
{
    int n = R->n;
    if (n < 2)
        return;
    /* distance along the direction of the data: 0 = first sender, n-1 = last receiver */
    /* toward the root the data flows p -> p-1, so the chain starts at root-1 */
    int d = toward_root ? (root_pos - 1 - pos + 2 * n) % n : (pos - root_pos + n) % n;
    int next = toward_root ? (pos - 1 + n) % n : (pos + 1) % n;
    sg_mailbox_t out = toward_root ? R->from_next[next] : R->from_prev[next];
    sg_mailbox_t in = toward_root ? R->from_next[pos] : R->from_prev[pos];
    int sends = d < n - 1, receives = d > 0;
    int C = chunks_for(bytes);
    double chunk = bytes / C;
    if (aggregated(R)) {
        void *data;
        double t0 = simgrid_get_clock();
        sg_comm_t s = sends ? sg_mailbox_put_async(out, &token, (long)bytes) : NULL;
        sg_comm_t r = receives ? sg_mailbox_get_async(in, &data) : NULL;
        if (s) {
            E.flows++;
            sg_comm_wait(s);
            sim_engine_trace_transfer(stream, R->rank[next], bytes, t0, simgrid_get_clock());
        }
        if (r)
            sg_comm_wait(r);
        /* the pipeline fill the chunks would have paid, on an uncontended chain */
        int hop = toward_root ? next : pos;
        double lat = ring_lat(R, hop), bw = ring_bw(R, hop);
        double fill = (n + C - 3) * lat + (n - 2) * chunk / (bw > 0 ? bw : 1e300);
        if (fill > 0)
            sg_actor_sleep_for(fill);
        return;
    }
    sg_comm_t pending = NULL;
    double t_pending = 0;
    for (int c = 0; c < C; c++) {
        if (receives) {
            void *data;
            sg_comm_wait(sg_mailbox_get_async(in, &data));
        }
        if (sends) {
            if (pending) {
                sg_comm_wait(pending);
                sim_engine_trace_transfer(stream, R->rank[next], chunk, t_pending, simgrid_get_clock());
            }
            t_pending = simgrid_get_clock();
            pending = sg_mailbox_put_async(out, &token, (long)chunk);
            E.flows++;
        }
    }
    if (pending) {
        sg_comm_wait(pending);
        sim_engine_trace_transfer(stream, R->rank[next], chunk, t_pending, simgrid_get_clock());
    }
}

static sg_mailbox_t pair_mailbox(int c, sim_comm_rt *C, int dst, int src)
{
    if (!C->pair)
        C->pair = calloc((size_t)C->n * (size_t)C->n, sizeof *C->pair);
    sg_mailbox_t *slot = &C->pair[(size_t)dst * (size_t)C->n + (size_t)src];
    if (!*slot) {
        char name[64];
        snprintf(name, sizeof name, "c%d/p%d<%d", c, dst, src);
        *slot = sg_mailbox_by_name(name);
    }
    return *slot;
}

/* One flow per ordered pair, all in flight at once (NCCL's grouped
 * send/receive).  sizes = NULL: bytes/n to each member; else sizes[j] to
 * member j (all-to-allv). */
static void alltoall(uint32_t stream, int c, sim_comm_rt *C, int me, double bytes, const int64_t *sizes)
{
    int n = C->n;
    if (n < 2)
        return;
    double each = bytes / n, sent = 0;
    sg_comm_t *h = malloc(2 * (size_t)n * sizeof *h);
    void **data = malloc((size_t)n * sizeof *data);
    int k = 0;
    for (int i = 1; i < n; i++) {
        int dst = (me + i) % n, src = (me - i + n) % n;
        double b = sizes ? (double)sizes[dst] : each;
        sent += b;
        h[k++] = sg_mailbox_put_async(pair_mailbox(c, C, dst, me), &token, (long)b);
        h[k++] = sg_mailbox_get_async(pair_mailbox(c, C, me, src), &data[i]);
        E.flows++;
    }
    double t0 = simgrid_get_clock();
    sg_comm_wait_all(h, (size_t)k);
    sim_engine_trace_transfer(stream, -1, sent, t0, simgrid_get_clock());
    free(h);
    free(data);
}

/* Double binary tree (NCCL 2.4+): tree 0 is a binary tree over ring
 * positions in heap order, tree 1 the same over positions mirrored, so most
 * interior nodes of one tree are leaves of the other.  Each carries half. */
static void tree_allreduce(uint32_t stream, int c, sim_comm_rt *C, int me_member, double bytes)
{
    int n = C->n;
    if (n < 2)
        return;
    int pos = C->pos_full[me_member];
    int C_chunks = chunks_for(bytes / 2);
    double chunk = bytes / 2 / C_chunks;
    const ring *R = &C->full;
    int idx[2] = {pos, n - 1 - pos};
    /* member (ring position) at a tree index */
    #define AT(t, i) ((t) == 0 ? (i) : n - 1 - (i))
    for (int phase = 0; phase < 2; phase++) { /* 0: reduce up, 1: broadcast down */
        for (int ch = 0; ch < C_chunks; ch++) {
            for (int t = 0; t < 2; t++) {
                int i = idx[t];
                int parent = i > 0 ? AT(t, (i - 1) / 2) : -1;
                int kids[2] = {2 * i + 1 < n ? AT(t, 2 * i + 1) : -1, 2 * i + 2 < n ? AT(t, 2 * i + 2) : -1};
                sg_comm_t h[3];
                void *data[2];
                int k = 0;
                double t0 = simgrid_get_clock();
                if (phase == 0) {
                    for (int q = 0; q < 2; q++)
                        if (kids[q] >= 0)
                            h[k++] = sg_mailbox_get_async(pair_mailbox(c, C, pos, kids[q]), &data[q]);
                    sg_comm_wait_all(h, (size_t)k);
                    if (parent >= 0) {
                        sg_comm_wait(sg_mailbox_put_async(pair_mailbox(c, C, parent, pos), &token, (long)chunk));
                        E.flows++;
                        sim_engine_trace_transfer(stream, R->rank[parent], chunk, t0, simgrid_get_clock());
                    }
                } else {
                    if (parent >= 0)
                        sg_comm_wait(sg_mailbox_get_async(pair_mailbox(c, C, pos, parent), &data[0]));
                    t0 = simgrid_get_clock();
                    for (int q = 0; q < 2; q++)
                        if (kids[q] >= 0) {
                            h[k++] = sg_mailbox_put_async(pair_mailbox(c, C, kids[q], pos), &token, (long)chunk);
                            E.flows++;
                        }
                    sg_comm_wait_all(h, (size_t)k);
                    if (k)
                        sim_engine_trace_transfer(stream, R->rank[kids[0]], chunk * k, t0, simgrid_get_clock());
                }
            }
        }
    }
    #undef AT
}

static int member_index(const sim_comm *cm, int rank)
{
    for (int i = 0; i < cm->nranks; i++)
        if (cm->ranks[i] == rank)
            return i;
    return -1;
}

void sim_coll_run(uint32_t stream, int c, int rank, const sim_payload *p)
{
    sim_comm_rt *C = comm_rt(c);
    const sim_comm *cm = comm_of(c);
    int me = member_index(cm, rank);
    int n = C->n;
    int pos = C->pos_full[me];
    double S = (double)p->bytes;
    if (n < 2)
        return;
    switch (p->sub) {
    case SIM_COLL_ALLREDUCE: {
        int algo = p->algo;
        if (algo == SIM_ALGO_AUTO)
            algo = C->hier ? SIM_ALGO_HIERARCHICAL : SIM_ALGO_RING;
        if (algo == SIM_ALGO_HIERARCHICAL && C->hier) {
            int G = C->per_node, N = C->nnodes;
            ring *in = &C->intra[C->intra_of[me]], *x = &C->inter[C->inter_of[me]];
            ring_steps(stream, in, C->pos_intra[me], G - 1, S / G);
            ring_steps(stream, x, C->pos_inter[me], 2 * (N - 1), S / G / N);
            ring_steps(stream, in, C->pos_intra[me], G - 1, S / G);
        } else if (algo == SIM_ALGO_TREE) {
            tree_allreduce(stream, c, C, me, S);
        } else {
            ring_steps(stream, &C->full, pos, 2 * (n - 1), S / n);
        }
        break;
    }
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
        ring_steps(stream, &C->full, pos, n - 1, S / n);
        break;
    case SIM_COLL_BROADCAST:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 0);
        break;
    case SIM_COLL_REDUCE:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 1);
        break;
    case SIM_COLL_ALLTOALL:
        alltoall(stream, c, C, me, S, NULL);
        break;
    case SIM_COLL_ALLTOALLV:
        alltoall(stream, c, C, me, S, sim_sched_sizes_of(E.s, p));
        break;
    }
}
