/* layer_megatron.c — the Megatron 1-D layer (Shoeybi et al. 2019,
 * "Megatron-LM", Sec. 3; papers.md Sec. 1.2) and what grows on it:
 * sequence parallelism (Korthikanti et al. 2022 Sec. 4.2.2), Megatron-Core's
 * TP communication overlap, MoE layers, the Oases cut-point, and the first
 * rung of the Oases ladder (default_checkpoint: the same layer, every
 * all-reduce synchronous).
 *
 * Column-parallel QKV and fc1, row-parallel projection and fc2; one
 * all-reduce after each row-parallel GEMM in forward and one after each
 * column-parallel GEMM's input gradient in backward, the latter overlapping
 * the weight-gradient GEMM (--async-tensor-model-parallel-allreduce).  Full
 * recompute reruns the whole layer forward, all-reduces included
 * (Megatron's CheckpointFunction); selective reruns the attention core. */
#include "workloads/layer_emit.h"

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

/* ---- MoE layers (wl_opset_moe) ------------------------------------------
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

/* The index of MoE layer `layer` among the model's MoE layers. */
static int moe_index(const wl_model *m, int layer)
{
    return (layer - m->moe_cfg.first) / m->moe_cfg.every;
}

/* The token-dependent payloads of this rank in MoE layer `layer`. */
static const wl_moe_pays *moe_pays(const wl_cursor *c, const wl_opset *o, const wl_model *m, int layer)
{
    const wl_moe_routed *r = c->routed;
    return r ? &r->p[(size_t)moe_index(m, layer) * r->ep + c->ep_index] : &o->mp;
}

/* Expert copies of a routed step (wl_moe_bal): one broadcast (forward) or
 * reduce (backward) per copied expert this rank holds, on the stream of
 * the layer's balancing, after `dep`; returns the last. */
static uint32_t copies_coll(wl_cursor *c, int q, int reduce, uint32_t dep, sim_tags t)
{
    wl_moe_bal *b = c->bal;
    int prophet = b->overlap[q];
    int stream = ep_stream(c);
    if (prophet) {
        if (b->sprophet < 0)
            b->sprophet = sim_sched_stream_role(c->s, c->rank, "prophet", SIM_ROLE_EP);
        stream = b->sprophet;
    }
    static const char *const names[2][2] = {{"shadow_bcast", "shadow_reduce"}, {"replica_bcast", "replica_reduce"}};
    uint32_t pay = wl_pay_coll(c->s, names[prophet][reduce], reduce ? SIM_COLL_REDUCE : SIM_COLL_BROADCAST,
                               reduce ? b->expert_grad_bytes : b->expert_bytes);
    uint32_t last = UINT32_MAX;
    for (int i = b->first[q]; i < b->first[q + 1]; i++)
        last = sim_sched_add(c->s, stream, pay, b->comm[i], t, &dep, dep != UINT32_MAX);
    return last;
}

/* Before micro-batch 0's forward of MoE layer q: Pro-Prophet broadcasts the
 * layer's copies once the previous MoE layer has combined micro-batch 0, so
 * the transfer runs under the layers in between (papers.md §5.2). */
static void copies_ahead(wl_cursor *c, int q, sim_tags t)
{
    wl_moe_bal *b = c->bal;
    if (!b || t.micro != 0 || t.phase != SIM_PHASE_FORWARD || !b->overlap[q] || b->first[q] == b->first[q + 1])
        return;
    uint32_t trig = UINT32_MAX;
    for (int p = q - 1; p >= 0 && trig == UINT32_MAX; p--)
        trig = b->end[p];
    b->ready[q] = b->last_side = copies_coll(c, q, 0, trig, t);
}

static void moe_fwd(wl_layer *L, wl_cursor *c, const wl_lctx *x, sim_tags t)
{
    const wl_opset *o = x->o;
    const wl_moe_pays *mp = moe_pays(c, o, &L->m, t.layer);
    int ep = wl_strategy_ep(&L->st) > 1, q = moe_index(&L->m, t.layer);
    int first = c->bal && t.micro == 0 && t.phase == SIM_PHASE_FORWARD;
    copies_ahead(c, q, t);
    if (L->st.sp)
        wl_emit_sync_coll(c, x, o->ag, t);
    wl_cursor_comp(c, o->router, t);
    uint32_t route = wl_cursor_comp(c, mp->route, t);
    if (first && !c->bal->overlap[q] && c->bal->first[q] < c->bal->first[q + 1])
        /* FasterMoE: the shadowed experts go out once the gate has decided,
         * on the all-to-all stream, ahead of the dispatch */
        c->bal->last_side = copies_coll(c, q, 0, route, t);
    uint32_t disp = ep ? wl_emit_launch(c, ep_stream(c), mp->disp, c->ep_comm, t) : UINT32_MAX;
    if (o->shared) {
        wl_cursor_comp(c, o->sfc1, t);
        wl_cursor_comp(c, o->sact, t);
        wl_cursor_comp(c, o->sfc2, t);
    }
    if (ep)
        wl_cursor_pend(c, disp);
    if (first && c->bal->ready[q] != UINT32_MAX)
        wl_cursor_pend(c, c->bal->ready[q]);
    wl_cursor_comp(c, mp->efc1, t);
    wl_cursor_comp(c, mp->eact, t);
    wl_cursor_comp(c, mp->efc2, t);
    uint32_t comb = ep ? wl_emit_launch(c, ep_stream(c), mp->comb, c->ep_comm, t) : UINT32_MAX;
    if (ep)
        wl_cursor_pend(c, comb);
    if (first)
        c->bal->end[q] = ep ? comb : c->last_comp;
    wl_cursor_comp(c, mp->unperm, t);
    wl_emit_sync_coll(c, x, L->st.sp ? o->rs : o->ar, t);
}

