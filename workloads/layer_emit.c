/* layer_emit.c — appending a layer's operations to one rank's streams: the
 * cursor (layer.h), the payload builders, and the pieces every schedule
 * family emits alike (the attention core with its CP ring, the blocks of
 * papers.md Sec. 1.4, TP collectives, the cut-point gather, the
 * communicators created on first use).
 *
 * Kept apart from the families (layer_megatron.c, layer_oases.c,
 * layer_merak.c, layer_tesseract.c) so that a kernel or a collective is
 * appended one way whatever the schedule: each family decides only the order
 * and what overlaps what. */
#include "workloads/layer_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cursor ------------------------------------------------------------ */

void wl_cursor_init(wl_cursor *c, sim_schedule *s, int rank, int tp_comm)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->rank = rank;
    c->tp_comm = tp_comm;
    c->cp_next = c->cp_prev = -1;
    c->scp_send = c->scp_recv = -1;
    c->ep_comm = c->sep = -1;
    c->sc = sim_sched_stream_role(s, rank, "compute", SIM_ROLE_COMPUTE);
    c->stp = tp_comm >= 0 ? sim_sched_stream_role(s, rank, "tp", SIM_ROLE_TP) : -1;
}

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

uint32_t wl_pay_elem_cls(sim_schedule *s, const char *name, const int64_t by_class[SIM_MEMC_COUNT], sim_dtype dt)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ELEMENTWISE;
    p.dtype = (uint8_t)dt;
    p.name = sim_sched_str(s, name);
    for (int c = 0; c < SIM_MEMC_COUNT; c++) {
        p.bytes += by_class[c];
        if (c > SIM_MEMC_STREAM)
            p.class_bytes[c - 1] = by_class[c];
    }
    return sim_sched_payload(s, &p);
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

sim_tags wl_tags(int layer, int micro, int sub, sim_phase ph)
{
    sim_tags t = {layer, micro, (int8_t)sub, (uint8_t)ph};
    return t;
}

/* ---- communicators ----------------------------------------------------- */

/* The members of this rank's TP group, from its TP communicator. */
const sim_comm *wl_tp_group(const wl_cursor *c, int *idx)
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
int wl_sub_comm(wl_layer *L, wl_cursor *c, int me, int stride, int n, const char *kind,
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
uint32_t wl_emit_linear(wl_cursor *c, int layer, wl_linear lin, uint32_t pay, sim_tags t)
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
void wl_emit_attn_kernels(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    if (o->cp > 1)
        cp_ring_fwd(c, o, t);
    else
        wl_cursor_comp(c, o->attn, t);
}

void wl_emit_attn(wl_cursor *c, const wl_opset *o, sim_tags t)
{
    if (o->rope)
        wl_cursor_comp(c, o->rope_f, t);
    wl_emit_attn_kernels(c, o, t);
    if (o->fp8)
        wl_cursor_comp(c, o->cast_f, t);
}

void wl_emit_attn_bwd(wl_cursor *c, const wl_opset *o, sim_tags t)
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
uint32_t wl_emit_launch(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t)
{
    uint32_t dep = c->last_comp;
    return sim_sched_add(c->s, stream, pay, comm, t, &dep, 1);
}

/* The same, launched by the host after it waited for collective `waited`:
 * the explicit dependency records that the two were never in flight
 * together (the stream order alone would give the same timing). */
uint32_t wl_emit_launch_after(wl_cursor *c, int stream, uint32_t pay, int comm, sim_tags t, uint32_t waited)
{
    uint32_t deps[2] = {c->last_comp, waited};
    return sim_sched_add(c->s, stream, pay, comm, t, deps, 2);
}

int wl_tp_stream(wl_cursor *c)
{
    if (c->stp < 0)
        c->stp = sim_sched_stream_role(c->s, c->rank, "tp", SIM_ROLE_TP);
    return c->stp;
}

wl_lctx wl_lctx_of(wl_layer *L, wl_cursor *c, int layer, int half)
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
void wl_emit_sync_coll(wl_cursor *c, const wl_lctx *x, uint32_t pay, sim_tags t)
{
    if (x->t == 1)
        return;
    wl_cursor_pend(c, wl_emit_launch(c, wl_tp_stream(c), pay, x->comm, t));
}

/* ---- Oases: two sub-batches, one all-reduce in flight ------------------ */

/* The forward blocks of papers.md Sec. 1.4 for sub-batch k (1 or 2). */
void wl_emit_block_a(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->ln1, t);
    wl_cursor_comp(c, o->qkv, t);
    wl_emit_attn(c, o, t);
    wl_cursor_comp(c, o->proj, t);
}

void wl_emit_block_pm(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->post_attn, t);
    wl_cursor_comp(c, o->fc1, t);
    wl_cursor_comp(c, o->gelu, t);
    wl_cursor_comp(c, o->fc2, t);
}

void wl_emit_block_q(wl_cursor *c, const wl_opset *o, int layer, int micro, int k, sim_phase ph)
{
    sim_tags t = wl_tags(layer, micro, k, ph);
    wl_cursor_comp(c, o->post_mlp, t);
}

/* At the cut-point the input of each sub-batch is all-gathered along the
 * batch from the small TP groups (papers.md Sec. 1.4); the gather runs on its
 * own stream so that the all-reduce in flight does not hold it. */
void wl_emit_cut_gather(wl_layer *L, wl_cursor *c, int layer, int micro, int k)
{
    if (!L->st.tp_cut_tp || layer != L->st.tp_cut_layers)
        return;
    int small, trans;
    cut_comms(L, c, &small, &trans);
    sim_tags t = wl_tags(layer, micro, k, SIM_PHASE_FORWARD);
    int st = sim_sched_stream_role(c->s, c->rank, "tp-cut", SIM_ROLE_TP);
    wl_cursor_pend(c, wl_emit_launch(c, st, k < 0 ? L->main.gather : L->main_h.gather, trans, t));
}
