/* chain.c — a chain of attention and MLP blocks, each under its own
 * strategy, as a schedule: the fragments that the seeds' planners price
 * (papers.md §7.F) and the whole plans they pick.
 *
 * The per-layer strategy keys are not in the workload generator yet, so the
 * chain is built here from the same kernel shapes as workloads/gpt.c
 * (Megatron 1-D TP: column-parallel QKV and fc1, row-parallel projection and
 * fc2, one all-reduce after each in forward and one per block in backward;
 * Shoeybi et al. 2019, Sec. 3) with these assumptions, stated because they
 * decide what the fragment costs mean:
 *  - one step of one batch by default; for Galvatron's PP outer loop
 *    (papers.md §3.4) the blocks can be spread over pp stages of `gpus` GPUs
 *    each, with micro-batches in GPipe order (all forwards, then all
 *    backwards) and one transfer per micro-batch and stage boundary, and a
 *    fragment can run on a stage's own GPUs (`first`);
 *  - the DP gradient all-reduce and the optimizer step run once per step
 *    after the last backward (no_sync / sync_only price them apart: the
 *    pipeline's per-micro-batch and per-step parts); SDP reduce-scatters
 *    every micro-batch's gradients (ZeRO-3 keeps only its shard);
 *  - every collective is waited for before the next kernel (no overlap), so
 *    a chain's time is the sum of its blocks' and reshardings' times up to
 *    flow-level effects: the exhaustive checks measure how close;
 *  - data parallel: gradient all-reduce per block after its backward; SDP
 *    (ZeRO-3 / FSDP, papers.md §3.1, §3.6): parameters all-gathered before
 *    forward and again before backward, gradients reduce-scattered, states
 *    sharded dp-way;
 *  - resharding between blocks whose (tp, layout) differ (papers.md §1.6
 *    cut point, §3.4): when TP grows (dp shrinks k-fold) the forward
 *    all-gathers the activations of k old replicas inside each new TP group
 *    and the backward slices; when TP shrinks the forward slices and the
 *    backward all-gathers the gradients; a layout change at equal degrees is
 *    an all-to-all both ways;
 *  - memory: weights, gradients and Adam states 16 B/param (fp32 and mixed
 *    precision, as gpt.c), activations per block as gpt.c's
 *    layer_activation_bytes split between the blocks, kept from forward to
 *    backward; SDP's gathered parameters are transient. */
#include "planner/chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"

void plan_bstrat_name(const plan_bstrat *s, int gpus, char *buf, size_t n)
{
    int dp = gpus / s->tp;
    if (dp == 1)
        snprintf(buf, n, "tp%d", s->tp);
    else if (s->tp == 1)
        snprintf(buf, n, "%s%d", s->sdp ? "sdp" : "dp", dp);
    else
        snprintf(buf, n, "tp%dx%s%d%s", s->tp, s->sdp ? "sdp" : "dp", dp, s->consec ? "" : "s");
}

/* Layout: index within the TP group and the DP group of rank r. */
static int tp_index(const plan_bstrat *s, int G, int r)
{
    int dp = G / s->tp;
    return s->consec ? r % s->tp : r / dp;
}
static int dp_index(const plan_bstrat *s, int G, int r)
{
    int dp = G / s->tp;
    return s->consec ? r / s->tp : r % dp;
}

typedef struct builder {
    sim_schedule *s;
    const plan_chain *c;
    int G;                /* GPUs per stage */
    int base;             /* global rank of the current stage's local rank 0 */
    int micro;            /* current micro-batch (tags) */
    int *sc, *scomm;      /* streams per global rank */
    int *ssend, *srecv;   /* pipeline p2p streams per global rank: [2r] forward, [2r+1] backward */
    uint32_t *last;       /* last compute op per global rank */
    uint32_t *pending;    /* last collective or receive per global rank, waited by the next compute */
    int *haspend;
    int *ranks;
} builder;

/* Communicators grouping the current stage's ranks by key[local rank];
 * returns per-local-rank communicator ids in out[], or -1 when groups have
 * size 1 or unequal sizes. */
