/* search.h — the seeds' search algorithms over per-block / per-layer
 * strategies, on costs from simulated fragments (chain.c, search.c). */
#ifndef PLAN_SEARCH_H
#define PLAN_SEARCH_H

#include "planner/plan.h"

typedef struct search_opts {
    int layers;        /* layers of the chain (default: the model's) */
    int batch;         /* global batch of the chain (default: 2 x GPUs) */
    double mem_budget; /* bytes per GPU (default: the GPU's memory) */
    int exhaustive;    /* also search exhaustively and compare */
    /* galvatron's outer loop (papers.md §3.4); empty lists = the defaults */
    int npp, pp[16];          /* pipeline degrees (default: every divisor of the GPUs up to the layers) */
    int nbatch, batches[64];  /* global batches (default: --batch, else doubling from the fewest micro-batches) */
    int nmicro, micro[16];    /* micro-batch counts (default: 1 for PP 1, else PP, 2 PP, 4 PP) */
    int max_batch;            /* end of the default doubling sweep (default 1024) */
    int one_f_one_b;          /* pipeline order 1F1B instead of GPipe */
} search_opts;

void search_opts_default(search_opts *o);

/* `trainsim plan --search ALGO`: prints the plan, its simulated cost and the
 * number of simulations used. */
int search_cli(const plan_ctx *ctx, const char *algo, const search_opts *o, int json, sim_err *err);

#endif
