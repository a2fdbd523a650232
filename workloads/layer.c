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

/* Activation bytes kept per layer per micro-batch for backward, TP without
 * sequence parallelism (Korthikanti et al. 2022, "Reducing Activation
 * Recomputation in Large Transformer Models", Sec. 4.1-4.2), with d bytes per
 * activation element and 1-byte dropout masks:
 *   attention: LN1 input d·sbh, QKV input d·sbh (replicated); Q, K 2d·sbh/t,
 *     V d·sbh/t, softmax output d·as²b/t, its dropout mask as²b/t, the dropout
 *     output d·as²b/t, projection input d·sbh/t, its dropout mask sbh
 *   MLP: LN2 input d·sbh, fc1 input d·sbh (replicated), GeLU input 4d·sbh/t
 *     (ffn/h·d·sbh/t in general), fc2 input likewise, dropout mask sbh
 * Total: sbh·(4d + 2) + sbh·d·(4 + 2·ffn/h)/t + as²b·(2d + 1)/t, which for
 * ffn = 4h is sbh·(d·(4 + 12/t) + 2) + as²b·(2d + 1)/t and for d = 2 the
 * paper's sbh·(10 + 24/t + 5as/(ht)). */
static int64_t full_activation_bytes(const wl_model *m, const wl_strategy *st)
{
    int64_t s = m->seq, b = st->mb, h = m->hidden, f = m->ffn, a = m->heads, t = st->tp, d = wl_layer_act_bytes(st);
    int64_t sbh = s * b * h;
    return sbh * (4 * d + 2) + d * s * b * (4 * h + 2 * f) / t + (a / t) * s * s * b * (2 * d + 1);
}

/* With full recompute only the layer input (d·sbh) is kept; the rest is
 * rebuilt during the layer's backward. */
int64_t wl_layer_kept_bytes(const wl_model *m, const wl_strategy *st)
{
    if (st->recompute == WL_RECOMPUTE_FULL)
        return (int64_t)m->seq * st->mb * m->hidden * wl_layer_act_bytes(st);
    return full_activation_bytes(m, st);
}

int64_t wl_layer_transient_bytes(const wl_model *m, const wl_strategy *st)
{
    if (st->recompute == WL_RECOMPUTE_FULL)
        return full_activation_bytes(m, st);
    return 0;
}

/* ---- the layer --------------------------------------------------------- */

struct wl_layer {
    wl_model m;
    wl_strategy st;
    int t;
    uint32_t act_alloc, act_free;      /* no recompute: a layer's activations */
    uint32_t ckpt_alloc, recomp_alloc; /* full recompute: layer input; rebuilt activations */
    uint32_t recomp_free;              /* full recompute: both */
    uint32_t ln1, qkv, attn, proj, post_attn, fc1, gelu, fc2, post_mlp;
    uint32_t post_mlp_b, fc2_dg, fc2_wg, gelu_b, fc1_dg, fc1_wg;
    uint32_t post_attn_b, proj_dg, proj_wg, attn_b, qkv_dg, qkv_wg, ln1_b;
    uint32_t tp_ar;
};

/* Shapes follow Megatron's 1-D layout (GEMM: batch x (m x k)(k x n)):
 * forward Y[sb, n] = X[sb, k]·W[k, n]; dgrad dX[sb, k] = dY[sb, n]·Wᵀ;
 * wgrad dW[k, n] = Xᵀ[k, sb]·dY[sb, n].  Element-wise byte counts are
 * read + write estimates. */
wl_layer *wl_layer_new(sim_schedule *s, const wl_model *m, const wl_strategy *st, sim_err *err)
{
    if (!m || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 || st->tp < 1 || st->mb < 1 ||
        m->heads % st->tp || m->hidden % st->tp || m->ffn % st->tp) {
        sim_errf(err, "layer: tp=%d must divide the heads, hidden and ffn sizes of model %s", st->tp,
                 m ? m->name : "(null)");
        return NULL;
    }
    wl_layer *L = calloc(1, sizeof *L);
    if (!L) {
        sim_errf(err, "out of memory");
        return NULL;
    }
    L->m = *m;
    L->st = *st;
    L->t = st->tp;
    sim_dtype dt = st->dtype;
    int64_t t = st->tp, sb = (int64_t)m->seq * st->mb, h = m->hidden, f = m->ffn, d = wl_layer_act_bytes(st);
    int64_t sbhd = sb * h * d;
    int64_t A = full_activation_bytes(m, st);

    L->act_alloc = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, A);
    L->act_free = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -A);
    L->ckpt_alloc = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, sbhd);
    L->recomp_alloc = L->act_alloc;
    L->recomp_free = wl_pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -(A + sbhd));

    L->ln1 = wl_pay_elem(s, "ln1", 2 * sbhd, dt);
    L->qkv = wl_pay_gemm(s, "qkv", sb, 3 * h / t, h, dt);
    /* attention core per TP rank: batch=b, m=heads/t, n=s, k=head_dim */
    L->attn = wl_pay_kernel(s, "attn", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, st->mb, 0, dt);
    L->proj = wl_pay_gemm(s, "proj", sb, h, h / t, dt);
    L->post_attn = wl_pay_elem(s, "post_attn", 6 * sbhd, dt); /* bias + dropout + residual + LN2 */
    L->fc1 = wl_pay_gemm(s, "fc1", sb, f / t, h, dt);
    L->gelu = wl_pay_elem(s, "gelu", 2 * sb * (f / t) * d, dt);
    L->fc2 = wl_pay_gemm(s, "fc2", sb, h, f / t, dt);
    L->post_mlp = wl_pay_elem(s, "post_mlp", 4 * sbhd, dt); /* bias + dropout + residual */

    L->post_mlp_b = wl_pay_elem(s, "post_mlp_bwd", 4 * sbhd, dt);
    L->fc2_dg = wl_pay_gemm(s, "fc2_dgrad", sb, f / t, h, dt);
    L->fc2_wg = wl_pay_gemm(s, "fc2_wgrad", f / t, h, sb, dt);
    L->gelu_b = wl_pay_elem(s, "gelu_bwd", 3 * sb * (f / t) * d, dt);
    L->fc1_dg = wl_pay_gemm(s, "fc1_dgrad", sb, h, f / t, dt);
    L->fc1_wg = wl_pay_gemm(s, "fc1_wgrad", h, f / t, sb, dt);
    L->post_attn_b = wl_pay_elem(s, "post_attn_bwd", 8 * sbhd, dt);
    L->proj_dg = wl_pay_gemm(s, "proj_dgrad", sb, h / t, h, dt);
    L->proj_wg = wl_pay_gemm(s, "proj_wgrad", h / t, h, sb, dt);
    /* The attention backward computes dQ, dK (two s×s×hd GEMMs) and dV,
     * d(probabilities) (two more): twice the forward's FLOPs, expressed as the
     * forward shape with the batch doubled. */
    L->attn_b = wl_pay_kernel(s, "attn_bwd", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, 2 * st->mb,
                              0, dt);
    L->qkv_dg = wl_pay_gemm(s, "qkv_dgrad", sb, h, 3 * h / t, dt);
    L->qkv_wg = wl_pay_gemm(s, "qkv_wgrad", h, 3 * h / t, sb, dt);
    L->ln1_b = wl_pay_elem(s, "ln1_bwd", 3 * sbhd, dt);

    L->tp_ar = wl_pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    return L;
}

