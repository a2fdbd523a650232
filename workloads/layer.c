/* layer.c — a transformer layer of one micro-batch on one rank, as schedule
 * operations (see layer.h for the split with gpt.c).
 *
 * Megatron 1-D tensor parallelism (Shoeybi et al. 2019, "Megatron-LM", Sec. 3;
 * papers.md §1.2): column-parallel QKV and fc1, row-parallel output projection
 * and fc2; one all-reduce after each row-parallel GEMM in forward and one
 * after each column-parallel GEMM's input gradient in backward, the latter
 * overlapping the weight-gradient GEMM (--async-tensor-model-parallel-
 * allreduce).  Full recompute reruns the whole layer forward, all-reduces
 * included (Megatron's CheckpointFunction). */
#include "workloads/layer.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cursor ------------------------------------------------------------ */

uint32_t wl_cursor_comp(wl_cursor *c, uint32_t payload, sim_tags t)
{
    uint32_t id = sim_sched_add(c->s, c->sc, payload, -1, t, c->pending, c->npending);
    c->npending = 0;
    c->last_comp = id;
    return id;
}

uint32_t wl_cursor_comp_overlap(wl_cursor *c, uint32_t payload, sim_tags t)
{
    uint32_t id = sim_sched_add(c->s, c->sc, payload, -1, t, NULL, 0);
    c->last_comp = id;
    return id;
}

void wl_cursor_mem(wl_cursor *c, uint32_t payload, sim_tags t)
{
    sim_sched_add(c->s, c->sc, payload, -1, t, NULL, 0);
}

void wl_cursor_pend(wl_cursor *c, uint32_t op)
{
    if (c->npending == WL_MAX_PENDING) { /* keep the latest: ops on one stream finish in order */
        memmove(c->pending, c->pending + 1, sizeof c->pending[0] * (WL_MAX_PENDING - 1));
        c->npending--;
    }
    c->pending[c->npending++] = op;
}

void wl_cursor_tp_allreduce(wl_cursor *c, int tp, uint32_t payload, sim_tags t)
{
    if (tp == 1)
        return;
    uint32_t dep = c->last_comp;
    wl_cursor_pend(c, sim_sched_add(c->s, c->stp, payload, c->tp_comm, t, &dep, 1));
}

/* ---- payloads ---------------------------------------------------------- */

uint32_t wl_pay_kernel(sim_schedule *s, const char *name, sim_kernel k, int64_t m, int64_t n, int64_t kk,
                       int64_t batch, int64_t bytes, sim_dtype dt)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = (uint8_t)k;
    p.dtype = (uint8_t)dt;
    p.name = sim_sched_str(s, name);
    p.m = m;
    p.n = n;
    p.k = kk;
    p.batch = batch;
    p.bytes = bytes;
    return sim_sched_payload(s, &p);
}

uint32_t wl_pay_gemm(sim_schedule *s, const char *name, int64_t m, int64_t n, int64_t k, sim_dtype dt)
{
    return wl_pay_kernel(s, name, SIM_KERNEL_GEMM, m, n, k, 1, 0, dt);
}

uint32_t wl_pay_elem(sim_schedule *s, const char *name, int64_t bytes, sim_dtype dt)
{
    return wl_pay_kernel(s, name, SIM_KERNEL_ELEMENTWISE, 0, 0, 0, 0, bytes, dt);
}

uint32_t wl_pay_coll(sim_schedule *s, const char *name, sim_coll c, int64_t bytes)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COLLECTIVE;
    p.sub = (uint8_t)c;
    p.algo = SIM_ALGO_AUTO;
    p.name = sim_sched_str(s, name);
    p.bytes = bytes;
    return sim_sched_payload(s, &p);
}

uint32_t wl_pay_p2p(sim_schedule *s, sim_op_kind kind, const char *name, int64_t bytes, int tag)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = (uint8_t)kind;
    p.name = sim_sched_str(s, name);
    p.bytes = bytes;
    p.tag = tag;
    return sim_sched_payload(s, &p);
}

uint32_t wl_pay_mem(sim_schedule *s, const char *name, sim_mem_kind k, int64_t delta)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_MEMORY;
    p.sub = (uint8_t)k;
    p.name = sim_sched_str(s, name);
    p.bytes = delta;
    return sim_sched_payload(s, &p);
}

/* ---- memory ------------------------------------------------------------ */

int64_t wl_layer_act_bytes(const wl_strategy *st)
{
    return st->dtype == SIM_DTYPE_FP32 || st->dtype == SIM_DTYPE_TF32 ? 4 : 2;
}

/* The dtype of everything but the layers' GEMMs: bf16 under fp8. */
static sim_dtype wl_elem_dtype(const wl_strategy *st)
{
    return st->dtype == SIM_DTYPE_FP8 ? SIM_DTYPE_BF16 : st->dtype;
}

/* Tokens of a sequence on one rank: context parallelism gives each of the cp
 * ranks 2 of the sequence's 2·cp chunks, so every activation, GEMM and
 * element-wise kernel of the layer is on seq/cp tokens. */
static int64_t wl_local_seq(const wl_model *m, const wl_strategy *st)
{
    return m->seq / wl_strategy_cp(st);
}

/* Activation sizes of one layer for b sequences at TP degree t, in bytes.
 * Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", Sec. 4.1-4.2, with d bytes per element and 1-byte
 * dropout masks:
 *   attention block: LN1 input d·sbh, QKV input d·sbh (replicated); Q, K, V
 *     3d·sbh/t; softmax output d·as²b/t, its dropout mask as²b/t, the dropout
 *     output d·as²b/t; projection input d·sbh/t; its dropout mask sbh
 *   MLP block: LN2 input d·sbh, fc1 input d·sbh (replicated), GeLU input and
 *     fc2 input 2d·sb·ffn/t, dropout mask sbh
 * Total A = sbh·(4d + 2) + sbh·d·(4 + 2·ffn/h)/t + as²b·(2d + 1)/t, for
 * ffn = 4h and d = 2 the paper's sbh·(10 + 24/t + 5as/(ht)).  Sharded (sequence
 * parallelism, Sec. 4.2.2, and Tesseract, whose every activation is a
 * [sb/(dq), h/q] block): the replicated terms are divided by t too. */
typedef struct wl_actsz {
    int64_t full;   /* A */
    int64_t core;   /* the attention core: softmax, mask, dropout output */
    int64_t attn;   /* the attention block's share of A */
    int64_t mlp;    /* the MLP block's share */
    int64_t input;  /* the layer input */
    int64_t sbhd;   /* s·b·h·d, unsharded */
} wl_actsz;

static wl_actsz wl_act_sizes(const wl_model *m, int64_t b, int64_t t, int sharded, const wl_strategy *st)
{
    int64_t d = wl_layer_act_bytes(st);
    int flash = st->flash;
    int64_t s = wl_local_seq(m, st), h = m->hidden, f = m->ffn, a = m->heads;
    int64_t sbh = s * b * h, rt = sharded ? t : 1;
    /* Q, K, V (K and V at kv_heads) and the projection input; the FFN's
     * activation input (fc1's output, gate and up with swiglu) and fc2's
     * input */
    int64_t qkvp = wl_model_qkv_out(m) + h, ffn_io = wl_model_fc1_out(m, f) + f;
    wl_actsz z;
    z.sbhd = sbh * d;
    /* the core keeps the s x s softmax output, its dropout mask and output;
     * a fused kernel keeps only the softmax statistics, one fp32 log-sum-exp
     * per query row and head (it regenerates dropout from the RNG state) */
    z.core = flash ? 4 * a * s * b / t : a * s * s * b * (2 * d + 1) / t;
    z.attn = sbh * (2 * d + 1) / rt + d * s * b * qkvp / t + z.core;
    z.mlp = sbh * (2 * d + 1) / rt + d * s * b * ffn_io / t;
    if (st->dtype == SIM_DTYPE_FP8) {
        /* Transformer Engine keeps the inputs of the FP8 GEMMs it saved for
         * the weight gradients in FP8, 1 byte: QKV's and fc1's inputs (the
         * norms' outputs) and fc2's (the projection's input is also the
         * attention's saved output, kept in bf16) */
        z.attn = sbh * (d + 2) / rt + d * s * b * qkvp / t + z.core;
        z.mlp = sbh * (d + 2) / rt + (d * s * b * wl_model_fc1_out(m, f) + s * b * f) / t;
    }
    z.full = z.attn + z.mlp;
    z.input = sbh * d / rt;
    return z;
}

static int sharded_acts(const wl_strategy *st)
{
    return st->sp || st->schedule == WL_TP_TESSERACT;
}

/* The TP degree and batch (sequences per TP group) of a layer: before an
 * Oases cut-point the layers run at tp_cut_tp with tp/tp_cut_tp times more
 * TP groups, each on that fraction of the micro-batch (papers.md Sec. 1.4). */
static void layer_shape(const wl_strategy *st, int layer, int64_t *t, int64_t *b)
{
    if (st->tp_cut_tp && layer < st->tp_cut_layers) {
        *t = st->tp_cut_tp;
        *b = (int64_t)st->mb * st->tp_cut_tp / st->tp;
    } else {
        *t = st->tp;
        *b = st->mb;
    }
}

static int uses_subbatches(const wl_strategy *st)
{
    return st->schedule == WL_TP_OVERLAP_CKPT || st->schedule == WL_TP_OASES ||
           (st->schedule == WL_TP_MERAK && st->tp_overlap >= 2);
}

void wl_layer_moe_tokens(const wl_model *m, const wl_strategy *st, int64_t *tokens, int64_t *peer_bytes)
{
    const wl_moe *x = &m->moe_cfg;
    int ep = wl_strategy_ep(st);
    double sb = (double)wl_local_seq(m, st) * st->mb, per = sb * x->top_k / x->experts; /* per (source, expert) */
    if (x->capacity_factor > 0) {
        double cap = ceil(x->capacity_factor * sb * x->top_k / x->experts);
        per = per < cap ? per : cap;
    }
    /* each of the ep sources sends per to each of this rank's experts/ep */
    if (tokens)
        *tokens = llround(per * x->experts);
    if (peer_bytes)
        *peer_bytes = llround(per * (x->experts / ep)) * m->hidden * wl_layer_act_bytes(st);
}

/* An MoE layer's MLP block activations (replacing act_sizes' mlp): the LN2
 * input, the router's and shared expert's input and the dropout mask as for a
 * dense MLP, the router's fp32 probabilities, and per token-expert
 * assignment computed here (tokens replicated over TP) the permuted input
 * and the experts' output before the combine (h each, whole), the
 * activation's input and fc2's input (split over tp); the shared expert's as
 * a dense FFN of shared_ffn. */
static int64_t moe_mlp_bytes(const wl_model *m, const wl_strategy *st, int64_t b, int64_t t, int64_t rt)
{
    const wl_moe *x = &m->moe_cfg;
    int64_t d = wl_layer_act_bytes(st), s = wl_local_seq(m, st), h = m->hidden, T;
    wl_strategy one = *st;
    one.mb = (int)b;
    wl_layer_moe_tokens(m, &one, &T, NULL);
    int64_t ef = x->expert_ffn, sf = x->shared_ffn;
    return s * b * h * (2 * d + 1) / rt + 4 * s * b * x->experts + 2 * T * h * d +
           d * T * (wl_model_fc1_out(m, ef) + ef) / t + (sf ? d * s * b * (wl_model_fc1_out(m, sf) + sf) / t : 0);
}

void wl_layer_memory(const wl_model *m, const wl_strategy *st, int layer, int64_t *kept, int64_t *transient)
{
    int64_t t, b;
    layer_shape(st, layer, &t, &b);
    wl_actsz z = wl_act_sizes(m, b, t, sharded_acts(st), st);
    if (wl_model_is_moe_layer(m, layer)) {
        z.mlp = moe_mlp_bytes(m, st, b, t, sharded_acts(st) ? t : 1);
        z.full = z.attn + z.mlp;
    }
    int64_t k = z.full, tr = 0;
    switch (st->recompute) {
    case WL_RECOMPUTE_NONE:
        break;
    case WL_RECOMPUTE_FULL:
        k = z.input;
        tr = z.full;
        break;
    case WL_RECOMPUTE_SELECTIVE:
        k = z.full - z.core;
        tr = z.core;
        break;
    case WL_RECOMPUTE_OASES: {
        /* (attention output after its all-reduce, layer input) and (MLP output
         * after its all-reduce, residual): 4·s·b·h elements (papers.md Sec.
         * 1.3); one block rebuilt at a time, per sub-batch under oases */
        k = 4 * z.sbhd;
        wl_actsz r = uses_subbatches(st) ? wl_act_sizes(m, b / 2, t, 0, st) : z;
        tr = r.attn > r.mlp ? r.attn : r.mlp;
        break;
    }
    }
    if (kept)
        *kept = k;
    if (transient)
        *transient = tr;
}

int64_t wl_layer_kept_bytes(const wl_model *m, const wl_strategy *st)
{
    int64_t k;
    wl_layer_memory(m, st, m->layers - 1, &k, NULL);
    return k;
}

/* A layer's weights (linear matrices), linear biases and norm parameters,
 * for Tesseract's [in/q, out/q] blocks. */
static void layer_param_parts(const wl_model *m, int64_t *w, int64_t *bias, int64_t *norms)
{
    int64_t h = m->hidden, f = m->ffn, qkv = wl_model_qkv_out(m), fc1 = wl_model_fc1_out(m, f);
    *w = h * qkv + h * h + h * fc1 + f * h;
    *bias = m->no_bias ? (m->qkv_bias ? qkv : 0) : qkv + h + fc1 + h;
    *norms = 2 * wl_model_norm_params(m);
}

int64_t wl_layer_params(const wl_model *m, const wl_strategy *st, int layer)
{
    int64_t t, b;
    layer_shape(st, layer, &t, &b);
    if (st->schedule == WL_TP_TESSERACT) {
        /* weights and biases as [in/q, out/q] and [out/q] blocks, replicated
         * over depth; layer norms [h/q] (papers.md Sec. 4.2) */
        int64_t q = 1, w, bias, norms;
        while (q * q * st->tess_depth < t)
            q++;
        layer_param_parts(m, &w, &bias, &norms);
        return w / (q * q) + bias / q + norms / q;
    }
    /* QKV weight and bias, projection weight, fc1 weight and bias, fc2 weight
     * split over t; the row-parallel biases and the norms replicated */
    wl_layer_param_split p = wl_model_layer_params(m);
    if (wl_model_is_moe_layer(m, layer)) {
        /* the attention block, LN2, the router (replicated: Megatron-Core's
         * TopKRouter weight is not split) and the shared expert split as a
         * dense MLP; the routed experts are wl_layer_expert_params */
        int64_t sf = m->moe_cfg.shared_ffn, b1 = !m->no_bias;
        int64_t shared = sf ? (m->hidden * wl_model_fc1_out(m, sf) + sf * m->hidden + b1 * wl_model_fc1_out(m, sf)) / t +
                                  b1 * m->hidden : 0;
        return p.attn_split / t + p.attn_rep + wl_model_norm_params(m) + (int64_t)m->hidden * m->moe_cfg.experts +
               shared;
    }
    return (p.attn_split + p.mlp_split) / t + p.attn_rep + p.mlp_rep;
}

