/* purchase.h — which cluster to buy for a training job: several clusters
 * (built-in names, files, or one field of one cluster varied) x one model,
 * each with a given strategy or the best one the planner finds, turned
 * into time to train, money and energy.
 *
 *   tco.c       the arithmetic: time to train, energy per iteration from
 *               each GPU's busy / communication-only / idle time, capital
 *               and rental cost per run and per million tokens
 *   purchase.c  one cluster: its JSON (with edits), machine, strategy
 *               (given, or swept at fast fidelity and the fastest simulated
 *               whole), bill of materials (platforms/bom.c) and tco
 *   purchase_cli.c   `trainsim compare`: the table, JSON, CSV and charts
 *
 * Library code: nothing here prints but the sweep's progress bar. */
#ifndef PLAN_PURCHASE_H
#define PLAN_PURCHASE_H

#include <stdint.h>

#include "planner/plan.h"
#include "platforms/bom.h"

/* ---- tco.c ---- */

/* What the arithmetic needs from a simulated iteration, the cluster and the job. */
typedef struct plan_tco_in {
    double iteration_s;      /* simulated iteration time */
    double tokens_per_iter;  /* global batch x sequence length */
    double compute_s;        /* per GPU, mean: time with a kernel running */
    double exposed_s;        /* per GPU, mean: communication with no kernel (the rest of the iteration is idle) */
    const plat_bom *bom;
    double tokens;           /* the job: this many tokens ... */
    double steps;            /* ... or this many iterations (exactly one of the two > 0) */
    double pue;              /* facility energy / IT energy, >= 1 */
    double carbon_g_per_kwh; /* grid carbon intensity, < 0 when not given */
    double rent_usd_per_gpu_h; /* rental price, < 0 when not given */
} plan_tco_in;

typedef struct plan_tco {
    double tokens_per_s;
    double steps, tokens, time_s; /* the run: time = tokens / tokens_per_s */
    /* energy of one iteration, joules (IT equipment, before the PUE) */
    double gpu_busy_j, gpu_comm_j, gpu_idle_j, node_j, network_j;
    double iter_j;                /* their sum x PUE */
    double mean_power_w;          /* iter_j / iteration_s */
    double kwh_per_mtok, run_kwh, run_co2_kg; /* run_co2_kg < 0 without a carbon intensity */
    /* capital: the bill's prices; own_*: the run's share of the capital over
     * the amortisation period plus its electricity */
    int capex_ok;                 /* every part has a price */
    char capex_missing[PLAT_SOURCE_MAX];
    double capex_by_kind[PLAT_ITEM_KINDS], capex_usd;
    double own_capital_usd, own_energy_usd, own_usd, own_usd_per_mtok;
    int rent_ok;
    double rent_usd, rent_usd_per_mtok; /* GPU hours x price */
} plan_tco;

/* The figures above from in; -1 with err for inputs that make no sense (a
 * non-positive iteration, neither or both of tokens and steps, PUE < 1, a
 * negative rental price). */
int plan_tco_compute(const plan_tco_in *in, plan_tco *out, sim_err *err);

/* ---- purchase.c ---- */

/* One cluster to evaluate, as named on the command line. */
typedef struct plan_cluster {
    char label[192];     /* as given ("rtx4090-4x8+nodes=8", "a.json") or "FIELD=VALUE" of a sweep */
    char source[256];    /* where its JSON came from (errors name it) */
    char *json;          /* the cluster JSON after its edits (malloc'd); NULL for a SimGrid XML platform */
    char xml_path[256];  /* the XML platform when json is NULL */
    char strategy[PLAN_STRATEGY_MAX]; /* given strategy, "" to search */
    int gb;              /* global batch (sequences) */
    double rent_usd_per_gpu_h; /* < 0: none */
    char error[1400];    /* non-empty: the cluster could not be prepared (the row reports it) */
} plan_cluster;

/* "name", "file.json", "file.xml", or any of them followed by edits
 * "+field=value" (platforms/edit.h).  Never fails as a call: a bad spec
 * gives a cluster with error set.  Free with plan_cluster_free. */
void plan_cluster_prepare(const char *spec, plan_cluster *out);
/* base with one more edit, labelled "field=value" (a --vary point). */
void plan_cluster_vary(const plan_cluster *base, const char *field, const char *value, plan_cluster *out);
void plan_cluster_free(plan_cluster *c);

/* What every cluster of a comparison shares. */
typedef struct plan_purchase_opts {
    const wl_model *model;
    sim_dtype dtype;
    plan_sweep_opts sweep;        /* jobs, cache, refine (>= 1: the fastest are simulated whole), progress */
    const char *const *axis;      /* the planner's --axis overrides for the search */
    int naxis;
    const char *costs_text, *costs_source; /* a costs file (plat_bom_apply_costs), or NULL */
    double tokens, steps;         /* the job (plan_tco_in) */
    double pue, carbon_g_per_kwh;
} plan_purchase_opts;

/* One cluster's outcome.  Each stage that fails says why and leaves the
 * stages before it: a cluster that runs but has a part without a price
 * still has its times and energy. */
typedef struct plan_purchase_row {
    int ok;                       /* simulated: best is valid */
    char error[1400];             /* why not, naming the cluster and the field */
    char name[128];               /* the machine's name */
    uint64_t cluster_hash;        /* FNV-1a 64 of the cluster JSON (or the platform XML) */
    int ngpus, nodes;
    char gpu_model[64];  /* the first GPU model, "and others" for node groups of several */
    double mem_capacity, peak_flops; /* per GPU; peak at the strategy's dtype */
    int gb;
    int searched;                 /* 1: the planner chose the strategy */
    int candidates, enumerated, evaluated, cached; /* the search's */
    plan_result best;             /* full-fidelity figures of the strategy run */
    double mfu;
    int bom_ok;
    char bom_error[1024];
    plat_bom bom;
    int tco_ok;
    char tco_error[1024];
    plan_tco tco;
} plan_purchase_row;

/* Evaluates one cluster into row.  Never fails as a call; row->ok says
 * whether it ran and row->error why not. */
void plan_purchase_cluster(const plan_purchase_opts *o, const plan_cluster *c, plan_purchase_row *row);

/* ---- purchase_cli.c ---- */
/* `trainsim compare` (argv[0] is "compare"). */
int plan_compare_cli_main(int argc, char **argv);

#endif
