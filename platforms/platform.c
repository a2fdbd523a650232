/* platform.c — cluster JSON to SimGrid platform (see platform.h).
 *
 * Schema (all sizes per direction; optional fields show their default):
 *
 *   { "name": "oases-3090", "description": "...",
 *     "nodes": 8,                              positive integer
 *     "node": {
 *       "gpu": "RTX3090",                      catalogue model or alias
 *       "gpus_per_node": 4,
 *       "sockets": 1,                          1 or 2 CPU sockets
 *       "socket_link_GBps": 40,                UPI / Infinity Fabric between sockets
 *       "pcie": {"gen": 4, "width": 16},       GPU slot link (gen from the catalogue)
 *       "p2p": false,                          PCIe peer-to-peer + GPUDirect RDMA (catalogue)
 *       "p2p_level": "SYS",                    NCCL_P2P_LEVEL: LOC, PIX, PXB, PHB or SYS
 *       "host_staging_GBps": 20,               host DRAM for staged bytes, one link per socket
 *       "host_read_GBps": 9,                   a GPU reading staged data (read_efficiency x slot)
 *       "host_cache_MB": 0,                    per socket: cache absorbing staged buffers
 *       "switches": [{"socket": 0, "gpus": [0,1], "uplink": {"gen": 4, "width": 16},
 *                     "p2p_GBps": 8}],         P2P inside the switch, both directions (none)
 *                                              default: GPUs split evenly over the sockets'
 *                                              root ports (no switch, no uplink link)
 *       "nvlink": {"pairs": [[0,1],[2,3]], "GBps": 56.25} | {"nvswitch": true, "GBps": 300},
 *                                              default: NVSwitch GPUs get the switch, others none;
 *                 {"nvswitch": true, "domain_gpus": 72}: the switch spans domain_gpus / gpus_per_node
 *                                              consecutive nodes (GB200 / GB300 NVL72 trays)
 *       "nics": [{"model": "IB-HDR", "switch": 0}]  |  "nic": "100GbE"   (one NIC on switch 0)
 *     },
 *     "fabric": {"type": "switch"} | {"type": "fat-tree", "nodes_per_leaf": 4, "oversubscription": 2},
 *     "link_latency_us": {"pcie": 1.0, "nvlink": 0.7, "socket": 0.3, "fabric": 0.3} }
 *
 * Unknown keys are errors (a typo must not silently give a default).
 *
 * Generated XML (DTD 4.1).  A top zone routing="DijkstraCache" holds first a
 * zone "links" (routing="None") with every node's links, then one zone per
 * node (routing="Full") with the GPU hosts (speed 1Gf, the engine runs
 * seconds x 1e9 flops) and one router n<k>-gw, and an
 * explicit symmetrical="NO" route for every ordered GPU pair and for GPU <->
 * gateway, each listing the physical links with their direction:
 *   - NVLink pair: its bridge link only; NVSwitch: both GPUs' NVLink links.
 *   - PCIe P2P (node.p2p and the path within node.p2p_level, as NCCL's
 *     ncclTopoCheckP2p decides), same switch: the two slot links (and the
 *     switch's SHARED p2p link when given); other switch: slot, switch
 *     uplink(s), socket link, ... (through the root complex).
 *   - otherwise NCCL's SHM transport: slot, uplink, socket link if crossing,
 *     n<k>-mem<socket of b> (the receiver creates the buffer; SHARED because
 *     writes and reads of it share DRAM; its cache is the engine's,
 *     sim/staging.c), uplink, n<k>-gpu<b>-hostrd (the receiving GPU's reads
 *     of the staged buffer: non-posted PCIe reads reach only a fraction of
 *     the slot, catalogue host_staging.read_efficiency or
 *     node.host_read_GBps), slot.  A NIC's data for a GPU without GPUDirect
 *     is staged the same way (the GPU reads it from host memory).
 * The node's ring order (NVLink partners adjacent, as NCCL's search puts
 * them) and whether its rings run both ways reach the engine in sim_machine
 * (ring_pos, ring_bidir), with the host-memory links and their caches
 * (stage); the XML carries them as properties.
 *   - GPU -> gateway: the PCIe path to its NIC (direct when P2P and the NIC
 *     sits on the GPU's switch, i.e. GPUDirect RDMA; else through host
 *     memory), then the NIC link.  Each NIC link carries half the catalogue's
 *     port-to-port latency, so a node-to-node route has the whole of it.
 * With node.nvlink.domain_gpus the nodes of one NVLink domain share a zone
 * (domain<d>, gateway d<d>-gw, each node's links still n<k>-...): two GPUs
 * of different nodes of the domain talk through the NVLink switches (the
 * sender's NVLink port up, the receiver's down, as inside an NVSwitch
 * node), and each GPU leaves the domain through its own node's NIC; the
 * domain's zoneRoute carries d<d>-port (capacity: its NICs).
 * Directions: UP = away from the GPU towards the CPU / outward through the
 * NIC / from socket 0 to 1 / from the lower-numbered GPU of an NVLink pair.
 * The fabric routers sit in their own one-router zones (a <router> may not
 * sit beside sub-zones).  Measured on SimGrid 3.32 (tests/platforms):
 *   - a zoneRoute with an empty link list is rejected ("Empty route
 *     forbidden"), so each node's zoneRoute carries n<k>-port, its cable to
 *     the switch: capacity = sum of its NICs (never the bottleneck), latency 0;
 *   - in a symmetrical zoneRoute SimGrid swaps UP/DOWN for the way back
 *     (n0 -> n1 uses n0-port_UP then n1-port_DOWN), so one zoneRoute per
 *     node is enough;
 *   - Dijkstra zones crash (3.32 bug: null gateways) when a path crosses an
 *     intermediate zone entering and leaving by different gateways, so a fat
 *     tree is one zone per leaf switch and one for the spine, each holding a
 *     single router, with zoneRoutes node -> leaf (port link) and leaf ->
 *     spine (leaf uplink, capacity nodes_per_leaf x node NIC bandwidth /
 *     oversubscription);
 *   - <link> elements must precede the zoneRoutes of their zone.
 * Hosts also carry trainsim:gpu/rank/node properties (and trainsim:nic on
 * nodes with several NICs, trainsim:nvswitch on NVSwitch nodes: what the
 * collectives' channels and NVLS need), so the XML can be saved, edited by
 * hand and read back with plat_from_xml. */
#include "platform.h"
#include "catalog.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/alloc.h"
#include "sim/embedded.h"
#include "sim/fileio.h"
#include "sim/json.h"

#define MAX_GPUS 64   /* per node */
#define MAX_SWITCHES 16
#define MAX_NICS 16
#define MAX_LINKS 512 /* per node */
#define MAX_HOPS 16
#define MAX_DOMAIN_GPUS 576 /* GPUs per multi-node NVLink domain */

/* ---------- JSON field readers: every error names source and path ---------- */

/* Node groups of one cluster ("groups": mixed GPU kinds), at most. */
#define PLAT_MAX_GROUPS 16

typedef struct jctx {
    const char *src;
    sim_err *err;
} jctx;

static int jerr(jctx *c, const char *path, const char *expected, const cJSON *got)
{
    char *txt = got ? cJSON_PrintUnformatted(got) : NULL;
    sim_errf(c->err, "%s: %s: expected %s, got %s", c->src, path, expected, txt ? txt : "nothing");
    free(txt);
    return -1;
}

/* Rejects keys not in allowed (NULL-terminated). */
static int check_keys(jctx *c, const cJSON *obj, const char *path, const char *const *allowed)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(it->string, allowed[i]) == 0;
        if (!ok) {
            char list[512];
            size_t n = 0;
            list[0] = 0;
            for (int i = 0; allowed[i] && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", allowed[i]);
            return sim_errf(c->err, "%s: %s%s%s: unknown field; known: %s", c->src, path, *path ? "." : "",
                            it->string, list);
        }
    }
    return 0;
}

static void join(char *out, size_t n, const char *path, const char *key)
{
    snprintf(out, n, "%s%s%s", path, *path ? "." : "", key);
}

