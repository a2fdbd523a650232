/* Cross-mesh resharding (papers.md §6) on the p3.8xlarge-like platform, for
 * every case of the paper's microbenchmarks:
 *   - the unit tasks cover every destination GPU's tile exactly once (their
 *     volumes add up to the tile and none falls outside it) and every task
 *     has a holder;
 *   - broadcast moves no more bytes across any node's NIC than send/recv;
 *   - load balancing (by size, by order) is never slower in simulation than
 *     the unbalanced broadcast;
 *   - a pipeline over meshes with resharding between stages: with negligible
 *     activations it takes the 1F1B closed form (m+p-1)(F+B) under both
 *     1F1B and eager 1F1B; with 64 MiB activations over 10 Gb/s, Alpa's eager
 *     1F1B (the send overlaps the next forward) beats 1F1B with broadcast. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "sim/engine.h"
#include "workloads/reshard.h"

static int fails;

static double sim_time(const wl_reshard_case *c, const sim_machine *m, const wl_rs_tasks *T, wl_rs_impl impl,
                       double *nic)
{
    sim_err e;
    sim_schedule *s = wl_reshard_schedule(c, m, T, impl, nic, &e);
    sim_result r;
    if (!s || sim_run_isolated(s, m, NULL, &r, &e) < 0) {
        printf("FAIL: %s %s: %s\n", c->name, wl_rs_impl_name(impl), e.msg);
        exit(1);
    }
    double t = r.iteration_s;
    sim_result_free(&r);
    sim_sched_free(s);
    return t;
}

int main(void)
{
    sim_err e;
    sim_machine *m = plat_load("p3.8xlarge-5n", &e);
    if (!m) {
        printf("FAIL: %s\n", e.msg);
        return 1;
    }
    wl_reshard_case *cases;
    int nc = wl_reshard_suite(&cases);
    double *nic_sr = calloc((size_t)m->nnodes, sizeof(double)), *nic_bc = calloc((size_t)m->nnodes, sizeof(double));
    for (int i = 0; i < nc; i++) {
        const wl_reshard_case *c = &cases[i];
        wl_rs_tasks T;
        if (wl_reshard_tasks(c, m, &T, &e) < 0) {
            printf("FAIL: %s: %s\n", c->name, e.msg);
            return 1;
        }
        /* coverage */
        for (int r = 0; r < m->ngpus; r++) {
            int64_t lo[3], hi[3];
            if (!wl_reshard_dst_tile(c, m, r, lo, hi))
                continue;
            int64_t want = c->elem_bytes, got = 0;
            for (int d = 0; d < c->ndims; d++)
                want *= hi[d] - lo[d];
            for (int k = 0; k < T.n; k++)
                for (int j = 0; j < T.t[k].ndst; j++)
                    if (T.t[k].dst[j] == r) {
                        got += T.t[k].bytes;
                        for (int d = 0; d < c->ndims; d++)
                            if (T.t[k].lo[d] < lo[d] || T.t[k].hi[d] > hi[d]) {
                                printf("FAIL: %s: task %d lies outside rank %d's tile\n", c->name, k, r);
                                fails++;
                            }
                    }
            if (got != want) {
                printf("FAIL: %s: rank %d receives %lld bytes of its %lld-byte tile\n", c->name, r, (long long)got,
                       (long long)want);
                fails++;
            }
        }
        for (int k = 0; k < T.n; k++)
            if (T.t[k].nsrc < 1) {
                printf("FAIL: %s: task %d has no holder\n", c->name, k);
                fails++;
            }
        /* NIC bytes */
        wl_rs_impl bc[3] = {WL_RS_BROADCAST, WL_RS_BROADCAST_LB_SIZE, WL_RS_BROADCAST_LB_ORDER};
        sim_schedule *s = wl_reshard_schedule(c, m, &T, WL_RS_SENDRECV, nic_sr, &e);
        sim_sched_free(s);
        for (int b = 0; b < 3; b++) {
            s = wl_reshard_schedule(c, m, &T, bc[b], nic_bc, &e);
            sim_sched_free(s);
            for (int n = 0; n < m->nnodes; n++)
                if (nic_bc[n] > nic_sr[n]) {
                    printf("FAIL: %s %s: node %d NIC moves %.0f bytes, send/recv %.0f\n", c->name,
                           wl_rs_impl_name(bc[b]), n, nic_bc[n], nic_sr[n]);
                    fails++;
                }
        }
        /* load balancing never slower */
        if (c->ndims > 1) {
            double t0 = sim_time(c, m, &T, WL_RS_BROADCAST, NULL);
            double t1 = sim_time(c, m, &T, WL_RS_BROADCAST_LB_SIZE, NULL);
            double t2 = sim_time(c, m, &T, WL_RS_BROADCAST_LB_ORDER, NULL);
            printf("%-8s %3d tasks  broadcast %.4f s, lb_size %.4f s, lb_order %.4f s\n", c->name, T.n, t0, t1, t2);
            if (t1 > t0 * (1 + 1e-6) || t2 > t0 * (1 + 1e-6)) {
                printf("FAIL: %s: load balancing made it slower\n", c->name);
                fails++;
            }
        }
        wl_reshard_tasks_free(&T);
    }
    /* pipelines over meshes; the closed form without overlap interference
     * (a collective waiting for its peers counts as communication beside
     * the compute, which the V100's interference factor slows) */
    double oc = m->gpus[0].overlap_compute, om = m->gpus[0].overlap_comm;
    for (int k = 0; k < 2; k++) {
        m->gpus[0].overlap_compute = m->gpus[0].overlap_comm = 1;
        wl_xmesh_pipe xp = {4, 8, 0.05, 4, 4, 2}; /* 32-byte activations */
        double t = wl_reshard_pipeline_time(m, &xp, k ? WL_PIPE_EAGER : WL_PIPE_1F1B, WL_RS_BROADCAST, &e);
        double want = (8 + 4 - 1) * 0.15, err = fabs(t - want) / want;
        printf("tiny activations, %s: %.6f s, closed form %.6f s\n", k ? "eager" : "1f1b", t, want);
        if (t < 0 || err > 0.002) {
            printf("FAIL: pipeline with negligible activations off the closed form (%s)\n", t < 0 ? e.msg : "");
            fails++;
        }
        m->gpus[0].overlap_compute = oc;
        m->gpus[0].overlap_comm = om;
    }
    wl_xmesh_pipe xp = {4, 8, 0.05, 8192, 4096, 2};
    for (int impl = 0; impl < WL_RS_IMPL_COUNT; impl++) {
        double t1 = wl_reshard_pipeline_time(m, &xp, WL_PIPE_1F1B, (wl_rs_impl)impl, &e);
        double te = wl_reshard_pipeline_time(m, &xp, WL_PIPE_EAGER, (wl_rs_impl)impl, &e);
        printf("64 MiB activations, %-20s 1f1b %.4f s, eager %.4f s\n", wl_rs_impl_name(impl), t1, te);
        if (t1 < 0 || te < 0) {
            printf("FAIL: %s\n", e.msg);
            fails++;
        } else if (impl == WL_RS_BROADCAST && !(te < t1)) {
            printf("FAIL: eager 1F1B is not faster with cross-mesh broadcasts\n");
            fails++;
        }
    }

    /* a mesh that does not fit is an error, not a crash */
    wl_reshard_case bad = cases[nc - 1];
    bad.dst.first_node = 4;
    wl_rs_tasks T;
    if (wl_reshard_tasks(&bad, m, &T, &e) == 0 || !strstr(e.msg, "nodes")) {
        printf("FAIL: a destination mesh past the last node was accepted\n");
        fails++;
    }
    bad = cases[nc - 1];
    bad.dst.first_node = bad.src.first_node; /* overlapping meshes */
    if (wl_reshard_tasks(&bad, m, &T, &e) == 0 || !strstr(e.msg, "in both meshes")) {
        printf("FAIL: overlapping meshes accepted\n");
        fails++;
    } else {
        printf("overlapping meshes: %s\n", e.msg);
    }
    free(nic_sr);
    free(nic_bc);
    free(cases);
    sim_machine_free(m);
    if (fails)
        printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