static int make_groups(builder *b, const char *prefix, const int *key, int *out)
{
    int G = b->G, size = -1;
    for (int r = 0; r < G; r++)
        out[r] = -2;
    int ng = 0;
    for (int r = 0; r < G; r++) {
        if (out[r] != -2)
            continue;
        int n = 0;
        for (int q = r; q < G; q++)
            if (key[q] == key[r])
                b->ranks[n++] = q;
        if (size < 0)
            size = n;
        if (n != size)
            return -1;
        int id = -1;
        if (n > 1) {
            char name[64];
            int glob[4096];
            for (int i = 0; i < n; i++)
                glob[i] = b->base + b->ranks[i];
            snprintf(name, sizeof name, "%s.%d", prefix, ng++);
            id = sim_sched_comm(b->s, name, glob, n);
        }
        for (int i = 0; i < n; i++)
            out[b->ranks[i]] = id;
    }
    return size;
}

static sim_tags tgm(const builder *b, int layer, sim_phase ph)
{
    sim_tags t = {layer, b->micro, -1, (uint8_t)ph};
    return t;
}

/* l: local rank of the current stage */
static void comp(builder *b, int l, uint32_t payload, sim_tags t)
{
    int r = b->base + l;
    uint32_t dep = b->pending[r];
    b->last[r] = sim_sched_add(b->s, b->sc[r], payload, -1, t, b->haspend[r] ? &dep : NULL, b->haspend[r] ? 1 : 0);
    b->haspend[r] = 0;
}

static void coll(builder *b, int l, uint32_t payload, int comm, sim_tags t)
{
    if (comm < 0)
        return;
    int r = b->base + l;
    uint32_t deps[2] = {b->last[r], b->pending[r]};
    int nd = b->last[r] == UINT32_MAX ? 0 : 1;
    if (b->haspend[r])
        deps[nd++] = b->pending[r];
    b->pending[r] = sim_sched_add(b->s, b->scomm[r], payload, comm, t, nd ? deps : (deps + 1), nd);
    b->haspend[r] = 1;
}

/* Pipeline transfers between stages (GPipe, papers.md §3.4 / Galvatron's
 * PP): local rank l of one stage sends to local rank l of the next, after
 * its last compute; the receiver's next compute waits for the receive. */
/* One stream per direction, so that 1F1B's interleaved transfers each
 * wait only for their own peer. */
static void p2p_send(builder *b, int l, int peer, int bwd, uint32_t payload, sim_tags t)
{
    int r = b->base + l;
    uint32_t dep = b->last[r];
    sim_sched_add(b->s, b->ssend[2 * r + bwd], payload, peer, t, dep == UINT32_MAX ? NULL : &dep,
                  dep == UINT32_MAX ? 0 : 1);
}
static void p2p_recv(builder *b, int l, int peer, int bwd, uint32_t payload, sim_tags t)
{
    int r = b->base + l;
    uint32_t dep = b->pending[r];
    b->pending[r] = sim_sched_add(b->s, b->srecv[2 * r + bwd], payload, peer, t, b->haspend[r] ? &dep : NULL,
                                  b->haspend[r] ? 1 : 0);
    b->haspend[r] = 1;
}

static uint32_t kern(builder *b, const char *name, sim_kernel k, int64_t m, int64_t n, int64_t kk, int64_t batch,
                     int64_t bytes)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = (uint8_t)k;
    p.dtype = (uint8_t)b->c->dtype;
    p.name = sim_sched_str(b->s, name);
    p.m = m;
    p.n = n;
    p.k = kk;
    p.batch = batch;
    p.bytes = bytes;
    return sim_sched_payload(b->s, &p);
}
static uint32_t gemm(builder *b, const char *name, int64_t m, int64_t n, int64_t k)
{
    return kern(b, name, SIM_KERNEL_GEMM, m, n, k, 1, 0);
}
static uint32_t elem(builder *b, const char *name, int64_t bytes)
{
    return kern(b, name, SIM_KERNEL_ELEMENTWISE, 0, 0, 0, 0, bytes);
}
static uint32_t pcoll(builder *b, const char *name, sim_coll c, int64_t bytes)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COLLECTIVE;
    p.sub = (uint8_t)c;
    p.name = sim_sched_str(b->s, name);
    p.bytes = bytes > 0 ? bytes : 1;
    return sim_sched_payload(b->s, &p);
}
static uint32_t pp2p(builder *b, const char *name, sim_op_kind k, int64_t bytes, int tag)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = (uint8_t)k;
    p.name = sim_sched_str(b->s, name);
    p.bytes = bytes > 0 ? bytes : 1;
    p.tag = tag;
    return sim_sched_payload(b->s, &p);
}
static uint32_t pmem(builder *b, const char *name, sim_mem_kind k, int64_t delta)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_MEMORY;
    p.sub = (uint8_t)k;
    p.name = sim_sched_str(b->s, name);
    p.bytes = delta;
    return sim_sched_payload(b->s, &p);
}