/* Integer field >= min; absent gives dflt (or an error when required). */
static int get_int(jctx *c, const cJSON *obj, const char *path, const char *key, int required, int dflt, int min,
                   int *out)
{
    char p[256];
    join(p, sizeof p, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return sim_errf(c->err, "%s: %s: missing (expected an integer >= %d)", c->src, p, min);
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < min ||
        v->valuedouble > 1e9) {
        char what[64];
        snprintf(what, sizeof what, min == 1 ? "a positive integer" : "an integer >= %d", min);
        return jerr(c, p, what, v);
    }
    *out = (int)v->valuedouble;
    return 0;
}

/* A finite number, > 0 (or >= 0 with zero_ok); absent gives dflt. */
static int get_num(jctx *c, const cJSON *obj, const char *path, const char *key, double dflt, int zero_ok,
                   double *out)
{
    char p[256];
    join(p, sizeof p, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !(v->valuedouble > 0 || (zero_ok && v->valuedouble == 0)))
        return jerr(c, p, zero_ok ? "a number >= 0" : "a positive number", v);
    /* physical ranges, so that SimGrid never sees a value its solver cannot
     * handle (a 1e-12 efficiency aborts it; a 1e300 us latency overflows
     * the clock): bandwidths 1 MB/s .. 100 TB/s, latencies up to 1 s */
    double lo = 0, hi = 1e6;
    if (strstr(key, "GBps"))
        lo = 1e-3, hi = 1e5;
    else if (!strcmp(key, "nic_efficiency"))
        lo = 0.01, hi = 1;
    else if (!strcmp(key, "oversubscription"))
        lo = 1e-3, hi = 1e3;
    if (v->valuedouble < lo || v->valuedouble > hi) {
        char what[96];
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
        return jerr(c, p, what, v);
    }
    *out = v->valuedouble;
    return 0;
}

static int get_pos(jctx *c, const cJSON *obj, const char *path, const char *key, double dflt, double *out)
{
    return get_num(c, obj, path, key, dflt, 0, out);
}

static int get_bool(jctx *c, const cJSON *obj, const char *path, const char *key, int dflt, int *out)
{
    char p[256];
    join(p, sizeof p, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsBool(v))
        return jerr(c, p, "true or false", v);
    *out = cJSON_IsTrue(v);
    return 0;
}

static const cJSON *get_obj(jctx *c, const cJSON *obj, const char *path, const char *key, int required)
{
    char p[256];
    join(p, sizeof p, path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            sim_errf(c->err, "%s: %s: missing (expected an object)", c->src, p);
        return NULL;
    }
    if (!cJSON_IsObject(v)) {
        jerr(c, p, "an object", v);
        return NULL;
    }
    return v;
}

/* A PCIe {"gen", "width"} object to bytes/s. */
static int get_pcie(jctx *c, const cJSON *obj, const char *path, int dflt_gen, double *bw)
{
    static const char *const keys[] = {"gen", "width", NULL};
    int gen, width;
    if (check_keys(c, obj, path, keys) || get_int(c, obj, path, "gen", 0, dflt_gen, 1, &gen) ||
        get_int(c, obj, path, "width", 0, 16, 1, &width))
        return -1;
    if (width != 1 && width != 2 && width != 4 && width != 8 && width != 16) {
        char p[256];
        join(p, sizeof p, path, "width");
        return jerr(c, p, "a PCIe width of 1, 2, 4, 8 or 16", cJSON_GetObjectItemCaseSensitive(obj, "width"));
    }
    *bw = plat_pcie_bw(gen, width, c->err);
    if (*bw < 0)
        return sim_err_prefix(c->err, "%s: %s.gen: ", c->src, path);
    return 0;
}

/* ---------- the node template ---------- */

typedef struct link {
    char name[32]; /* without the n<k>- prefix */
    double bw, lat;
    int shared;
} link;

enum { DIR_NONE, DIR_UP, DIR_DOWN };

typedef struct path {
    int n;
    int link[MAX_HOPS];
    int dir[MAX_HOPS];
} path;

typedef struct node_spec {
    sim_gpu gpu;
    plat_gpu_info info;
    int ngpus, nsockets, p2p;
    int nswitches;
    int sw_socket[MAX_SWITCHES];
    int sw_uplink[MAX_SWITCHES]; /* link index or -1 (root ports) */
    int gpu_sw[MAX_GPUS];
    int gpu_slot[MAX_GPUS];  /* position among the switch's GPUs */
    int gpu_pcie[MAX_GPUS];  /* link indices */
    int gpu_nvl[MAX_GPUS];   /* NVSwitch link or -1 */
    int nvl_pair[MAX_GPUS][MAX_GPUS]; /* bridge link between a<b or -1 */
    int nvl_links[MAX_GPUS][MAX_GPUS]; /* NVLinks a pair (a<b) has: its link carries that many */
    int gpu_stage[MAX_GPUS]; /* the GPU's reads of host-staged data */
    int sw_p2p[MAX_SWITCHES]; /* SHARED link of the P2P traffic inside a switch, or -1 */
    int p2p_level;           /* PT_*: PCIe P2P only on paths this close */
    int mem[2], upi;
    double cache_bytes;      /* per socket: cache absorbing staged buffers (0: none) */
    int ring_order[MAX_GPUS], bidir;
    int mesh;                /* NVLinks alone close a cycle through the GPUs (mesh_ring) */
    int domain_nodes;        /* nodes per multi-node NVLink domain (node.nvlink.domain_gpus / gpus_per_node; 1: none) */
    int nnics;
    int nic_sw[MAX_NICS];
    int nic_link[MAX_NICS];
    double nic_bw_total;
    int nlinks;
    link links[MAX_LINKS];
} node_spec;

static int add_link(node_spec *ns, double bw, double lat, int shared, const char *fmt, int a, int b)
{
    link *l = &ns->links[ns->nlinks];
    snprintf(l->name, sizeof l->name, fmt, a, b);
    l->bw = bw, l->lat = lat, l->shared = shared;
    return ns->nlinks++;
}

static void hop(path *p, int link, int dir)
{
    p->link[p->n] = link;
    p->dir[p->n] = dir;
    p->n++;
}

static int sock_of(const node_spec *ns, int g) { return ns->sw_socket[ns->gpu_sw[g]]; }

static void cross_sockets(const node_spec *ns, path *p, int from, int to)
{
    if (from != to)
        hop(p, ns->upi, from < to ? DIR_UP : DIR_DOWN);
}

/* NCCL's path types (src/graph/topo.h), closest first: the P2P level
 * compares against them (ncclTopoCheckP2p). */
enum { PT_NVL, PT_PIX, PT_PXB, PT_PHB, PT_SYS };

static int path_type(const node_spec *ns, int a, int b)
{
    int sa = ns->gpu_sw[a], sb = ns->gpu_sw[b];
    if (sock_of(ns, a) != sock_of(ns, b))
        return PT_SYS;
    return sa == sb && ns->sw_uplink[sa] >= 0 ? PT_PIX : PT_PHB;
}

/* PCIe peer-to-peer between a and b: the GPUs can (node.p2p) and the path
 * is no farther than the P2P level (NCCL_P2P_LEVEL; NCCL's default is PXB
 * on Intel CPUs, SYS elsewhere).  Otherwise NCCL uses its SHM transport. */
static int use_p2p(const node_spec *ns, int a, int b)
{
    return ns->p2p && path_type(ns, a, b) <= ns->p2p_level;
}

/* GPU a to GPU b inside a node: the physical path (see the file comment). */
static void gpu_path(const node_spec *ns, int a, int b, path *p)
{
    p->n = 0;
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (ns->nvl_pair[lo][hi] >= 0) {
        hop(p, ns->nvl_pair[lo][hi], a < b ? DIR_UP : DIR_DOWN);
        return;
    }
    if (ns->gpu_nvl[a] >= 0 && ns->gpu_nvl[b] >= 0) {
        hop(p, ns->gpu_nvl[a], DIR_UP);
        hop(p, ns->gpu_nvl[b], DIR_DOWN);
        return;
    }
    int sa = ns->gpu_sw[a], sb = ns->gpu_sw[b];
    hop(p, ns->gpu_pcie[a], DIR_UP);
    if (use_p2p(ns, a, b) && sa == sb) {
        if (ns->sw_p2p[sa] >= 0)
            hop(p, ns->sw_p2p[sa], DIR_NONE);
    } else {
        if (ns->sw_uplink[sa] >= 0)
            hop(p, ns->sw_uplink[sa], DIR_UP);
        cross_sockets(ns, p, sock_of(ns, a), sock_of(ns, b));
        /* SHM: the receiver's buffer in its socket's memory (NCCL shm.cc:
         * the receiving rank creates it), written by a, read by b */
        if (!use_p2p(ns, a, b))
            hop(p, ns->mem[sock_of(ns, b)], DIR_NONE);
        if (ns->sw_uplink[sb] >= 0)
            hop(p, ns->sw_uplink[sb], DIR_DOWN);
        if (!use_p2p(ns, a, b))
            hop(p, ns->gpu_stage[b], DIR_DOWN);
    }
    hop(p, ns->gpu_pcie[b], DIR_DOWN);
}

