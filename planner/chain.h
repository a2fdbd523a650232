/* chain.h — schedules of a chain of transformer blocks, each with its own
 * parallel strategy, and the fragments the seeds' searches price. */
#ifndef PLAN_CHAIN_H
#define PLAN_CHAIN_H

#include "sim/schedule.h"
#include "workloads/model.h"

typedef enum { PLAN_ATTN, PLAN_MLP } plan_block_kind;

/* A block's strategy over G GPUs: tp-way tensor parallel (Megatron 1-D),
 * dp = G/tp data parallel, sharded (ZeRO-3/FSDP, "SDP") or not; consec: TP
 * groups are consecutive ranks (inside a server) rather than strided. */
typedef struct plan_bstrat {
    int tp, sdp, consec;
} plan_bstrat;

typedef struct plan_chain {
    const wl_model *model;
    int gpus, batch;      /* GPUs per stage and the batch of one pass (sequences;
                             the global batch when micro <= 1) */
    sim_dtype dtype;
    int n;                /* blocks */
    const plan_block_kind *kind;
    const plan_bstrat *st;
    int no_comm;          /* compute only (Oases' profiler skips TP communication) */
    int reshard_only;     /* only the resharding between st[0] and st[1] */
    int fwd_only;         /* forward pass only */
    /* Galvatron's PP outer loop (papers.md §3.4); all zero = one stage of one batch */
    int first;            /* GPU of rank 0 of stage 0: a stage's fragment runs on its own GPUs */
    int pp;               /* pipeline stages (<= 1: none); stage k = GPUs first + k*gpus .. */
    const int *stage;     /* stage of each block (non-decreasing), NULL when pp <= 1 */
    int micro;            /* micro-batches of `batch` sequences each (<= 1: one) */
    int one_f_one_b;      /* their order: 1F1B (PipeDream-flush) rather than GPipe */
    int no_sync;          /* leave out the DP gradient all-reduce and the optimizer step */
    int sync_only;        /* only the DP gradient all-reduce and the optimizer step */
} plan_chain;

/* What a simulated chain reports: time and the peaks (max over GPUs) of the
 * whole memory and of each kind (sim_mem_kind). */
typedef struct plan_chain_out {
    double time_s, peak;
    double peak_kind[SIM_MEM_KIND_COUNT];
} plan_chain_out;

/* Builds one training step of the chain (forward 0..n-1, backward n-1..0,
 * gradient synchronisation and optimizer step per block).  Errors when a
 * degree does not divide the GPUs, heads, hidden, FFN or batch. */
sim_schedule *plan_chain_build(const plan_chain *c, sim_err *err);

/* Simulates it in a child process: iteration time and peak memory. */
int plan_chain_simulate(const plan_chain *c, const sim_machine *m, double *time_s, double *peak_bytes, sim_err *err);
int plan_chain_run(const plan_chain *c, const sim_machine *m, plan_chain_out *out, sim_err *err);

/* Time of one stage-to-stage transfer (Galvatron's p2p term, papers.md
 * §3.2): GPU first+j sends bytes to GPU first+gpus+j for j < gpus, all at
 * once. */
int plan_p2p_time(const sim_machine *m, int first, int gpus, int64_t bytes, double *time_s, sim_err *err);

/* Time of one all-reduce of `bytes` over the first `gpus` GPUs (Oases'
 * profiler's world all-reduce, papers.md §1.6). */
int plan_world_allreduce(const sim_machine *m, int gpus, int64_t bytes, double *time_s, sim_err *err);

/* "tp4", "tp2xdp4", "tp2xsdp4s" (s = strided TP groups), "sdp8" ... */
void plan_bstrat_name(const plan_bstrat *s, int gpus, char *buf, size_t n);

#endif