int64_t wl_layer_expert_params(const wl_model *m, const wl_strategy *st, int layer)
{
    if (!wl_model_is_moe_layer(m, layer))
        return 0;
    int64_t h = m->hidden, ef = m->moe_cfg.expert_ffn, fc1 = wl_model_fc1_out(m, ef), b = !m->no_bias;
    int64_t one = (h * fc1 + ef * h + b * fc1) / st->tp + b * h; /* fc1 (and bias), fc2 split; fc2's bias whole */
    return (int64_t)(m->moe_cfg.experts / wl_strategy_ep(st)) * one;
}

/* ---- the layer --------------------------------------------------------- */

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
    int cp;                                    /* context parallelism: the attention core is a ring of cp steps */
    uint32_t cp_off, cp_off_b;                 /* a step on another rank's K/V (step 0 is attn, attn_b) */
    uint32_t cp_fix[2], cp_acc[2];             /* merging a step's result: step 0, a later step */
    uint32_t cp_kv_send, cp_kv_recv;           /* forward: a K/V chunk pair */
    uint32_t cp_kvb_send[3], cp_kvb_recv[3];   /* backward: K/V, K/V + dK/dV, dK/dV */
    uint32_t cp_buf_f, cp_unbuf_f, cp_buf_b, cp_unbuf_b; /* the ring's K/V (and dK/dV) buffers */
    /* an MoE layer's MLP block (moe_payloads): router, permutation, the
     * all-to-alls, the experts as grouped GEMMs, the shared expert */
    int moe, shared;
    uint32_t router, route, disp, efc1, eact, efc2, comb, unperm, sfc1, sact, sfc2;
    uint32_t unperm_b, comb_b, efc2_dg, efc2_wg, eact_b, efc1_dg, efc1_wg, disp_b, perm_b, sfc2_dg, sfc2_wg, sact_b,
        sfc1_dg, sfc1_wg, router_dg, router_wg;
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
    int sub;                                   /* sub-batches per micro-batch (1 or 2) */
    wl_opset main, main_h, cut, cut_h;            /* after / before the cut, whole and half batch */
    wl_opset moe;                                 /* an MoE layer (schedule=megatron only) */
    wl_tess T;
    wl_tpo O;                                     /* tp_overlap_comm */
    int nranks;
    wl_rank_comms *rc;                            /* [nranks], -2 = not created */
    int rc_shared;                             /* rc belongs to the parent layer */
    struct wl_layer *norc;                     /* the same schedule without recompute
                                                * (WL_LAYER_NO_RECOMPUTE), or NULL */
};

/* The FFN activation's element-wise kernels, in elements of s·b·ffn/t read
 * plus written: gelu and squared-relu read fc1's output and write fc2's input
 * (2), their backward reads the input and the gradient and writes the
 * gradient (3); swiglu reads gate and up and writes their product (3), its
 * backward reads gate, up and the gradient and writes both gradients (5). */
typedef struct wl_ffn_act {
    const char *name, *bwd_name;
    int64_t fwd, bwd;
} wl_ffn_act;

static wl_ffn_act wl_ffn_act_of(const wl_model *m)
{
    static const wl_ffn_act acts[WL_FFN_COUNT] = {
        [WL_FFN_GELU] = {"gelu", "gelu_bwd", 2, 3},
        [WL_FFN_SWIGLU] = {"swiglu", "swiglu_bwd", 3, 5},
        [WL_FFN_SQRELU] = {"squared_relu", "squared_relu_bwd", 2, 3},
    };
    return acts[(unsigned)m->ffn_type < WL_FFN_COUNT ? m->ffn_type : WL_FFN_GELU];
}

/* The attention core of b sequences with `heads` query and `kvh` K/V heads
 * on this rank: unfused (Megatron's baddbmm, softmax, dropout and bmm; the
 * backward as the forward shape with the batch doubled: dQ, dK, dV and
 * d(probabilities) are twice the forward's FLOPs), or fused FlashAttention
 * kernels (causal: a decoder's mask; HBM traffic of the forward: Q, K, V,
 * O and the fp32 log-sum-exp; of the backward: Q, K, V, O, dO read, dQ, dK,
 * dV written, the log-sum-exp and the dO·O row sums). */
static void flash_pair(sim_schedule *s, const wl_strategy *st, int64_t b, int64_t heads, int64_t kvh, int64_t seq,
                       int64_t hd, int causal, const char *name, uint32_t *fwd, uint32_t *bwd)
{
    int64_t e = 2, qo = b * seq * heads * hd * e, kv = b * seq * kvh * hd * e, rows = b * heads * seq * 4;
    char nb[48];
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.dtype = (uint8_t)wl_elem_dtype(st); /* fp8 training keeps attention in bf16 */
    p.m = heads;
    p.n = seq;
    p.k = hd;
    p.batch = b;
    p.tag = (int8_t)causal;
    p.algo = (uint8_t)wl_attn_impl(st->attn);
    p.sub = SIM_KERNEL_FLASH_FWD;
    p.name = sim_sched_str(s, name);
    p.bytes = 2 * qo + 2 * kv + rows;
    *fwd = sim_sched_payload(s, &p);
    snprintf(nb, sizeof nb, "%s_bwd", name);
    p.sub = SIM_KERNEL_FLASH_BWD;
    p.name = sim_sched_str(s, nb);
    p.bytes = 4 * qo + 4 * kv + 3 * rows;
    *bwd = sim_sched_payload(s, &p);
}

static void wl_opset_attn(sim_schedule *s, const wl_strategy *st, int64_t b, int64_t heads, int64_t kvh,
                          int64_t seq, int64_t hd, wl_opset *o)
{
    sim_dtype dt = wl_elem_dtype(st);
    if (!st->flash) {
        o->attn = wl_pay_kernel(s, "attn", SIM_KERNEL_ATTENTION, heads, seq, hd, b, 0, dt);
        o->attn_b = wl_pay_kernel(s, "attn_bwd", SIM_KERNEL_ATTENTION, heads, seq, hd, 2 * b, 0, dt);
        return;
    }
    flash_pair(s, st, b, heads, kvh, seq, hd, 1, "flash_attn", &o->attn, &o->attn_b);
}

/* Context parallelism's p2p ring (Transformer Engine's
 * AttnFuncWithCPAndKVP2P, transformer_engine/pytorch/attention/
 * dot_product_attention/context_parallel.py at NVIDIA/TransformerEngine
 * d0067d0d, read, not copied).  A rank holds query chunks i and 2cp−1−i of
 * c = s/(2cp) tokens each (s/cp = 2c here, `ls`), and meets every rank's K/V
 * in cp steps: step 0 its own, causal over its 2c tokens (o->attn); every
 * other step a block that the causal mask cuts in half, both query chunks
 * against the first K/V chunk or the second query chunk against both: 2c²
 * scores per head either way, priced as 2b sequences of c tokens, non-causal
 * (the same FLOPs; the second form's K/V loop is 2c long, so its kernel
 * efficiency is slightly underestimated).  A step's transfer is the K/V
 * chunk pair (b·2c·2·kv_heads/t·head_dim, 16-bit), forward to the next rank;
 * backward to the previous one, with the dK/dV accumulated so far: K/V alone
 * at step 0, K/V and dK/dV in the middle steps, dK/dV alone at the last
 * (which brings each rank its own gradients home).  Ring memory: the forward
 * holds the concatenated local K/V and the chunk being received (2 K/V);
 * the backward also the dK/dV being sent and received (4 K/V). */
static void cp_payloads(sim_schedule *s, const wl_strategy *st, int64_t b, int64_t heads, int64_t kvh, int64_t ls,
                        int64_t hd, wl_opset *o)
{
    o->cp = wl_strategy_cp(st);
    if (o->cp == 1 || !st->flash)
        return;
    flash_pair(s, st, 2 * b, heads, kvh, ls / 2, hd, 0, "flash_attn_cp", &o->cp_off, &o->cp_off_b);
    /* merging the steps (element-wise, per step): forward, the output
     * rescaled by the log-sum-exp and added into an fp32 accumulator (step
     * 0: bf16 read, fp32 written, and at the end the cast back to bf16, 4 + 2;
     * later steps: bf16 read, fp32 read and written); backward, dQ and dK/dV
     * added into theirs (bf16 read twice, written once).  A rank merges the
     * whole output for the steps at or below its CP index and only the
     * second half for the others (the causal mask): later steps are priced
     * at the CP group's average, 3/4 of the whole. */
    int64_t qe = b * ls * heads * hd, kve = b * ls * 2 * kvh * hd;
    sim_dtype dt = wl_elem_dtype(st);
    o->cp_fix[0] = wl_pay_elem(s, "cp_out_correction", (2 + 4 + 4 + 2) * qe, dt);
    o->cp_fix[1] = wl_pay_elem(s, "cp_out_correction", (2 + 4 + 4) * qe * 3 / 4, dt);
    o->cp_acc[0] = wl_pay_elem(s, "cp_grad_accum", (2 + 2) * (qe + kve), dt);
    o->cp_acc[1] = wl_pay_elem(s, "cp_grad_accum", (2 + 2 + 2) * (qe + kve) * 3 / 4, dt);
    int64_t kv = b * ls * 2 * kvh * hd * 2;
    o->cp_kv_send = wl_pay_p2p(s, SIM_OP_SEND, "cp_kv_send", kv, WL_TAG_CP_FWD);
    o->cp_kv_recv = wl_pay_p2p(s, SIM_OP_RECV, "cp_kv_recv", kv, WL_TAG_CP_FWD);
    o->cp_kvb_send[0] = wl_pay_p2p(s, SIM_OP_SEND, "cp_kv_send", kv, WL_TAG_CP_BWD);
    o->cp_kvb_recv[0] = wl_pay_p2p(s, SIM_OP_RECV, "cp_kv_recv", kv, WL_TAG_CP_BWD);
    o->cp_kvb_send[1] = wl_pay_p2p(s, SIM_OP_SEND, "cp_kv_dkv_send", 2 * kv, WL_TAG_CP_BWD);
    o->cp_kvb_recv[1] = wl_pay_p2p(s, SIM_OP_RECV, "cp_kv_dkv_recv", 2 * kv, WL_TAG_CP_BWD);
    o->cp_kvb_send[2] = wl_pay_p2p(s, SIM_OP_SEND, "cp_dkv_send", kv, WL_TAG_CP_BWD);
    o->cp_kvb_recv[2] = wl_pay_p2p(s, SIM_OP_RECV, "cp_dkv_recv", kv, WL_TAG_CP_BWD);
    o->cp_buf_f = wl_pay_mem(s, "cp_ring", SIM_MEM_BUFFERS, 2 * kv);
    o->cp_unbuf_f = wl_pay_mem(s, "cp_ring", SIM_MEM_BUFFERS, -2 * kv);
    o->cp_buf_b = wl_pay_mem(s, "cp_ring", SIM_MEM_BUFFERS, 4 * kv);
    o->cp_unbuf_b = wl_pay_mem(s, "cp_ring", SIM_MEM_BUFFERS, -4 * kv);
}

/* Rotary position embeddings (Su et al. 2021; Megatron-Core's
 * apply_rotary_pos_emb): Q and K rotated after the QKV projection, read and
 * written once (qk = elements of Q and K on this rank), and the same on
 * their gradients in backward.  ALiBi needs no kernel of its own: its bias
 * is added inside the attention scores' GEMM (BLOOM's baddbmm over a
 * [b·heads, 1, s] bias) or the fused kernel, a negligible b·heads·s read. */
static void wl_opset_rope(sim_schedule *s, const wl_model *m, int64_t qk, int64_t d, sim_dtype dt, wl_opset *o)
{
    o->rope = m->position == WL_POS_ROPE;
    if (!o->rope)
        return;
    o->rope_f = wl_pay_elem(s, "rope", 2 * qk * d, dt);
    o->rope_b = wl_pay_elem(s, "rope_bwd", 2 * qk * d, dt);
}

/* FP8 training (Transformer Engine, per-tensor scaling): the tensors entering
 * an FP8 GEMM are cast with their amax taken, 2 bytes read and 1 + 1 written
 * (the FP8 tensor and its transpose for the other GEMM of the pair).  TE
 * fuses the casts of the norm outputs (QKV's and fc1's inputs) and of the
 * activation's output (fc2's input) into those kernels, which then write FP8
 * instead of bf16: no extra traffic.  Two casts stand alone: the attention
 * output before the projection (forward, `in` elements) and the attention's
 * input gradient before the QKV dgrad (backward, `qkv_grad` elements). */
static void wl_opset_fp8(sim_schedule *s, const wl_strategy *st, int64_t in, int64_t qkv_grad, wl_opset *o)
{
    o->fp8 = st->dtype == SIM_DTYPE_FP8;
    if (!o->fp8)
        return;
    o->cast_f = wl_pay_elem(s, "fp8_cast", 4 * in, SIM_DTYPE_BF16);
    o->cast_b = wl_pay_elem(s, "fp8_cast_grad", 4 * qkv_grad, SIM_DTYPE_BF16);
}

