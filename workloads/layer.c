/* layer.c — a transformer layer of one micro-batch on one rank, as schedule
 * operations (see layer.h for the split with gpt.c): the public entry
 * points, the memory model, and the choice of a schedule family.
 *
 * Each family is one table of operations (wl_layer_ops, layer_emit.h):
 * Megatron 1-D with sequence parallelism, TP overlap and MoE layers
 * (layer_megatron.c), the Oases ladder (layer_oases.c), Merak's levels
 * (layer_merak.c), Tesseract (layer_tesseract.c).  wl_layer_ops_of picks
 * the table once; everything else here calls through it, so no other switch
 * over the schedule is needed.  The layer's payloads are built in
 * layer_payloads.c, its operations appended through layer_emit.c. */
#include "workloads/layer_emit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the schedule families --------------------------------------------- */

const wl_layer_ops *wl_layer_ops_of(const wl_strategy *st)
{
    switch (st->schedule) {
    case WL_TP_OVERLAP_CKPT:
        return &wl_layer_overlap_ckpt_ops;
    case WL_TP_OASES:
        return &wl_layer_oases_ops;
    case WL_TP_MERAK:
        return st->tp_overlap >= 2 ? &wl_layer_merak_ops : &wl_layer_merak_l1_ops;
    case WL_TP_TESSERACT:
        return &wl_layer_tesseract_ops;
    default: /* megatron, default_checkpoint, optim_comm_checkpoint */
        return st->recompute == WL_RECOMPUTE_OASES ? &wl_layer_block_recompute_ops : &wl_layer_megatron_ops;
    }
}

int wl_layer_check_1d(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    int t = st->tp;
    if (m->heads % t || m->hidden % t || m->ffn % t)
        return sim_errf(err, "tp=%d does not divide the heads (%d), hidden size (%d) and FFN size (%d) of %s", t,
                        m->heads, m->hidden, m->ffn, m->name);
    if (wl_model_kv_heads(m) % t)
        return sim_errf(err, "tp=%d does not divide the %d K/V heads of %s: Megatron-Core splits the query groups "
                        "over TP ranks and requires this (num_query_groups / tp, megatron/core/transformer/"
                        "attention.py); use a tp that divides %d", t, wl_model_kv_heads(m), m->name,
                        wl_model_kv_heads(m));
    return 0;
}

/* ---- sizes and memory -------------------------------------------------- */

int64_t wl_layer_act_bytes(const wl_strategy *st)
{
    return st->dtype == SIM_DTYPE_FP32 || st->dtype == SIM_DTYPE_TF32 ? 4 : 2;
}

sim_dtype wl_elem_dtype(const wl_strategy *st)
{
    return st->dtype == SIM_DTYPE_FP8 ? SIM_DTYPE_BF16 : st->dtype;
}

/* Tokens of a sequence on one rank: context parallelism gives each of the cp
 * ranks 2 of the sequence's 2·cp chunks, so every activation, GEMM and
 * element-wise kernel of the layer is on seq/cp tokens. */
int64_t wl_local_seq(const wl_model *m, const wl_strategy *st)
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
wl_actsz wl_act_sizes(const wl_model *m, int64_t b, int64_t t, int sharded, const wl_strategy *st)
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
    z.input = sbh * d / rt;
    if (st->autocast) {
        /* torch.autocast over fp32 parameters: the residual stream is fp32
         * (layer_payloads.c), so the norms' saved inputs and a checkpointed
         * layer's input take 4 bytes per element */
        z.attn += (4 - d) * sbh / rt;
        z.mlp += (4 - d) * sbh / rt;
        z.input = 4 * sbh / rt;
    }
    z.full = z.attn + z.mlp;
    return z;
}

