/* collectives.c — collectives as NCCL runs them, decomposed into flows.
 *
 * Rings are built in topology order (members sorted by node, then by the
 * node's ring order from the platform, sim_machine.ring_pos: NCCL's search
 * puts NVLink-bridged pairs next to each other), so a ring crosses each node
 * boundary once in each direction, as NCCL's rings do.  A ring inside one
 * node of a machine with ring_bidir runs in both directions at once, half
 * the bytes each way (NCCL's reverse-order channels on bridged pairs).
 * Algorithms:
 *   ring all-reduce       2(N-1) steps of S/N (reduce-scatter then all-gather)
 *   ring all-gather /     N-1 steps of S/N
 *     reduce-scatter
 *   hierarchical          intra-node reduce-scatter, inter-node all-reduce of
 *     all-reduce          S/G among same-local-index GPUs (G rings share the
 *                         NIC), intra-node all-gather
 *   tree all-reduce       NCCL's double binary tree: two trees, each carrying
 *                         half the data in chunks; a chunk goes down as soon
 *                         as it has reached the root, so reduce and broadcast
 *                         overlap as in NCCL's tree pipeline
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
 * Protocols and algorithm choice follow NCCL's tuning model (NCCL
 * src/graph/tuning.cc, ncclTopoTuneModel and the per-call cost table of
 * enqueue.cc): every (algorithm, protocol) is priced as base latency + steps
 * x (route latency + protocol step latency) + bytes moved / (path bandwidth x
 * protocol efficiency), with the uncontended bandwidth and latency of the
 * communicator's rings, and the cheapest runs.  Running it, the protocol's
 * efficiency inflates the bytes on the wire and its latencies are slept, so
 * the bandwidth part still comes from SimGrid's flows under contention.
 * Trees are considered only across nodes (NCCL's trees span nodes; within a
 * node rings win).  The numbers are per GPU model (sim_collparams), fitted in
 * validation/fit_nccl.c.
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
    int whole_n;            /* the ring's size for pricing and for step-or-aggregated:
                             * n, or the whole ring a folded communicator stands for */
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
    sg_mailbox_t *pair;     /* [n*n] lazily: inbox of dst from src (all-to-all) */
    int has_path;           /* path_bw/path_lat computed */
    double path_bw, path_lat; /* slowest hop of the full ring: bandwidth, latency */
} sim_comm_rt;

static char token; /* non-NULL payload for collective flows */

static void ring_init(ring *R, int comm, const char *kind, int index, const int *ranks, int n)
{
    R->n = n;
    R->whole_n = n;
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
    int node, pos, rank, member; /* pos: place in the node's ring order */
} member_order;

static int cmp_member(const void *x, const void *y)
{
    const member_order *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
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
        ord[i] = (member_order){E.m->node[cm->ranks[i]], E.m->ring_pos ? E.m->ring_pos[cm->ranks[i]] : 0,
                                cm->ranks[i], i};
    qsort(ord, (size_t)n, sizeof *ord, cmp_member);
    int *ranks = malloc((size_t)n * sizeof *ranks);
    C->pos_full = malloc((size_t)n * sizeof *C->pos_full);
    for (int i = 0; i < n; i++) {
        ranks[i] = ord[i].rank;
        C->pos_full[ord[i].member] = i;
    }
    ring_init(&C->full, c, "f", 0, ranks, n);
    if (E.opt.fold_members && E.opt.fold_members[c] > n)
        C->full.whole_n = E.opt.fold_members[c];

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
           (E.opt.coll_mode == SIM_COLLMODE_AUTO && R->whole_n > E.opt.step_max_ring);
}

/* How a collective runs: the protocol's step latency and efficiency. */
typedef struct proto_run {
    double step_s; /* per step, on top of the route latency */
    double eff;    /* payload fraction of the wire bytes */
} proto_run;

/* `steps` ring steps of `chunk` payload bytes each: every position sends to
 * its successor and receives from its predecessor, in lock step. */
