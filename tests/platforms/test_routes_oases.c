/* test_routes_oases.c — the generated oases-3090 platform in SimGrid:
 * no-P2P RTX 3090 traffic is staged through host memory, cross-node traffic
 * goes through the node's one 100 Gb/s NIC, staged bytes share the node's
 * host memory (a SHARED link: its DRAM capacity for staged bytes; the cache
 * in front of it is the engine's, sim/staging.c) and each receiving GPU's
 * read link, and times follow latency + bytes / bottleneck exactly (CM02
 * without cross-traffic). */
#include "simhelp.h"

static const double GB = 1e9;
/* Independent of the generator: catalogue figures. */
/* The cluster's fitted values (platforms/clusters/oases-3090.json, platforms/README.md Calibration):
 * NIC100 is 100 GbE at nic_efficiency, STAGING host_staging_GBps, HOSTRD host_read_GBps. */
static const double PCIE4 = 25e9, STAGING = 28.61e9, HOSTRD = 25e9, NIC100 = 0.867 * 12.5e9;
static const double LAT_PCIE = 1e-6, LAT_NIC = 3e-6;

static void scenario(int argc, char **argv)
{
    (void)argc, (void)argv;
    char r[4096];

    /* Intra-node: GPU -> host memory -> GPU, never a direct PCIe hop. */
    sh_route("n0-gpu0", "n0-gpu1", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-mem0 n0-gpu1-hostrd_DOWN n0-gpu1-pcie_DOWN") == 0, "intra-node route is \"%s\"", r);
    double lat = sg_host_get_route_latency(sg_host_by_name("n0-gpu0"), sg_host_by_name("n0-gpu1"));
    double bw = sg_host_get_route_bandwidth(sg_host_by_name("n0-gpu0"), sg_host_by_name("n0-gpu1"));
    CHECK(close_rel(lat, 2 * LAT_PCIE, 1e-9), "intra latency %g", lat);
    CHECK(close_rel(bw, fmin(PCIE4, HOSTRD), 1e-9), "intra bandwidth %g (slot and staged reads)", bw);
    double t = sh_time1("n0-gpu0", "n0-gpu1", GB);
    CHECK(close_rel(t, 2 * LAT_PCIE + GB / fmin(PCIE4, HOSTRD), 1e-3), "intra 1 GB took %g s", t);

    /* Cross-node: PCIe, staging (GeForce has no GPUDirect RDMA), NIC, port. */
    sh_route("n0-gpu2", "n5-gpu3", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu2-pcie_UP n0-mem0 n0-nic0_UP n0-port_UP n5-port_DOWN n5-nic0_DOWN n5-mem0 "
                    "n5-gpu3-hostrd_DOWN n5-gpu3-pcie_DOWN") == 0,
          "cross-node route is \"%s\"", r);
    sh_route("n5-gpu3", "n0-gpu2", r, sizeof r);
    CHECK(strcmp(r, "n5-gpu3-pcie_UP n5-mem0 n5-nic0_UP n5-port_UP n0-port_DOWN n0-nic0_DOWN n0-mem0 "
                    "n0-gpu2-hostrd_DOWN n0-gpu2-pcie_DOWN") == 0,
          "reverse cross-node route is \"%s\"", r);
    double xlat = 2 * LAT_PCIE + LAT_NIC;
    lat = sg_host_get_route_latency(sg_host_by_name("n0-gpu2"), sg_host_by_name("n5-gpu3"));
    CHECK(close_rel(lat, xlat, 1e-9), "cross latency %g, expected %g", lat, xlat);
    t = sh_time1("n0-gpu2", "n5-gpu3", GB);
    CHECK(close_rel(t, xlat + GB / NIC100, 1e-3), "cross 1 GB took %g s, expected %g", t, xlat + GB / NIC100);

    /* Two GPUs of node 0 to two GPUs of node 1 share the one NIC: twice as long. */
    sh_flows[0].src = "n0-gpu0", sh_flows[0].dst = "n1-gpu0", sh_flows[0].bytes = GB;
    sh_flows[1].src = "n0-gpu1", sh_flows[1].dst = "n1-gpu1", sh_flows[1].bytes = GB;
    double t2 = sh_run_flows(2);
    CHECK(close_rel(t2, xlat + 2 * GB / NIC100, 1e-3), "two flows through one NIC took %g s, expected %g", t2,
          xlat + 2 * GB / NIC100);

    /* Opposite directions: the NIC is full duplex (SPLITDUPLEX) and both
     * flows bounce through node 0's host memory, a SHARED link (28.6 GB/s
     * split in two), so each is held by the NIC (one direction each). */
    CHECK(sh_route_has("n1-gpu1", "n0-gpu1", "n0-nic0_DOWN"), "inbound flow uses the NIC's DOWN side");
    sh_flows[0].src = "n0-gpu0", sh_flows[0].dst = "n1-gpu0";
    sh_flows[1].src = "n1-gpu1", sh_flows[1].dst = "n0-gpu1";
    t2 = sh_run_flows(2);
    CHECK(close_rel(t2, xlat + GB / NIC100, 1e-3), "opposite flows took %g s, expected %g", t2,
          xlat + GB / NIC100);

    /* Two staged copies inside one node to different GPUs share host
     * memory (SHARED: 28.6 GB/s for both, below each one's 25 GB/s slot). */
    sh_flows[0].src = "n2-gpu0", sh_flows[0].dst = "n2-gpu1";
    sh_flows[1].src = "n2-gpu3", sh_flows[1].dst = "n2-gpu2";
    t2 = sh_run_flows(2);
    CHECK(close_rel(t2, 2 * LAT_PCIE + 2 * GB / STAGING, 1e-3), "two staged copies took %g s", t2);
    /* Two copies into one GPU share its read link (25 GB/s < 28.6). */
    sh_flows[0].src = "n3-gpu0", sh_flows[0].dst = "n3-gpu2";
    sh_flows[1].src = "n3-gpu1", sh_flows[1].dst = "n3-gpu2";
    t2 = sh_run_flows(2);
    CHECK(close_rel(t2, 2 * LAT_PCIE + 2 * GB / fmin(HOSTRD, STAGING), 1e-3), "two copies into one GPU took %g s", t2);
}

int main(int argc, char **argv)
{
    (void)argc;
    return sh_main("oases-3090", NULL, argv[0], scenario);
}
