/* gpt.c — the GPT decoder under Megatron-LM's 3-D parallelism, as a schedule.
 *
 * Strategy: 1-D tensor parallelism inside each layer (Shoeybi et al. 2019,
 * "Megatron-LM", Sec. 3: column-parallel QKV and fc1, row-parallel output
 * projection and fc2, one all-reduce after each row-parallel GEMM in forward
 * and one after each column-parallel GEMM's input gradient in backward); the
 * non-interleaved 1F1B pipeline (PipeDream-Flush; Narayanan et al. 2021,
 * "Efficient Large-Scale Language Model Training on GPU Clusters Using
 * Megatron-LM", Sec. 2.2.1, Fig. 4 top; Megatron-LM
 * `forward_backward_pipelining_without_interleaving`); data parallelism with
 * gradient all-reduce at the end of the step (the Oases benchmark's
 * `reduce_grad`, papers.md Sec. 1.2), in buckets.
 *
 * Streams per rank (each one in-order, as on a CUDA stream):
 *   "compute"        every kernel and every memory effect
 *   "tp"             tensor-parallel all-reduces (one communicator per TP group)
 *   "dp"             data-parallel gradient all-reduces, then the embedding
 *                    all-reduce between first and last stage
 *   "pp-send-next", "pp-recv-prev", "pp-send-prev", "pp-recv-next"
 *                    pipeline messages, one stream per direction and role so that
 *                    a blocked send never stops a receive (no deadlock).
 * A receive has no dependencies (it is posted ahead); the compute that consumes
 * its data depends on it.  A send depends on the compute that produced the data.
 *
 * Size: GPT-3 175B on 1,024 GPUs (tp 8, pp 16, dp 8, 192 micro-batches) is
 * 34 M operations (48 M with full recompute), generated in ~1.3 s (~2.2 s)
 * with a 1.25 GB (1.8 GB) resident set, nearly all of it the sim_op array.
 * The generator builds every distinct payload once (shapes are equal on all
 * ranks) and appends operations with sim_sched_add() by payload index, so it
 * does no string or hash work per operation and runs in time linear in the
 * operations.
 *
 * Memory (wl_gpt_check, and the memory operations of the schedule, which
 * agree by construction): see stage_memory() below and workloads/README.md. */
#include "workloads/gpt.h"
#include "workloads/layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GB 1e9
#define CONTEXT_BYTES (1ll << 30) /* CUDA context + framework workspace: a constant 1 GiB */

/* A strategy resolved against a model and a machine. */
typedef struct plan {
    wl_strategy st; /* dp and gb filled */
    int t, p, d;    /* tp, pp, dp */
    int nmb;        /* micro-batches per pipeline */
    int lp;         /* layers per stage */
    int64_t vp;     /* vocabulary padded to a multiple of 128*tp (Megatron's
                       --make-vocab-size-divisible-by 128) */
    int64_t ab;     /* activation bytes per element */
    int64_t wbytes, gbytes, obytes; /* weight, gradient, optimizer-state bytes per parameter */
} plan;

/* ---- checks ------------------------------------------------------------ */

