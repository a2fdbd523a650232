/* test_staged_rings.c — rings through host-staged PCIe (no P2P), against
 * closed forms on uncontended nodes (neutral protocol numbers, PCIe route
 * latency 2 us):
 *  - four GPUs without bridges: every hop of a ring all-reduce is staged, so
 *    it takes 1.5 S / read + 6 latencies (each GPU reads its whole share
 *    through its 9 GB/s staged-read link);
 *  - NVLink bridges on (0,1), (2,3): NCCL's channels run both ways, so each
 *    GPU takes half through its bridge and half through PCIe: half the time;
 *    with the machine's ring_bidir cleared it is the unbridged time again
 *    (what a one-way ring gives: the bridges change nothing);
 *  - the cache in front of host memory (sim/staging.c): a 1 GiB all-reduce
 *    keeps 8 MiB in flight per hop, 32 MiB on the node, half beyond a 16 MiB
 *    cache, so host memory carries staged bytes at 2 x its 10 GB/s for the
 *    four hops: 5 GB/s each; a 4 MiB all-reduce keeps 8 MiB in flight, all
 *    in the cache, and runs at the 25 GB/s read links; after the large one,
 *    the memory is back to what a small one needs;
 *  - a 1 GiB send keeps 8 MiB in flight: past a 2 MiB cache 3/4 spill, so
 *    host memory carries it at 10 / 0.75 GB/s. */
#include "platforms/platform.h"
#include "sim/engine.h"
#include "star.h"

#define LAT 2e-6

static sim_machine *node(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"nodes\": 1, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"p2p\": false, "
             "\"pcie\": {\"gen\": 4}, %s}}",
             extra);
    sim_err err;
    sim_machine *m = plat_from_json(text, "test", &err);
    if (!m) {
        printf("FAIL: %s\n", err.msg);
        exit(1);
    }
    sim_gpu_neutral_comm(&m->gpus[0]);
    return m;
}

/* Simulated seconds of all-reduces of sizes[0..n) over the four GPUs, one after another. */
static double allreduce(sim_machine *m, const double *sizes, int n, sim_coll_mode mode)
{
    sim_schedule *s = sim_sched_new(4);
    int ranks[4] = {0, 1, 2, 3};
    int c = sim_sched_comm(s, "tp", ranks, 4);
    for (int k = 0; k < n; k++)
        for (int r = 0; r < 4; r++)
            sim_sched_collective(s, sim_sched_stream(s, r, "tp"), NULL, SIM_COLL_ALLREDUCE, c, (int64_t)sizes[k], 0,
                                 SIM_NO_TAGS, NULL, 0);
    sim_options o;
    sim_options_default(&o);
    o.coll_mode = mode;
    sim_result res;
    sim_err e;
    if (sim_run_isolated(s, m, &o, &res, &e) != 0) {
        printf("FAIL: simulation error: %s\n", e.msg);
        exit(1);
    }
    double t = res.iteration_s;
    sim_result_free(&res);
    sim_sched_free(s);
    return t;
}

int main(void)
{
    (void)star_machine; /* star.h for near() only */
    int fails = 0;
    const double S = 1 << 30, RD = 9e9;
    for (int mode = SIM_COLLMODE_STEP; mode <= SIM_COLLMODE_AGGREGATED; mode++) {
        const char *how = mode == SIM_COLLMODE_STEP ? "step by step" : "aggregated";
        sim_machine *plain = node("\"host_staging_GBps\": 1000, \"host_read_GBps\": 9");
        double t0 = allreduce(plain, &S, 1, (sim_coll_mode)mode);
        char what[128];
        snprintf(what, sizeof what, "no bridges, %s", how);
        fails += near(t0, 1.5 * S / RD + 6 * LAT, 1e-3, what);
        sim_machine_free(plain);

        sim_machine *br = node("\"host_staging_GBps\": 1000, \"host_read_GBps\": 9, \"nvlink\": {\"pairs\": [[0, 1], [2, 3]]}");
        snprintf(what, sizeof what, "bridged pairs, both ways, %s", how);
        fails += near(allreduce(br, &S, 1, (sim_coll_mode)mode), 0.75 * S / RD + 6 * LAT, 1e-3, what);
        br->ring_bidir = 0;
        snprintf(what, sizeof what, "bridged pairs, one way, %s", how);
        fails += near(allreduce(br, &S, 1, (sim_coll_mode)mode), 1.5 * S / RD + 6 * LAT, 1e-3, what);
        sim_machine_free(br);
    }

    sim_machine *c = node("\"host_read_GBps\": 25, \"host_staging_GBps\": 10, \"host_cache_MB\": 16");
    double big = allreduce(c, &S, 1, SIM_COLLMODE_STEP);
    fails += near(big, 1.5 * S / 5e9 + 6 * LAT, 1e-3, "1 GiB spills half of its 32 MiB: 5 GB/s per hop");
    const double small = 4 << 20;
    double ts = allreduce(c, &small, 1, SIM_COLLMODE_STEP);
    fails += near(ts, 1.5 * small / 25e9 + 6 * LAT, 1e-3, "4 MiB stays in the cache: the 25 GB/s read links");
    double both[2] = {S, small};
    fails += near(allreduce(c, both, 2, SIM_COLLMODE_STEP), big + ts, 1e-3, "the memory recovers after a large one");
    sim_machine_free(c);

    sim_machine *d = node("\"host_read_GBps\": 25, \"host_staging_GBps\": 10, \"host_cache_MB\": 2");
    sim_schedule *s = sim_sched_new(4);
    sim_sched_send(s, sim_sched_stream(s, 0, "send"), NULL, 1, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    sim_sched_recv(s, sim_sched_stream(s, 1, "recv"), NULL, 0, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    sim_options o;
    sim_options_default(&o);
    sim_result res;
    sim_err e;
    if (sim_run_isolated(s, d, &o, &res, &e) != 0) {
        printf("FAIL: simulation error: %s\n", e.msg);
        return 1;
    }
    fails += near(res.iteration_s, S / (10e9 / 0.75) + LAT, 1e-3, "a 1 GiB send spills 3/4 of its 8 MiB");
    sim_result_free(&res);
    sim_sched_free(s);
    sim_machine_free(d);
    return fails ? 1 : 0;
}
