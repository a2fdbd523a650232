/* The purchasing arithmetic (planner/tco.c) against closed forms:
 *  - energy: a synthetic two-GPU schedule on the star platform (rank 0
 *    computes K seconds then sends S bytes; rank 1 receives them, then
 *    computes K/2), simulated; each rank's compute / communication-only /
 *    idle split is the closed form (the send takes t = 2 lat + S/bw, rank 1
 *    waits idle for rank 0's kernel), and the energy of the iteration
 *    equals busy x compute + comm x exposed + idle x rest summed by hand
 *    over the ranks, plus servers and network x T, x PUE;
 *  - time to train = tokens / tokens per second (and steps x iteration);
 *  - capital = sum of count x price, by part; owning = capital x time /
 *    amortisation + kWh x price; renting = GPU hours x price; per million
 *    tokens = the run's cost / million tokens; a part without a price is
 *    named, not priced at zero; bad inputs are errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "planner/purchase.h"
#include "sim/engine.h"
#include "tests/sim/star.h"

static int fails;

static void close_to(double got, double want, const char *what)
{
    fails += near(got, want, 1e-9, what);
}

/* A bill by hand: 2 GPUs on 1 server, 2 NICs, 1 switch port. */
static void bill(plat_bom *b)
{
    memset(b, 0, sizeof *b);
    b->nodes = 1;
    b->gpus_per_node = 2;
    b->ngpus = 2;
    snprintf(b->gpu_model, sizeof b->gpu_model, "test-gpu");
    b->gpu_power = (plat_gpu_power){300, 120, 50, "busy", "comm", "idle"};
    b->item[0] = (plat_item){PLAT_ITEM_GPU, "test-gpu", 2, 10000, 300, "s", "s", ""};
    b->item[1] = (plat_item){PLAT_ITEM_SERVER, "pcie-1socket", 1, 6000, 250, "s", "s", ""};
    b->item[2] = (plat_item){PLAT_ITEM_NIC, "100GbE", 2, 900, 16, "s", "s", ""};
    b->item[3] = (plat_item){PLAT_ITEM_SWITCH_PORT, "100GbE", 1, 600, 10, "s", "s", ""};
    b->nitems = 4;
    b->electricity_usd_kwh = 0.1;
    b->amortization_years = 3;
}

static void energy_closed_form(void)
{
    const double BW = 10e9, LAT = 2e-6, S = 2e9, K = 0.5;
    sim_machine *m = star_machine(2, BW, LAT, 2);
    sim_schedule *s = sim_sched_new(2);
    sim_payload pk = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_FIXED, .name = -1, .seconds = K};
    sim_payload ph = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_FIXED, .name = -1, .seconds = K / 2};
    uint32_t k0 = sim_sched_add(s, sim_sched_stream(s, 0, "compute"), sim_sched_payload(s, &pk), -1, SIM_NO_TAGS, NULL, 0);
    sim_sched_send(s, sim_sched_stream(s, 0, "compute"), NULL, 1, (int64_t)S, 0, SIM_NO_TAGS, &k0, 1);
    uint32_t rv = sim_sched_recv(s, sim_sched_stream(s, 1, "compute"), NULL, 0, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    sim_sched_add(s, sim_sched_stream(s, 1, "compute"), sim_sched_payload(s, &ph), -1, SIM_NO_TAGS, &rv, 1);
    sim_options o;
    sim_options_default(&o);
    sim_result r;
    sim_err e;
    if (sim_run_isolated(s, m, &o, &r, &e) < 0) {
        printf("FAIL: simulation: %s\n", e.msg);
        fails++;
        sim_sched_free(s);
        sim_machine_free(m);
        return;
    }
    double t = 2 * LAT + S / BW, T = K + t + K / 2;
    close_to(r.iteration_s, T, "iteration = K + (2 lat + S/bw) + K/2");
    /* rank 0: compute K, communication t, idle K/2; rank 1: idle K, communication t, compute K/2 */
    double want[2][3] = {{K, t, K / 2}, {K / 2, t, K}};
    for (int k = 0; k < 2; k++) {
        char what[96];
        snprintf(what, sizeof what, "rank %d compute", k);
        close_to(r.rank[k].compute_s, want[k][0], what);
        snprintf(what, sizeof what, "rank %d communication only", k);
        close_to(r.rank[k].exposed_comm_s, want[k][1], what);
        snprintf(what, sizeof what, "rank %d idle", k);
        close_to(r.rank[k].idle_s, want[k][2], what);
    }
    plat_bom b;
    bill(&b);
    plan_tco_in in = {r.iteration_s, 4096, r.compute_s, r.exposed_comm_s, &b, 0, 10, 1.25, 400, -1};
    plan_tco out;
    if (plan_tco_compute(&in, &out, &e) < 0) {
        printf("FAIL: %s\n", e.msg);
        fails++;
    } else {
        const plat_gpu_power *p = &b.gpu_power;
        double gpu = 0;
        for (int k = 0; k < 2; k++) /* by hand, rank by rank */
            gpu += p->busy_w * want[k][0] + p->comm_w * want[k][1] + p->idle_w * want[k][2];
        close_to(out.gpu_busy_j + out.gpu_comm_j + out.gpu_idle_j, gpu, "GPU energy = sum over ranks of P x t");
        close_to(out.gpu_busy_j, 300 * 1.5 * K, "busy energy");
        close_to(out.gpu_comm_j, 120 * 2 * t, "communication-only energy");
        close_to(out.gpu_idle_j, 50 * 1.5 * K, "idle energy");
        double base = (250 + 2 * 16 + 10) * T;
        close_to(out.iter_j, 1.25 * (gpu + base), "iteration energy = PUE x (GPUs + servers + network)");
        close_to(out.kwh_per_mtok, out.iter_j / 3.6e6 / (4096 / 1e6), "kWh per million tokens");
        close_to(out.run_kwh, 10 * out.iter_j / 3.6e6, "run kWh = steps x iteration");
        close_to(out.run_co2_kg, out.run_kwh * 0.4, "CO2 = kWh x intensity");
        close_to(out.time_s, 10 * T, "10 steps take 10 iterations");
    }
    sim_result_free(&r);
    sim_sched_free(s);
    sim_machine_free(m);
}