static void wl_opset_build(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t,
                        int sub, wl_opset *o)
{
    /* dtype=fp8 (Transformer Engine): the GEMMs in FP8, everything else bf16 */
    sim_dtype gdt = st->dtype, dt = wl_elem_dtype(st);
    int64_t sb = wl_local_seq(m, st) * b, h = m->hidden, f = m->ffn, d = wl_layer_act_bytes(st);
    int64_t sbhd = sb * h * d, rt = st->sp ? t : 1; /* sequence parallel: element-wise work on s/t tokens */
    int64_t qkv = wl_model_qkv_out(m), fc1 = wl_model_fc1_out(m, f);
    wl_ffn_act act = wl_ffn_act_of(m);
    memset(o, 0, sizeof *o);
    o->t = t;
    o->b = b;
    o->ln1 = wl_pay_elem(s, "ln1", 2 * sbhd / rt, dt);
    o->qkv = wl_pay_gemm(s, "qkv", sb, qkv / t, h, gdt);
    /* attention core per TP rank: batch=b, m=heads/t, n=s, k=head_dim */
    wl_opset_attn(s, st, b, m->heads / t, wl_model_kv_heads(m) / t, wl_local_seq(m, st), h / m->heads, o);
    cp_payloads(s, st, b, m->heads / t, wl_model_kv_heads(m) / t, wl_local_seq(m, st), h / m->heads, o);
    o->proj = wl_pay_gemm(s, "proj", sb, h, h / t, gdt);
    o->post_attn = wl_pay_elem(s, "post_attn", 6 * sbhd / rt, dt); /* bias + dropout + residual + LN2 */
    o->fc1 = wl_pay_gemm(s, "fc1", sb, fc1 / t, h, gdt);
    o->gelu = wl_pay_elem(s, act.name, act.fwd * sb * (f / t) * d, dt);
    o->fc2 = wl_pay_gemm(s, "fc2", sb, h, f / t, gdt);
    o->post_mlp = wl_pay_elem(s, "post_mlp", 4 * sbhd / rt, dt); /* bias + dropout + residual */

    /* FP8: the gradients entering fc2's and the projection's backward are cast
     * (and transposed) for their FP8 GEMMs, read 2 bytes and written 1 + 1,
     * fused here into the kernels that produce them (TE fuses them with the
     * dgelu and norm backwards likewise); the activation's backward writes
     * fc1's gradient in FP8 in place of bf16 */
    int64_t cast = st->dtype == SIM_DTYPE_FP8 ? 2 * sbhd : 0;
    o->post_mlp_b = wl_pay_elem(s, "post_mlp_bwd", 4 * sbhd / rt + cast, dt);
    o->fc2_dg = wl_pay_gemm(s, "fc2_dgrad", sb, f / t, h, gdt);
    o->fc2_wg = wl_pay_gemm(s, "fc2_wgrad", f / t, h, sb, gdt);
    o->gelu_b = wl_pay_elem(s, act.bwd_name, act.bwd * sb * (f / t) * d, dt);
    o->fc1_dg = wl_pay_gemm(s, "fc1_dgrad", sb, h, fc1 / t, gdt);
    o->fc1_wg = wl_pay_gemm(s, "fc1_wgrad", h, fc1 / t, sb, gdt);
    o->post_attn_b = wl_pay_elem(s, "post_attn_bwd", 8 * sbhd / rt + cast, dt);
    o->proj_dg = wl_pay_gemm(s, "proj_dgrad", sb, h / t, h, gdt);
    o->proj_wg = wl_pay_gemm(s, "proj_wgrad", h / t, h, sb, gdt);
    wl_opset_rope(s, m, sb * (qkv - h) / 2 / t + sb * h / t, d, dt, o);
    wl_opset_fp8(s, st, sb * h / t, sb * qkv / t, o);
    o->qkv_dg = wl_pay_gemm(s, "qkv_dgrad", sb, h, qkv / t, gdt);
    o->qkv_wg = wl_pay_gemm(s, "qkv_wgrad", h, qkv / t, sb, gdt);
    o->ln1_b = wl_pay_elem(s, "ln1_bwd", 3 * sbhd / rt, dt);

    o->ar = wl_pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    o->ag = wl_pay_coll(s, "sp_allgather", SIM_COLL_ALLGATHER, sbhd);
    o->rs = wl_pay_coll(s, "sp_reducescatter", SIM_COLL_REDUCESCATTER, sbhd);
    o->proj_h = wl_pay_gemm(s, "proj", sb / 2, h, h / t, gdt);
    o->fc2_h = wl_pay_gemm(s, "fc2", sb / 2, h, f / t, gdt);
    o->qkv_dg_h = wl_pay_gemm(s, "qkv_dgrad", sb / 2, h, qkv / t, gdt);
    o->fc1_dg_h = wl_pay_gemm(s, "fc1_dgrad", sb / 2, h, fc1 / t, gdt);
    o->ar_h = wl_pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd / 2);
    o->gather = wl_pay_coll(s, "cut_allgather", SIM_COLL_ALLGATHER, sbhd);

    /* memory effects: the micro-batch's kept bytes (allocated once per layer,
     * whatever the sub-batches) and what recomputation rebuilds */
    wl_strategy one = *st;
    one.mb = (int)(b * sub);
    one.tp = (int)t;
    one.tp_cut_tp = one.tp_cut_layers = 0;
    int64_t kept, tr;
    wl_layer_memory(m, &one, 0, &kept, &tr);
    wl_actsz z = wl_act_sizes(m, b, t, 0, st);
    o->keep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, kept);
    o->unkeep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -kept);
    o->tr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, tr);
    o->untr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -tr);
    o->unboth = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -(kept + tr));
    o->blk_attn = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, z.attn);
    o->unblk_attn = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -z.attn);
    o->blk_mlp = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, z.mlp);
    o->unblk_mlp = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -z.mlp);
}

/* An MoE layer's payloads on top of a dense wl_opset (Megatron-Core's MoELayer
 * with the all-to-all token dispatcher, megatron/core/transformer/moe/
 * {router,token_dispatcher,experts}.py, read, not copied): the router GEMM
 * (h -> E, in the activations' dtype) and its softmax / top-k; permuting the
 * sb tokens into T token-expert rows; the dispatch all-to-all of the T rows
 * (each EP rank keeps 1/ep, the rest crosses the network: an even all-to-all
 * under uniform routing); the local experts as grouped GEMMs, one batch entry
 * per local expert of T/(E/ep) rows, split over tp like a dense MLP; the
 * combine all-to-all back; un-permuting with the routing weights.  The
 * shared expert is a dense MLP of shared_ffn on all sb tokens. */
static void wl_opset_moe(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t, wl_opset *o)
{
    const wl_moe *x = &m->moe_cfg;
    sim_dtype gdt = st->dtype, dt = wl_elem_dtype(st);
    int64_t sb = wl_local_seq(m, st) * b, h = m->hidden, d = wl_layer_act_bytes(st), E = x->experts;
    int64_t el = E / wl_strategy_ep(st), T, peer;
    wl_strategy one = *st;
    one.mb = (int)b;
    wl_layer_moe_tokens(m, &one, &T, &peer);
    int64_t rows = (T + el - 1) / el, ef = x->expert_ffn, fc1 = wl_model_fc1_out(m, ef);
    wl_ffn_act act = wl_ffn_act_of(m);
    o->moe = 1;
    o->router = wl_pay_gemm(s, "router", sb, E, h, dt);
    o->route = wl_pay_elem(s, "router_topk_permute", 2 * sb * E * 4 + (sb + T) * h * d, dt);
    o->disp = wl_pay_coll(s, "moe_dispatch", SIM_COLL_ALLTOALL, peer * wl_strategy_ep(st));
    o->efc1 = wl_pay_kernel(s, "expert_fc1", SIM_KERNEL_GEMM, rows, fc1 / t, h, el, 0, gdt);
    o->eact = wl_pay_elem(s, act.name, act.fwd * T * (ef / t) * d, dt);
    o->efc2 = wl_pay_kernel(s, "expert_fc2", SIM_KERNEL_GEMM, rows, h, ef / t, el, 0, gdt);
    o->comb = wl_pay_coll(s, "moe_combine", SIM_COLL_ALLTOALL, peer * wl_strategy_ep(st));
    o->unperm = wl_pay_elem(s, "unpermute", (sb + T) * h * d + T * 4, dt);
    o->unperm_b = wl_pay_elem(s, "unpermute_bwd", (sb + 2 * T) * h * d + T * 4, dt);
    o->comb_b = wl_pay_coll(s, "moe_combine_bwd", SIM_COLL_ALLTOALL, peer * wl_strategy_ep(st));
    o->efc2_dg = wl_pay_kernel(s, "expert_fc2_dgrad", SIM_KERNEL_GEMM, rows, ef / t, h, el, 0, gdt);
    o->efc2_wg = wl_pay_kernel(s, "expert_fc2_wgrad", SIM_KERNEL_GEMM, ef / t, h, rows, el, 0, gdt);
    o->eact_b = wl_pay_elem(s, act.bwd_name, act.bwd * T * (ef / t) * d, dt);
    o->efc1_dg = wl_pay_kernel(s, "expert_fc1_dgrad", SIM_KERNEL_GEMM, rows, h, fc1 / t, el, 0, gdt);
    o->efc1_wg = wl_pay_kernel(s, "expert_fc1_wgrad", SIM_KERNEL_GEMM, h, fc1 / t, rows, el, 0, gdt);
    o->disp_b = wl_pay_coll(s, "moe_dispatch_bwd", SIM_COLL_ALLTOALL, peer * wl_strategy_ep(st));
    o->perm_b = wl_pay_elem(s, "permute_bwd", (sb + T) * h * d, dt);
    o->router_dg = wl_pay_gemm(s, "router_dgrad", sb, h, E, dt);
    o->router_wg = wl_pay_gemm(s, "router_wgrad", h, E, sb, dt);
    int64_t sf = x->shared_ffn, sfc1 = wl_model_fc1_out(m, sf);
    o->shared = sf > 0;
    if (o->shared) {
        o->sfc1 = wl_pay_gemm(s, "shared_fc1", sb, sfc1 / t, h, gdt);
        o->sact = wl_pay_elem(s, act.name, act.fwd * sb * (sf / t) * d, dt);
        o->sfc2 = wl_pay_gemm(s, "shared_fc2", sb, h, sf / t, gdt);
        o->sfc2_dg = wl_pay_gemm(s, "shared_fc2_dgrad", sb, sf / t, h, gdt);
        o->sfc2_wg = wl_pay_gemm(s, "shared_fc2_wgrad", sf / t, h, sb, gdt);
        o->sact_b = wl_pay_elem(s, act.bwd_name, act.bwd * sb * (sf / t) * d, dt);
        o->sfc1_dg = wl_pay_gemm(s, "shared_fc1_dgrad", sb, h, sfc1 / t, gdt);
        o->sfc1_wg = wl_pay_gemm(s, "shared_fc1_wgrad", h, sfc1 / t, sb, gdt);
    }
    /* the memory effects of an MoE layer's activations */
    int64_t kept, tr;
    wl_layer_memory(m, &one, m->moe_cfg.first, &kept, &tr);
    o->keep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, kept);
    o->unkeep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -kept);
    o->tr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, tr);
    o->untr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -tr);
    o->unboth = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -(kept + tr));
}

/* SUMMA payloads of one linear [K → N] on a q×q×d grid, per rank: A block
 * [M/(dq), K/q], B block [K/q, N/q] (papers.md Sec. 4.2-4.3). */
static void build_tlin(sim_schedule *s, const char *name, int64_t M, int64_t K, int64_t N, int q, int dd,
                       sim_dtype dt, int64_t d, wl_tlin *o)
{
    char buf[64];
    int64_t Mq = M / ((int64_t)dd * q), Kq = K / q, Nq = N / q;
    snprintf(buf, sizeof buf, "%s", name);
    o->gemm = wl_pay_gemm(s, buf, Mq, Nq, Kq, dt);
    snprintf(buf, sizeof buf, "%s_dgrad", name);
    o->dgrad = wl_pay_gemm(s, buf, Mq, Kq, Nq, dt);
    snprintf(buf, sizeof buf, "%s_wgrad", name);
    o->wgrad = wl_pay_gemm(s, buf, Kq, Nq, Mq, dt);
    for (int i = 0; i < q && i < 8; i++) {
        sim_payload p;
        memset(&p, 0, sizeof p);
        p.kind = SIM_OP_COLLECTIVE;
        p.algo = SIM_ALGO_AUTO;
        p.root = i;
        p.sub = SIM_COLL_BROADCAST;
        p.name = sim_sched_str(s, "summa_bcast_a");
        p.bytes = Mq * Kq * d;
        o->bc_a[i] = sim_sched_payload(s, &p);
        p.name = sim_sched_str(s, "summa_bcast_b");
        p.bytes = Kq * Nq * d;
        o->bc_b[i] = sim_sched_payload(s, &p);
        p.sub = SIM_COLL_REDUCE;
        p.name = sim_sched_str(s, "summa_reduce_da");
        p.bytes = Mq * Kq * d;
        o->red_da[i] = sim_sched_payload(s, &p);
        p.name = sim_sched_str(s, "summa_reduce_db");
        p.bytes = Kq * Nq * d;
        o->red_db[i] = sim_sched_payload(s, &p);
        if (i == 0) {
            p.sub = SIM_COLL_BROADCAST;
            p.name = sim_sched_str(s, "bias_bcast");
            p.bytes = Nq * d;
            o->bias_bc = sim_sched_payload(s, &p);
            p.sub = SIM_COLL_REDUCE;
            p.name = sim_sched_str(s, "bias_reduce");
            o->bias_red = sim_sched_payload(s, &p);
        }
    }
}

/* A GEMM payload with m rows instead of its own. */
static uint32_t gemm_rows(sim_schedule *s, uint32_t whole, int64_t m)
{
    sim_payload p = s->payloads[whole];
    p.m = m;
    return sim_sched_payload(s, &p);
}

/* The chunks of tp_overlap_comm (Transformer Engine's defaults in
 * initialize_ub): the ring-exchange GEMMs (qkv/fc1 forward, proj/fc2
 * dgrad) in tp chunks of s·b/t tokens, the pipelined row-parallel GEMMs
 * (proj/fc2 forward) in WL_TPO_SPLITS chunks of tokens, each followed by the
 * reduce-scatter of its output. */
static void build_tpo(sim_schedule *s, const wl_model *m, const wl_strategy *st, const wl_opset *o, wl_tpo *O)
{
    int64_t sb = wl_local_seq(m, st) * st->mb, t = st->tp, sbhd = sb * m->hidden * wl_layer_act_bytes(st);
    O->qkv = gemm_rows(s, o->qkv, sb / t);
    O->fc1 = gemm_rows(s, o->fc1, sb / t);
    O->fc2_dg = gemm_rows(s, o->fc2_dg, sb / t);
    O->proj_dg = gemm_rows(s, o->proj_dg, sb / t);
    for (int i = 0; i < WL_TPO_SPLITS; i++) {
        O->proj[i] = gemm_rows(s, o->proj, sb / WL_TPO_SPLITS);
        O->fc2[i] = gemm_rows(s, o->fc2, sb / WL_TPO_SPLITS);
        O->rs[i] = wl_pay_coll(s, "sp_reducescatter", SIM_COLL_REDUCESCATTER, sbhd / WL_TPO_SPLITS);
    }
    O->send = wl_pay_p2p(s, SIM_OP_SEND, "tp_ring_send", sbhd / t, WL_TAG_TP_RING);
    O->recv = wl_pay_p2p(s, SIM_OP_RECV, "tp_ring_recv", sbhd / t, WL_TAG_TP_RING);
}

/* Context parallelism (Megatron-Core, workloads/README.md "Context
 * parallelism"): the sequence in 2·cp chunks, two per rank; the ring's
 * attention needs the fused kernels and the Megatron layer schedule. */
int wl_layer_check_moe(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    const wl_moe *x = &m->moe_cfg;
    int t = st->tp, ep = wl_strategy_ep(st);
    if (!m->moe)
        return ep > 1 ? sim_errf(err, "strategy: ep=%d: model %s has no mixture-of-experts layers (no \"moe\" object) "
                                 "to split over expert-parallel ranks", ep, m->name) : 0;
    if (st->schedule != WL_TP_MEGATRON || st->tp_overlap_comm || st->tp_cut_tp)
        return sim_errf(err, "model %s: MoE layers are modelled with schedule=megatron (with or without sp), without "
                        "tp_overlap_comm or tp_cut; got schedule=%s%s%s", m->name, wl_tp_schedule_name(st->schedule),
                        st->tp_overlap_comm ? ", tp_overlap_comm=1" : "", st->tp_cut_tp ? ", tp_cut" : "");
    if (st->recompute == WL_RECOMPUTE_OASES)
        return sim_errf(err, "model %s: recompute=oases is not modelled for MoE layers; use none, selective or full",
                        m->name);
    if (x->experts % ep)
        return sim_errf(err, "strategy: ep=%d does not divide the %d experts of %s (each EP rank holds experts/ep "
                        "whole experts, Megatron-Core asserts num_moe_experts %% expert_model_parallel_size == 0)",
                        ep, x->experts, m->name);
    if (x->expert_ffn % t || x->shared_ffn % t)
        return sim_errf(err, "tp=%d does not divide the expert FFN size %d (moe.expert_ffn)%s of %s: expert tensor "
                        "parallelism splits each expert's FFN over the TP ranks", t, x->expert_ffn,
                        x->shared_ffn ? " or the shared expert's (moe.shared_ffn)" : "", m->name);
    return 0;
}

