/* Collectives on a multi-node NVLink domain (gb200-nvl72: two racks of 18
 * trays x 4 GB200, node.nvlink.domain_gpus 72; sim/collectives.c treats a
 * rack as one NCCL node, as NCCL's MNNVL does):
 *  - a 1 GB ring all-reduce over the 72 GPUs of one rack runs over NVLink:
 *    its bus bandwidth is near the 900 GB/s NVLink port, never above it,
 *    and over 3 times what one tray's four NICs carry;
 *  - over both racks (144 GPUs) the two hops between racks go through the
 *    NICs, one channel per rail (16 channels): slower than inside a rack,
 *    faster than the same GPUs without the domain (trays as nodes: 4
 *    channels through 4 NICs);
 *  - a data-parallel group of one GPU per tray of a rack (18 members) runs
 *    over NVLink, not through the NICs;
 *  - NVLink SHARP spans the rack: with NVLS figures (the catalogue's GB200
 *    has none, so a GPU object borrows the H100's fitted ones) the automatic
 *    choice beats the ring on 72 GPUs of different trays, and runs no NVLS
 *    over two racks (the same time as the ring or tree it picks without). */
#include "platforms/platform.h"
#include "star.h"

static double allreduce_algo(const sim_machine *m, const int *ranks, int n, double bytes, sim_algo algo)
{
    sim_schedule *s = one_collective(m->ngpus, ranks, n, SIM_COLL_ALLREDUCE, algo, bytes);
    sim_options o;
    sim_options_default(&o);
    sim_result r;
    double t = run_opts(s, m, &o, &r);
    sim_result_free(&r);
    sim_sched_free(s);
    return t;
}

static double allreduce(const sim_machine *m, const int *ranks, int n, double bytes)
{
    return allreduce_algo(m, ranks, n, bytes, SIM_ALGO_RING);
}

static double busbw(int n, double bytes, double t) { return 2.0 * (n - 1) / n * bytes / t; }

static int within(double got, double lo, double hi, const char *what)
{
    printf("%-60s %.1f GB/s (bounds %.1f .. %.1f)\n", what, got / 1e9, lo / 1e9, hi / 1e9);
    if (!(got >= lo && got <= hi)) {
        printf("FAIL: %s\n", what);
        return 1;
    }
    return 0;
}

static sim_machine *load(const char *spec, int json)
{
    sim_err e = {{0}};
    sim_machine *m = json ? plat_from_json(spec, "trays.json", &e) : plat_load(spec, &e);
    if (!m)
        printf("FAIL: %s\n", e.msg);
    return m;
}

/* gb200-nvl72 without its domain: each tray its own NVSwitch node. */
static const char TRAYS[] =
    "{\"nodes\": 36, \"node\": {\"gpu\": \"GB200\", \"gpus_per_node\": 4, \"sockets\": 2, \"pcie\": {\"gen\": 5},"
    " \"switches\": [{\"socket\": 0, \"gpus\": [0]}, {\"socket\": 0, \"gpus\": [1]}, {\"socket\": 1, \"gpus\": [2]},"
    " {\"socket\": 1, \"gpus\": [3]}], \"nvlink\": {\"nvswitch\": true}, \"nic_efficiency\": 0.96,"
    " \"nics\": [{\"model\": \"IB-NDR\", \"switch\": 0}, {\"model\": \"IB-NDR\", \"switch\": 1},"
    " {\"model\": \"IB-NDR\", \"switch\": 2}, {\"model\": \"IB-NDR\", \"switch\": 3}]}, \"fabric\": {\"type\": \"switch\"}}";

/* TRAYS' layout as two racks of GB200 with NVLS figures (the H100-SXM's,
 * fitted on Azure's ND H100 v5 curve: a stand-in, not a GB200 figure). */
