/* eval.c — one strategy, simulated.
 *
 * PLAN_FULL simulates the whole iteration.  PLAN_FAST (the default) makes
 * the same prediction from at most four much smaller simulations, using two
 * facts about the schedules the generator builds:
 *  - layers are identical, so with pipeline degree p the iteration time is
 *    affine in the layers per stage (every layer adds the same kernels,
 *    collectives and gradient bytes);
 *  - with m ≥ p micro-batches a 1F1B pipeline is in its steady state, where
 *    each further micro-batch adds one forward and one backward of the
 *    slowest stage (Narayanan et al. 2021, Sec. 2.2.1): the time is affine
 *    in m.
 * So the time is bilinear in (layers, micro-batches): simulate the model cut
 * to u and 2u layers (u = the smallest layer count the strategy accepts,
 * normally p) with p and p+1 micro-batches, and evaluate the bilinear
 * interpolant at the real (L, m).  Where L ≤ 2u or m ≤ p+1 that dimension is
 * simulated at its real value instead.  The same interpolation is applied to
 * the compute / exposed-communication / idle means and the peak memory (its
 * activations are affine in the layers; in-flight micro-batches are the same
 * once m ≥ p).  The error against full simulation is measured in
 * tests/planner/test_fast_heavy.c and bench/plan_bench.sh and stated in the
 * README.  Nothing here is fitted to measurements. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "planner/plan.h"
#include "sim/engine.h"
#include "workloads/gpt.h"

static double wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

typedef struct point {
    double T, compute, exposed, idle, comm, peak;
} point;

static int simulate(const plan_ctx *ctx, const wl_model *m, const char *strategy, int gb, point *out, sim_err *err)
{
    char s[PLAN_STRATEGY_MAX + 32];
    snprintf(s, sizeof s, "%s,gb=%d", strategy, gb);
    wl_strategy st;
    wl_strategy_default(&st);
    if (wl_strategy_parse(s, &st, err) < 0)
        return -1;
    sim_schedule *sch = wl_gpt_generate(m, &st, ctx->mach, err);
    if (!sch)
        return -1;
    sim_options opt;
    sim_options_default(&opt);
    sim_result r;
    int rc = sim_run_isolated(sch, ctx->mach, &opt, &r, err);
    sim_sched_free(sch);
    if (rc < 0)
        return -1;
    out->T = r.iteration_s;
    out->compute = r.compute_s;
    out->exposed = r.exposed_comm_s;
    out->idle = r.idle_s;
    out->comm = r.comm_s;
    out->peak = r.peak_mem;
    sim_result_free(&r);
    return 0;
}

/* Does the model cut to `layers` accept the strategy (divisibility only)? */
static int layers_ok(const plan_ctx *ctx, const char *strategy, int layers, int gb)
{
    wl_model m = ctx->model;
    m.layers = layers;
    char s[PLAN_STRATEGY_MAX + 32];
    snprintf(s, sizeof s, "%s,gb=%d", strategy, gb);
    wl_strategy st, res;
    wl_strategy_default(&st);
    sim_err e;
    return wl_strategy_parse(s, &st, &e) == 0 && wl_gpt_resolve(&m, &st, ctx->mach, &res, &e) == 0;
}

void plan_evaluate(const plan_ctx *ctx, const char *strategy, plan_result *out)
{
    double t0 = wall_now();
    memset(out, 0, sizeof *out);
    snprintf(out->strategy, sizeof out->strategy, "%s", strategy);
    out->status = -1;
    sim_err err = {{0}};
    wl_strategy st, res;
    wl_strategy_default(&st);
    if (wl_strategy_parse(strategy, &st, &err) < 0 || wl_gpt_resolve(&ctx->model, &st, ctx->mach, &res, &err) < 0) {
        plan_copy(out->error, sizeof out->error, err.msg);
        return;
    }
    int L = ctx->model.layers, gb = res.gb, per = res.mb * res.dp, nmb = gb / per, p = res.pp;
    int lp[2] = {L, L}, nl = 1, np = 1, nm[2] = {nmb, nmb};
    if (ctx->fidelity == PLAN_FAST) {
        int u = 0;
        for (int k = p; k <= L && !u; k += p)
            if (L % k == 0 && layers_ok(ctx, strategy, k, gb))
                u = k;
        if (u && 2 * u < L && layers_ok(ctx, strategy, 2 * u, gb)) {
            lp[0] = u;
            lp[1] = 2 * u;
            nl = 2;
        }
        int n1 = p, n2 = p + 1;
        if (!layers_ok(ctx, strategy, L, n2 * per))
            n2 = 2 * p; /* schedules that want whole rounds of p */
        if (n2 < nmb && layers_ok(ctx, strategy, L, n1 * per) && layers_ok(ctx, strategy, L, n2 * per)) {
            nm[0] = n1;
            nm[1] = n2;
            np = 2;
        }
    }
    point pt[2][2];
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < np; j++) {
            wl_model m = ctx->model;
            m.layers = lp[i];
            if (simulate(ctx, &m, strategy, nm[j] * per, &pt[i][j], &err) < 0) {
                plan_copy(out->error, sizeof out->error, err.msg);
                out->wall_s = wall_now() - t0;
                return;
            }
            out->sims++;
        }
    double wl[2] = {1, 0}, wm[2] = {1, 0};
    if (nl == 2) {
        double a = (double)(L - lp[0]) / (lp[1] - lp[0]);
        wl[0] = 1 - a;
        wl[1] = a;
    }
    if (np == 2) {
        double a = (double)(nmb - nm[0]) / (nm[1] - nm[0]);
        wm[0] = 1 - a;
        wm[1] = a;
    }
    point f = {0};
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < np; j++) {
            double w = wl[i] * wm[j];
            f.T += w * pt[i][j].T;
            f.compute += w * pt[i][j].compute;
            f.exposed += w * pt[i][j].exposed;
            f.idle += w * pt[i][j].idle;
            f.comm += w * pt[i][j].comm;
            f.peak += w * pt[i][j].peak;
        }
    if (!(f.T > 0)) {
        snprintf(out->error, sizeof out->error, "simulated iteration time %g s is not positive", f.T);
        return;
    }
    out->status = 0;
    out->iteration_s = f.T;
    out->samples_per_s = gb / f.T;
    out->tokens_per_s = (double)gb * ctx->model.seq / f.T;
    out->tflops_per_gpu = wl_gpt_model_flops(&ctx->model, &res) / f.T / ctx->mach->ngpus / 1e12;
    out->peak_mem = f.peak;
    out->compute_s = f.compute;
    out->exposed_comm_s = f.exposed;
    out->idle_s = f.idle;
    out->comm_s = f.comm;
    out->wall_s = wall_now() - t0;
}
