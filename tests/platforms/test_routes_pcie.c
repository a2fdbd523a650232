/* test_routes_pcie.c — PCIe layouts and NCCL's transport per path: with
 * node.p2p_level PXB (NCCL's default on Intel CPUs) two GPUs under one
 * switch talk peer-to-peer through the switch's P2P link (shared by both
 * directions) and GPUs under different switches stage through host memory;
 * the SHM buffer lives in the receiver's socket (NCCL's receiver creates
 * it), so a cross-socket copy crosses the socket link before host memory;
 * the default level (SYS) keeps P2P on every path.  The machine carries the
 * node's ring order (NVLink partners adjacent), the direction flag, and the
 * host-memory links with their cache; the XML carries them too. */
#include "simhelp.h"

#include "platforms/platform.h"

#define NODE_PXB                                                                                                    \
    "{\"nodes\": 1, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 8, \"sockets\": 2, \"p2p\": true, "          \
    "\"p2p_level\": \"%s\", \"pcie\": {\"gen\": 3}, \"host_cache_MB\": 2, \"host_staging_GBps\": 20, "            \
    "\"switches\": ["                                                                                               \
    "{\"socket\": 0, \"gpus\": [0, 1], \"uplink\": {\"gen\": 3}, \"p2p_GBps\": 8},"                                \
    "{\"socket\": 0, \"gpus\": [2, 3], \"uplink\": {\"gen\": 3}, \"p2p_GBps\": 8},"                                \
    "{\"socket\": 1, \"gpus\": [4, 5], \"uplink\": {\"gen\": 3}, \"p2p_GBps\": 8},"                                \
    "{\"socket\": 1, \"gpus\": [6, 7], \"uplink\": {\"gen\": 3}, \"p2p_GBps\": 8}]}}"

static const double GB = 1e9;

static void scenario(int argc, char **argv)
{
    (void)argc, (void)argv;
    char r[4096];
    sh_route("n0-gpu0", "n0-gpu1", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-sw0-p2p n0-gpu1-pcie_DOWN") == 0, "P2P under one switch \"%s\"", r);
    sh_route("n0-gpu0", "n0-gpu2", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu0-pcie_UP n0-sw0-up_UP n0-mem0 n0-sw1-up_DOWN n0-gpu2-hostrd_DOWN n0-gpu2-pcie_DOWN") == 0,
          "across switches: SHM \"%s\"", r);
    sh_route("n0-gpu1", "n0-gpu6", r, sizeof r);
    CHECK(strcmp(r, "n0-gpu1-pcie_UP n0-sw0-up_UP n0-upi_UP n0-mem1 n0-sw3-up_DOWN n0-gpu6-hostrd_DOWN "
                    "n0-gpu6-pcie_DOWN") == 0,
          "across sockets: the receiver's memory \"%s\"", r);
    /* one direction alone: the switch's 8 GB/s P2P link (below the 12.5 GB/s slots) */
    double t1 = sh_time1("n0-gpu0", "n0-gpu1", GB);
    CHECK(close_rel(t1, 2e-6 + GB / 8e9, 1e-3), "one P2P copy took %g s", t1);
    /* both directions of a pair share the switch's 8 GB/s P2P link */
    sh_flows[0].src = "n0-gpu0", sh_flows[0].dst = "n0-gpu1", sh_flows[0].bytes = GB;
    sh_flows[1].src = "n0-gpu1", sh_flows[1].dst = "n0-gpu0", sh_flows[1].bytes = GB;
    double t = sh_run_flows(2), lat = 2e-6;
    CHECK(close_rel(t, lat + 2 * GB / 8e9, 1e-3), "a pair's two directions took %g s, expected %g", t,
          lat + 2 * GB / 8e9);
}

static sim_machine *load(const char *level, sim_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, NODE_PXB, level);
    return plat_from_json(text, "test", err);
}