static int nvlinked(const node_spec *ns, int a, int b) { return ns->nvl_pair[a < b ? a : b][a < b ? b : a] >= 0; }

static int links_of(const node_spec *ns, int a, int b) { return ns->nvl_links[a < b ? a : b][a < b ? b : a]; }

/* Where NVLinks alone join every GPU in a cycle (an NVLink mesh): its first
 * ring, the one NCCL's search packs first (sim_nvl_rings: the widest cycle;
 * on DGX-1's hybrid cube mesh 0 3 2 1 5 6 7 4 over its doubled links), which
 * the rings across nodes follow; the collectives pack the others from the
 * links (machine_rings gives them every GPU's).  0 when there is none
 * within the search's budget. */
static int mesh_ring(node_spec *ns)
{
    int n = ns->ngpus;
    int *links = sim_xmalloc(sizeof(int) * (size_t)n * (size_t)n, "the node's NVLink rings");
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            links[a * n + b] = a == b ? 0 : links_of(ns, a, b);
    int found = sim_nvl_rings(n, links, 1, ns->ring_order) == 1;
    free(links);
    return found;
}

/* The order NCCL's ring search gives a node's GPUs: it tries the next GPU
 * by the widest path first (search.cc, ncclTopoSearchNextGpuSort), so an
 * NVLink partner follows its GPU, and a ring must close: where NVLink alone
 * joins every GPU in a cycle (DGX-1's hybrid cube mesh) the rings are such
 * cycles (mesh_ring: 0 3 2 1 5 6 7 4 over its doubled links first);
 * otherwise each GPU is followed by an NVLink
 * partner where it has an unused one, else by PCI order.  With NVLink the
 * forward ring leaves each link's reverse direction (and, on bridged pairs,
 * half of the PCIe slots) unused, and the search fills them with channels
 * in the opposite order: rings run in both directions (ring_bidir). */
static void ring_order(node_spec *ns)
{
    int used[MAX_GPUS] = {0};
    ns->bidir = 0;
    ns->mesh = ns->ngpus > 2 && mesh_ring(ns);
    if (ns->mesh) {
        ns->bidir = 1;
        return;
    }
    for (int k = 0, g = 0; k < ns->ngpus && g >= 0; k++) {
        ns->ring_order[k] = g;
        used[g] = 1;
        int next = -1;
        for (int h = 0; h < ns->ngpus && next < 0; h++)
            if (!used[h] && nvlinked(ns, g, h))
                next = h, ns->bidir = 1;
        for (int h = 0; h < ns->ngpus && next < 0; h++)
            if (!used[h])
                next = h;
        g = next;
    }
}

/* The NIC a GPU uses: on its own switch (GPUs spread round-robin over that
 * switch's NICs), else the first on its socket, else NIC 0. */
static int nic_of(const node_spec *ns, int g)
{
    int on_sw[MAX_NICS], n = 0;
    for (int j = 0; j < ns->nnics; j++)
        if (ns->nic_sw[j] == ns->gpu_sw[g])
            on_sw[n++] = j;
    if (n)
        return on_sw[ns->gpu_slot[g] % n];
    for (int j = 0; j < ns->nnics; j++)
        if (ns->sw_socket[ns->nic_sw[j]] == sock_of(ns, g))
            return j;
    return 0;
}

/* GPU g out through its NIC (the gateway route). */
static void nic_path(const node_spec *ns, int g, path *p)
{
    int j = nic_of(ns, g), sg = ns->gpu_sw[g], sn = ns->nic_sw[j];
    p->n = 0;
    hop(p, ns->gpu_pcie[g], DIR_UP);
    if (!(ns->p2p && sg == sn)) {
        /* No GPUDirect RDMA: the GPU writes a host buffer the NIC reads. */
        if (ns->sw_uplink[sg] >= 0)
            hop(p, ns->sw_uplink[sg], DIR_UP);
        hop(p, ns->mem[sock_of(ns, g)], DIR_NONE);
        cross_sockets(ns, p, sock_of(ns, g), ns->sw_socket[sn]);
        if (ns->sw_uplink[sn] >= 0)
            hop(p, ns->sw_uplink[sn], DIR_DOWN);
    }
    hop(p, ns->nic_link[j], DIR_UP);
}

static void reverse_path(const path *in, path *out)
{
    out->n = in->n;
    for (int i = 0; i < in->n; i++) {
        int d = in->dir[in->n - 1 - i];
        out->link[i] = in->link[in->n - 1 - i];
        out->dir[i] = d == DIR_UP ? DIR_DOWN : d == DIR_DOWN ? DIR_UP : DIR_NONE;
    }
}

typedef struct fabric {
    int fat_tree, per_leaf;
    double oversub, lat;
} fabric;

/* node.p2p_level: NCCL_P2P_LEVEL's names; "LOC" (no PCIe P2P at all)
 * through "SYS" (P2P everywhere, the default: what "p2p": true meant
 * before the level existed). */
static int get_p2p_level(jctx *c, const cJSON *node, int *out)
{
    static const char *const names[] = {"LOC", "PIX", "PXB", "PHB", "SYS"};
    static const int levels[] = {PT_NVL, PT_PIX, PT_PXB, PT_PHB, PT_SYS};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, "p2p_level");
    *out = PT_SYS;
    if (!v)
        return 0;
    for (int i = 0; cJSON_IsString(v) && i < 5; i++)
        if (strcmp(v->valuestring, names[i]) == 0) {
            *out = levels[i];
            return 0;
        }
    return jerr(c, "node.p2p_level", "one of \"LOC\", \"PIX\", \"PXB\", \"PHB\", \"SYS\" (NCCL_P2P_LEVEL)", v);
}

/* node.nvlink.domain_gpus: the GPUs of domain_gpus / gpus_per_node
 * consecutive nodes share one NVLink switch fabric (GB200 / GB300 NVL72: 18
 * trays of 4 GPUs); the last domain holds the nodes left over.  Only on
 * NVSwitch nodes, a whole number of nodes, at most the cluster. */
static int get_domain(jctx *c, const cJSON *nv, int nvswitch, int nnodes, node_spec *ns)
{
    int dg;
    ns->domain_nodes = 1;
    if (!nv || !cJSON_GetObjectItemCaseSensitive(nv, "domain_gpus"))
        return 0;
    if (get_int(c, nv, "node.nvlink", "domain_gpus", 1, ns->ngpus, 1, &dg))
        return -1;
    if (!nvswitch)
        return sim_errf(c->err,
                        "%s: node.nvlink.domain_gpus: a multi-node NVLink domain is an NVSwitch fabric: give "
                        "\"nvswitch\": true (the GPU's catalogue NVLink is not a switch)",
                        c->src);
    if (dg % ns->ngpus)
        return sim_errf(c->err, "%s: node.nvlink.domain_gpus: %d is not a multiple of node.gpus_per_node (%d)", c->src,
                        dg, ns->ngpus);
    if ((double)dg > (double)nnodes * ns->ngpus)
        return sim_errf(c->err, "%s: node.nvlink.domain_gpus: %d is more than the cluster's %.0f GPUs (nodes x gpus_per_node)",
                        c->src, dg, (double)nnodes * ns->ngpus);
    if (dg > MAX_DOMAIN_GPUS) /* its routes grow as its square */
        return sim_errf(c->err,
                        "%s: node.nvlink.domain_gpus: %d is more than %d, the largest NVLink 5 domain (NVIDIA: up "
                        "to 576 GPUs through NVLink switches)",
                        c->src, dg, MAX_DOMAIN_GPUS);
    ns->domain_nodes = dg / ns->ngpus;
    return 0;
}

