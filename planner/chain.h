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
    int gpus, batch;      /* GPUs used (the first ones) and global batch (sequences) */
    sim_dtype dtype;
    int n;                /* blocks */
    const plan_block_kind *kind;
    const plan_bstrat *st;
    int no_comm;          /* compute only (Oases' profiler skips TP communication) */
    int reshard_only;     /* only the resharding between st[0] and st[1] */
    int fwd_only;         /* forward pass only */
} plan_chain;

/* Builds one training step of the chain (forward 0..n-1, backward n-1..0,
 * gradient synchronisation and optimizer step per block).  Errors when a
 * degree does not divide the GPUs, heads, hidden, FFN or batch. */
sim_schedule *plan_chain_build(const plan_chain *c, sim_err *err);

/* Simulates it in a child process: iteration time and peak memory. */
int plan_chain_simulate(const plan_chain *c, const sim_machine *m, double *time_s, double *peak_bytes, sim_err *err);

/* Time of one all-reduce of `bytes` over the first `gpus` GPUs (Oases'
 * profiler's world all-reduce, papers.md §1.6). */
int plan_world_allreduce(const sim_machine *m, int gpus, int64_t bytes, double *time_s, sim_err *err);

/* "tp4", "tp2xdp4", "tp2xsdp4s" (s = strided TP groups), "sdp8" ... */
void plan_bstrat_name(const plan_bstrat *s, int gpus, char *buf, size_t n);

#endif
