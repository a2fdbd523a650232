/* gpt.h — the GPT decoder workload with a Megatron-style strategy: a
 * tensor-parallel layer schedule (layer.h), a pipeline schedule
 * (pipeline.h), data parallelism with end-of-step or overlapped gradient
 * buckets, ZeRO 1-3 / OSDP sharding, and the per-GPU memory model. */
#ifndef WL_GPT_H
#define WL_GPT_H

#include "sim/fold.h"
#include "sim/schedule.h"
#include "workloads/layer.h"
#include "workloads/model.h"

/* Per-GPU memory estimate of a strategy, by what takes it (bytes). */
/* The largest whole schedule wl_gpt_generate builds, in operations (about
 * 13 GB at the ~44 bytes an operation takes with the engine's state). */
#define WL_MAX_SCHEDULE_OPS 3e8

typedef struct wl_memory {
    double weights, gradients, optimizer, activations, buffers, context;
    double total;
    /* where the numbers come from: the stage, the most micro-batch passes it
     * holds at once (pipeline schedule), and how much of `weights` and
     * `gradients` are full copies of sharded (ZeRO-3 / OSDP) parameters
     * gathered for the layers in use */
    int stage;
    int inflight;
    double gathered;
} wl_memory;

/* Checks that the strategy can run: tp divides heads (and hidden, ffn),
 * pp divides layers, tp*pp*dp equals the GPU count, gb divisible by mb*dp,
 * and the peak memory of the most loaded stage fits in the GPU.  Errors say
 * what is needed, what there is, and what takes it. */
int wl_gpt_check(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_memory *peak,
                 sim_err *err);

/* The peak of every stage (per_stage[0 .. pp)), from the memory effects of
 * one rank of each stage as the generator emits them (so it is the peak the
 * simulation reports), without the capacity check. */
int wl_gpt_memory(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_memory *per_stage,
                  sim_err *err);

/* The strategy with dp and gb left on auto filled in (dp = GPUs/(tp*pp),
 * gb = mb*dp), after the divisibility checks of wl_gpt_check (not memory). */
int wl_gpt_resolve(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_strategy *out,
                   sim_err *err);

/* The model and strategy cut to fewer (or more) layers, each virtual stage
 * losing the same number so that the stage with fewest has k (k >= 0), the
 * split otherwise kept: k per virtual stage when uniform (k·pp·vstages
 * layers), k on the first and the last and k + 1 between under
 * stage_split=embedding_as_layer, each pp_layers count less the same amount.
 * Every stage then loses the same work, so the step is affine in k: what the
 * planner's fast fidelity and the end-to-end cost estimate sample.  The cut
 * model's layer count, or -1 when the strategy's split does not resolve on
 * m (its own error). */
int wl_gpt_cut(const wl_model *m, const wl_strategy *st, int k, wl_model *mo, wl_strategy *so, sim_err *err);

/* Generates one training iteration as a schedule (checks first). */
sim_schedule *wl_gpt_generate(const wl_model *m, const wl_strategy *st, const sim_machine *mach,
                              sim_err *err);
/* The same with the MoE layers routed as `route` says (one step's skewed
 * routing and its expert copies: trainsim moe) instead of uniformly; route
 * NULL is wl_gpt_generate.  Not with interleaved stages, context
 * parallelism or Merak's pipelines. */
sim_schedule *wl_gpt_generate_routed(const wl_model *m, const wl_strategy *st, const sim_machine *mach,
                                     const wl_moe_route *route, sim_err *err);
/* wl_gpt_generate for `trainsim run`'s exact reductions (sim/fold.h): when
 * data-parallel replicas fold, only the ranks the fold keeps are generated
 * (and the replicas on the last server of each folded group, checked
 * operation by operation against their stand-ins), *f holds the folded
 * schedule, and the schedule returned carries the whole job's name,
 * figures and ranks without every rank's operations (for reporting only).
 * what: SIM_FOLD_*.  Otherwise f->sched is NULL and the whole schedule is
 * returned. */
sim_schedule *wl_gpt_generate_folded(const wl_model *m, const wl_strategy *st, const sim_machine *mach, int what,
                                     sim_fold *f, sim_err *err);

/* The same schedule again, folded as `what` says (0: whole), for
 * sim_run_reduced's retries (a sim_regen_fn; ctx a wl_gpt_regen_ctx). */
typedef struct wl_gpt_regen_ctx {
    const wl_model *model;
    const wl_strategy *st;
    const sim_machine *m;
} wl_gpt_regen_ctx;
sim_schedule *wl_gpt_regenerate(void *ctx, int what, sim_fold *f, sim_err *err);

/* Bytes of one data-parallel gradient bucket of model chunk `chunk` on
 * pipeline stage `stage`, for gradients of grad_bytes bytes each: the
 * strategy's bucket=, or with bucket=auto the rule of the framework the
 * sharding scheme comes from (Megatron-Core, DeepSpeed, PyTorch DDP; gpt.c).
 * INT64_MAX: one bucket holds every gradient. */
int64_t wl_gpt_bucket_bytes(const wl_strategy *st, int dp, int grad_bytes, int stage, int chunk);

/* Model FLOPs of one iteration (Megatron's count, no recompute). */
double wl_gpt_model_flops(const wl_model *m, const wl_strategy *st);

#endif