static int parse_node(jctx *c, const cJSON *node, int nnodes, const plat_defaults *df, node_spec *ns,
                      double lat_pcie, double lat_nvl, double lat_sock)
{
    static const char *const keys[] = {"gpu", "gpus_per_node", "sockets", "socket_link_GBps", "pcie", "p2p",
                                       "host_staging_GBps", "host_read_GBps", "host_cache_MB", "p2p_level",
                                       "switches", "nvlink", "nics", "nic", "nic_efficiency", NULL};
    if (check_keys(c, node, "node", keys))
        return -1;
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(node, "gpu");
    if (cJSON_IsObject(gpu)) { /* a GPU of the user's own, with the catalogue's fields */
        char where[300];
        snprintf(where, sizeof where, "%s: node.gpu", c->src);
        if (plat_gpu_from_json(gpu, where, &ns->gpu, &ns->info, c->err))
            return -1;
    } else if (!cJSON_IsString(gpu)) {
        return jerr(c, "node.gpu", "a GPU model name (string) or a GPU object (platforms/README.md)", gpu);
    } else if (plat_gpu_lookup_info(gpu->valuestring, &ns->gpu, &ns->info, c->err)) {
        return sim_err_prefix(c->err, "%s: node.gpu: ", c->src);
    }

    double sock_bw, staging_bw, pcie_bw;
    if (get_int(c, node, "node", "gpus_per_node", 1, 0, 1, &ns->ngpus) ||
        get_int(c, node, "node", "sockets", 0, 1, 1, &ns->nsockets) ||
        get_pos(c, node, "node", "socket_link_GBps", df->socket_bw / 1e9, &sock_bw) ||
        get_pos(c, node, "node", "host_staging_GBps", df->staging_bw / 1e9, &staging_bw) ||
        get_bool(c, node, "node", "p2p", ns->info.p2p, &ns->p2p))
        return -1;
    if (ns->ngpus > MAX_GPUS)
        return sim_errf(c->err, "%s: node.gpus_per_node: %d is more than the %d supported", c->src, ns->ngpus,
                        MAX_GPUS);
    if (ns->nsockets > 2)
        return sim_errf(c->err, "%s: node.sockets: expected 1 or 2, got %d", c->src, ns->nsockets);
    if (get_p2p_level(c, node, &ns->p2p_level))
        return -1;
    double cache_mb;
    if (get_num(c, node, "node", "host_cache_MB", 0, 1, &cache_mb))
        return -1;
    ns->cache_bytes = cache_mb * 1048576.0;
    const cJSON *pcie = cJSON_GetObjectItemCaseSensitive(node, "pcie");
    if (pcie && !cJSON_IsObject(pcie))
        return jerr(c, "node.pcie", "an object {\"gen\": 4, \"width\": 16}", pcie);
    if (get_pcie(c, pcie, "node.pcie", ns->info.pcie_gen, &pcie_bw))
        return -1;

    ns->nlinks = 0;
    ns->upi = ns->nsockets == 2 ? add_link(ns, sock_bw * 1e9, lat_sock, 0, "upi", 0, 0) : -1;
    for (int s = 0; s < ns->nsockets; s++)
        ns->mem[s] = add_link(ns, staging_bw * 1e9, 0, 1, "mem%d", s, 0);
    double read_bw;
    if (get_pos(c, node, "node", "host_read_GBps", df->staging_read_eff * pcie_bw / 1e9, &read_bw))
        return -1;
    for (int g = 0; g < ns->ngpus; g++) {
        ns->gpu_pcie[g] = add_link(ns, pcie_bw, lat_pcie, 0, "gpu%d-pcie", g, 0);
        ns->gpu_stage[g] = add_link(ns, read_bw * 1e9, 0, 0, "gpu%d-hostrd", g, 0);
        ns->gpu_nvl[g] = -1;
        ns->gpu_sw[g] = -1;
        for (int h = 0; h < ns->ngpus; h++)
            ns->nvl_pair[g][h] = -1, ns->nvl_links[g][h] = 0;
    }

    /* Switches: explicit, or one set of root ports per socket. */
    const cJSON *sws = cJSON_GetObjectItemCaseSensitive(node, "switches");
    if (sws) {
        if (!cJSON_IsArray(sws) || cJSON_GetArraySize(sws) < 1)
            return jerr(c, "node.switches", "a non-empty array of {socket, gpus, uplink}", sws);
        ns->nswitches = cJSON_GetArraySize(sws);
        if (ns->nswitches > MAX_SWITCHES)
            return sim_errf(c->err, "%s: node.switches: at most %d", c->src, MAX_SWITCHES);
        for (int s = 0; s < ns->nswitches; s++) {
            static const char *const swkeys[] = {"socket", "gpus", "uplink", "p2p_GBps", NULL};
            const cJSON *sw = cJSON_GetArrayItem(sws, s);
            char p[64];
            snprintf(p, sizeof p, "node.switches[%d]", s);
            if (!cJSON_IsObject(sw))
                return jerr(c, p, "an object {socket, gpus, uplink}", sw);
            if (check_keys(c, sw, p, swkeys) || get_int(c, sw, p, "socket", 0, 0, 0, &ns->sw_socket[s]))
                return -1;
            if (ns->sw_socket[s] >= ns->nsockets)
                return sim_errf(c->err, "%s: %s.socket: %d but the node has %d socket(s)", c->src, p,
                                ns->sw_socket[s], ns->nsockets);
            ns->sw_uplink[s] = -1;
            ns->sw_p2p[s] = -1;
            if (cJSON_GetObjectItemCaseSensitive(sw, "p2p_GBps")) {
                double pbw;
                if (get_pos(c, sw, p, "p2p_GBps", 0, &pbw))
                    return -1;
                ns->sw_p2p[s] = add_link(ns, pbw * 1e9, 0, 1, "sw%d-p2p", s, 0);
            }
            const cJSON *up = cJSON_GetObjectItemCaseSensitive(sw, "uplink");
            if (up) {
                char pu[80];
                double ubw;
                snprintf(pu, sizeof pu, "%s.uplink", p);
                if (!cJSON_IsObject(up))
                    return jerr(c, pu, "an object {\"gen\": 4, \"width\": 16}", up);
                if (get_pcie(c, up, pu, ns->info.pcie_gen, &ubw))
                    return -1;
                ns->sw_uplink[s] = add_link(ns, ubw, lat_pcie, 0, "sw%d-up", s, 0);
            }
            const cJSON *gl = cJSON_GetObjectItemCaseSensitive(sw, "gpus"), *g;
            char pg[80];
            snprintf(pg, sizeof pg, "%s.gpus", p);
            if (!cJSON_IsArray(gl))
                return jerr(c, pg, "an array of GPU indices", gl);
            int slot = 0;
            cJSON_ArrayForEach(g, gl)
            {
                if (!cJSON_IsNumber(g) || g->valuedouble != floor(g->valuedouble) || g->valuedouble < 0 ||
                    g->valuedouble >= ns->ngpus) {
                    char what[64];
                    snprintf(what, sizeof what, "GPU indices in 0..%d", ns->ngpus - 1);
                    return jerr(c, pg, what, g);
                }
                int gi = (int)g->valuedouble;
                if (ns->gpu_sw[gi] >= 0)
                    return sim_errf(c->err, "%s: %s: GPU %d is already under switch %d", c->src, pg, gi,
                                    ns->gpu_sw[gi]);
                ns->gpu_sw[gi] = s;
                ns->gpu_slot[gi] = slot++;
            }
        }
        for (int g = 0; g < ns->ngpus; g++)
            if (ns->gpu_sw[g] < 0)
                return sim_errf(c->err, "%s: node.switches: GPU %d is under no switch", c->src, g);
    } else {
        ns->nswitches = ns->nsockets;
        int per = (ns->ngpus + ns->nsockets - 1) / ns->nsockets;
        for (int s = 0; s < ns->nsockets; s++)
            ns->sw_socket[s] = s, ns->sw_uplink[s] = -1, ns->sw_p2p[s] = -1;
        for (int g = 0; g < ns->ngpus; g++)
            ns->gpu_sw[g] = g / per, ns->gpu_slot[g] = g % per;
    }

    /* NVLink. */
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(node, "nvlink");
    int nvswitch = 0;
    double nvbw = ns->info.nvlink_GBps;
    if (nv) {
        static const char *const nvkeys[] = {"pairs", "nvswitch", "GBps", "domain_gpus", NULL};
        if (!cJSON_IsObject(nv))
            return jerr(c, "node.nvlink", "an object {\"pairs\": [[0,1]]} or {\"nvswitch\": true}", nv);
        if (check_keys(c, nv, "node.nvlink", nvkeys) ||
            get_bool(c, nv, "node.nvlink", "nvswitch", 0, &nvswitch) ||
            get_pos(c, nv, "node.nvlink", "GBps", nvbw > 0 ? nvbw : 25, &nvbw))
            return -1;
        if (ns->info.nvlink == PLAT_NVLINK_NONE && !cJSON_GetObjectItemCaseSensitive(nv, "GBps"))
            return sim_errf(c->err, "%s: node.nvlink: %s has no NVLink in the catalogue; give \"GBps\" to insist",
                            c->src, ns->gpu.model);
        const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(nv, "pairs"), *pr;
        if (pairs && !cJSON_IsArray(pairs))
            return jerr(c, "node.nvlink.pairs", "an array of [a, b] GPU index pairs (or [a, b, links])", pairs);
        int i = 0;
        cJSON_ArrayForEach(pr, pairs)
        {
            char p[64];
            snprintf(p, sizeof p, "node.nvlink.pairs[%d]", i++);
            const cJSON *a = cJSON_GetArrayItem(pr, 0), *b = cJSON_GetArrayItem(pr, 1), *l = cJSON_GetArrayItem(pr, 2);
            int size = cJSON_IsArray(pr) ? cJSON_GetArraySize(pr) : 0;
            if ((size != 2 && size != 3) || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valueint < 0 ||
                b->valueint < 0 || a->valueint >= ns->ngpus || b->valueint >= ns->ngpus || a->valueint == b->valueint)
                return jerr(c, p, "a pair of distinct GPU indices [a, b], or [a, b, links]", pr);
            /* [a, b, links]: a pair joined by several NVLinks (DGX-1's NV2 pairs), each GBps */
            if (size == 3 &&
                !(cJSON_IsNumber(l) && l->valuedouble == (double)l->valueint && l->valueint >= 1 && l->valueint <= 18))
                return jerr(c, p, "[a, b, links] with links a whole number from 1 to 18", pr);
            int lo = a->valueint < b->valueint ? a->valueint : b->valueint;
            int hi = a->valueint ^ b->valueint ^ lo, links = size == 3 ? l->valueint : 1;
            if (ns->nvl_pair[lo][hi] >= 0)
                return jerr(c, p, "each pair once (this one is listed twice)", pr);
            ns->nvl_pair[lo][hi] = add_link(ns, links * nvbw * 1e9, lat_nvl, 0, "nvl%d-%d", lo, hi);
            ns->nvl_links[lo][hi] = links;
        }
    } else {
        nvswitch = ns->info.nvlink == PLAT_NVLINK_NVSWITCH;
    }
    if (get_domain(c, nv, nvswitch, nnodes, ns))
        return -1;
    if (nvswitch)
        for (int g = 0; g < ns->ngpus; g++)
            ns->gpu_nvl[g] = add_link(ns, nvbw * 1e9, lat_nvl, 0, "gpu%d-nvl", g, 0);
    ring_order(ns);
    if (nvswitch)
        ns->bidir = 0;

    /* NICs, at the fraction of line rate NCCL reaches through them (fitted
     * per cluster where collective timings exist: platforms/README.md). */
    double nic_eff;
    if (get_pos(c, node, "node", "nic_efficiency", 1.0, &nic_eff))
        return -1;
    if (nic_eff > 1)
        return sim_errf(c->err, "%s: node.nic_efficiency: expected a fraction in (0, 1], got %g", c->src, nic_eff);
    const cJSON *nics = cJSON_GetObjectItemCaseSensitive(node, "nics");
    const cJSON *nic1 = cJSON_GetObjectItemCaseSensitive(node, "nic");
    if (nics && nic1)
        return sim_errf(c->err, "%s: node: give either \"nic\" or \"nics\", not both", c->src);
    ns->nnics = 0;
    ns->nic_bw_total = 0;
    if (nic1) {
        plat_nic nic;
        if (!cJSON_IsString(nic1))
            return jerr(c, "node.nic", "a NIC model name (string)", nic1);
        if (plat_nic_lookup(nic1->valuestring, &nic, c->err))
            return sim_err_prefix(c->err, "%s: node.nic: ", c->src);
        ns->nic_sw[0] = 0;
        ns->nic_link[0] = add_link(ns, nic.bw * nic_eff, nic.latency_s / 2, 0, "nic%d", 0, 0);
        ns->nic_bw_total = nic.bw * nic_eff;
        ns->nnics = 1;
    } else if (nics) {
        if (!cJSON_IsArray(nics))
            return jerr(c, "node.nics", "an array of {\"model\", \"switch\"}", nics);
        const cJSON *e;
        cJSON_ArrayForEach(e, nics)
        {
            static const char *const nkeys[] = {"model", "switch", NULL};
            char p[64], pm[80];
            plat_nic nic;
            int j = ns->nnics;
            snprintf(p, sizeof p, "node.nics[%d]", j);
            snprintf(pm, sizeof pm, "%s.model", p);
            if (j == MAX_NICS)
                return sim_errf(c->err, "%s: node.nics: at most %d", c->src, MAX_NICS);
            if (!cJSON_IsObject(e))
                return jerr(c, p, "an object {\"model\", \"switch\"}", e);
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "model");
            if (check_keys(c, e, p, nkeys) || get_int(c, e, p, "switch", 0, 0, 0, &ns->nic_sw[j]))
                return -1;
            if (ns->nic_sw[j] >= ns->nswitches)
                return sim_errf(c->err, "%s: %s.switch: %d but the node has %d switch(es)", c->src, p,
                                ns->nic_sw[j], ns->nswitches);
            if (!cJSON_IsString(m))
                return jerr(c, pm, "a NIC model name (string)", m);
            if (plat_nic_lookup(m->valuestring, &nic, c->err))
                return sim_err_prefix(c->err, "%s: %s: ", c->src, pm);
            ns->nic_link[j] = add_link(ns, nic.bw * nic_eff, nic.latency_s / 2, 0, "nic%d", j, 0);
            ns->nic_bw_total += nic.bw * nic_eff;
            ns->nnics++;
        }
    }
    if (nnodes > 1 && ns->nnics == 0)
        return sim_errf(c->err, "%s: node: a cluster of %d nodes needs a NIC (\"nic\": \"100GbE\" or \"nics\": [...])",
                        c->src, nnodes);
    return 0;
}

