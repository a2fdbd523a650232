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
static int64_t layer_activation_bytes(const wl_model *m, const plan *pl)
{
    int64_t s = m->seq, b = pl->st.mb, h = m->hidden, f = m->ffn, a = m->heads, t = pl->t, d = pl->ab;
    int64_t sbh = s * b * h;
    return sbh * (4 * d + 2) + d * s * b * (4 * h + 2 * f) / t + (a / t) * s * s * b * (2 * d + 1);
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
    int64_t A = layer_activation_bytes(m, pl);
    int64_t logits = (int64_t)m->seq * pl->st.mb * (pl->vp / pl->t) * 4;
    int n = pl->p - stage < pl->nmb ? pl->p - stage : pl->nmb;
    int last = stage == pl->p - 1;
    int64_t act;
    if (pl->st.recompute == WL_RECOMPUTE_FULL) {
        /* the logits are freed before the first layer is recomputed */
        int64_t transient = last && logits > A ? logits : A;
        act = (int64_t)n * pl->lp * sbhd + transient;
    } else {
        act = (int64_t)n * pl->lp * A + (last ? logits : 0);
    }
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

/* Payload indices, built once per schedule. */
typedef struct payloads {
    uint32_t act_alloc, act_free;       /* no recompute: a layer's activations */
    uint32_t ckpt_alloc, recomp_alloc;  /* full recompute: layer input; rebuilt activations */
    uint32_t recomp_free;               /* full recompute: both */
    uint32_t logits_alloc, logits_free;
    uint32_t embed, ln1, qkv, attn, proj, post_attn, fc1, gelu, fc2, post_mlp, final_ln, logits, loss;
    uint32_t loss_b, logits_dg, logits_wg, final_ln_b, post_mlp_b, fc2_dg, fc2_wg, gelu_b, fc1_dg, fc1_wg;
    uint32_t post_attn_b, proj_dg, proj_wg, attn_b, qkv_dg, qkv_wg, ln1_b, embed_b;
    uint32_t tp_ar, loss_ar;
    uint32_t send_act, recv_act, send_grad, recv_grad;
} payloads;

typedef struct gen {
    sim_schedule *s;
    const wl_model *m;
    const plan *pl;
    payloads P;
    int first_layer; /* global index of this stage's first layer */
    /* the rank being generated */
    int rank, stage, prev, next;
    int sc, stp, sdp, s_send_next, s_recv_prev, s_send_prev, s_recv_next;
    int tp_comm, dp_comm, emb_comm;
    uint32_t pending[2]; /* ops the next compute op must wait for */
    int npending;
    uint32_t last_comp;
} gen;

static uint32_t pay_kernel(sim_schedule *s, const char *name, sim_kernel k, int64_t m, int64_t n, int64_t kk,
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

static uint32_t pay_gemm(sim_schedule *s, const char *name, int64_t m, int64_t n, int64_t k, sim_dtype dt)
{
    return pay_kernel(s, name, SIM_KERNEL_GEMM, m, n, k, 1, 0, dt);
}

static uint32_t pay_elem(sim_schedule *s, const char *name, int64_t bytes, sim_dtype dt)
{
    return pay_kernel(s, name, SIM_KERNEL_ELEMENTWISE, 0, 0, 0, 0, bytes, dt);
}

static uint32_t pay_coll(sim_schedule *s, const char *name, sim_coll c, int64_t bytes)
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

static uint32_t pay_p2p(sim_schedule *s, sim_op_kind kind, const char *name, int64_t bytes, int tag)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = (uint8_t)kind;
    p.name = sim_sched_str(s, name);
    p.bytes = bytes;
    p.tag = tag;
    return sim_sched_payload(s, &p);
}

static uint32_t pay_mem(sim_schedule *s, const char *name, sim_mem_kind k, int64_t delta)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_MEMORY;
    p.sub = (uint8_t)k;
    p.name = sim_sched_str(s, name);
    p.bytes = delta;
    return sim_sched_payload(s, &p);
}

/* Shapes follow Megatron's 1-D layout (GEMM: batch x (m x k)(k x n)):
 * forward Y[sb, n] = X[sb, k]·W[k, n]; dgrad dX[sb, k] = dY[sb, n]·Wᵀ;
 * wgrad dW[k, n] = Xᵀ[k, sb]·dY[sb, n].  Element-wise byte counts are
 * read + write estimates. */
