/* moe_balance.c — expert load balancing across training steps, measured
 * into a wl_moe_report (workloads/moe_cli.c is the `trainsim moe` command
 * that prints it).
 *
 * Three modes, each simulated step by step on the same routing:
 *   none       DeepSpeed-MoE: every expert only on its owner.
 *   fastermoe  FasterMoE's dynamic shadowing (He et al., PPoPP'22): after the
 *              gate of the current step, an expert is shadowed — broadcast to
 *              every GPU of its EP group, tokens computed where they are, its
 *              gradients reduced back after its backward — when moving its
 *              tokens would cost more bytes than moving its parameters
 *              (2·tokens·h > 2·parameters: dispatch+combine vs broadcast+
 *              reduce).  Assumption: FasterMoE decides with a performance
 *              model we do not have; this byte break-even is its core idea.
 *              The broadcast and reduce sit on the all-to-all stream, on the
 *              critical path.
 *   prophet    Pro-Prophet (papers.md §5; details [mem], assumptions marked
 *              ASSUMED): the planner predicts this step's routing from the
 *              previous step's statistics (locality), and per MoE layer
 *              greedily replicates the heaviest expert of the most loaded
 *              GPU to one of the least loaded GPUs, keeping a candidate
 *              only if a simulated fragment (a dense layer and the MoE layer,
 *              forward and backward, all micro-batches, on the real
 *              platform) gets faster.  It re-plans a layer only when its
 *              predicted distribution moved (L1 distance > 0.1) since the
 *              layer's last plan.  The scheduler broadcasts a layer's copies
 *              on a separate stream once the previous MoE layer has combined
 *              micro-batch 0, overlapping the dense layer in between, and
 *              reduces their gradients after the layer's last backward,
 *              overlapping the layers below.  Step 0 has no statistics and
 *              is not balanced. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/alloc.h"
#include "workloads/moe.h"

static wl_moe_place *place_new(int experts, int ep, int overlap)
{
    wl_moe_place *p = calloc(1, sizeof *p);
    p->experts = experts;
    p->ep = ep;
    p->overlap = overlap;
    p->holds = calloc((size_t)experts * ep, 1);
    return p;
}

static wl_moe_place *place_copy(const wl_moe_place *a)
{
    wl_moe_place *p = place_new(a->experts, a->ep, a->overlap);
    memcpy(p->holds, a->holds, (size_t)a->experts * a->ep);
    return p;
}

static void place_free(wl_moe_place *p)
{
    if (p)
        free(p->holds);
    free(p);
}

static int place_copies(const wl_moe_place *p)
{
    int n = 0, per = p->experts / p->ep;
    for (int e = 0; e < p->experts; e++)
        for (int g = 0; g < p->ep; g++)
            n += p->holds[(size_t)e * p->ep + g] && g != e / per;
    return n;
}

/* ---- FasterMoE ---------------------------------------------------------- */

static wl_moe_place *fastermoe_plan(const wl_model *m, const wl_moe *moe, int ep, const int64_t *counts)
{
    int E = moe->experts;
    wl_moe_place *p = NULL;
    for (int e = 0; e < E; e++) {
        int64_t remote = 0, owner = e / (E / ep);
        for (int k = 0; k < ep; k++)
            if (k != owner)
                remote += counts[(size_t)k * E + e];
        /* tokens moved: remote·h each way; parameters moved: 2·h·f each way */
        if ((double)remote * m->hidden > 2.0 * m->hidden * moe->expert_ffn) {
            if (!p)
                p = place_new(E, ep, 0);
            for (int g = 0; g < ep; g++)
                p->holds[(size_t)e * ep + g] = 1;
        }
    }
    return p;
}

/* ---- Pro-Prophet -------------------------------------------------------- */

