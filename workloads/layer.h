/* layer.h — one transformer layer (or a run of consecutive layers) of one
 * micro-batch on one rank, as schedule operations: forward, backward and
 * recompute under a tensor-parallel layer schedule.
 *
 * Split from the pipeline / data-parallel generator (gpt.c) so that the two
 * evolve apart: gpt.c decides *when* a micro-batch's layers run (1F1B,
 * GPipe, interleaved ...) and what surrounds them (embedding, loss, pipeline
 * messages, DP); this module decides *what* a layer is under a TP schedule
 * (Megatron 1-D, sequence parallel, Oases, Merak, Tesseract: one file and
 * one table of operations per family, layer_emit.h) and which activations
 * it keeps.  The two share one wl_cursor per rank: the
 * operations a layer's first kernel must wait for (a received activation, an
 * all-reduce) go in pending, and the id of the last kernel comes back in
 * last_comp for the send or the next stage of the caller.
 *
 * A run of layers is the unit (not a single layer) because the overlapped
 * schedules carry windows across layer boundaries (Oases W1 = Q₂^{ℓ−1} +
 * A₂^ℓ, papers.md §1.4); a single layer is a run of one. */
#ifndef WL_LAYER_H
#define WL_LAYER_H

#include <stdint.h>

#include "sim/error.h"
#include "sim/schedule.h"
#include "workloads/model.h"

#define WL_MAX_PENDING 4

/* The linears of a layer whose weights a GEMM reads. */
typedef enum wl_linear { WL_LIN_QKV, WL_LIN_PROJ, WL_LIN_FC1, WL_LIN_FC2 } wl_linear;

struct wl_cursor;
/* Emits a GEMM that reads the weights of linear `lin` of `layer` (forward or
 * recompute: the output; backward: the input gradient) in place of
 * wl_cursor_comp; returns the last kernel.  OSDP's operator splitting
 * (gpt.c) gathers the weights slice by slice around it. */
typedef uint32_t (*wl_linear_fn)(struct wl_cursor *c, int layer, wl_linear lin, uint32_t payload, sim_tags t);

/* Where one rank's operations go, and what the next kernel waits for. */
typedef struct wl_cursor {
    sim_schedule *s;
    int rank;
    int sc;      /* "compute" stream: kernels and memory effects */
    int stp;     /* "tp" stream, -1 when tp == 1 */
    int tp_comm; /* TP communicator, -1 when tp == 1 */
    uint32_t pending[WL_MAX_PENDING]; /* ops the next kernel waits for */
    int npending;
    uint32_t last_comp; /* the last kernel added */
    /* context parallelism (strategy cp > 1 only): the ranks before and after
     * this one in its CP ring, and the ring's send and receive streams */
    int cp_next, cp_prev;
    int scp_send, scp_recv;
    /* expert parallelism (MoE models with ep > 1): the EP group's
     * communicator and the "ep" stream of its all-to-alls (-1: created on
     * first use); callers set both to -1 when there is none */
    int ep_comm, sep;
    wl_linear_fn linear; /* NULL: weight-reading GEMMs are plain kernels (only schedule=megatron calls it) */
    void *linear_ctx;
    /* a routed MoE step (trainsim moe): this rank's payloads per MoE layer
     * at its EP index, and the copies of experts it broadcasts and reduces;
     * NULL: uniform routing */
    const struct wl_moe_routed *routed;
    int ep_index;
    struct wl_moe_bal *bal;
} wl_cursor;

/* Where copies of each expert live in one MoE layer of an expert-parallel
 * group: holds[e * ep + g] != 0 when EP rank g computes expert e (its owner,
 * g = e / (experts/ep), always does). */
typedef struct wl_moe_place {
    int experts, ep;
    unsigned char *holds;
    int overlap; /* 1: broadcast ahead and overlapped (Pro-Prophet); 0: on the critical path (FasterMoE) */
} wl_moe_place;

/* One training step's routing of a model's MoE layers, the same in every EP
 * group (trainsim moe): per MoE layer q in layer order, the token-expert
 * assignments EP rank g computes per micro-batch, compute[q * ep + g], the
 * tokens EP rank a sends EP rank b in the dispatch, send[(q * ep + a) * ep +
 * b], and the copies of experts, places[q] (NULL, or a NULL entry: owners
 * only). */