static int resolve(const wl_model *m, const wl_strategy *st, const sim_machine *mach, plan *pl, sim_err *err)
{
    if (!m || m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 || m->vocab < 1)
        return sim_errf(err, "model %s: layers, hidden, heads, ffn, seq and vocab must be positive",
                        m ? m->name : "(null)");
    if (m->hidden % m->heads)
        return sim_errf(err, "model %s: hidden %d is not divisible by heads %d", m->name, m->hidden, m->heads);
    if (st->tp < 1 || st->pp < 1 || st->dp < 0 || st->mb < 1 || st->gb < 0)
        return sim_errf(err, "strategy: tp, pp and mb must be positive, dp and gb positive or auto (got tp=%d, "
                        "pp=%d, dp=%d, mb=%d, gb=%d)", st->tp, st->pp, st->dp, st->mb, st->gb);
    if (st->dp_bucket_bytes < 1)
        return sim_errf(err, "strategy: bucket: expected a positive size, got %lld bytes",
                        (long long)st->dp_bucket_bytes);
    if (st->dtype != SIM_DTYPE_FP32 && st->dtype != SIM_DTYPE_TF32 && st->dtype != SIM_DTYPE_FP16 &&
        st->dtype != SIM_DTYPE_BF16)
        return sim_errf(err, "strategy: dtype: expected fp32, tf32, fp16 or bf16, got %s", sim_dtype_name(st->dtype));
    memset(pl, 0, sizeof *pl);
    pl->st = *st;
    long long tpp = (long long)st->tp * st->pp;
    if (st->dp == 0) {
        if (!mach)
            return sim_errf(err, "strategy: dp=auto needs a platform to take the GPU count from");
        if (mach->ngpus % tpp)
            return sim_errf(err, "tp*pp = %d*%d = %lld does not divide the %d GPUs of the platform%s%s; "
                            "give dp explicitly or change tp/pp",
                            st->tp, st->pp, tpp, mach->ngpus, mach->name[0] ? " " : "", mach->name);
        pl->st.dp = (int)(mach->ngpus / tpp);
    } else if (mach && tpp * st->dp != mach->ngpus) {
        return sim_errf(err, "tp*pp*dp = %d*%d*%d = %lld GPUs, but the platform%s%s has %d GPUs", st->tp, st->pp,
                        st->dp, tpp * st->dp, mach->name[0] ? " " : "", mach->name, mach->ngpus);
    }
    if (m->heads % st->tp)
        return sim_errf(err, "tp=%d does not divide the %d attention heads of %s", st->tp, m->heads, m->name);
    if (m->hidden % st->tp)
        return sim_errf(err, "tp=%d does not divide the hidden size %d of %s", st->tp, m->hidden, m->name);
    if (m->ffn % st->tp)
        return sim_errf(err, "tp=%d does not divide the FFN size %d of %s", st->tp, m->ffn, m->name);
    if (m->layers % st->pp)
        return sim_errf(err, "pp=%d does not divide the %d layers of %s", st->pp, m->layers, m->name);
    long long mbdp = (long long)st->mb * pl->st.dp;
    if (pl->st.gb == 0) {
        if (mbdp > 0x7fffffff)
            return sim_errf(err, "gb = mb*dp = %lld is too large", mbdp);
        pl->st.gb = (int)mbdp;
    }
    if (pl->st.gb % mbdp)
        return sim_errf(err, "gb=%d is not divisible by mb*dp = %d*%d = %lld (it would give %.2f micro-batches "
                        "per pipeline)", pl->st.gb, st->mb, pl->st.dp, mbdp, (double)pl->st.gb / (double)mbdp);
    pl->t = st->tp;
    pl->p = st->pp;
    pl->d = pl->st.dp;
    pl->nmb = (int)(pl->st.gb / mbdp);
    pl->lp = m->layers / st->pp;
    int64_t mult = 128ll * st->tp;
    pl->vp = ((int64_t)m->vocab + mult - 1) / mult * mult;
    int fp32 = st->dtype == SIM_DTYPE_FP32 || st->dtype == SIM_DTYPE_TF32;
    pl->ab = fp32 ? 4 : 2;
    /* 16 bytes per parameter in every precision: fp32 keeps weights 4 +
     * gradients 4 + Adam m, v 8; mixed precision keeps fp16/bf16 weights 2 +
     * gradients 2 + fp32 master weights, m, v 12 (Rajbhandari et al. 2020,
     * ZeRO, Sec. 3.1).  Megatron's fp32 main-grad accumulation buffer (+2) is
     * not counted. */
    pl->wbytes = fp32 ? 4 : 2;
    pl->gbytes = fp32 ? 4 : 2;
    pl->obytes = fp32 ? 8 : 12;
    return 0;
}

/* Parameters held by one rank of a stage.  Per layer (see wl_model_params):
 * QKV weight and bias, output-projection weight, fc1 weight and bias and fc2
 * weight are split over tp (4h^2 + 2h*ffn + 3h + ffn); the row-parallel biases
 * (2h) and the two layer norms (4h) are replicated: 6h.  The first stage holds
 * its vocab/tp slice of the word embeddings and the whole position embedding;
 * the last stage the final layer norm and, when pp>1, its own copy of the
 * tied word embeddings for the output layer (Megatron keeps both copies in
 * sync with the embedding-group all-reduce). */