int wl_layer_check_cp(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    int cp = wl_strategy_cp(st);
    if (cp == 1)
        return 0;
    long long chunks = 2LL * cp; /* cp is only bounded by the GPU count later */
    if (m->seq % chunks)
        return sim_errf(err, "strategy: cp=%d splits each sequence into 2·cp = %lld chunks (two per rank, for the causal "
                        "load balance), but seq %d of %s is not divisible by %lld", cp, chunks, m->seq, m->name, chunks);
    if (!st->flash)
        return sim_errf(err, "strategy: cp=%d: context parallelism runs the attention as fused (flash) kernels on "
                        "the K/V chunks of a ring (Transformer Engine); it needs attn=auto or flash with a 16-bit or "
                        "fp8 dtype on an sm80+ GPU, not the unfused attention", cp);
    return 0;
}

wl_layer *wl_layer_new(sim_schedule *s, const wl_model *m, const wl_strategy *st, sim_err *err)
{
    if (!m || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 || m->layers < 1) {
        sim_errf(err, "layer: model %s: layers, hidden, heads, ffn and seq must be positive", m ? m->name : "(null)");
        return NULL;
    }
    if (wl_strategy_check_tp(st, err) || wl_layer_check_cp(m, st, err))
        return NULL;
    if (st->tp < 1 || st->mb < 1) {
        sim_errf(err, "layer: tp and mb must be positive (got tp=%d, mb=%d)", st->tp, st->mb);
        return NULL;
    }
    int t = st->tp, q = 1;
    if (st->schedule == WL_TP_TESSERACT) {
        while (q * q * st->tess_depth < t)
            q++;
        if (q > 8) {
            sim_errf(err, "strategy: schedule=tesseract: q = %d; at most q = 8 (tp = 64·tess_depth) is supported", q);
            return NULL;
        }
        int dq = q * st->tess_depth;
        if (wl_model_kv_heads(m) % q) {
            sim_errf(err, "strategy: schedule=tesseract with q=%d: q must divide the %d K/V heads of %s (each grid "
                     "column holds whole K/V heads)", q, wl_model_kv_heads(m), m->name);
            return NULL;
        }
        if (m->heads % q || m->hidden % q || m->ffn % q || st->mb % dq) {
            sim_errf(err, "strategy: schedule=tesseract with q=%d, tess_depth=%d: q must divide the %d heads, hidden "
                     "%d and ffn %d of %s, and q·tess_depth = %d the micro-batch mb=%d (each depth slice and grid row "
                     "takes its own sequences, docs/papers.md Sec. 4.2)", q, st->tess_depth, m->heads, m->hidden, m->ffn,
                     m->name, dq, st->mb);
            return NULL;
        }
    } else if (m->heads % t || m->hidden % t || m->ffn % t) {
        sim_errf(err, "tp=%d does not divide the heads (%d), hidden size (%d) and FFN size (%d) of %s", t, m->heads,
                 m->hidden, m->ffn, m->name);
        return NULL;
    } else if (wl_model_kv_heads(m) % t) {
        sim_errf(err, "tp=%d does not divide the %d K/V heads of %s: Megatron-Core splits the query groups over "
                 "TP ranks and requires this (num_query_groups / tp, megatron/core/transformer/attention.py); "
                 "use a tp that divides %d", t, wl_model_kv_heads(m), m->name, wl_model_kv_heads(m));
        return NULL;
    }
    if (m->moe && wl_layer_check_moe(m, st, err))
        return NULL;
    int sub = uses_subbatches(st) ? 2 : 1;
    if (sub == 2 && st->mb % 2) {
        sim_errf(err, "strategy: schedule=%s splits each micro-batch into 2 sub-batches along the batch "
                 "(docs/papers.md Sec. %s): mb must be even, got mb=%d", wl_tp_schedule_name(st->schedule),
                 st->schedule == WL_TP_MERAK ? "2.2" : "1.2", st->mb);
        return NULL;
    }
    if (st->tp_cut_tp) {
        int ratio = st->tp / st->tp_cut_tp;
        if (st->tp_cut_layers >= m->layers) {
            sim_errf(err, "strategy: tp_cut=%d:%d: the cut must fall inside the %d layers of %s", st->tp_cut_layers,
                     st->tp_cut_tp, m->layers, m->name);
            return NULL;
        }
        if (st->mb % (ratio * sub)) {
            sim_errf(err, "strategy: tp_cut=%d:%d: before the cut each of the tp/%d = %d smaller TP groups takes "
                     "mb/%d of the micro-batch%s, so mb=%d must be divisible by %d", st->tp_cut_layers, st->tp_cut_tp,
                     st->tp_cut_tp, ratio, ratio, sub == 2 ? " in 2 sub-batches" : "", st->mb, ratio * sub);
            return NULL;
        }
    }
    if (st->tp_overlap_comm && wl_local_seq(m, st) * st->mb % (WL_TPO_SPLITS * t)) {
        sim_errf(err, "strategy: tp_overlap_comm=1 splits each linear's s·b = %lld tokens into tp = %d ring chunks and "
                 "%d pipelined reduce-scatter chunks: seq%s·mb must be divisible by %d",
                 (long long)(wl_local_seq(m, st) * st->mb), t, WL_TPO_SPLITS, wl_strategy_cp(st) > 1 ? "/cp" : "",
                 WL_TPO_SPLITS * t);
        return NULL;
    }
    if (st->schedule == WL_TP_MERAK && st->tp_overlap == 1 && (int64_t)m->seq * st->mb % 2) {
        sim_errf(err, "strategy: schedule=merak,tp_overlap=1 splits each linear's rows in halves: seq·mb must be even");
        return NULL;
    }
    wl_layer *L = calloc(1, sizeof *L);
    wl_rank_comms *rc = calloc((size_t)s->nranks, sizeof *rc);
    if (!L || !rc) {
        free(L);
        free(rc);
        sim_errf(err, "out of memory");
        return NULL;
    }
    L->m = *m;
    L->st = *st;
    L->sub = sub;
    L->nranks = s->nranks;
    L->rc = rc;
    for (int r = 0; r < s->nranks; r++)
        rc[r].row = rc[r].col = rc[r].dep = rc[r].small = rc[r].trans = rc[r].ring_send = rc[r].ring_recv = -2;
    wl_opset_build(s, m, st, st->mb, t, 1, &L->main);
    if (sub == 2)
        wl_opset_build(s, m, st, st->mb / 2, t, 2, &L->main_h);
    else
        L->main_h = L->main;
    if (st->tp_overlap_comm)
        build_tpo(s, m, st, &L->main, &L->O);
    if (m->moe) {
        wl_opset_build(s, m, st, st->mb, t, 1, &L->moe);
        wl_opset_moe(s, m, st, st->mb, t, &L->moe);
    }
    if (st->tp_cut_tp) {
        int64_t b2 = (int64_t)st->mb * st->tp_cut_tp / st->tp;
        wl_opset_build(s, m, st, b2, st->tp_cut_tp, 1, &L->cut);
        if (sub == 2)
            wl_opset_build(s, m, st, b2 / 2, st->tp_cut_tp, 2, &L->cut_h);
        else
            L->cut_h = L->cut;
        /* the all-gather at the cut produces the (sub-)batch of the large group */
        L->cut_h.gather = L->main_h.gather;
        L->cut.gather = L->main.gather;
    }
    if (st->schedule == WL_TP_TESSERACT) {
        wl_tess *T = &L->T;
        int64_t M = (int64_t)m->seq * st->mb, h = m->hidden, f = m->ffn, d = wl_layer_act_bytes(st);
        T->q = q;
        T->d = st->tess_depth;
        build_tlin(s, "qkv", M, h, wl_model_qkv_out(m), q, T->d, st->dtype, d, &T->qkv);
        build_tlin(s, "proj", M, h, h, q, T->d, st->dtype, d, &T->proj);
        build_tlin(s, "fc1", M, h, wl_model_fc1_out(m, f), q, T->d, st->dtype, d, &T->fc1);
        build_tlin(s, "fc2", M, f, h, q, T->d, st->dtype, d, &T->fc2);
        /* LayerNorm2p5D: sum x and sum x² over the hidden split in ROW, one
         * value per local token */
        T->ln_ar = wl_pay_coll(s, "ln_allreduce", SIM_COLL_ALLREDUCE, M / ((int64_t)T->d * q) * d);
        int64_t pw, pb, pn;
        layer_param_parts(m, &pw, &pb, &pn);
        T->grad_ar = wl_pay_coll(s, "tess_grad_allreduce", SIM_COLL_ALLREDUCE,
                                 (pw / ((int64_t)q * q) + (pb + pn) / q) *
                                     (st->dtype == SIM_DTYPE_FP32 || st->dtype == SIM_DTYPE_TF32 ? 4 : 2));
        /* the element-wise work and the attention core on the local block */
        wl_opset *o = &L->main;
        int64_t Mq = M / ((int64_t)T->d * q), sbhd = Mq * (h / q) * d;
        int64_t bl = st->mb / ((int64_t)T->d * q);
        o->ln1 = wl_pay_elem(s, "ln1", 2 * sbhd, wl_elem_dtype(st));
        wl_opset_attn(s, st, bl, m->heads / q, wl_model_kv_heads(m) / q, m->seq, h / m->heads, o);
        wl_opset_rope(s, m, Mq * ((wl_model_qkv_out(m) - h) / 2 + h) / q, d, wl_elem_dtype(st), o);
        wl_opset_fp8(s, st, Mq * (h / q), Mq * (wl_model_qkv_out(m) / q), o);
        o->post_attn = wl_pay_elem(s, "post_attn", 6 * sbhd, wl_elem_dtype(st));
        wl_ffn_act act = wl_ffn_act_of(m);
        o->gelu = wl_pay_elem(s, act.name, act.fwd * Mq * (f / q) * d, wl_elem_dtype(st));
        o->post_mlp = wl_pay_elem(s, "post_mlp", 4 * sbhd, wl_elem_dtype(st));
        o->post_mlp_b = wl_pay_elem(s, "post_mlp_bwd", 4 * sbhd, wl_elem_dtype(st));
        o->gelu_b = wl_pay_elem(s, act.bwd_name, act.bwd * Mq * (f / q) * d, wl_elem_dtype(st));
        o->post_attn_b = wl_pay_elem(s, "post_attn_bwd", 8 * sbhd, wl_elem_dtype(st));
        o->ln1_b = wl_pay_elem(s, "ln1_bwd", 3 * sbhd, wl_elem_dtype(st));
        int64_t kept, tr;
        wl_layer_memory(m, st, m->layers - 1, &kept, &tr);
        o->keep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, kept);
        o->unkeep = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -kept);
        o->tr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, tr);
        o->untr = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -tr);
        o->unboth = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -(kept + tr));
    }
    if (st->recompute != WL_RECOMPUTE_NONE &&
        (st->schedule == WL_TP_MEGATRON || st->schedule == WL_TP_MERAK || st->schedule == WL_TP_TESSERACT)) {
        wl_strategy none = *st;
        none.recompute = WL_RECOMPUTE_NONE;
        L->norc = wl_layer_new(s, m, &none, err);
        if (!L->norc) {
            wl_layer_free(L);
            return NULL;
        }
        free(L->norc->rc); /* one set of communicators for both */
        L->norc->rc = L->rc;
        L->norc->rc_shared = 1;
    }
    return L;
}

void wl_layer_free(wl_layer *L)
{
    if (!L)
        return;
    wl_layer_free(L->norc);
    if (!L->rc_shared)
        free(L->rc);
    free(L);
}

static sim_tags wl_tags(int layer, int micro, int sub, sim_phase ph)
{
    sim_tags t = {layer, micro, (int8_t)sub, (uint8_t)ph};
    return t;
}

/* ---- communicators ----------------------------------------------------- */

/* The members of this rank's TP group, from its TP communicator. */
static const sim_comm *wl_tp_group(const wl_cursor *c, int *idx)
{
    const sim_comm *g = &c->s->comms[c->tp_comm];
    *idx = 0;
    for (int i = 0; i < g->nranks; i++)
        if (g->ranks[i] == c->rank)
            *idx = i;
    return g;
}

/* Creates the communicator of the members of the TP group whose index i
 * satisfies (i / stride) % n == varying and the other coordinates equal
 * those of index `me`; stores it in field (offset) of every member. */
static int wl_sub_comm(wl_layer *L, wl_cursor *c, int me, int stride, int n, const char *kind,
                    size_t field)
{
    int *slot = (int *)((char *)&L->rc[c->rank] + field);
    if (*slot != -2)
        return *slot;
    /* the TP group is looked up here: adding a communicator moves the array */
    const sim_comm *g = &c->s->comms[c->tp_comm];
    int *ranks = n > 0 ? malloc(sizeof(int) * (size_t)n) : NULL, k = 0;
    if (!ranks)
        return -1; /* out of memory: the schedule check reports the bad communicator */
    int base = me - (me / stride % n) * stride;
    for (int v = 0; v < n; v++)
        ranks[k++] = g->ranks[base + v * stride];
    char name[64];
    snprintf(name, sizeof name, "%s.r%d", kind, ranks[0]);
    int id = sim_sched_comm(c->s, name, ranks, k);
    for (int v = 0; v < k; v++)
        *(int *)((char *)&L->rc[ranks[v]] + field) = id;
    free(ranks);
    return id;
}

/* Cut-point groups: within a TP group of t ranks, t/t2 consecutive groups of
 * t2 ranks run the layers before the cut, each on its own slice of the
 * micro-batch; the all-gather at the cut joins the ranks with the same index
 * in each small group (stride t2). */
static void cut_comms(wl_layer *L, wl_cursor *c, int *small, int *trans)
{
    int me;
    wl_tp_group(c, &me);
    int t2 = L->st.tp_cut_tp, ratio = L->st.tp / t2;
    *small = t2 > 1 ? wl_sub_comm(L, c, me, 1, t2, "tpcut", offsetof(wl_rank_comms, small)) : -1;
    *trans = wl_sub_comm(L, c, me, t2, ratio, "tpgather", offsetof(wl_rank_comms, trans));
}

/* ---- emit helpers ------------------------------------------------------ */

/* A GEMM that reads the weights of linear `lin`: through the cursor's hook
 * (OSDP's operator splitting, gpt.c) when there is one. */
static uint32_t wl_emit_linear(wl_cursor *c, int layer, wl_linear lin, uint32_t pay, sim_tags t)
{
    return c->linear ? c->linear(c, layer, lin, pay, t) : wl_cursor_comp(c, pay, t);
}

/* The CP ring's forward (cp_payloads): in step i the rank computes on the
 * K/V chunk pair in hand while forwarding it to the next rank and receiving
 * the next pair from the previous one, on the cursor's CP streams. */