typedef struct planner {
    const wl_model *m;
    const wl_moe *moe;
    const wl_moe_strategy *st;
    sim_machine frag_mach;  /* the first tp·ep GPUs of the platform */
    wl_model frag_model;
    wl_moe frag_moe;
    wl_moe_strategy frag_st;
    int ep, E;
    double **last_dist;     /* per layer: normalised totals at the last plan */
    wl_moe_place **last;    /* per layer: last plan */
    int sims;
} planner;

static double simulate_traced(const sim_schedule *s, const sim_machine *mach, const char *trace, sim_err *err)
{
    sim_result r;
    sim_options o;
    sim_options_default(&o);
    o.trace_path = trace;
    if (sim_run_isolated(s, mach, &o, &r, err) < 0)
        return -1;
    double t = r.iteration_s;
    sim_result_free(&r);
    return t;
}

static double simulate(const sim_schedule *s, const sim_machine *mach, sim_err *err)
{
    return simulate_traced(s, mach, NULL, err);
}

/* Simulated time of one dense + one MoE layer under placement pl. */
static double fragment_time(planner *P, const int64_t *counts, const wl_moe_place *pl, sim_err *err)
{
    wl_routing *r = wl_routing_from_counts(1, P->E, P->ep, counts);
    wl_moe_place *places[1] = {(wl_moe_place *)pl};
    sim_schedule *s = wl_moe_generate(&P->frag_model, &P->frag_moe, &P->frag_st, &P->frag_mach, r, 0, places, err);
    wl_routing_free(r);
    if (!s)
        return -1;
    double t = simulate(s, &P->frag_mach, err);
    sim_sched_free(s);
    P->sims++;
    return t;
}

static double max_load(const wl_moe *moe, int ep, const int64_t *counts, const wl_moe_place *pl, int64_t per_source,
                       int64_t *compute, int64_t *send)
{
    wl_moe_assign(moe, ep, counts, pl, per_source, compute, send);
    int64_t mx = 0;
    for (int g = 0; g < ep; g++)
        mx = compute[g] > mx ? compute[g] : mx;
    return (double)mx;
}

/* Sets *out to the plan of MoE layer q (NULL: no copies); -1 if a fragment
 * could not be simulated. */