static void build_payloads(gen *g)
{
    sim_schedule *s = g->s;
    const wl_model *m = g->m;
    const plan *pl = g->pl;
    payloads *P = &g->P;
    sim_dtype dt = pl->st.dtype;
    int64_t t = pl->t, sb = (int64_t)m->seq * pl->st.mb, h = m->hidden, f = m->ffn, d = pl->ab;
    int64_t sbhd = sb * h * d, vt = pl->vp / t;
    int64_t A = layer_activation_bytes(m, pl);
    int64_t logits_bytes = sb * vt * 4;

    P->act_alloc = pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, A);
    P->act_free = pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -A);
    P->ckpt_alloc = pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, sbhd);
    P->recomp_alloc = P->act_alloc;
    P->recomp_free = pay_mem(s, "activations", SIM_MEM_ACTIVATIONS, -(A + sbhd));
    P->logits_alloc = pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, logits_bytes);
    P->logits_free = pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, -logits_bytes);

    /* forward */
    P->embed = pay_elem(s, "embed", 3 * sbhd, dt); /* word row + position row → sum */
    P->ln1 = pay_elem(s, "ln1", 2 * sbhd, dt);
    P->qkv = pay_gemm(s, "qkv", sb, 3 * h / t, h, dt);
    /* attention core per TP rank: batch=b, m=heads/t, n=s, k=head_dim */
    P->attn = pay_kernel(s, "attn", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, pl->st.mb, 0, dt);
    P->proj = pay_gemm(s, "proj", sb, h, h / t, dt);
    P->post_attn = pay_elem(s, "post_attn", 6 * sbhd, dt); /* bias + dropout + residual + LN2 */
    P->fc1 = pay_gemm(s, "fc1", sb, f / t, h, dt);
    P->gelu = pay_elem(s, "gelu", 2 * sb * (f / t) * d, dt);
    P->fc2 = pay_gemm(s, "fc2", sb, h, f / t, dt);
    P->post_mlp = pay_elem(s, "post_mlp", 4 * sbhd, dt); /* bias + dropout + residual */
    P->final_ln = pay_elem(s, "final_ln", 2 * sbhd, dt);
    P->logits = pay_gemm(s, "logits", sb, vt, h, dt);
    P->loss = pay_elem(s, "loss", 2 * logits_bytes, SIM_DTYPE_FP32); /* vocab-parallel cross-entropy, fp32 */

    /* backward */
    P->loss_b = pay_elem(s, "loss_bwd", 2 * logits_bytes, SIM_DTYPE_FP32);
    P->logits_dg = pay_gemm(s, "logits_dgrad", sb, h, vt, dt);
    P->logits_wg = pay_gemm(s, "logits_wgrad", vt, h, sb, dt);
    P->final_ln_b = pay_elem(s, "final_ln_bwd", 3 * sbhd, dt);
    P->post_mlp_b = pay_elem(s, "post_mlp_bwd", 4 * sbhd, dt);
    P->fc2_dg = pay_gemm(s, "fc2_dgrad", sb, f / t, h, dt);
    P->fc2_wg = pay_gemm(s, "fc2_wgrad", f / t, h, sb, dt);
    P->gelu_b = pay_elem(s, "gelu_bwd", 3 * sb * (f / t) * d, dt);
    P->fc1_dg = pay_gemm(s, "fc1_dgrad", sb, h, f / t, dt);
    P->fc1_wg = pay_gemm(s, "fc1_wgrad", h, f / t, sb, dt);
    P->post_attn_b = pay_elem(s, "post_attn_bwd", 8 * sbhd, dt);
    P->proj_dg = pay_gemm(s, "proj_dgrad", sb, h / t, h, dt);
    P->proj_wg = pay_gemm(s, "proj_wgrad", h / t, h, sb, dt);
    /* The attention backward computes dQ, dK (two s×s×hd GEMMs) and dV,
     * d(probabilities) (two more): twice the forward's FLOPs, expressed as the
     * forward shape with the batch doubled. */
    P->attn_b = pay_kernel(s, "attn_bwd", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, 2 * pl->st.mb,
                           0, dt);
    P->qkv_dg = pay_gemm(s, "qkv_dgrad", sb, h, 3 * h / t, dt);
    P->qkv_wg = pay_gemm(s, "qkv_wgrad", h, 3 * h / t, sb, dt);
    P->ln1_b = pay_elem(s, "ln1_bwd", 3 * sbhd, dt);
    P->embed_b = pay_elem(s, "embed_bwd", 3 * sbhd, dt);

    P->tp_ar = pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    /* vocab-parallel cross-entropy: max, predicted logit and sum of exp over
     * the vocabulary shards, one fp32 value per token each */
    P->loss_ar = pay_coll(s, "loss_allreduce", SIM_COLL_ALLREDUCE, sb * 4);

    P->send_act = pay_p2p(s, SIM_OP_SEND, "send_act", sbhd, TAG_ACT);
    P->recv_act = pay_p2p(s, SIM_OP_RECV, "recv_act", sbhd, TAG_ACT);
    P->send_grad = pay_p2p(s, SIM_OP_SEND, "send_grad", sbhd, TAG_GRAD);
    P->recv_grad = pay_p2p(s, SIM_OP_RECV, "recv_grad", sbhd, TAG_GRAD);
}

