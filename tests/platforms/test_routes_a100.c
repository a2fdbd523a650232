/* test_routes_a100.c — a100-sxm-128n in SimGrid: NVSwitch inside a node,
 * one HDR NIC per GPU pair switch with GPUDirect RDMA, and a two-level fat
 * tree whose leaf uplinks appear only between leaves.  Also times the
 * platform load (1,024 GPUs). */
#include <time.h>

#include "simhelp.h"

/* HDR at the 24 of 25 GB/s NCCL reaches (the cluster's nic_efficiency 0.96) */
static const double GB = 1e9, NVL = 300e9, HDR = 24e9;

static void scenario(int argc, char **argv)
{
    (void)argc, (void)argv;
    char r[4096];
    sh_route("n3-gpu1", "n3-gpu6", r, sizeof r);
    CHECK(strcmp(r, "n3-gpu1-nvl_UP n3-gpu6-nvl_DOWN") == 0, "NVSwitch route \"%s\"", r);
    double t = sh_time1("n3-gpu1", "n3-gpu6", GB);
    CHECK(close_rel(t, 2 * 0.7e-6 + GB / NVL, 1e-3), "NVSwitch 1 GB took %g", t);

    /* Same leaf (nodes 0..15): no leaf uplink; GPUDirect: PCIe slot then NIC. */
    sh_route("n0-gpu0", "n1-gpu0", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-nic0_UP n0-port_UP n1-port_DOWN n1-nic0_DOWN n1-gpu0-pcie_DOWN") == 0,
          "same-leaf route \"%s\"", r);
    /* GPU 1 uses the second NIC of its switch, GPU 2 the first of switch 1. */
    CHECK(sh_route_has("n0-gpu1", "n1-gpu1", "n0-nic1_UP"), "GPU 1 -> NIC 1");
    CHECK(sh_route_has("n0-gpu2", "n1-gpu2", "n0-nic2_UP"), "GPU 2 -> NIC 2");
    CHECK(sh_route_has("n0-gpu7", "n1-gpu7", "n1-nic7_DOWN"), "GPU 7 <- NIC 7");
    /* Other leaf: through both leaf uplinks. */
    sh_route("n0-gpu0", "n20-gpu0", r, sizeof r);
    CHECK(strstr(r, "leaf0-up_UP leaf1-up_DOWN") != NULL, "cross-leaf route \"%s\"", r);
    double lat = 2e-6 + 2 * 0.3e-6 + 2e-6;
    t = sh_time1("n0-gpu0", "n20-gpu0", GB);
    CHECK(close_rel(t, lat + GB / HDR, 1e-3), "cross-leaf 1 GB took %g, expected %g", t, lat + GB / HDR);

    /* Eight GPUs of node 0 to node 1: eight NICs, no sharing. */
    static char src[8][16], dst[8][16];
    for (int i = 0; i < 8; i++) {
        snprintf(src[i], sizeof src[i], "n0-gpu%d", i);
        snprintf(dst[i], sizeof dst[i], "n1-gpu%d", i);
        sh_flows[i].src = src[i], sh_flows[i].dst = dst[i], sh_flows[i].bytes = GB;
    }
    t = sh_run_flows(8);
    CHECK(close_rel(t, 2e-6 + 2e-6 + GB / HDR, 1e-3), "8 rail flows took %g", t);
}

int main(int argc, char **argv)
{
    (void)argc;
    sim_err err = {{0}};
    sim_machine *m = plat_load("a100-sxm-128n", &err);
    if (!m) {
        fprintf(stderr, "plat_load: %s\n", err.msg);
        return 1;
    }
    clock_t c0 = clock();
    if (sh_load(m, argv[0]))
        return 1;
    double load_s = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(load_s < 5, "loading 1,024 GPUs took %g s", load_s);
    sg_actor_create("scenario", sg_host_by_name("n0-gpu0"), scenario, 0, NULL);
    simgrid_run();
    sim_machine_free(m);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures != 0;
}