static void ring_steps(uint32_t stream, ring *R, int pos, int steps, double chunk, const proto_run *pr)
{
    if (R->n < 2 || steps < 1)
        return;
    int succ = (pos + 1) % R->n;
    double wire = chunk / pr->eff;
    if (aggregated(R)) {
        exchange(stream, R->from_prev[succ], R->rank[succ], R->from_prev[pos], wire * steps);
        double extra = (steps - 1) * ring_lat(R, pos) + steps * pr->step_s;
        if (extra > 0)
            sg_actor_sleep_for(extra);
        return;
    }
    for (int s = 0; s < steps; s++) {
        exchange(stream, R->from_prev[succ], R->rank[succ], R->from_prev[pos], wire);
        if (pr->step_s > 0)
            sg_actor_sleep_for(pr->step_s);
    }
}

static int chunks_for(double bytes);

/* The same steps on a ring inside one node whose channels run both ways
 * (sim_machine.ring_bidir): each step sends half a chunk to the successor
 * and half to the predecessor, and receives from both.  On bridged pairs a
 * GPU then takes half its bytes through its bridge and half through PCIe,
 * where one direction would push all of them through PCIe at every other
 * GPU. */
static void ring_steps_bidir(uint32_t stream, ring *R, int pos, int steps, double chunk, const proto_run *pr)
{
    int n = R->n, succ = (pos + 1) % n, pred = (pos - 1 + n) % n, agg = aggregated(R);
    double wire = chunk / 2 / pr->eff * (agg ? steps : 1);
    for (int s = 0; s < (agg ? 1 : steps); s++) {
        void *d0, *d1;
        double t0 = simgrid_get_clock();
        sg_comm_t h[4] = {sg_mailbox_put_async(R->from_prev[succ], &token, (long)wire),
                          sg_mailbox_put_async(R->from_next[pred], &token, (long)wire),
                          sg_mailbox_get_async(R->from_prev[pos], &d0), sg_mailbox_get_async(R->from_next[pos], &d1)};
        E.flows += 2;
        sg_comm_wait_all(h, 4);
        sim_engine_trace_transfer(stream, R->rank[succ], wire, t0, simgrid_get_clock());
        sim_engine_trace_transfer(stream, R->rank[pred], wire, t0, simgrid_get_clock());
        if (!agg && pr->step_s > 0)
            sg_actor_sleep_for(pr->step_s);
    }
    double extra = agg ? (steps - 1) * fmax(ring_lat(R, pos), ring_lat(R, pred)) + steps * pr->step_s : 0;
    if (extra > 0)
        sg_actor_sleep_for(extra);
}

/* A ring's steps, both ways when the machine's rings inside a node do. */
static void ring_run(uint32_t stream, ring *R, int pos, int steps, double chunk, const proto_run *pr, int one_node)
{
    if (one_node && E.m->ring_bidir && R->n > 2)
        ring_steps_bidir(stream, R, pos, steps, chunk, pr);
    else
        ring_steps(stream, R, pos, steps, chunk, pr);
}

/* Host-staged bytes in flight while this member's part runs (staging.c):
 * NCCL's FIFO on each hop holds about two steps' chunks, at most its two
 * channels' 4 MiB buffers.  sign +1 when the collective starts, -1 when it
 * ends. */
static void stage_hold_hop(ring *R, int pos, int to, double chunk, double sign)
{
    sim_staging_hold(R->rank[pos], R->rank[to], sign * fmin(2 * chunk, SIM_STAGE_FIFO_BYTES));
}

static void stage_hold(sim_comm_rt *C, int me, int pos, int algo, int sub, double S, int one_node, double sign)
{
    ring *R = &C->full;
    int n = R->whole_n, bidir = one_node && E.m->ring_bidir && R->n > 2;
    if (sub == SIM_COLL_ALLTOALL || sub == SIM_COLL_ALLTOALLV || R->n < 2)
        return;
    if (sub == SIM_COLL_ALLREDUCE && algo == SIM_ALGO_HIERARCHICAL) {
        ring *in = &C->intra[C->intra_of[me]], *x = &C->inter[C->inter_of[me]];
        int pi = C->pos_intra[me], px = C->pos_inter[me];
        stage_hold_hop(in, pi, (pi + 1) % in->n, S / C->per_node / (bidir ? 2 : 1), sign);
        if (bidir)
            stage_hold_hop(in, pi, (pi - 1 + in->n) % in->n, S / C->per_node / 2, sign);
        stage_hold_hop(x, px, (px + 1) % x->n, S / C->per_node / C->nnodes, sign);
        return;
    }
    double chunk = sub == SIM_COLL_BROADCAST || sub == SIM_COLL_REDUCE ? S / chunks_for(S) : S / n;
    stage_hold_hop(R, pos, (pos + 1) % R->n, bidir ? chunk / 2 : chunk, sign);
    if (bidir)
        stage_hold_hop(R, pos, (pos - 1 + R->n) % R->n, chunk / 2, sign);
}