typedef struct wl_moe_route {
    int layers, ep;
    const int64_t *compute, *send;
    wl_moe_place *const *places;
} wl_moe_route;

/* Expert copies on one rank of a routed step: per MoE layer q, the
 * communicators comm[first[q] .. first[q + 1]) of the copies of experts this
 * rank owns or holds (the owner is member 0, the broadcast's and reduce's
 * root), bytes of one expert's weights and of its gradients, whether the layer's
 * copies are Pro-Prophet's (overlap[q]: broadcast ahead on the "prophet"
 * stream once the previous MoE layer has combined micro-batch 0, gradients
 * reduced there after the last backward) or FasterMoE's (on the "ep" stream,
 * on the critical path).  The rest is the emitters' state (caller zeroes it,
 * sets sprophet to -1 and ready/end to UINT32_MAX). */
typedef struct wl_moe_bal {
    int last_micro;
    const int *first, *comm;
    const unsigned char *overlap;
    int64_t expert_bytes, expert_grad_bytes;
    int sprophet;
    uint32_t *ready, *end; /* [q]: the broadcasts' last op; the combine of micro-batch 0 */
    uint32_t last_side;    /* the last copy reduce (what the optimizer waits for), UINT32_MAX none */
} wl_moe_bal;

/* Sets up the cursor of `rank` in s for the layers alone: its "compute"
 * stream, and its "tp" stream when tp_comm >= 0 (the TP communicator, -1
 * when tp == 1); no expert or context parallelism and no weight hook.  A
 * caller with those (gpt.c) sets their fields after. */
void wl_cursor_init(wl_cursor *c, sim_schedule *s, int rank, int tp_comm);
/* Appends a kernel on the compute stream that consumes what is pending. */
uint32_t wl_cursor_comp(wl_cursor *c, uint32_t payload, sim_tags t);
/* Appends a kernel that runs beside what is pending (the next kernel still
 * waits for it). */
uint32_t wl_cursor_comp_overlap(wl_cursor *c, uint32_t payload, sim_tags t);
/* Appends a memory effect on the compute stream. */
void wl_cursor_mem(wl_cursor *c, uint32_t payload, sim_tags t);
/* The next kernel will wait for op. */
void wl_cursor_pend(wl_cursor *c, uint32_t op);
/* An all-reduce over the TP group of what the last kernel produced; the next
 * kernel waits for it.  Nothing when tp == 1. */
void wl_cursor_tp_allreduce(wl_cursor *c, int tp, uint32_t payload, sim_tags t);

/* Payload builders (deduplicated by value in the schedule). */
uint32_t wl_pay_kernel(sim_schedule *s, const char *name, sim_kernel k, int64_t m, int64_t n, int64_t kk,
                       int64_t batch, int64_t bytes, sim_dtype dt);
uint32_t wl_pay_gemm(sim_schedule *s, const char *name, int64_t m, int64_t n, int64_t k, sim_dtype dt);
uint32_t wl_pay_elem(sim_schedule *s, const char *name, int64_t bytes, sim_dtype dt);
/* An element-wise payload of by_class[c] bytes at each class c (sim_mem_class;
 * [SIM_MEMC_STREAM] streams): bytes their sum, class_bytes the rest. */
uint32_t wl_pay_elem_cls(sim_schedule *s, const char *name, const int64_t by_class[SIM_MEMC_COUNT], sim_dtype dt);
uint32_t wl_pay_coll(sim_schedule *s, const char *name, sim_coll c, int64_t bytes);
uint32_t wl_pay_p2p(sim_schedule *s, sim_op_kind kind, const char *name, int64_t bytes, int tag);
uint32_t wl_pay_mem(sim_schedule *s, const char *name, sim_mem_kind k, int64_t delta);

/* The layer schedule of one strategy: its payloads, built once. */
typedef struct wl_layer wl_layer;

/* Builds the payloads of a layer of model m under strategy st (tp, mb, dtype,
 * recompute) in schedule s.  Returns NULL with err set on bad input or out of
 * memory. */
wl_layer *wl_layer_new(sim_schedule *s, const wl_model *m, const wl_strategy *st, sim_err *err);
void wl_layer_free(wl_layer *L);

/* The payloads of a routed MoE step (wl_moe_route) per MoE layer and EP
 * index, at L's micro-batch and TP degree; NULL when out of memory. */
