/* layer_emit.h — private to workloads/layer*.c: what the schedule families
 * of a transformer layer share.
 *
 * layer.c owns the public interface (layer.h) and dispatches every call
 * through one table of operations per schedule family (wl_layer_ops): the
 * Megatron 1-D layer (layer_megatron.c, with sequence parallelism, TP
 * communication overlap and MoE layers), the Oases ladder (layer_oases.c),
 * Merak's levels (layer_merak.c) and Tesseract (layer_tesseract.c).  The
 * families build on the same pieces, declared here: the payloads of one
 * layer at a batch and TP degree (wl_opset, layer_payloads.c) and the
 * helpers that append them to a rank's streams (layer_emit.c).  Nothing
 * here is for other modules: they see layer.h only. */
#ifndef WL_LAYER_EMIT_H
#define WL_LAYER_EMIT_H

#include <stddef.h>

#include "workloads/layer.h"

typedef struct wl_layer_ops wl_layer_ops;

/* An MoE layer's payloads that depend on how many tokens this rank's
 * experts compute and what it exchanges: uniform routing's in every
 * wl_opset of an MoE layer; a routed step's per MoE layer and EP index
 * (wl_moe_routed). */
typedef struct wl_moe_pays {
    uint32_t route, disp, efc1, eact, efc2, comb, unperm;
    uint32_t unperm_b, comb_b, efc2_dg, efc2_wg, eact_b, efc1_dg, efc1_wg, disp_b, perm_b;
} wl_moe_pays;

/* trainsim moe's step: per MoE layer q and EP index g, p[q * ep + g]. */
struct wl_moe_routed {
    int ep;
    wl_moe_pays *p;
};

/* The payloads of one layer for b sequences at TP degree t. */
typedef struct wl_opset {
    int64_t t, b;
    uint32_t ln1, qkv, attn, proj, post_attn, fc1, gelu, fc2, post_mlp;
    uint32_t post_mlp_b, fc2_dg, fc2_wg, gelu_b, fc1_dg, fc1_wg, post_attn_b, proj_dg, proj_wg, attn_b, qkv_dg,
        qkv_wg, ln1_b;
    uint32_t ar;                               /* all-reduce of s·b·h·d */
    uint32_t ag, rs;                           /* sequence parallel: all-gather, reduce-scatter of s·b·h·d */
    uint32_t proj_h, fc2_h, qkv_dg_h, fc1_dg_h, ar_h; /* Merak level 1: half the rows */
    uint32_t keep, unkeep;                     /* what the forward keeps for backward */
    uint32_t tr, untr;                         /* recompute=full/selective: what the backward rebuilds */
    uint32_t unboth;                           /* both at once */
    uint32_t blk_attn, unblk_attn, blk_mlp, unblk_mlp; /* recompute=oases: one block rebuilt */
    uint32_t gather;                           /* cut-point: all-gather of the layer input along the batch */
    int rope;                                  /* rotary embeddings: rope_f before the core, rope_b after */
    uint32_t rope_f, rope_b;
    int fp8;                                   /* FP8 casts: cast_f after the core, cast_b after its backward */
    uint32_t cast_f, cast_b;
    int autocast;                              /* autocast=1: the layer's linears cast from fp32 each forward */
    uint32_t wcast, gcast[2];                  /* forward cast; gradient cast (first micro-batch, later ones) */
    uint32_t wc_alloc, wc_free;                /* the 16-bit weight copies, kept from forward to backward */
    int cp;                                    /* context parallelism: the attention core is a ring of cp steps */
    uint32_t cp_off, cp_off_b;                 /* a step on another rank's K/V (step 0 is attn, attn_b) */
    uint32_t cp_fix[2], cp_acc[2];             /* merging a step's result: step 0, a later step */
    uint32_t cp_kv_send, cp_kv_recv;           /* forward: a K/V chunk pair */
    uint32_t cp_kvb_send[3], cp_kvb_recv[3];   /* backward: K/V, K/V + dK/dV, dK/dV */
    uint32_t cp_buf_f, cp_unbuf_f, cp_buf_b, cp_unbuf_b; /* the ring's K/V (and dK/dV) buffers */
    /* an MoE layer's MLP block (wl_opset_moe): router, permutation, the
     * all-to-alls, the experts as grouped GEMMs, the shared expert */
    int moe, shared;
    wl_moe_pays mp; /* uniform routing */
    uint32_t router, sfc1, sact, sfc2, sfc2_dg, sfc2_wg, sact_b, sfc1_dg, sfc1_wg, router_dg, router_wg;
} wl_opset;