static void cp_ring_fwd(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    int n = o->cp;
    uint32_t held = c->last_comp, got = UINT32_MAX;
    wl_cursor_mem(c, o->cp_buf_f, t);
    for (int i = 0; i < n; i++) {
        if (i + 1 < n) {
            sim_sched_add(c->s, c->scp_send, o->cp_kv_send, c->cp_next, t, &held, 1);
            got = sim_sched_add(c->s, c->scp_recv, o->cp_kv_recv, c->cp_prev, t, NULL, 0);
        }
        wl_cursor_comp(c, i == 0 ? o->attn : o->cp_off, t);
        if (i + 1 < n) {
            wl_cursor_pend(c, got);
            held = got;
        }
    }
    for (int i = 0; i < n; i++) /* TE merges the steps' outputs after the loop */
        wl_cursor_comp(c, o->cp_fix[i > 0], t);
    wl_cursor_mem(c, o->cp_unbuf_f, t);
}

/* The backward: the K/V pair travels the other way (to the previous rank)
 * and, after step 0, with the dK/dV accumulated by the step before; a step's
 * gradients are added to those received, and the last transfer carries
 * dK/dV alone (each rank's own, home again). */
static void cp_ring_bwd(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    int n = o->cp;
    uint32_t held = c->last_comp;
    wl_cursor_mem(c, o->cp_buf_b, t);
    for (int i = 0; i < n; i++) {
        int k = i == 0 ? 0 : i + 1 < n ? 1 : 2;
        uint32_t deps[2] = {held, c->last_comp};
        sim_sched_add(c->s, c->scp_send, o->cp_kvb_send[k], c->cp_prev, t, deps, held == c->last_comp ? 1 : 2);
        uint32_t got = sim_sched_add(c->s, c->scp_recv, o->cp_kvb_recv[k], c->cp_next, t, NULL, 0);
        wl_cursor_comp(c, i == 0 ? o->attn_b : o->cp_off_b, t);
        wl_cursor_pend(c, got); /* the dK/dV received join this step's */
        wl_cursor_comp(c, o->cp_acc[i > 0], t);
        held = got;
    }
    wl_cursor_mem(c, o->cp_unbuf_b, t);
}

/* The attention core's kernels: one, or the CP ring. */
static void wl_emit_attn_kernels(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    if (o->cp > 1)
        cp_ring_fwd(c, o, t);
    else
        wl_cursor_comp(c, o->attn, t);
}

static void wl_emit_attn(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    if (o->rope)
        wl_cursor_comp(c, o->rope_f, t);
    wl_emit_attn_kernels(c, o, t);
    if (o->fp8)
        wl_cursor_comp(c, o->cast_f, t);
}

static void wl_emit_attn_bwd(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    if (o->cp > 1)
        cp_ring_bwd(c, o, t);
    else
        wl_cursor_comp(c, o->attn_b, t);
    if (o->rope)
        wl_cursor_comp(c, o->rope_b, t);
    if (o->fp8)
        wl_cursor_comp(c, o->cast_b, t);
}

/* Launches a collective of what the last kernel produced on stream `stream`;
 * nothing waits for it yet. */
static uint32_t wl_emit_launch(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t)
{
    uint32_t dep = c->last_comp;
    return sim_sched_add(c->s, stream, pay, comm, t, &dep, 1);
}

/* The same, launched by the host after it waited for collective `waited`:
 * the explicit dependency records that the two were never in flight
 * together (the stream order alone would give the same timing). */
static uint32_t wl_emit_launch_after(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t, uint32_t waited)
{
    uint32_t deps[2] = {c->last_comp, waited};
    return sim_sched_add(c->s, stream, pay, comm, t, deps, 2);
}

static int wl_tp_stream(wl_cursor *c)
{
    if (c->stp < 0)
        c->stp = sim_sched_stream_role(c->s, c->rank, "tp", SIM_ROLE_TP);
    return c->stp;
}

/* ---- Megatron 1-D and sequence parallel -------------------------------- */

/* The layer's TP communicator and payloads at its degree. */
typedef struct wl_lctx {
    const wl_opset *o;
    int comm;    /* TP communicator of the layer's degree, -1 if t == 1 */
    int64_t t;
} wl_lctx;

static wl_lctx wl_lctx_of(wl_layer *L, wl_cursor *c, int layer, int half)
{
    wl_lctx x;
    int before = L->st.tp_cut_tp && layer < L->st.tp_cut_layers;
    x.o = before ? (half ? &L->cut_h : &L->cut) : (half ? &L->main_h : &L->main);
    if (wl_model_is_moe_layer(&L->m, layer))
        x.o = &L->moe;
    x.t = x.o->t;
    x.comm = x.t == 1 ? -1 : c->tp_comm;
    if (before && x.t > 1) {
        int small, trans;
        cut_comms(L, c, &small, &trans);
        x.comm = small;
    }
    return x;
}

/* A synchronous TP collective: the next kernel waits for it. */
static void wl_emit_sync_coll(wl_cursor *c, const wl_lctx *x, uint32_t pay, sim_tags t)
{
    if (x->t == 1)
        return;
    wl_cursor_pend(c, wl_emit_launch(c, wl_tp_stream(c), pay, x->comm, t));
}

/* ---- Megatron-Core TP communication overlap (tp_overlap_comm) -----------
 * Megatron-Core's --tp-comm-overlap hands sequence parallelism's
 * all-gathers and reduce-scatters to Transformer Engine's userbuffers
 * (transformer_engine/pytorch/module/base.py initialize_ub and
 * common/comm_gemm_overlap/comm_gemm_overlap.cpp at NVIDIA/TransformerEngine
 * d0067d0d, read, not copied), with TE's default methods:
 *  - ring exchange (qkv and fc1 forward, proj and fc2 input gradients:
 *    the all-gather before a GEMM): the GEMM runs in tp chunks of s·b/t
 *    tokens; in step i a rank multiplies the chunk it holds (its own at
 *    step 0) while sending it to the next rank of the ring and receiving
 *    the next one from the previous rank, so only what a transfer takes
 *    beyond its GEMM chunk is exposed: time g + (tp-1)·max(g, c) for GEMM
 *    chunks g and transfers c;
 *  - pipeline (proj and fc2 forward: the reduce-scatter after a GEMM): the
 *    GEMM in WL_TPO_SPLITS chunks of tokens, each chunk's output
 *    reduce-scattered while the next chunk computes; the last chunk's
 *    reduce-scatter is exposed;
 *  - bulk (qkv and fc1 backward): the input all-gather beside the dgrad
 *    GEMM and the dgrad reduce-scatter beside the wgrad GEMM, which the
 *    sequence-parallel backward already does (column_bwd).
 * The GEMM chunks are priced as the smaller GEMMs they are; the transfers
 * are sends and receives between ring neighbours (on their own streams) and
 * reduce-scatters on "tp", slowed, and slowing the kernels beside them, by
 * the engine's overlap interference.  Not modelled: TE's SM margin for the
 * pipelined reduce-scatter (16 SMs taken from the GEMM) beyond that
 * interference, its atomic-GEMM variants, and the wgrad GEMMs run as
 * "external" GEMMs inside the dgrad's ring (here they follow it). */

static int ring_stream(wl_layer *L, wl_cursor *c, size_t field, const char *name)
{
    int *slot = (int *)((char *)&L->rc[c->rank] + field);
    if (*slot == -2)
        *slot = sim_sched_stream_role(c->s, c->rank, name, SIM_ROLE_TP);
    return *slot;
}

/* The all-gather before a GEMM as a ring exchange pipelined with the GEMM
 * in tp chunks (payload `chunk`). */
static void ring_ag_gemm(wl_layer *L, wl_cursor *c, uint32_t chunk, sim_tags t)
{
    int me;
    const sim_comm *g = wl_tp_group(c, &me);
    int n = g->nranks, next = g->ranks[(me + 1) % n], prev = g->ranks[(me + n - 1) % n];
    int ss = ring_stream(L, c, offsetof(wl_rank_comms, ring_send), "tp-ring-send");
    int sr = ring_stream(L, c, offsetof(wl_rank_comms, ring_recv), "tp-ring-recv");
    uint32_t held = c->last_comp, got = UINT32_MAX;
    for (int i = 0; i < n; i++) {
        if (i + 1 < n) { /* forward the chunk held, receive the next */
            sim_sched_add(c->s, ss, L->O.send, next, t, &held, 1);
            got = sim_sched_add(c->s, sr, L->O.recv, prev, t, NULL, 0);
        }
        wl_cursor_comp(c, chunk, t);
        if (i + 1 < n) {
            wl_cursor_pend(c, got);
            held = got;
        }
    }
}

/* A row-parallel GEMM in WL_TPO_SPLITS chunks, each chunk's output
 * reduce-scattered on "tp" while the next computes; the next kernel waits
 * for the last. */
static void pipe_gemm_rs(wl_cursor *c, const wl_lctx *x, const uint32_t *chunks, const uint32_t *rs, sim_tags t)
{
    uint32_t last = UINT32_MAX;
    for (int i = 0; i < WL_TPO_SPLITS; i++) {
        wl_cursor_comp(c, chunks[i], t);
        last = wl_emit_launch(c, wl_tp_stream(c), rs[i], x->comm, t);
    }
    wl_cursor_pend(c, last);
}

/* ---- MoE layers (moe_payloads) -----------------------------------------
 * Tokens are replicated over the TP group (all-gathered first under sp) and
 * each TP rank holds 1/tp of every local expert (expert tensor parallelism
 * = tp), so the all-to-alls run among the EP ranks of the same TP index and
 * the experts' (and the shared expert's) partial sums are reduced over TP
 * once, after the combine, as a dense MLP's are.  The shared expert computes
 * while the dispatch is in flight (Megatron-Core's
 * --moe-shared-expert-overlap), the weight gradients of the experts and the
 * shared expert while the dispatch's backward is. */

static int ep_stream(wl_cursor *c)
{
    if (c->sep < 0)
        c->sep = sim_sched_stream_role(c->s, c->rank, "ep", SIM_ROLE_EP);
    return c->sep;
}

static void moe_fwd(wl_layer *L, wl_cursor *c, const wl_lctx *x, sim_tags t)
{
    const wl_opset *o = x->o;
    int ep = wl_strategy_ep(&L->st) > 1;
    if (L->st.sp)
        wl_emit_sync_coll(c, x, o->ag, t);
    wl_cursor_comp(c, o->router, t);
    wl_cursor_comp(c, o->route, t);
    uint32_t disp = ep ? wl_emit_launch(c, ep_stream(c), o->disp, c->ep_comm, t) : UINT32_MAX;
    if (o->shared) {
        wl_cursor_comp(c, o->sfc1, t);
        wl_cursor_comp(c, o->sact, t);
        wl_cursor_comp(c, o->sfc2, t);
    }
    if (ep)
        wl_cursor_pend(c, disp);
    wl_cursor_comp(c, o->efc1, t);
    wl_cursor_comp(c, o->eact, t);
    wl_cursor_comp(c, o->efc2, t);
    if (ep)
        wl_cursor_pend(c, wl_emit_launch(c, ep_stream(c), o->comb, c->ep_comm, t));
    wl_cursor_comp(c, o->unperm, t);
    wl_emit_sync_coll(c, x, L->st.sp ? o->rs : o->ar, t);
}

static void moe_bwd(wl_layer *L, wl_cursor *c, const wl_lctx *x, sim_tags t)
{
    const wl_opset *o = x->o;
    int ep = wl_strategy_ep(&L->st) > 1;
    if (L->st.sp)
        wl_emit_sync_coll(c, x, o->ag, t); /* gradient of the reduce-scatter */
    wl_cursor_comp(c, o->unperm_b, t);
    if (ep)
        wl_cursor_pend(c, wl_emit_launch(c, ep_stream(c), o->comb_b, c->ep_comm, t));
    wl_cursor_comp(c, o->efc2_dg, t);
    wl_cursor_comp(c, o->efc2_wg, t);
    wl_cursor_comp(c, o->eact_b, t);
    wl_cursor_comp(c, o->efc1_dg, t);
    uint32_t a2a = ep ? wl_emit_launch(c, ep_stream(c), o->disp_b, c->ep_comm, t) : UINT32_MAX;
    wl_cursor_comp(c, o->efc1_wg, t);
    if (o->shared) {
        wl_cursor_comp(c, o->sfc2_dg, t);
        wl_cursor_comp(c, o->sfc2_wg, t);
        wl_cursor_comp(c, o->sact_b, t);
        wl_cursor_comp(c, o->sfc1_dg, t);
        wl_cursor_comp(c, o->sfc1_wg, t);
    }
    if (ep)
        wl_cursor_pend(c, a2a);
    wl_cursor_comp(c, o->perm_b, t);
    wl_cursor_comp(c, o->router_dg, t);
    if (x->t == 1) {
        wl_cursor_comp(c, o->router_wg, t);
        return;
    }
    wl_cursor_pend(c, wl_emit_launch(c, wl_tp_stream(c), L->st.sp ? o->rs : o->ar, x->comm, t));
    wl_cursor_comp_overlap(c, o->router_wg, t);
}

/* Megatron ParallelTransformerLayer.forward (megatron/model/transformer.py);
 * with sp=1 the sequence-parallel form (Korthikanti et al. 2022 Sec. 4.2.2,
 * megatron/core/tensor_parallel/layers.py): layer norms and dropouts on s/t
 * tokens, an all-gather before each column-parallel GEMM and a
 * reduce-scatter after each row-parallel one. */
static void megatron_fwd(wl_layer *L, wl_cursor *c, int layer, int micro, sim_phase ph, int alloc)
{
    wl_lctx x = wl_lctx_of(L, c, layer, 0);
    const wl_opset *o = x.o;
    sim_tags t = wl_tags(layer, micro, -1, ph);
    int sp = L->st.sp, ovl = L->st.tp_overlap_comm && x.t > 1;
    if (alloc)
        wl_cursor_mem(c, ph == SIM_PHASE_RECOMPUTE ? o->tr : o->keep, t);
    wl_cursor_comp(c, o->ln1, t);
    if (ovl) {
        ring_ag_gemm(L, c, L->O.qkv, t);
        wl_emit_attn_kernels(c, o, t);
        pipe_gemm_rs(c, &x, L->O.proj, L->O.rs, t);
        wl_cursor_comp(c, o->post_attn, t);
        ring_ag_gemm(L, c, L->O.fc1, t);
        wl_cursor_comp(c, o->gelu, t);
        pipe_gemm_rs(c, &x, L->O.fc2, L->O.rs, t);
        wl_cursor_comp(c, o->post_mlp, t);
        return;
    }
    if (sp)
        wl_emit_sync_coll(c, &x, o->ag, t);
    wl_emit_linear(c, layer, WL_LIN_QKV, o->qkv, t);
    wl_emit_attn(c, o, t);
    wl_emit_linear(c, layer, WL_LIN_PROJ, o->proj, t);
    wl_emit_sync_coll(c, &x, sp ? o->rs : o->ar, t); /* RowParallelLinear: reduce_from_tensor_model_parallel_region */
    wl_cursor_comp(c, o->post_attn, t);
    if (o->moe) {
        moe_fwd(L, c, &x, t);
    } else {
        if (sp)
            wl_emit_sync_coll(c, &x, o->ag, t);
        wl_emit_linear(c, layer, WL_LIN_FC1, o->fc1, t);
        wl_cursor_comp(c, o->gelu, t);
        wl_emit_linear(c, layer, WL_LIN_FC2, o->fc2, t);
        wl_emit_sync_coll(c, &x, sp ? o->rs : o->ar, t);
    }
    wl_cursor_comp(c, o->post_mlp, t);
}