typedef struct wl_moe_routed wl_moe_routed;
wl_moe_routed *wl_moe_routed_new(const wl_layer *L, sim_schedule *s, const wl_moe_route *r);
void wl_moe_routed_free(wl_moe_routed *x);

/* Checks context parallelism against the model and the resolved strategy
 * (st->flash set): cp positive, 2·cp dividing seq, fused attention. */
int wl_layer_check_cp(const wl_model *m, const wl_strategy *st, sim_err *err);

/* Checks MoE layers against the strategy (schedule=megatron, ep dividing
 * the experts, tp dividing the experts' FFN); ep > 1 on a dense model is an
 * error. */
int wl_layer_check_moe(const wl_model *m, const wl_strategy *st, sim_err *err);

/* Flags for the emitters. */
enum {
    /* backward: the forward of these layers was already recomputed by
     * wl_layer_recompute (a pipeline that recomputes ahead of the gradient
     * receive), so do not recompute it again */
    WL_LAYER_RECOMPUTED = 1u << 0,
    /* forward, recompute and backward: these layers keep all their
     * activations whatever the strategy's recompute mode (Merak's
     * last_no_recompute, stage-aware recompute ratios); pass it to both the
     * forward and the backward of the same layers.  Their memory is
     * wl_layer_memory of the strategy with recompute=none.  Ignored by the
     * Oases ladder schedules, whose recompute mode is part of the schedule. */
    WL_LAYER_NO_RECOMPUTE = 1u << 1,
};

/* Forward of layers [first, first + n) for one micro-batch, with the memory
 * effects of what is kept for backward.  phase is SIM_PHASE_FORWARD. */
void wl_layer_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags);
/* Backward of layers [first + n − 1 … first] for one micro-batch, including
 * the recomputation the strategy's recompute mode asks for, and the memory
 * effects that release the layers' activations. */
void wl_layer_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags);
/* Recomputes the forward of layers [first, first + n) ahead of their backward
 * (then call wl_layer_backward with WL_LAYER_RECOMPUTED).  Nothing when the
 * strategy does not recompute. */
void wl_layer_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags);

/* Memory of one layer of one micro-batch on one rank, in bytes, for the
 * memory model (the schedule's memory effects add up to the same):
 * kept      what stays from the forward to the backward;
 * transient what one layer rebuilds during its backward on top of the kept
 *           bytes (recompute), released at the end of that layer's backward. */
int64_t wl_layer_kept_bytes(const wl_model *m, const wl_strategy *st);
/* The same for one given layer (its TP degree may differ before an Oases
 * cut-point); either pointer may be NULL. */
void wl_layer_memory(const wl_model *m, const wl_strategy *st, int layer, int64_t *kept, int64_t *transient);
/* Parameters of one layer held by one rank (weights split over the layer's
 * TP degree or Tesseract grid, the rest replicated). */
int64_t wl_layer_params(const wl_model *m, const wl_strategy *st, int layer);
/* Of an MoE layer: parameters of the routed experts one rank holds (its
 * experts/ep experts, each split over tp); 0 for a dense layer.  They are not
 * in wl_layer_params, since their gradients go to another group. */
int64_t wl_layer_expert_params(const wl_model *m, const wl_strategy *st, int layer);
/* Token-expert assignments one rank's experts compute per micro-batch, and
 * the bytes it sends to each other EP rank in one dispatch, under uniform
 * routing with the model's capacity factor (GShard's, per source and
 * expert): sb·top_k, and sb·top_k·h·d/ep, without drops. */
void wl_layer_moe_tokens(const wl_model *m, const wl_strategy *st, int64_t *tokens, int64_t *peer_bytes);
/* Once per step, after the last backward: the gradient synchronisation the
 * TP schedule itself needs (Tesseract: the weight gradients replicated over
 * depth are all-reduced in the DEP group), on its own stream, each operation
 * depending on op `after`.  *last gets the last operation added (unchanged
 * when none). */
void wl_layer_step_sync(wl_layer *L, wl_cursor *c, int first, int n, uint32_t after, uint32_t *last);
/* Activation bytes per element of the strategy's dtype (4 for fp32/tf32, 2
 * for fp16/bf16). */
int64_t wl_layer_act_bytes(const wl_strategy *st);

#endif