/* Tesseract (papers.md Sec. 4): per linear, the q SUMMA steps' payloads. */
typedef struct wl_tlin {
    uint32_t gemm, dgrad, wgrad;               /* one step's local GEMMs */
    uint32_t bc_a[8], bc_b[8];                 /* forward: A block in ROW, B block in COL, root i */
    uint32_t red_da[8], red_db[8];             /* backward: dA reduced in ROW, dB reduced in COL */
    uint32_t bias_bc, bias_red;                /* bias broadcast / reduce in COL (root 0) */
} wl_tlin;

typedef struct wl_tess {
    int q, d;
    wl_tlin qkv, proj, fc1, fc2;
    uint32_t ln_ar;                            /* layer-norm statistics all-reduce in ROW */
    uint32_t grad_ar;                          /* per-step weight-gradient all-reduce in DEP */
} wl_tess;

/* Communicators a rank uses besides its TP group, created on first use. */
typedef struct wl_rank_comms {
    int row, col, dep;                         /* Tesseract */
    int small, trans;                          /* cut-point: the small TP group, the all-gather group */
    int ring_send, ring_recv;                  /* TP overlap: ring-exchange streams (-2: not yet) */
} wl_rank_comms;

/* send/recv tags (gpt.c's pipeline uses 0 and 1): the TP ring exchange, the
 * CP ring's forward and backward */
enum { WL_TAG_TP_RING = 2, WL_TAG_CP_FWD = 3, WL_TAG_CP_BWD = 4 };

/* Megatron-Core's TP communication overlap (tp_overlap_comm): GEMM chunks
 * and transfers, from the whole layer's payloads. */
#define WL_TPO_SPLITS 4 /* Transformer Engine's num_splits for its "pipeline" reduce-scatter */
typedef struct wl_tpo {
    uint32_t qkv, fc1, fc2_dg, proj_dg;        /* ring-exchange GEMM chunks: s·b/t tokens */
    uint32_t proj[WL_TPO_SPLITS], fc2[WL_TPO_SPLITS], rs[WL_TPO_SPLITS]; /* pipelined GEMM chunks, their reduce-scatters */
    uint32_t send, recv;                       /* one ring step: s·b·h·d/t bytes */
} wl_tpo;

struct wl_layer {
    wl_model m;
    wl_strategy st;
    const wl_layer_ops *ops;                   /* the schedule family's operations */
    wl_opset main, main_h, cut, cut_h;         /* after / before the cut, whole and half batch */
    wl_opset moe;                              /* an MoE layer (schedule=megatron only) */
    wl_tess T;                                 /* schedule=tesseract */
    wl_tpo O;                                  /* tp_overlap_comm */
    int nranks;
    wl_rank_comms *rc;                         /* [nranks], -2 = not created */
    int rc_shared;                             /* rc belongs to the parent layer */
    struct wl_layer *norc;                     /* the same schedule without recompute
                                                * (WL_LAYER_NO_RECOMPUTE), or NULL */
};

/* ---- the table of operations of a schedule family ---------------------- */

/* Everything a schedule family decides.  A run of layers [first, first + n)
 * is the unit of forward, recompute and backward, since the overlapped
 * families carry windows across layer boundaries; n >= 1 here. */
