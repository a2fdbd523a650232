/* star.h — a uniform test platform: n GPU hosts, each with its own
 * full-duplex link (bandwidth bw, latency lat) to one switch, so a route
 * between two GPUs is latency 2·lat and bandwidth bw, and flows only
 * contend where they share an endpoint.  For analytical oracles. */
#ifndef TEST_STAR_H
#define TEST_STAR_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/machine.h"

static sim_machine *star_machine(int n, double bw, double lat, int gpus_per_node)
{
    sim_machine *m = sim_machine_new(n, 1);
    size_t cap = 4096 + (size_t)n * (size_t)n * 200, len = 0;
    char *x = malloc(cap);
    len += (size_t)snprintf(x + len, cap - len,
                            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                            "<platform version=\"4.1\">\n<zone id=\"star\" routing=\"Full\">\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(x + len, cap - len, "<host id=\"g%d\" speed=\"1Gf\"/>\n", i);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(x + len, cap - len,
                                "<link id=\"l%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                                i, bw, lat);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                len += (size_t)snprintf(x + len, cap - len,
                                        "<route src=\"g%d\" dst=\"g%d\" symmetrical=\"NO\"><link_ctn id=\"l%d\" direction=\"UP\"/>"
                                        "<link_ctn id=\"l%d\" direction=\"DOWN\"/></route>\n",
                                        i, j, i, j);
    snprintf(x + len, cap - len, "</zone>\n</platform>\n");
    m->platform_xml = x;
    snprintf(m->name, sizeof m->name, "star%d", n);
    for (int i = 0; i < n; i++) {
        char h[16];
        snprintf(h, sizeof h, "g%d", i);
        m->host[i] = strdup(h);
        m->node[i] = i / gpus_per_node;
        m->gpu_model[i] = 0;
    }
    m->nnodes = (n + gpus_per_node - 1) / gpus_per_node;
    sim_gpu *g = &m->gpus[0];
    snprintf(g->model, sizeof g->model, "test-gpu");
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        g->peak_flops[d] = 100e12;
    g->mem_bw = 1e12;
    g->mem_capacity = 80e9;
    return m;
}

/* The star with kernels priced at their FLOPs only (memory-bound kernels,
 * the optimizer step and launches free), `flops` per second per GPU. */
static inline sim_machine *star_flops_machine(int n, double bw, double flops, int gpus_per_node)
{
    sim_machine *m = star_machine(n, bw, 0, gpus_per_node);
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        m->gpus[0].peak_flops[d] = flops;
    m->gpus[0].mem_bw = 1e18;
    m->gpus[0].launch_s = 0;
    return m;
}

static int near(double got, double want, double rel, const char *what)
{
    double e = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    printf("%-58s got %.9g want %.9g (%.4f%%)\n", what, got, want, 100 * e);
    if (e > rel) {
        printf("FAIL: %s off by %.4f%% (allowed %.4f%%)\n", what, 100 * e, 100 * rel);
        return 1;
    }
    return 0;
}

#endif
