/* routing.h — how many tokens each GPU routes to each expert, per MoE layer
 * and training step (issue 6).
 *
 * Synthetic routing draws, for every MoE layer, an expert popularity vector
 * (uniform, Zipf-skewed with a random expert order, or Dirichlet) and then,
 * per step, each source GPU's token-to-expert counts as a multinomial sample
 * of that vector.  Between steps the popularity drifts slowly (a Gaussian
 * random walk of the log-popularities with standard deviation `drift`), the
 * temporal locality Pro-Prophet's planner relies on (papers.md §5.2).  All
 * draws come from one GSL generator (mt19937) seeded with `seed`, in a fixed
 * order, so a seed gives byte-identical routing.
 *
 * Trace routing reads the counts from a JSON file (format below, and in
 * workloads/README.md):
 *   { "format": "trainsim-routing", "version": 1, "experts": E,
 *     "steps": [ { "layers": [ L0, L1, ... ] }, ... ] }
 * with one entry per MoE layer, each either an array of E counts (totals,
 * split evenly over the source GPUs) or an array with one array of E counts
 * per source GPU.  Counts are token-to-expert assignments of one micro-batch
 * (top-k routing counts a token k times). */
#ifndef WL_ROUTING_H
#define WL_ROUTING_H

#include <stdint.h>

#include "sim/error.h"

typedef enum wl_route_dist {
    WL_ROUTE_UNIFORM,
    WL_ROUTE_ZIPF,
    WL_ROUTE_DIRICHLET,
    WL_ROUTE_TRACE
} wl_route_dist;

typedef struct wl_routing_cfg {
    wl_route_dist dist;
    double zipf_s;          /* Zipf exponent: popularity of the r-th expert ∝ r^-s */
    double alpha;           /* Dirichlet concentration (the same for every expert) */
    double drift;           /* std-dev of the per-step log-popularity change */
    unsigned long seed;
    char trace[512];        /* trace file (WL_ROUTE_TRACE) */
} wl_routing_cfg;

/* uniform, zipf_s 1.2, alpha 1, drift 0.05, seed 1 */
void wl_routing_cfg_default(wl_routing_cfg *c);
/* Parses "uniform", "zipf", "zipf:1.5", "dirichlet", "dirichlet:0.3",
 * "trace:FILE" into c (other fields kept). */
int wl_routing_cfg_parse(const char *text, wl_routing_cfg *c, sim_err *err);
const char *wl_route_dist_name(wl_route_dist d);

typedef struct wl_routing wl_routing;

/* Counts for `steps` steps of `layers` MoE layers, `sources` source GPUs and
 * `experts` experts, each source routing `per_source` token-expert
 * assignments (synthetic; a trace brings its own counts and must match
 * layers and experts and have at least `steps` steps). */
wl_routing *wl_routing_new(const wl_routing_cfg *c, int steps, int layers, int experts, int sources,
                           int64_t per_source, sim_err *err);
/* One step of given counts[layers][sources][experts] (copied), e.g. the
 * statistics a planner predicts from. */
wl_routing *wl_routing_from_counts(int layers, int experts, int sources, const int64_t *counts);
void wl_routing_free(wl_routing *r);
/* counts[src * experts + e] of one step and MoE layer. */
const int64_t *wl_routing_counts(const wl_routing *r, int step, int layer);
/* Per-expert totals over sources of one step and layer (into out[experts]). */
void wl_routing_totals(const wl_routing *r, int step, int layer, int64_t *out);
int wl_routing_steps(const wl_routing *r);

#endif
