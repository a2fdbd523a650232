/* staging.c — host-staged transfers and the cache in front of host DRAM.
 *
 * Without peer-to-peer (GeForce cards, or paths beyond NCCL's P2P level) a
 * GPU-to-GPU transfer goes through a host buffer (NCCL's SHM transport:
 * the sender writes the receiver's FIFO in host memory, the receiver reads
 * it), and so does the network without GPUDirect RDMA.  The platform routes
 * such transfers through the socket's host-memory link (platforms/,
 * n<k>-mem<s>, SHARED), whose bandwidth is what DRAM gives staged bytes.
 * But staged writes land in the last-level cache first (Intel DDIO: PCIe
 * writes allocate into a share of the LLC) and a reader that comes soon
 * enough finds them there: DRAM only sees the part of the in-flight staged
 * bytes that does not fit.  How much is in flight is set by NCCL's FIFOs:
 * a ring step moves a chunk of S/n bytes through a per-channel FIFO of 4
 * MiB (NCCL_BUFFSIZE) filled two slices deep, so a hop holds about 2S/n
 * bytes, at most 8 MiB with NCCL's two channels (collectives.c adds them
 * while a collective runs; engine.c adds a send's bytes, up to the same
 * 8 MiB, while it is in flight).  With F bytes in flight through a memory of
 * cache C, the spilled fraction is f = 1 - C/F (0 when F <= C) and the link
 * carries staged bytes at DRAM / f: the per-byte cost of a large staged
 * collective is higher than a small one's, which is what the RTX 3090
 * cluster's 32-GPU all-reduce shows (validation group oases-3090-blocks,
 * subset world32; platforms/README.md, Calibration).
 *
 * The machine names the memories and caches (sim_machine.stage); routes are
 * inspected once per ordered GPU pair (sg_host_get_route) and remembered in
 * a hash table.  Changing a link's bandwidth is how SimGrid re-shares the
 * flows in flight, so the effect reaches every flow through that memory. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "engine_internal.h"
#include "alloc.h"

#define STAGE_MAX_PER_ROUTE 4

typedef struct stage_rt {
    sg_link_t link;
    double dram_Bps, cache_bytes, inflight;
} stage_rt;

typedef struct route_slot {
    uint64_t key; /* (src << 32 | dst) + 1; 0 = empty */
    int n;
    int idx[STAGE_MAX_PER_ROUTE];
} route_slot;

static stage_rt *stages;
static int nstages;
static route_slot *table;
static size_t table_cap, table_used;

static void restage(stage_rt *st)
{
    double F = st->inflight, spill = F > st->cache_bytes ? 1 - st->cache_bytes / F : 0;
    /* spill -> 0: the cache takes everything; a finite cap keeps SimGrid's
     * solver well-conditioned (a million times DRAM never binds) */
    double bw = st->dram_Bps / fmax(spill, 1e-6);
    if (bw != sg_link_get_bandwidth(st->link))
        sg_link_set_bandwidth(st->link, bw);
}

int sim_staging_setup(sim_err *err)
{
    nstages = 0;
    if (E.m->nstage <= 0)
        return 0;
    stages = sim_xcalloc((size_t)E.m->nstage, sizeof *stages, "the host-memory links");
    for (int i = 0; i < E.m->nstage; i++) {
        sg_link_t l = sg_link_by_name(E.m->stage[i].link);
        if (!l)
            return sim_errf(err, "platform \"%s\": no host-memory link \"%s\"", E.m->name, E.m->stage[i].link);
        stages[nstages++] = (stage_rt){l, sg_link_get_bandwidth(l), E.m->stage[i].cache_bytes, 0};
        restage(&stages[nstages - 1]); /* nothing in flight: the cache holds it all */
    }
    return 0;
}

void sim_staging_teardown(void)
{
    for (int i = 0; i < nstages; i++)
        sg_link_set_bandwidth(stages[i].link, stages[i].dram_Bps);
    free(stages);
    free(table);
    stages = NULL, table = NULL;
    nstages = 0, table_cap = table_used = 0;
}

static route_slot *slot_of(uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (table_cap - 1);
    while (table[i].key && table[i].key != key)
        i = (i + 1) & (table_cap - 1);
    return &table[i];
}

static void grow(void)
{
    route_slot *old = table;
    size_t n = table_cap;
    table_cap = n ? 2 * n : 256;
    table = sim_xcalloc(table_cap, sizeof *table, "the routes through host memory");
    for (size_t i = 0; i < n; i++)
        if (old[i].key)
            *slot_of(old[i].key) = old[i];
    free(old);
}

/* The staging memories on the route from rank a to rank b. */
static const route_slot *route_stages(int a, int b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    if (table_cap) {
        route_slot *s = slot_of(key);
        if (s->key == key)
            return s;
    }
    if (2 * (table_used + 1) > table_cap)
        grow();
    route_slot *s = slot_of(key);
    memset(s, 0, sizeof *s);
    s->key = key;
    table_used++;
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(E.hosts[a], E.hosts[b], links);
    for (unsigned long k = 0; k < xbt_dynar_length(links); k++) {
        sg_link_t l = xbt_dynar_get_as(links, k, sg_link_t);
        for (int i = 0; i < nstages && s->n < STAGE_MAX_PER_ROUTE; i++)
            if (stages[i].link == l)
                s->idx[s->n++] = i;
    }
    xbt_dynar_free(&links);
    return s;
}

void sim_staging_hold(int a, int b, double bytes)
{
    if (nstages == 0 || a == b || bytes == 0)
        return;
    const route_slot *s = route_stages(a, b);
    for (int i = 0; s && i < s->n; i++) {
        stage_rt *st = &stages[s->idx[i]];
        st->inflight += bytes;
        if (st->inflight < 1) /* what was added is all taken back: no rounding residue */
            st->inflight = 0;
        restage(st);
    }
}