static int64_t stage_params(const wl_model *m, const plan *pl, int stage)
{
    int64_t h = m->hidden, f = m->ffn, t = pl->t;
    int64_t per_layer = (4 * h * h + 2 * h * f + 3 * h + f) / t + 6 * h;
    int64_t n = pl->lp * per_layer;
    if (stage == 0)
        n += pl->vp / t * h + (int64_t)m->seq * h;
    if (stage == pl->p - 1)
        n += 2 * h + (pl->p > 1 ? pl->vp / t * h : 0);
    return n;
}

/* Peak memory of one rank of a stage under 1F1B.  Stage i has min(pp - i, m)
 * micro-batches in flight (Narayanan et al. 2021, Sec. 2.2.1).  Without
 * recompute each keeps every layer's activations; with full recompute each
 * keeps only the layer inputs (d·sbh per layer) and one layer's activations
 * are rebuilt during its backward.  The last stage also holds its fp32 logits
 * s·b·(V/tp)·4 from the output layer to the loss backward.  Buffers are the
 * pipeline receive buffers (d·sbh per neighbour). */
static void stage_memory(const wl_model *m, const plan *pl, int stage, wl_memory *mem, int *inflight)
{
    int64_t params = stage_params(m, pl, stage);
    int64_t sbhd = (int64_t)m->seq * pl->st.mb * m->hidden * pl->ab;
    int64_t kept = wl_layer_kept_bytes(m, &pl->st), transient = wl_layer_transient_bytes(m, &pl->st);
    int64_t logits = (int64_t)m->seq * pl->st.mb * (pl->vp / pl->t) * 4;
    int n = pl->p - stage < pl->nmb ? pl->p - stage : pl->nmb;
    int last = stage == pl->p - 1;
    /* the logits are freed before the first layer's backward (and so before
     * any recomputation) */
    if (last && logits > transient)
        transient = logits;
    int64_t act = (int64_t)n * pl->lp * kept + transient;
    memset(mem, 0, sizeof *mem);
    mem->weights = (double)(params * pl->wbytes);
    mem->gradients = (double)(params * pl->gbytes);
    mem->optimizer = (double)(params * pl->obytes);
    mem->activations = (double)act;
    mem->buffers = (double)((stage > 0 ? sbhd : 0) + (!last ? sbhd : 0));
    mem->context = (double)CONTEXT_BYTES;
    mem->total = mem->weights + mem->gradients + mem->optimizer + mem->activations + mem->buffers + mem->context;
    if (inflight)
        *inflight = n;
}

static int check_plan(const wl_model *m, const plan *pl, const sim_machine *mach, wl_memory *peak, sim_err *err)
{
    wl_memory best = {0}, worst_mem = {0};
    int worst = -1, worst_n = 0;
    double worst_over = 0, worst_cap = 0;
    const char *worst_gpu = "";
    for (int i = 0; i < pl->p; i++) {
        wl_memory mem;
        int n;
        stage_memory(m, pl, i, &mem, &n);
        if (mem.total > best.total)
            best = mem;
        if (!mach)
            continue;
        /* the smallest GPU of the stage */
        double cap = 0;
        const char *gpu = "";
        int per_stage = pl->t * pl->d;
        for (int r = i * per_stage; r < (i + 1) * per_stage && r < mach->ngpus; r++) {
            const sim_gpu *g = sim_machine_gpu(mach, r);
            if (g->mem_capacity > 0 && (cap == 0 || g->mem_capacity < cap)) {
                cap = g->mem_capacity;
                gpu = g->model;
            }
        }
        if (cap > 0 && mem.total > cap && mem.total - cap > worst_over) {
            worst = i;
            worst_over = mem.total - cap;
            worst_mem = mem;
            worst_n = n;
            worst_cap = cap;
            worst_gpu = gpu;
        }
    }
    if (peak)
        *peak = best;
    if (worst >= 0) {
        const char *hint = pl->st.recompute == WL_RECOMPUTE_NONE ? "recompute=full, a smaller mb, or more pp/tp"
                           : pl->st.mb > 1                       ? "a smaller mb, or more pp/tp"
                                                                 : "more pp/tp";
        return sim_errf(err,
                        "out of GPU memory on stage %d: needs %.1f GB per GPU (weights %.1f, gradients %.1f, "
                        "optimizer %.1f, activations %.1f for %d micro-batch%s in flight, buffers %.1f, context "
                        "%.1f) but the %s has %.1f GB; try %s",
                        worst, worst_mem.total / GB, worst_mem.weights / GB, worst_mem.gradients / GB,
                        worst_mem.optimizer / GB, worst_mem.activations / GB, worst_n, worst_n == 1 ? "" : "es",
                        worst_mem.buffers / GB, worst_mem.context / GB, worst_gpu[0] ? worst_gpu : "GPU",
                        worst_cap / GB, hint);
    }
    return 0;
}

