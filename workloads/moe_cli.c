/* moe_cli.c — `trainsim moe`: parses the arguments, runs wl_moe_run
 * (moe_balance.c) and prints its report: a table growing step by step as
 * the simulations finish, or one JSON document (cJSON) at the end. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "sim/error.h"
#include "sim/json.h"
#include "workloads/moe.h"

typedef struct printer {
    const wl_model *m;
    const wl_moe *moe;
    const sim_machine *mach;
    int json;
} printer;

#define MODE_ON(r, b) ((r)->st.balance_mask >> (b) & 1)
#define CELL(r, s, b) ((size_t)(s) * WL_BAL_COUNT + (size_t)(b))

static void print_head(const printer *p, const wl_moe_report *r)
{
    const wl_moe_strategy *st = &r->st;
    char stext[256];
    wl_strategy_format(&st->base, stext, sizeof stext);
    printf("trainsim moe: %s (%d experts, top-%d, %d MoE layers of %d) on %s\n", p->m->name, p->moe->experts,
           p->moe->top_k, r->moe_layers, p->m->layers, p->mach->name);
    printf("strategy %s; routing %s", stext, wl_route_dist_name(st->routing.dist)); /* stext has ep= */
    if (st->routing.dist == WL_ROUTE_ZIPF)
        printf(" (s=%g)", st->routing.zipf_s);
    if (st->routing.dist == WL_ROUTE_DIRICHLET)
        printf(" (alpha=%g)", st->routing.alpha);
    if (st->routing.dist == WL_ROUTE_TRACE)
        printf(" (%s)", st->routing.trace);
    else
        printf(", drift %g, seed %lu", st->routing.drift, st->routing.seed);
    printf("\n\nimbalance = max/mean tokens computed per GPU, mean over MoE layers (max over layers)\n");
    printf("%4s", "step");
    for (int b = 0; b < WL_BAL_COUNT; b++)
        if (MODE_ON(r, b))
            printf(" | %-9s imbalance   time ms", wl_balance_name(b));
    if (MODE_ON(r, WL_BAL_PROPHET) && (st->balance_mask & 3))
        printf(" | prophet saves: vs none  vs fastermoe | copies sims");
    printf("\n");
}

/* wl_moe_run's callback: the header before the first step, then a row per
 * step, so that a long run shows its progress. */
static void print_step(void *ctx, const wl_moe_report *r)
{
    int s = r->steps - 1, mask = r->st.balance_mask;
    if (s == 0)
        print_head(ctx, r);
    const double *t = r->time_s + CELL(r, s, 0);
    printf("%4d", s);
    for (int b = 0; b < WL_BAL_COUNT; b++)
        if (MODE_ON(r, b))
            printf(" | %5.2f (%5.2f) %9.2f", r->imb_mean[CELL(r, s, b)], r->imb_max[CELL(r, s, b)], t[b] * 1e3);
    if (MODE_ON(r, WL_BAL_PROPHET) && (mask & 3)) {
        printf(" |              ");
        if (mask & 1)
            printf("%6.1f %%", 100 * (t[0] - t[2]) / t[0]);
        else
            printf("%8s", "-");
        if (mask & 2)
            printf("     %6.1f %%", 100 * (t[1] - t[2]) / t[1]);
        else
            printf("     %8s", "-");
        printf(" | %6d %4d", r->copies[s], r->sims[s]);
    }
    if (r->dropped[s])
        printf("  (%lld tokens over capacity dropped)", (long long)r->dropped[s]);
    printf("\n");
    fflush(stdout);
}

/* The totals and the per-layer imbalance after the table. */
static void print_tail(const wl_moe_report *r)
{
    int nq = r->moe_layers;
    printf("%4s", "all");
    for (int b = 0; b < WL_BAL_COUNT; b++)
        if (MODE_ON(r, b))
            printf(" | %-15s %9.2f", "", r->total_s[b] * 1e3);
    printf("\n");
    printf("\nper-layer imbalance (max/mean), MoE layers in model order\n%4s %-9s", "step", "balance");
    for (int q = 0; q < nq; q++)
        printf(" %5d", q);
    printf("\n");
    for (int s = 0; s < r->steps; s++)
        for (int b = 0; b < WL_BAL_COUNT; b++) {
            if (!MODE_ON(r, b))
                continue;
            printf("%4d %-9s", s, wl_balance_name(b));
            for (int q = 0; q < nq; q++)
                printf(" %5.2f", r->imb_layer[CELL(r, s, b) * (size_t)nq + (size_t)q]);
            printf("\n");
        }
}

