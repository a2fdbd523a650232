/* layer_tesseract.c — Tesseract's 2.5-D tensor parallelism (papers.md
 * Sec. 4.2-4.3, ColossalAI's 2.5-D layers): tp = q²·d ranks as a q×q grid
 * repeated d deep; every linear is q SUMMA steps of block broadcasts in the
 * grid's rows and columns, layer norms reduce their statistics in ROW, and
 * the weight gradients, replicated over depth, are all-reduced in DEP once
 * per step.  Its own payloads (the SUMMA steps, and the element-wise work
 * and attention core on the local [sb/(dq), h/q] block) replace the 1-D
 * layer's where the two differ. */
#include "workloads/layer_emit.h"

#include <stdio.h>
#include <string.h>

/* The grid side q of tp = q²·depth (checked to be exact by
 * wl_strategy_check_tp). */
static int tess_q(int64_t t, int depth)
{
    int q = 1;
    while ((int64_t)q * q * depth < t)
        q++;
    return q;
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

/* Weights and biases as [in/q, out/q] and [out/q] blocks, replicated over
 * depth; layer norms [h/q] (papers.md Sec. 4.2). */
static int64_t tess_params(const wl_model *m, const wl_strategy *st, int64_t t)
{
    int64_t q = tess_q(t, st->tess_depth), w, bias, norms;
    layer_param_parts(m, &w, &bias, &norms);
    return w / (q * q) + bias / q + norms / q;
}

static int tess_check(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    int q = tess_q(st->tp, st->tess_depth);
    if (q > 8)
        return sim_errf(err, "strategy: schedule=tesseract: q = %d; at most q = 8 (tp = 64·tess_depth) is supported", q);
    int dq = q * st->tess_depth;
    if (wl_model_kv_heads(m) % q)
        return sim_errf(err, "strategy: schedule=tesseract with q=%d: q must divide the %d K/V heads of %s (each grid "
                        "column holds whole K/V heads)", q, wl_model_kv_heads(m), m->name);
    if (m->heads % q || m->hidden % q || m->ffn % q || st->mb % dq)
        return sim_errf(err, "strategy: schedule=tesseract with q=%d, tess_depth=%d: q must divide the %d heads, hidden "
                        "%d and ffn %d of %s, and q·tess_depth = %d the micro-batch mb=%d (each depth slice and grid row "
                        "takes its own sequences, docs/papers.md Sec. 4.2)", q, st->tess_depth, m->heads, m->hidden,
                        m->ffn, m->name, dq, st->mb);
    return 0;
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


/* The SUMMA steps of the four linears, the statistics and gradient
 * all-reduces, and the local block's element-wise work and attention core
 * in place of the 1-D layer's (L->main). */
static void tess_build(wl_layer *L, sim_schedule *s)
{
    const wl_model *m = &L->m;
    const wl_strategy *st = &L->st;
    wl_tess *T = &L->T;
    int q = tess_q(st->tp, st->tess_depth);
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
    wl_opset_fp8(s, st, Mq * (h / q), Mq * (wl_model_qkv_out(m) / q), 2 * Mq * (h / q) + Mq * (f / q),
                 Mq * (wl_model_fc1_out(m, f) / q), 2 * Mq * (h / q), pw / ((int64_t)q * q), o);
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

/* ---- emitting ---------------------------------------------------------- */

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

/* ---- the family's operations ------------------------------------------- */

static void tess_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++)
        tess_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
}

static void tess_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++)
        tess_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
}

static void tess_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    for (int l = first + n - 1; l >= first; l--)
        tess_bwd(L, c, l, micro, rerun);
}

/* The weight gradients replicated over depth, all-reduced in DEP after the
 * last backward, one all-reduce per layer. */
static void tess_step_sync(wl_layer *L, wl_cursor *c, int first, int n, uint32_t after, uint32_t *last)
{
    if (L->T.d < 2)
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

const wl_layer_ops wl_layer_tesseract_ops = {
    .subbatches = 1,
    .sharded = 1,
    .check = tess_check,
    .build = tess_build,
    .params = tess_params,
    .forward = tess_forward,
    .recompute = tess_recompute,
    .backward = tess_backward,
    .step_sync = tess_step_sync,
};
