/* collectives.c — collectives as NCCL runs them, decomposed into flows.
 *
 * Rings are built in topology order (members sorted by node, then by the
 * node's ring order from the platform, sim_machine.ring_pos, in which NCCL's
 * search puts NVLink-bridged pairs next to each other, then by rank), so a
 * ring crosses each node boundary once in each direction, as NCCL's rings
 * do.  A node here is NCCL's: a server, or a whole NVLink domain spanning
 * servers (GB200 / GB300 NVL72: nccl_nodes, as NCCL's MNNVL fuses a clique
 * into one node), whose NICs are all its servers' (nic_key).
 * Every ring runs as a set of channels built by one builder (rings_build,
 * "Channels" below): one or several NICs across nodes, one or two
 * directions inside a node.
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
 *   NVLS all-reduce       NVLink SHARP within one NVSwitch node (H100): each
 *                         GPU has the switch sum its 1/n share and multicast
 *                         it back, S (n+1)/n through each port and direction
 *                         (nvls_time); fitted on Azure's ND H100 v5 curve
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
 * Channels (NCCL src/graph/search.cc, connect.cc; read, not copied).
 * NCCL runs a collective over several channels, each a ring (and a tree)
 * carrying an even share of the bytes.  trainsim builds every ring phase as
 * a set of channels over the topology order (struct rings, rings_build),
 * and chooses their orders in one place:
 *   across nodes   one channel per NIC that the members of every node reach
 *                  (each GPU's NIC is sim_machine.nic: its own under a
 *                  DGX-like PCIe switch, the shared one on a commodity node,
 *                  where there is then one channel: the topology order).
 *                  NCCL's channels leave through different NICs: a channel
 *                  enters a node at the GPU next to its NIC (its rail), runs
 *                  through all the node's members and leaves for the next
 *                  node.  Channel c's chain in a node starts at a member
 *                  on the node's c-th NIC (one that reaches it by GPUDirect
 *                  RDMA, its ring predecessor, which leaves the node, too
 *                  where one does: first_on_nic) and goes round in the
 *                  node's ring order; with several channels odd nodes run it the other
 *                  way from the member before, as NCCL alternates its
 *                  cross-NIC rings, so the member leaving node k and the one
 *                  entering node k + 1 are on the same rail.  A
 *                  communicator with one GPU per node (data parallelism at
 *                  tp = 8) has one channel on that GPU's rail.
 *   inside a node  one channel in ring order, or on a machine with
 *                  ring_bidir (NVLink-bridged pairs) two: the ring and its
 *                  reverse, half the bytes each (NCCL's reverse-order
 *                  channels), so a GPU takes half its bytes through its
 *                  bridge and half through PCIe, where one direction would
 *                  push all of them through PCIe at every other GPU.  Rings
 *                  across nodes on such machines stay one-way (one NIC: one
 *                  channel, NCCL's duplicate in the same order).
 *   hierarchical   the rings within each node are built as inside a node
 *                  (both ways under ring_bidir), the rings across nodes (one
 *                  per local index) with one channel.
 * At most sim_options.max_channels (NCCL_MAX_NCHANNELS) in every case.
 * Each ring step moves S/N/nch per channel; a member's channel edges to the
 * same successor are one flow (the same route), so on an NVSwitch node a
 * GPU sends nch - 1 channels' chunks over NVLink in one flow and one over
 * its NIC: a flow per distinct successor (2 on a DGX node, 2 on a bridged
 * node's two-way ring), not per channel, in step and aggregated mode alike
 * (so channels do not multiply the flows, nor the wall time, by nch).
 * Trees run per channel as well (2 nch trees of S / (2 nch), each channel's
 * node chains headed by its rail's GPU).  A hop between nodes runs at the
 * protocol's NCCL prior efficiency (sim_collparams.net_eff): a GPU's fitted
 * efficiencies describe its own links, measured within one node.
 * Left out: NCCL's duplicated channels (2 per search channel: same links,
 * same bandwidth here), PXN for rings (NCCL closes a ring on its entry NIC
 * through NVLink to the rail's GPU; here the last member sends through its
 * own NIC, which gives every NIC the same load: one channel out, one in),
 * per-channel kernel throughput caps (NCCL's perChMaxTreeBw and friends),
 * broadcast and reduce chains over several channels (one chain), and rails
 * in the fabric (fabrics are a switch or a fat tree: which NIC of the next
 * node a channel reaches does not change the bandwidth).
 * NVLS: only the single-node all-reduce (NCCL_ALGO=NVLS, what Azure's H100
 * curve measured).  Not modelled: NVLS reduce-scatter / all-gather (on one
 * node they move what a ring moves through each port, so they would change
 * SM use, which trainsim does not model, not time) and NVLS-tree across
 * nodes (NCCL's NVLSTree pipelines an NVLS reduce, a tree over the nodes'
 * heads on their rails and an NVLS multicast chunk by chunk; modelled as
 * three phases one after the other it would be slower than the ring, and no
 * multi-node H100 measurement is in the data to check a pipelined version
 * against), nor SHARP in the InfiniBand switches (CollNet).
 * Sends and all-to-all: a message between nodes leaves through the
 * sender's NIC and arrives through the receiver's.  NCCL's PXN (default
 * since 2.12) would leave through the NIC on the receiver's rail, relayed
 * over NVLink by the sender's node-mate on it: the same per-NIC load for
 * pipeline sends between GPUs of the same local index (no relay) and for a
 * balanced all-to-all, so it is not modelled (a skewed all-to-allv and a
 * rail-optimised fabric would differ).
 *
 * Host staging (staging.c): while a member's part of a collective runs,
 * each of its ring edges holds NCCL's in-flight FIFO bytes in the host
 * memories its route stages through (stage_hold): two steps' chunk per
 * channel, at most SIM_STAGE_FIFO_BYTES each.
 *
 * Mailboxes: one inbox per ring edge (per channel edge for the ring sets,
 * per position and direction for the broadcast / reduce chain), so each
 * inbox has a single sender and SimGrid's FIFO matching is the collective's
 * order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "alloc.h"
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

#define MAX_CH 16 /* channels per collective: at most one per NIC of a node (MAX_NICS in platform.c) */

/* One channel's ring over a ring set's members (channel_order,
 * node_orders). */
typedef struct chan {
    int *member;            /* [n] member at each position */
    int *rank;              /* [n] rank at each position */
    int *pos;               /* [n] position of each member */
} chan;

/* A member's ring neighbour over all channels: channels with the same
 * successor share one flow (same route, same bytes per channel). */
typedef struct edge {
    int peer, peer_rank;    /* member and rank at the other end */
    int k;                  /* channels using this edge */
    int cross;              /* 1: the edge leaves the node (NIC efficiency, sim_collparams.net_eff) */
    sg_mailbox_t box;       /* the receiver's inbox for this edge */
    double lat, bw;         /* route, <0 = not measured yet (out edges) */
} edge;