static int chunks_for(double bytes)
{
    double c = ceil(bytes / (E.opt.chunk_bytes > 0 ? E.opt.chunk_bytes : 4194304.0));
    return c < 1 ? 1 : c > 1024 ? 1024 : (int)c;
}

/* Pipelined chain along the ring.  toward_root = 0: broadcast from the root
 * (data flows forward); 1: reduce to the root (data flows backward). */
static void chain(uint32_t stream, ring *R, int pos, int root_pos, double payload, int toward_root,
                  const proto_run *pr)
{
    double bytes = payload / pr->eff;
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
    /* the chunk count from the payload, which every member agrees on: the
     * wire bytes depend on this member's interference factor, and members
     * counting different chunks deadlock */
    int C = chunks_for(payload);
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
        double fill = (n + C - 3) * lat + (n - 2) * chunk / (bw > 0 ? bw : 1e300) + (n + C - 2) * pr->step_s;
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
            if (pr->step_s > 0)
                sg_actor_sleep_for(pr->step_s);
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
static void alltoall(uint32_t stream, int c, sim_comm_rt *C, int me, double bytes, const int64_t *sizes,
                     double inflate)
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
        double b = (sizes ? (double)sizes[dst] : each) * inflate; /* protocol and interference */
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

/* Double binary tree (NCCL 2.4+), shaped as NCCL's trees are: within a node
 * the GPUs form a chain (local 0 at its head), and the node heads form a
 * binary tree over the nodes in heap order; tree 1 is the same over the
 * nodes mirrored, so most interior nodes of one tree are leaves of the
 * other.  Each tree carries half the data in chunks.  Pipelined as NCCL's
 * tree kernel is: a GPU forwards chunk k up as soon as its children's chunk
 * k has arrived, the root turns it around, and a GPU forwards chunk k down
 * as soon as it has it, so the reduce and the broadcast of different chunks
 * overlap.  Each (tree, direction, destination) keeps one chunk in flight at
 * a time, as NCCL's FIFO slots make a sender wait for the receiver.  Inboxes
 * are per (tree, direction, receiver, sender), so streams never mix. */
#define TREE_KIDS 3
typedef struct tree_side {
    int parent, kids[TREE_KIDS], nkids;
    int got_up[TREE_KIDS], got_down;    /* chunks received from each child / from the parent */
    int sent_up, sent_down[TREE_KIDS];  /* chunks sent to the parent / to each child */
    sg_comm_t rup[TREE_KIDS], rdown, sup, sdown[TREE_KIDS];
    double t_sup, t_sdown[TREE_KIDS];
} tree_side;

/* Node groups of the full ring (positions are sorted by node). */
static void node_groups(sim_comm_rt *C, int pos, int *g, int *ng, int *start, int *size, int **starts)
{
    const ring *R = &C->full;
    int n = R->n, k = -1;
    static int buf[4096];
    *ng = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || E.m->node[R->rank[i]] != E.m->node[R->rank[i - 1]]) {
            if (*ng < 4096)
                buf[*ng] = i;
            (*ng)++;
        }
    for (int j = 0; j < *ng; j++)
        if (buf[j] <= pos)
            k = j;
    *g = k;
    *start = buf[k];
    *size = (k + 1 < *ng ? buf[k + 1] : n) - buf[k];
    *starts = buf;
}

static void tree_links(sim_comm_rt *C, int t, int pos, tree_side *x)
{
    int g, ng, start, size, *starts;
    node_groups(C, pos, &g, &ng, &start, &size, &starts);
    int n = C->full.n;
    x->nkids = 0;
    int local = pos - start;
    if (local + 1 < size)
        x->kids[x->nkids++] = pos + 1;
    if (local > 0) {
        x->parent = pos - 1;
        return;
    }
    /* a node head: the node tree, mirrored for tree 1 */
    int idx = t == 0 ? g : ng - 1 - g;
    #define HEAD(i) (starts[t == 0 ? (i) : ng - 1 - (i)])
    x->parent = idx > 0 ? HEAD((idx - 1) / 2) : -1;
    for (int q = 0; q < 2; q++)
        if (2 * idx + 1 + q < ng && x->nkids < TREE_KIDS)
            x->kids[x->nkids++] = HEAD(2 * idx + 1 + q);
    #undef HEAD
    (void)n;
}

