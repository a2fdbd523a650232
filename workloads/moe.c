/* moe.c — the MoE strategy keys of `trainsim moe`, token assignment under a
 * replication placement, and the schedule of one training step.
 *
 * Layout (DeepSpeed-MoE, Rajbhandari et al. 2022 §4; Megatron rank order as
 * in gpt.c): rank = pp_i·(tp·dp) + dp_i·tp + tp_i.  Expert parallelism splits
 * each data-parallel group into dp/ep expert-parallel groups of ep
 * consecutive dp indices; EP rank j of a group owns experts
 * [j·E/ep, (j+1)·E/ep).
 *
 * A step is the workload generator's (gpt.c, the MoE layers of
 * layer_megatron.c: the same layer `trainsim run` simulates) with one
 * step's routing: each EP rank's experts compute the tokens the routing
 * sends them (wl_moe_assign), the dispatch and combine are uneven
 * all-to-alls of those sizes, and the experts' copies are broadcast and
 * their gradients reduced as the balancing mode places them
 * (wl_gpt_generate_routed).  The slowest GPU of a group paces both
 * all-to-alls. */
#include "workloads/moe.h"
#include "workloads/gpt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/embedded.h"
#include "sim/fileio.h"
#include "sim/json.h"

/* ---- model -------------------------------------------------------------- */

int wl_moe_model_load(const char *spec, wl_model *m, wl_moe *moe, sim_err *err)
{
    if (wl_model_load(spec, m, err) < 0)
        return -1;
    if (!m->moe)
        return sim_errf(err, "%s: moe: model %s has no \"moe\" object {\"experts\": E, \"top_k\": k, ...} "
                        "(see workloads/README.md)", spec, m->name);
    *moe = m->moe_cfg;
    return 0;
}

double wl_moe_total_params(const char *spec, const wl_model *m)
{
    (void)spec;
    return wl_model_moe_params(m, 0);
}

double wl_moe_active_params(const char *spec, const wl_model *m)
{
    (void)spec;
    return wl_model_moe_params(m, 1);
}

int wl_moe_is_layer(const wl_moe *moe, int layer)
{
    return layer >= moe->first && (layer - moe->first) % moe->every == 0;
}

int wl_moe_count(const wl_moe *moe, int layers)
{
    int n = 0;
    for (int l = 0; l < layers; l++)
        n += wl_moe_is_layer(moe, l);
    return n;
}

/* ---- strategy ----------------------------------------------------------- */

void wl_moe_strategy_default(wl_moe_strategy *s)
{
    memset(s, 0, sizeof *s);
    wl_strategy_default(&s->base);
    s->base.dtype = SIM_DTYPE_FP16;
    s->ep = 1;
    s->steps = 0; /* auto: 5, or the trace's length */
    s->balance_mask = (1 << WL_BAL_COUNT) - 1;
    wl_routing_cfg_default(&s->routing);
}

static int pos_int(const char *key, const char *v, int *out, sim_err *err)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 1 || x > 1000000)
        return sim_errf(err, "strategy: %s: expected a positive integer, got \"%s\"", key, v);
    *out = (int)x;
    return 0;
}

int wl_moe_strategy_parse(const char *text, wl_moe_strategy *s, sim_err *err)
{
    char *copy = strdup(text ? text : "");
    size_t cap = strlen(copy) + 2;
    char *rest = calloc(cap, 1);
    int rc = 0;
    for (char *tok = strtok(copy, ","); tok && !rc; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        char *eq = strchr(tok, '=');
        if (!eq) {
            strcat(rest, tok);
            strcat(rest, ",");
            continue;
        }
        *eq = 0;
        char *k = tok, *v = eq + 1;
        for (char *e = k + strlen(k); e > k && e[-1] == ' '; *--e = 0)
            ;
        while (*v == ' ')
            v++;
        for (char *e = v + strlen(v); e > v && e[-1] == ' '; *--e = 0)
            ;
        if (!strcmp(k, "steps")) {
            rc = pos_int(k, v, &s->steps, err);
        } else if (!strcmp(k, "seed")) {
            char *end;
            unsigned long x = strtoul(v, &end, 10);
            if (end == v || *end)
                rc = sim_errf(err, "strategy: seed: expected a non-negative integer, got \"%s\"", v);
            s->routing.seed = x;
        } else if (!strcmp(k, "drift")) {
            char *end;
            double x = strtod(v, &end);
            if (end == v || *end || !(x >= 0) || !isfinite(x))
                rc = sim_errf(err, "strategy: drift: expected a number >= 0, got \"%s\"", v);
            s->routing.drift = x;
        } else if (!strcmp(k, "routing")) {
            rc = wl_routing_cfg_parse(v, &s->routing, err);
        } else if (!strcmp(k, "balance")) {
            if (!strcmp(v, "all"))
                s->balance_mask = (1 << WL_BAL_COUNT) - 1;
            else {
                int found = -1;
                for (int b = 0; b < WL_BAL_COUNT; b++)
                    if (!strcmp(v, wl_balance_name(b)))
                        found = b;
                if (found < 0)
                    rc = sim_errf(err, "strategy: balance: expected none, fastermoe, prophet or all, got \"%s\"", v);
                else
                    s->balance_mask = 1 << found;
            }
        } else {
            size_t w = strlen(rest);
            snprintf(rest + w, cap - w, "%s=%s,", k, v);
        }
    }
    if (!rc && wl_strategy_parse(rest, &s->base, err) < 0) {
        if (strstr(err->msg, "unknown key"))
            sim_err_prefix(err, "(MoE keys: ep, steps, seed, drift, routing, balance) ");
        rc = -1;
    }
    s->ep = wl_strategy_ep(&s->base);
    free(copy);
    free(rest);
    return rc;
}