static sim_tags tags(int layer, int micro, sim_phase ph)
{
    sim_tags t = {layer, micro, -1, (uint8_t)ph};
    return t;
}

/* A kernel on "compute" that consumes what is pending (received data, a
 * finished all-reduce). */
static uint32_t comp(gen *g, uint32_t payload, sim_tags t)
{
    uint32_t id = sim_sched_add(g->s, g->sc, payload, -1, t, g->pending, g->npending);
    g->npending = 0;
    g->last_comp = id;
    return id;
}

/* A kernel that runs beside the all-reduce just launched (weight gradients
 * overlapping the input-gradient all-reduce): it leaves the all-reduce
 * pending for the next kernel. */
static uint32_t comp_overlap(gen *g, uint32_t payload, sim_tags t)
{
    uint32_t id = sim_sched_add(g->s, g->sc, payload, -1, t, NULL, 0);
    g->last_comp = id;
    return id;
}

static void mem(gen *g, uint32_t payload, sim_tags t)
{
    sim_sched_add(g->s, g->sc, payload, -1, t, NULL, 0);
}

static void pend(gen *g, uint32_t op)
{
    if (g->npending == 2) { /* cannot happen with the orders below; keep the latest */
        g->pending[0] = g->pending[1];
        g->npending = 1;
    }
    g->pending[g->npending++] = op;
}

/* A TP all-reduce of what the last kernel produced; the next kernel waits. */
static void tp_allreduce(gen *g, uint32_t payload, sim_tags t)
{
    if (g->pl->t == 1)
        return;
    uint32_t dep = g->last_comp;
    pend(g, sim_sched_add(g->s, g->stp, payload, g->tp_comm, t, &dep, 1));
}

static void layer_forward(gen *g, int layer, int micro, sim_phase ph, uint32_t alloc)
{
    const payloads *P = &g->P;
    sim_tags t = tags(layer, micro, ph);
    mem(g, alloc, t);
    comp(g, P->ln1, t);
    comp(g, P->qkv, t);
    comp(g, P->attn, t);
    comp(g, P->proj, t);
    tp_allreduce(g, P->tp_ar, t); /* RowParallelLinear: reduce_from_tensor_model_parallel_region */
    comp(g, P->post_attn, t);
    comp(g, P->fc1, t);
    comp(g, P->gelu, t);
    comp(g, P->fc2, t);
    tp_allreduce(g, P->tp_ar, t);
    comp(g, P->post_mlp, t);
}

static void forward(gen *g, int micro)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_FORWARD);
    if (g->stage > 0) {
        pend(g, sim_sched_add(g->s, g->s_recv_prev, P->recv_act, g->prev, t0, NULL, 0));
    } else {
        comp(g, P->embed, t0);
        tp_allreduce(g, P->tp_ar, t0); /* VocabParallelEmbedding */
    }
    uint32_t alloc = pl->st.recompute == WL_RECOMPUTE_FULL ? P->ckpt_alloc : P->act_alloc;
    for (int l = 0; l < pl->lp; l++)
        layer_forward(g, g->first_layer + l, micro, SIM_PHASE_FORWARD, alloc);
    if (g->stage == pl->p - 1) {
        comp(g, P->final_ln, t0);
        mem(g, P->logits_alloc, t0);
        comp(g, P->logits, t0);
        for (int i = 0; i < 3; i++) {
            g->npending = 0; /* the three follow each other on "tp": waiting for the last suffices */
            tp_allreduce(g, P->loss_ar, t0);
        }
        comp(g, P->loss, t0);
    } else {
        uint32_t dep = g->last_comp;
        sim_sched_add(g->s, g->s_send_next, P->send_act, g->next, t0, &dep, 1);
    }
}