int wl_gpt_resolve(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_strategy *out,
                   sim_err *err)
{
    plan pl;
    if (resolve(m, st, mach, &pl, err))
        return -1;
    *out = pl.st;
    return 0;
}

int wl_gpt_check(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_memory *peak, sim_err *err)
{
    plan pl;
    if (resolve(m, st, mach, &pl, err))
        return -1;
    return check_plan(m, &pl, mach, peak, err);
}

/* Narayanan et al. 2021, Eq. 3 without recomputation:
 * 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)).  Per layer the forward pass does
 * 2·B·s·h·(3h + h + 2·ffn) GEMM FLOPs (QKV, projection, fc1, fc2) and
 * 4·B·s²·h in attention (QKᵀ and attention×V); the logits add 2·B·s·h·V; the
 * backward pass doubles each.  So in general
 *   3·L·B·s·h·(8h + 4·ffn + 4s) + 6·B·s·h·V,
 * which is Eq. 3 for ffn = 4h.  V is the model's vocabulary as given. */
double wl_gpt_model_flops(const wl_model *m, const wl_strategy *st)
{
    double B = st->gb > 0 ? st->gb : (double)st->mb * (st->dp > 0 ? st->dp : 1);
    double s = m->seq, h = m->hidden, f = m->ffn, L = m->layers, V = m->vocab;
    return 3.0 * L * B * s * h * (8 * h + 4 * f + 4 * s) + 6.0 * B * s * h * V;
}

/* ---- generation -------------------------------------------------------- */

enum { TAG_ACT = 0, TAG_GRAD = 1 };

/* Payload indices of what surrounds the layers (the layers' own are in the
 * wl_layer), built once per schedule. */
typedef struct payloads {
    uint32_t logits_alloc, logits_free;
    uint32_t embed, final_ln, logits, loss;
    uint32_t loss_b, logits_dg, logits_wg, final_ln_b, embed_b;
    uint32_t tp_ar, loss_ar;
    uint32_t send_act, recv_act, send_grad, recv_grad;
} payloads;

typedef struct gen {
    sim_schedule *s;
    const wl_model *m;
    const plan *pl;
    payloads P;
    wl_layer *layer; /* the transformer layers (workloads/layer.c) */
    int first_layer; /* global index of this stage's first layer */
    /* the rank being generated */
    int rank, stage, prev, next;
    wl_cursor cur; /* compute and TP streams, pending dependencies */
    int sdp, s_send_next, s_recv_prev, s_send_prev, s_recv_next;
    int dp_comm, emb_comm;
} gen;