static sg_mailbox_t tree_box(int c, int t, char dir, int dst, int src)
{
    char name[80];
    snprintf(name, sizeof name, "c%d/t%d%c/%d<%d", c, t, dir, dst, src);
    return sg_mailbox_by_name(name);
}

/* Depth of the trees: the longest chain within a node plus the node tree. */
static int tree_steps_of(int n, int nnodes)
{
    int per = (n + nnodes - 1) / nnodes, d = 0;
    while ((2 << d) - 1 < nnodes)
        d++;
    return per - 1 + d;
}

static void tree_allreduce(uint32_t stream, int c, sim_comm_rt *C, int me_member, double bytes, const proto_run *pr)
{
    int n = C->n;
    if (n < 2)
        return;
    int pos = C->pos_full[me_member];
    double tc = E.opt.tree_chunk_bytes > 0 ? E.opt.tree_chunk_bytes : 524288.0;
    double cc = ceil(bytes / 2 / tc);
    int nch = cc < 1 ? 1 : cc > 4096 ? 4096 : (int)cc;
    double wire = bytes / 2 / nch / pr->eff;
    const ring *R = &C->full;
    tree_side T[2];
    void *junk;
    int ng = 0, g, start, size, *starts;
    node_groups(C, pos, &g, &ng, &start, &size, &starts);
    for (int t = 0; t < 2; t++) {
        memset(&T[t], 0, sizeof T[t]);
        tree_links(C, t, pos, &T[t]);
    }
    enum { SLOTS = 2 * TREE_KIDS + 2 };
    for (;;) {
        /* post what can be posted: receives one chunk ahead, sends in order */
        sg_comm_t h[2 * SLOTS];
        int who[2 * SLOTS], nh = 0;
        for (int t = 0; t < 2; t++) {
            tree_side *x = &T[t];
            for (int q = 0; q < x->nkids; q++)
                if (!x->rup[q] && x->got_up[q] < nch)
                    x->rup[q] = sg_mailbox_get_async(tree_box(c, t, 'u', pos, x->kids[q]), &junk);
            if (x->parent >= 0 && !x->rdown && x->got_down < nch)
                x->rdown = sg_mailbox_get_async(tree_box(c, t, 'd', pos, x->parent), &junk);
            int reduced = nch; /* chunks whose children's parts are all in */
            for (int q = 0; q < x->nkids; q++)
                if (x->got_up[q] < reduced)
                    reduced = x->got_up[q];
            if (x->parent >= 0 && !x->sup && x->sent_up < reduced) {
                x->t_sup = simgrid_get_clock();
                x->sup = sg_mailbox_put_async(tree_box(c, t, 'u', x->parent, pos), &token, (long)wire);
                E.flows++;
            }
            int have = x->parent >= 0 ? x->got_down : reduced; /* the root turns chunks around */
            for (int q = 0; q < x->nkids; q++)
                if (!x->sdown[q] && x->sent_down[q] < have) {
                    x->t_sdown[q] = simgrid_get_clock();
                    x->sdown[q] = sg_mailbox_put_async(tree_box(c, t, 'd', x->kids[q], pos), &token, (long)wire);
                    E.flows++;
                }
            for (int q = 0; q < x->nkids; q++) {
                if (x->rup[q])
                    h[nh] = x->rup[q], who[nh++] = t * SLOTS + q;
                if (x->sdown[q])
                    h[nh] = x->sdown[q], who[nh++] = t * SLOTS + TREE_KIDS + 1 + q;
            }
            if (x->rdown)
                h[nh] = x->rdown, who[nh++] = t * SLOTS + TREE_KIDS;
            if (x->sup)
                h[nh] = x->sup, who[nh++] = t * SLOTS + SLOTS - 1;
        }
        if (nh == 0)
            break;
        ssize_t k = sg_comm_wait_any(h, (size_t)nh);
        if (k < 0)
            break;
        tree_side *x = &T[who[k] / SLOTS];
        int w = who[k] % SLOTS;
        double now = simgrid_get_clock();
        if (w < TREE_KIDS) {
            x->rup[w] = NULL;
            x->got_up[w]++;
        } else if (w == TREE_KIDS) {
            x->rdown = NULL;
            x->got_down++;
        } else if (w < SLOTS - 1) {
            int q = w - TREE_KIDS - 1;
            x->sdown[q] = NULL;
            x->sent_down[q]++;
            sim_engine_trace_transfer(stream, R->rank[x->kids[q]], wire, x->t_sdown[q], now);
        } else {
            x->sup = NULL;
            x->sent_up++;
            sim_engine_trace_transfer(stream, R->rank[x->parent], wire, x->t_sup, now);
        }
    }
    /* the protocol's step overhead along the latency path (up and down the
     * tree), not per chunk: NCCL's tree pipelines it away */
    int steps = tree_steps_of(n, ng);
    if (pr->step_s > 0 && steps > 0)
        sg_actor_sleep_for(2.0 * steps * pr->step_s);
}