static int sharded_acts(const wl_strategy *st)
{
    return st->sp || wl_layer_ops_of(st)->sharded;
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

void wl_layer_moe_tokens(const wl_model *m, const wl_strategy *st, int64_t *tokens, int64_t *peer_bytes)
{
    const wl_moe *x = &m->moe_cfg;
    int ep = wl_strategy_ep(st);
    double sb = (double)wl_local_seq(m, st) * st->mb, per = sb * x->top_k / x->experts; /* per (source, expert) */
    if (x->capacity_factor > 0) {
        double cap = ceil(x->capacity_factor * sb * x->top_k / x->experts);
        per = per < cap && !x->pad_to_capacity ? per : cap;
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
        wl_actsz r = wl_layer_ops_of(st)->subbatches == 2 ? wl_act_sizes(m, b / 2, t, 0, st) : z;
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

int64_t wl_layer_params(const wl_model *m, const wl_strategy *st, int layer)
{
    int64_t t, b;
    layer_shape(st, layer, &t, &b);
    const wl_layer_ops *ops = wl_layer_ops_of(st);
    if (ops->params)
        return ops->params(m, st, t);
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

/* Context parallelism (Megatron-Core, workloads/README.md "Context
 * parallelism"): the sequence in 2·cp chunks, two per rank; the ring's
 * attention needs the fused kernels and the Megatron layer schedule. */
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

/* Everything wl_layer_new refuses, in the order the errors are reported. */
static int check_layer(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    if (!m || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 || m->layers < 1)
        return sim_errf(err, "layer: model %s: layers, hidden, heads, ffn and seq must be positive",
                        m ? m->name : "(null)");
    if (wl_strategy_check_tp(st, err) || wl_layer_check_cp(m, st, err))
        return -1;
    if (st->tp < 1 || st->mb < 1) {
        sim_errf(err, "layer: tp and mb must be positive (got tp=%d, mb=%d)", st->tp, st->mb);
        return -1;
    }
    const wl_layer_ops *ops = wl_layer_ops_of(st);
    int t = st->tp;
    if (ops->check(m, st, err))
        return -1;
    if (m->moe && wl_layer_check_moe(m, st, err))
        return -1;
    int sub = ops->subbatches;
    if (sub == 2 && st->mb % 2) {
        sim_errf(err, "strategy: schedule=%s splits each micro-batch into 2 sub-batches along the batch "
                 "(docs/papers.md Sec. %s): mb must be even, got mb=%d", wl_tp_schedule_name(st->schedule),
                 st->schedule == WL_TP_MERAK ? "2.2" : "1.2", st->mb);
        return -1;
    }
    if (st->tp_cut_tp) {
        int ratio = st->tp / st->tp_cut_tp;
        if (st->tp_cut_layers >= m->layers) {
            sim_errf(err, "strategy: tp_cut=%d:%d: the cut must fall inside the %d layers of %s", st->tp_cut_layers,
                     st->tp_cut_tp, m->layers, m->name);
            return -1;
        }
        if (st->mb % (ratio * sub)) {
            sim_errf(err, "strategy: tp_cut=%d:%d: before the cut each of the tp/%d = %d smaller TP groups takes "
                     "mb/%d of the micro-batch%s, so mb=%d must be divisible by %d", st->tp_cut_layers, st->tp_cut_tp,
                     st->tp_cut_tp, ratio, ratio, sub == 2 ? " in 2 sub-batches" : "", st->mb, ratio * sub);
            return -1;
        }
    }
    if (st->tp_overlap_comm && wl_local_seq(m, st) * st->mb % (WL_TPO_SPLITS * t)) {
        sim_errf(err, "strategy: tp_overlap_comm=1 splits each linear's s·b = %lld tokens into tp = %d ring chunks and "
                 "%d pipelined reduce-scatter chunks: seq%s·mb must be divisible by %d",
                 (long long)(wl_local_seq(m, st) * st->mb), t, WL_TPO_SPLITS, wl_strategy_cp(st) > 1 ? "/cp" : "",
                 WL_TPO_SPLITS * t);
        return -1;
    }
    return 0;
}

/* The payloads of every (batch, degree) the layers run at, then the
 * family's own. */
static void build_payloads(wl_layer *L, sim_schedule *s)
{
    const wl_model *m = &L->m;
    const wl_strategy *st = &L->st;
    int t = st->tp, sub = L->ops->subbatches;
    wl_opset_build(s, m, st, st->mb, t, 1, &L->main);
    if (sub == 2)
        wl_opset_build(s, m, st, st->mb / 2, t, 2, &L->main_h);
    else
        L->main_h = L->main;
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
    if (L->ops->build)
        L->ops->build(L, s);
}

wl_layer *wl_layer_new(sim_schedule *s, const wl_model *m, const wl_strategy *st, sim_err *err)
{
    if (check_layer(m, st, err))
        return NULL;
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
    L->ops = wl_layer_ops_of(st);
    L->nranks = s->nranks;
    L->rc = rc;
    for (int r = 0; r < s->nranks; r++)
        rc[r].row = rc[r].col = rc[r].dep = rc[r].small = rc[r].trans = rc[r].ring_send = rc[r].ring_recv = -2;
    build_payloads(L, s);
    /* the schedules that leave the recompute mode to the strategy (the Oases
     * ladder fixes it) can drop it for some layers (WL_LAYER_NO_RECOMPUTE) */
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

/* ---- dispatch ---------------------------------------------------------- */

void wl_layer_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        L = L->norc;
    if (n < 1)
        return;
    L->ops->forward(L, c, first, n, micro);
}

void wl_layer_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        return;
    if (L->st.recompute != WL_RECOMPUTE_FULL || n < 1 || !L->ops->recompute)
        return;
    L->ops->recompute(L, c, first, n, micro);
}

void wl_layer_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    int rerun = !(flags & WL_LAYER_RECOMPUTED);
    if ((flags & WL_LAYER_NO_RECOMPUTE) && L->norc)
        L = L->norc;
    if (n < 1)
        return;
    L->ops->backward(L, c, first, n, micro, rerun);
}

void wl_layer_step_sync(wl_layer *L, wl_cursor *c, int first, int n, uint32_t after, uint32_t *last)
{
    if (!L->ops->step_sync || n < 1)
        return;
    L->ops->step_sync(L, c, first, n, after, last);
}