struct wl_layer_ops {
    int subbatches; /* each micro-batch runs as 1 or 2 sub-batches (halves of the batch) */
    int sharded;    /* every activation is a 1/t block whatever sp says (Tesseract) */
    /* the model sizes the family can split at the strategy's tp (error set) */
    int (*check)(const wl_model *m, const wl_strategy *st, sim_err *err);
    /* payloads of its own beyond the 1-D layer's (NULL: none) */
    void (*build)(wl_layer *L, sim_schedule *s);
    /* parameters of one layer on one rank at TP degree t (NULL: the 1-D split) */
    int64_t (*params)(const wl_model *m, const wl_strategy *st, int64_t t);
    void (*forward)(wl_layer *L, wl_cursor *c, int first, int n, int micro);
    /* recompute=full only: the forward again ahead of the backward (NULL: nothing) */
    void (*recompute)(wl_layer *L, wl_cursor *c, int first, int n, int micro);
    /* rerun: rebuild what the recompute mode drops (0: wl_layer_recompute did) */
    void (*backward)(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun);
    /* once per step after the last backward (NULL: nothing) */
    void (*step_sync)(wl_layer *L, wl_cursor *c, int first, int n, uint32_t after, uint32_t *last);
};

extern const wl_layer_ops wl_layer_megatron_ops; /* layer_megatron.c */
extern const wl_layer_ops wl_layer_block_recompute_ops, wl_layer_overlap_ckpt_ops, wl_layer_oases_ops; /* layer_oases.c */
extern const wl_layer_ops wl_layer_merak_l1_ops, wl_layer_merak_ops; /* layer_merak.c */
extern const wl_layer_ops wl_layer_tesseract_ops; /* layer_tesseract.c */

/* The table of a strategy's schedule (layer.c). */
const wl_layer_ops *wl_layer_ops_of(const wl_strategy *st);
/* The 1-D families' check: tp divides heads, K/V heads, hidden and ffn. */
int wl_layer_check_1d(const wl_model *m, const wl_strategy *st, sim_err *err);
/* Operations one family borrows from another (see the tables). */
void wl_megatron_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro);
void wl_merak_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro);

/* ---- sizes (layer.c) ---------------------------------------------------- */

/* The dtype of everything but the layers' GEMMs: bf16 under fp8. */
sim_dtype wl_elem_dtype(const wl_strategy *st);
/* Tokens of a sequence on one rank (seq/cp). */
int64_t wl_local_seq(const wl_model *m, const wl_strategy *st);

/* Activation bytes of one layer for b sequences at TP degree t (layer.c). */
typedef struct wl_actsz {
    int64_t full;   /* A */
    int64_t core;   /* the attention core: softmax, mask, dropout output */
    int64_t attn;   /* the attention block's share of A */
    int64_t mlp;    /* the MLP block's share */
    int64_t input;  /* the layer input */
    int64_t sbhd;   /* s·b·h·d, unsharded */
} wl_actsz;
wl_actsz wl_act_sizes(const wl_model *m, int64_t b, int64_t t, int sharded, const wl_strategy *st);

/* ---- payloads (layer_payloads.c) --------------------------------------- */

/* The FFN activation's element-wise kernels (names, and elements of
 * s·b·ffn/t read plus written forward and backward). */
typedef struct wl_ffn_act {
    const char *name, *bwd_name;
    int64_t fwd, bwd;
} wl_ffn_act;
wl_ffn_act wl_ffn_act_of(const wl_model *m);

/* The payloads of a layer for b sequences at TP degree t, sub sub-batches
 * per micro-batch (for the memory effects). */
void wl_opset_build(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t, int sub,
                    wl_opset *o);
/* Parts of it that Tesseract builds again on its own blocks: the attention
 * core, RoPE, the FP8 casts. */