/* Backward of a column-parallel linear's input: Megatron launches the
 * input-gradient all-reduce (reduce-scatter with sp) right after the dgrad
 * GEMM and computes the weight gradient beside it
 * (LinearWithGradAccumulationAndAsyncCommunication); with sp the saved,
 * sharded input is all-gathered again for the weight gradient, beside the
 * dgrad GEMM.  default_checkpoint (Oases' baseline, torch autograd without
 * the async path) waits for the all-reduce before the weight gradient. */
static void column_bwd(wl_layer *L, wl_cursor *c, const wl_lctx *x, uint32_t dgrad, uint32_t wgrad, sim_tags t,
                       int layer, wl_linear lin)
{
    const wl_opset *o = x->o;
    if (x->t == 1) {
        wl_emit_linear(c, layer, lin, dgrad, t);
        wl_cursor_comp(c, wgrad, t);
        return;
    }
    if (L->st.sp) {
        uint32_t dep = c->last_comp;
        uint32_t ag = sim_sched_add(c->s, wl_tp_stream(c), o->ag, x->comm, t, &dep, 1);
        wl_emit_linear(c, layer, lin, dgrad, t);
        uint32_t rs = wl_emit_launch(c, wl_tp_stream(c), o->rs, x->comm, t);
        wl_cursor_pend(c, ag);
        wl_cursor_comp(c, wgrad, t);
        wl_cursor_pend(c, rs);
        return;
    }
    wl_emit_linear(c, layer, lin, dgrad, t);
    if (L->st.schedule == WL_TP_DEFAULT_CKPT || L->st.schedule == WL_TP_OPTIM_COMM_CKPT) {
        wl_emit_sync_coll(c, x, o->ar, t);
        wl_cursor_comp(c, wgrad, t);
        return;
    }
    wl_cursor_pend(c, wl_emit_launch(c, wl_tp_stream(c), o->ar, x->comm, t));
    wl_cursor_comp_overlap(c, wgrad, t);
}

static void megatron_bwd(wl_layer *L, wl_cursor *c, int layer, int micro, int recompute)
{
    wl_lctx x = wl_lctx_of(L, c, layer, 0);
    const wl_opset *o = x.o;
    sim_tags t = wl_tags(layer, micro, -1, SIM_PHASE_BACKWARD);
    sim_tags tr = wl_tags(layer, micro, -1, SIM_PHASE_RECOMPUTE);
    wl_recompute rc = L->st.recompute;
    int sp = L->st.sp, ovl = L->st.tp_overlap_comm && x.t > 1;
    if (rc == WL_RECOMPUTE_FULL && recompute)
        megatron_fwd(L, c, layer, micro, SIM_PHASE_RECOMPUTE, 1);
    wl_cursor_comp(c, o->post_mlp_b, t);
    if (o->moe) {
        moe_bwd(L, c, &x, t);
    } else {
        if (ovl) {
            ring_ag_gemm(L, c, L->O.fc2_dg, t); /* the gradient of the reduce-scatter, gathered in a ring */
        } else {
            if (sp)
                wl_emit_sync_coll(c, &x, o->ag, t); /* gradient of the reduce-scatter */
            wl_emit_linear(c, layer, WL_LIN_FC2, o->fc2_dg, t);
        }
        wl_cursor_comp(c, o->fc2_wg, t);
        wl_cursor_comp(c, o->gelu_b, t);
        column_bwd(L, c, &x, o->fc1_dg, o->fc1_wg, t, layer, WL_LIN_FC1);
    }
    wl_cursor_comp(c, o->post_attn_b, t);
    if (ovl) {
        ring_ag_gemm(L, c, L->O.proj_dg, t);
    } else {
        if (sp)
            wl_emit_sync_coll(c, &x, o->ag, t);
        wl_emit_linear(c, layer, WL_LIN_PROJ, o->proj_dg, t);
    }
    wl_cursor_comp(c, o->proj_wg, t);
    if (rc == WL_RECOMPUTE_SELECTIVE && recompute) {
        /* selective: the attention core only (Korthikanti et al. 2022 Sec. 5) */
        wl_cursor_mem(c, o->tr, tr);
        wl_emit_attn_kernels(c, o, tr);
    }
    wl_emit_attn_bwd(c, o, t);
    column_bwd(L, c, &x, o->qkv_dg, o->qkv_wg, t, layer, WL_LIN_QKV);
    wl_cursor_comp(c, o->ln1_b, t);
    wl_cursor_mem(c, rc == WL_RECOMPUTE_FULL || rc == WL_RECOMPUTE_SELECTIVE ? o->unboth : o->unkeep, t);
}

/* ---- recompute without communication (Oases' optim_comm_checkpoint) ----
 * papers.md Sec. 1.3: the forward keeps the post-all-reduce attention and MLP
 * outputs with their residual inputs; the backward re-executes each block
 * from them just before that block's backward.  Rebuilt per sub-batch k
 * (k = -1: the whole micro-batch). */

/* RB(mlp, k): post_attn (+LN2) and the MLP forward again, then their backward
 * up to the MLP input gradient, which the caller all-reduces. */
static void rb_mlp(wl_cursor *c, const wl_opset *o, int layer, int micro, int k)
{
    sim_tags t = wl_tags(layer, micro, k, SIM_PHASE_RECOMPUTE);
    wl_cursor_mem(c, o->blk_mlp, t);
    wl_cursor_comp(c, o->post_attn, t);
    wl_cursor_comp(c, o->fc1, t);
    wl_cursor_comp(c, o->gelu, t);
    wl_cursor_comp(c, o->fc2, t);
    t.phase = SIM_PHASE_BACKWARD;
    wl_cursor_comp(c, o->fc2_dg, t);
    wl_cursor_comp(c, o->fc2_wg, t);
    wl_cursor_comp(c, o->gelu_b, t);
    wl_cursor_comp(c, o->fc1_dg, t);
    wl_cursor_comp(c, o->fc1_wg, t);
    wl_cursor_mem(c, o->unblk_mlp, t);
}

/* RB(attn, k): LN1, QKV, the attention core and the projection again, then
 * their backward up to the attention input gradient. */
static void rb_attn(wl_cursor *c, const wl_opset *o, int layer, int micro, int k)
{
    sim_tags t = wl_tags(layer, micro, k, SIM_PHASE_RECOMPUTE);
    wl_cursor_mem(c, o->blk_attn, t);
    wl_cursor_comp(c, o->ln1, t);
    wl_cursor_comp(c, o->qkv, t);
    wl_emit_attn(c, o, t);
    wl_cursor_comp(c, o->proj, t);
    t.phase = SIM_PHASE_BACKWARD;
    wl_cursor_comp(c, o->proj_dg, t);
    wl_cursor_comp(c, o->proj_wg, t);
    wl_emit_attn_bwd(c, o, t);
    wl_cursor_comp(c, o->qkv_dg, t);
    wl_cursor_comp(c, o->qkv_wg, t);
    wl_cursor_mem(c, o->unblk_attn, t);
}

/* Backward of one layer with recompute=oases and no sub-batches; the
 * all-reduces are synchronous under optim_comm_checkpoint and overlap the
 * weight gradient... not here: the block's backward is one autograd call, so
 * its input gradient is all-reduced after it. */
static void oases_sync_bwd(wl_layer *L, wl_cursor *c, int layer, int micro)
{
    wl_lctx x = wl_lctx_of(L, c, layer, 0);
    const wl_opset *o = x.o;
    sim_tags t = wl_tags(layer, micro, -1, SIM_PHASE_BACKWARD);
    sim_tags tr = wl_tags(layer, micro, -1, SIM_PHASE_RECOMPUTE);
    wl_cursor_comp(c, o->post_mlp, tr); /* Q recompute: the dropout mask of the block output */
    wl_cursor_comp(c, o->post_mlp_b, t);
    rb_mlp(c, o, layer, micro, -1);
    wl_emit_sync_coll(c, &x, o->ar, t);
    wl_cursor_comp(c, o->post_attn_b, t);
    rb_attn(c, o, layer, micro, -1);
    wl_emit_sync_coll(c, &x, o->ar, t);
    wl_cursor_comp(c, o->ln1_b, t);
    wl_cursor_mem(c, o->unkeep, t);
}

/* ---- Oases: two sub-batches, one all-reduce in flight ------------------ */

/* The forward blocks of papers.md Sec. 1.4 for sub-batch k (1 or 2). */
static void wl_emit_block_a(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->ln1, t);
    wl_cursor_comp(c, o->qkv, t);
    wl_emit_attn(c, o, t);
    wl_cursor_comp(c, o->proj, t);
}

static void wl_emit_block_pm(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->post_attn, t);
    wl_cursor_comp(c, o->fc1, t);
    wl_cursor_comp(c, o->gelu, t);
    wl_cursor_comp(c, o->fc2, t);
}

static void wl_emit_block_q(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->post_mlp, t);
}

/* The one-in-flight discipline of CommOptimizedOverlapCheckpoint
 * (papers.md Sec. 1.4): handler.wait() on the previous all-reduce, then the
 * next one is launched asynchronously.  The kernels after the wait depend on
 * the previous all-reduce; the new one waits for the last kernel, and for
 * the previous one by the order of the "tp" stream. */
typedef struct inflight {
    uint32_t op;
    int live;
} inflight;

static void wait_launch(wl_cursor *c, inflight *f, const wl_lctx *x, uint32_t pay, sim_tags t)
{
    int had = f->live;
    if (f->live)
        wl_cursor_pend(c, f->op);
    f->live = 0;
    if (x->t == 1)
        return;
    f->op = had ? wl_emit_launch_after(c, wl_tp_stream(c), pay, x->comm, t, f->op) : wl_emit_launch(c, wl_tp_stream(c), pay, x->comm, t);
    f->live = 1;
}

static void wait_only(wl_cursor *c, inflight *f)
{
    if (f->live)
        wl_cursor_pend(c, f->op);
    f->live = 0;
}

/* At the cut-point the input of each sub-batch is all-gathered along the
 * batch from the small TP groups (papers.md Sec. 1.4); the gather runs on its
 * own stream so that the all-reduce in flight does not hold it. */
static void wl_emit_cut_gather(wl_layer *L, wl_cursor *c, int layer, int micro, int k)
{
    if (!L->st.tp_cut_tp || layer != L->st.tp_cut_layers)
        return;
    int small, trans;
    cut_comms(L, c, &small, &trans);
    sim_tags t = wl_tags(layer, micro, k, SIM_PHASE_FORWARD);
    int st = sim_sched_stream_role(c->s, c->rank, "tp-cut", SIM_ROLE_TP);
    wl_cursor_pend(c, wl_emit_launch(c, st, k < 0 ? L->main.gather : L->main_h.gather, trans, t));
}

/* Windows W1-W4 over layers [first, first + n) (papers.md Sec. 1.4). */
static void oases_fwd(wl_layer *L, wl_cursor *c, int first, int n, int micro, sim_phase ph)
{
    inflight f = {0, 0};
    int last = first + n - 1;
    wl_lctx x = wl_lctx_of(L, c, first, 1);
    sim_tags t0 = wl_tags(first, micro, -1, ph);
    /* prologue: A_1 of the first layer, nothing to overlap */
    wl_cursor_mem(c, x.o->keep, t0);
    wl_emit_cut_gather(L, c, first, micro, 1);
    wl_emit_block_a(c, x.o, first, micro, 1, ph);
    wait_launch(c, &f, &x, x.o->ar, wl_tags(first, micro, 1, ph));
    for (int l = first; l <= last; l++) {
        x = wl_lctx_of(L, c, l, 1);
        /* W1(l): Q_2^{l-1} + A_2^l  ||  ARa_1^l */
        if (l > first)
            wl_emit_block_q(c, wl_lctx_of(L, c, l - 1, 1).o, l - 1, micro, 2, ph);
        wl_emit_cut_gather(L, c, l, micro, 2);
        wl_emit_block_a(c, x.o, l, micro, 2, ph);
        wait_launch(c, &f, &x, x.o->ar, wl_tags(l, micro, 2, ph));
        /* W2(l): P_1 + M_1  ||  ARa_2 */
        wl_emit_block_pm(c, x.o, l, micro, 1, ph);
        wait_launch(c, &f, &x, x.o->ar, wl_tags(l, micro, 1, ph));
        /* W3(l): P_2 + M_2  ||  ARm_1 */
        wl_emit_block_pm(c, x.o, l, micro, 2, ph);
        wait_launch(c, &f, &x, x.o->ar, wl_tags(l, micro, 2, ph));
        /* W4(l): Q_1^l + A_1^{l+1}  ||  ARm_2^l */
        wl_emit_block_q(c, x.o, l, micro, 1, ph);
        if (l < last) {
            wl_lctx nx = wl_lctx_of(L, c, l + 1, 1);
            wl_cursor_mem(c, nx.o->keep, wl_tags(l + 1, micro, -1, ph));
            wl_emit_cut_gather(L, c, l + 1, micro, 1);
            wl_emit_block_a(c, nx.o, l + 1, micro, 1, ph);
            wait_launch(c, &f, &nx, nx.o->ar, wl_tags(l + 1, micro, 1, ph));
        } else {
            /* epilogue: wait(ARm_2) then Q_2, exposed */
            wait_only(c, &f);
            wl_emit_block_q(c, x.o, l, micro, 2, ph);
        }
    }
}

/* Windows V1-V4 over layers [first + n - 1 ... first] (papers.md Sec. 1.5),
 * recompute=oases: each block re-executed from the saved post-all-reduce
 * tensors, no forward all-reduce repeated. */
