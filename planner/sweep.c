/* sweep.c — evaluating a strategy space: what the cache holds is read back,
 * the rest is simulated in forked workers (split over MPI ranks when there
 * are several), and after a fast sweep the K fastest may be simulated whole
 * (refine) and N drawn at random simulated whole to check it (verify).  A library function, so that `trainsim plan` and `trainsim
 * compare` (purchase.c) run the same sweep; it prints nothing but the
 * progress bar the caller asks for (stderr), and returns its figures and
 * the first cache problem in plan_sweep_stats for the caller to report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include <gsl/gsl_rng.h>

#include "planner/plan.h"
#include "sim/engine.h"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* CPU seconds of the evaluation processes (this rank's), which on a shared
 * machine measure the cost better than wall time */
static double children_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

int plan_result_cmp(const void *a, const void *b)
{
    const plan_result *x = *(plan_result *const *)a, *y = *(plan_result *const *)b;
    if (x->status != y->status)
        return x->status == 0 ? -1 : 1;
    if (x->samples_per_s != y->samples_per_s)
        return x->samples_per_s > y->samples_per_s ? -1 : 1;
    return strcmp(x->strategy, y->strategy);
}

int plan_result_rank(plan_result *res, int n, plan_result **ok)
{
    int nok = 0;
    for (int i = 0; i < n; i++)
        if (res[i].status == 0)
            ok[nok++] = &res[i];
    qsort(ok, (size_t)nok, sizeof *ok, plan_result_cmp);
    return nok;
}

typedef struct sweep {
    const plan_ctx *ctx;
    const plan_space *sp;
    const plan_sweep_opts *o;
    plan_result *res; /* [count] indexed by candidate */
    plan_cache *cache;
    plan_progress prog;
    plan_sweep_stats *st;
    int done;
} sweep;

static void job(void *arg, int i, plan_result *out)
{
    sweep *w = arg;
    plan_evaluate(w->ctx, plan_space_get(w->sp, i), out);
}

static void job_done(void *arg, int i, const plan_result *r)
{
    sweep *w = arg;
    w->res[i] = *r;
    if (w->o->on_result)
        w->o->on_result(w->o->on_result_arg, i, r);
    if (w->cache) {
        sim_err e;
        if (plan_cache_put(w->cache, r, &e) < 0 && !w->st->cache_warning[0])
            plan_copy(w->st->cache_warning, sizeof w->st->cache_warning, e.msg);
    }
    plan_progress_step(&w->prog, ++w->done);
}

/* Evaluates the candidates todo[0..ntodo) (the same list on every MPI rank):
 * rank r takes every size-th, in `jobs` forked workers; afterwards rank 0
 * holds every result in w->res.  *nmine: how many this rank evaluated. */
static int evaluate_all(sweep *w, const int *todo, int ntodo, int show, int n, int *nmine_out, sim_err *err)
{
    int mrank = w->o->mpi_rank, msize = w->o->mpi_size > 1 ? w->o->mpi_size : 1;
    int *mine = calloc((size_t)(ntodo ? ntodo : 1), sizeof *mine);
    int nmine = 0, rc = 0;
    if (!mine)
        return sim_errf(err, "out of memory");
    for (int j = mrank; j < ntodo; j += msize)
        mine[nmine++] = todo[j];
    /* SimGrid and the platform loaded once here: every evaluation's forked
     * simulations inherit them (sim_preload, same results) */
    if (nmine > 0 && sim_preload(w->ctx->mach, err) < 0) {
        rc = -1;
        nmine = 0;
    }
    w->done = 0;
    plan_progress_start(&w->prog, nmine, show);
    int jobs = w->o->jobs > 0 ? w->o->jobs : 1;
    rc = rc ? rc : plan_pool_run(mine, nmine, jobs, job, w, job_done, w, err);
    plan_progress_end(&w->prog);
    if (msize > 1) {
        plan_result *my = calloc((size_t)(nmine ? nmine : 1), sizeof *my);
        for (int j = 0; my && j < nmine; j++)
            my[j] = w->res[mine[j]];
        if (!my || plan_mpi_gather(w->res, n, my, mine, nmine, err) < 0)
            rc = -1;
        free(my);
    }
    free(mine);
    *nmine_out = nmine;
    return rc;
}

/* The candidates which[0..k) (the same on every MPI rank) simulated whole,
 * into whole[0..k) on rank 0: from the full-fidelity cache where it holds
 * them (marked cached), else evaluated at PLAN_FULL and cached there.  The
 * sweep's own results, cache and fidelity are left as they were. */
