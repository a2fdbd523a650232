/* search.c — the seeds' searches (papers.md §1.6, §3.4, §3.6) over the
 * strategies `trainsim run` takes, priced by fragments of the workload
 * generator itself.
 *
 *  galvatron  Galvatron's outer loop over the pipeline degree, the global
 *             batch and the micro-batch count (§3.4), around a per-stage
 *             layer-wise choice between DP and SDP (ZeRO-3) at the TP
 *             degree of the plan: the part of Galvatron's decision tree
 *             (§3.1) that the generator expresses (`osdp=` per layer, one
 *             tp for the whole model; per-layer TP is not in this space);
 *  osdp       per-layer sharding level 0..3 (`osdp=` mask), with and
 *             without full recompute, one micro-batch per replica (§3.6);
 *  oases      Oases' plan shape (§1.6): a TP degree, a smaller one for the
 *             first layers (`tp_cut=L:T`) and the cut point, under the
 *             generator's Oases schedule (sub-batch overlap, its recompute).
 *
 * Fragments.  A fragment is the generator's schedule of the model cut to a
 * few layers per stage (two and four; embeddings, LM head, recompute, the
 * pipeline schedule's overlap, the synchronisation all in it), simulated by
 * plan_evaluate (fast fidelity: it extrapolates over micro-batches), and its
 * memory replayed (wl_gpt_memory).  Iteration time and peak memory are affine
 * in the layers per stage at one level, so two fragments give a level's cost
 * per layer and the intercept (the stage's non-layer work); a mixed plan is
 * its layers' costs plus the intercepts weighed by its layers at each level
 * (between the uniform plans' lines, and on them for a uniform plan).  The layers of a model are identical,
 * so OSDP's and Galvatron's knapsacks over layers reduce to how many layers
 * of a stage take each level: enumerated, which is the knapsack's optimum.
 * The plan picked is then checked against the budget by the generator's
 * memory replay of the whole plan (exact: it is the simulated peak); when it
 * is over, the knapsack's budget is lowered by the excess and solved again. */
#include "planner/search.h"

#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "workloads/gpt.h"

#define MAXLV 4
#define BASE_MAX 200 /* a strategy without a per-layer mask */

void search_opts_default(search_opts *o)
{
    memset(o, 0, sizeof *o);
}

typedef struct sctx {
    const plan_ctx *ctx;
    wl_model model; /* with --layers */
    int G, L;
    double budget;
    search_result *r;
} sctx;

/* The plan's time per level: per layer of a stage and the intercept. */
typedef struct layerwise {
    wl_strategy base;                    /* without osdp= */
    int pp, n, nl, lv[MAXLV];            /* stages, layers per stage, levels (lv[0] = 0) */
    double c[MAXLV], m[MAXLV];           /* per layer: seconds, bytes */
    double t0[MAXLV], m0[MAXLV];         /* intercepts: the stage without layers */
} layerwise;

static double wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

/* The peak memory (largest stage) of `strategy` on the model cut to
 * `layers` layers: the generator's memory replay, no capacity check. */
static int peak_of(sctx *sc, const wl_strategy *st, int layers, double *peak, sim_err *err)
{
    wl_model m = sc->model;
    m.layers = layers;
    wl_memory *ps = calloc((size_t)(st->pp > 0 ? st->pp : 1), sizeof *ps);
    if (!ps)
        return sim_errf(err, "out of memory");
    int rc = wl_gpt_memory(&m, st, sc->ctx->mach, ps, err);
    *peak = 0;
    for (int i = 0; rc == 0 && i < st->pp; i++)
        *peak = fmax(*peak, ps[i].total);
    free(ps);
    sc->r->checks++;
    return rc;
}

/* One fragment's iteration time: the model cut to `layers` layers,
 * simulated.  Whether it fits is not the fragment's question (the whole
 * plan is checked), so the GPUs' capacity is lifted while it is priced. */