static void build_payloads(gen *g)
{
    sim_schedule *s = g->s;
    const wl_model *m = g->m;
    const plan *pl = g->pl;
    payloads *P = &g->P;
    sim_dtype dt = pl->st.dtype;
    int64_t t = pl->t, sb = (int64_t)m->seq * pl->st.mb, h = m->hidden, d = pl->ab;
    int64_t sbhd = sb * h * d, vt = pl->vp / t;
    int64_t logits_bytes = sb * vt * 4;

    P->logits_alloc = wl_pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, logits_bytes);
    P->logits_free = wl_pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, -logits_bytes);

    /* forward */
    P->embed = wl_pay_elem(s, "embed", 3 * sbhd, dt); /* word row + position row → sum */
    P->final_ln = wl_pay_elem(s, "final_ln", 2 * sbhd, dt);
    P->logits = wl_pay_gemm(s, "logits", sb, vt, h, dt);
    P->loss = wl_pay_elem(s, "loss", 2 * logits_bytes, SIM_DTYPE_FP32); /* vocab-parallel cross-entropy, fp32 */

    /* backward */
    P->loss_b = wl_pay_elem(s, "loss_bwd", 2 * logits_bytes, SIM_DTYPE_FP32);
    P->logits_dg = wl_pay_gemm(s, "logits_dgrad", sb, h, vt, dt);
    P->logits_wg = wl_pay_gemm(s, "logits_wgrad", vt, h, sb, dt);
    P->final_ln_b = wl_pay_elem(s, "final_ln_bwd", 3 * sbhd, dt);
    P->embed_b = wl_pay_elem(s, "embed_bwd", 3 * sbhd, dt);

    P->tp_ar = wl_pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    /* vocab-parallel cross-entropy: max, predicted logit and sum of exp over
     * the vocabulary shards, one fp32 value per token each */
    P->loss_ar = wl_pay_coll(s, "loss_allreduce", SIM_COLL_ALLREDUCE, sb * 4);

    P->send_act = wl_pay_p2p(s, SIM_OP_SEND, "send_act", sbhd, TAG_ACT);
    P->recv_act = wl_pay_p2p(s, SIM_OP_RECV, "recv_act", sbhd, TAG_ACT);
    P->send_grad = wl_pay_p2p(s, SIM_OP_SEND, "send_grad", sbhd, TAG_GRAD);
    P->recv_grad = wl_pay_p2p(s, SIM_OP_RECV, "recv_grad", sbhd, TAG_GRAD);
}

static sim_tags tags(int layer, int micro, sim_phase ph)
{
    sim_tags t = {layer, micro, -1, (uint8_t)ph};
    return t;
}

static void forward(gen *g, int micro)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    wl_cursor *c = &g->cur;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_FORWARD);
    if (g->stage > 0) {
        wl_cursor_pend(c, sim_sched_add(g->s, g->s_recv_prev, P->recv_act, g->prev, t0, NULL, 0));
    } else {
        wl_cursor_comp(c, P->embed, t0);
        wl_cursor_tp_allreduce(c, pl->t, P->tp_ar, t0); /* VocabParallelEmbedding */
    }
    wl_layer_forward(g->layer, c, g->first_layer, pl->lp, micro, 0);
    if (g->stage == pl->p - 1) {
        wl_cursor_comp(c, P->final_ln, t0);
        wl_cursor_mem(c, P->logits_alloc, t0);
        wl_cursor_comp(c, P->logits, t0);
        for (int i = 0; i < 3; i++) {
            c->npending = 0; /* the three follow each other on "tp": waiting for the last suffices */
            wl_cursor_tp_allreduce(c, pl->t, P->loss_ar, t0);
        }
        wl_cursor_comp(c, P->loss, t0);
    } else {
        uint32_t dep = c->last_comp;
        sim_sched_add(g->s, g->s_send_next, P->send_act, g->next, t0, &dep, 1);
    }
}

static void backward(gen *g, int micro)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    wl_cursor *c = &g->cur;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_BACKWARD);
    if (g->stage == pl->p - 1) {
        wl_cursor_comp(c, P->loss_b, t0);
        wl_cursor_comp(c, P->logits_dg, t0);
        wl_cursor_tp_allreduce(c, pl->t, P->tp_ar, t0); /* output layer's copy_to_tensor_model_parallel_region */
        wl_cursor_comp_overlap(c, P->logits_wg, t0);
        wl_cursor_mem(c, P->logits_free, t0);
        wl_cursor_comp(c, P->final_ln_b, t0);
    } else {
        wl_cursor_pend(c, sim_sched_add(g->s, g->s_recv_next, P->recv_grad, g->next, t0, NULL, 0));
    }
    wl_layer_backward(g->layer, c, g->first_layer, pl->lp, micro, 0);
    if (g->stage == 0) {
        wl_cursor_comp(c, P->embed_b, t0);
    } else {
        uint32_t dep = c->last_comp;
        sim_sched_add(g->s, g->s_send_prev, P->send_grad, g->prev, t0, &dep, 1);
    }
}