static int run_whole(sweep *w, plan_ctx *ctx, int n, const int *which, int k, plan_result *whole, int *nmine,
                     sim_err *err)
{
    const plan_sweep_opts *o = w->o;
    int mrank = o->mpi_rank;
    int *todo = calloc((size_t)(k ? k : 1), sizeof *todo), ntodo = 0;
    plan_result *sweep_res = malloc(sizeof *sweep_res * (size_t)(n ? n : 1));
    if (!todo || !sweep_res) {
        free(todo);
        free(sweep_res);
        return sim_errf(err, "out of memory");
    }
    memcpy(sweep_res, w->res, sizeof *sweep_res * (size_t)n);
    memset(whole, 0, sizeof *whole * (size_t)k);
    plan_cache *sweep_cache = w->cache;
    ctx->fidelity = PLAN_FULL;
    w->cache = NULL;
    if (o->cache_dir) {
        sim_err e;
        w->cache = plan_cache_open(o->cache_dir, plan_inputs_hash(ctx->mach, &ctx->model, PLAN_FULL), mrank == 0, &e);
    }
    if (mrank == 0)
        for (int j = 0; j < k; j++) {
            if (w->cache && plan_cache_get(w->cache, w->res[which[j]].strategy, &whole[j]))
                whole[j].cached = 1;
            else
                todo[ntodo++] = which[j];
        }
    plan_mpi_bcast_ints(&ntodo, 1);
    plan_mpi_bcast_ints(todo, ntodo);
    int rc = evaluate_all(w, todo, ntodo, mrank == 0 && o->progress, n, nmine, err);
    for (int j = 0; rc == 0 && mrank == 0 && j < k; j++)
        if (!whole[j].cached)
            whole[j] = w->res[which[j]];
    memcpy(w->res, sweep_res, sizeof *sweep_res * (size_t)n);
    plan_cache_close(w->cache);
    w->cache = sweep_cache;
    ctx->fidelity = PLAN_FAST;
    free(todo);
    free(sweep_res);
    return rc;
}

/* The K fastest of a fast sweep, simulated whole (the fast fidelity errs by
 * up to a few per cent, enough to swap close neighbours); their figures
 * replace the fast ones and they are marked refined. */
static int refine(sweep *w, plan_ctx *ctx, int n, int *nrefined, int *nmine, sim_err *err)
{
    const plan_sweep_opts *o = w->o;
    int *best = calloc((size_t)(n ? n : 1), sizeof *best), k = 0;
    plan_result *whole = calloc((size_t)(n ? n : 1), sizeof *whole);
    if (!best || !whole) {
        free(best);
        free(whole);
        return sim_errf(err, "out of memory");
    }
    if (o->mpi_rank == 0) {
        plan_result **ok = malloc(sizeof *ok * (size_t)(n ? n : 1));
        int nok = ok ? plan_result_rank(w->res, n, ok) : 0;
        for (; ok && k < o->refine && k < nok; k++)
            best[k] = (int)(ok[k] - w->res);
        free(ok);
    }
    plan_mpi_bcast_ints(&k, 1);
    plan_mpi_bcast_ints(best, k);
    int rc = run_whole(w, ctx, n, best, k, whole, nmine, err);
    for (int j = 0; rc == 0 && o->mpi_rank == 0 && j < k; j++) {
        w->res[best[j]] = whole[j];
        w->res[best[j]].refined = 1;
    }
    *nrefined = k;
    free(best);
    free(whole);
    return rc;
}

/* N of a fast sweep's strategies that ran, drawn at random (a fixed seed
 * over the candidates in space order, so the same sweep draws the same
 * ones), simulated whole: their fast and whole iteration times go to
 * st->check, the sweep's figures stay the fast ones. */