/* ---------- XML writer ---------- */

/* A route from host src to host dst over p's links of the node whose links
 * are named pre<link>. */
static void write_route(FILE *f, const char *pre, const char *src, const char *dst, const node_spec *ns,
                        const path *p)
{
    fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">", src, dst);
    for (int i = 0; i < p->n; i++) {
        const link *l = &ns->links[p->link[i]];
        if (p->dir[i] == DIR_NONE)
            fprintf(f, "<link_ctn id=\"%s%s\"/>", pre, l->name);
        else
            fprintf(f, "<link_ctn id=\"%s%s\" direction=\"%s\"/>", pre, l->name, p->dir[i] == DIR_UP ? "UP" : "DOWN");
    }
    fprintf(f, "</route>\n");
}

/* cache > 0: a host-memory link of staged transfers with its cache (sim_stage). */
static void write_link(FILE *f, const char *name_pre, const char *name, double bw, double lat, int shared, double cache)
{
    fprintf(f, "  <link id=\"%s%s\" bandwidth=\"%.0fBps\" latency=\"%.9gs\" sharing_policy=\"%s\"", name_pre, name,
            bw, lat, shared ? "SHARED" : "SPLITDUPLEX");
    if (cache > 0)
        fprintf(f, "><prop id=\"trainsim:cache_bytes\" value=\"%.17g\"/></link>\n", cache);
    else
        fprintf(f, "/>\n");
}