static void time_and_money(void)
{
    plat_bom b;
    bill(&b);
    plan_tco_in in = {2.5, 1 << 20, 2.0, 0.3, &b, 3e11, 0, 1, -1, 1.5};
    plan_tco o;
    sim_err e;
    if (plan_tco_compute(&in, &o, &e) < 0) {
        printf("FAIL: %s\n", e.msg);
        fails++;
        return;
    }
    double tps = (1 << 20) / 2.5;
    close_to(o.tokens_per_s, tps, "tokens/s = tokens per iteration / iteration");
    close_to(o.time_s, 3e11 / tps, "time to train = tokens / tokens per second");
    close_to(o.steps, 3e11 / (1 << 20), "steps = tokens / tokens per iteration");
    close_to(o.capex_usd, 2 * 10000 + 6000 + 2 * 900 + 600, "capital = sum of count x price");
    close_to(o.capex_by_kind[PLAT_ITEM_GPU], 20000, "capital of the GPUs");
    close_to(o.capex_by_kind[PLAT_ITEM_NIC] + o.capex_by_kind[PLAT_ITEM_SWITCH_PORT], 2400, "capital of the network");
    double share = o.capex_usd * o.time_s / (3 * 365.25 * 86400);
    close_to(o.own_capital_usd, share, "capital share = capital x time / amortisation");
    close_to(o.own_energy_usd, o.run_kwh * 0.1, "electricity = kWh x price");
    close_to(o.own_usd, share + o.run_kwh * 0.1, "owning = capital share + electricity");
    close_to(o.own_usd_per_mtok, o.own_usd / 3e5, "owned $ per million tokens");
    close_to(o.rent_usd, 2 * o.time_s / 3600 * 1.5, "renting = GPU hours x price");
    close_to(o.rent_usd_per_mtok, o.rent_usd / 3e5, "rented $ per million tokens");
    if (o.run_co2_kg >= 0 || !o.rent_ok || !o.capex_ok)
        printf("FAIL: no CO2 without an intensity; rent and capital known\n"), fails++;
    /* a part without a price is named, not priced at zero */
    b.item[2].price_usd = -1;
    snprintf(b.item[2].price_source, sizeof b.item[2].price_source, "no price for the NIC 100GbE");
    plan_tco_compute(&in, &o, &e);
    if (o.capex_ok || !strstr(o.capex_missing, "NIC 100GbE") || o.own_usd != 0 || !(o.run_kwh > 0))
        printf("FAIL: a missing price must make the capital unknown and name the part (got \"%s\")\n",
               o.capex_missing), fails++;
    /* bad inputs */
    static const struct {
        double T, tokens, steps, pue;
        const char *want;
    } bad[] = {{0, 1e9, 0, 1, "iteration time"},
               {1, 0, 0, 1, "give the run as tokens or as steps"},
               {1, 1e9, 5, 1, "give the run as tokens or as steps"},
               {1, 1e9, 0, 0.5, "PUE: expected >= 1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        plan_tco_in x = in;
        x.iteration_s = bad[i].T, x.tokens = bad[i].tokens, x.steps = bad[i].steps, x.pue = bad[i].pue;
        e.msg[0] = 0;
        if (plan_tco_compute(&x, &o, &e) == 0 || !strstr(e.msg, bad[i].want))
            printf("FAIL: bad input %zu: want \"%s\", got \"%s\"\n", i, bad[i].want, e.msg), fails++;
    }
}

int main(void)
{
    energy_closed_form();
    time_and_money();
    printf(fails ? "%d failure(s)\n" : "ok\n", fails);
    return fails ? 1 : 0;
}
