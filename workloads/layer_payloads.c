/* layer_payloads.c — the payloads of one transformer layer (wl_opset): its
 * kernels, collectives and memory effects at a batch and TP degree, for
 * every schedule family (they differ in order and overlap, not in what a
 * kernel is), with the attention's variants (fused, context-parallel ring),
 * RoPE, FP8 casts and an MoE layer's MLP block.
 *
 * Built once per (batch, degree) by wl_layer_new: the schedule
 * deduplicates payloads by value, so a family emits ids, never shapes. */
#include "workloads/layer_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The FFN activation's element-wise kernels, in elements of s·b·ffn/t read
 * plus written: gelu, squared-relu and relu read fc1's output and write fc2's input
 * (2), their backward reads the input and the gradient and writes the
 * gradient (3); swiglu reads gate and up and writes their product (3), its
 * backward reads gate, up and the gradient and writes both gradients (5). */
wl_ffn_act wl_ffn_act_of(const wl_model *m)
{
    static const wl_ffn_act acts[WL_FFN_COUNT] = {
        [WL_FFN_GELU] = {"gelu", "gelu_bwd", 2, 3},
        [WL_FFN_SWIGLU] = {"swiglu", "swiglu_bwd", 3, 5},
        [WL_FFN_SQRELU] = {"squared_relu", "squared_relu_bwd", 2, 3},
        [WL_FFN_RELU] = {"relu", "relu_bwd", 2, 3},
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

void wl_opset_attn(sim_schedule *s, const wl_strategy *st, int64_t b, int64_t heads, int64_t kvh,
                          int64_t seq, int64_t hd, wl_opset *o)
{
    sim_dtype dt = wl_elem_dtype(st);
    if (!st->flash) {
        o->attn = wl_pay_kernel(s, "attn", SIM_KERNEL_ATTENTION, heads, seq, hd, b, 0, dt);
        o->attn_b = wl_pay_kernel(s, "attn_bwd", SIM_KERNEL_ATTENTION_BWD, heads, seq, hd, b, 0, dt);
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
void wl_opset_rope(sim_schedule *s, const wl_model *m, int64_t qk, int64_t d, sim_dtype dt, wl_opset *o)
{
    o->rope = m->position == WL_POS_ROPE;
    if (!o->rope)
        return;
    o->rope_f = wl_pay_elem(s, "rope", 2 * qk * d, dt);
    o->rope_b = wl_pay_elem(s, "rope_bwd", 2 * qk * d, dt);
}

/* FP8 training (Transformer Engine, per-tensor scaling): the tensors entering
 * an FP8 GEMM are cast with their amax taken, 2 bytes read and 1 + 1 written
 * (the FP8 tensor and its transpose for the other GEMM of the pair).  Under
 * delayed scaling (and MXFP8's per-block scales, computed inside the cast)
 * TE fuses the casts of the norm outputs (QKV's and fc1's inputs) and of the
 * activation's output (fc2's input) into those kernels, which then write FP8
 * instead of bf16: no extra traffic.  Two casts stand alone: the attention
 * output before the projection (forward, `in` elements) and the attention's
 * input gradient before the QKV dgrad (backward, `qkv_grad` elements).
 * Under current scaling (fp8_recipe=tensorwise) the scale needs the whole
 * tensor's amax first (TE's pytorch/csrc/extensions normalization.cpp
 * FUSED_NORM_AMAX_FP8, activation.cpp and the dact's FUSED_DACT_AMAX_FP8,
 * quantize with nvte_compute_amax: read, not copied): the norms, the
 * activation and its backward write 16 bits with the amax, and a quantize
 * pass reads them (2 + 2 bytes more per element: `fused_f`, `fused_b`
 * elements); a standalone cast first reads its input for the amax (2 more:
 * the two casts above, and the gradients entering fc2's and the
 * projection's backward, `grad_in` elements).  Counted with the two casts.
 * With te.Linear alone (fp8_casts=standalone: llm-foundry's fc_type 'te'),
 * no norm or activation writes FP8 for the next GEMM: QKV's, fc1's and
 * fc2's inputs forward and fc1's output gradient backward are cast by the
 * linears themselves (read 2, write 1 + 1: 4 more per element of `fused_f`
 * and `fused_b`; under current scaling each reads its input for the amax
 * first, 2 more, in place of the 16-bit round trip).  Nor does anything
 * pass te.Linear is_first_microbatch, so each forward casts its weights
 * again (read 2, write 1 + 1 a weight: `wts` on this rank) instead of the
 * once-a-step cast after the optimizer (gpt.c). */
void wl_opset_fp8(sim_schedule *s, const wl_strategy *st, int64_t in, int64_t qkv_grad, int64_t fused_f,
                  int64_t fused_b, int64_t grad_in, int64_t wts, wl_opset *o)
{
    o->fp8 = st->dtype == SIM_DTYPE_FP8;
    if (!o->fp8)
        return;
    int cs = st->fp8_recipe == WL_FP8_TENSORWISE, alone = st->fp8_standalone;
    /* per element of the fused outputs: current scaling's round trip (4),
     * or a standalone cast (4) with its amax read under current scaling (2) */
    int64_t per_fused = alone ? 4 + (cs ? 2 : 0) : cs ? 4 : 0;
    o->cast_f = wl_pay_elem(s, "fp8_cast", 4 * in + (cs ? 2 * in : 0) + per_fused * fused_f + (alone ? 4 * wts : 0),
                            SIM_DTYPE_BF16);
    o->cast_b = wl_pay_elem(s, "fp8_cast_grad",
                            4 * qkv_grad + (cs ? 2 * qkv_grad + 2 * grad_in : 0) + per_fused * fused_b, SIM_DTYPE_BF16);
}

/* kernels=eager: the element-wise passes PyTorch's eager autograd runs
 * around a layer's GEMMs (llm-foundry's MPTBlock as the model: norm,
 * attention, residual add, norm, MLP, residual add; PyTorch's native
 * layer_norm, GELU and addmm backward), in hidden-sized tensors read or
 * written per token (the fused defaults of wl_opset_build in brackets):
 *   forward   LN1 2 (ln1 [2]); residual add 3 + LN2 2 (post_attn [6]);
 *             residual add 3 (post_mlp [4]); biases ride in cuBLASLt's
 *             epilogue, and a dropout of p = 0 launches nothing
 *   backward  fc2's bias gradient, a reduction reading the gradient 1
 *             (post_mlp_b [4]: the residual passes its gradient through);
 *             fc1's bias gradient, one read of the ffn-wide gradient
 *             (beside the activation's backward); LN2's backward 3 and its
 *             weight and bias gradients 2, the sum of the two gradients
 *             reaching the residual stream 3, the projection's bias
 *             gradient 1 (post_attn_b [8]); the same for LN1 5 + 3
 *             (ln1_b [3]), plus, per QKV-wide element, the QKV bias
 *             gradient 1 and the concatenation of dQ, dK, dV into the
 *             packed QKV gradient, read and written 2 (the backward of
 *             qkv.chunk(3)).
 * Without biases the bias reductions go.
 *
 * With autocast=1 the residual stream is fp32: torch.autocast leaves
 * nn.Embedding alone, so the fp32 embedding output starts it, and every
 * residual add promotes (fp32 + 16-bit -> fp32); layer_norm is on
 * autocast's fp32 list, so the norms read and write fp32 and the next
 * linear casts their output down (aten/src/ATen/autocast_mode.h:
 * AT_FORALL_FP32 lists layer_norm, no list nn.Embedding).  In
 * 16-bit units (an fp32 tensor counts 2), as this project's H100 traces
 * of such a model show them (validation/data/h100-micro, docs/validation.md):
 *   forward   LN1 4 + the cast of its output 3 (ln1); residual add 2+1+2 +
 *             LN2 4 + cast 3 (post_attn); residual add 5 (post_mlp)
 *   backward  the residual gradient cast to 16 bits for fc2's output 3,
 *             fc2's bias gradient 1 (post_mlp_b); fc1's input gradient
 *             cast up 3, LN2's backward 6 + 4, the fp32 residual-gradient
 *             sum 6, the projection's output gradient cast down 3, its bias
 *             gradient 1 (post_attn_b); the QKV input gradient cast up 3,
 *             LN1's backward 6 + 4, the sum 6 (ln1_b).
 * Each pass carries its element-wise class (sim_mem_class): the kernels
 * PyTorch runs for them on this project's H100 (validation/data/h100-micro,
 * docs/validation.md "Issue 13, element-wise classes"). */
typedef struct elem_passes {
    /* per slot, its passes at each element-wise class (sim_mem_class):
     * [STREAM] vectorised streaming kernels; [CAST_UP] the fp32 + 16-bit
     * residual adds and the gradients cast up (PyTorch's dynamic-casting
     * path); [NORM] a norm's forward and input gradient; [REDUCE] the bias
     * gradients and a norm's weight and bias gradients; [STRIDED] the
     * concatenation of dQ, dK, dV.  The fused set streams: Megatron's and
     * Transformer Engine's kernels are not the eager ones measured. */
    int64_t ln1[SIM_MEMC_COUNT], post_attn[SIM_MEMC_COUNT], post_mlp[SIM_MEMC_COUNT], post_mlp_b[SIM_MEMC_COUNT],
        gelu_b_extra[SIM_MEMC_COUNT], post_attn_b[SIM_MEMC_COUNT], ln1_b[SIM_MEMC_COUNT], qkv_glue_b[SIM_MEMC_COUNT];
} elem_passes;

enum { S_ = SIM_MEMC_STREAM, C_ = SIM_MEMC_CAST_UP, N_ = SIM_MEMC_NORM, R_ = SIM_MEMC_REDUCE, X_ = SIM_MEMC_STRIDED };

/* The passes of the strategy's kernel set: the fused ones, or eager's. */
static elem_passes elem_passes_of(const wl_model *m, const wl_strategy *st)
{
    elem_passes e;
    memset(&e, 0, sizeof e);
    if (!st->eager_kernels) {
        e.ln1[S_] = 2, e.post_attn[S_] = 6, e.post_mlp[S_] = 4, e.post_mlp_b[S_] = 4, e.post_attn_b[S_] = 8;
        e.ln1_b[S_] = 3;
        return e;
    }
    int64_t bias = !m->no_bias;
    e.gelu_b_extra[R_] = bias;              /* fc1's bias gradient */
    e.qkv_glue_b[X_] = 2;                   /* the cat of dQ, dK, dV */
    e.qkv_glue_b[R_] = bias || m->qkv_bias; /* the QKV bias gradient */
    if (!st->autocast) {
        e.ln1[N_] = 2;
        e.post_attn[S_] = 3, e.post_attn[N_] = 2;            /* residual add, LN2 */
        e.post_mlp[S_] = 3;                                  /* residual add */
        e.post_mlp_b[R_] = bias;                             /* fc2's bias gradient */
        e.post_attn_b[N_] = 3, e.post_attn_b[R_] = 2 + bias; /* LN2's input, weight, bias gradients; proj's bias */
        e.post_attn_b[S_] = 3;                               /* the residual-gradient sum */
        e.ln1_b[N_] = 3, e.ln1_b[R_] = 2, e.ln1_b[S_] = 3;
        return e;
    }
    /* autocast=1: the fp32 stream (16-bit units) */
    e.ln1[N_] = 4, e.ln1[S_] = 3;                                  /* LN1 in fp32; its output cast down */
    e.post_attn[C_] = 5, e.post_attn[N_] = 4, e.post_attn[S_] = 3; /* fp32 + 16-bit add, LN2, cast down */
    e.post_mlp[C_] = 5;                                            /* fp32 + 16-bit add */
    e.post_mlp_b[R_] = bias, e.post_mlp_b[S_] = 3;                 /* fc2's bias gradient; the cast down */
    e.post_attn_b[C_] = 3;                                         /* fc1's input gradient cast up */
    e.post_attn_b[N_] = 6, e.post_attn_b[R_] = 4 + bias;           /* LN2's backward; proj's bias gradient */
    e.post_attn_b[S_] = 6 + 3;                                     /* the fp32 sum; the cast down for proj */
    e.ln1_b[C_] = 3, e.ln1_b[N_] = 6, e.ln1_b[R_] = 4, e.ln1_b[S_] = 6;
    return e;
}

/* by[c] += passes[c] x unit / div for every class. */
static void add_passes(int64_t by[SIM_MEMC_COUNT], const int64_t passes[SIM_MEMC_COUNT], int64_t unit, int64_t div)
{
    for (int c = 0; c < SIM_MEMC_COUNT; c++)
        by[c] += passes[c] * unit / div;
}

/* An element-wise payload of passes x unit / div (a slot of elem_passes),
 * plus `more` streaming bytes. */
static uint32_t pay_passes(sim_schedule *s, const char *name, const int64_t passes[SIM_MEMC_COUNT], int64_t unit,
                           int64_t div, int64_t more, sim_dtype dt)
{
    int64_t by[SIM_MEMC_COUNT] = {0};
    add_passes(by, passes, unit, div);
    by[S_] += more;
    return wl_pay_elem_cls(s, name, by, dt);
}

/* autocast=1 (gpt.c resolve_autocast): each linear's fp32 weight and bias
 * are cast to 16 bits when the forward (and a recompute, which re-enters
 * autocast) reaches it, 4 bytes read and 2 written per parameter; the copy
 * is what the GEMM saves for backward, so it lives until the layer's
 * backward (freed after the forward when recompute=full drops it).  The
 * 16-bit weight gradient is cast back to fp32 (the cast's backward,
 * ToCopyBackward0: 2 + 4) and AccumulateGrad takes it as .grad for the first
 * micro-batch of a step (grads set to None by zero_grad) and adds it to
 * .grad for the others (4 + 4 + 4 more).  The norms' parameters are not cast
 * (layer_norm runs in fp32).  Not counted: the 16-bit gradient's brief
 * life before its cast. */
static void opset_autocast(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t t, wl_opset *o)
{
    o->autocast = st->autocast;
    if (!o->autocast)
        return;
    wl_layer_param_split p = wl_model_layer_params(m);
    int64_t np = wl_model_norm_params(m);
    int64_t w = (p.attn_split + p.mlp_split) / t + p.attn_rep + p.mlp_rep - 2 * np;
    sim_dtype dt = wl_elem_dtype(st);
    /* fp32 -> 16-bit casts stream (PyTorch's vectorised bfloat16 copy), the
     * gradients' 16-bit -> fp32 casts run the dynamic-casting path
     * (cast_up), the accumulation into .grad streams */
    const int64_t cast_up[SIM_MEMC_COUNT] = {[C_] = 6}, cast_acc[SIM_MEMC_COUNT] = {[C_] = 6, [S_] = 12};
    o->wcast = wl_pay_elem(s, "autocast_weight_cast", 6 * w, dt);
    o->gcast[0] = pay_passes(s, "autocast_grad_cast", cast_up, w, 1, 0, dt);
    o->gcast[1] = pay_passes(s, "autocast_grad_cast_accumulate", cast_acc, w, 1, 0, dt);
    o->wc_alloc = wl_pay_mem(s, "autocast_weights", SIM_MEM_WEIGHTS, 2 * w);
    o->wc_free = wl_pay_mem(s, "autocast_weights", SIM_MEM_WEIGHTS, -2 * w);
}

void wl_opset_build(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t,
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
    elem_passes ep = elem_passes_of(m, st);
    o->ln1 = pay_passes(s, "ln1", ep.ln1, sbhd, rt, 0, dt);
    o->qkv = wl_pay_gemm(s, "qkv", sb, qkv / t, h, gdt);
    /* attention core per TP rank: batch=b, m=heads/t, n=s, k=head_dim */
    wl_opset_attn(s, st, b, m->heads / t, wl_model_kv_heads(m) / t, wl_local_seq(m, st), h / m->heads, o);
    cp_payloads(s, st, b, m->heads / t, wl_model_kv_heads(m) / t, wl_local_seq(m, st), h / m->heads, o);
    o->proj = wl_pay_gemm(s, "proj", sb, h, h / t, gdt);
    opset_autocast(s, m, st, t, o);
    o->post_attn = pay_passes(s, "post_attn", ep.post_attn, sbhd, rt, 0, dt); /* bias + dropout + residual + LN2 */
    o->fc1 = wl_pay_gemm(s, "fc1", sb, fc1 / t, h, gdt);
    o->gelu = wl_pay_elem(s, act.name, act.fwd * sb * (f / t) * d, dt);
    o->fc2 = wl_pay_gemm(s, "fc2", sb, h, f / t, gdt);
    o->post_mlp = pay_passes(s, "post_mlp", ep.post_mlp, sbhd, rt, 0, dt); /* bias + dropout + residual */

    /* FP8: the gradients entering fc2's and the projection's backward are cast
     * (and transposed) for their FP8 GEMMs, read 2 bytes and written 1 + 1,
     * fused here into the kernels that produce them (TE fuses them with the
     * dgelu and norm backwards likewise); the activation's backward writes
     * fc1's gradient in FP8 in place of bf16 */
    int64_t cast = st->dtype == SIM_DTYPE_FP8 ? 2 * sbhd : 0;
    o->post_mlp_b = pay_passes(s, "post_mlp_bwd", ep.post_mlp_b, sbhd, rt, cast, dt);
    o->fc2_dg = wl_pay_gemm(s, "fc2_dgrad", sb, f / t, h, gdt);
    o->fc2_wg = wl_pay_gemm(s, "fc2_wgrad", f / t, h, sb, gdt);
    int64_t fu = sb * (f / t) * d, gb[SIM_MEMC_COUNT] = {[S_] = act.bwd * fu};
    add_passes(gb, ep.gelu_b_extra, fu, 1);
    o->gelu_b = wl_pay_elem_cls(s, act.bwd_name, gb, dt);
    o->fc1_dg = wl_pay_gemm(s, "fc1_dgrad", sb, h, fc1 / t, gdt);
    o->fc1_wg = wl_pay_gemm(s, "fc1_wgrad", h, fc1 / t, sb, gdt);
    o->post_attn_b = pay_passes(s, "post_attn_bwd", ep.post_attn_b, sbhd, rt, cast, dt);
    o->proj_dg = wl_pay_gemm(s, "proj_dgrad", sb, h / t, h, gdt);
    o->proj_wg = wl_pay_gemm(s, "proj_wgrad", h / t, h, sb, gdt);
    wl_opset_rope(s, m, sb * (qkv - h) / 2 / t + sb * h / t, d, dt, o);
    /* current scaling's extra passes: the two norm outputs and the
     * activation's forward, fc1's gradient from its backward, the gradients
     * entering fc2's and the projection's backward */
    wl_layer_param_split lp = wl_model_layer_params(m);
    wl_opset_fp8(s, st, sb * h / t, sb * qkv / t, 2 * sb * h / rt + sb * (f / t), sb * (fc1 / t), 2 * sb * h / rt,
                 (lp.attn_split + lp.mlp_split) / t, o);
    o->qkv_dg = wl_pay_gemm(s, "qkv_dgrad", sb, h, qkv / t, gdt);
    o->qkv_wg = wl_pay_gemm(s, "qkv_wgrad", h, qkv / t, sb, gdt);
    int64_t lb[SIM_MEMC_COUNT] = {0};
    add_passes(lb, ep.ln1_b, sbhd, rt);
    add_passes(lb, ep.qkv_glue_b, sb * (qkv / t) * d, 1);
    o->ln1_b = wl_pay_elem_cls(s, "ln1_bwd", lb, dt);

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

static uint32_t a2a_even(sim_schedule *s, const char *name, const int64_t *sizes, int64_t peer, int ep)
{
    (void)sizes;
    return wl_pay_coll(s, name, SIM_COLL_ALLTOALL, peer * ep);
}

static uint32_t a2a_routed(sim_schedule *s, const char *name, const int64_t *sizes, int64_t peer, int ep)
{
    (void)peer;
    return sim_sched_alltoallv_payload(s, name, sizes, ep);
}

/* An MoE layer's payloads on top of a dense wl_opset (Megatron-Core's MoELayer
 * with the all-to-all token dispatcher, megatron/core/transformer/moe/
 * {router,token_dispatcher,experts}.py, read, not copied): the router GEMM
 * (h -> E, in the activations' dtype) and its softmax / top-k; permuting the
 * sb tokens into T token-expert rows; the dispatch all-to-all of the T rows
 * (each EP rank keeps 1/ep, the rest crosses the network: an even
 * all-to-all under uniform routing, what the routing sends under a routed
 * step); the local experts as grouped GEMMs, one batch entry per local
 * expert of T/(E/ep) rows, split over tp like a dense MLP; the combine
 * all-to-all back; un-permuting with the routing weights.  The shared
 * expert is a dense MLP of shared_ffn on all sb tokens (wl_opset_moe). */
void wl_moe_pays_build(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t,
                       int64_t tokens, int64_t peer, const int64_t *disp_bytes, const int64_t *comb_bytes,
                       wl_moe_pays *mp)
{
    const wl_moe *x = &m->moe_cfg;
    sim_dtype gdt = st->dtype, dt = wl_elem_dtype(st);
    int64_t sb = wl_local_seq(m, st) * b, h = m->hidden, d = wl_layer_act_bytes(st), E = x->experts, T = tokens;
    int ep = wl_strategy_ep(st);
    /* rows per local expert, up to a multiple of 8: a grouped GEMM computes
     * whole tiles whatever each expert's count (and Megatron-Core pads them
     * for FP8), so a routed step's odd counts are not the cuBLAS kernels with
     * unaligned leading dimensions that gemm_unaligned prices */
    int64_t el = E / ep, rows = ((T + el - 1) / el + 7) / 8 * 8, ef = x->expert_ffn, fc1 = wl_model_fc1_out(m, ef);
    wl_ffn_act act = wl_ffn_act_of(m);
    /* created in the order the layer runs them (payload ids, and so the
     * schedule file, as before routing was per rank) */
    uint32_t (*a2a)(sim_schedule *, const char *, const int64_t *, int64_t, int) = disp_bytes ? a2a_routed : a2a_even;
    mp->route = wl_pay_elem(s, "router_topk_permute", 2 * sb * E * 4 + (sb + T) * h * d, dt);
    mp->disp = a2a(s, "moe_dispatch", disp_bytes, peer, ep);
    mp->efc1 = wl_pay_kernel(s, "expert_fc1", SIM_KERNEL_GEMM, rows, fc1 / t, h, el, 0, gdt);
    mp->eact = wl_pay_elem(s, act.name, act.fwd * T * (ef / t) * d, dt);
    mp->efc2 = wl_pay_kernel(s, "expert_fc2", SIM_KERNEL_GEMM, rows, h, ef / t, el, 0, gdt);
    mp->comb = a2a(s, "moe_combine", comb_bytes, peer, ep);
    mp->unperm = wl_pay_elem(s, "unpermute", (sb + T) * h * d + T * 4, dt);
    mp->unperm_b = wl_pay_elem(s, "unpermute_bwd", (sb + 2 * T) * h * d + T * 4, dt);
    /* backward: the combine's gradient travels as the dispatch did, and back */
    mp->comb_b = a2a(s, "moe_combine_bwd", disp_bytes, peer, ep);
    mp->efc2_dg = wl_pay_kernel(s, "expert_fc2_dgrad", SIM_KERNEL_GEMM, rows, ef / t, h, el, 0, gdt);
    mp->efc2_wg = wl_pay_kernel(s, "expert_fc2_wgrad", SIM_KERNEL_GEMM, ef / t, h, rows, el, 0, gdt);
    mp->eact_b = wl_pay_elem(s, act.bwd_name, act.bwd * T * (ef / t) * d, dt);
    mp->efc1_dg = wl_pay_kernel(s, "expert_fc1_dgrad", SIM_KERNEL_GEMM, rows, h, fc1 / t, el, 0, gdt);
    mp->efc1_wg = wl_pay_kernel(s, "expert_fc1_wgrad", SIM_KERNEL_GEMM, h, fc1 / t, rows, el, 0, gdt);
    mp->disp_b = a2a(s, "moe_dispatch_bwd", comb_bytes, peer, ep);
    mp->perm_b = wl_pay_elem(s, "permute_bwd", (sb + T) * h * d, dt);
}

void wl_opset_moe(sim_schedule *s, const wl_model *m, const wl_strategy *st, int64_t b, int64_t t, wl_opset *o)
{
    const wl_moe *x = &m->moe_cfg;
    sim_dtype gdt = st->dtype, dt = wl_elem_dtype(st);
    int64_t sb = wl_local_seq(m, st) * b, h = m->hidden, d = wl_layer_act_bytes(st), E = x->experts;
    int64_t T, peer;
    wl_strategy one = *st;
    one.mb = (int)b;
    wl_layer_moe_tokens(m, &one, &T, &peer);
    wl_ffn_act act = wl_ffn_act_of(m);
    o->moe = 1;
    o->router = wl_pay_gemm(s, "router", sb, E, h, dt);
    wl_moe_pays_build(s, m, st, b, t, T, peer, NULL, NULL, &o->mp);
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

wl_moe_routed *wl_moe_routed_new(const wl_layer *L, sim_schedule *s, const wl_moe_route *r)
{
    int ep = r->ep;
    wl_moe_routed *x = calloc(1, sizeof *x);
    int64_t *disp = malloc(sizeof(int64_t) * (size_t)ep), *comb = malloc(sizeof(int64_t) * (size_t)ep);
    if (x)
        x->p = calloc((size_t)r->layers * (size_t)ep, sizeof *x->p);
    if (!x || !x->p || !disp || !comb) {
        free(disp);
        free(comb);
        wl_moe_routed_free(x);
        return NULL;
    }
    x->ep = ep;
    int64_t per_token = (int64_t)L->m.hidden * wl_layer_act_bytes(&L->st);
    for (int q = 0; q < r->layers; q++)
        for (int g = 0; g < ep; g++) {
            for (int j = 0; j < ep; j++) {
                disp[j] = j == g ? 0 : r->send[((size_t)q * ep + g) * ep + j] * per_token;
                comb[j] = j == g ? 0 : r->send[((size_t)q * ep + j) * ep + g] * per_token;
            }
            wl_moe_pays_build(s, &L->m, &L->st, L->moe.b, L->moe.t, r->compute[(size_t)q * ep + g], 0, disp, comb,
                              &x->p[(size_t)q * ep + g]);
        }
    free(disp);
    free(comb);
    return x;
}

void wl_moe_routed_free(wl_moe_routed *x)
{
    if (x)
        free(x->p);
    free(x);
}