int wl_moe_resolve(const wl_model *m, const wl_moe *moe, wl_moe_strategy *st, const sim_machine *mach, sim_err *err)
{
    wl_strategy *b = &st->base;
    if (wl_strategy_cp(b) > 1)
        return sim_errf(err, "strategy: cp=%d: context parallelism is modelled in `trainsim run` only, not with the "
                        "skewed routing of `trainsim moe`", b->cp);
    if (b->vstages > 1 || (b->pipeline != WL_PIPE_1F1B && b->pipeline != WL_PIPE_GPIPE && b->pipeline != WL_PIPE_EAGER))
        return sim_errf(err, "strategy: `trainsim moe` runs pipeline=1f1b, gpipe or eager without interleaving; "
                        "interleaved stages and Merak's schedules are modelled with uniform routing in `trainsim run`");
    if (wl_strategy_resolve_world(b, mach, err))
        return -1;
    if (b->dp % st->ep)
        return sim_errf(err, "strategy: ep=%d must divide dp=%d (expert-parallel groups are split from data-parallel "
                        "groups, as in DeepSpeed-MoE)", st->ep, b->dp);
    if (moe->experts % st->ep)
        return sim_errf(err, "strategy: ep=%d must divide the %d experts of model %s", st->ep, moe->experts, m->name);
    if (st->steps == 0)
        st->steps = st->routing.dist == WL_ROUTE_TRACE ? -1 : 5;
    return 0;
}

/* ---- token assignment --------------------------------------------------- */

int64_t wl_moe_assign(const wl_moe *moe, int ep, const int64_t *counts, const wl_moe_place *pl, int64_t per_source,
                      int64_t *compute, int64_t *send)
{
    int E = moe->experts, per = E / ep;
    int64_t cap = INT64_MAX, dropped = 0;
    if (moe->capacity_factor > 0)
        cap = (int64_t)ceil(moe->capacity_factor * (double)per_source / E);
    memset(compute, 0, (size_t)ep * sizeof *compute);
    memset(send, 0, (size_t)ep * ep * sizeof *send);
    int *h = malloc((size_t)ep * sizeof *h);
    for (int e = 0; e < E; e++) {
        int owner = e / per, nh = 0;
        h[nh++] = owner;
        for (int g = 0; pl && g < ep; g++)
            if (g != owner && pl->holds[(size_t)e * ep + g])
                h[nh++] = g;
        for (int k = 0; k < ep; k++) {
            int64_t c = counts[(size_t)k * E + e];
            if (c > cap) {
                dropped += c - cap;
                c = cap;
            }
            if (moe->pad_to_capacity && cap < INT64_MAX) /* padded slots are computed and moved too */
                c = cap;
            int local = 0;
            for (int i = 0; i < nh && !local; i++)
                local = h[i] == k;
            if (local) {
                compute[k] += c;
                continue;
            }
            /* an even split over the copies (assumption: papers.md §5.2 says
             * only that replicas take load off the heavy expert) */
            for (int i = 0; i < nh; i++) {
                int64_t share = c / nh + (i < c % nh);
                compute[h[i]] += share;
                send[(size_t)k * ep + h[i]] += share;
            }
        }
    }
    free(h);
    return dropped;
}

double wl_moe_imbalance(const int64_t *compute, int ep)
{
    double mx = 0, sum = 0;
    for (int g = 0; g < ep; g++) {
        sum += (double)compute[g];
        mx = (double)compute[g] > mx ? (double)compute[g] : mx;
    }
    return sum > 0 ? mx / (sum / ep) : 1.0;
}

/* ---- schedule ----------------------------------------------------------- */

sim_schedule *wl_moe_generate(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st,
                              const sim_machine *mach, const wl_routing *r, int step, wl_moe_place *const *places,
                              sim_err *err)
{
    wl_moe_strategy rs = *st;
    if (wl_moe_resolve(m, moe, &rs, mach, err) < 0)
        return NULL;
    wl_model mm = *m; /* the MoE layers this run says (planner fragments move them) */
    mm.moe = 1;
    mm.moe_cfg = *moe;
    int ep = rs.ep, nq = wl_moe_count(moe, m->layers);
    int64_t per_source = (int64_t)m->seq * rs.base.mb * moe->top_k;
    int64_t *compute = calloc((size_t)nq * ep + 1, sizeof *compute);
    int64_t *send = calloc((size_t)nq * ep * ep + 1, sizeof *send);
    if (!compute || !send) {
        free(compute);
        free(send);
        sim_errf(err, "out of memory");
        return NULL;
    }
    /* the same assignment in every EP group */
    for (int q = 0; q < nq; q++)
        wl_moe_assign(moe, ep, wl_routing_counts(r, step, q), places ? places[q] : NULL, per_source,
                      compute + (size_t)q * ep, send + (size_t)q * ep * ep);
    wl_moe_route route = {.layers = nq, .ep = ep, .compute = compute, .send = send, .places = places};
    sim_schedule *s = wl_gpt_generate_routed(&mm, &rs.base, mach, &route, err);
    free(compute);
    free(send);
    if (s)
        snprintf(s->meta.name, sizeof s->meta.name, "%s moe step %d", m->name, step);
    return s;
}