static void oases_bwd(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    inflight f = {0, 0};
    int top = first + n - 1;
    const sim_phase B = SIM_PHASE_BACKWARD, R = SIM_PHASE_RECOMPUTE;
    wl_lctx x = wl_lctx_of(L, c, top, 1);
    /* prologue: Q_2^{top} recompute and backward, RB(mlp^{top}, 2): nothing to hide behind */
    wl_emit_block_q(c, x.o, top, micro, 2, R);
    wl_cursor_comp(c, x.o->post_mlp_b, wl_tags(top, micro, 2, B));
    rb_mlp(c, x.o, top, micro, 2);
    wait_launch(c, &f, &x, x.o->ar, wl_tags(top, micro, 2, B));
    for (int l = top; l >= first; l--) {
        x = wl_lctx_of(L, c, l, 1);
        const wl_opset *o = x.o;
        /* V1(l): LN1^{l+1} bwd sb1 + Q_1^l bwd + RB(mlp^l, 1)  ||  ARbm_2^l */
        if (l < top) {
            const wl_opset *up = wl_lctx_of(L, c, l + 1, 1).o;
            wl_cursor_comp(c, up->ln1_b, wl_tags(l + 1, micro, 1, B));
            wl_cursor_mem(c, wl_lctx_of(L, c, l + 1, 0).o->unkeep, wl_tags(l + 1, micro, -1, B));
        } else {
            wl_emit_block_q(c, o, l, micro, 1, R);
        }
        wl_cursor_comp(c, o->post_mlp_b, wl_tags(l, micro, 1, B));
        rb_mlp(c, o, l, micro, 1);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 1, B));
        /* V2(l): P_2^l bwd + Q_2^{l-1} recompute + RB(attn^l, 2)  ||  ARbm_1^l */
        wl_cursor_comp(c, o->post_attn_b, wl_tags(l, micro, 2, B));
        if (l > first)
            wl_emit_block_q(c, wl_lctx_of(L, c, l - 1, 1).o, l - 1, micro, 2, R);
        rb_attn(c, o, l, micro, 2);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 2, B));
        /* V3(l): P_1^l bwd + Q_1^{l-1} recompute + RB(attn^l, 1)  ||  ARba_2^l */
        wl_cursor_comp(c, o->post_attn_b, wl_tags(l, micro, 1, B));
        if (l > first)
            wl_emit_block_q(c, wl_lctx_of(L, c, l - 1, 1).o, l - 1, micro, 1, R);
        rb_attn(c, o, l, micro, 1);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 1, B));
        /* V4(l): LN1^l bwd sb2 + Q_2^{l-1} bwd + RB(mlp^{l-1}, 2)  ||  ARba_1^l */
        wl_cursor_comp(c, o->ln1_b, wl_tags(l, micro, 2, B));
        if (l > first) {
            wl_lctx dx = wl_lctx_of(L, c, l - 1, 1);
            wl_cursor_comp(c, dx.o->post_mlp_b, wl_tags(l - 1, micro, 2, B));
            rb_mlp(c, dx.o, l - 1, micro, 2);
            wait_launch(c, &f, &dx, dx.o->ar, wl_tags(l - 1, micro, 2, B));
        } else {
            /* layer-0 epilogue: LN1 bwd sb1 exposed */
            wait_only(c, &f);
            wl_cursor_comp(c, o->ln1_b, wl_tags(l, micro, 1, B));
            wl_cursor_mem(c, wl_lctx_of(L, c, l, 0).o->unkeep, wl_tags(l, micro, -1, B));
        }
    }
}

/* overlap_checkpoint (papers.md Sec. 1.3, OverlapTMPCheckpointFunction):
 * the forward as W1-W4; each layer is a checkpoint, so its backward first
 * reruns its forward with the two sub-batches overlapped (all-reduces
 * repeated, one in flight), then runs its backward with the same discipline:
 *   Q_1 bwd + MLP_1 bwd | Q_2 bwd + MLP_2 bwd || ARbm_1 | P_1 bwd + attn_1 bwd
 *   || ARbm_2 | P_2 bwd + attn_2 bwd || ARba_1 | LN1_1 bwd || ARba_2 | LN1_2 bwd.
 * The within-layer order is [derived]: papers.md gives only the rung's
 * all-reduce count (6 per layer per micro-batch) and its overlap. */
static void overlap_ckpt_bwd_layer(wl_layer *L, wl_cursor *c, int l, int micro, int recompute)
{
    inflight f = {0, 0};
    const sim_phase B = SIM_PHASE_BACKWARD, R = SIM_PHASE_RECOMPUTE;
    wl_lctx x = wl_lctx_of(L, c, l, 1), xf = wl_lctx_of(L, c, l, 0);
    const wl_opset *o = x.o;
    if (recompute) {
        wl_cursor_mem(c, xf.o->tr, wl_tags(l, micro, -1, R));
        wl_emit_block_a(c, o, l, micro, 1, R);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 1, R));
        wl_emit_block_a(c, o, l, micro, 2, R);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 2, R));
        wl_emit_block_pm(c, o, l, micro, 1, R);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 1, R));
        wl_emit_block_pm(c, o, l, micro, 2, R);
        wait_launch(c, &f, &x, o->ar, wl_tags(l, micro, 2, R));
        wl_emit_block_q(c, o, l, micro, 1, R);
        wait_only(c, &f);
        wl_emit_block_q(c, o, l, micro, 2, R);
    }
    for (int k = 1; k <= 2; k++) {
        sim_tags t = wl_tags(l, micro, k, B);
        wl_cursor_comp(c, o->post_mlp_b, t);
        wl_cursor_comp(c, o->fc2_dg, t);
        wl_cursor_comp(c, o->fc2_wg, t);
        wl_cursor_comp(c, o->gelu_b, t);
        wl_cursor_comp(c, o->fc1_dg, t);
        wl_cursor_comp(c, o->fc1_wg, t);
        wait_launch(c, &f, &x, o->ar, t);
    }
    for (int k = 1; k <= 2; k++) {
        sim_tags t = wl_tags(l, micro, k, B);
        wl_cursor_comp(c, o->post_attn_b, t);
        wl_cursor_comp(c, o->proj_dg, t);
        wl_cursor_comp(c, o->proj_wg, t);
        wl_emit_attn_bwd(c, o, t);
        wl_cursor_comp(c, o->qkv_dg, t);
        wl_cursor_comp(c, o->qkv_wg, t);
        wait_launch(c, &f, &x, o->ar, t);
    }
    wl_cursor_comp(c, o->ln1_b, wl_tags(l, micro, 1, B));
    wait_only(c, &f);
    wl_cursor_comp(c, o->ln1_b, wl_tags(l, micro, 2, B));
    wl_cursor_mem(c, xf.o->unkeep, wl_tags(l, micro, -1, B));
    wl_cursor_mem(c, xf.o->untr, wl_tags(l, micro, -1, B));
}

/* ---- Merak sub-pipelined TMP (papers.md Sec. 2.2) ----------------------
 * Asynchronous all-reduces go into a queue (mpu.mappings.ASYNC_OP) and
 * sync_comm() waits on the oldest; a kernel that needs an all-reduce's
 * result waits for it (and, the "tp" stream being in order, for everything
 * queued before it).  At most two are queued: launching a third first waits
 * on the oldest. */
typedef struct mqueue {
    uint32_t op[2];
    int n;
} mqueue;

static uint32_t mq_launch(wl_cursor *c, mqueue *q, const wl_lctx *x, uint32_t pay, sim_tags t)
{
    if (x->t == 1)
        return UINT32_MAX;
    uint32_t id;
    if (q->n == 2) { /* sync_comm(): wait on the oldest first */
        wl_cursor_pend(c, q->op[0]);
        id = wl_emit_launch_after(c, wl_tp_stream(c), pay, x->comm, t, q->op[0]);
        q->op[0] = q->op[1];
        q->n = 1;
    } else {
        id = wl_emit_launch(c, wl_tp_stream(c), pay, x->comm, t);
    }
    q->op[q->n++] = id;
    return id;
}

/* The next kernel waits for op (and so for all queued before it). */
static void mq_wait(wl_cursor *c, mqueue *q, uint32_t op)
{
    if (op == UINT32_MAX)
        return;
    wl_cursor_pend(c, op);
    for (int i = 0; i < q->n; i++)
        if (q->op[i] == op) {
            memmove(q->op, q->op + i + 1, sizeof q->op[0] * (size_t)(q->n - i - 1));
            q->n -= i + 1;
            return;
        }
}

/* Level 1 (PipedRowParallelLinear): the row-parallel GEMM in two halves of
 * its rows; the first half's all-reduce runs beside the second half's GEMM,
 * the second half's all-reduce is synchronous (exposed). */
static void merak_row_l1(wl_cursor *c, const wl_lctx *x, uint32_t half_gemm, sim_tags t)
{
    wl_cursor_comp(c, half_gemm, t);
    if (x->t == 1) {
        wl_cursor_comp(c, half_gemm, t);
        return;
    }
    uint32_t a1 = wl_emit_launch(c, wl_tp_stream(c), x->o->ar_h, x->comm, t);
    wl_cursor_comp(c, half_gemm, t);
    wl_cursor_pend(c, a1);
    wl_cursor_pend(c, wl_emit_launch_after(c, wl_tp_stream(c), x->o->ar_h, x->comm, t, a1));
}

/* Level 1 backward of a column-parallel linear: the input gradient in two
 * halves, each all-reduced asynchronously as soon as it exists (the first
 * half beside the second half's GEMM); the weight gradient runs beside the
 * second; the next kernel waits for both ([derived] from the ASYNC_OP hook of
 * PipedColumnParallelLinear). */
static void merak_col_l1(wl_cursor *c, const wl_lctx *x, uint32_t half_dgrad, uint32_t wgrad, sim_tags t)
{
    wl_cursor_comp(c, half_dgrad, t);
    if (x->t == 1) {
        wl_cursor_comp(c, half_dgrad, t);
        wl_cursor_comp(c, wgrad, t);
        return;
    }
    wl_emit_launch(c, wl_tp_stream(c), x->o->ar_h, x->comm, t);
    wl_cursor_comp(c, half_dgrad, t);
    uint32_t a2 = wl_emit_launch(c, wl_tp_stream(c), x->o->ar_h, x->comm, t);
    wl_cursor_comp(c, wgrad, t);
    wl_cursor_pend(c, a2);
}

static void merak_l1_fwd(wl_layer *L, wl_cursor *c, int layer, int micro, sim_phase ph, int alloc)
{
    wl_lctx x = wl_lctx_of(L, c, layer, 0);
    const wl_opset *o = x.o;
    sim_tags t = wl_tags(layer, micro, -1, ph);
    if (alloc)
        wl_cursor_mem(c, ph == SIM_PHASE_RECOMPUTE ? o->tr : o->keep, t);
    wl_cursor_comp(c, o->ln1, t);
    wl_cursor_comp(c, o->qkv, t);
    wl_emit_attn(c, o, t);
    merak_row_l1(c, &x, o->proj_h, t);
    wl_cursor_comp(c, o->post_attn, t);
    wl_cursor_comp(c, o->fc1, t);
    wl_cursor_comp(c, o->gelu, t);
    merak_row_l1(c, &x, o->fc2_h, t);
    wl_cursor_comp(c, o->post_mlp, t);
}

static void merak_l1_bwd(wl_layer *L, wl_cursor *c, int layer, int micro, int recompute)
{
    wl_lctx x = wl_lctx_of(L, c, layer, 0);
    const wl_opset *o = x.o;
    sim_tags t = wl_tags(layer, micro, -1, SIM_PHASE_BACKWARD);
    wl_recompute rc = L->st.recompute;
    if (rc == WL_RECOMPUTE_FULL && recompute)
        merak_l1_fwd(L, c, layer, micro, SIM_PHASE_RECOMPUTE, 1);
    wl_cursor_comp(c, o->post_mlp_b, t);
    wl_cursor_comp(c, o->fc2_dg, t);
    wl_cursor_comp(c, o->fc2_wg, t);
    wl_cursor_comp(c, o->gelu_b, t);
    merak_col_l1(c, &x, o->fc1_dg_h, o->fc1_wg, t);
    wl_cursor_comp(c, o->post_attn_b, t);
    wl_cursor_comp(c, o->proj_dg, t);
    wl_cursor_comp(c, o->proj_wg, t);
    if (rc == WL_RECOMPUTE_SELECTIVE && recompute) {
        sim_tags tr = wl_tags(layer, micro, -1, SIM_PHASE_RECOMPUTE);
        wl_cursor_mem(c, o->tr, tr);
        wl_emit_attn_kernels(c, o, tr);
    }
    wl_emit_attn_bwd(c, o, t);
    merak_col_l1(c, &x, o->qkv_dg_h, o->qkv_wg, t);
    wl_cursor_comp(c, o->ln1_b, t);
    wl_cursor_mem(c, o->unkeep, t);
    if (rc == WL_RECOMPUTE_FULL || rc == WL_RECOMPUTE_SELECTIVE)
        wl_cursor_mem(c, o->untr, t);
}

/* Levels 2 and 3, forward of layers [first, first + n) (PipedTPFunction,
 * CrossLayerPipedTPFunction):
 *   fp1 A_1 → ARa_1; fp2 A_2 → ARa_2; fp3 wait ARa_1, P_1 M_1 → ARm_1;
 *   fp4 wait ARa_2, P_2 M_2 → ARm_2; fp5 wait ARm_1, Q_1; fp6 wait ARm_2, Q_2.
 * Level 3 defers fp5/fp6 of layer l into fp1/fp2 of layer l+1, so ARm of
 * layer l runs beside layer l+1's attention.  cross = 0 forces level 2 (a
 * single checkpointed layer's recomputation). */
static void merak_fwd(wl_layer *L, wl_cursor *c, mqueue *q, int first, int n, int micro, sim_phase ph, int cross,
                      int alloc)
{
    uint32_t m1 = UINT32_MAX, m2 = UINT32_MAX;
    for (int l = first; l < first + n; l++) {
        wl_lctx x = wl_lctx_of(L, c, l, 1), xf = wl_lctx_of(L, c, l, 0);
        const wl_opset *o = x.o;
        if (alloc)
            wl_cursor_mem(c, ph == SIM_PHASE_RECOMPUTE ? xf.o->tr : xf.o->keep, wl_tags(l, micro, -1, ph));
        const wl_opset *po = cross && l > first ? wl_lctx_of(L, c, l - 1, 1).o : NULL;
        /* fp1 (level 3: after fp5 of the layer below) */
        if (po) {
            mq_wait(c, q, m1);
            wl_emit_block_q(c, po, l - 1, micro, 1, ph);
        }
        wl_emit_block_a(c, o, l, micro, 1, ph);
        uint32_t a1 = mq_launch(c, q, &x, o->ar, wl_tags(l, micro, 1, ph));
        /* fp2 (level 3: after fp6 of the layer below) */
        if (po) {
            mq_wait(c, q, m2);
            wl_emit_block_q(c, po, l - 1, micro, 2, ph);
        }
        wl_emit_block_a(c, o, l, micro, 2, ph);
        uint32_t a2 = mq_launch(c, q, &x, o->ar, wl_tags(l, micro, 2, ph));
        /* fp3, fp4 */
        mq_wait(c, q, a1);
        wl_emit_block_pm(c, o, l, micro, 1, ph);
        m1 = mq_launch(c, q, &x, o->ar, wl_tags(l, micro, 1, ph));
        mq_wait(c, q, a2);
        wl_emit_block_pm(c, o, l, micro, 2, ph);
        m2 = mq_launch(c, q, &x, o->ar, wl_tags(l, micro, 2, ph));
        if (!cross || l == first + n - 1) {
            /* fp5, fp6 */
            mq_wait(c, q, m1);
            wl_emit_block_q(c, o, l, micro, 1, ph);
            mq_wait(c, q, m2);
            wl_emit_block_q(c, o, l, micro, 2, ph);
        }
    }
}

/* Levels 2 and 3, backward (bp1…bp6 mirror the forward, papers.md Sec. 2.2):
 *   bp1 Q_1 bwd + MLP_1 bwd → ARbm_1; bp2 Q_2 bwd + MLP_2 bwd → ARbm_2;
 *   bp3 wait ARbm_1, P_1 bwd + attn_1 bwd → ARba_1; bp4 wait ARbm_2, P_2 bwd +
 *   attn_2 bwd → ARba_2; bp5 wait ARba_1, LN1_1 bwd; bp6 wait ARba_2, LN1_2 bwd.
 * Level 3 defers bp5/bp6 of layer l into bp1/bp2 of layer l-1.  Full
 * recompute reruns a layer's forward (level-2 form, all-reduces included)
 * before its bp1. */