static int time_of(sctx *sc, const wl_strategy *st, int layers, double *t, sim_err *err)
{
    plan_ctx c = *sc->ctx;
    c.model = sc->model;
    c.model.layers = layers;
    c.fidelity = PLAN_FAST;
    sim_machine *mach = sc->ctx->mach;
    double cap[64];
    int nm = mach->nmodels < 64 ? mach->nmodels : 64;
    for (int i = 0; i < nm; i++) {
        cap[i] = mach->gpus[i].mem_capacity;
        mach->gpus[i].mem_capacity = 0; /* 0: no capacity to check against */
    }
    plan_result res;
    plan_evaluate_st(&c, st, &res);
    for (int i = 0; i < nm; i++)
        mach->gpus[i].mem_capacity = cap[i];
    sc->r->fragments++;
    sc->r->sims += res.sims;
    if (res.status != 0)
        return sim_errf(err, "fragment %s on %d layers: %s", res.strategy, layers, res.error);
    *t = res.iteration_s;
    return 0;
}

/* base with every layer at OSDP level L (none at level 0). */
static wl_strategy with_level(const wl_strategy *base, int level)
{
    wl_strategy st = *base;
    if (level)
        snprintf(st.osdp, sizeof st.osdp, "%d", level);
    return st;
}

/* A base strategy of the search, parsed once from the keys the seed sets
 * (the parser's own rules: schedule=oases sets its recompute mode); the
 * search then sets per-layer keys on the struct. */