/* The channels one ring phase runs at once, over the same members: the
 * communicator's (one per NIC across nodes, one or two ways within a node)
 * or a hierarchical all-reduce's ring within a node or across nodes. */
typedef struct rings {
    int n, whole_n;         /* members; size for step-or-aggregated (a folded communicator's whole ring) */
    int *rank;              /* [n] rank of each member */
    int nch;                /* channels */
    chan ch[MAX_CH];
    edge *out, *in;         /* [n * nch]: each member's successors and predecessors over the channels */
    int *nout, *nin;        /* [n] */
} rings;

typedef struct sim_comm_rt {
    int built;
    int n;
    ring full;              /* the topology order: broadcast / reduce chains, node groups */
    int *pos_full;          /* member -> position in full */
    rings rs;               /* the communicator's channels; members are the schedule's (cm->ranks) */
    const int *ranks;       /* [n] rank of each member (the schedule's) */
    int hier;               /* 1: hierarchical all-reduce possible */
    int nnodes, per_node;
    rings *intra, *inter;   /* [nnodes] rings within a node, [per_node] across nodes */
    int *intra_of, *inter_of, *pos_intra, *pos_inter; /* per member */
    sg_mailbox_t *pair;     /* [n*n] lazily: inbox of dst from src (all-to-all) */
    int has_path;           /* path computed */
    double path_bw, path_bw_net, path_lat; /* slowest hops within and across nodes, longest latency */
    int nvls;               /* 1: all members on one NVSwitch (NVLink SHARP possible) */
    sg_bar_t tree_bar;      /* aggregated trees: where the members meet (lazily) */
} sim_comm_rt;

static char token; /* non-NULL payload for collective flows */

static void ring_init(ring *R, int comm, const char *kind, int index, const int *ranks, int n)
{
    R->n = n;
    R->whole_n = n;
    R->rank = sim_xmalloc((size_t)n * sizeof *R->rank, "the collectives' rings");
    memcpy(R->rank, ranks, (size_t)n * sizeof *ranks);
    R->from_prev = sim_xmalloc((size_t)n * sizeof *R->from_prev, "the collectives' rings");
    R->from_next = sim_xmalloc((size_t)n * sizeof *R->from_next, "the collectives' rings");
    R->lat_next = sim_xmalloc((size_t)n * sizeof *R->lat_next, "the collectives' rings");
    R->bw_next = sim_xmalloc((size_t)n * sizeof *R->bw_next, "the collectives' rings");
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
    int node, tray, pos, rank, member; /* node: NCCL's (sim_engine.nccl_node); tray: the server;
                                          pos: place in the server's ring order */
} member_order;

static int cmp_member(const void *x, const void *y)
{
    const member_order *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->tray != b->tray)
        return a->tray < b->tray ? -1 : 1;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* A NIC of the machine: the rank's server and its NIC there (an NVLink
 * domain's node holds the NICs of all its servers). */
static long long nic_key(int rank) { return (long long)E.m->node[rank] * SIM_MAX_GPUS + E.m->nic[rank]; }

/* How many channels NCCL would get bandwidth from across nodes: the NICs
 * that the members of a node reach (each GPU its own, machine.h), the fewest
 * over the nodes, within sim_options.max_channels; one for a single node
 * (whose channels are node_orders').  seg[k] is node k's first member in
 * the sorted order, seg[nseg] = n. */
static int channel_count(const member_order *ord, const int *seg, int nseg)
{
    if (nseg < 2)
        return 1;
    int nch = MAX_CH;
    for (int k = 0; k < nseg; k++) {
        long long seen[MAX_CH];
        int d = 0;
        for (int i = seg[k]; i < seg[k + 1] && d < MAX_CH; i++) {
            long long nic = nic_key(ord[i].rank);
            int j = 0;
            while (j < d && seen[j] != nic)
                j++;
            if (j == d)
                seen[d++] = nic;
        }
        if (d < nch)
            nch = d;
    }
    if (E.opt.max_channels > 0 && nch > E.opt.max_channels)
        nch = E.opt.max_channels;
    return nch < 1 ? 1 : nch;
}

static int direct(int rank)
{
    return E.m->nic_direct ? E.m->nic_direct[rank] : 0;
}

/* Offset in node segment [s, e) of the member channel c enters at: a member
 * on the segment's c-th NIC (NICs counted in the members' topology order),
 * the first of them that reaches it directly (GPUDirect RDMA under its
 * switch) with its ring predecessor, which leaves the node for it, direct
 * too; else the first direct one; else the first.  NCCL's search prefers
 * the GPUs with the best path to the NIC for the network's ends of a ring
 * (src/graph/search.cc): on a server with one NIC under one of its PCIe
 * switches they are that switch's GPUs, whatever their ranks; where every
 * member (a DGX rail) or none (host-staged) reaches its NIC directly, the
 * first member on it. */
static int first_on_nic(const member_order *ord, int s, int e, int c)
{
    long long seen[MAX_CH], mine = 0;
    int d = 0, found = 0;
    for (int i = s; i < e && !found; i++) {
        long long nic = nic_key(ord[i].rank);
        int j = 0;
        while (j < d && seen[j] != nic)
            j++;
        if (j < d)
            continue;
        if (d == c) {
            mine = nic;
            found = 1;
        }
        seen[d++] = nic;
    }
    if (!found)
        return 0;
    int best = -1, score = -1, m = e - s;
    for (int i = 0; i < m; i++) {
        if (nic_key(ord[s + i].rank) != mine)
            continue;
        int prev = ord[s + (i + m - 1) % m].rank;
        int sc = 2 * direct(ord[s + i].rank) + (direct(prev) && nic_key(prev) == mine);
        if (sc > score) {
            score = sc;
            best = i;
        }
    }
    return best < 0 ? 0 : best;
}

/* Channel c's ring, as NCCL's search builds it (src/graph/search.cc): in
 * each node a chain through all its members that enters at the member on
 * the channel's NIC (the rail) and goes round in the node's ring order
 * (the topology order); the chain's last member sends to the next node.
 * With several channels, odd nodes run their chains the other way from the
 * member before the rail's (NCCL's ring alternation in connect.cc), so the
 * member leaving node k and the one entering node k + 1 sit on the same
 * rail.  One channel is the topology order itself.  Writes the members,
 * position by position, to out. */
static void channel_order(const member_order *ord, const int *seg, int nseg, int c, int nch, int *out)
{
    for (int k = 0; k < nseg; k++) {
        int s = seg[k], m = seg[k + 1] - s, f = first_on_nic(ord, s, seg[k + 1], c);
        for (int i = 0; i < m; i++) {
            int j = nch > 1 && (k & 1) ? (f - 1 - i + 2 * m) % m : (f + i) % m;
            out[s + i] = ord[s + j].member;
        }
    }
}