/* Text inside an XML comment: no "--" (a name holding "-->" would end the
 * comment and inject markup) and no control characters. */
static void comment_text(FILE *f, const char *s)
{
    for (char prev = 0; *s; prev = *s++)
        fputc((unsigned char)*s < 0x20 ? ' ' : *s == '-' && prev == '-' ? '_' : *s, f);
}

/* Node k's GPU hosts (zone: the NVSwitch fabric they are on). */
static void write_hosts(FILE *f, int k, int zone, const node_spec *ns)
{
    for (int g = 0; g < ns->ngpus; g++) {
        int pos = 0;
        while (ns->ring_order[pos] != g)
            pos++;
        fprintf(f,
                "  <host id=\"n%d-gpu%d\" speed=\"1Gf\" core=\"1\"><prop id=\"trainsim:gpu\" value=\"%s\"/>"
                "<prop id=\"trainsim:rank\" value=\"%d\"/><prop id=\"trainsim:node\" value=\"%d\"/>"
                "<prop id=\"trainsim:ring_pos\" value=\"%d\"/>%s",
                k, g, ns->gpu.model, k * ns->ngpus + g, k, pos,
                ns->bidir ? "<prop id=\"trainsim:ring_bidir\" value=\"1\"/>" : "");
        if (ns->mesh) { /* its NVLinks in the node: "own index, then index:links ..." */
            fprintf(f, "<prop id=\"trainsim:nvlinks\" value=\"%d", g);
            for (int h = 0; h < ns->ngpus; h++)
                if (h != g && links_of(ns, g, h) > 0)
                    fprintf(f, " %d:%d", h, links_of(ns, g, h));
            fprintf(f, "\"/>");
        }
        if (ns->nnics > 1)
            fprintf(f, "<prop id=\"trainsim:nic\" value=\"%d\"/>", nic_of(ns, g));
        if (ns->gpu_nvl[g] >= 0)
            fprintf(f, "<prop id=\"trainsim:nvswitch\" value=\"%d\"/>", zone);
        fprintf(f, "</host>\n");
    }
}

static void write_links(FILE *f, int k, const node_spec *ns)
{
    char pre[32];
    snprintf(pre, sizeof pre, "n%d-", k);
    for (int i = 0; i < ns->nlinks; i++)
        write_link(f, pre, ns->links[i].name, ns->links[i].bw, ns->links[i].lat, ns->links[i].shared,
                   i == ns->mem[0] || (ns->nsockets > 1 && i == ns->mem[1]) ? ns->cache_bytes : 0);
}

/* Node k's routes: GPU to GPU of the node, and GPU <-> gw (its zone's
 * gateway router) through the GPU's NIC. */
static void write_node_routes(FILE *f, int k, const node_spec *ns, const char *gw)
{
    char pre[32], a[48], b[48];
    snprintf(pre, sizeof pre, "n%d-", k);
    path p, r;
    for (int x = 0; x < ns->ngpus; x++)
        for (int y = 0; y < ns->ngpus; y++)
            if (x != y) {
                gpu_path(ns, x, y, &p);
                snprintf(a, sizeof a, "n%d-gpu%d", k, x);
                snprintf(b, sizeof b, "n%d-gpu%d", k, y);
                write_route(f, pre, a, b, ns, &p);
            }
    if (ns->nnics)
        for (int x = 0; x < ns->ngpus; x++) {
            nic_path(ns, x, &p);
            reverse_path(&p, &r);
            if (r.n > 2) { /* staged inbound: the GPU pulls the NIC's data from host memory */
                r.link[r.n] = r.link[r.n - 1], r.dir[r.n] = r.dir[r.n - 1];
                r.link[r.n - 1] = ns->gpu_stage[x], r.dir[r.n - 1] = DIR_DOWN;
                r.n++;
            }
            snprintf(a, sizeof a, "n%d-gpu%d", k, x);
            write_route(f, pre, a, gw, ns, &p);
            write_route(f, pre, gw, a, ns, &r);
        }
}

/* Zone z of the cluster: one node (zone node<k>, gateway n<k>-gw), or with
 * node.nvlink.domain_gpus the nodes [k0, k1) of one NVLink domain (zone
 * domain<z>, gateway d<z>-gw).  Between two nodes of a domain a GPU reaches
 * another through the domain's NVLink switches: its own NVLink port up, the
 * other's down, as inside an NVSwitch node (the NVL72's switch trays are
 * non-blocking: 130 TB/s, 72 x 1.8 TB/s, GB200 NVL72 datasheet), never
 * through the NICs. */
static void write_zone(FILE *f, int z, int k0, int k1, const node_spec *const *nsk)
{
    char gw[32];
    const node_spec *ns = nsk[k0]; /* a domain's nodes are alike (one node group) */
    int dom = ns->domain_nodes > 1;
    snprintf(gw, sizeof gw, dom ? "d%d-gw" : "n%d-gw", dom ? z : k0);
    fprintf(f, dom ? " <zone id=\"domain%d\" routing=\"Full\">\n" : " <zone id=\"node%d\" routing=\"Full\">\n",
            dom ? z : k0);
    for (int k = k0; k < k1; k++)
        write_hosts(f, k, z, nsk[k]);
    if (ns->nnics)
        fprintf(f, "  <router id=\"%s\"/>\n", gw);
    for (int k = k0; k < k1; k++)
        write_node_routes(f, k, nsk[k], gw);
    for (int k = k0; k < k1; k++)
        for (int j = k0; j < k1; j++)
            for (int x = 0; j != k && x < ns->ngpus; x++)
                for (int y = 0; y < ns->ngpus; y++)
                    fprintf(f,
                            "  <route src=\"n%d-gpu%d\" dst=\"n%d-gpu%d\" symmetrical=\"NO\"><link_ctn id=\"n%d-%s\" "
                            "direction=\"UP\"/><link_ctn id=\"n%d-%s\" direction=\"DOWN\"/></route>\n",
                            k, x, j, y, k, ns->links[ns->gpu_nvl[x]].name, j, ns->links[ns->gpu_nvl[y]].name);
    fprintf(f, " </zone>\n");
}

/* The fabric between the zones: one switch, or leaves and a spine (a zone
 * joins the leaf of its first node), each router in a zone of its own. */
static void write_fabric(FILE *f, int nnodes, int nzones, const node_spec *const *nsk, const fabric *fb)
{
    int D = nsk[0]->domain_nodes, dom = D > 1;
    int nleaves = fb->fat_tree ? (nnodes + fb->per_leaf - 1) / fb->per_leaf : 0;
    char port[32], zone[32], gw[32];
    if (fb->fat_tree) {
        for (int l = 0; l < nleaves; l++)
            fprintf(f, " <zone id=\"leaf%d\" routing=\"None\"><router id=\"leaf%d-sw\"/></zone>\n", l, l);
        fprintf(f, " <zone id=\"spine\" routing=\"None\"><router id=\"spine-sw\"/></zone>\n");
    } else {
        fprintf(f, " <zone id=\"fabric\" routing=\"None\"><router id=\"fabric-sw\"/></zone>\n");
    }
    for (int z = 0; z < nzones; z++) {
        double bw = 0; /* the zone's NICs together */
        for (int k = z * D; k < (z + 1) * D && k < nnodes; k++)
            bw += nsk[k]->nic_bw_total;
        snprintf(port, sizeof port, dom ? "d%d-" : "n%d-", z);
        write_link(f, port, "port", bw, 0, 0, 0);
    }
    for (int l = 0; l < nleaves; l++) {
        double bw = 0; /* a full leaf's NICs (the nodes of a node group: node groups may differ) */
        for (int i = 0; i < fb->per_leaf; i++)
            bw += nsk[l * fb->per_leaf + i < nnodes ? l * fb->per_leaf + i : nnodes - 1]->nic_bw_total;
        snprintf(port, sizeof port, "leaf%d-", l);
        write_link(f, port, "up", bw / fb->oversub, fb->lat, 0, 0);
    }
    for (int z = 0; z < nzones; z++) {
        snprintf(zone, sizeof zone, dom ? "domain%d" : "node%d", z);
        snprintf(gw, sizeof gw, dom ? "d%d-gw" : "n%d-gw", z);
        snprintf(port, sizeof port, dom ? "d%d-port" : "n%d-port", z);
        if (fb->fat_tree)
            fprintf(f,
                    " <zoneRoute src=\"%s\" dst=\"leaf%d\" gw_src=\"%s\" gw_dst=\"leaf%d-sw\">"
                    "<link_ctn id=\"%s\" direction=\"UP\"/></zoneRoute>\n",
                    zone, z * D / fb->per_leaf, gw, z * D / fb->per_leaf, port);
        else
            fprintf(f,
                    " <zoneRoute src=\"%s\" dst=\"fabric\" gw_src=\"%s\" gw_dst=\"fabric-sw\">"
                    "<link_ctn id=\"%s\" direction=\"UP\"/></zoneRoute>\n",
                    zone, gw, port);
    }
    for (int l = 0; l < nleaves; l++)
        fprintf(f,
                " <zoneRoute src=\"leaf%d\" dst=\"spine\" gw_src=\"leaf%d-sw\" gw_dst=\"spine-sw\">"
                "<link_ctn id=\"leaf%d-up\" direction=\"UP\"/></zoneRoute>\n",
                l, l, l);
}

