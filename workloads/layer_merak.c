/* layer_merak.c — Merak's sub-pipelined tensor parallelism (papers.md
 * Sec. 2.2), tp_overlap = tp_overlapping_level: level 1 splits each
 * row-parallel GEMM in two row halves so that the first half's all-reduce
 * runs beside the second half's GEMM; levels 2 and 3 split the micro-batch
 * into two sub-batches whose all-reduces queue behind each other's compute,
 * level 3 across layer boundaries. */
#include "workloads/layer_emit.h"

#include <string.h>

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

/* ---- the family's operations ------------------------------------------- */

static void merak_l1_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++)
        merak_l1_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
}

static void merak_l1_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++)
        merak_l1_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
}

static void merak_l1_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    for (int l = first + n - 1; l >= first; l--)
        merak_l1_bwd(L, c, l, micro, rerun);
}

/* Level 1 splits each linear's rows (the tokens) in halves. */
static int merak_l1_check(const wl_model *m, const wl_strategy *st, sim_err *err)
{
    if (wl_layer_check_1d(m, st, err))
        return -1;
    if ((int64_t)m->seq * st->mb % 2)
        return sim_errf(err, "strategy: schedule=merak,tp_overlap=1 splits each linear's rows in halves: seq·mb must be even");
    return 0;
}

static void merak_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    mqueue q = {{0, 0}, 0};
    merak_fwd(L, c, &q, first, n, micro, SIM_PHASE_FORWARD, L->st.tp_overlap == 3, 1);
}

/* The recomputation ahead of the backward: each layer in the level-2 form
 * (no deferral across layers), with its own queue. */
void wl_merak_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    mqueue q = {{0, 0}, 0};
    merak_fwd(L, c, &q, first, n, micro, SIM_PHASE_RECOMPUTE, 0, 1);
}

static void merak_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    merak_bwd(L, c, first, n, micro, rerun);
}

/* tp_overlap=1 */
const wl_layer_ops wl_layer_merak_l1_ops = {
    .subbatches = 1,
    .check = merak_l1_check,
    .forward = merak_l1_forward,
    .recompute = merak_l1_recompute,
    .backward = merak_l1_backward,
};

/* tp_overlap=2 and 3 */
const wl_layer_ops wl_layer_merak_ops = {
    .subbatches = 2,
    .check = wl_layer_check_1d,
    .forward = merak_forward,
    .recompute = wl_merak_recompute,
    .backward = merak_backward,
};
