/* moe.h — mixture-of-experts training steps (issue 6): expert parallelism
 * combined with TP, DP and PP, skewed routing that drifts between steps, and
 * three ways to balance the experts' load: none (DeepSpeed-MoE), FasterMoE's
 * dynamic shadowing, and Pro-Prophet's planned replication with overlapped
 * parameter broadcast and gradient reduce (papers.md §5). */
#ifndef WL_MOE_H
#define WL_MOE_H

#include <stdio.h>

#include "sim/engine.h"
#include "sim/schedule.h"
#include "workloads/layer.h"
#include "workloads/model.h"
#include "workloads/routing.h"

/* wl_moe, the "moe" object of a model file, is in workloads/model.h. */

/* Loads a model with its "moe" object (built-in name or JSON path). */
int wl_moe_model_load(const char *spec, wl_model *m, wl_moe *moe, sim_err *err);
int wl_moe_is_layer(const wl_moe *moe, int layer);
/* Parameters of a loaded model with its experts counted (wl_model_params
 * for a dense one); spec names it for reading the "moe" object. */
double wl_moe_total_params(const char *spec, const wl_model *m);
/* The parameters one token passes through: top_k experts (and the router) of
 * each MoE layer instead of all of them (wl_model_params for a dense one). */
double wl_moe_active_params(const char *spec, const wl_model *m);
int wl_moe_count(const wl_moe *moe, int layers); /* MoE layers among the first `layers` */

/* wl_balance and wl_balance_name are in workloads/model.h (a strategy key). */

typedef struct wl_moe_strategy {
    wl_strategy base;   /* tp, pp, dp, mb, gb, dtype */
    int ep;             /* expert-parallel degree: divides dp and the expert count */
    int steps;          /* training steps to simulate (routing drifts between them) */
    int balance_mask;   /* bit per wl_balance to simulate */
    wl_routing_cfg routing;
    const char *trace;  /* run option: Chrome trace of the last step under the last balance mode, or NULL */
} wl_moe_strategy;

void wl_moe_strategy_default(wl_moe_strategy *s);
/* The dense keys (wl_strategy_parse) plus ep=, steps=, seed=, drift=,
 * routing=uniform|zipf[:S]|dirichlet[:A]|trace:FILE,
 * balance=none|fastermoe|prophet|all. */
int wl_moe_strategy_parse(const char *text, wl_moe_strategy *s, sim_err *err);

/* Where copies of each expert live: wl_moe_place (workloads/layer.h). */

/* Tokens (token-expert assignments) each EP rank computes, and the bytes each
 * sends to each in the dispatch, given one layer's counts
 * counts[src*experts+e] and a placement (NULL = owners only).  Tokens from a
 * GPU holding a copy stay there; the others' are split evenly over the
 * copies.  compute[ep], send[ep*ep] (tokens, src-major); returns tokens dropped
 * by the capacity limit. */
int64_t wl_moe_assign(const wl_moe *moe, int ep, const int64_t *counts, const wl_moe_place *pl, int64_t per_source,
                      int64_t *compute, int64_t *send);
/* max over mean of per-GPU computed tokens (1 = perfect balance). */
double wl_moe_imbalance(const int64_t *compute, int ep);

/* One training step's schedule: routing of `step`, a placement per MoE layer
 * (places[moe_layer], NULL = none); the workload generator's (gpt.c) with
 * the MoE layers routed so (wl_gpt_generate_routed). */
sim_schedule *wl_moe_generate(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st,
                              const sim_machine *mach, const wl_routing *r, int step, wl_moe_place *const *places,
                              sim_err *err);

/* One training step of a strategy with routing= (and balance=) set: the
 * second step of trainsim moe's routing (the first is what Pro-Prophet
 * predicts from; a one-step routing trace's only step), its experts placed
 * as the balance mode says, on the routed generator.  wl_gpt_generate calls
 * it for such strategies. */
sim_schedule *wl_moe_routed_step(const wl_model *m, const wl_strategy *st, const sim_machine *mach, sim_err *err);

/* Checks divisibility, the GPU count and what the routed generator models;
 * fills dp=auto, gb=auto and steps=auto.  The memory check is the
 * generator's. */
int wl_moe_resolve(const wl_model *m, const wl_moe *moe, wl_moe_strategy *st, const sim_machine *mach, sim_err *err);

/* What wl_moe_run measured: per step and balance mode (index
 * step * WL_BAL_COUNT + mode; modes not in st.balance_mask stay 0) the
 * simulated step time and the imbalance (max/mean tokens computed per GPU)
 * as the mean and max over MoE layers and per layer. */
typedef struct wl_moe_report {
    wl_moe_strategy st;     /* resolved (dp, gb filled) */
    int moe_layers, steps;  /* steps: those done so far (all, once the run returns 0) */
    double *time_s, *imb_mean, *imb_max; /* [steps * WL_BAL_COUNT] */
    double *imb_layer;      /* [(steps * WL_BAL_COUNT) * moe_layers] */
    int *copies, *sims;     /* [steps] Pro-Prophet's expert copies; its planner's simulations */
    int64_t *dropped;       /* [steps] tokens over capacity dropped (first mode run) */
    double total_s[WL_BAL_COUNT];
    int planner_sims;
} wl_moe_report;

/* Runs the strategy's steps under each balance mode of st->balance_mask
 * into *out (free with wl_moe_report_free, also after an error); step(ctx,
 * out) is called after each step (out->steps counts it), or NULL.  Library
 * code: prints nothing (workloads/moe_cli.c prints). */
int wl_moe_run(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st, const sim_machine *mach,
               wl_moe_report *out, void (*step)(void *ctx, const wl_moe_report *r), void *ctx, sim_err *err);
void wl_moe_report_free(wl_moe_report *r);

/* `trainsim moe ...` (workloads/moe_cli.c) */
int wl_moe_cli_main(int argc, char **argv);

#endif