static char *write_xml(const char *name, const char *src, int nnodes, const node_spec *const *nsk, const fabric *fb)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\">\n<!-- generated by trainsim from ", f);
    comment_text(f, src);
    fputs(" (cluster ", f);
    comment_text(f, name);
    fputs(") -->\n<zone id=\"cluster\" routing=\"DijkstraCache\">\n", f);
    int D = nsk[0]->domain_nodes, nzones = (nnodes + D - 1) / D;
    /* every node's links in one zone ahead of the node zones: SimGrid 3.32
     * resolves a <link_ctn> from the root zone, depth first through the
     * zones in their order, so a link of the k-th node zone costs k zone
     * visits and loading grows as nodes squared; here the first child
     * answers every lookup (docs/performance.md) */
    fputs(" <zone id=\"links\" routing=\"None\">\n", f);
    for (int k = 0; k < nnodes; k++)
        write_links(f, k, nsk[k]);
    fputs(" </zone>\n", f);
    for (int z = 0; z < nzones; z++)
        write_zone(f, z, z * D, (z + 1) * D < nnodes ? (z + 1) * D : nnodes, nsk);
    if (nzones > 1)
        write_fabric(f, nnodes, nzones, nsk, fb);
    fprintf(f, "</zone>\n</platform>\n");
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---------- entry points ---------- */

/* What the engine needs of the node's rings and host staging (machine.h):
 * ring order, direction, and the host-memory links with their cache. */
static void machine_rings(sim_machine *m, const node_spec *const *nsk, int nnodes)
{
    m->ring_bidir = 1; /* rings inside a node run both ways where every node group's do */
    for (int k = 0; k < nnodes; k++)
        m->ring_bidir = m->ring_bidir && nsk[k]->bidir;
    m->ring_pos = sim_xcalloc((size_t)m->ngpus, sizeof *m->ring_pos, "the platform's ring order");
    /* on NVLink meshes, each GPU's links in its node (the collectives pack rings over them) */
    int mesh = 0;
    for (int k = 0; k < nnodes; k++)
        mesh |= nsk[k]->mesh;
    for (int k = 0; mesh && k < nnodes; k++)
        m->nvl_width = nsk[k]->ngpus > m->nvl_width ? nsk[k]->ngpus : m->nvl_width;
    if (mesh) {
        m->nvl_local = sim_xcalloc((size_t)m->ngpus, sizeof *m->nvl_local, "the platform's NVLinks");
        m->nvl_links = sim_xcalloc((size_t)m->ngpus * (size_t)m->nvl_width, 1, "the platform's NVLinks");
        for (int k = 0, r = 0; k < nnodes; k++)
            for (int g = 0; g < nsk[k]->ngpus; g++, r++) {
                m->nvl_local[r] = nsk[k]->mesh ? g : -1; /* -1: not on a mesh (as its XML host says) */
                for (int h = 0; nsk[k]->mesh && h < nsk[k]->ngpus; h++)
                    m->nvl_links[(size_t)r * (size_t)m->nvl_width + (size_t)h] =
                        (unsigned char)(h == g ? 0 : links_of(nsk[k], g, h));
            }
    }
    int nstage = 0;
    for (int k = 0, r = 0; k < nnodes; k++) {
        for (int g = 0; g < nsk[k]->ngpus; g++, r++)
            for (int pos = 0; pos < nsk[k]->ngpus; pos++)
                if (nsk[k]->ring_order[pos] == g)
                    m->ring_pos[r] = pos;
        nstage += nsk[k]->cache_bytes > 0 ? nsk[k]->nsockets : 0;
    }
    if (!nstage)
        return;
    m->stage = sim_xcalloc((size_t)nstage, sizeof *m->stage, "the platform's host-memory links");
    for (int k = 0; k < nnodes; k++)
        for (int s = 0; nsk[k]->cache_bytes > 0 && s < nsk[k]->nsockets; s++) {
            sim_stage *st = &m->stage[m->nstage++];
            snprintf(st->link, sizeof st->link, "n%d-%s", k, nsk[k]->links[nsk[k]->mem[s]].name);
            st->cache_bytes = nsk[k]->cache_bytes;
        }
}