static const char NVLS[] =
    "{\"nodes\": 36, \"node\": {\"gpu\": {\"model\": \"GB200\", \"tflops\": {\"fp32\": 90, \"bf16\": 2500},"
    " \"memory_GB\": 186, \"memory_GBps\": 8000, \"pcie_gen\": 5, \"p2p\": true,"
    " \"nvlink\": {\"kind\": \"nvswitch\", \"GBps\": 900}, \"nccl\": {\"nvls\": {\"base_us\": 32.35, \"efficiency\": 0.6086}}},"
    " \"gpus_per_node\": 4, \"nvlink\": {\"nvswitch\": true, \"domain_gpus\": 72}, \"nic\": \"IB-NDR\"},"
    " \"fabric\": {\"type\": \"switch\"}}";


static int nvls_spans_the_rack(void)
{
    sim_machine *m = load(NVLS, 1);
    if (!m)
        return 1;
    const double S = 1024.0 * (1 << 20);
    int fails = 0, ranks[144];
    for (int i = 0; i < 144; i++)
        ranks[i] = i;
    double ring = allreduce_algo(m, ranks, 72, S, SIM_ALGO_RING), best = allreduce_algo(m, ranks, 72, S, SIM_ALGO_AUTO);
    fails += within(busbw(72, S, best), 1.2 * busbw(72, S, ring), INFINITY, "one rack with NVLS figures: auto (NVLS) busbw");
    /* 16 MB: the choice is NCCL's cost model's, which may pick the ring where
     * the simulated tree is faster; either way not NVLS */
    double s2 = S / 64, ring2 = allreduce_algo(m, ranks, 144, s2, SIM_ALGO_RING),
           tree2 = allreduce_algo(m, ranks, 144, s2, SIM_ALGO_TREE), auto2 = allreduce_algo(m, ranks, 144, s2, SIM_ALGO_AUTO);
    printf("two racks, 16 MB: ring %.3f ms, tree %.3f ms, auto %.3f ms\n", ring2 * 1e3, tree2 * 1e3, auto2 * 1e3);
    int same = fabs(auto2 - ring2) <= 1e-3 * ring2 || fabs(auto2 - tree2) <= 1e-3 * tree2;
    if (!same)
        printf("FAIL: two racks: auto is neither the ring nor the tree\n");
    fails += !same;
    sim_machine_free(m);
    return fails;
}

int main(void)
{
    sim_machine *m = load("gb200-nvl72", 0), *trays = load(TRAYS, 1);
    if (!m || !trays)
        return 1;
    const double S = 1024.0 * (1 << 20), NVL = 900e9, NIC = 48e9;
    int fails = 0, ranks[144];
    for (int i = 0; i < 144; i++)
        ranks[i] = i;

    double rack = busbw(72, S, allreduce(m, ranks, 72, S));
    fails += within(rack, 0.5 * NVL, 1.001 * NVL, "72 GPUs of one rack, 1 GB ring all-reduce, busbw");
    fails += within(rack, 3 * 4 * NIC, INFINITY, "... more than 3x a tray's four NICs");

    double two = busbw(144, S, allreduce(m, ranks, 144, S));
    fails += within(two, 0, 0.99 * rack, "144 GPUs of two racks, busbw, below one rack's");
    double flat = busbw(144, S, allreduce(trays, ranks, 144, S));
    fails += within(flat, 0, 4 * NIC * 1.001, "the same 144 GPUs, trays as nodes (4 NICs), busbw");
    fails += within(two, 2 * flat, INFINITY, "two racks: more than twice the trays-as-nodes busbw");

    int dp[18];
    for (int i = 0; i < 18; i++)
        dp[i] = 4 * i + 2;
    double dpbw = busbw(18, S, allreduce(m, dp, 18, S));
    fails += within(dpbw, 0.5 * NVL, 1.001 * NVL, "one GPU per tray of a rack (18), busbw over NVLink");
    sim_machine_free(m);
    sim_machine_free(trays);
    fails += nvls_spans_the_rack();
    return fails != 0;
}