static void merak_bwd(wl_layer *L, wl_cursor *c, int first, int n, int micro, int recompute)
{
    mqueue q = {{0, 0}, 0};
    const sim_phase B = SIM_PHASE_BACKWARD, R = SIM_PHASE_RECOMPUTE;
    int cross = L->st.tp_overlap == 3;
    wl_recompute rc = L->st.recompute;
    uint32_t b1 = UINT32_MAX, b2 = UINT32_MAX;
    int top = first + n - 1;
    for (int l = top; l >= first; l--) {
        wl_lctx x = wl_lctx_of(L, c, l, 1), xf = wl_lctx_of(L, c, l, 0);
        const wl_opset *o = x.o;
        const wl_opset *uo = l < top && cross ? wl_lctx_of(L, c, l + 1, 1).o : NULL;
        const wl_opset *uof = l < top && cross ? wl_lctx_of(L, c, l + 1, 0).o : NULL;
        if (rc == WL_RECOMPUTE_FULL && recompute) /* its all-reduces queue behind the deferred ones */
            merak_fwd(L, c, &q, l, 1, micro, R, 0, 1);
        for (int k = 1; k <= 2; k++) {
            sim_tags t = wl_tags(l, micro, k, B);
            if (uo) {
                mq_wait(c, &q, k == 1 ? b1 : b2);
                wl_cursor_comp(c, uo->ln1_b, wl_tags(l + 1, micro, k, B));
                if (k == 2)
                    wl_cursor_mem(c, uof->unkeep, wl_tags(l + 1, micro, -1, B));
            }
            wl_cursor_comp(c, o->post_mlp_b, t);
            wl_cursor_comp(c, o->fc2_dg, t);
            wl_cursor_comp(c, o->fc2_wg, t);
            wl_cursor_comp(c, o->gelu_b, t);
            wl_cursor_comp(c, o->fc1_dg, t);
            wl_cursor_comp(c, o->fc1_wg, t);
            if (k == 1)
                b1 = mq_launch(c, &q, &x, o->ar, t);
            else
                b2 = mq_launch(c, &q, &x, o->ar, t);
        }
        for (int k = 1; k <= 2; k++) {
            sim_tags t = wl_tags(l, micro, k, B);
            mq_wait(c, &q, k == 1 ? b1 : b2);
            wl_cursor_comp(c, o->post_attn_b, t);
            wl_cursor_comp(c, o->proj_dg, t);
            wl_cursor_comp(c, o->proj_wg, t);
            if (rc == WL_RECOMPUTE_SELECTIVE && recompute) {
                sim_tags tr = wl_tags(l, micro, k, R);
                if (k == 1)
                    wl_cursor_mem(c, xf.o->tr, tr);
                wl_emit_attn_kernels(c, o, tr);
            }
            wl_emit_attn_bwd(c, o, t);
            wl_cursor_comp(c, o->qkv_dg, t);
            wl_cursor_comp(c, o->qkv_wg, t);
            if (k == 1)
                b1 = mq_launch(c, &q, &x, o->ar, t);
            else
                b2 = mq_launch(c, &q, &x, o->ar, t);
        }
        /* what recomputation rebuilt is dead now: LN1's backward needs only
         * the layer input, which is kept */
        if (rc == WL_RECOMPUTE_FULL || rc == WL_RECOMPUTE_SELECTIVE)
            wl_cursor_mem(c, xf.o->untr, wl_tags(l, micro, -1, B));
        if (!cross || l == first) {
            for (int k = 1; k <= 2; k++) {
                mq_wait(c, &q, k == 1 ? b1 : b2);
                wl_cursor_comp(c, o->ln1_b, wl_tags(l, micro, k, B));
            }
            wl_cursor_mem(c, xf.o->unkeep, wl_tags(l, micro, -1, B));
            b1 = b2 = UINT32_MAX;
        }
    }
}

/* ---- Tesseract 2.5-D (papers.md Sec. 4) -------------------------------- */

static void tess_comms(wl_layer *L, wl_cursor *c, int *row, int *col, int *dep)
{
    int me;
    wl_tp_group(c, &me);
    int q = L->T.q, d = L->T.d;
    /* rank index in the TP group = i + q·(j + q·k) (initializer_2p5d.py) */
    *row = wl_sub_comm(L, c, me, 1, q, "tess-row", offsetof(wl_rank_comms, row));
    *col = wl_sub_comm(L, c, me, q, q, "tess-col", offsetof(wl_rank_comms, col));
    *dep = d > 1 ? wl_sub_comm(L, c, me, q * q, d, "tess-dep", offsetof(wl_rank_comms, dep)) : -1;
}

typedef struct tctx {
    int row, col, dep;
    int srow, scol;  /* streams */
} tctx;

static tctx tess_ctx(wl_layer *L, wl_cursor *c)
{
    tctx x;
    tess_comms(L, c, &x.row, &x.col, &x.dep);
    x.srow = sim_sched_stream_role(c->s, c->rank, "tp-row", SIM_ROLE_TP);
    x.scol = sim_sched_stream_role(c->s, c->rank, "tp-col", SIM_ROLE_TP);
    return x;
}

/* LayerNorm2p5D forward or backward: two all-reduces of one value per local
 * token in ROW (sum x and sum x², or their gradients), synchronous. */
static void tess_ln(wl_layer *L, wl_cursor *c, const tctx *x, uint32_t elem, sim_tags t)
{
    wl_cursor_comp(c, elem, t);
    for (int i = 0; i < 2; i++)
        wl_cursor_pend(c, wl_emit_launch(c, x->srow, L->T.ln_ar, x->row, t));
}

/* Forward C = A·B (Matmul_AB_2p5D): in step i the A block of row member i is
 * broadcast in ROW and the B block of column member i in COL, then a local
 * GEMM accumulates.  Double-buffered: step i+1's broadcasts are issued before
 * step i's GEMM, so they wait only for the GEMM two steps back (whose buffer
 * they reuse).  Then the bias broadcast in COL. */
static void tess_ab(wl_layer *L, wl_cursor *c, const tctx *x, const wl_tlin *w, sim_tags t)
{
    int q = L->T.q;
    uint32_t ga[8], gb[8], gemm[8], deps[2 + WL_MAX_PENDING];
    int nin = 0;
    deps[nin++] = c->last_comp;
    for (int i = 0; i < c->npending; i++) /* the input's own pending collectives (layer-norm statistics) */
        deps[nin++] = c->pending[i];
    for (int i = 0; i <= q; i++) {
        if (i < q) {
            int nd = nin;
            if (i >= 2)
                deps[nd++] = gemm[i - 2];
            ga[i] = sim_sched_add(c->s, x->srow, w->bc_a[i], x->row, t, deps, nd);
            gb[i] = sim_sched_add(c->s, x->scol, w->bc_b[i], x->col, t, deps, nd);
        }
        if (i >= 1) {
            wl_cursor_pend(c, ga[i - 1]);
            wl_cursor_pend(c, gb[i - 1]);
            gemm[i - 1] = wl_cursor_comp(c, w->gemm, t);
        }
    }
    wl_cursor_pend(c, wl_emit_launch(c, x->scol, w->bias_bc, x->col, t));
}

/* Backward of a linear: dA = dC·Bᵀ (Matmul_ABT_2p5D: B block broadcast in
 * COL, local GEMM, the partial dA reduced to its owner in ROW) and
 * dB = Aᵀ·dC (Matmul_ATB_2p5D: A block broadcast in ROW, local GEMM, reduced
 * in COL); the reduces run beside the next step; the bias gradient reduced in
 * COL.  The next kernel waits for the last reduces (each stream is in order). */
static void tess_bwd_lin(wl_layer *L, wl_cursor *c, const tctx *x, const wl_tlin *w, sim_tags t)
{
    int q = L->T.q;
    uint32_t in = c->last_comp, last_row = 0, last_col = 0;
    for (int i = 0; i < q; i++) {
        uint32_t b = sim_sched_add(c->s, x->scol, w->bc_b[i], x->col, t, &in, 1);
        wl_cursor_pend(c, b);
        wl_cursor_comp(c, w->dgrad, t);
        last_row = wl_emit_launch(c, x->srow, w->red_da[i], x->row, t);
    }
    for (int i = 0; i < q; i++) {
        uint32_t a = sim_sched_add(c->s, x->srow, w->bc_a[i], x->row, t, &in, 1);
        wl_cursor_pend(c, a);
        wl_cursor_comp(c, w->wgrad, t);
        last_col = wl_emit_launch(c, x->scol, w->red_db[i], x->col, t);
    }
    last_col = wl_emit_launch(c, x->scol, w->bias_red, x->col, t);
    wl_cursor_pend(c, last_row);
    wl_cursor_pend(c, last_col);
}

static void tess_fwd(wl_layer *L, wl_cursor *c, int layer, int micro, sim_phase ph, int alloc)
{
    const wl_opset *o = &L->main;
    tctx x = tess_ctx(L, c);
    sim_tags t = wl_tags(layer, micro, -1, ph);
    if (alloc)
        wl_cursor_mem(c, ph == SIM_PHASE_RECOMPUTE ? o->tr : o->keep, t);
    tess_ln(L, c, &x, o->ln1, t);
    tess_ab(L, c, &x, &L->T.qkv, t);
    wl_emit_attn(c, o, t);
    tess_ab(L, c, &x, &L->T.proj, t);
    tess_ln(L, c, &x, o->post_attn, t); /* bias + dropout + residual + LN2 */
    tess_ab(L, c, &x, &L->T.fc1, t);
    wl_cursor_comp(c, o->gelu, t);
    tess_ab(L, c, &x, &L->T.fc2, t);
    wl_cursor_comp(c, o->post_mlp, t);
}

static void tess_bwd(wl_layer *L, wl_cursor *c, int layer, int micro, int recompute)
{
    const wl_opset *o = &L->main;
    tctx x = tess_ctx(L, c);
    sim_tags t = wl_tags(layer, micro, -1, SIM_PHASE_BACKWARD);
    wl_recompute rc = L->st.recompute;
    if (rc == WL_RECOMPUTE_FULL && recompute)
        tess_fwd(L, c, layer, micro, SIM_PHASE_RECOMPUTE, 1);
    wl_cursor_comp(c, o->post_mlp_b, t);
    tess_bwd_lin(L, c, &x, &L->T.fc2, t);
    wl_cursor_comp(c, o->gelu_b, t);
    tess_bwd_lin(L, c, &x, &L->T.fc1, t);
    tess_ln(L, c, &x, o->post_attn_b, t);
    tess_bwd_lin(L, c, &x, &L->T.proj, t);
    if (rc == WL_RECOMPUTE_SELECTIVE && recompute) {
        sim_tags tr = wl_tags(layer, micro, -1, SIM_PHASE_RECOMPUTE);
        wl_cursor_mem(c, o->tr, tr);
        wl_emit_attn_kernels(c, o, tr);
    }
    wl_emit_attn_bwd(c, o, t);
    tess_bwd_lin(L, c, &x, &L->T.qkv, t);
    tess_ln(L, c, &x, o->ln1_b, t);
    wl_cursor_mem(c, o->unkeep, t);
    if (rc == WL_RECOMPUTE_FULL || rc == WL_RECOMPUTE_SELECTIVE)
        wl_cursor_mem(c, o->untr, t);
}

/* ---- dispatch ---------------------------------------------------------- */

void wl_layer_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        L = L->norc;
    if (n < 1)
        return;
    switch (L->st.schedule) {
    case WL_TP_OASES:
    case WL_TP_OVERLAP_CKPT:
        oases_fwd(L, c, first, n, micro, SIM_PHASE_FORWARD);
        return;
    case WL_TP_MERAK:
        if (L->st.tp_overlap >= 2) {
            mqueue q = {{0, 0}, 0};
            merak_fwd(L, c, &q, first, n, micro, SIM_PHASE_FORWARD, L->st.tp_overlap == 3, 1);
            return;
        }
        for (int l = first; l < first + n; l++)
            merak_l1_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
        return;
    case WL_TP_TESSERACT:
        for (int l = first; l < first + n; l++)
            tess_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
        return;
    default:
        for (int l = first; l < first + n; l++) {
            if (L->st.tp_cut_tp && l == L->st.tp_cut_layers)
                wl_emit_cut_gather(L, c, l, micro, -1);
            megatron_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
        }
        return;
    }
}

void wl_layer_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        return;
    if (L->st.recompute != WL_RECOMPUTE_FULL || n < 1)
        return;
    switch (L->st.schedule) {
    case WL_TP_OVERLAP_CKPT:
    case WL_TP_MERAK:
        if (L->st.schedule == WL_TP_MERAK && L->st.tp_overlap == 1) {
            for (int l = first; l < first + n; l++)
                merak_l1_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
            return;
        }
        {
            mqueue q = {{0, 0}, 0};
            merak_fwd(L, c, &q, first, n, micro, SIM_PHASE_RECOMPUTE, 0, 1);
        }
        return;
    case WL_TP_TESSERACT:
        for (int l = first; l < first + n; l++)
            tess_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
        return;
    default:
        for (int l = first; l < first + n; l++)
            megatron_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
        return;
    }
}

void wl_layer_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    int rec = !(flags & WL_LAYER_RECOMPUTED);
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        L = L->norc;
    if (n < 1)
        return;
    switch (L->st.schedule) {
    case WL_TP_OASES:
        oases_bwd(L, c, first, n, micro);
        return;
    case WL_TP_OVERLAP_CKPT:
        for (int l = first + n - 1; l >= first; l--)
            overlap_ckpt_bwd_layer(L, c, l, micro, rec);
        return;
    case WL_TP_MERAK:
        if (L->st.tp_overlap >= 2) {
            merak_bwd(L, c, first, n, micro, rec);
            return;
        }
        for (int l = first + n - 1; l >= first; l--)
            merak_l1_bwd(L, c, l, micro, rec);
        return;
    case WL_TP_TESSERACT:
        for (int l = first + n - 1; l >= first; l--)
            tess_bwd(L, c, l, micro, rec);
        return;
    default:
        for (int l = first + n - 1; l >= first; l--) {
            if (L->st.recompute == WL_RECOMPUTE_OASES)
                oases_sync_bwd(L, c, l, micro);
            else
                megatron_bwd(L, c, l, micro, rec);
        }
        return;
    }
}

void wl_layer_step_sync(wl_layer *L, wl_cursor *c, int first, int n, uint32_t after, uint32_t *last)
{
    if (L->st.schedule != WL_TP_TESSERACT || L->T.d < 2 || n < 1)
        return;
    tctx x = tess_ctx(L, c);
    int st = sim_sched_stream_role(c->s, c->rank, "tp-dep", SIM_ROLE_TP);
    sim_tags t = wl_tags(-1, -1, -1, SIM_PHASE_BACKWARD);
    uint32_t id = after;
    for (int l = first; l < first + n; l++) {
        t.layer = l;
        id = sim_sched_add(c->s, st, L->T.grad_ar, x.dep, t, &after, 1);
    }
    if (last)
        *last = id;
}