static void moe_bwd(wl_layer *L, wl_cursor *c, const wl_lctx *x, sim_tags t)
{
    const wl_opset *o = x->o;
    const wl_moe_pays *mp = moe_pays(c, o, &L->m, t.layer);
    int ep = wl_strategy_ep(&L->st) > 1, q = moe_index(&L->m, t.layer);
    if (L->st.sp)
        wl_emit_sync_coll(c, x, o->ag, t); /* gradient of the reduce-scatter */
    wl_cursor_comp(c, mp->unperm_b, t);
    if (ep)
        wl_cursor_pend(c, wl_emit_launch(c, ep_stream(c), mp->comb_b, c->ep_comm, t));
    wl_cursor_comp(c, mp->efc2_dg, t);
    wl_cursor_comp(c, mp->efc2_wg, t);
    wl_cursor_comp(c, mp->eact_b, t);
    wl_cursor_comp(c, mp->efc1_dg, t);
    uint32_t a2a = ep ? wl_emit_launch(c, ep_stream(c), mp->disp_b, c->ep_comm, t) : UINT32_MAX;
    uint32_t experts_done = wl_cursor_comp(c, mp->efc1_wg, t);
    if (c->bal && t.micro == c->bal->last_micro && c->bal->first[q] < c->bal->first[q + 1])
        /* the copies' gradients go home once per step, after the layer's
         * last backward: FasterMoE's on the all-to-all stream (the next
         * all-to-all waits), Pro-Prophet's on its own, under the layers
         * below */
        c->bal->last_side = copies_coll(c, q, 1, experts_done, t);
    if (o->shared) {
        wl_cursor_comp(c, o->sfc2_dg, t);
        wl_cursor_comp(c, o->sfc2_wg, t);
        wl_cursor_comp(c, o->sact_b, t);
        wl_cursor_comp(c, o->sfc1_dg, t);
        wl_cursor_comp(c, o->sfc1_wg, t);
    }
    if (ep)
        wl_cursor_pend(c, a2a);
    wl_cursor_comp(c, mp->perm_b, t);
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
    if (o->autocast) { /* torch.autocast: the layer's fp32 weights cast as its linears run */
        wl_cursor_mem(c, o->wc_alloc, t);
        wl_cursor_comp(c, o->wcast, t);
    }
    /* recompute=full keeps none of the forward's tensors, the casts neither */
    int drop = o->autocast && ph == SIM_PHASE_FORWARD && L->st.recompute == WL_RECOMPUTE_FULL;
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
        if (drop)
            wl_cursor_mem(c, o->wc_free, t);
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
    if (drop)
        wl_cursor_mem(c, o->wc_free, t);
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
    if (L->st.schedule == WL_TP_DEFAULT_CKPT) {
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
    if (o->autocast) { /* the weight gradients into fp32 .grad: taken by the step's first micro-batch, then added */
        wl_cursor_comp(c, o->gcast[micro > 0], t);
        wl_cursor_mem(c, o->wc_free, t);
    }
    wl_cursor_mem(c, rc == WL_RECOMPUTE_FULL || rc == WL_RECOMPUTE_SELECTIVE ? o->unboth : o->unkeep, t);
}

/* ---- the family's operations ------------------------------------------- */

void wl_megatron_forward(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++) {
        if (L->st.tp_cut_tp && l == L->st.tp_cut_layers)
            wl_emit_cut_gather(L, c, l, micro, -1);
        megatron_fwd(L, c, l, micro, SIM_PHASE_FORWARD, 1);
    }
}

static void megatron_recompute(wl_layer *L, wl_cursor *c, int first, int n, int micro)
{
    for (int l = first; l < first + n; l++)
        megatron_fwd(L, c, l, micro, SIM_PHASE_RECOMPUTE, 1);
}

static void megatron_backward(wl_layer *L, wl_cursor *c, int first, int n, int micro, int rerun)
{
    for (int l = first + n - 1; l >= first; l--)
        megatron_bwd(L, c, l, micro, rerun);
}

/* The payloads beyond the dense layer's: TP overlap's chunks, MoE layers'. */
static void megatron_build(wl_layer *L, sim_schedule *s)
{
    if (L->st.tp_overlap_comm)
        build_tpo(s, &L->m, &L->st, &L->main, &L->O);
    if (L->m.moe) {
        wl_opset_build(s, &L->m, &L->st, L->st.mb, L->st.tp, 1, &L->moe);
        wl_opset_moe(s, &L->m, &L->st, L->st.mb, L->st.tp, &L->moe);
    }
}

/* schedule=megatron and default_checkpoint (column_bwd tells them apart). */
const wl_layer_ops wl_layer_megatron_ops = {
    .subbatches = 1,
    .check = wl_layer_check_1d,
    .build = megatron_build,
    .forward = wl_megatron_forward,
    .recompute = megatron_recompute,
    .backward = megatron_backward,
};