static void print_json(const printer *p, const wl_moe_report *r)
{
    const wl_moe_strategy *st = &r->st;
    char full[256];
    wl_strategy_format(&st->base, full, sizeof full); /* ep= among its keys */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", p->m->name);
    cJSON_AddStringToObject(o, "platform", p->mach->name);
    cJSON_AddStringToObject(o, "strategy", full);
    cJSON_AddNumberToObject(o, "experts", p->moe->experts);
    cJSON_AddNumberToObject(o, "top_k", p->moe->top_k);
    cJSON_AddNumberToObject(o, "moe_layers", r->moe_layers);
    cJSON_AddStringToObject(o, "routing", wl_route_dist_name(st->routing.dist));
    cJSON_AddNumberToObject(o, "drift", st->routing.drift);
    cJSON_AddNumberToObject(o, "seed", (double)st->routing.seed);
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    for (int s = 0; s < r->steps; s++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "step", s);
        for (int b = 0; b < WL_BAL_COUNT; b++) {
            if (!MODE_ON(r, b))
                continue;
            cJSON *mj = cJSON_AddObjectToObject(j, wl_balance_name(b));
            cJSON_AddNumberToObject(mj, "time_s", r->time_s[CELL(r, s, b)]);
            cJSON_AddNumberToObject(mj, "imbalance_mean", r->imb_mean[CELL(r, s, b)]);
            cJSON_AddNumberToObject(mj, "imbalance_max", r->imb_max[CELL(r, s, b)]);
            cJSON_AddItemToObject(mj, "imbalance_per_layer",
                                  cJSON_CreateDoubleArray(r->imb_layer + CELL(r, s, b) * (size_t)r->moe_layers,
                                                          r->moe_layers));
        }
        cJSON_AddNumberToObject(j, "prophet_copies", r->copies[s]);
        cJSON_AddNumberToObject(j, "planner_simulations", r->sims[s]);
        cJSON_AddNumberToObject(j, "dropped_tokens", (double)r->dropped[s]);
        cJSON_AddItemToArray(steps, j);
    }
    cJSON *tot = cJSON_AddObjectToObject(o, "total_time_s");
    for (int b = 0; b < WL_BAL_COUNT; b++)
        if (MODE_ON(r, b))
            cJSON_AddNumberToObject(tot, wl_balance_name(b), r->total_s[b]);
    cJSON_AddNumberToObject(o, "planner_simulations", r->planner_sims);
    sim_json_print(stdout, o);
}

#define MOE_DEFAULT_PLATFORM "h100-pcie-2x8"
#define MOE_DEFAULT_MODEL "gpt-moe-350m"
#define MOE_DEFAULT_STRATEGY "ep=8,mb=4,dtype=fp16,steps=5,routing=zipf:1.2,drift=0.05,seed=1"

int wl_moe_cli_main(int argc, char **argv)
{
    const char *platform = MOE_DEFAULT_PLATFORM, *model = MOE_DEFAULT_MODEL, *strategy = MOE_DEFAULT_STRATEGY;
    int json = 0;
    const char *trace = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            printf("usage: trainsim moe [--platform P] [--model M] [--strategy S] [--json] [--trace F]\n"
                   "  simulates MoE training steps with skewed, drifting routing and compares load balancing:\n"
                   "  none (DeepSpeed-MoE), fastermoe (dynamic shadowing) and prophet (Pro-Prophet).\n"
                   "  strategy keys: every key of run (tp, pp, dp, mb, gb, dtype, recompute, zero, sp, ...), ep, steps, seed, drift,\n"
                   "    routing=uniform|zipf[:S]|dirichlet[:ALPHA]|trace:FILE, balance=none|fastermoe|prophet|all\n"
                   "  --trace F: Chrome trace of the last step under the last balance mode\n"
                   "  defaults: --platform %s --model %s --strategy %s\n",
                   MOE_DEFAULT_PLATFORM, MOE_DEFAULT_MODEL, MOE_DEFAULT_STRATEGY);
            return 0;
        }
        if (!strcmp(o, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(o, "--trace")) {
            if (i + 1 >= argc) {
                sim_err_print("trainsim moe", 2, "--trace needs a file");
                return 2;
            }
            trace = argv[++i];
            continue;
        }
        const char **slot = !strcmp(o, "--platform") ? &platform
                            : !strcmp(o, "--model")  ? &model
                            : !strcmp(o, "--strategy") ? &strategy
                                                       : NULL;
        if (!slot) {
            sim_err_print("trainsim moe", 2, "unknown option \"%s\" (see trainsim moe --help)", o);
            return 2;
        }
        if (i + 1 >= argc) {
            sim_err_print("trainsim moe", 2, "%s needs a value", o);
            return 2;
        }
        *slot = argv[++i];
    }
    sim_err err = {{0}};
    wl_model m;
    wl_moe moe;
    wl_moe_strategy st;
    wl_moe_strategy_default(&st);
    if (wl_moe_model_load(model, &m, &moe, &err) < 0 || wl_moe_strategy_parse(strategy, &st, &err) < 0) {
        sim_err_print("trainsim moe", 1, "%s", err.msg);
        return 1;
    }
    sim_machine *mach = plat_load(platform, &err);
    if (!mach) {
        sim_err_print("trainsim moe", 1, "%s", err.msg);
        return 1;
    }
    st.trace = trace;
    printer pr = {&m, &moe, mach, json};
    wl_moe_report rep;
    int rc = wl_moe_run(&m, &moe, &st, mach, &rep, json ? NULL : print_step, &pr, &err);
    if (rc == 0 && json)
        print_json(&pr, &rep);
    else if (rc == 0)
        print_tail(&rep);
    if (rc == 0 && trace && !json)
        printf("trace of the last step (%s): %s (open in https://ui.perfetto.dev)\n",
               wl_balance_name(31 - __builtin_clz((unsigned)st.balance_mask)), trace);
    if (rc < 0)
        sim_err_print("trainsim moe", 1, "%s", err.msg);
    wl_moe_report_free(&rep);
    sim_machine_free(mach);
    return rc < 0 ? 1 : 0;
}