static sim_machine *build(jctx *c, const cJSON *root)
{
    static const char *const keys[] = {"name",   "description", "nodes",           "node",
                                       "groups", "fabric",      "link_latency_us", NULL};
    plat_defaults df;
    plat_catalog_defaults(&df);
    if (!cJSON_IsObject(root))
        return jerr(c, "(top level)", "an object", root), NULL;
    if (check_keys(c, root, "", keys))
        return NULL;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (name && (!cJSON_IsString(name) || strlen(name->valuestring) >= sizeof ((sim_machine *)0)->name))
        return jerr(c, "name", "a string of at most 127 bytes", name), NULL;
    /* one kind of node ("nodes" + "node"), or node groups of different kinds
     * ("groups": [{"nodes": 4, "node": {...}}, ...]: mixed GPUs), numbered
     * in order: group 0's nodes first */
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
    int ngroups = 1, nnodes = 0, group_nodes[PLAT_MAX_GROUPS];
    if (groups) {
        ngroups = cJSON_IsArray(groups) ? cJSON_GetArraySize(groups) : 0;
        if (ngroups < 1 || ngroups > PLAT_MAX_GROUPS)
            return jerr(c, "groups", "a list of 1 to 16 node groups {\"nodes\": N, \"node\": {...}}", groups), NULL;
        if (cJSON_GetObjectItemCaseSensitive(root, "nodes") || cJSON_GetObjectItemCaseSensitive(root, "node"))
            return sim_errf(c->err, "%s: groups: give either \"groups\" or \"nodes\" with \"node\"", c->src), NULL;
        static const char *const gkeys[] = {"nodes", "node", NULL};
        for (int g = 0; g < ngroups; g++) {
            char gp[32];
            snprintf(gp, sizeof gp, "groups[%d]", g);
            const cJSON *grp = cJSON_GetArrayItem(groups, g);
            if (!cJSON_IsObject(grp))
                return jerr(c, gp, "an object {\"nodes\": N, \"node\": {...}}", grp), NULL;
            if (check_keys(c, grp, gp, gkeys) || get_int(c, grp, gp, "nodes", 1, 0, 1, &group_nodes[g]))
                return NULL;
            if (nnodes > SIM_MAX_GPUS - group_nodes[g])
                return sim_errf(c->err, "%s: groups: more than %d nodes", c->src, SIM_MAX_GPUS), NULL;
            nnodes += group_nodes[g];
        }
    } else {
        if (get_int(c, root, "", "nodes", 1, 0, 1, &nnodes))
            return NULL;
        group_nodes[0] = nnodes;
    }

    /* Latency overrides, in microseconds. */
    double lp = df.pcie_lat * 1e6, ln = df.nvlink_lat * 1e6, ls = df.socket_lat * 1e6, lf = df.fabric_lat * 1e6;
    const cJSON *lat = get_obj(c, root, "", "link_latency_us", 0);
    if (!lat && cJSON_GetObjectItemCaseSensitive(root, "link_latency_us"))
        return NULL;
    if (lat) {
        static const char *const lkeys[] = {"pcie", "nvlink", "socket", "fabric", NULL};
        if (check_keys(c, lat, "link_latency_us", lkeys) || get_pos(c, lat, "link_latency_us", "pcie", lp, &lp) ||
            get_pos(c, lat, "link_latency_us", "nvlink", ln, &ln) ||
            get_pos(c, lat, "link_latency_us", "socket", ls, &ls) ||
            get_pos(c, lat, "link_latency_us", "fabric", lf, &lf))
            return NULL;
    }

    fabric fb = {0, 1, 1.0, lf * 1e-6};
    const cJSON *fab = get_obj(c, root, "", "fabric", 0);
    if (!fab && cJSON_GetObjectItemCaseSensitive(root, "fabric"))
        return NULL;
    if (fab) {
        static const char *const fkeys[] = {"type", "nodes_per_leaf", "oversubscription", NULL};
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(fab, "type");
        if (check_keys(c, fab, "fabric", fkeys))
            return NULL;
        if (!cJSON_IsString(type) || (strcmp(type->valuestring, "switch") && strcmp(type->valuestring, "fat-tree")))
            return jerr(c, "fabric.type", "\"switch\" or \"fat-tree\"", type), NULL;
        fb.fat_tree = strcmp(type->valuestring, "fat-tree") == 0;
        if (fb.fat_tree && (get_int(c, fab, "fabric", "nodes_per_leaf", 1, 0, 1, &fb.per_leaf) ||
                            get_pos(c, fab, "fabric", "oversubscription", 1.0, &fb.oversub)))
            return NULL;
    }

    node_spec *ns = calloc((size_t)ngroups, sizeof *ns);
    const node_spec **nsk = calloc((size_t)nnodes, sizeof *nsk); /* each node's spec */
    sim_machine *m = NULL;
    int model_of[PLAT_MAX_GROUPS], nmodels = 0;
    double ngpus = 0;
    if (!ns || !nsk) {
        sim_errf(c->err, "%s: out of memory", c->src);
        goto out;
    }
    for (int g = 0, k = 0; g < ngroups; g++) {
        const cJSON *node = groups ? cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(groups, g), "node")
                                   : get_obj(c, root, "", "node", 1);
        if (!node) {
            if (groups)
                sim_errf(c->err, "%s: groups[%d].node: missing", c->src, g);
            goto out;
        }
        if (parse_node(c, node, group_nodes[g], &df, &ns[g], lp * 1e-6, ln * 1e-6, ls * 1e-6))
            goto out;
        if (ngroups > 1 && ns[g].domain_nodes > 1) {
            sim_errf(c->err, "%s: groups[%d].node.nvlink.domain_gpus: NVLink domains spanning nodes are not "
                             "supported in clusters of several node groups", c->src, g);
            goto out;
        }
        if (fb.fat_tree && fb.per_leaf % ns[g].domain_nodes) {
            sim_errf(c->err, "%s: fabric.nodes_per_leaf: %d does not hold whole NVLink domains of %d nodes "
                             "(node.nvlink.domain_gpus): a domain joins one leaf",
                     c->src, fb.per_leaf, ns[g].domain_nodes);
            goto out;
        }
        model_of[g] = nmodels;
        for (int h = 0; h < g; h++)
            if (!strcmp(ns[h].gpu.model, ns[g].gpu.model))
                model_of[g] = model_of[h];
        nmodels += model_of[g] == nmodels;
        ngpus += (double)group_nodes[g] * ns[g].ngpus;
        for (int i = 0; i < group_nodes[g]; i++)
            nsk[k++] = &ns[g];
    }
    if (ngpus > SIM_MAX_GPUS) {
        sim_errf(c->err, "%s: nodes x gpus_per_node = %.0f GPUs; trainsim simulates at most %d", c->src, ngpus,
                 SIM_MAX_GPUS);
        goto out;
    }

    m = sim_machine_new((int)ngpus, nmodels);
    if (!m) {
        sim_errf(c->err, "%s: out of memory", c->src);
        goto out;
    }
    snprintf(m->name, sizeof m->name, "%s", name ? name->valuestring : c->src);
    m->nnodes = nnodes;
    m->fabric = fb.fat_tree ? SIM_FABRIC_FAT_TREE : SIM_FABRIC_SWITCH;
    m->nodes_per_leaf = fb.fat_tree ? fb.per_leaf : 0;
    m->fabric_blocking = fb.fat_tree && fb.oversub > 1;
    for (int g = 0; g < ngroups; g++)
        m->gpus[model_of[g]] = ns[g].gpu;
    for (int k = 0, r = 0, g = 0, left = group_nodes[0]; k < nnodes; k++, left--) {
        if (!left) /* the next group's first node */
            left = group_nodes[++g];
        const node_spec *nk = nsk[k];
        for (int x = 0; x < nk->ngpus; x++, r++) {
            char h[48];
            snprintf(h, sizeof h, "n%d-gpu%d", k, x);
            m->host[r] = sim_xstrdup(h, "the platform's host names");
            m->node[r] = k;
            m->nic[r] = nk->nnics ? nic_of(nk, x) : 0;
            m->nvswitch[r] = nk->gpu_nvl[x] >= 0 ? k / nk->domain_nodes : -1;
            /* nic_path: GPUDirect RDMA on its own switch takes the GPU's link and the NIC's */
            m->nic_direct[r] = nk->nnics && nk->p2p && nk->gpu_sw[x] >= 0 && nk->nic_sw[nic_of(nk, x)] == nk->gpu_sw[x];
            m->gpu_model[r] = model_of[g];
        }
    }
    m->platform_xml = write_xml(m->name, c->src, nnodes, nsk, &fb);
    machine_rings(m, nsk, nnodes);
    if (!m->platform_xml) {
        sim_errf(c->err, "%s: out of memory writing the platform", c->src);
        sim_machine_free(m);
        m = NULL;
    }
out:
    free(ns);
    free(nsk);
    return m;
}

sim_machine *plat_from_json(const char *text, const char *source, sim_err *err)
{
    jctx c = {source ? source : "(cluster)", err};
    cJSON *root = sim_json_parse(text, c.src, err);
    if (!root)
        return NULL;
    sim_machine *m = build(&c, root);
    cJSON_Delete(root);
    return m;
}


static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

char *plat_cluster_text(const char *spec, char *source, size_t n, sim_err *err)
{
    if (!spec || !*spec)
        return sim_errf(err, "no platform given"), NULL;
    if (ends_with(spec, ".xml"))
        return sim_errf(err, "%s: a hand-written SimGrid platform, not a cluster JSON", spec), NULL;
    if (strchr(spec, '/') || ends_with(spec, ".json")) {
        snprintf(source, n, "%s", spec);
        return sim_read_file(spec, err);
    }
    char key[256];
    snprintf(key, sizeof key, "platforms/clusters/%s.json", spec);
    const char *text = sim_embedded(key);
    if (!text) {
        char list[1024];
        size_t len = 0;
        const char *p, *pre = "platforms/clusters/";
        list[0] = 0;
        for (int i = 0; (p = sim_embedded_path(i)) != NULL && len < sizeof list; i++)
            if (strncmp(p, pre, strlen(pre)) == 0 && ends_with(p, ".json"))
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%.*s", len ? ", " : "",
                                        (int)(strlen(p) - strlen(pre) - 5), p + strlen(pre));
        return sim_errf(err, "unknown platform \"%s\": not a built-in cluster (%s) nor a path to a .json or .xml file",
                        spec, list),
               NULL;
    }
    snprintf(source, n, "%s", key);
    char *copy = strdup(text);
    if (!copy)
        sim_errf(err, "out of memory");
    return copy;
}

sim_machine *plat_load(const char *spec, sim_err *err)
{
    if (spec && ends_with(spec, ".xml"))
        return plat_from_xml(spec, err);
    char source[256];
    char *text = plat_cluster_text(spec, source, sizeof source, err);
    if (!text)
        return NULL;
    sim_machine *m = plat_from_json(text, source, err);
    free(text);
    return m;
}