static int prophet_plan(planner *P, int q, const int64_t *pred, int64_t per_source, wl_moe_place **out, sim_err *err)
{
    *out = NULL;
    int E = P->E, ep = P->ep, per = E / ep;
    /* re-plan only when the distribution moved */
    double *dist = malloc((size_t)E * sizeof *dist), tot = 0, l1 = 0;
    for (int e = 0; e < E; e++) {
        dist[e] = 0;
        for (int k = 0; k < ep; k++)
            dist[e] += (double)pred[(size_t)k * E + e];
        tot += dist[e];
    }
    for (int e = 0; e < E; e++) {
        dist[e] = tot > 0 ? dist[e] / tot : 0;
        l1 += P->last_dist[q] ? fabs(dist[e] - P->last_dist[q][e]) : 2;
    }
    if (P->last_dist[q] && l1 <= 0.1) {
        free(dist);
        *out = P->last[q] ? place_copy(P->last[q]) : NULL;
        return 0;
    }
    free(P->last_dist[q]);
    P->last_dist[q] = dist;

    int64_t *compute = malloc((size_t)ep * sizeof *compute), *send = malloc((size_t)ep * ep * sizeof *send);
    int64_t *owned = malloc((size_t)E * sizeof *owned);
    wl_moe_place *cur = place_new(E, ep, 1);
    for (int e = 0; e < E; e++)
        cur->holds[(size_t)e * ep + e / per] = 1;
    double best_t = fragment_time(P, pred, NULL, err);
    for (int iter = 0; best_t >= 0 && iter < 2 * ep; iter++) {
        double cur_max = max_load(P->moe, ep, pred, cur, per_source, compute, send);
        int gmax = 0;
        for (int g = 1; g < ep; g++)
            if (compute[g] > compute[gmax])
                gmax = g;
        /* the expert contributing most to gmax: its own tokens routed there */
        int ebest = -1;
        double wbest = 0;
        for (int e = 0; e < E; e++) {
            if (!cur->holds[(size_t)e * ep + gmax])
                continue;
            double w = 0;
            for (int k = 0; k < ep; k++)
                w += (double)pred[(size_t)k * E + e];
            if (w > wbest) {
                wbest = w;
                ebest = e;
            }
        }
        if (ebest < 0)
            break;
        /* the two least loaded GPUs without it */
        int cand[2] = {-1, -1};
        for (int g = 0; g < ep; g++) {
            if (cur->holds[(size_t)ebest * ep + g])
                continue;
            if (cand[0] < 0 || compute[g] < compute[cand[0]]) {
                cand[1] = cand[0];
                cand[0] = g;
            } else if (cand[1] < 0 || compute[g] < compute[cand[1]]) {
                cand[1] = g;
            }
        }
        wl_moe_place *win = NULL;
        double win_t = best_t;
        for (int c = 0; c < 2; c++) {
            if (cand[c] < 0)
                continue;
            wl_moe_place *t = place_copy(cur);
            t->holds[(size_t)ebest * ep + cand[c]] = 1;
            if (max_load(P->moe, ep, pred, t, per_source, compute, send) >= cur_max) {
                place_free(t); /* does not even help the predicted balance */
                continue;
            }
            double tt = fragment_time(P, pred, t, err);
            if (tt < 0) {
                place_free(t);
                place_free(win);
                win = NULL;
                best_t = -1;
                break;
            }
            if (tt < win_t * (1 - 1e-9)) {
                place_free(win);
                win = t;
                win_t = tt;
            } else {
                place_free(t);
            }
        }
        if (!win)
            break;
        place_free(cur);
        cur = win;
        best_t = win_t;
    }
    free(compute);
    free(send);
    free(owned);
    if (best_t < 0) {
        place_free(cur);
        return -1;
    }
    if (place_copies(cur) == 0) {
        place_free(cur);
        cur = NULL;
    }
    place_free(P->last[q]);
    P->last[q] = cur ? place_copy(cur) : NULL;
    *out = cur;
    return 0;
}

/* The planner of a resolved strategy st (kept by pointer) for nq MoE
 * layers: its fragment is a dense and an MoE layer on the first tp·ep GPUs,
 * with the micro-batches of a pipeline. */
static void planner_init(planner *P, const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st,
                         const sim_machine *mach, int nq)
{
    memset(P, 0, sizeof *P);
    P->m = m;
    P->moe = moe;
    P->st = st;
    P->ep = st->ep;
    P->E = moe->experts;
    P->frag_mach = *mach;
    P->frag_mach.ngpus = st->base.tp * st->ep;
    P->frag_model = *m;
    P->frag_model.layers = 2;
    P->frag_moe = *moe;
    P->frag_moe.first = 1;
    P->frag_moe.every = 2;
    P->frag_st = *st;
    P->frag_st.base.pp = 1;
    P->frag_st.base.dp = st->ep;
    P->frag_st.base.gb = st->base.gb / st->base.dp * st->ep; /* the same micro-batches per pipeline */
    P->last_dist = sim_xcalloc((size_t)nq + 1, sizeof *P->last_dist, "Pro-Prophet's planner");
    P->last = sim_xcalloc((size_t)nq + 1, sizeof *P->last, "Pro-Prophet's planner");
}

static void planner_free(planner *P, int nq)
{
    for (int q = 0; q < nq; q++) {
        free(P->last_dist[q]);
        place_free(P->last[q]);
    }
    free(P->last_dist);
    free(P->last);
}

/* ---- one routed step (`trainsim run` and `plan`: strategy keys routing= and balance=) ---- */