/* Within one node: order[0..n) holds the node's ring (members, whose ranks
 * are rank[member]); with the platform's ring_bidir (NVLink-bridged pairs,
 * NVLink meshes: NCCL's reverse-order channels) and more than two members, a
 * second channel runs it the other way round.  On an NVLink mesh
 * (nvl_links) the members get the rings NCCL's search packs over their own
 * links instead (sim_nvl_rings; a whole DGX-1: the doubled links' cycle
 * twice, the single links' once), each both ways, every channel an equal
 * share of the bytes as NCCL splits them, so a pair with two links carries
 * two channels.  Within sim_options.max_channels (NCCL_MAX_NCHANNELS) and
 * MAX_CH.  Writes channel c at order[c*n ..); returns the channels. */
static int mesh_orders(int *order, const int *rank, int n, int dirs, int cap)
{
    const sim_machine *m = E.m;
    if (!m->nvl_links || !m->nvl_local || n > SIM_NVL_MAX)
        return 0;
    for (int i = 0; i < n; i++)
        if (m->nvl_local[rank[order[i]]] < 0)
            return 0;
    int *links = sim_xmalloc(sizeof(int) * (size_t)n * (size_t)n, "the collectives' rings");
    int *rings = sim_xmalloc(sizeof(int) * (size_t)n * MAX_CH, "the collectives' rings");
    int *member = sim_xmalloc(sizeof(int) * (size_t)n, "the collectives' rings");
    memcpy(member, order, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            links[i * n + j] = i == j ? 0
                                      : m->nvl_links[(size_t)rank[member[i]] * (size_t)m->nvl_width +
                                                     (size_t)m->nvl_local[rank[member[j]]]];
    int got = sim_nvl_rings(n, links, cap / dirs, rings), nch = 0;
    for (int k = 0; k < got; k++)
        for (int d = 0; d < dirs; d++, nch++)
            for (int p = 0; p < n; p++)
                order[(size_t)nch * (size_t)n + (size_t)p] = member[rings[(size_t)k * (size_t)n + (size_t)(d ? n - 1 - p : p)]];
    free(links);
    free(rings);
    free(member);
    return nch;
}

static int node_orders(int *order, const int *rank, int n)
{
    if (n < 3 || E.opt.max_channels == 1)
        return 1;
    int dirs = E.m->ring_bidir ? 2 : 1,
        cap = E.opt.max_channels > 0 && E.opt.max_channels < MAX_CH ? E.opt.max_channels : MAX_CH;
    int mesh = mesh_orders(order, rank, n, dirs, cap);
    if (mesh > 0)
        return mesh;
    if (dirs == 1)
        return 1;
    for (int i = 0; i < n; i++)
        order[n + i] = order[n - 1 - i];
    return 2;
}

/* Adds the edge a -> b of one channel: one more channel on an existing
 * edge, else a new edge with its own inbox (named prefix/e<b><<a>). */
static void add_edge(rings *R, const char *prefix, int a, int b)
{
    edge *o = &R->out[(size_t)a * R->nch], *in = &R->in[(size_t)b * R->nch];
    for (int j = 0; j < R->nout[a]; j++)
        if (o[j].peer == b) {
            o[j].k++;
            for (int q = 0; q < R->nin[b]; q++)
                in[q].k += in[q].peer == a;
            return;
        }
    char name[96];
    snprintf(name, sizeof name, "%s/e%d<%d", prefix, b, a);
    int cross = E.nccl_node[R->rank[a]] != E.nccl_node[R->rank[b]];
    sg_mailbox_t box = sg_mailbox_by_name(name);
    o[R->nout[a]++] = (edge){b, R->rank[b], 1, cross, box, -1, -1};
    in[R->nin[b]++] = (edge){a, R->rank[a], 1, cross, box, -1, -1};
}

/* The one ring builder: R's nch channels over n members of ranks rank[],
 * channel c visiting the members order[c * n + 0 .. n), and each member's
 * edges over them.  Inboxes are named c<comm>/<kind><index>/... */
static void rings_build(rings *R, int comm, const char *kind, int index, const int *rank, int n, int nch,
                        const int *order)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, "c%d/%s%d", comm, kind, index);
    R->n = R->whole_n = n;
    R->nch = nch;
    R->rank = sim_xmalloc((size_t)n * sizeof *R->rank, "the collectives' rings");
    memcpy(R->rank, rank, (size_t)n * sizeof *rank);
    R->out = sim_xcalloc((size_t)n * (size_t)nch, sizeof *R->out, "the collectives' rings");
    R->in = sim_xcalloc((size_t)n * (size_t)nch, sizeof *R->in, "the collectives' rings");
    R->nout = sim_xcalloc((size_t)n, sizeof *R->nout, "the collectives' rings");
    R->nin = sim_xcalloc((size_t)n, sizeof *R->nin, "the collectives' rings");
    for (int c = 0; c < nch; c++) {
        chan *h = &R->ch[c];
        h->member = sim_xmalloc((size_t)n * sizeof *h->member, "the collectives' rings");
        h->rank = sim_xmalloc((size_t)n * sizeof *h->rank, "the collectives' rings");
        h->pos = sim_xmalloc((size_t)n * sizeof *h->pos, "the collectives' rings");
        memcpy(h->member, order + (size_t)c * (size_t)n, (size_t)n * sizeof *order);
        for (int p = 0; p < n; p++) {
            h->rank[p] = rank[h->member[p]];
            h->pos[h->member[p]] = p;
        }
        for (int p = 0; n > 1 && p < n; p++)
            add_edge(R, prefix, h->member[p], h->member[(p + 1) % n]);
    }
}

static void rings_free(rings *R)
{
    for (int c = 0; c < R->nch; c++) {
        free(R->ch[c].member);
        free(R->ch[c].rank);
        free(R->ch[c].pos);
    }
    free(R->rank);
    free(R->out);
    free(R->in);
    free(R->nout);
    free(R->nin);
}

/* The communicator's channels, members sorted by node then ring order (ord,
 * node segments seg): across nodes one per NIC (channel_count,
 * channel_order); on one node (a folded communicator: when the ring it
 * stands for is) the node's ring, both ways under ring_bidir. */
static void comm_channels(sim_comm_rt *C, int comm, const member_order *ord, const int *seg, int nseg)
{
    int n = C->n, folded = C->full.whole_n > n, nch = 1;
    int *order = sim_xmalloc((size_t)n * MAX_CH * sizeof *order, "the collectives' rings");
    if (nseg == 1 && (!folded || E.s->comms[comm].whole_nodes <= 1)) {
        for (int i = 0; i < n; i++)
            order[i] = ord[i].member;
        nch = node_orders(order, C->ranks, n);
    } else {
        nch = channel_count(ord, seg, nseg);
        for (int c = 0; c < nch; c++)
            channel_order(ord, seg, nseg, c, nch, order + (size_t)c * (size_t)n);
    }
    rings_build(&C->rs, comm, "r", 0, C->ranks, n, nch, order);
    C->rs.whole_n = C->full.whole_n;
    free(order);
}