static void backward(gen *g, int micro)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_BACKWARD);
    int full = pl->st.recompute == WL_RECOMPUTE_FULL;
    if (g->stage == pl->p - 1) {
        comp(g, P->loss_b, t0);
        comp(g, P->logits_dg, t0);
        tp_allreduce(g, P->tp_ar, t0); /* output layer's copy_to_tensor_model_parallel_region */
        comp_overlap(g, P->logits_wg, t0);
        mem(g, P->logits_free, t0);
        comp(g, P->final_ln_b, t0);
    } else {
        pend(g, sim_sched_add(g->s, g->s_recv_next, P->recv_grad, g->next, t0, NULL, 0));
    }
    for (int l = pl->lp - 1; l >= 0; l--) {
        int layer = g->first_layer + l;
        sim_tags t = tags(layer, micro, SIM_PHASE_BACKWARD);
        if (full)
            layer_forward(g, layer, micro, SIM_PHASE_RECOMPUTE, P->recomp_alloc);
        comp(g, P->post_mlp_b, t);
        comp(g, P->fc2_dg, t);
        comp(g, P->fc2_wg, t);
        comp(g, P->gelu_b, t);
        comp(g, P->fc1_dg, t);
        /* ColumnParallelLinear backward: the input-gradient all-reduce is
         * launched asynchronously and overlaps the weight-gradient GEMM
         * (Megatron-LM --async-tensor-model-parallel-allreduce) */
        tp_allreduce(g, P->tp_ar, t);
        comp_overlap(g, P->fc1_wg, t);
        comp(g, P->post_attn_b, t);
        comp(g, P->proj_dg, t);
        comp(g, P->proj_wg, t);
        comp(g, P->attn_b, t);
        comp(g, P->qkv_dg, t);
        tp_allreduce(g, P->tp_ar, t);
        comp_overlap(g, P->qkv_wg, t);
        comp(g, P->ln1_b, t);
        mem(g, full ? P->recomp_free : P->act_free, t);
    }
    if (g->stage == 0) {
        comp(g, P->embed_b, t0);
    } else {
        uint32_t dep = g->last_comp;
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
    g->tp_comm = tp_comms[stage * pl->d + dpi];
    g->dp_comm = dp_comms[stage * pl->t + tpi];
    g->emb_comm = pl->p > 1 ? emb_comms[dpi * pl->t + tpi] : -1;
    g->npending = 0;
    g->sc = sim_sched_stream(s, rank, "compute");
    g->stp = pl->t > 1 ? sim_sched_stream(s, rank, "tp") : -1;
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
    mem(g, pay_mem(s, "weights", SIM_MEM_WEIGHTS, (int64_t)mm.weights), nt);
    mem(g, pay_mem(s, "gradients", SIM_MEM_GRADIENTS, (int64_t)mm.gradients), nt);
    mem(g, pay_mem(s, "optimizer", SIM_MEM_OPTIMIZER, (int64_t)mm.optimizer), nt);
    if (mm.buffers > 0)
        mem(g, pay_mem(s, "buffers", SIM_MEM_BUFFERS, (int64_t)mm.buffers), nt);
    mem(g, pay_mem(s, "context", SIM_MEM_CONTEXT, (int64_t)mm.context), nt);

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
    uint32_t last_bwd = g->last_comp, last_sync = UINT32_MAX;
    sim_tags bt = tags(-1, -1, SIM_PHASE_BACKWARD);
    if (pl->d > 1) {
        int64_t bytes = stage_params(m, pl, stage) * pl->gbytes, bucket = pl->st.dp_bucket_bytes;
        uint32_t full_bucket = pay_coll(s, "dp_allreduce", SIM_COLL_ALLREDUCE, bucket);
        for (int64_t off = 0; off < bytes; off += bucket) {
            uint32_t p = bytes - off >= bucket ? full_bucket : pay_coll(s, "dp_allreduce", SIM_COLL_ALLREDUCE, bytes - off);
            last_sync = sim_sched_add(s, g->sdp, p, g->dp_comm, bt, &last_bwd, 1);
        }
    }
    if (pl->p > 1 && (stage == 0 || last)) {
        uint32_t p = pay_coll(s, "embed_allreduce", SIM_COLL_ALLREDUCE, pl->vp / pl->t * m->hidden * pl->gbytes);
        last_sync = sim_sched_add(s, g->sdp, p, g->emb_comm, bt, &last_bwd, 1);
    }
    /* Adam over this rank's parameters: reads p, g, m, v and writes p, m, v
     * (28 bytes/param in fp32; mixed precision reads a 2-byte gradient and
     * writes a 2-byte weight copy besides: also 28) */
    int64_t np = stage_params(m, pl, stage);
    uint32_t opt = pay_kernel(s, "optimizer", SIM_KERNEL_OPTIMIZER, np, 0, 0, 0, 28 * np, SIM_DTYPE_FP32);
    sim_sched_add(s, g->sc, opt, -1, tags(-1, -1, SIM_PHASE_OPTIMIZER), last_sync == UINT32_MAX ? NULL : &last_sync,
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
    for (int r = 0; r < n; r++)
        generate_rank(&g, r, tp_comms, dp_comms, emb_comms);
    free(tp_comms);
    free(dp_comms);
    free(emb_comms);
    free(ranks);
    return s;
}