sim_schedule *wl_moe_routed_step(const wl_model *m, const wl_strategy *st, const sim_machine *mach, sim_err *err)
{
    if (!m->moe)
        return sim_errf(err, "strategy: routing=%s: model %s has no mixture-of-experts layers (no \"moe\" object)",
                        st->routing, m->name), NULL;
    const wl_moe *moe = &m->moe_cfg;
    wl_moe_strategy ms;
    wl_moe_strategy_default(&ms);
    ms.base = *st;
    ms.ep = wl_strategy_ep(st);
    ms.balance_mask = 1 << st->balance;
    if (wl_routing_cfg_parse(st->routing, &ms.routing, err) < 0) {
        sim_err_prefix(err, "strategy: routing: ");
        return NULL;
    }
    /* two steps of the drifting routing, the second simulated: the first
     * is the statistics Pro-Prophet predicts from (every mode sees the same
     * step); a routing trace of one step is simulated as it is */
    int trace = ms.routing.dist == WL_ROUTE_TRACE;
    ms.steps = trace ? -1 : 2;
    if (wl_moe_resolve(m, moe, &ms, mach, err) < 0)
        return NULL;
    int ep = ms.ep, nq = wl_moe_count(moe, m->layers);
    int64_t per_source = (int64_t)m->seq * ms.base.mb * moe->top_k;
    wl_routing *r = wl_routing_new(&ms.routing, ms.steps, nq, moe->experts, ep, per_source, err);
    if (!r) {
        sim_err_prefix(err, "strategy: routing=%s: ", st->routing);
        return NULL;
    }
    int step = wl_routing_steps(r) > 1 ? 1 : 0;
    if (st->balance == WL_BAL_PROPHET && step == 0) {
        wl_routing_free(r);
        return sim_errf(err, "strategy: balance=prophet plans a step from the previous step's routing, and the "
                        "routing trace %s has one step", ms.routing.trace), NULL;
    }
    wl_moe_place **places = sim_xcalloc((size_t)nq + 1, sizeof *places, "the experts' copies");
    planner P;
    planner_init(&P, m, moe, &ms, mach, nq);
    int rc = 0;
    for (int q = 0; q < nq && !rc; q++) {
        if (st->balance == WL_BAL_FASTERMOE)
            places[q] = fastermoe_plan(m, moe, ep, wl_routing_counts(r, step, q));
        else if (st->balance == WL_BAL_PROPHET)
            rc = prophet_plan(&P, q, wl_routing_counts(r, step - 1, q), per_source, &places[q], err);
    }
    sim_schedule *s = rc ? NULL : wl_moe_generate(m, moe, &ms, mach, r, step, places, err);
    planner_free(&P, nq);
    for (int q = 0; q < nq; q++)
        place_free(places[q]);
    free(places);
    wl_routing_free(r);
    if (s) {
        char text[512]; /* it names routing and balance; the name adds which step */
        wl_strategy_format(st, text, sizeof text);
        snprintf(s->meta.name, sizeof s->meta.name, "%.40s %.160s (MoE routed step %d, seed %lu)", m->name, text,
                 step, ms.routing.seed);
    }
    return s;
}

/* ---- the run ------------------------------------------------------------ */

void wl_moe_report_free(wl_moe_report *r)
{
    free(r->time_s);
    free(r->imb_mean);
    free(r->imb_max);
    free(r->imb_layer);
    free(r->copies);
    free(r->sims);
    free(r->dropped);
    memset(r, 0, sizeof *r);
}