static int member_index(const sim_comm *cm, int rank)
{
    for (int i = 0; i < cm->nranks; i++)
        if (cm->ranks[i] == rank)
            return i;
    return -1;
}

/* ---- algorithm and protocol choice ------------------------------------ */

double sim_coll_predict(const sim_collparams *cp, sim_coll coll, sim_algo algo, int n, int nnodes, double bytes,
                        double bw, double lat, sim_proto *proto_out)
{
    double steps, moved, fill = 0;
    if (n < 2) {
        if (proto_out)
            *proto_out = SIM_PROTO_SIMPLE;
        return 0;
    }
    switch (coll) {
    case SIM_COLL_ALLREDUCE:
        if (algo == SIM_ALGO_TREE) {
            steps = 2.0 * tree_steps_of(n, nnodes > 0 ? nnodes : n);
            /* the busiest GPU: with one GPU per node an interior node sends S
             * up (both trees) and S down (its interior tree); with a chain per
             * node the head also takes its chain's S/2 per tree */
            moved = (nnodes > 0 && nnodes < n ? 3.0 : 2.0) * bytes;
            /* tree_allreduce pipelines chunks of at most tree_chunk_bytes per
             * tree: each hop down the latency path delays the last chunk by
             * one chunk time (without this, a 1 MB all-reduce across two
             * nodes chose a tree that runs 2.6x slower than the ring) */
            double tc = E.opt.tree_chunk_bytes > 0 ? E.opt.tree_chunk_bytes : 524288.0;
            double cc = ceil(bytes / 2 / tc);
            int nch = cc < 1 ? 1 : cc > 4096 ? 4096 : (int)cc;
            fill = (steps - 1) * (bytes / 2 / nch);
        } else {
            steps = 2.0 * (n - 1);
            moved = steps / n * bytes;
        }
        break;
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
        steps = n - 1;
        moved = steps / n * bytes;
        break;
    case SIM_COLL_BROADCAST:
    case SIM_COLL_REDUCE:
        steps = n - 1;
        moved = bytes;
        break;
    default:
        steps = 1;
        moved = (n - 1.0) / n * bytes;
        break;
    }
    double best = INFINITY;
    sim_proto bp = SIM_PROTO_SIMPLE;
    for (int p = SIM_PROTO_SIMPLE; p >= 0; p--) { /* ties go to Simple, then LL128 */
        if ((coll == SIM_COLL_ALLTOALL || coll == SIM_COLL_ALLTOALLV) && p != SIM_PROTO_SIMPLE)
            continue;
        double t = cp->base_s[p] + steps * (lat + cp->step_s[p]) + (moved + fill) / (cp->eff[p] * bw);
        if (t < best) {
            best = t;
            bp = (sim_proto)p;
        }
    }
    if (proto_out)
        *proto_out = bp;
    return best;
}

/* Slowest hop of the communicator's ring (what NCCL's topology search sees). */
static void ring_path(sim_comm_rt *C, double *bw, double *lat)
{
    if (!C->has_path) {
        C->path_bw = INFINITY;
        C->path_lat = 0;
        for (int i = 0; i < C->full.n; i++) {
            double l = ring_lat(&C->full, i), b = ring_bw(&C->full, i);
            C->path_lat = fmax(C->path_lat, l);
            C->path_bw = fmin(C->path_bw, b > 0 ? b : INFINITY);
        }
        if (!isfinite(C->path_bw))
            C->path_bw = 1e12;
        C->has_path = 1;
    }
    *bw = C->path_bw;
    *lat = C->path_lat;
}