int main(int argc, char **argv)
{
    (void)argc;
    sim_err err = {{0}};
    /* the default level: P2P between switches too, through the root complex */
    sim_machine *sys = load("SYS", &err);
    CHECK(sys != NULL, "SYS level: %s", err.msg);
    if (sys) {
        CHECK(strstr(sys->platform_xml, "<route src=\"n0-gpu0\" dst=\"n0-gpu2\" symmetrical=\"NO\"><link_ctn "
                                        "id=\"n0-gpu0-pcie\" direction=\"UP\"/><link_ctn id=\"n0-sw0-up\" "
                                        "direction=\"UP\"/><link_ctn id=\"n0-sw1-up\" direction=\"DOWN\"/>") != NULL,
              "SYS: gpu0 -> gpu2 is P2P through both uplinks");
        sim_machine_free(sys);
    }
    /* the engine's view: two host memories with their 2 MiB caches, PCI order, one direction */
    sim_machine *m = load("PXB", &err);
    if (!m) {
        fprintf(stderr, "plat_from_json: %s\n", err.msg);
        return 1;
    }
    CHECK(m->nstage == 2 && !strcmp(m->stage[0].link, "n0-mem0") && !strcmp(m->stage[1].link, "n0-mem1") &&
              m->stage[1].cache_bytes == 2 * 1048576.0,
          "staging memories: %d", m->nstage);
    CHECK(m->ring_pos && m->ring_pos[5] == 5 && !m->ring_bidir, "no NVLink: PCI order, one direction");
    CHECK(strstr(m->platform_xml, "<prop id=\"trainsim:cache_bytes\" value=\"2097152\"/>") != NULL,
          "the XML carries the cache");

    /* bridged pairs (0,2) and (1,3): partners adjacent, rings both ways */
    sim_machine *b = plat_from_json("{\"nodes\": 2, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": "
                                    "\"100GbE\", \"nvlink\": {\"pairs\": [[0, 2], [1, 3]]}}}",
                                    "bridged", &err);
    CHECK(b != NULL, "bridged: %s", err.msg);
    if (b) {
        CHECK(b->ring_bidir && b->ring_pos[0] == 0 && b->ring_pos[2] == 1 && b->ring_pos[1] == 2 &&
                  b->ring_pos[3] == 3 && b->ring_pos[6] == 1 && b->nstage == 0,
              "bridged ring order 0 2 1 3, both ways, no cache");
        sim_machine_free(b);
    }
    /* DGX-1's hybrid cube mesh: every hop of the ring is an NVLink, the
     * closing one included (PCI order's 3-4 and 7-0 hops have none) */
    sim_machine *c = plat_from_json(
        "{\"nodes\": 1, \"node\": {\"gpu\": \"V100-SXM2-16GB\", \"gpus_per_node\": 8, \"nvlink\": {\"pairs\": "
        "[[0,1],[0,2],[0,3],[0,4],[1,2],[1,3],[1,5],[2,3],[2,6],[3,7],[4,5],[4,6],[4,7],[5,6],[5,7],[6,7]]}}}",
        "cube", &err);
    CHECK(c != NULL, "cube mesh: %s", err.msg);
    if (c) {
        static const int mesh[8] = {0x1e, 0x2d, 0x4b, 0x87, 0xe1, 0xd2, 0xb4, 0x78}; /* NVLink partners of g */
        int at[8], seen = 0, linked = 1;
        for (int g = 0; g < 8; g++)
            at[c->ring_pos[g] & 7] = g, seen |= 1 << (c->ring_pos[g] & 7);
        for (int k = 0; k < 8 && seen == 0xff; k++)
            linked &= (mesh[at[k]] >> at[(k + 1) % 8]) & 1;
        CHECK(seen == 0xff && linked && c->ring_bidir, "cube-mesh ring closed on NVLink, both ways");
        sim_machine_free(c);
    }
    /* ... with its eight pairs of two links (NV2): NCCL's rings, the doubled
     * links' cycle twice and the single links' once (sim_nvl_rings over each
     * GPU's links, which the machine and the XML it writes carry; the first
     * is the node's ring order) */
    sim_machine *d = plat_load("dgx1-v100", &err);
    CHECK(d != NULL, "dgx1-v100: %s", err.msg);
    if (d) {
        static const int want[3][8] = {{0, 3, 2, 1, 5, 6, 7, 4}, {0, 3, 2, 1, 5, 6, 7, 4}, {0, 1, 3, 7, 5, 4, 6, 2}};
        int links[64], rings[4 * 8], ok = d->ring_bidir && d->nvl_links && d->nvl_width == 8;
        for (int i = 0; ok && i < 64; i++)
            links[i] = d->nvl_links[i];
        ok = ok && sim_nvl_rings(8, links, 4, rings) == 3;
        for (int k = 0; ok && k < 3; k++)
            for (int p = 0; p < 8; p++)
                ok = ok && rings[k * 8 + p] == want[k][p] && (k || d->ring_pos[want[k][p]] == p);
        CHECK(ok, "DGX-1 rings 0 3 2 1 5 6 7 4 (twice) and 0 1 3 7 5 4 6 2, both ways");
        sim_machine *x = plat_from_xml_text(d->platform_xml, "dgx1.xml", &err);
        CHECK(x && !memcmp(x->ring_pos, d->ring_pos, 8 * sizeof(int)), "the XML carries the ring order: %s",
              x ? "" : err.msg);
        /* each GPU's NVLinks in its node, in the XML too */
        CHECK(d->nvl_links && d->nvl_width == 8 && d->nvl_local[5] == 5 && d->nvl_links[0 * 8 + 3] == 2 &&
                  d->nvl_links[0 * 8 + 1] == 1 && d->nvl_links[0 * 8 + 5] == 0 && d->nvl_links[6 * 8 + 7] == 2,
              "DGX-1 NVLinks per GPU: 0-3 two, 0-1 one, 0-5 none, 6-7 two");
        CHECK(x && x->nvl_links && x->nvl_width == 8 && !memcmp(x->nvl_links, d->nvl_links, 64) &&
                  !memcmp(x->nvl_local, d->nvl_local, 8 * sizeof(int)),
              "the XML carries them (trainsim:nvlinks)");
        sim_machine_free(x);
        /* views and cuts keep each GPU's links by its index in the node, whole node or part */
        static const int half[4] = {0, 1, 2, 3}, rev[8] = {7, 6, 5, 4, 3, 2, 1, 0};
        sim_machine *h = sim_machine_subset(d, half, 4), *r = sim_machine_subset(d, rev, 8);
        CHECK(h && r && h->nvl_links && h->nvl_local[3] == 3 && h->nvl_links[3 * 8 + 0] == 2 && r->nvl_local[0] == 7 &&
                  r->nvl_links[0 * 8 + 4] == 2 && !memcmp(r->nvl_links + 7 * 8, d->nvl_links, 8),
              "views keep each GPU's NVLinks by its index in the node, re-ranked");
        sim_machine_free(h);
        sim_machine_free(r);
        unsigned char before[32];
        memcpy(before, d->nvl_links, sizeof before);
        CHECK(sim_machine_first(d, 4, &err) == 0 && d->nvl_local[3] == 3 && !memcmp(d->nvl_links, before, sizeof before),
              "--gpus 4 on a DGX-1: the four GPUs keep their links (they pack rings of their own)");
        sim_machine_free(d);
    }
    /* any NVLink cycle through a node's GPUs makes it a mesh whose links the machine carries */
    sim_machine *mix = plat_from_json(
        "{\"nodes\": 1, \"node\": {\"gpu\": \"V100-SXM2-16GB\", \"gpus_per_node\": 4, \"nvlink\": {\"pairs\": "
        "[[0,1],[1,2],[2,3],[3,0]]}}}",
        "ring4", &err);
    CHECK(mix && mix->nvl_links && mix->nvl_local[2] == 2, "a 4-GPU NVLink ring is a mesh: %s", mix ? "" : err.msg);
    sim_machine_free(mix);
    static const struct {
        const char *pairs, *msg;
    } BAD[] = {{"[[0,1,0]]", "links a whole number from 1 to 18"},
               {"[[0,1,2.5]]", "links a whole number from 1 to 18"},
               {"[[0,1],[1,0]]", "each pair once"},
               {"[[0,1,2,3]]", "[a, b, links]"}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"nodes\": 1, \"node\": {\"gpu\": \"V100-SXM2-16GB\", \"gpus_per_node\": 4, \"nvlink\": "
                 "{\"pairs\": %s}}}",
                 BAD[i].pairs);
        err.msg[0] = 0;
        sim_machine *bad = plat_from_json(text, "bad", &err);
        CHECK(!bad && strstr(err.msg, BAD[i].msg) && strstr(err.msg, "node.nvlink.pairs[") != NULL, "bad pairs %s: %s",
              BAD[i].pairs, err.msg);
        sim_machine_free(bad);
    }
    return sh_main(NULL, m, argv[0], scenario);
}