int wl_moe_run(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st_in, const sim_machine *mach,
               wl_moe_report *out, void (*on_step)(void *ctx, const wl_moe_report *r), void *ctx, sim_err *err)
{
    memset(out, 0, sizeof *out);
    wl_moe_strategy st = *st_in;
    if (wl_moe_resolve(m, moe, &st, mach, err) < 0)
        return -1;
    int ep = st.ep, E = moe->experts, nq = wl_moe_count(moe, m->layers);
    int64_t per_source = (int64_t)m->seq * st.base.mb * moe->top_k;
    wl_routing *r = wl_routing_new(&st.routing, st.steps, nq, E, ep, per_source, err);
    if (!r)
        return -1;
    int steps = wl_routing_steps(r);
    size_t cells = (size_t)steps * WL_BAL_COUNT;
    out->st = st;
    out->moe_layers = nq;
    out->time_s = sim_xcalloc(cells, sizeof *out->time_s, "the MoE report");
    out->imb_mean = sim_xcalloc(cells, sizeof *out->imb_mean, "the MoE report");
    out->imb_max = sim_xcalloc(cells, sizeof *out->imb_max, "the MoE report");
    out->imb_layer = sim_xcalloc(cells * (size_t)nq, sizeof *out->imb_layer, "the MoE report");
    out->copies = sim_xcalloc((size_t)steps, sizeof *out->copies, "the MoE report");
    out->sims = sim_xcalloc((size_t)steps, sizeof *out->sims, "the MoE report");
    out->dropped = sim_xcalloc((size_t)steps, sizeof *out->dropped, "the MoE report");
    planner P;
    planner_init(&P, m, moe, &st, mach, nq);

    double *imb = calloc((size_t)nq * WL_BAL_COUNT, sizeof *imb);
    int64_t *compute = malloc((size_t)ep * sizeof *compute), *send = malloc((size_t)ep * ep * sizeof *send);
    wl_moe_place **places = calloc((size_t)nq, sizeof *places);
    double *layer_imb = out->imb_layer;
    int rc = 0;
    for (int s = 0; s < steps && !rc; s++) {
        double *t = out->time_s + (size_t)s * WL_BAL_COUNT, *mean_imb = out->imb_mean + (size_t)s * WL_BAL_COUNT,
               *max_imb = out->imb_max + (size_t)s * WL_BAL_COUNT;
        int copies = 0, sims0 = P.sims;
        int64_t dropped = 0;
        for (int b = 0; b < WL_BAL_COUNT && !rc; b++) {
            if (!(st.balance_mask >> b & 1))
                continue;
            for (int q = 0; q < nq; q++) {
                const int64_t *cnt = wl_routing_counts(r, s, q);
                places[q] = NULL;
                if (b == WL_BAL_FASTERMOE)
                    places[q] = fastermoe_plan(m, moe, ep, cnt);
                else if (b == WL_BAL_PROPHET && s > 0) {
                    if (prophet_plan(&P, q, wl_routing_counts(r, s - 1, q), per_source, &places[q], err) < 0) {
                        rc = -1;
                        break;
                    }
                    copies += places[q] ? place_copies(places[q]) : 0;
                }
                int64_t dr = wl_moe_assign(moe, ep, cnt, places[q], per_source, compute, send);
                if (!(st.balance_mask & ((1 << b) - 1))) /* counted once, in the first mode run */
                    dropped += dr;
                double x = wl_moe_imbalance(compute, ep);
                mean_imb[b] += x / nq;
                max_imb[b] = x > max_imb[b] ? x : max_imb[b];
                layer_imb[((size_t)s * WL_BAL_COUNT + b) * nq + q] = x;
            }
            if (rc) {
                for (int q = 0; q < nq; q++)
                    place_free(places[q]);
                break;
            }
            sim_schedule *sched = wl_moe_generate(m, moe, &st, mach, r, s, places, err);
            for (int q = 0; q < nq; q++) {
                place_free(places[q]);
                places[q] = NULL;
            }
            if (!sched) {
                rc = -1;
                break;
            }
            int last_mode = !(st.balance_mask >> (b + 1));
            t[b] = simulate_traced(sched, mach, st.trace && s == steps - 1 && last_mode ? st.trace : NULL, err);
            sim_sched_free(sched);
            if (t[b] < 0)
                rc = -1;
            out->total_s[b] += t[b];
        }
        if (rc)
            break;
        out->copies[s] = copies;
        out->sims[s] = P.sims - sims0;
        out->dropped[s] = dropped;
        out->steps = s + 1;
        out->planner_sims = P.sims;
        if (on_step)
            on_step(ctx, out);
    }
    planner_free(&P, nq);
    free(places);
    free(imb);
    free(compute);
    free(send);
    wl_routing_free(r);
    return rc;
}