void wl_opset_attn(sim_schedule *s, const wl_strategy *st, int64_t b, int64_t heads, int64_t kvh, int64_t seq,
                   int64_t hd, wl_opset *o);
void wl_opset_rope(sim_schedule *s, const wl_model *m, int64_t qk, int64_t d, sim_dtype dt, wl_opset *o);
void wl_opset_fp8(sim_schedule *s, const wl_strategy *st, int64_t in, int64_t qkv_grad, int64_t fused_f,
                  int64_t fused_b, int64_t grad_in, int64_t wts, wl_opset *o);
/* An MoE layer's MLP block on top of a dense opset. */
void wl_opset_moe(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t, wl_opset *o);
/* The token-dependent part for b sequences at TP degree t when this rank's
 * experts compute `tokens` token-expert assignments and it sends
 * disp_bytes[j] to EP rank j in the dispatch and comb_bytes[j] in the
 * combine (NULL: uniform routing's even all-to-alls of `peer` bytes). */
void wl_moe_pays_build(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t,
                       int64_t tokens, int64_t peer, const int64_t *disp_bytes, const int64_t *comb_bytes,
                       wl_moe_pays *mp);

/* ---- emitting (layer_emit.c) ------------------------------------------- */

/* The layer's payloads and TP communicator at its degree (before or after
 * an Oases cut-point; an MoE layer's own; half: the sub-batch's). */
typedef struct wl_lctx {
    const wl_opset *o;
    int comm;    /* TP communicator of the layer's degree, -1 if t == 1 */
    int64_t t;
} wl_lctx;
wl_lctx wl_lctx_of(wl_layer *L, wl_cursor *c, int layer, int half);

sim_tags wl_tags(int layer, int micro, int sub, sim_phase ph);

/* The members of this rank's TP group, and its index in it. */
const sim_comm *wl_tp_group(const wl_cursor *c, int *idx);
/* A communicator over part of the TP group, created once and kept in the
 * wl_rank_comms field at offset `field` of every member. */
int wl_sub_comm(wl_layer *L, wl_cursor *c, int me, int stride, int n, const char *kind, size_t field);
/* The cursor's "tp" stream, created on first use. */
int wl_tp_stream(wl_cursor *c);

/* A GEMM reading the weights of linear `lin` (through the cursor's hook). */
uint32_t wl_emit_linear(wl_cursor *c, int layer, wl_linear lin, uint32_t pay, sim_tags t);
/* The attention core's kernels alone (one, or the CP ring), as selective
 * recompute reruns them. */
void wl_emit_attn_kernels(wl_cursor *c, const wl_opset *o, sim_tags t);
/* The attention core with RoPE before and the FP8 cast after; backward. */
void wl_emit_attn(wl_cursor *c, const wl_opset *o, sim_tags t);
void wl_emit_attn_bwd(wl_cursor *c, const wl_opset *o, sim_tags t);
/* A collective of what the last kernel produced, on `stream`; nothing waits
 * for it yet.  _after: launched once the host waited for `waited`. */
uint32_t wl_emit_launch(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t);
uint32_t wl_emit_launch_after(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t, uint32_t waited);
/* A synchronous TP collective: the next kernel waits for it. */
void wl_emit_sync_coll(wl_cursor *c, const wl_lctx *x, uint32_t pay, sim_tags t);
/* The forward blocks of papers.md Sec. 1.4 for sub-batch k: A (LN1, QKV,
 * attention core, projection), PM (post_attn with LN2, the MLP), Q
 * (post_mlp). */
void wl_emit_block_a(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph);
void wl_emit_block_pm(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph);
void wl_emit_block_q(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph);
/* At an Oases cut-point (layer == tp_cut_layers): the all-gather of the
 * (sub-)batch input along the batch; nothing elsewhere. */
void wl_emit_cut_gather(wl_layer *L, wl_cursor *c, int layer, int micro, int k);

#endif