void wl_layer_free(wl_layer *L)
{
    free(L);
}

static sim_tags tags(int layer, int micro, sim_phase ph)
{
    sim_tags t = {layer, micro, -1, (uint8_t)ph};
    return t;
}

/* Megatron ParallelTransformerLayer.forward (megatron/model/transformer.py). */
static void megatron_forward(wl_layer *L, wl_cursor *c, int layer, int micro, sim_phase ph, uint32_t alloc)
{
    sim_tags t = tags(layer, micro, ph);
    wl_cursor_mem(c, alloc, t);
    wl_cursor_comp(c, L->ln1, t);
    wl_cursor_comp(c, L->qkv, t);
    wl_cursor_comp(c, L->attn, t);
    wl_cursor_comp(c, L->proj, t);
    wl_cursor_tp_allreduce(c, L->t, L->tp_ar, t); /* RowParallelLinear: reduce_from_tensor_model_parallel_region */
    wl_cursor_comp(c, L->post_attn, t);
    wl_cursor_comp(c, L->fc1, t);
    wl_cursor_comp(c, L->gelu, t);
    wl_cursor_comp(c, L->fc2, t);
    wl_cursor_tp_allreduce(c, L->t, L->tp_ar, t);
    wl_cursor_comp(c, L->post_mlp, t);
}

static void megatron_backward(wl_layer *L, wl_cursor *c, int layer, int micro, int recompute)
{
    sim_tags t = tags(layer, micro, SIM_PHASE_BACKWARD);
    int full = L->st.recompute == WL_RECOMPUTE_FULL;
    if (full && recompute)
        megatron_forward(L, c, layer, micro, SIM_PHASE_RECOMPUTE, L->recomp_alloc);
    wl_cursor_comp(c, L->post_mlp_b, t);
    wl_cursor_comp(c, L->fc2_dg, t);
    wl_cursor_comp(c, L->fc2_wg, t);
    wl_cursor_comp(c, L->gelu_b, t);
    wl_cursor_comp(c, L->fc1_dg, t);
    /* ColumnParallelLinear backward: the input-gradient all-reduce is
     * launched asynchronously and overlaps the weight-gradient GEMM
     * (Megatron-LM --async-tensor-model-parallel-allreduce) */
    wl_cursor_tp_allreduce(c, L->t, L->tp_ar, t);
    wl_cursor_comp_overlap(c, L->fc1_wg, t);
    wl_cursor_comp(c, L->post_attn_b, t);
    wl_cursor_comp(c, L->proj_dg, t);
    wl_cursor_comp(c, L->proj_wg, t);
    wl_cursor_comp(c, L->attn_b, t);
    wl_cursor_comp(c, L->qkv_dg, t);
    wl_cursor_tp_allreduce(c, L->t, L->tp_ar, t);
    wl_cursor_comp_overlap(c, L->qkv_wg, t);
    wl_cursor_comp(c, L->ln1_b, t);
    wl_cursor_mem(c, full ? L->recomp_free : L->act_free, t);
}

void wl_layer_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    (void)flags;
    uint32_t alloc = L->st.recompute == WL_RECOMPUTE_FULL ? L->ckpt_alloc : L->act_alloc;
    for (int l = 0; l < n; l++)
        megatron_forward(L, c, first + l, micro, SIM_PHASE_FORWARD, alloc);
}

void wl_layer_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    (void)flags;
    if (L->st.recompute != WL_RECOMPUTE_FULL)
        return;
    for (int l = 0; l < n; l++)
        megatron_forward(L, c, first + l, micro, SIM_PHASE_RECOMPUTE, L->recomp_alloc);
}

void wl_layer_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, unsigned flags)
{
    for (int l = n - 1; l >= 0; l--)
        megatron_backward(L, c, first + l, micro, !(flags & WL_LAYER_RECOMPUTED));
}
