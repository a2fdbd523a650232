/* layer_oases.c — the Oases ladder (papers.md Sec. 1.3-1.5): recompute
 * without communication (optim_comm_checkpoint, and recompute=oases under
 * schedule=megatron), two sub-batches with one all-reduce in flight
 * (overlap_checkpoint), and both together (oases: windows W1-W4 forward,
 * V1-V4 backward).  The first rung, default_checkpoint, is the Megatron
 * layer (layer_megatron.c).
 *
 * Block names follow papers.md Sec. 1.4 (workloads/README.md): A = LN1 +
 * QKV + attention core + projection, P = post_attn, M = the MLP, Q =
 * post_mlp; subscripts are sub-batches, superscripts layers. */
#include "workloads/layer_emit.h"

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

/* ---- the family's operations ------------------------------------------- */

static void block_recompute_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    (void)rerun; /* the blocks are always rebuilt: nothing can have done it ahead */
    for (int l = first + n - 1; l >= first; l--)
        oases_sync_bwd(L, c, l, micro);
}

static void oases_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    oases_fwd(L, c, first, n, micro, SIM_PHASE_FORWARD);
}

static void oases_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    (void)rerun; /* recompute=oases: the blocks are rebuilt inside V1-V4 */
    oases_bwd(L, c, first, n, micro);
}

static void overlap_ckpt_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    for (int l = first + n - 1; l >= first; l--)
        overlap_ckpt_bwd_layer(L, c, l, micro, rerun);
}

/* optim_comm_checkpoint, and schedule=megatron with recompute=oases:
 * Megatron's forward, the blocks rebuilt from their saved outputs in
 * backward. */
const wl_layer_ops wl_layer_block_recompute_ops = {
    .subbatches = 1,
    .check = wl_layer_check_1d,
    .forward = wl_megatron_forward,
    .backward = block_recompute_backward,
};

/* overlap_checkpoint.  A recomputation ahead of the backward
 * (wl_layer_recompute) reruns the forward in Merak's level-2 form, two
 * all-reduces queued, as before the families were split; the rerun inside
 * its own backward keeps one in flight.  No pipeline of gpt.c asks for it
 * (merak_pre_recompute refuses this schedule). */
const wl_layer_ops wl_layer_overlap_ckpt_ops = {
    .subbatches = 2,
    .check = wl_layer_check_1d,
    .forward = oases_forward,
    .recompute = wl_merak_recompute,
    .backward = overlap_ckpt_backward,
};

/* oases: W1-W4 and V1-V4; its recompute mode is part of the schedule. */
const wl_layer_ops wl_layer_oases_ops = {
    .subbatches = 2,
    .check = wl_layer_check_1d,
    .forward = oases_forward,
    .backward = oases_backward,
};