static int base_of(wl_strategy *st, sim_err *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int base_of(wl_strategy *st, sim_err *err, const char *fmt, ...)
{
    char text[BASE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    wl_strategy_default(st);
    return wl_strategy_parse(text, st, err);
}

/* Prices every level of lw from two fragments each: 2 and 4 layers per
 * stage (2 and 3, or 1 and 2, when a stage has fewer).  Not from 1 layer
 * where there are more: a sharded layer's all-gather is prefetched behind
 * the layer before it, which the first layer has not (measured, 32 layers of
 * a BERT-huge-sized GPT at osdp=3 on galvatron-rtxtitan-2x8: 1 -> 2 layers
 * adds 38 ms, every later one 45 ms; from 1 and 2 the estimate was 14 %
 * short); and 2 layers apart: a layer's TP collectives and its neighbours'
 * gathers share links, so one layer's increment varies by 5 % (39-41 ms with
 * tp=2 there; from 2 and 3, 3.4 % over, from 2 and 4, 1.5 %). */
static int price_levels(sctx *sc, layerwise *lw, sim_err *err)
{
    int a = lw->n >= 3 ? 2 : 1, b = lw->n >= 4 ? 4 : a + 1;
    /* memory costs no simulation: its line goes through the real size and
     * two layers per stage fewer (the peak is a maximum over time of what
     * is held, whose make-up changes with the layers: from 2 and 4 layers,
     * 48 of GPT-2 at osdp=3 with recompute came out 10.4 GB for 8.3) */
    int hi = lw->n > 1 ? lw->n : 2, lo = hi > 2 ? hi - 2 : 1;
    for (int i = 0; i < lw->nl; i++) {
        wl_strategy s = with_level(&lw->base, lw->lv[i]);
        double t1, t2, m1, m2;
        if (time_of(sc, &s, a * lw->pp, &t1, err) < 0 || time_of(sc, &s, b * lw->pp, &t2, err) < 0 ||
            peak_of(sc, &s, lo * lw->pp, &m1, err) < 0 || peak_of(sc, &s, hi * lw->pp, &m2, err) < 0)
            return -1;
        lw->c[i] = (t2 - t1) / (b - a);
        lw->m[i] = (m2 - m1) / (hi - lo);
        lw->t0[i] = t1 - a * lw->c[i];
        lw->m0[i] = m2 - hi * lw->m[i];
    }
    return 0;
}

/* The strategy of counts k[] per stage: each stage's layers take the levels
 * highest first; no osdp when every layer is at level 0. */
static wl_strategy mask_strategy(const layerwise *lw, const int *k)
{
    wl_strategy st = lw->base;
    int any = 0;
    for (int i = 1; i < lw->nl; i++)
        any |= k[i] > 0;
    size_t w = 0, n = sizeof st.osdp;
    for (int s = 0; any && s < lw->pp; s++)
        for (int i = lw->nl - 1; i >= 0; i--)
            for (int j = 0; j < k[i] && w + 1 < n; j++)
                st.osdp[w++] = (char)('0' + lw->lv[i]);
    st.osdp[w] = 0;
    return st;
}

/* The fastest counts under a memory bound on the additive model (every
 * composition of n into nl parts).  0 when none fits. */
static int best_counts(const layerwise *lw, double bound, int *k, double *est)
{
    int c[MAXLV] = {0}, found = 0;
    *est = DBL_MAX;
    for (;;) {
        int used = 0;
        for (int i = 1; i < lw->nl; i++)
            used += c[i];
        if (used <= lw->n) {
            c[0] = lw->n - used;
            /* the intercept too is weighed by the layers at each level (what
             * is not a layer's work, the tail of the synchronisation, the
             * overlap at the ends, differs between levels): a uniform plan
             * gets its own level's line exactly */
            double t = 0, m = 0;
            for (int i = 0; i < lw->nl; i++) {
                t += c[i] * (lw->c[i] + lw->t0[i] / lw->n);
                m += c[i] * (lw->m[i] + lw->m0[i] / lw->n);
            }
            if (m <= bound && t < *est) {
                *est = t;
                memcpy(k, c, sizeof c);
                found = 1;
            }
        }
        int i = 1;
        while (i < lw->nl && ++c[i] > lw->n)
            c[i++] = 0;
        if (i >= lw->nl)
            return found;
    }
}

/* The layer-wise choice of lw under the budget into row: the additive
 * optimum, checked whole by the memory replay and solved again under a
 * lower bound while it is over.  row->ok = 0 with why when nothing fits. */
static int solve_layerwise(sctx *sc, layerwise *lw, search_row *row, sim_err *err)
{
    double bound = sc->budget;
    for (int tries = 0; tries < 16; tries++) {
        int k[MAXLV] = {0};
        double est, peak;
        if (!best_counts(lw, bound, k, &est))
            break;
        wl_strategy plan = mask_strategy(lw, k);
        wl_strategy_format(&plan, row->strategy, sizeof row->strategy);
        if (peak_of(sc, &plan, sc->L, &peak, err) < 0)
            return -1;
        if (peak <= sc->budget) {
            row->ok = 1;
            row->est_s = est;
            row->peak_bytes = peak;
            row->sharded = 0;
            for (int i = 1; i < lw->nl; i++)
                row->sharded += lw->pp * k[i];
            return 0;
        }
        bound -= peak - sc->budget + 1e6;
    }
    /* the least memory: every layer at the highest level (on its own line:
     * taken when the additive memory missed it) */
    double least;
    wl_strategy most = with_level(&lw->base, lw->lv[lw->nl - 1]);
    char s[PLAN_SEARCH_STRATEGY_MAX];
    wl_strategy_format(&most, s, sizeof s);
    if (peak_of(sc, &most, sc->L, &least, err) < 0)
        return -1;
    if (least <= sc->budget) {
        int top = lw->nl - 1;
        snprintf(row->strategy, sizeof row->strategy, "%s", s);
        row->ok = 1;
        row->est_s = lw->t0[top] + lw->n * lw->c[top];
        row->peak_bytes = least;
        row->sharded = top ? sc->L : 0;
        return 0;
    }
    row->ok = 0;
    snprintf(row->why, sizeof row->why, "%.200s needs at least %.2f GB per GPU > budget %.2f GB", s, least / 1e9,
             sc->budget / 1e9);
    return 0;
}

/* A pruned combination: the strategy and the least memory it needs. */
static void note(search_result *r, const char *s, double least, double budget)
{
    if (r->nnotes < PLAN_SEARCH_NOTES)
        snprintf(r->notes[r->nnotes++], sizeof r->notes[0], "%.120s needs at least %.2f GB per GPU > budget %.2f GB",
                 s, least / 1e9, budget / 1e9);
}

static const char *dtype_of(const sctx *sc) { return sim_dtype_name(sc->ctx->dtype); }

/* Does the plan with the most sharding fit at all?  Cheap (a memory
 * replay): combinations that cannot fit are pruned before any simulation. */
static int least_fits(sctx *sc, const layerwise *lw, int *fits, sim_err *err)
{
    double least;
    wl_strategy most = with_level(&lw->base, lw->lv[lw->nl - 1]);
    if (peak_of(sc, &most, sc->L, &least, err) < 0)
        return -1;
    *fits = least <= sc->budget;
    if (!*fits) {
        char s[PLAN_SEARCH_STRATEGY_MAX];
        wl_strategy_format(&most, s, sizeof s);
        note(sc->r, s, least, sc->budget);
    }
    return 0;
}

/* ---- Galvatron ---- */

static int divides_model(const wl_model *m, int tp)
{
    return m->heads % tp == 0 && m->hidden % tp == 0 && m->ffn % tp == 0;
}

static int galvatron_lists(sctx *sc, const search_opts *o, int *pps, int *npp, int *bs, int *nb, sim_err *err)
{
    *npp = 0;
    if (o->npp) {
        for (int i = 0; i < o->npp; i++) {
            if (sc->G % o->pp[i] || sc->L % o->pp[i])
                return sim_errf(err, "--pp %d: expected a divisor of the %d GPUs and of the %d layers", o->pp[i], sc->G,
                                sc->L);
            pps[(*npp)++] = o->pp[i];
        }
    } else {
        for (int p = 1; p <= sc->G && *npp < 16; p++)
            if (sc->G % p == 0 && sc->L % p == 0)
                pps[(*npp)++] = p;
    }
    *nb = 0;
    if (o->nbatch) {
        memcpy(bs, o->batches, sizeof(int) * (size_t)o->nbatch);
        *nb = o->nbatch;
    } else if (o->batch) {
        bs[(*nb)++] = o->batch;
    } else {
        int maxb = o->max_batch ? o->max_batch : 1024;
        for (int b = sc->G; b <= maxb && *nb < 64; b *= 2)
            bs[(*nb)++] = b;
        if (!*nb)
            return sim_errf(err, "--max-batch %d: below the first batch of the sweep, %d (the GPUs)", maxb, sc->G);
    }
    return 0;
}

/* One (PP, TP, batch, micro-batches) combination priced into row; *fits = 0
 * when even the most sharded plan is over the budget. */
static int galvatron_combo(sctx *sc, const search_opts *o, int pp, int tp, int B, int m, search_row *row, int *fits,
                           sim_err *err)
{
    int dp = sc->G / (pp * tp), mb = B / (m * dp);
    layerwise lw;
    memset(&lw, 0, sizeof lw);
    if (base_of(&lw.base, err, "tp=%d,pp=%d,dp=%d,mb=%d,gb=%d,dtype=%s,pipeline=%s", tp, pp, dp, mb, B,
                dtype_of(sc), o->one_f_one_b ? "1f1b" : "gpipe") < 0)
        return -1;
    lw.pp = pp;
    lw.n = sc->L / pp;
    lw.nl = dp > 1 ? 2 : 1; /* SDP shards nothing without data parallelism */
    lw.lv[1] = 3;
    memset(row, 0, sizeof *row);
    if (least_fits(sc, &lw, fits, err) < 0)
        return -1;
    if (!*fits)
        return 0;
    if (price_levels(sc, &lw, err) < 0 || solve_layerwise(sc, &lw, row, err) < 0)
        return -1;
    row->batch = B;
    row->micro = m;
    return 0;
}

static int galvatron(sctx *sc, const search_opts *o, sim_err *err)
{
    search_result *r = sc->r;
    int pps[16], npp, bs[64], nb;
    if (galvatron_lists(sc, o, pps, &npp, bs, &nb, err) < 0)
        return -1;
    for (int i = 0; i < npp; i++) {
        int pp = pps[i];
        search_row *best = &r->rows[r->nrows++];
        memset(best, 0, sizeof *best);
        snprintf(best->label, sizeof best->label, "PP %d", pp);
        snprintf(best->why, sizeof best->why, "no (TP, batch, micro-batch) combination divides or fits");
        int dflt[3] = {pp, 2 * pp, 4 * pp}, nmi = o->nmicro ? o->nmicro : pp == 1 ? 1 : 3;
        const int *ms = o->nmicro ? o->micro : dflt;
        for (int tp = 1; tp <= sc->G / pp; tp *= 2) {
            if ((sc->G / pp) % tp || !divides_model(&sc->model, tp))
                continue;
            int dp = sc->G / (pp * tp);
            for (int q = 0; q < nmi; q++) {
                /* a batch that does not fit stops the sweep: larger ones need more */
                for (int j = 0; j < nb; j++) {
                    int B = bs[j], m = ms[q];
                    if (B % (m * dp))
                        continue;
                    search_row row;
                    int fits;
                    if (galvatron_combo(sc, o, pp, tp, B, m, &row, &fits, err) < 0)
                        return -1;
                    if (!fits && !o->nbatch)
                        break;
                    if (row.ok && (!best->ok || B / row.est_s > best->batch / best->est_s)) {
                        snprintf(row.label, sizeof row.label, "PP %d", pp);
                        *best = row;
                    }
                }
            }
        }
    }
    return 0;
}

/* ---- OSDP ---- */

static int osdp(sctx *sc, sim_err *err)
{
    search_result *r = sc->r;
    int B = sc->r->rows[0].batch;
    static const char *const RC[] = {"none", "full"};
    for (int i = 0; i < 2; i++) {
        layerwise lw;
        memset(&lw, 0, sizeof lw);
        if (base_of(&lw.base, err, "tp=1,pp=1,dp=%d,mb=%d,gb=%d,dtype=%s,recompute=%s", sc->G, B / sc->G, B,
                    dtype_of(sc), RC[i]) < 0)
            return -1;
        lw.pp = 1;
        lw.n = sc->L;
        lw.nl = 4;
        for (int l = 0; l < 4; l++)
            lw.lv[l] = l;
        search_row *row = &r->rows[r->nrows++];
        memset(row, 0, sizeof *row);
        snprintf(row->label, sizeof row->label, "recompute=%s", RC[i]);
        row->batch = B;
        row->micro = 1;
        int fits;
        if (least_fits(sc, &lw, &fits, err) < 0)
            return -1;
        if (!fits) {
            plan_copy(row->why, sizeof row->why, r->notes[r->nnotes - 1]);
            continue;
        }
        if (price_levels(sc, &lw, err) < 0 || solve_layerwise(sc, &lw, row, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- Oases ---- */

/* Oases' micro-batch: 4, at least two sub-batches per degree ratio across a
 * cut, halved until it divides the replicas' share of the batch. */
static int oases_mb(int B, int dp, int ratio)
{
    int mb = 2 * ratio > 4 ? 2 * ratio : 4;
    while (mb >= 2 * ratio && mb >= 2 && (B % (mb * dp) || mb % (2 * ratio)))
        mb /= 2;
    return mb >= 2 * ratio && mb >= 2 && B % (mb * dp) == 0 ? mb : 0;
}

/* One (tp, t2) pair: t2 = 0 for no cut.  Costs: uniform tp from 1 and 2
 * layers; across a cut, from the model cut at 1 of 2 and at 2 of 3 layers
 * (the resharding at the cut is in both). */
static int oases_pair(sctx *sc, int B, int tp, int t2, search_row *row, sim_err *err)
{
    int dp = sc->G / tp, mb = oases_mb(B, dp, t2 ? tp / t2 : 1), L = sc->L;
    memset(row, 0, sizeof *row);
    snprintf(row->label, sizeof row->label, t2 ? "tp %d, first layers at tp %d" : "tp %d", tp, t2);
    row->batch = B;
    if (!mb) {
        snprintf(row->why, sizeof row->why, "no micro-batch of 2 x (tp/cut) sequences divides the batch %d", B);
        return 0;
    }
    row->micro = B / (mb * dp);
    wl_strategy base, s;
    if (base_of(&base, err, "tp=%d,pp=1,dp=%d,mb=%d,gb=%d,dtype=%s,schedule=oases", tp, dp, mb, B, dtype_of(sc)) < 0)
        return -1;
    double f1, f2, c12 = 0, c23 = 0, peak;
    if (time_of(sc, &base, 1, &f1, err) < 0 || time_of(sc, &base, 2, &f2, err) < 0)
        return -1;
    if (t2 && L >= 3) {
        s = base;
        s.tp_cut_layers = 1, s.tp_cut_tp = t2;
        if (time_of(sc, &s, 2, &c12, err) < 0)
            return -1;
        s.tp_cut_layers = 2;
        if (time_of(sc, &s, 3, &c23, err) < 0)
            return -1;
    }
    double hi = f2 - f1, lo = c23 - c12, least = DBL_MAX;
    int first = t2 ? 1 : 0, last = t2 ? (L >= 3 ? L - 1 : 0) : 0;
    for (int cut = first; cut <= last; cut++) {
        s = base;
        if (cut)
            s.tp_cut_layers = cut, s.tp_cut_tp = t2;
        if (peak_of(sc, &s, L, &peak, err) < 0)
            return -1;
        least = fmin(least, peak);
        double est = cut ? c12 + (cut - 1) * lo + (L - cut - 1) * hi : f1 + (L - 1) * hi;
        if (peak <= sc->budget && (!row->ok || est < row->est_s)) {
            row->ok = 1;
            row->est_s = est;
            row->peak_bytes = peak;
            row->sharded = cut;
            wl_strategy_format(&s, row->strategy, sizeof row->strategy);
        }
    }
    if (!row->ok && last >= first)
        snprintf(row->why, sizeof row->why, "needs at least %.2f GB per GPU > budget %.2f GB", least / 1e9,
                 sc->budget / 1e9);
    else if (!row->ok)
        snprintf(row->why, sizeof row->why, "a cut needs 3 layers or more");
    return 0;
}

static int oases(sctx *sc, sim_err *err)
{
    search_result *r = sc->r;
    int B = r->rows[0].batch;
    r->nrows = 0;
    for (int tp = 1; tp <= sc->G; tp *= 2) {
        if (sc->G % tp || !divides_model(&sc->model, tp) || B % (sc->G / tp))
            continue;
        for (int t2 = 0; t2 < tp && r->nrows < PLAN_SEARCH_ROWS; t2 = t2 ? 2 * t2 : 1)
            if (oases_pair(sc, B, tp, t2, &r->rows[r->nrows++], err) < 0)
                return -1;
    }
    return 0;
}

/* ---- the search ---- */

int search_run(const plan_ctx *ctx, const char *algo, const search_opts *o, search_result *r, sim_err *err)
{
    if (ctx->model.moe) /* the searches' strategies (osdp, tp_cut, per-layer DP/SDP) are dense-only */
        return sim_errf(err, "--search %s: model %s has mixture-of-experts layers, which the seeds' searches do not "
                        "model; the sweep (trainsim plan without --search) searches ep", algo, ctx->model.name);
    double t0 = wall_now();
    memset(r, 0, sizeof *r);
    r->best = -1;
    sctx sc = {.ctx = ctx, .model = ctx->model, .G = ctx->mach->ngpus, .r = r};
    if (o->layers)
        sc.model.layers = o->layers;
    sc.L = sc.model.layers;
    const sim_gpu *g = sim_machine_gpu(ctx->mach, 0);
    sc.budget = o->mem_budget > 0 ? o->mem_budget : 0.95 * g->mem_capacity;
    snprintf(r->algo, sizeof r->algo, "%s", algo);
    r->gpus = sc.G;
    r->layers = sc.L;
    r->budget = sc.budget;
    int gal = !strcmp(algo, "galvatron");
    if (!gal && (o->npp || o->nbatch || o->nmicro || o->max_batch || o->one_f_one_b))
        return sim_errf(err, "--pp, --batches, --micro-batches, --max-batch and --pipeline apply to --search galvatron only");
    int B = o->batch ? o->batch : 2 * sc.G, rc;
    if (gal) {
        rc = galvatron(&sc, o, err);
    } else if (!strcmp(algo, "osdp")) {
        if (B % sc.G)
            return sim_errf(err, "--search osdp: batch %d is not divisible by the %d GPUs", B, sc.G);
        r->rows[0].batch = B;
        rc = osdp(&sc, err);
    } else if (!strcmp(algo, "oases")) {
        r->rows[0].batch = B;
        rc = oases(&sc, err);
    } else {
        return sim_errf(err, "--search: expected oases, galvatron or osdp, got \"%s\"", algo);
    }
    r->wall_s = wall_now() - t0;
    if (rc < 0)
        return -1;
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].ok && (r->best < 0 || r->rows[i].batch / r->rows[i].est_s >
                                                 r->rows[r->best].batch / r->rows[r->best].est_s))
            r->best = i;
    if (r->best < 0)
        return sim_errf(err, "--search %s: no plan fits the memory budget of %.2f GB per GPU", algo, sc.budget / 1e9);
    return 0;
}