typedef struct blockops {
    int tpc[4096], dpc[4096]; /* per-local-rank communicators (G <= 4096) */
} blockops;

static int64_t block_params(const wl_model *m, plan_block_kind k, int tp)
{
    int64_t h = m->hidden, f = m->ffn;
    return k == PLAN_ATTN ? (4 * h * h + 4 * h) / tp + 2 * h : (2 * h * f + f + h) / tp + 2 * h;
}

static int64_t block_act(const wl_model *m, plan_block_kind k, int tp, int64_t b, int64_t d)
{
    int64_t s = m->seq, h = m->hidden, f = m->ffn, a = m->heads, sbh = s * b * h;
    if (k == PLAN_ATTN)
        return sbh * (2 * d + 1) + d * sbh * 4 / tp + (a / tp) * s * s * b * (2 * d + 1);
    return sbh * (2 * d + 1) + d * s * b * 2 * f / tp;
}

static int resharding_groups(builder *b, const plan_bstrat *x, const plan_bstrat *y, int *key, int *comm, int *size)
{
    /* ranks that hold pieces of the same new replica: same TP group of the
     * bigger-TP layout, same index in the smaller-TP layout */
    const plan_bstrat *big = x->tp >= y->tp ? x : y, *small = x->tp >= y->tp ? y : x;
    for (int r = 0; r < b->G; r++)
        key[r] = dp_index(big, b->G, r) * small->tp + tp_index(small, b->G, r);
    *size = make_groups(b, "reshard", key, comm);
    return *size;
}

static void reshard(builder *b, const plan_bstrat *x, const plan_bstrat *y, int fwd, int idx, int *key, int *comm)
{
    const plan_chain *c = b->c;
    if (x->tp == y->tp && x->consec == y->consec)
        return;
    int G = b->G;
    int64_t d = c->dtype == SIM_DTYPE_FP32 || c->dtype == SIM_DTYPE_TF32 ? 4 : 2;
    int64_t sh = (int64_t)c->model->seq * c->model->hidden * d;
    sim_tags t = tgm(b, idx, fwd ? SIM_PHASE_FORWARD : SIM_PHASE_BACKWARD);
    int size = 0;
    int grow = y->tp > x->tp; /* forward direction x -> y */
    if (x->tp == y->tp || resharding_groups(b, x, y, key, comm, &size) < 0) {
        /* layout change at equal degree (or groups that do not tile): all-to-all over the stage's GPUs */
        for (int r = 0; r < G; r++)
            key[r] = 0;
        make_groups(b, "reshard-a2a", key, comm);
        uint32_t p = pcoll(b, "reshard_alltoall", SIM_COLL_ALLTOALL, c->batch / (G / x->tp) * sh);
        for (int r = 0; r < G; r++)
            coll(b, r, p, comm[r], t);
        return;
    }
    /* forward gathers when TP grows, backward gathers when TP shrinks */
    if (fwd == grow) {
        int newdp = G / (grow ? y->tp : x->tp);
        uint32_t p = pcoll(b, fwd ? "reshard_allgather" : "reshard_grad_allgather", SIM_COLL_ALLGATHER,
                           (int64_t)c->batch / newdp * sh);
        for (int r = 0; r < G; r++)
            coll(b, r, p, comm[r], t);
    } else {
        uint32_t p = elem(b, "reshard_slice", (int64_t)c->batch / (G / x->tp) * sh);
        for (int r = 0; r < G; r++)
            comp(b, r, p, t);
    }
}

static int stage_of(const plan_chain *c, int i)
{
    return c->pp > 1 ? c->stage[i] : 0;
}

