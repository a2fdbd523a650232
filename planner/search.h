/* search.h — the seeds' searches (Galvatron, OSDP, Oases) over strategies
 * that `trainsim run` takes, priced by fragments of the workload generator
 * (search.c); the front end prints the result (search_cli.c).
 *
 * The result is plain structs: every plan is a `--strategy` string, so what
 * the search prints is what `run` simulates. */
#ifndef PLAN_SEARCH_H
#define PLAN_SEARCH_H

#include "planner/plan.h"

/* room for a strategy with one OSDP digit per layer */
#define PLAN_SEARCH_STRATEGY_MAX 640
#define PLAN_SEARCH_ROWS 256
#define PLAN_SEARCH_NOTES 32

typedef struct search_opts {
    int layers;        /* layers of the model (default: the model's) */
    int batch;         /* global batch (default: 2 x GPUs) */
    double mem_budget; /* bytes per GPU (default: 0.95 x the GPU's memory) */
    /* galvatron's outer loop (papers.md §3.4); empty lists = the defaults */
    int npp, pp[16];          /* pipeline degrees (default: every divisor of the GPUs and the layers) */
    int nbatch, batches[64];  /* global batches (default: --batch, else doubling from the GPUs) */
    int nmicro, micro[16];    /* micro-batch counts (default: 1 for PP 1, else PP, 2 PP, 4 PP) */
    int max_batch;            /* end of the default doubling sweep (default 1024) */
    int one_f_one_b;          /* pipeline order 1F1B instead of GPipe */
} search_opts;

void search_opts_default(search_opts *o);

/* One candidate the search priced (Galvatron: the best of one pipeline
 * degree; OSDP: of one recompute mode; Oases: of one pair of degrees). */
typedef struct search_row {
    char label[64];                          /* "PP 2", "recompute=full", "tp 4 / cut at tp 2" */
    int ok;                                  /* 0: nothing fits, why[] says why */
    char strategy[PLAN_SEARCH_STRATEGY_MAX]; /* for `trainsim run --strategy` */
    int batch, micro;                        /* global batch, micro-batches per pipeline */
    double est_s;                            /* the search's iteration time from its fragments */
    double peak_bytes;                       /* the plan's peak memory (the generator's memory replay) */
    int sharded;                             /* layers sharded (OSDP levels > 0 / SDP), of `layers` */
    char why[320];
} search_row;

typedef struct search_result {
    char algo[16];
    int gpus, layers;
    double budget;          /* bytes per GPU */
    int nrows, best;        /* best: index into rows, -1 when no row fits */
    search_row rows[PLAN_SEARCH_ROWS];
    int nnotes;             /* pruned combinations, with the memory they need */
    char notes[PLAN_SEARCH_NOTES][200];
    int fragments, sims;    /* generator fragments priced, the simulations they took */
    int checks;             /* memory replays of whole plans (no simulation) */
    double wall_s;
} search_result;

/* Runs `trainsim plan --search ALGO` (galvatron, osdp, oases) into *r.
 * Must run in a process that may fork (every simulation runs in a child).
 * -1 with err for bad options or when no plan fits (r still holds the rows
 * and notes that say why). */
int search_run(const plan_ctx *ctx, const char *algo, const search_opts *o, search_result *r, sim_err *err);

/* search_cli.c: prints r as text or JSON (cJSON) on stdout, with the
 * platform and model the plan's strategy runs on. */
void search_print(const plan_ctx *ctx, const search_opts *o, const search_result *r, int json);

#endif