/* The hierarchical all-reduce's rings, when every node holds the same
 * number (> 1) of members and there is more than one node: per node a ring
 * of its members in ring order (both ways under ring_bidir, node_orders),
 * per local index a ring over the nodes. */
static void hier_rings(sim_comm_rt *C, int comm, const member_order *ord, const int *seg, int nnodes)
{
    int n = C->n, per = n / nnodes, ok = nnodes > 1 && per > 1;
    for (int k = 0; k < nnodes && ok; k++)
        ok = seg[k + 1] - seg[k] == per;
    C->hier = ok;
    if (!ok)
        return;
    C->nnodes = nnodes;
    C->per_node = per;
    C->intra = sim_xcalloc((size_t)nnodes, sizeof *C->intra, "the collectives' rings");
    C->inter = sim_xcalloc((size_t)per, sizeof *C->inter, "the collectives' rings");
    C->intra_of = sim_xmalloc((size_t)n * sizeof(int), "the collectives' rings");
    C->inter_of = sim_xmalloc((size_t)n * sizeof(int), "the collectives' rings");
    C->pos_intra = sim_xmalloc((size_t)n * sizeof(int), "the collectives' rings");
    C->pos_inter = sim_xmalloc((size_t)n * sizeof(int), "the collectives' rings");
    int most = nnodes > per ? nnodes : per;
    int *tmp = sim_xmalloc((size_t)most * sizeof *tmp, "the collectives' rings");
    int *order = sim_xmalloc(MAX_CH * (size_t)most * sizeof *order, "the collectives' rings");
    for (int g = 0; g < nnodes; g++) {
        for (int l = 0; l < per; l++) {
            int m = ord[g * per + l].member;
            tmp[l] = ord[g * per + l].rank;
            order[l] = l;
            C->intra_of[m] = g;
            C->pos_intra[m] = l;
            C->inter_of[m] = l;
            C->pos_inter[m] = g;
        }
        rings_build(&C->intra[g], comm, "i", g, tmp, per, node_orders(order, tmp, per), order);
    }
    for (int l = 0; l < per; l++) {
        for (int g = 0; g < nnodes; g++) {
            tmp[g] = ord[g * per + l].rank;
            order[g] = g;
        }
        rings_build(&C->inter[l], comm, "x", l, tmp, nnodes, 1, order);
    }
    free(tmp);
    free(order);
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
    C->ranks = cm->ranks;
    member_order *ord = sim_xmalloc((size_t)n * sizeof *ord, "the collectives' rings");
    for (int i = 0; i < n; i++)
        ord[i] = (member_order){E.nccl_node[cm->ranks[i]], E.m->node[cm->ranks[i]],
                                E.m->ring_pos ? E.m->ring_pos[cm->ranks[i]] : 0, cm->ranks[i], i};
    qsort(ord, (size_t)n, sizeof *ord, cmp_member);
    int *ranks = sim_xmalloc((size_t)n * sizeof *ranks, "the collectives' rings");
    C->pos_full = sim_xmalloc((size_t)n * sizeof *C->pos_full, "the collectives' rings");
    for (int i = 0; i < n; i++) {
        ranks[i] = ord[i].rank;
        C->pos_full[ord[i].member] = i;
    }
    ring_init(&C->full, c, "f", 0, ranks, n);
    if (cm->whole_ranks > n)
        C->full.whole_n = cm->whole_ranks;

    /* node segments of the sorted order, then the rings over them */
    int nnodes = 1;
    for (int i = 1; i < n; i++)
        if (ord[i].node != ord[i - 1].node)
            nnodes++;
    int *seg = sim_xmalloc((size_t)(nnodes + 1) * sizeof *seg, "the collectives' rings");
    for (int i = 0, k = 0; i < n; i++)
        if (i == 0 || ord[i].node != ord[i - 1].node)
            seg[k++] = i;
    seg[nnodes] = n;
    comm_channels(C, c, ord, seg, nnodes);
    hier_rings(C, c, ord, seg, nnodes);
    C->nvls = n > 1 && E.m->nvswitch[cm->ranks[0]] >= 0;
    for (int i = 1; i < n; i++)
        C->nvls &= E.m->nvswitch[cm->ranks[i]] == E.m->nvswitch[cm->ranks[0]];
    free(seg);
    free(ranks);
    free(ord);
    return C;
}

/* Rings are built before the simulation starts: creating a mailbox is a
 * simcall that yields, so building lazily from actors would let another
 * actor see a half-built ring. */
/* The node NCCL's topology sees for each rank: its server, or where an
 * NVSwitch fabric spans servers (a GB200 / GB300 NVL72 domain, the
 * machine's nvswitch) the whole fabric, named by its first server.  NCCL
 * fuses the topologies of a multi-node NVLink clique into one node (MNNVL:
 * src/graph/topo.cc fuses the clique's XML; init.cc counts nodes by ring
 * graph, one per clique), so its rings, trees and NVLS run over NVLink
 * inside the domain and over the NICs between domains. */
static void nccl_nodes(void)
{
    int n = E.m->ngpus, top = 0;
    for (int r = 0; r < n; r++)
        top = E.m->nvswitch[r] > top ? E.m->nvswitch[r] : top;
    E.nccl_node = sim_xcalloc((size_t)(n > 0 ? n : 1), sizeof *E.nccl_node, "the collectives' topology");
    int *first = sim_xcalloc((size_t)top + 1, sizeof *first, "the collectives' topology");
    for (int v = 0; v <= top; v++)
        first[v] = -1;
    for (int r = 0; r < n; r++) {
        int v = E.m->nvswitch[r];
        if (v >= 0 && (first[v] < 0 || E.m->node[r] < first[v]))
            first[v] = E.m->node[r];
    }
    for (int r = 0; r < n; r++)
        E.nccl_node[r] = E.m->nvswitch[r] >= 0 ? first[E.m->nvswitch[r]] : E.m->node[r];
    free(first);
}

int sim_coll_setup(sim_err *err)
{
    (void)err;
    nccl_nodes();
    E.comms = sim_xcalloc((size_t)E.s->ncomms + 1, sizeof *E.comms, "the collectives' rings");
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
        rings_free(&C->rs);
        if (C->hier) {
            for (int g = 0; g < C->nnodes; g++)
                rings_free(&C->intra[g]);
            for (int l = 0; l < C->per_node; l++)
                rings_free(&C->inter[l]);
            free(C->intra);
            free(C->inter);
            free(C->intra_of);
            free(C->inter_of);
            free(C->pos_intra);
            free(C->pos_inter);
        }
        free(C->pair);
        if (C->tree_bar)
            sg_barrier_destroy(C->tree_bar);
    }
    free(E.comms);
    E.comms = NULL;
    free(E.nccl_node);
    E.nccl_node = NULL;
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