/* One block's forward pass for one micro-batch on its stage's ranks. */
static void block_forward(builder *b, int i, blockops *bo, int *key, int *rcomm)
{
    const plan_chain *c = b->c;
    const wl_model *m = c->model;
    const plan_bstrat *s = &c->st[i];
    int G = b->G, tp = s->tp, dp = G / tp;
    int64_t d = c->dtype == SIM_DTYPE_FP32 || c->dtype == SIM_DTYPE_TF32 ? 4 : 2, wb = d;
    int64_t bb = c->batch / dp, sb = bb * m->seq, h = m->hidden, f = m->ffn, sbhd = sb * h * d;
    int64_t P = block_params(m, c->kind[i], tp);
    sim_tags t = tgm(b, i, SIM_PHASE_FORWARD);
    if (i > 0 && stage_of(c, i - 1) == stage_of(c, i))
        reshard(b, &c->st[i - 1], s, 1, i, key, rcomm);
    uint32_t gather = pcoll(b, "sdp_allgather", SIM_COLL_ALLGATHER, P * wb);
    uint32_t gmem = pmem(b, "sdp_params", SIM_MEM_BUFFERS, P * wb - (P + dp - 1) / dp * wb);
    uint32_t gfree = pmem(b, "sdp_params", SIM_MEM_BUFFERS, -(P * wb - (P + dp - 1) / dp * wb));
    uint32_t act = pmem(b, "activations", SIM_MEM_ACTIVATIONS, block_act(m, c->kind[i], tp, bb, d));
    uint32_t ops[6];
    int nops = 0;
    if (c->kind[i] == PLAN_ATTN) {
        ops[nops++] = elem(b, "ln1", 2 * sbhd);
        ops[nops++] = gemm(b, "qkv", sb, 3 * h / tp, h);
        ops[nops++] = kern(b, "attn", SIM_KERNEL_ATTENTION, m->heads / tp, m->seq, h / m->heads, bb, 0);
        ops[nops++] = gemm(b, "proj", sb, h, h / tp);
    } else {
        ops[nops++] = elem(b, "ln2", 2 * sbhd);
        ops[nops++] = gemm(b, "fc1", sb, f / tp, h);
        ops[nops++] = elem(b, "gelu", 2 * sb * (f / tp) * d);
        ops[nops++] = gemm(b, "fc2", sb, h, f / tp);
    }
    uint32_t ar = pcoll(b, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    uint32_t post = elem(b, "bias_dropout_residual", 4 * sbhd);
    for (int r = 0; r < G; r++) {
        if (s->sdp && dp > 1) {
            comp(b, r, gmem, t);
            coll(b, r, gather, bo[i].dpc[r], t);
        }
        comp(b, r, act, t);
        for (int k = 0; k < nops; k++)
            comp(b, r, ops[k], t);
        if (!c->no_comm)
            coll(b, r, ar, bo[i].tpc[r], t);
        comp(b, r, post, t);
        if (s->sdp && dp > 1)
            comp(b, r, gfree, t);
    }
}

/* One block's backward pass for one micro-batch; SDP reduce-scatters its
 * gradients every micro-batch (ZeRO-3 keeps only its shard), DP all-reduces
 * them once per step (block_sync). */
static void block_backward(builder *b, int i, blockops *bo, int *key, int *rcomm)
{
    const plan_chain *c = b->c;
    const wl_model *m = c->model;
    const plan_bstrat *s = &c->st[i];
    int G = b->G, tp = s->tp, dp = G / tp;
    int64_t d = c->dtype == SIM_DTYPE_FP32 || c->dtype == SIM_DTYPE_TF32 ? 4 : 2, wb = d, gbytes = d;
    int64_t bb = c->batch / dp, sb = bb * m->seq, h = m->hidden, f = m->ffn, sbhd = sb * h * d;
    int64_t P = block_params(m, c->kind[i], tp), Ps = s->sdp ? (P + dp - 1) / dp : P;
    sim_tags t = tgm(b, i, SIM_PHASE_BACKWARD);
    if (i < c->n - 1 && stage_of(c, i + 1) == stage_of(c, i))
        reshard(b, s, &c->st[i + 1], 0, i, key, rcomm);
    uint32_t gather = pcoll(b, "sdp_allgather", SIM_COLL_ALLGATHER, P * wb);
    uint32_t gmem = pmem(b, "sdp_params", SIM_MEM_BUFFERS, P * wb - Ps * wb);
    uint32_t gfree = pmem(b, "sdp_params", SIM_MEM_BUFFERS, -(P * wb - Ps * wb));
    uint32_t actf = pmem(b, "activations", SIM_MEM_ACTIVATIONS, -block_act(m, c->kind[i], tp, bb, d));
    uint32_t ops[8];
    int nops = 0;
    ops[nops++] = elem(b, "post_bwd", 4 * sbhd);
    if (c->kind[i] == PLAN_ATTN) {
        ops[nops++] = gemm(b, "proj_dgrad", sb, h / tp, h);
        ops[nops++] = gemm(b, "proj_wgrad", h / tp, h, sb);
        ops[nops++] = kern(b, "attn_bwd", SIM_KERNEL_ATTENTION, m->heads / tp, m->seq, h / m->heads, 2 * bb, 0);
        ops[nops++] = gemm(b, "qkv_dgrad", sb, h, 3 * h / tp);
        ops[nops++] = gemm(b, "qkv_wgrad", h, 3 * h / tp, sb);
        ops[nops++] = elem(b, "ln1_bwd", 3 * sbhd);
    } else {
        ops[nops++] = gemm(b, "fc2_dgrad", sb, f / tp, h);
        ops[nops++] = gemm(b, "fc2_wgrad", f / tp, h, sb);
        ops[nops++] = elem(b, "gelu_bwd", 3 * sb * (f / tp) * d);
        ops[nops++] = gemm(b, "fc1_dgrad", sb, h, f / tp);
        ops[nops++] = gemm(b, "fc1_wgrad", h, f / tp, sb);
        ops[nops++] = elem(b, "ln2_bwd", 3 * sbhd);
    }
    uint32_t ar = pcoll(b, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    uint32_t rs = pcoll(b, "sdp_reducescatter", SIM_COLL_REDUCESCATTER, P * gbytes);
    for (int r = 0; r < G; r++) {
        if (s->sdp && dp > 1) {
            comp(b, r, gmem, t);
            coll(b, r, gather, bo[i].dpc[r], t);
        }
        for (int k = 0; k < nops; k++)
            comp(b, r, ops[k], t);
        if (!c->no_comm) {
            coll(b, r, ar, bo[i].tpc[r], t);
            if (s->sdp)
                coll(b, r, rs, bo[i].dpc[r], t);
        }
        comp(b, r, actf, t);
        if (s->sdp && dp > 1)
            comp(b, r, gfree, t);
    }
}

/* The step's end for one block: DP gradient all-reduce, optimizer. */
static void block_sync(builder *b, int i, blockops *bo)
{
    const plan_chain *c = b->c;
    const plan_bstrat *s = &c->st[i];
    int G = b->G, dp = G / s->tp;
    int64_t d = c->dtype == SIM_DTYPE_FP32 || c->dtype == SIM_DTYPE_TF32 ? 4 : 2;
    int64_t P = block_params(c->model, c->kind[i], s->tp), Ps = s->sdp ? (P + dp - 1) / dp : P;
    uint32_t ar = pcoll(b, "dp_allreduce", SIM_COLL_ALLREDUCE, P * d);
    uint32_t opt = kern(b, "optimizer", SIM_KERNEL_OPTIMIZER, Ps, 0, 0, 0, 28 * Ps);
    for (int r = 0; r < G; r++) {
        if (!c->no_comm && !s->sdp)
            coll(b, r, ar, bo[i].dpc[r], tgm(b, i, SIM_PHASE_BACKWARD));
        comp(b, r, opt, tgm(b, i, SIM_PHASE_OPTIMIZER));
    }
}

sim_schedule *plan_chain_build(const plan_chain *c, sim_err *err)
{
    const wl_model *m = c->model;
    int G = c->gpus, PP = c->pp > 1 ? c->pp : 1, M = c->micro > 1 ? c->micro : 1;
    if (G < 1 || G > 4096 || c->n < 1 || c->batch < 1 || c->first < 0 || c->first + (int64_t)PP * G > 65536)
        return sim_errf(err, "chain: need 1..4096 GPUs per stage, blocks and a batch (got %d GPUs, %d blocks, batch %d)",
                        G, c->n, c->batch), NULL;
    for (int i = 0; i < c->n; i++) {
        const plan_bstrat *s = &c->st[i];
        if (s->tp < 1 || G % s->tp || m->heads % s->tp || m->hidden % s->tp || m->ffn % s->tp)
            return sim_errf(err, "chain block %d: tp=%d must divide the %d GPUs, %d heads, hidden %d and FFN %d", i,
                            s->tp, G, m->heads, m->hidden, m->ffn), NULL;
        if (c->batch % (G / s->tp))
            return sim_errf(err, "chain block %d: batch %d is not divisible by dp=%d", i, c->batch, G / s->tp), NULL;
        int k = stage_of(c, i);
        if (k < 0 || k >= PP || (i > 0 && k < stage_of(c, i - 1)) || (i == 0 && k != 0) ||
            (i == c->n - 1 && k != PP - 1) || (i > 0 && k > stage_of(c, i - 1) + 1))
            return sim_errf(err, "chain block %d: stage %d; expected every one of the %d stages to hold a run of blocks",
                            i, k, PP), NULL;
    }
    int R = c->first + PP * G;
    builder b;
    memset(&b, 0, sizeof b);
    b.c = c;
    b.G = G;
    b.s = sim_sched_new(R);
    b.sc = calloc((size_t)R, sizeof *b.sc);
    b.scomm = calloc((size_t)R, sizeof *b.scomm);
    b.ssend = calloc((size_t)R * 2, sizeof *b.ssend);
    b.srecv = calloc((size_t)R * 2, sizeof *b.srecv);
    b.last = malloc((size_t)R * sizeof *b.last);
    b.pending = calloc((size_t)R, sizeof *b.pending);
    b.haspend = calloc((size_t)R, sizeof *b.haspend);
    b.ranks = calloc((size_t)G, sizeof *b.ranks);
    int *key = calloc((size_t)G, sizeof *key), *rcomm = calloc((size_t)G, sizeof *rcomm);
    blockops *bo = calloc((size_t)c->n, sizeof *bo);
    int *ord = calloc((size_t)2 * M, sizeof *ord);
    if (!ord || !b.s || !b.sc || !b.scomm || !b.ssend || !b.srecv || !b.last || !b.pending || !b.haspend || !b.ranks || !key ||
        !rcomm || !bo) {
        sim_errf(err, "out of memory");
        goto fail;
    }
    snprintf(b.s->meta.name, sizeof b.s->meta.name, "%s chain of %d blocks", m->name, c->n);
    b.s->meta.samples_per_iteration = (double)c->batch * M;
    b.s->meta.tokens_per_iteration = (double)c->batch * M * m->seq;
    b.s->meta.dtype = c->dtype;
    for (int r = 0; r < R; r++) {
        b.sc[r] = sim_sched_stream(b.s, r, "compute");
        b.scomm[r] = sim_sched_stream(b.s, r, "comm");
        if (PP > 1 && r >= c->first) {
            b.ssend[2 * r] = sim_sched_stream(b.s, r, "p2p_send_fwd");
            b.ssend[2 * r + 1] = sim_sched_stream(b.s, r, "p2p_send_bwd");
            b.srecv[2 * r] = sim_sched_stream(b.s, r, "p2p_recv_fwd");
            b.srecv[2 * r + 1] = sim_sched_stream(b.s, r, "p2p_recv_bwd");
        }
        b.last[r] = UINT32_MAX;
    }
    /* GPUs before the first stage take no part (a stage's fragment on its
     * own GPUs); a schedule needs an operation per rank */
    uint32_t nop = elem(&b, "nop", 4);
    for (int r = 0; r < c->first; r++)
        comp(&b, r, nop, tgm(&b, -1, SIM_PHASE_NONE));
    b.base = c->first;
    int64_t d = c->dtype == SIM_DTYPE_FP32 || c->dtype == SIM_DTYPE_TF32 ? 4 : 2;
    int64_t wb = d, gbytes = d, ob = 16 - 2 * d;
    if (c->reshard_only) {
        if (c->n < 2) {
            sim_errf(err, "chain: resharding needs two blocks");
            goto fail;
        }
        reshard(&b, &c->st[0], &c->st[1], 1, 0, key, rcomm);
        reshard(&b, &c->st[0], &c->st[1], 0, 0, key, rcomm);
        for (int r = 0; r < G; r++)
            comp(&b, r, nop, tgm(&b, -1, SIM_PHASE_NONE));
        goto done;
    }
    /* communicators and persistent memory */
    for (int i = 0; i < c->n; i++) {
        const plan_bstrat *s = &c->st[i];
        char pre[48];
        b.base = c->first + stage_of(c, i) * G;
        for (int r = 0; r < G; r++)
            key[r] = s->consec ? r / s->tp : r % (G / s->tp);
        snprintf(pre, sizeof pre, "tp.b%d", i);
        make_groups(&b, pre, key, bo[i].tpc);
        for (int r = 0; r < G; r++)
            key[r] = tp_index(s, G, r);
        snprintf(pre, sizeof pre, "dp.b%d", i);
        make_groups(&b, pre, key, bo[i].dpc);
        int dp = G / s->tp;
        int64_t P = block_params(m, c->kind[i], s->tp), Ps = s->sdp ? (P + dp - 1) / dp : P;
        sim_tags t = tgm(&b, i, SIM_PHASE_NONE);
        uint32_t pw = pmem(&b, "weights", SIM_MEM_WEIGHTS, Ps * wb), pg = pmem(&b, "gradients", SIM_MEM_GRADIENTS, Ps * gbytes),
                 po = pmem(&b, "optimizer", SIM_MEM_OPTIMIZER, Ps * ob);
        for (int r = 0; r < G; r++) {
            comp(&b, r, pw, t);
            comp(&b, r, pg, t);
            comp(&b, r, po, t);
        }
    }
    /* Per stage GPipe (Galvatron-1's pipeline, papers.md §3.2-3.4) or 1F1B
     * (Galvatron-2's pipedream_flush, §3.2); a stage
     * receives a micro-batch's input from the previous stage and sends its
     * output on, as one transfer split evenly over the stage's GPU pairs
     * (the re-layout for the next stage's first strategy is not modelled) */
    int64_t xfer = ((int64_t)c->batch * m->seq * m->hidden * d + G - 1) / G;
    uint32_t sa = pp2p(&b, "send_act", SIM_OP_SEND, xfer, 0), ra = pp2p(&b, "recv_act", SIM_OP_RECV, xfer, 0);
    uint32_t sg = pp2p(&b, "send_grad", SIM_OP_SEND, xfer, 1), rg = pp2p(&b, "recv_grad", SIM_OP_RECV, xfer, 1);
    for (int k = 0; k < PP && !c->sync_only; k++) {
        int lo = 0, hi = 0;
        while (lo < c->n && stage_of(c, lo) < k)
            lo++;
        for (hi = lo; hi < c->n && stage_of(c, hi) == k;)
            hi++;
        b.base = c->first + k * G;
        /* GPipe: every forward, then every backward in reverse; 1F1B
         * (PipeDream-flush): PP - k - 1 warm-up forwards, then one forward
         * and one backward in turn, then the remaining backwards.  ord[]:
         * j + 1 = forward of micro-batch j, -(j + 1) = its backward */
        int no = 0;
        if (!c->one_f_one_b || c->fwd_only) {
            for (int j = 0; j < M; j++)
                ord[no++] = j + 1;
            for (int j = M - 1; j >= 0 && !c->fwd_only; j--)
                ord[no++] = -(j + 1);
        } else {
            int warm = PP - k - 1 < M ? PP - k - 1 : M;
            for (int j = 0; j < warm; j++)
                ord[no++] = j + 1;
            for (int j = 0; j < M - warm; j++) {
                ord[no++] = warm + j + 1;
                ord[no++] = -(j + 1);
            }
            for (int j = M - warm; j < M; j++)
                ord[no++] = -(j + 1);
        }
        for (int q = 0; q < no; q++) {
            int fwd = ord[q] > 0;
            if (fwd) {
                b.micro = ord[q] - 1;
                for (int l = 0; l < G && k > 0; l++)
                    p2p_recv(&b, l, b.base - G + l, 0, ra, tgm(&b, -1, SIM_PHASE_FORWARD));
                for (int i = lo; i < hi; i++)
                    block_forward(&b, i, bo, key, rcomm);
                for (int l = 0; l < G && k < PP - 1; l++)
                    p2p_send(&b, l, b.base + G + l, 0, sa, tgm(&b, -1, SIM_PHASE_FORWARD));
            } else {
                b.micro = -ord[q] - 1;
                for (int l = 0; l < G && k < PP - 1; l++)
                    p2p_recv(&b, l, b.base + G + l, 1, rg, tgm(&b, -1, SIM_PHASE_BACKWARD));
                for (int i = hi - 1; i >= lo; i--)
                    block_backward(&b, i, bo, key, rcomm);
                for (int l = 0; l < G && k > 0; l++)
                    p2p_send(&b, l, b.base - G + l, 1, sg, tgm(&b, -1, SIM_PHASE_BACKWARD));
            }
        }
    }
    b.micro = 0;
    for (int i = c->n - 1; i >= 0 && !c->no_sync && !c->fwd_only; i--) {
        b.base = c->first + stage_of(c, i) * G;
        block_sync(&b, i, bo);
    }
done:
    free(b.sc);
    free(b.scomm);
    free(b.ssend);
    free(b.srecv);
    free(b.last);
    free(b.pending);
    free(b.haspend);
    free(b.ranks);
    free(key);
    free(rcomm);
    free(bo);
    free(ord);
    return b.s;
fail:
    sim_sched_free(b.s);
    b.s = NULL;
    goto done;
}

/* Simulates s (default options, in a forked process) and frees it. */
static int run_and_free(sim_schedule *s, const sim_machine *m, sim_result *r, sim_err *err)
{
    sim_options opt;
    sim_options_default(&opt);
    int rc = sim_run_isolated(s, m, &opt, r, err);
    sim_sched_free(s);
    return rc;
}

int plan_chain_run(const plan_chain *c, const sim_machine *m, plan_chain_out *out, sim_err *err)
{
    int PP = c->pp > 1 ? c->pp : 1;
    if (c->first + PP * c->gpus > m->ngpus)
        return sim_errf(err, "chain: GPUs %d..%d asked, the platform has %d", c->first, c->first + PP * c->gpus - 1,
                        m->ngpus);
    sim_schedule *s = plan_chain_build(c, err);
    if (!s)
        return -1;
    sim_result r;
    if (run_and_free(s, m, &r, err) < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->time_s = r.iteration_s;
    out->peak = r.peak_mem;
    for (int i = 0; i < r.nranks; i++)
        for (int k = 0; k < SIM_MEM_KIND_COUNT; k++)
            if (r.rank[i].peak_by_kind[k] > out->peak_kind[k])
                out->peak_kind[k] = r.rank[i].peak_by_kind[k];
    sim_result_free(&r);
    return 0;
}

int plan_chain_simulate(const plan_chain *c, const sim_machine *m, double *time_s, double *peak_bytes, sim_err *err)
{
    plan_chain_out o;
    if (plan_chain_run(c, m, &o, err) < 0)
        return -1;
    *time_s = o.time_s;
    if (peak_bytes)
        *peak_bytes = o.peak;
    return 0;
}

int plan_p2p_time(const sim_machine *m, int first, int gpus, int64_t bytes, double *time_s, sim_err *err)
{
    int R = first + 2 * gpus;
    if (first < 0 || gpus < 1 || R > m->ngpus)
        return sim_errf(err, "p2p: GPUs %d..%d asked, the platform has %d", first, R - 1, m->ngpus);
    sim_schedule *s = sim_sched_new(R);
    if (!s)
        return sim_errf(err, "out of memory");
    for (int r = 0; r < first; r++)
        sim_sched_kernel(s, sim_sched_stream(s, r, "compute"), "nop", SIM_KERNEL_ELEMENTWISE, 0, 0, 0, 0, 4,
                         SIM_DTYPE_FP32, SIM_NO_TAGS, NULL, 0);
    for (int j = 0; j < gpus; j++) {
        sim_sched_send(s, sim_sched_stream(s, first + j, "p2p_send"), "send_act", first + gpus + j, bytes, 0,
                       SIM_NO_TAGS, NULL, 0);
        sim_sched_recv(s, sim_sched_stream(s, first + gpus + j, "p2p_recv"), "recv_act", first + j, bytes, 0,
                       SIM_NO_TAGS, NULL, 0);
    }
    sim_result r;
    if (run_and_free(s, m, &r, err) < 0)
        return -1;
    *time_s = r.iteration_s;
    sim_result_free(&r);
    return 0;
}

int plan_world_allreduce(const sim_machine *m, int gpus, int64_t bytes, double *time_s, sim_err *err)
{
    sim_schedule *s = sim_sched_new(gpus);
    if (!s)
        return sim_errf(err, "out of memory");
    int *ranks = malloc(sizeof(int) * (size_t)gpus);
    for (int r = 0; r < gpus; r++)
        ranks[r] = r;
    int comm = sim_sched_comm(s, "world", ranks, gpus);
    free(ranks);
    for (int r = 0; r < gpus; r++) {
        int st = sim_sched_stream(s, r, "comm");
        sim_sched_collective(s, st, "world_allreduce", SIM_COLL_ALLREDUCE, comm, bytes, 0, SIM_NO_TAGS, NULL, 0);
    }
    sim_result r;
    if (run_and_free(s, m, &r, err) < 0)
        return -1;
    *time_s = r.iteration_s;
    sim_result_free(&r);
    return 0;
}