static void generate_rank(gen *g, int rank, const int *tp_comms, const int *dp_comms, const int *emb_comms)
{
    sim_schedule *s = g->s;
    const plan *pl = g->pl;
    const wl_model *m = g->m;
    int td = pl->t * pl->d;
    int stage = rank / td, dpi = rank % td / pl->t, tpi = rank % pl->t;
    int last = stage == pl->p - 1;
    g->rank = rank;
    g->stage = stage;
    g->prev = rank - td;
    g->next = rank + td;
    g->first_layer = stage * pl->lp;
    g->dp_comm = dp_comms[stage * pl->t + tpi];
    g->emb_comm = pl->p > 1 ? emb_comms[dpi * pl->t + tpi] : -1;
    memset(&g->cur, 0, sizeof g->cur);
    g->cur.s = s;
    g->cur.rank = rank;
    g->cur.tp_comm = tp_comms[stage * pl->d + dpi];
    g->cur.sc = sim_sched_stream(s, rank, "compute");
    g->cur.stp = pl->t > 1 ? sim_sched_stream(s, rank, "tp") : -1;
    g->sdp = pl->d > 1 || (pl->p > 1 && (stage == 0 || last)) ? sim_sched_stream(s, rank, "dp") : -1;
    g->s_send_next = g->s_recv_next = g->s_send_prev = g->s_recv_prev = -1;
    if (!last) {
        g->s_send_next = sim_sched_stream(s, rank, "pp-send-next");
        g->s_recv_next = sim_sched_stream(s, rank, "pp-recv-next");
    }
    if (stage > 0) {
        g->s_recv_prev = sim_sched_stream(s, rank, "pp-recv-prev");
        g->s_send_prev = sim_sched_stream(s, rank, "pp-send-prev");
    }

    /* persistent memory */
    wl_memory mm;
    stage_memory(m, pl, stage, &mm, NULL);
    sim_tags nt = SIM_NO_TAGS;
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "weights", SIM_MEM_WEIGHTS, (int64_t)mm.weights), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "gradients", SIM_MEM_GRADIENTS, (int64_t)mm.gradients), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "optimizer", SIM_MEM_OPTIMIZER, (int64_t)mm.optimizer), nt);
    if (mm.buffers > 0)
        wl_cursor_mem(&g->cur, wl_pay_mem(s, "buffers", SIM_MEM_BUFFERS, (int64_t)mm.buffers), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "context", SIM_MEM_CONTEXT, (int64_t)mm.context), nt);

    /* 1F1B: warm-up forwards, steady forward/backward pairs, cool-down backwards */
    int nm = pl->nmb;
    int warm = pl->p - stage - 1 < nm ? pl->p - stage - 1 : nm;
    for (int j = 0; j < warm; j++)
        forward(g, j);
    for (int j = 0; j < nm - warm; j++) {
        forward(g, j + warm);
        backward(g, j);
    }
    for (int j = nm - warm; j < nm; j++)
        backward(g, j);

    /* gradient synchronisation after the flush, then the optimizer step */
    uint32_t last_bwd = g->cur.last_comp, last_sync = UINT32_MAX;
    sim_tags bt = tags(-1, -1, SIM_PHASE_BACKWARD);
    if (pl->d > 1) {
        int64_t bytes = stage_params(m, pl, stage) * pl->gbytes, bucket = pl->st.dp_bucket_bytes;
        uint32_t full_bucket = wl_pay_coll(s, "dp_allreduce", SIM_COLL_ALLREDUCE, bucket);
        for (int64_t off = 0; off < bytes; off += bucket) {
            uint32_t p = bytes - off >= bucket ? full_bucket : wl_pay_coll(s, "dp_allreduce", SIM_COLL_ALLREDUCE, bytes - off);
            last_sync = sim_sched_add(s, g->sdp, p, g->dp_comm, bt, &last_bwd, 1);
        }
    }
    if (pl->p > 1 && (stage == 0 || last)) {
        uint32_t p = wl_pay_coll(s, "embed_allreduce", SIM_COLL_ALLREDUCE, pl->vp / pl->t * m->hidden * pl->gbytes);
        last_sync = sim_sched_add(s, g->sdp, p, g->emb_comm, bt, &last_bwd, 1);
    }
    /* Adam over this rank's parameters: reads p, g, m, v and writes p, m, v
     * (28 bytes/param in fp32; mixed precision reads a 2-byte gradient and
     * writes a 2-byte weight copy besides: also 28) */
    int64_t np = stage_params(m, pl, stage);
    uint32_t opt = wl_pay_kernel(s, "optimizer", SIM_KERNEL_OPTIMIZER, np, 0, 0, 0, 28 * np, SIM_DTYPE_FP32);
    sim_sched_add(s, g->cur.sc, opt, -1, tags(-1, -1, SIM_PHASE_OPTIMIZER), last_sync == UINT32_MAX ? NULL : &last_sync,
                  last_sync == UINT32_MAX ? 0 : 1);
}