void sim_coll_run(uint32_t stream, int c, int rank, const sim_payload *p)
{
    sim_comm_rt *C = comm_rt(c);
    const sim_comm *cm = comm_of(c);
    int me = member_index(cm, rank);
    int pos = C->pos_full[me];
    double S = (double)p->bytes;
    /* n: the ring this collective is priced and sized for; a folded
     * communicator holds two servers of it (sim_options.fold_members) */
    int n = C->full.whole_n, folded = n > C->n;
    if (n < 2)
        return;
    /* every member decides alike: the first member's GPU model sets the
     * protocol numbers, the ring's slowest hop the bandwidth */
    const sim_collparams *cp = &E.m->gpus[E.m->gpu_model[cm->ranks[0]]].coll;
    double bw, lat;
    ring_path(C, &bw, &lat);
    int algo = p->algo, g0, nn, st0, sz0, *starts;
    node_groups(C, pos, &g0, &nn, &st0, &sz0, &starts);
    if (folded)
        nn = E.opt.fold_nodes[c];
    if (p->sub == SIM_COLL_ALLREDUCE && algo == SIM_ALGO_AUTO) {
        algo = SIM_ALGO_RING;
        if (nn > 1 && n > 2 &&
            sim_coll_predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, n, nn, S, bw, lat, NULL) <
                sim_coll_predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, n, nn, S, bw, lat, NULL))
            algo = SIM_ALGO_TREE;
    }
    if (algo == SIM_ALGO_HIERARCHICAL && !C->hier)
        algo = SIM_ALGO_RING;
    sim_proto proto;
    sim_coll_predict(cp, (sim_coll)p->sub, algo == SIM_ALGO_TREE ? SIM_ALGO_TREE : SIM_ALGO_RING, n, nn, S, bw, lat,
                     &proto);
    /* a kernel running beside the NCCL kernel slows it (sim_engine_comm_factor) */
    proto_run pr = {cp->step_s[proto], cp->eff[proto] / sim_engine_comm_factor(rank)};
    int one_node = nn == 1;
    stage_hold(C, me, pos, algo, p->sub, S, one_node, +1);
    if (cp->base_s[proto] > 0)
        sg_actor_sleep_for(cp->base_s[proto]);
    switch (p->sub) {
    case SIM_COLL_ALLREDUCE:
        if (algo == SIM_ALGO_HIERARCHICAL) {
            int G = C->per_node, N = C->nnodes;
            ring *in = &C->intra[C->intra_of[me]], *x = &C->inter[C->inter_of[me]];
            ring_run(stream, in, C->pos_intra[me], G - 1, S / G, &pr, 1);
            ring_steps(stream, x, C->pos_inter[me], 2 * (N - 1), S / G / N, &pr);
            ring_run(stream, in, C->pos_intra[me], G - 1, S / G, &pr, 1);
        } else if (algo == SIM_ALGO_TREE && folded) {
            /* two servers cannot stand for a tree over all of them: its
             * uncontended time (trees are chosen for latency-bound sizes,
             * where sharing links changes little) */
            double t = sim_coll_predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, n, nn, S, bw, lat, NULL) -
                       cp->base_s[proto];
            if (t > 0)
                sg_actor_sleep_for(t);
        } else if (algo == SIM_ALGO_TREE) {
            tree_allreduce(stream, c, C, me, S, &pr);
        } else {
            ring_run(stream, &C->full, pos, 2 * (n - 1), S / n, &pr, one_node);
        }
        break;
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
        ring_run(stream, &C->full, pos, n - 1, S / n, &pr, one_node);
        break;
    case SIM_COLL_BROADCAST:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 0, &pr);
        break;
    case SIM_COLL_REDUCE:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 1, &pr);
        break;
    case SIM_COLL_ALLTOALL:
        alltoall(stream, c, C, me, S, NULL, 1 / pr.eff);
        break;
    case SIM_COLL_ALLTOALLV:
        alltoall(stream, c, C, me, S, sim_sched_sizes_of(E.s, p), 1 / pr.eff);
        break;
    }
    stage_hold(C, me, pos, algo, p->sub, S, one_node, -1);
}