/* Aggregated or step by step, for a ring of whole_n members. */
static int aggregated(int whole_n)
{
    return E.opt.coll_mode == SIM_COLLMODE_AGGREGATED ||
           (E.opt.coll_mode == SIM_COLLMODE_AUTO && whole_n > E.opt.step_max_ring);
}

/* How a collective runs: the protocol's step latency and efficiency. */
typedef struct proto_run {
    double step_s;  /* per step, on top of the route latency */
    double eff;     /* payload fraction of the wire bytes within a node */
    double eff_net; /* the same on a hop between nodes */
} proto_run;

static double eff_of(const proto_run *pr, int rank_a, int rank_b)
{
    return E.nccl_node[rank_a] != E.nccl_node[rank_b] ? pr->eff_net : pr->eff;
}

static void edge_route(edge *e, int rank)
{
    if (e->lat < 0) {
        sg_host_t a = E.hosts[rank], b = E.hosts[e->peer_rank];
        e->lat = sg_host_get_route_latency(a, b);
        e->bw = sg_host_get_route_bandwidth(a, b);
    }
}

/* Wire bytes of one ring step on edge e: its channels' chunks over the
 * protocol's efficiency on that hop. */
static double wire_of(const edge *e, double chunk, const proto_run *pr)
{
    return chunk * e->k / (e->cross ? pr->eff_net : pr->eff);
}

/* One round of a member's ring edges: a flow to each successor, one from
 * each predecessor, all at once.  A single edge each way is exchange();
 * several are waited for in turn, or as they end when a trace records each
 * transfer's end. */
static void exchange_edges(uint32_t stream, const edge *out, int no, const edge *in, int ni, double chunk, double per,
                           const proto_run *pr)
{
    if (no == 1 && ni == 1) {
        exchange(stream, out[0].box, out[0].peer_rank, in[0].box, wire_of(&out[0], chunk, pr) * per);
        return;
    }
    sg_comm_t h[2 * MAX_CH];
    int who[2 * MAX_CH];
    double t0 = simgrid_get_clock();
    void *data;
    for (int j = 0; j < no; j++) {
        h[j] = sg_mailbox_put_async(out[j].box, &token, (long)(wire_of(&out[j], chunk, pr) * per));
        who[j] = j;
        E.flows++;
    }
    for (int j = 0; j < ni; j++) {
        h[no + j] = sg_mailbox_get_async(in[j].box, &data);
        who[no + j] = -1;
    }
    for (int left = no + ni; left > 0; left--) {
        ssize_t k = E.trace ? sg_comm_wait_any(h, (size_t)left) : 0;
        if (k < 0)
            break;
        if (!E.trace)
            sg_comm_wait(h[0]);
        if (who[k] >= 0) {
            const edge *e = &out[who[k]];
            sim_engine_trace_transfer(stream, e->peer_rank, wire_of(e, chunk, pr) * per, t0, simgrid_get_clock());
        }
        h[k] = h[left - 1];
        who[k] = who[left - 1];
    }
}

/* `steps` ring steps of `chunk` payload bytes per channel over all of R's
 * channels at once: in every channel a member sends to its successor and
 * receives from its predecessor, in lock step; channels with the same
 * successor move their chunks as one flow.  Aggregated mode sends each
 * edge's whole traffic as one flow and sleeps the latency terms the steps
 * would have paid (on its slowest edge). */
static void ring_phase(uint32_t stream, rings *R, int me, int steps, double chunk, const proto_run *pr)
{
    if (R->n < 2 || steps < 1)
        return;
    edge *out = &R->out[(size_t)me * R->nch], *in = &R->in[(size_t)me * R->nch];
    int no = R->nout[me], ni = R->nin[me], agg = aggregated(R->whole_n);
    for (int round = 0; round < (agg ? 1 : steps); round++) {
        exchange_edges(stream, out, no, in, ni, chunk, agg ? steps : 1, pr);
        if (!agg && pr->step_s > 0)
            sg_actor_sleep_for(pr->step_s);
    }
    if (!agg)
        return;
    double lat = 0;
    for (int j = 0; j < no; j++) {
        edge_route(&out[j], R->rank[me]);
        lat = fmax(lat, out[j].lat);
    }
    double extra = (steps - 1) * lat + steps * pr->step_s;
    if (extra > 0)
        sg_actor_sleep_for(extra);
}

static int chunks_for(double bytes)
{
    double c = ceil(bytes / (E.opt.chunk_bytes > 0 ? E.opt.chunk_bytes : 4194304.0));
    return c < 1 ? 1 : c > 1024 ? 1024 : (int)c;
}

/* Host-staged bytes in flight while a member's part runs (staging.c): on
 * each of its edges in R, NCCL's FIFO holds about two steps' chunks per
 * channel, at most SIM_STAGE_FIFO_BYTES (its duplicated channels' 4 MiB
 * buffers).  sign +1 when the collective starts, -1 when it ends. */
static void stage_hold_edges(const rings *R, int me, double chunk, double sign)
{
    const edge *out = &R->out[(size_t)me * R->nch];
    for (int j = 0; j < R->nout[me]; j++)
        sim_staging_hold(R->rank[me], out[j].peer_rank, sign * out[j].k * fmin(2 * chunk, SIM_STAGE_FIFO_BYTES));
}

/* What a collective holds on its member's edges: a ring step's chunk per
 * channel (trees hold what the ring would), a broadcast or reduce chain's
 * pipelined chunk, each hierarchical phase's own; nothing for all-to-all. */
static void stage_hold(sim_comm_rt *C, int me, int algo, int sub, double S, double sign)
{
    if (sub == SIM_COLL_ALLTOALL || sub == SIM_COLL_ALLTOALLV || C->n < 2)
        return;
    if (sub == SIM_COLL_ALLREDUCE && algo == SIM_ALGO_HIERARCHICAL) {
        rings *in = &C->intra[C->intra_of[me]];
        stage_hold_edges(in, C->pos_intra[me], S / C->per_node / in->nch, sign);
        stage_hold_edges(&C->inter[C->inter_of[me]], C->pos_inter[me], S / C->per_node / C->nnodes, sign);
        return;
    }
    double chunk = sub == SIM_COLL_BROADCAST || sub == SIM_COLL_REDUCE ? S / chunks_for(S) : S / C->rs.whole_n;
    stage_hold_edges(&C->rs, me, chunk / C->rs.nch, sign);
}

