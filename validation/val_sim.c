/* val_sim.c — validation cases through the user pipeline (see val_sim.h). */
#include <stdlib.h>

#include "platforms/platform.h"
#include "val_sim.h"

sim_machine *val_sim_node(const char *model, int gpus, sim_err *err)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"name\": \"node-%s-x%d\", \"nodes\": 1, \"node\": {\"gpu\": \"%s\", \"gpus_per_node\": %d}, "
             "\"fabric\": {\"type\": \"switch\"}}",
             model, gpus, model, gpus);
    sim_machine *m = plat_from_json(json, "validation node", err);
    /* micro-benchmarks time a kernel or a collective in short bursts: the
     * card below its power limit (a caller that wants the limit restores
     * the catalogue's power table) */
    for (int i = 0; m && i < m->nmodels; i++)
        m->gpus[i].power_n = 0;
    return m;
}

int val_sim_run(const val_ctx *ctx, const sim_schedule *s, const sim_machine *m, sim_result *out, sim_err *err)
{
    sim_options o;
    if (ctx)
        o = ctx->opt;
    else
        sim_options_default(&o);
    o.trace_path = NULL;
    return sim_run_isolated(s, m, &o, out, err);
}

static int concurrent(const val_ctx *ctx, const sim_machine *m, sim_coll c, sim_algo algo, const int *ranks,
                      int ngroups, int size, int64_t bytes, double *seconds, sim_err *err)
{
    int nranks = 0;
    for (int i = 0; i < ngroups * size; i++) {
        if (ranks[i] < 0 || ranks[i] >= m->ngpus)
            return sim_errf(err, "%s: rank %d out of range (0..%d)", m->name, ranks[i], m->ngpus - 1);
        if (ranks[i] + 1 > nranks)
            nranks = ranks[i] + 1;
    }
    sim_schedule *s = sim_sched_new(nranks);
    for (int g = 0; g < ngroups; g++) {
        char name[32];
        snprintf(name, sizeof name, "group%d", g);
        int comm = sim_sched_comm(s, name, ranks + g * size, size);
        sim_payload p = {.kind = SIM_OP_COLLECTIVE, .sub = (uint8_t)c, .algo = (uint8_t)algo, .name = -1,
                         .bytes = bytes};
        uint32_t pl = sim_sched_payload(s, &p);
        for (int i = 0; i < size; i++)
            sim_sched_add(s, sim_sched_stream(s, ranks[g * size + i], "comm"), pl, comm, SIM_NO_TAGS, NULL, 0);
    }
    sim_result r;
    int rc = val_sim_run(ctx, s, m, &r, err);
    if (rc == 0) {
        for (int g = 0; g < ngroups; g++) {
            double t = 0;
            for (int i = 0; i < size; i++) {
                double e = r.rank[ranks[g * size + i]].end_s;
                if (e > t)
                    t = e;
            }
            seconds[g] = t;
        }
        sim_result_free(&r);
    }
    sim_sched_free(s);
    return rc;
}

int val_sim_concurrent(const val_ctx *ctx, const sim_machine *m, sim_coll c, const int *ranks, int ngroups, int size,
                       int64_t bytes, double *seconds, sim_err *err)
{
    return concurrent(ctx, m, c, SIM_ALGO_AUTO, ranks, ngroups, size, bytes, seconds, err);
}

int val_sim_collective(const val_ctx *ctx, const sim_machine *m, sim_coll c, const int *ranks, int n, int64_t bytes,
                       double *seconds, sim_err *err)
{
    return concurrent(ctx, m, c, SIM_ALGO_AUTO, ranks, 1, n, bytes, seconds, err);
}

int val_sim_collective_algo(const val_ctx *ctx, const sim_machine *m, sim_coll c, sim_algo algo, const int *ranks,
                            int n, int64_t bytes, double *seconds, sim_err *err)
{
    return concurrent(ctx, m, c, algo, ranks, 1, n, bytes, seconds, err);
}

int val_sim_sends(const val_ctx *ctx, const sim_machine *m, const int *src, const int *dst, int n, int64_t bytes,
                  double *seconds, sim_err *err)
{
    int nranks = 0;
    for (int i = 0; i < n; i++) {
        if (src[i] < 0 || src[i] >= m->ngpus || dst[i] < 0 || dst[i] >= m->ngpus || src[i] == dst[i])
            return sim_errf(err, "%s: message %d -> %d: ranks must differ and lie in 0..%d", m->name, src[i], dst[i],
                            m->ngpus - 1);
        for (int j = 0; j < i; j++)
            if (dst[j] == dst[i])
                return sim_errf(err, "internal: val_sim_sends needs distinct receivers (rank %d twice)", dst[i]);
        nranks = src[i] + 1 > nranks ? src[i] + 1 : nranks;
        nranks = dst[i] + 1 > nranks ? dst[i] + 1 : nranks;
    }
    sim_schedule *s = sim_sched_new(nranks);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "send%d", i); /* one stream per message: all start at time 0 */
        sim_sched_send(s, sim_sched_stream(s, src[i], name), NULL, dst[i], bytes, i, SIM_NO_TAGS, NULL, 0);
        snprintf(name, sizeof name, "recv%d", i);
        sim_sched_recv(s, sim_sched_stream(s, dst[i], name), NULL, src[i], bytes, i, SIM_NO_TAGS, NULL, 0);
    }
    sim_result r;
    int rc = val_sim_run(ctx, s, m, &r, err);
    if (rc == 0) {
        for (int i = 0; i < n; i++) /* a receiver gets one message: its end is the arrival */
            seconds[i] = r.rank[dst[i]].end_s;
        sim_result_free(&r);
    }
    sim_sched_free(s);
    return rc;
}

int val_sim_kernel(const val_ctx *ctx, const sim_machine *m, int rank, const sim_payload *p, double *seconds,
                   sim_err *err)
{
    if (rank < 0 || rank >= m->ngpus)
        return sim_errf(err, "%s: rank %d out of range (0..%d)", m->name, rank, m->ngpus - 1);
    if (p->kind != SIM_OP_COMPUTE)
        return sim_errf(err, "internal: val_sim_kernel needs a compute payload");
    sim_schedule *s = sim_sched_new(rank + 1);
    sim_payload q = *p;
    sim_sched_add(s, sim_sched_stream(s, rank, "compute"), sim_sched_payload(s, &q), -1, SIM_NO_TAGS, NULL, 0);
    sim_result r;
    int rc = val_sim_run(ctx, s, m, &r, err);
    if (rc == 0) {
        *seconds = r.rank[rank].end_s;
        sim_result_free(&r);
    }
    sim_sched_free(s);
    return rc;
}

double val_busbw_factor(sim_coll c, int n)
{
    if (n <= 1)
        return 1;
    switch (c) {
    case SIM_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
    case SIM_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1;
    }
}