sim_schedule *wl_gpt_generate(const wl_model *m, const wl_strategy *st, const sim_machine *mach, sim_err *err)
{
    plan pl;
    if (resolve(m, st, mach, &pl, err) || check_plan(m, &pl, mach, NULL, err))
        return NULL;
    int n = pl.t * pl.p * pl.d;
    sim_schedule *s = sim_sched_new(n);
    if (!s) {
        sim_errf(err, "out of memory creating a schedule for %d ranks", n);
        return NULL;
    }
    char strat[160];
    wl_strategy_format(&pl.st, strat, sizeof strat);
    snprintf(s->meta.name, sizeof s->meta.name, "%.40s %.80s", m->name, strat);
    s->meta.samples_per_iteration = pl.st.gb;
    s->meta.tokens_per_iteration = (double)pl.st.gb * m->seq;
    s->meta.model_flops_per_iteration = wl_gpt_model_flops(m, &pl.st);
    s->meta.dtype = pl.st.dtype;

    /* communicators, ranks in Megatron order: rank = pp·(tp·dp) + dp·tp + tp */
    int td = pl.t * pl.d;
    int *tp_comms = malloc(sizeof(int) * (size_t)(pl.p * pl.d));
    int *dp_comms = malloc(sizeof(int) * (size_t)(pl.p * pl.t));
    int *emb_comms = malloc(sizeof(int) * (size_t)td);
    int *ranks = malloc(sizeof(int) * (size_t)(n > 2 ? n : 2));
    if (!tp_comms || !dp_comms || !emb_comms || !ranks) {
        free(tp_comms);
        free(dp_comms);
        free(emb_comms);
        free(ranks);
        sim_sched_free(s);
        sim_errf(err, "out of memory");
        return NULL;
    }
    char name[64];
    for (int p = 0; p < pl.p; p++)
        for (int d = 0; d < pl.d; d++) {
            for (int t = 0; t < pl.t; t++)
                ranks[t] = p * td + d * pl.t + t;
            snprintf(name, sizeof name, "tp.p%d.d%d", p, d);
            tp_comms[p * pl.d + d] = pl.t > 1 ? sim_sched_comm(s, name, ranks, pl.t) : -1;
        }
    for (int p = 0; p < pl.p; p++)
        for (int t = 0; t < pl.t; t++) {
            for (int d = 0; d < pl.d; d++)
                ranks[d] = p * td + d * pl.t + t;
            snprintf(name, sizeof name, "dp.p%d.t%d", p, t);
            dp_comms[p * pl.t + t] = pl.d > 1 ? sim_sched_comm(s, name, ranks, pl.d) : -1;
        }
    for (int d = 0; d < pl.d; d++)
        for (int t = 0; t < pl.t; t++) {
            ranks[0] = d * pl.t + t;
            ranks[1] = (pl.p - 1) * td + d * pl.t + t;
            snprintf(name, sizeof name, "embed.d%d.t%d", d, t);
            emb_comms[d * pl.t + t] = pl.p > 1 ? sim_sched_comm(s, name, ranks, 2) : -1;
        }

    gen g;
    memset(&g, 0, sizeof g);
    g.s = s;
    g.m = m;
    g.pl = &pl;
    build_payloads(&g);
    g.layer = wl_layer_new(s, m, &pl.st, err);
    if (g.layer)
        for (int r = 0; r < n; r++)
            generate_rank(&g, r, tp_comms, dp_comms, emb_comms);
    wl_layer_free(g.layer);
    free(tp_comms);
    free(dp_comms);
    free(emb_comms);
    free(ranks);
    if (!g.layer) {
        sim_sched_free(s);
        return NULL;
    }
    return s;
}
