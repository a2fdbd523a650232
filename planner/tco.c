/* tco.c — time, energy and money of a training run from one simulated
 * iteration (see purchase.h).
 *
 * Time: tokens per second = tokens per iteration / iteration time, and a
 * run of N tokens takes N / (tokens per second), S steps S x the iteration.
 *
 * Energy of one iteration.  The engine splits every GPU's iteration into
 * compute (a kernel running), exposed communication (only communication)
 * and idle (nothing: bubbles, waiting), which add up to the iteration time
 * (sim_rank_result).  A GPU draws busy_w, comm_w and idle_w in them
 * (plat_gpu_power), so its energy is the closed form
 *     busy_w x compute + comm_w x exposed + idle_w x (T - compute - exposed);
 * the planner's figures are means over the GPUs, and a cluster's GPUs are
 * one model, so the sum over GPUs is the GPU count times that.  Servers,
 * NICs and switch ports draw their power the whole iteration.  Everything x
 * PUE for the facility.  Why this and not SimGrid's energy plugins:
 * platforms/README.md, Purchasing.
 *
 * Money.  Capital = sum of count x unit price over the bill.  Owning, the
 * run is charged its share of the capital over the amortisation period
 * (time / years) plus its electricity; renting, GPU hours x the price per
 * GPU hour.  Per million tokens: the run's cost / (tokens / 1e6). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "planner/purchase.h"

#define SECONDS_PER_YEAR (365.25 * 86400)

static void energy(const plan_tco_in *in, plan_tco *o)
{
    const plat_bom *b = in->bom;
    double T = in->iteration_s, G = b->ngpus;
    double idle = T - in->compute_s - in->exposed_s;
    if (idle < 0)
        idle = 0;
    o->gpu_busy_j = G * b->gpu_power.busy_w * in->compute_s;
    o->gpu_comm_j = G * b->gpu_power.comm_w * in->exposed_s;
    o->gpu_idle_j = G * b->gpu_power.idle_w * idle;
    for (int i = 0; i < b->nitems; i++) {
        const plat_item *it = &b->item[i];
        double j = it->count * it->power_w * T;
        if (it->kind == PLAT_ITEM_SERVER)
            o->node_j += j;
        else if (it->kind == PLAT_ITEM_NIC || it->kind == PLAT_ITEM_SWITCH_PORT || it->kind == PLAT_ITEM_NVLINK_BRIDGE)
            o->network_j += j;
    }
    o->iter_j = (o->gpu_busy_j + o->gpu_comm_j + o->gpu_idle_j + o->node_j + o->network_j) * in->pue;
    o->mean_power_w = o->iter_j / T;
    o->kwh_per_mtok = o->iter_j / 3.6e6 / (in->tokens_per_iter / 1e6);
    o->run_kwh = o->iter_j * o->steps / 3.6e6;
    o->run_co2_kg = in->carbon_g_per_kwh >= 0 ? o->run_kwh * in->carbon_g_per_kwh / 1e3 : -1;
}

static void money(const plan_tco_in *in, plan_tco *o)
{
    const plat_bom *b = in->bom;
    o->capex_ok = 1;
    for (int i = 0; i < b->nitems; i++) {
        const plat_item *it = &b->item[i];
        if (it->count <= 0)
            continue;
        if (it->price_usd < 0) {
            if (o->capex_ok)
                snprintf(o->capex_missing, sizeof o->capex_missing, "%s", it->price_source);
            o->capex_ok = 0;
            continue;
        }
        o->capex_by_kind[it->kind] += it->count * it->price_usd;
        o->capex_usd += it->count * it->price_usd;
    }
    double mtok = o->tokens / 1e6;
    o->own_energy_usd = o->run_kwh * b->electricity_usd_kwh;
    if (o->capex_ok && b->amortization_years > 0) {
        o->own_capital_usd = o->capex_usd * o->time_s / (b->amortization_years * SECONDS_PER_YEAR);
        o->own_usd = o->own_capital_usd + o->own_energy_usd;
        o->own_usd_per_mtok = o->own_usd / mtok;
    }
    o->rent_ok = in->rent_usd_per_gpu_h >= 0;
    if (o->rent_ok) {
        o->rent_usd = b->ngpus * o->time_s / 3600 * in->rent_usd_per_gpu_h;
        o->rent_usd_per_mtok = o->rent_usd / mtok;
    }
}

int plan_tco_compute(const plan_tco_in *in, plan_tco *o, sim_err *err)
{
    memset(o, 0, sizeof *o);
    if (!(in->iteration_s > 0) || !isfinite(in->iteration_s))
        return sim_errf(err, "iteration time: expected > 0 s, got %g", in->iteration_s);
    if (!(in->tokens_per_iter > 0))
        return sim_errf(err, "tokens per iteration: expected > 0, got %g", in->tokens_per_iter);
    if ((in->tokens > 0) == (in->steps > 0))
        return sim_errf(err, "give the run as tokens or as steps (one of the two), got %g tokens and %g steps",
                        in->tokens, in->steps);
    if (!(in->pue >= 1))
        return sim_errf(err, "PUE: expected >= 1, got %g", in->pue);
    if (!in->bom || in->bom->ngpus <= 0)
        return sim_errf(err, "no GPUs in the bill of materials");
    o->tokens_per_s = in->tokens_per_iter / in->iteration_s;
    if (in->tokens > 0) {
        o->tokens = in->tokens;
        o->steps = in->tokens / in->tokens_per_iter;
        o->time_s = in->tokens / o->tokens_per_s;
    } else {
        o->steps = in->steps;
        o->tokens = in->steps * in->tokens_per_iter;
        o->time_s = in->steps * in->iteration_s;
    }
    energy(in, o);
    money(in, o);
    return 0;
}