static int verify(sweep *w, plan_ctx *ctx, int n, plan_sweep_stats *st, sim_err *err)
{
    const plan_sweep_opts *o = w->o;
    int k = 0, nmine = 0;
    int *pick = calloc((size_t)(n ? n : 1), sizeof *pick);
    plan_result *whole = calloc(PLAN_VERIFY_MAX, sizeof *whole);
    gsl_rng *rng = o->mpi_rank == 0 ? gsl_rng_alloc(gsl_rng_mt19937) : NULL;
    if (!pick || !whole || (o->mpi_rank == 0 && !rng)) {
        free(pick);
        free(whole);
        if (rng)
            gsl_rng_free(rng);
        return sim_errf(err, "out of memory");
    }
    if (rng) {
        int nok = 0;
        for (int i = 0; i < n; i++)
            if (w->res[i].status == 0)
                pick[nok++] = i;
        gsl_rng_set(rng, 1);
        int want = o->verify < PLAN_VERIFY_MAX ? o->verify : PLAN_VERIFY_MAX;
        for (; k < want && k < nok; k++) { /* a partial Fisher-Yates shuffle */
            int j = k + (int)gsl_rng_uniform_int(rng, (unsigned long)(nok - k)), t = pick[k];
            pick[k] = pick[j];
            pick[j] = t;
        }
        gsl_rng_free(rng);
    }
    plan_mpi_bcast_ints(&k, 1);
    plan_mpi_bcast_ints(pick, k);
    int rc = run_whole(w, ctx, n, pick, k, whole, &nmine, err);
    st->verified = 0;
    for (int j = 0; rc == 0 && o->mpi_rank == 0 && j < k; j++) {
        if (whole[j].status != 0)
            continue; /* ran in the fast fidelity, not whole: nothing to compare */
        plan_verified *v = &st->check[st->verified++];
        plan_copy(v->strategy, sizeof v->strategy, w->res[pick[j]].strategy);
        v->fast_s = w->res[pick[j]].iteration_s;
        v->full_s = whole[j].iteration_s;
    }
    free(pick);
    free(whole);
    return rc;
}

int plan_sweep_run(plan_ctx *ctx, const plan_space *sp, const plan_sweep_opts *o, plan_result *res,
                   plan_sweep_stats *st, sim_err *err)
{
    memset(st, 0, sizeof *st);
    int mrank = o->mpi_rank, n = plan_space_count(sp);
    double t0 = now(), cpu0 = children_cpu();
    sweep w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.sp = sp;
    w.o = o;
    w.res = res;
    w.st = st;
    memset(res, 0, sizeof *res * (size_t)n);
    int *todo = calloc((size_t)(n ? n : 1), sizeof *todo);
    if (!todo)
        return sim_errf(err, "out of memory");
    if (o->cache_dir) {
        sim_err e;
        w.cache = plan_cache_open(o->cache_dir, ctx->inputs_hash, mrank == 0, &e);
        if (!w.cache)
            snprintf(st->cache_warning, sizeof st->cache_warning, "%.400s (continuing without a cache)", e.msg);
        else if (plan_cache_skipped(w.cache))
            snprintf(st->cache_warning, sizeof st->cache_warning,
                     "warning: %.300s/results.tsv: %d corrupt line(s) skipped (torn or edited records); the others "
                     "are used", o->cache_dir, plan_cache_skipped(w.cache));
        else if (plan_cache_readonly(w.cache))
            snprintf(st->cache_warning, sizeof st->cache_warning,
                     "warning: %.300s/results.tsv: read-only; cached results are used, new ones are not saved",
                     o->cache_dir);
    }
    int ntodo = 0;
    if (mrank == 0)
        for (int i = 0; i < n; i++) {
            if (w.cache && plan_cache_get(w.cache, plan_space_get(sp, i), &res[i]))
                st->cached++;
            else
                todo[ntodo++] = i;
        }
    plan_mpi_bcast_ints(&ntodo, 1);
    plan_mpi_bcast_ints(todo, ntodo);
    int rc = evaluate_all(&w, todo, ntodo, mrank == 0 && o->progress, n, &st->mine, err);
    /* the sweep's own figures, before any refinement */
    st->evaluated = ntodo;
    st->wall_s = now() - t0;
    st->cpu_s = children_cpu() - cpu0;
    for (int j = 0; j < ntodo; j++)
        st->sims += res[todo[j]].sims;
    if (rc == 0 && o->verify > 0 && ctx->fidelity == PLAN_FAST) {
        double t1 = now();
        rc = verify(&w, ctx, n, st, err);
        st->verify_wall_s = now() - t1;
    }
    if (rc == 0 && o->refine > 0 && ctx->fidelity == PLAN_FAST) {
        int refine_mine = 0;
        double t1 = now(), c1 = children_cpu();
        rc = refine(&w, ctx, n, &st->refined, &refine_mine, err);
        st->refine_wall_s = now() - t1;
        st->refine_cpu_s = children_cpu() - c1;
    }
    free(todo);
    plan_cache_close(w.cache);
    return rc;
}
