/* test_routes_nvl72.c — gb200-nvl72 in SimGrid: two racks of 18 trays x 4
 * GB200 whose trays share one NVLink domain per rack
 * (node.nvlink.domain_gpus 72).  Two GPUs of different trays of one rack
 * talk over their NVLink ports through the switch at NVLink speed, never
 * through a NIC; GPUs of the two racks go through their own NICs; four
 * tray-to-tray flows at once each keep a GPU's NVLink.  The generated XML
 * loads back (plat_from_xml) with the same domains. */
#include "simhelp.h"

static const double GB = 1e9, NVL = 900e9, NDR = 48e9, LAT_NVL = 0.7e-6, LAT_NIC = 2e-6;

static void scenario(int argc, char **argv)
{
    (void)argc, (void)argv;
    char r[4096];
    /* trays 0 and 1 of rack 0: NVLink only */
    sh_route("n0-gpu0", "n1-gpu2", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-nvl_UP n1-gpu2-nvl_DOWN") == 0, "cross-tray route \"%s\"", r);
    double t = sh_time1("n0-gpu0", "n1-gpu2", GB);
    CHECK(close_rel(t, 2 * LAT_NVL + GB / NVL, 1e-3), "cross-tray 1 GB took %g, expected %g", t,
          2 * LAT_NVL + GB / NVL);
    /* the first and the last tray of rack 1 (nodes 18..35) */
    sh_route("n35-gpu3", "n18-gpu1", r, sizeof r);
    CHECK(strcmp(r, "n35-gpu3-nvl_UP n18-gpu1-nvl_DOWN") == 0, "rack 1 route \"%s\"", r);
    /* inside a tray: the same switch */
    sh_route("n5-gpu1", "n5-gpu2", r, sizeof r);
    CHECK(strcmp(r, "n5-gpu1-nvl_UP n5-gpu2-nvl_DOWN") == 0, "in-tray route \"%s\"", r);
    /* rack 0 to rack 1: the sender's NIC, the racks' ports, the receiver's NIC */
    sh_route("n0-gpu0", "n18-gpu0", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-nic0_UP d0-port_UP d1-port_DOWN n18-nic0_DOWN n18-gpu0-pcie_DOWN") == 0,
          "cross-rack route \"%s\"", r);
    CHECK(sh_route_has("n17-gpu3", "n35-gpu3", "n17-nic3_UP"), "GPU 3 of tray 17 leaves by its own NIC");
    t = sh_time1("n0-gpu0", "n18-gpu0", GB);
    CHECK(close_rel(t, 2 * 1e-6 + LAT_NIC + GB / NDR, 1e-3), "cross-rack 1 GB took %g, expected %g", t,
          2 * 1e-6 + LAT_NIC + GB / NDR);
    CHECK(t > 10 * (2 * LAT_NVL + GB / NVL), "a rack-to-rack GB (%g s) is far slower than NVLink", t);
    /* tray 0's four GPUs to tray 1's at once: each its own NVLink port */
    static char src[4][16], dst[4][16];
    for (int i = 0; i < 4; i++) {
        snprintf(src[i], sizeof src[i], "n0-gpu%d", i);
        snprintf(dst[i], sizeof dst[i], "n1-gpu%d", (i + 1) % 4);
        sh_flows[i].src = src[i], sh_flows[i].dst = dst[i], sh_flows[i].bytes = GB;
    }
    t = sh_run_flows(4);
    CHECK(close_rel(t, 2 * LAT_NVL + GB / NVL, 1e-3), "4 tray-to-tray flows took %g", t);
}

/* The XML written out and read back: same GPUs, trays and NVLink domains. */
static void loads_back(const sim_machine *m)
{
    char path[] = "/tmp/trainsim-nvl72-XXXXXX.xml";
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0, "temporary file");
    if (fd < 0)
        return;
    size_t n = strlen(m->platform_xml);
    CHECK(write(fd, m->platform_xml, n) == (ssize_t)n, "write");
    close(fd);
    sim_err err = {{0}};
    sim_machine *x = plat_from_xml(path, &err);
    unlink(path);
    CHECK(x != NULL, "the XML loads back: %s", err.msg);
    if (!x)
        return;
    CHECK(x->ngpus == 144, "%d GPUs", x->ngpus);
    int same = x->ngpus == m->ngpus;
    for (int r = 0; same && r < m->ngpus; r++)
        same = x->node[r] == m->node[r] && x->nvswitch[r] == m->nvswitch[r] && x->nic[r] == m->nic[r];
    CHECK(same, "nodes, NVLink domains and NICs read back");
    sim_machine_free(x);
}

int main(int argc, char **argv)
{
    (void)argc;
    sim_err err = {{0}};
    sim_machine *m = plat_load("gb200-nvl72", &err);
    if (!m) {
        fprintf(stderr, "plat_load: %s\n", err.msg);
        return 1;
    }
    CHECK(m->ngpus == 144 && m->nnodes == 36, "%d GPUs on %d nodes", m->ngpus, m->nnodes);
    CHECK(m->nvswitch[0] == 0 && m->nvswitch[71] == 0 && m->nvswitch[72] == 1 && m->nvswitch[143] == 1,
          "NVLink domains by rack: %d %d %d %d", m->nvswitch[0], m->nvswitch[71], m->nvswitch[72], m->nvswitch[143]);
    CHECK(m->node[4] == 1 && m->nic[5] == 1, "tray 1's GPU 1 on NIC 1");
    loads_back(m);
    return sh_main(NULL, m, argv[0], scenario);
}
