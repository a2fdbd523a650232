/* simhelp.h — shared by the route tests: load a sim_machine's XML into
 * SimGrid with the exact network model (bytes / bottleneck + latencies),
 * ask routes from inside an actor (route queries from main() crash on
 * Dijkstra zones), and time concurrent 1-to-1 transfers.  A process can
 * initialise SimGrid once, so each route test is one program. */
#ifndef TEST_PLAT_SIMHELP_H
#define TEST_PLAT_SIMHELP_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>

#include "platforms/platform.h"

static int failures;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
            failures++;                                                          \
        }                                                                        \
    } while (0)

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* Initialises SimGrid and loads the machine's platform; returns 0 or -1. */
static int sh_load(sim_machine *m, const char *argv0)
{
    char *args[] = {(char *)argv0, "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                    "--cfg=network/TCP-gamma:0", "--log=root.thres:critical", NULL};
    int argc = 5;
    simgrid_init(&argc, args);
    char path[] = "/tmp/trainsim-plat-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t n = strlen(m->platform_xml);
    if (write(fd, m->platform_xml, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    close(fd);
    simgrid_load_platform(path);
    unlink(path);
    return 0;
}

/* Link names of the route, space separated ("n0-gpu0-pcie_UP n0-mem0 ..."). */
static void sh_route(const char *src, const char *dst, char *buf, size_t n)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(sg_host_by_name(src), sg_host_by_name(dst), links);
    size_t len = 0;
    unsigned i;
    sg_link_t l;
    buf[0] = 0;
    xbt_dynar_foreach (links, i, l)
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? " " : "", sg_link_get_name(l));
    xbt_dynar_free(&links);
}

static inline int sh_route_has(const char *src, const char *dst, const char *link)
{
    char buf[4096], pat[256];
    sh_route(src, dst, buf, sizeof buf);
    snprintf(pat, sizeof pat, " %s ", link);
    char padded[4200];
    snprintf(padded, sizeof padded, " %s ", buf);
    return strstr(padded, pat) != NULL;
}

/* ---- concurrent transfers ---- */
#define SH_MAX_FLOWS 64
static struct { const char *src, *dst; double bytes, end; } sh_flows[SH_MAX_FLOWS];
static int sh_nflows;
static int sh_token = 1; /* non-NULL payload: SimGrid aborts on NULL */

static void sh_sender(int argc, char **argv)
{
    (void)argc;
    int i = atoi(argv[1]);
    char mb[32];
    snprintf(mb, sizeof mb, "flow%d", i);
    sg_mailbox_put(sg_mailbox_by_name(mb), &sh_token, sh_flows[i].bytes);
}

static void sh_receiver(int argc, char **argv)
{
    (void)argc;
    int i = atoi(argv[1]);
    char mb[32];
    snprintf(mb, sizeof mb, "flow%d", i);
    sg_mailbox_get(sg_mailbox_by_name(mb));
    sh_flows[i].end = simgrid_get_clock();
}

/* Runs the n flows set in sh_flows[] at once (from inside an actor) and
 * returns the time until the last one ends. */
static double sh_run_flows(int n)
{
    sg_actor_t actors[2 * SH_MAX_FLOWS];
    double t0 = simgrid_get_clock();
    sh_nflows = n;
    for (int i = 0; i < n; i++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        char *a[] = {"flow", idx, NULL};
        actors[2 * i] = sg_actor_create("recv", sg_host_by_name(sh_flows[i].dst), sh_receiver, 2, a);
        sg_actor_ref(actors[2 * i]);
        actors[2 * i + 1] = sg_actor_create("send", sg_host_by_name(sh_flows[i].src), sh_sender, 2, a);
        sg_actor_ref(actors[2 * i + 1]);
    }
    double end = t0;
    for (int i = 0; i < 2 * n; i++) {
        sg_actor_join(actors[i], -1);
        sg_actor_unref(actors[i]);
    }
    for (int i = 0; i < n; i++)
        if (sh_flows[i].end > end)
            end = sh_flows[i].end;
    return end - t0;
}

/* A route test's main: loads platform spec (a built-in name or path, when
 * m is NULL), runs scenario in an actor on the first GPU host, frees the
 * machine; returns the exit status. */
static inline int sh_main(const char *spec, sim_machine *m, const char *argv0, void (*scenario)(int, char **))
{
    sim_err err = {{0}};
    if (!m && !(m = plat_load(spec, &err))) {
        fprintf(stderr, "plat_load: %s\n", err.msg);
        return 1;
    }
    if (sh_load(m, argv0))
        return 1;
    sg_actor_create("scenario", sg_host_by_name(m->host[0]), scenario, 0, NULL);
    simgrid_run();
    sim_machine_free(m);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures != 0;
}

/* One transfer of bytes from src to dst, timed. */
static double sh_time1(const char *src, const char *dst, double bytes)
{
    sh_flows[0].src = src, sh_flows[0].dst = dst, sh_flows[0].bytes = bytes;
    return sh_run_flows(1);
}

#endif