/* Pipelined chain along the ring.  toward_root = 0: broadcast from the root
 * (data flows forward); 1: reduce to the root (data flows backward). */
static void chain(uint32_t stream, ring *R, int pos, int root_pos, double payload, int toward_root,
                  const proto_run *pr)
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
    double bytes = payload / eff_of(pr, R->rank[pos], R->rank[next]);
    int sends = d < n - 1, receives = d > 0;
    /* the chunk count from the payload, which every member agrees on: the
     * wire bytes depend on this member's interference factor, and members
     * counting different chunks deadlock */
    int C = chunks_for(payload);
    double chunk = bytes / C;
    if (aggregated(R->whole_n)) {
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
        C->pair = sim_xcalloc((size_t)C->n * (size_t)C->n, sizeof *C->pair, "the collectives' rings");
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
                     const proto_run *pr)
{
    int n = C->n;
    if (n < 2)
        return;
    double each = bytes / n, sent = 0;
    sg_comm_t *h = sim_xmalloc(2 * (size_t)n * sizeof *h, "an all-to-all's flows");
    void **data = sim_xmalloc((size_t)n * sizeof *data, "an all-to-all's flows");
    int k = 0;
    for (int i = 1; i < n; i++) {
        int dst = (me + i) % n, src = (me - i + n) % n;
        /* the protocol's efficiency and the interference factor */
        double b = (sizes ? (double)sizes[dst] : each) / eff_of(pr, C->ranks[me], C->ranks[dst]);
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
        if (i == 0 || E.nccl_node[R->rank[i]] != E.nccl_node[R->rank[i - 1]]) {
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

/* Bytes per pipelined tree chunk (NCCL's tree chunk; an option for tests). */
static double tc_bytes(void) { return E.opt.tree_chunk_bytes > 0 ? E.opt.tree_chunk_bytes : 524288.0; }

/* Depth of the trees: the longest chain within a node plus the node tree. */
static int tree_steps_of(int n, int nnodes)
{
    int per = (n + nnodes - 1) / nnodes, d = 0;
    while ((2 << d) - 1 < nnodes)
        d++;
    return per - 1 + d;
}

/* The double binary tree on every channel: tree 2c + d is channel c's
 * order (its node chains start at the channel's rail, so the trees' node
 * heads spread over the NICs as NCCL's per-channel trees do) mirrored for
 * d = 1; each of the 2 nch trees carries bytes / (2 nch). */
static void tree_allreduce(uint32_t stream, int c, sim_comm_rt *C, int me_member, double bytes, const proto_run *pr)
{
    int n = C->n, nt = 2 * C->rs.nch;
    if (n < 2)
        return;
    double tc = tc_bytes();
    double cc = ceil(bytes / nt / tc);
    int nchunk = cc < 1 ? 1 : cc > 4096 ? 4096 : (int)cc;
    double chunk = bytes / nt / nchunk;
    tree_side T[2 * MAX_CH];
    int pos[2 * MAX_CH];
    void *junk;
    int ng = 0, g, start, size, *starts;
    node_groups(C, C->pos_full[me_member], &g, &ng, &start, &size, &starts);
    for (int t = 0; t < nt; t++) {
        memset(&T[t], 0, sizeof T[t]);
        pos[t] = C->rs.ch[t / 2].pos[me_member];
        tree_links(C, t % 2, pos[t], &T[t]);
    }
    enum { SLOTS = 2 * TREE_KIDS + 2 };
    int me = C->ranks[me_member];
    for (;;) {
        /* post what can be posted: receives one chunk ahead, sends in order */
        sg_comm_t h[2 * MAX_CH * SLOTS];
        int who[2 * MAX_CH * SLOTS], nh = 0;
        for (int t = 0; t < nt; t++) {
            tree_side *x = &T[t];
            const int *rk = C->rs.ch[t / 2].rank;
            for (int q = 0; q < x->nkids; q++)
                if (!x->rup[q] && x->got_up[q] < nchunk)
                    x->rup[q] = sg_mailbox_get_async(tree_box(c, t, 'u', pos[t], x->kids[q]), &junk);
            if (x->parent >= 0 && !x->rdown && x->got_down < nchunk)
                x->rdown = sg_mailbox_get_async(tree_box(c, t, 'd', pos[t], x->parent), &junk);
            int reduced = nchunk; /* chunks whose children's parts are all in */
            for (int q = 0; q < x->nkids; q++)
                if (x->got_up[q] < reduced)
                    reduced = x->got_up[q];
            if (x->parent >= 0 && !x->sup && x->sent_up < reduced) {
                x->t_sup = simgrid_get_clock();
                x->sup = sg_mailbox_put_async(tree_box(c, t, 'u', x->parent, pos[t]), &token,
                                              (long)(chunk / eff_of(pr, me, rk[x->parent])));
                E.flows++;
            }
            int have = x->parent >= 0 ? x->got_down : reduced; /* the root turns chunks around */
            for (int q = 0; q < x->nkids; q++)
                if (!x->sdown[q] && x->sent_down[q] < have) {
                    x->t_sdown[q] = simgrid_get_clock();
                    x->sdown[q] = sg_mailbox_put_async(tree_box(c, t, 'd', x->kids[q], pos[t]), &token,
                                                       (long)(chunk / eff_of(pr, me, rk[x->kids[q]])));
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
        int t = who[k] / SLOTS, w = who[k] % SLOTS;
        tree_side *x = &T[t];
        const int *rk = C->rs.ch[t / 2].rank;
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
            sim_engine_trace_transfer(stream, rk[x->kids[q]], chunk / eff_of(pr, me, rk[x->kids[q]]),
                                      x->t_sdown[q], now);
        } else {
            x->sup = NULL;
            x->sent_up++;
            sim_engine_trace_transfer(stream, rk[x->parent], chunk / eff_of(pr, me, rk[x->parent]), x->t_sup, now);
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

/* What the choice sees of a communicator: the slowest hop within a node
 * and between nodes (route bandwidths; INFINITY when there is none), the
 * longest route latency, and the channels, whose crossing hops run side by
 * side on different NICs while the hops within a node share each GPU's
 * links. */
typedef struct coll_path {
    double bw, bw_net, lat;
    int nch;
} coll_path;

/* NVLink SHARP all-reduce within one NVSwitch node (NCCL's NVLS algorithm,
 * src/transport/nvls.cc and its device kernels): each GPU asks the switch
 * for the sum of its 1/n share (the switch reads that share from every GPU
 * and returns it: S out, S/n in per GPU), then multicasts its reduced share
 * (S/n out, the switch writes it to all n: S in).  Each GPU's NVLink port
 * carries S (n + 1) / n in each direction, against a ring's 2 S (n - 1) / n:
 * a bus bandwidth of 2 (n - 1) / (n + 1) times the port's, 14/9 on 8 GPUs.
 * Its latency and efficiency are the GPU's own (fitted on the Azure ND H100
 * v5 curve: validation/fit_nccl.c). */
static double nvls_time(const sim_collparams *cp, int n, double bytes, const coll_path *P)
{
    if (cp->nvls_eff <= 0)
        return INFINITY;
    return cp->nvls_base_s + P->lat + (n + 1.0) / n * bytes / (P->bw * cp->nvls_eff);
}

static double predict(const sim_collparams *cp, sim_coll coll, sim_algo algo, int n, int nnodes, double bytes,
                      const coll_path *P, sim_proto *proto_out)
{
    double steps, moved, fill = 0;
    if (n < 2 || algo == SIM_ALGO_NVLS) {
        if (proto_out)
            *proto_out = SIM_PROTO_SIMPLE;
        return n < 2 ? 0 : nvls_time(cp, n, bytes, P);
    }
    switch (coll) {
    case SIM_COLL_ALLREDUCE:
        if (algo == SIM_ALGO_TREE) {
            steps = 2.0 * tree_steps_of(n, nnodes > 0 ? nnodes : n);
            /* the busiest GPU: with one GPU per node an interior node sends S
             * up (both trees) and S down (its interior tree); with a chain per
             * node the head also takes its chain's S/2 per tree.  Priced over
             * the slower of the GPU's links and its channels' NICs even when
             * the heads sit on different NICs: NCCL caps a tree channel's
             * throughput (tuning.cc, perChMaxTreeBw), which trainsim's tree
             * does not, and with this price the choice falls where NCCL's
             * does (trees for latency-bound sizes, rings for large ones) */
            moved = (nnodes > 0 && nnodes < n ? 3.0 : 2.0) * bytes;
            /* tree_allreduce pipelines chunks of at most tree_chunk_bytes per
             * tree (2 trees per channel): each hop down the latency path
             * delays the last chunk by one chunk time (without this, a 1 MB
             * all-reduce across two nodes chose a tree that runs 2.6x slower
             * than the ring) */
            double tc = tc_bytes();
            double cc = ceil(bytes / (2 * P->nch) / tc);
            int nchunk = cc < 1 ? 1 : cc > 4096 ? 4096 : (int)cc;
            fill = (steps - 1) * (bytes / 2 / nchunk);
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
        double rate = fmin(P->bw * cp->eff[p], P->nch * P->bw_net * cp->net_eff[p]);
        double t = cp->base_s[p] + steps * (P->lat + cp->step_s[p]) + (moved + fill) / rate;
        if (t < best) {
            best = t;
            bp = (sim_proto)p;
        }
    }
    if (proto_out)
        *proto_out = bp;
    return best;
}

double sim_coll_predict(const sim_collparams *cp, sim_coll coll, sim_algo algo, int n, int nnodes, double bytes,
                        double bw, double lat, sim_proto *proto_out)
{
    coll_path P = {bw, INFINITY, lat, 1};
    return predict(cp, coll, algo, n, nnodes, bytes, &P, proto_out);
}

/* The slowest hops of the communicator's channels (what NCCL's topology
 * search sees). */
static void comm_path(sim_comm_rt *C, coll_path *P)
{
    if (!C->has_path) {
        C->path_bw = C->path_bw_net = INFINITY;
        C->path_lat = 0;
        for (int m = 0; m < C->n; m++)
            for (int j = 0; j < C->rs.nout[m]; j++) {
                edge *e = &C->rs.out[(size_t)m * C->rs.nch + j];
                edge_route(e, C->ranks[m]);
                double b = e->bw > 0 ? e->bw : INFINITY;
                C->path_lat = fmax(C->path_lat, e->lat);
                if (e->cross)
                    C->path_bw_net = fmin(C->path_bw_net, b);
                else
                    C->path_bw = fmin(C->path_bw, b);
            }
        if (!isfinite(C->path_bw) && !isfinite(C->path_bw_net))
            C->path_bw = 1e12;
        C->has_path = 1;
    }
    *P = (coll_path){C->path_bw, C->path_bw_net, C->path_lat, C->rs.nch};
}

/* The double binary tree with each edge's whole traffic as one flow (the
 * aggregated mode of larger communicators): every member sends its tree
 * share up to its parent and down to its children at once, as the pipeline
 * does in its steady state, so links are shared as they would be.  Then the
 * members meet (a SimGrid barrier: no messages), so that all finish when the
 * slowest edge of the trees allows, as in step mode, and together pay what
 * the chunks would have added: the pipeline's fill (each hop of the path up
 * and down the trees but the slowest, one uncontended chunk time and a route
 * latency each) and the latency every further chunk pays on its edge. */
static void tree_allreduce_aggregated(uint32_t stream, int c, sim_comm_rt *C, int me_member, double bytes,
                                      const proto_run *pr, const coll_path *P)
{
    int n = C->n, nt = 2 * C->rs.nch;
    double cc = ceil(bytes / nt / tc_bytes());
    int nchunk = cc < 1 ? 1 : cc > 4096 ? 4096 : (int)cc;
    double share = bytes / nt, t0 = simgrid_get_clock();
    int me = C->ranks[me_member];
    int g, ng, start, size, *starts;
    node_groups(C, C->pos_full[me_member], &g, &ng, &start, &size, &starts);
    enum { PER_TREE = 2 * TREE_KIDS + 2 };
    sg_comm_t h[2 * MAX_CH * PER_TREE];
    int to[2 * MAX_CH * PER_TREE], nh = 0; /* the peer a send goes to, -1 for a receive */
    double wire[2 * MAX_CH * PER_TREE];
    void *junk;
    for (int t = 0; t < nt; t++) {
        tree_side x;
        int pos = C->rs.ch[t / 2].pos[me_member];
        const int *rk = C->rs.ch[t / 2].rank;
        memset(&x, 0, sizeof x);
        tree_links(C, t % 2, pos, &x);
        for (int q = 0; q <= x.nkids; q++) {
            int peer = q < x.nkids ? x.kids[q] : x.parent;
            if (peer < 0)
                continue;
            char in = q < x.nkids ? 'u' : 'd', out = q < x.nkids ? 'd' : 'u';
            h[nh] = sg_mailbox_get_async(tree_box(c, t, in, pos, peer), &junk), to[nh++] = -1;
            wire[nh] = share / eff_of(pr, me, rk[peer]);
            h[nh] = sg_mailbox_put_async(tree_box(c, t, out, peer, pos), &token, (long)wire[nh]);
            to[nh++] = rk[peer];
            E.flows++;
        }
    }
    for (int i = 0; i < nh; i++) {
        sg_comm_wait(h[i]);
        if (to[i] >= 0)
            sim_engine_trace_transfer(stream, to[i], wire[i], t0, simgrid_get_clock());
    }
    if (!C->tree_bar)
        C->tree_bar = sg_barrier_init((unsigned)n);
    sg_barrier_wait(C->tree_bar);
    int depth_in = (n + ng - 1) / ng - 1, depth_x = tree_steps_of(n, ng) - depth_in;
    double chunk = share / nchunk, lat = P->lat;
    double hop_in = isfinite(P->bw) ? chunk / (P->bw * pr->eff) + lat : lat;
    double hop_x = isfinite(P->bw_net) ? chunk / (P->bw_net * pr->eff_net) + lat : lat;
    double fill = 2.0 * (depth_in * hop_in + depth_x * hop_x) - fmax(depth_in ? hop_in : 0, depth_x ? hop_x : 0);
    double extra = fill + 2.0 * (depth_in + depth_x) * pr->step_s;
    if (extra > 0)
        sg_actor_sleep_for(extra);
}

/* The algorithm that runs: the schedule's, else for an all-reduce the one
 * NCCL's model predicts fastest; one the communicator cannot run
 * (hierarchical over uneven nodes, NVLS off a single NVSwitch) is a ring. */
static int choose_algo(const sim_payload *p, const sim_comm_rt *C, const sim_collparams *cp, int n, int nn,
                       int folded, double S, const coll_path *P)
{
    int algo = p->algo;
    if (p->sub == SIM_COLL_ALLREDUCE && algo == SIM_ALGO_AUTO) {
        algo = SIM_ALGO_RING;
        double best = predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, n, nn, S, P, NULL);
        if (nn > 1 && n > 2 && predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, n, nn, S, P, NULL) < best)
            algo = SIM_ALGO_TREE;
        else if (C->nvls && !folded && predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, n, nn, S, P, NULL) < best)
            algo = SIM_ALGO_NVLS;
    }
    if ((algo == SIM_ALGO_HIERARCHICAL && !C->hier) ||
        (algo == SIM_ALGO_NVLS && (!C->nvls || folded || cp->nvls_eff <= 0 || p->sub != SIM_COLL_ALLREDUCE)))
        algo = SIM_ALGO_RING;
    return algo;
}

void sim_coll_run(uint32_t stream, int c, int rank, const sim_payload *p)
{
    sim_comm_rt *C = comm_rt(c);
    const sim_comm *cm = comm_of(c);
    int me = member_index(cm, rank);
    int pos = C->pos_full[me];
    double S = (double)p->bytes;
    /* n: the ring this collective is priced and sized for; a folded
     * communicator holds two servers of it (sim_comm.whole_ranks) */
    int n = C->full.whole_n, folded = n > C->n;
    if (n < 2)
        return;
    /* every member decides alike: the first member's GPU model sets the
     * protocol numbers, the channels' slowest hops the bandwidth */
    const sim_collparams *cp = &E.m->gpus[E.m->gpu_model[cm->ranks[0]]].coll;
    coll_path P;
    comm_path(C, &P);
    int g0, nn, st0, sz0, *starts;
    node_groups(C, pos, &g0, &nn, &st0, &sz0, &starts);
    if (folded)
        nn = E.s->comms[c].whole_nodes;
    int algo = choose_algo(p, C, cp, n, nn, folded, S, &P);
    if (algo == SIM_ALGO_NVLS) {
        /* every member asks the switch for its share's sum and multicasts it:
         * its port moves S (n + 1) / n each way, sent as equal flows to the
         * others (an NVSwitch route uses only the two GPUs' ports) */
        proto_run nv = {0, cp->nvls_eff / sim_engine_comm_factor(rank), cp->nvls_eff};
        if (cp->nvls_base_s > 0)
            sg_actor_sleep_for(cp->nvls_base_s);
        alltoall(stream, c, C, me, S * (n + 1.0) / (n - 1), NULL, &nv);
        return;
    }
    sim_proto proto;
    predict(cp, (sim_coll)p->sub, algo == SIM_ALGO_TREE ? SIM_ALGO_TREE : SIM_ALGO_RING, n, nn, S, &P, &proto);
    /* a kernel running beside the NCCL kernel slows it (sim_engine_comm_factor) */
    double f = sim_engine_comm_factor(rank);
    proto_run pr = {cp->step_s[proto], cp->eff[proto] / f, cp->net_eff[proto] / f};
    stage_hold(C, me, algo, p->sub, S, +1);
    if (cp->base_s[proto] > 0)
        sg_actor_sleep_for(cp->base_s[proto]);
    double per_ch = S / n / C->rs.nch; /* a ring step's chunk in each channel */
    switch (p->sub) {
    case SIM_COLL_ALLREDUCE:
        if (algo == SIM_ALGO_HIERARCHICAL) {
            int G = C->per_node, N = C->nnodes;
            rings *in = &C->intra[C->intra_of[me]], *x = &C->inter[C->inter_of[me]];
            ring_phase(stream, in, C->pos_intra[me], G - 1, S / G / in->nch, &pr);
            ring_phase(stream, x, C->pos_inter[me], 2 * (N - 1), S / G / N, &pr);
            ring_phase(stream, in, C->pos_intra[me], G - 1, S / G / in->nch, &pr);
        } else if (algo == SIM_ALGO_TREE && folded) {
            /* two servers cannot stand for a tree over all of them: its
             * uncontended time (trees are chosen for latency-bound sizes,
             * where sharing links changes little) */
            double t = predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_TREE, n, nn, S, &P, NULL) - cp->base_s[proto];
            E.folded_trees++;
            E.folded_tree_s += t > 0 ? t : 0;
            if (t > 0)
                sg_actor_sleep_for(t);
        } else if (algo == SIM_ALGO_TREE && aggregated(n) && S / (2 * C->rs.nch) > 4 * tc_bytes()) {
            tree_allreduce_aggregated(stream, c, C, me, S, &pr, &P);
        } else if (algo == SIM_ALGO_TREE) {
            tree_allreduce(stream, c, C, me, S, &pr);
        } else {
            ring_phase(stream, &C->rs, me, 2 * (n - 1), per_ch, &pr);
        }
        break;
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
        ring_phase(stream, &C->rs, me, n - 1, per_ch, &pr);
        break;
    case SIM_COLL_BROADCAST:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 0, &pr);
        break;
    case SIM_COLL_REDUCE:
        chain(stream, &C->full, pos, C->pos_full[p->root], S, 1, &pr);
        break;
    case SIM_COLL_ALLTOALL:
        alltoall(stream, c, C, me, S, NULL, &pr);
        break;
    case SIM_COLL_ALLTOALLV:
        alltoall(stream, c, C, me, S, sim_sched_sizes_of(E.s, p), &pr);
        break;
    }
    stage_hold(C, me, algo, p->sub, S, -1);
}
