/* test_routes_galvatron.c — galvatron-pcie-2x8: P2P under one PCIe switch
 * stays below it; across sockets it climbs both switch uplinks and the
 * socket link; GPUs on socket 1 reach the NIC (on socket 0's switch)
 * through host memory and the socket link, and four such flows share the
 * one uplink. */
#include "simhelp.h"

static const double GB = 1e9, PCIE3 = 12.5e9, EDR = 12.5e9;

static void scenario(int argc, char **argv)
{
    (void)argc, (void)argv;
    char r[4096];
    sh_route("n0-gpu0", "n0-gpu3", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-gpu3-pcie_DOWN") == 0, "P2P same switch \"%s\"", r);
    sh_route("n0-gpu1", "n0-gpu6", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu1-pcie_UP n0-sw0-up_UP n0-upi_UP n0-sw1-up_DOWN n0-gpu6-pcie_DOWN") == 0,
          "cross-socket \"%s\"", r);
    sh_route("n0-gpu6", "n0-gpu1", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu6-pcie_UP n0-sw1-up_UP n0-upi_DOWN n0-sw0-up_DOWN n0-gpu1-pcie_DOWN") == 0,
          "cross-socket back \"%s\"", r);
    double t = sh_time1("n0-gpu0", "n0-gpu3", GB);
    CHECK(close_rel(t, 2e-6 + GB / PCIE3, 1e-3), "P2P 1 GB took %g", t);

    /* GPU 0 shares the NIC's switch: GPUDirect RDMA. */
    sh_route("n0-gpu0", "n1-gpu0", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-nic0_UP n0-port_UP n1-port_DOWN n1-nic0_DOWN n1-gpu0-pcie_DOWN") == 0,
          "GPUDirect route \"%s\"", r);
    /* GPU 5 (socket 1): host memory, socket link, down switch 0 to the NIC. */
    sh_route("n0-gpu5", "n1-gpu0", r, sizeof r);
    CHECK(strncmp(r, "n0-gpu5-pcie_UP n0-sw1-up_UP n0-mem1 n0-upi_DOWN n0-sw0-up_DOWN n0-nic0_UP", 73) == 0,
          "staged route \"%s\"", r);
    /* Two flows from one socket-1 switch through its one uplink... and the
     * NIC: both 12.5 GB/s, so twice as long as one. */
    sh_flows[0].src = "n0-gpu4", sh_flows[0].dst = "n1-gpu0", sh_flows[0].bytes = GB;
    sh_flows[1].src = "n0-gpu5", sh_flows[1].dst = "n1-gpu1", sh_flows[1].bytes = GB;
    double t2 = sh_run_flows(2);
    double lat = sg_host_get_route_latency(sg_host_by_name("n0-gpu4"), sg_host_by_name("n1-gpu0"));
    CHECK(close_rel(t2, lat + 2 * GB / EDR, 1e-3), "two flows took %g, expected %g", t2, lat + 2 * GB / EDR);
}

int main(int argc, char **argv)
{
    (void)argc;
    return sh_main("galvatron-pcie-2x8", NULL, argv[0], scenario);
}
