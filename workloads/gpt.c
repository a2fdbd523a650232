/* gpt.c — the GPT decoder under Megatron-LM-style 3-D parallelism, as a
 * schedule: what surrounds the transformer layers (workloads/layer.c owns a
 * layer's tensor-parallel operations).
 *
 * Owns: the pipeline schedules (workloads/pipeline.c gives each stage's order
 * of forward and backward passes: GPipe, 1F1B, interleaved 1F1B, Alpa's
 * eager 1F1B, Merak's shifted critical path variants with stage-aware
 * recomputation, papers.md §2.3-2.4, §6.2, §7.D); data parallelism with
 * gradient buckets all-reduced after the flush (the Oases benchmark's
 * `reduce_grad`, papers.md §1.2; DeepSpeed/Merak `ReduceGrads`, §2.3) or
 * while backward runs (PyTorch DDP; Megatron-Core's overlap-grad-reduce,
 * its bucket layout and sizes, distributed optimizer and
 * overlap-param-gather, after megatron/core/distributed/
 * {distributed_data_parallel,param_and_grad_buffer,finalize_model_grads}.py
 * and megatron/core/optimizer/distrib_optimizer.py at NVIDIA/Megatron-LM
 * d98e8a64, read, not copied); ZeRO stages 1-3, PyTorch FSDP / HSDP
 * (torch/distributed/fsdp and _composable/fsdp: sharding strategies,
 * prefetch and mixed precision) and OSDP's per-layer sharding (papers.md
 * §3.6); the per-GPU memory model.
 *
 * Streams per rank (each one in-order, as on a CUDA stream):
 *   "compute"        every kernel and every memory effect
 *   "tp"             tensor-parallel all-reduces (one communicator per TP group)
 *   "dp"             data-parallel gradient buckets (all-reduce; ZeRO-1/2:
 *                    reduce-scatter, and the all-gather of updated weights
 *                    after the optimizer, or at the start of the step with
 *                    param_overlap), then the embedding all-reduce between
 *                    first and last stage
 *   "fsdp-ag", "fsdp-rs"  ZeRO-3 / FSDP / OSDP parameter all-gathers and
 *                    gradient reduce-scatters (own communicators over the DP
 *                    group, or over a node's members under fsdp=hybrid, whose
 *                    all-reduce over the nodes follows each reduce-scatter)
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
 * Memory: every memory effect is on the rank's "compute" stream, so its
 * order, and so the peak, does not depend on simulated times; wl_gpt_check
 * generates one rank per stage and replays those effects (stage_peaks), so
 * the check and the simulated peak agree by construction.  Formulas in
 * workloads/README.md. */
#include "workloads/gpt.h"
#include "workloads/moe.h"
#include "workloads/layer.h"
#include "workloads/pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GB 1e9
#define CONTEXT_BYTES (1ll << 30) /* CUDA context + framework workspace: a constant 1 GiB */

/* A strategy resolved against a model and a machine. */
typedef struct plan {
    wl_strategy st; /* dp and gb filled */
    int t, p, d;    /* tp, pp, and the gradient group dp·cp (dp without context parallelism) */
    int c;          /* cp: the ranks that share each sequence (Megatron-Core context parallelism) */
    int64_t s;      /* tokens of a sequence on one rank: seq / cp */
    int nmb;        /* micro-batches per pipeline */
    int64_t vp;     /* vocabulary padded to a multiple of 128*tp (Megatron's
                       --make-vocab-size-divisible-by 128) */
    int64_t ab;     /* activation bytes per element */
    int64_t wbytes, gbytes, obytes; /* weight, gradient, optimizer-state bytes per parameter */
    int v;          /* model chunks per stage (interleaved) */
    /* the stage split (resolve_split): layers of virtual stage k = chunk·p +
     * stage (Megatron's order) and the global index of its first layer */
    short vl[WL_PP_LAYERS_MAX];
    int voff[WL_PP_LAYERS_MAX + 1];
    int lp_max;     /* most layers one stage holds, all its chunks */
    int zero;       /* ZeRO stage; 0 when dp = 1 (nothing to shard over) */
    int grad_rs;    /* the DP gradient buckets are reduce-scattered (ZeRO-1/2), not all-reduced */
    int osdp;       /* OSDP per-layer levels in st.osdp */
    int ds;         /* ZeRO-3 / FSDP / OSDP shard group: dp, or the GPUs of a node under fsdp=hybrid */
    int reshard;    /* ZeRO-3 / FSDP: gathered parameters are freed after the forward (not SHARD_GRAD_OP) */
    int64_t sw, sg, so; /* bytes per sharded parameter of weights, gradients, optimizer state at rest */
    int fp8;        /* dtype=fp8: FP8 GEMMs in the layers, bf16 elsewhere (Transformer Engine) */
    int tied;       /* the output layer shares the word embeddings (all-reduced between first and last stage) */
    int ep, edp;    /* MoE: expert-parallel degree, and the replicas of each expert (d/ep) its gradients are
                       reduced over; 1 and d for a dense model */
} plan;

/* ---- checks ------------------------------------------------------------ */

/* Bytes of a gradient element as the rank accumulates and reduces it.
 * grad_reduce=auto is the framework's default: Megatron (zero 0-1)
 * accumulates and reduces a bf16 model's gradients in fp32 (its
 * --accumulate-allreduce-grads-in-fp32, forced for bf16 by
 * megatron/training/arguments.py; the distributed-optimizer guide,
 * docs/user-guide/features/dist_optimizer.md, counts 18 bytes per
 * parameter for "bf16 parameters, fp32 gradients"), an fp16 model's in
 * fp16; PyTorch FSDP (fsdp=) reduces in fp32 (torchtitan's
 * mixed_precision_reduce; Composer's DEFAULT policy from v0.17, its PURE
 * one in bf16: workloads/README.md); ZeRO-2/3 and
 * OSDP keep the model's dtype.  An explicit 16-bit
 * grad_reduce must be the model's own dtype.  FP8 training keeps bf16
 * parameters and gradients (Transformer Engine casts only inside the GEMMs),
 * so it follows bf16. */
static int grad_dtype(const wl_strategy *st, int64_t *gbytes, sim_err *err)
{
    sim_dtype r = st->grad_reduce, own = st->dtype == SIM_DTYPE_FP8 ? SIM_DTYPE_BF16 : st->dtype;
    if (r == SIM_DTYPE_COUNT) {
        if ((own == SIM_DTYPE_BF16 && st->zero <= 1 && !st->osdp[0]) || st->fsdp)
            *gbytes = 4;
        return 0;
    }
    if (r != SIM_DTYPE_FP32 && r != own)
        return sim_errf(err, "strategy: grad_reduce=%s: gradients are reduced in fp32 or in the model's dtype (%s)",
                        sim_dtype_name(r), sim_dtype_name(own));
    *gbytes = r == SIM_DTYPE_FP32 ? 4 : 2;
    return 0;
}

/* autocast=1: torch.autocast over fp32 parameters, the plain PyTorch AMP
 * recipe (torch/amp/autocast_mode.py; the cast lists in
 * aten/src/ATen/autocast_mode.h at pytorch/pytorch, read, not copied).
 * The model is fp32: weights 4, .grad 4, Adam m and v 8 bytes per parameter
 * (no separate master copy), and a 16-bit copy of each linear's weight made
 * by the forward (layer_payloads.c, wl_opset_autocast).  Only what keeps the
 * weights fp32 does this: a framework that holds a 16-bit copy (Megatron,
 * DeepSpeed's bf16/fp16 engines, FSDP's MixedPrecision param_dtype, which
 * gathers bf16 weights: autocast then has nothing to cast) is autocast=0.
 * Modelled for Megatron's 1-D layer (the layer PyTorch stacks run) and dense
 * models; gradients stay in fp32 .grad, so they are reduced in fp32. */
static int resolve_autocast(const wl_model *m, const wl_strategy *st, plan *pl, sim_err *err)
{
    if (!st->autocast)
        return 0;
    if (st->dtype != SIM_DTYPE_BF16 && st->dtype != SIM_DTYPE_FP16)
        return sim_errf(err, "autocast=1 is torch.autocast's mixed precision over fp32 parameters: it needs "
                        "dtype=bf16 or fp16, got dtype=%s", sim_dtype_name(st->dtype));
    if (st->zero || st->fsdp || st->osdp[0])
        return sim_errf(err, "autocast=1 keeps fp32 parameters that every forward casts; %s keeps 16-bit weights "
                        "(FSDP's MixedPrecision gathers them in bf16/fp16, DeepSpeed's engines hold them so): "
                        "drop autocast=1", st->fsdp ? "fsdp" : st->zero ? "zero" : "osdp");
    if (st->schedule != WL_TP_MEGATRON)
        return sim_errf(err, "autocast=1 is modelled for schedule=megatron (the layer PyTorch stacks run), got "
                        "schedule=%s", wl_tp_schedule_name(st->schedule));
    if (m->moe)
        return sim_errf(err, "autocast=1 is not modelled for mixture-of-experts models (%s)", m->name);
    if (st->grad_reduce != SIM_DTYPE_COUNT && st->grad_reduce != SIM_DTYPE_FP32)
        return sim_errf(err, "autocast=1 accumulates gradients in fp32 .grad and reduces them in fp32: "
                        "grad_reduce=%s does not apply (give fp32 or auto)", sim_dtype_name(st->grad_reduce));
    pl->wbytes = 4;
    pl->gbytes = 4;
    pl->obytes = 8;
    return 0;
}

/* fsdp=hybrid: the shard group is the members of a DP group that share a
 * node; each node must hold one consecutive block of ds >= 2 of every DP
 * group (Megatron rank order with the TP group inside a node). */
static int hybrid_group(const sim_machine *mach, plan *pl, sim_err *err)
{
    if (!mach)
        return sim_errf(err, "fsdp=hybrid shards over the GPUs of a node: it needs a platform to know the nodes");
    int td = pl->t * pl->d, ds = 1;
    while (ds < pl->d && mach->node[ds * pl->t] == mach->node[0])
        ds++;
    for (int p = 0; p < pl->p; p++)
        for (int t = 0; t < pl->t; t++)
            for (int i = 0; i < pl->d; i++) {
                int r = p * td + i * pl->t + t, head = p * td + (i - i % ds) * pl->t + t;
                int fresh = i % ds == 0 && i > 0 && mach->node[r] == mach->node[r - pl->t];
                if (pl->d % ds || mach->node[r] != mach->node[head] || fresh)
                    return sim_errf(err, "fsdp=hybrid shards over the GPUs of a node and replicates across nodes, "
                                    "but the data-parallel group of rank %d does not fall into equal node-local "
                                    "blocks (%d of its %d GPUs on rank 0's node)", p * td + t, ds, pl->d);
            }
    if (ds == 1)
        return sim_errf(err, "fsdp=hybrid shards over the GPUs of a node, but each node holds one GPU of every "
                        "data-parallel group (tp*pp = %d fills a node): use fsdp=full or zero=", pl->t * pl->p);
    pl->ds = ds;
    return 0;
}

/* PyTorch FSDP (fsdp=; pytorch/pytorch torch/distributed/fsdp:
 * fully_sharded_data_parallel.py's defaults — backward_prefetch=BACKWARD_PRE,
 * limit_all_gathers —, _runtime_utils.py's _unshard (the free-event queue
 * that rate-limits all-gathers), _reshard and _post_backward_hook (the HSDP
 * all-reduce), and FSDP2's _composable/fsdp fully_shard; read, not copied;
 * as MosaicML, torchtitan and IBM's fms-fsdp run them): the ZeRO-3
 * machinery, one FSDP unit per transformer layer and a
 * root unit, with FSDP's mixed precision — fp32 shards of the weights,
 * gradients and Adam state at rest (4 + 4 + 8 bytes per sharded parameter),
 * bf16/fp16 gathered copies, gradients reduced in grad_reduce's dtype —;
 * grad_op (SHARD_GRAD_OP) keeps a layer's gathered parameters from its
 * forward to its backward instead of gathering them again; hybrid
 * (HYBRID_SHARD) shards over the GPUs of a node and all-reduces each
 * reduce-scattered shard over the nodes. */
static int resolve_fsdp(const wl_strategy *st, const sim_machine *mach, plan *pl, sim_err *err)
{
    pl->ds = pl->d;
    pl->reshard = 1;
    pl->sw = pl->wbytes;
    pl->sg = pl->gbytes;
    pl->so = pl->obytes;
    if (st->fsdp == WL_FSDP_NONE) {
        if (st->fsdp_impl != WL_FSDP_IMPL_FSDP1)
            return sim_errf(err, "fsdp_impl chooses whose FSDP shards the model, but fsdp=none: give fsdp=full, "
                            "grad_op or hybrid too");
        return 0;
    }
    if (st->zero || st->osdp[0])
        return sim_errf(err, "fsdp and %s both choose the sharding: give one of them", st->zero ? "zero" : "osdp");
    if (st->fsdp == WL_FSDP_GRAD_OP && pl->p > 1)
        return sim_errf(err, "fsdp=grad_op keeps each layer gathered from its forward to its backward; with pp=%d "
                        "several micro-batches are in flight between the two: not modelled (use fsdp=full)", pl->p);
    if (pl->d == 1)
        return 0;
    pl->zero = 3;
    pl->reshard = st->fsdp != WL_FSDP_GRAD_OP;
    pl->sw = pl->sg = 4;
    pl->so = 8;
    return st->fsdp == WL_FSDP_HYBRID ? hybrid_group(mach, pl, err) : 0;
}

/* attn=auto is what the training stacks run (Megatron-Core through
 * Transformer Engine, PyTorch's scaled_dot_product_attention): fused
 * FlashAttention kernels in fp16/bf16 (fp8 runs attention in bf16) on GPUs
 * FlashAttention-2 supports (sm80+: Ampere, Ada, Hopper), the unfused core
 * in fp32/tf32 and on older GPUs (V100).  attn=flash where it cannot run is
 * an error saying why. */
static int resolve_attn(const wl_strategy *st, const sim_machine *mach, int *flash, sim_err *err)
{
    int dtype_ok = st->dtype == SIM_DTYPE_FP16 || st->dtype == SIM_DTYPE_BF16 || st->dtype == SIM_DTYPE_FP8;
    const char *old_gpu = NULL;
    for (int i = 0; mach && i < mach->nmodels && !old_gpu; i++)
        if (!mach->gpus[i].flash_attn)
            old_gpu = mach->gpus[i].model;
    *flash = 0;
    if (st->attn == WL_ATTN_UNFUSED)
        return 0;
    int forced = st->attn != WL_ATTN_AUTO;
    const char *name = sim_attn_impl_name(wl_attn_impl(st->attn));
    if (forced && !dtype_ok)
        return sim_errf(err, "strategy: attn=%s: FlashAttention computes in fp16 or bf16 (fp8 training keeps "
                        "attention in bf16), not dtype=%s; use attn=unfused or a 16-bit dtype", name,
                        sim_dtype_name(st->dtype));
    if (forced && old_gpu)
        return sim_errf(err, "strategy: attn=%s: the %s is not supported by FlashAttention-2, which needs an sm80+ "
                        "GPU (Ampere, Ada, Hopper: the ones with bf16 tensor cores); use attn=unfused", name, old_gpu);
    *flash = dtype_ok && !old_gpu;
    return 0;
}

/* Expert parallelism (MoE models): EP groups are ep consecutive members of
 * the gradient group dp·cp (Megatron-Core's expert-data-parallel layout with
 * expert tensor parallelism = tp: ep must divide dp·cp), each expert's
 * gradients are reduced over the d/ep ranks holding it.  Expert gradients
 * are reduced once after the flush (all-reduce, or reduce-scatter and
 * all-gather under the distributed optimizer); under ZeRO-3 / FSDP they are
 * sharded over those replicas like the dense layers over the data-parallel
 * group (torchtitan's FSDP2 on the experts' own mesh): gathered before each
 * layer runs, reduce-scattered after its backward.  ZeRO-2, OSDP and HSDP
 * are not modelled for the experts. */
/* What a routed MoE step (one step's skewed routing and its expert copies)
 * does not model, as a phrase, or NULL: the generator's routed payloads
 * assume one layer kind per stage, one chunk, whole sequences and whole
 * experts (the balancing copies move whole experts). */
static const char *routed_unsupported(const plan *pl)
{
    return pl->v > 1                              ? "vstages > 1"
           : pl->c > 1                            ? "cp > 1"
           : wl_pipe_is_merak(pl->st.pipeline)    ? "a Merak pipeline"
           : pl->zero == 3 || pl->st.fsdp != WL_FSDP_NONE ? "ZeRO-3 / FSDP"
                                                  : NULL;
}

static int resolve_moe(const wl_model *m, plan *pl, sim_err *err)
{
    const wl_strategy *st = &pl->st;
    pl->ep = wl_strategy_ep(st);
    pl->edp = pl->d / pl->ep;
    if (wl_layer_check_moe(m, st, err))
        return -1;
    if ((st->routing[0] || st->balance) && !m->moe)
        return sim_errf(err, "strategy: %s=%s: model %s has no mixture-of-experts layers (no \"moe\" object)",
                        st->routing[0] ? "routing" : "balance",
                        st->routing[0] ? st->routing : wl_balance_name(st->balance), m->name);
    if (!m->moe)
        return 0;
    if (st->balance && !st->routing[0])
        return sim_errf(err, "strategy: balance=%s balances skewed routing: give routing=zipf[:s], dirichlet[:a], "
                        "uniform or trace:FILE too (without it every rank sends every expert the same share)",
                        wl_balance_name(st->balance));
    if (st->balance && pl->ep == 1)
        return sim_errf(err, "strategy: balance=%s needs ep > 1: at ep=1 every rank holds every expert, and there is "
                        "no load to move", wl_balance_name(st->balance));
    const char *no = st->routing[0] ? routed_unsupported(pl) : NULL;
    if (no)
        return sim_errf(err, "strategy: routing=%s: a routed MoE step is modelled with 1F1B, GPipe or eager "
                        "pipelines without interleaving, without context parallelism and with zero=0 or zero=1; "
                        "%s is not modelled with skewed routing", st->routing, no);
    if (pl->d % pl->ep)
        return sim_errf(err, "strategy: ep=%d does not divide dp%s = %d: expert-parallel groups are carved from the "
                        "data-parallel ranks (Megatron-Core requires expert_model_parallel_size to divide "
                        "data_parallel_size%s)", pl->ep, pl->c > 1 ? "·cp" : "", pl->d,
                        pl->c > 1 ? " × context_parallel_size" : "");
    if (pl->zero == 2 || pl->osdp || (pl->zero == 3 && pl->ds < pl->d))
        return sim_errf(err, "model %s: MoE layers are modelled with zero=0, zero=1 (Megatron's distributed optimizer), "
                        "zero=3 or fsdp=full|grad_op (the experts sharded over their replicas); %s is not modelled "
                        "for expert parameters", m->name,
                        pl->zero == 2 ? "ZeRO-2" : pl->osdp ? "OSDP" : "fsdp=hybrid");
    return 0;
}

/* The layers of each virtual stage (pl->vl, pl->voff), in Megatron's order
 * (virtual stage k = chunk·p + stage holds the k-th run of layers):
 *  - uniform: L/(p·v) each;
 *  - embedding_as_layer: the input embedding and the output layer count as
 *    one layer each, so each virtual stage gets (L + 2)/(p·v) units and the
 *    first and the last are one layer short.  BigScience's BLOOM-176B
 *    (tr11-176B-ml README, "Architecture": --pp-partition-method
 *    'type:transformer|embedding' puts the tied embedding on pp rank 0 with
 *    5 transformer blocks, 6 on ranks 1-10, 5 and the embedding on rank 11
 *    for 70 layers over pp 12; DeepSpeed's PipelineModule gives every layer
 *    whose class matches the regex weight 1 and balances the weights) and
 *    Megatron-Core's account_for_embedding_in_pipeline_split and
 *    account_for_loss_in_pipeline_split (one more layer each before
 *    dividing by pp and vp; the first and last virtual stage build one
 *    fewer).  Megatron-Core asserts the division is exact, and every BLOOM
 *    layout chose L so that it is ("Rebalancing layers", chronicles-
 *    prequel.md), so a remainder is refused rather than placed by one
 *    framework version's balancing rule;
 *  - list (pp_layers=): as given, one count per virtual stage. */
static int resolve_split(const wl_model *m, const wl_strategy *st, plan *pl, sim_err *err)
{
    int n = pl->p * pl->v, L = m->layers;
    if (n > WL_PP_LAYERS_MAX)
        return sim_errf(err, "strategy: pp=%d x vstages=%d = %d virtual stages, more than the %d modelled", pl->p,
                        pl->v, n, WL_PP_LAYERS_MAX);
    if (st->stage_split == WL_SPLIT_UNIFORM) {
        if ((L / pl->p) % pl->v)
            return sim_errf(err, "pipeline=interleaved: the %d layers per stage are not divisible by vstages=%d",
                            L / pl->p, pl->v);
        for (int k = 0; k < n; k++)
            pl->vl[k] = (short)(L / n);
    } else if (st->stage_split == WL_SPLIT_EMBEDDING) {
        if ((L + 2) % n)
            return sim_errf(err, "stage_split=embedding_as_layer: the %d layers and the 2 embeddings (%d units) do not "
                            "divide into the %d virtual stages of pp=%d x vstages=%d (Megatron-Core requires it; for "
                            "another split give each virtual stage's layers with pp_layers=)", L, L + 2, n, pl->p,
                            pl->v);
        for (int k = 0; k < n; k++)
            pl->vl[k] = (short)((L + 2) / n - (k == 0) - (k == n - 1));
    } else {
        if (st->npp_layers != n)
            return sim_errf(err, "strategy: pp_layers gives %d virtual stages, but pp=%d x vstages=%d has %d (one count "
                            "per virtual stage: chunk 0 of stages 0..pp-1, then chunk 1, ...)", st->npp_layers, pl->p,
                            pl->v, n);
        int sum = 0;
        for (int k = 0; k < n; k++)
            sum += st->pp_layers[k];
        if (sum != L)
            return sim_errf(err, "strategy: pp_layers adds up to %d layers, but model %s has %d", sum, m->name, L);
        for (int k = 0; k < n; k++)
            pl->vl[k] = st->pp_layers[k];
    }
    pl->voff[0] = 0;
    for (int k = 0; k < n; k++)
        pl->voff[k + 1] = pl->voff[k] + pl->vl[k];
    pl->lp_max = 0;
    for (int i = 0; i < pl->p; i++) {
        int t = 0;
        for (int c = 0; c < pl->v; c++)
            t += pl->vl[c * pl->p + i];
        pl->lp_max = t > pl->lp_max ? t : pl->lp_max;
    }
    return 0;
}

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
    if (st->dp_bucket_bytes < 0)
        return sim_errf(err, "strategy: bucket: expected a positive size or auto, got %lld bytes",
                        (long long)st->dp_bucket_bytes);
    if (st->dtype != SIM_DTYPE_FP32 && st->dtype != SIM_DTYPE_TF32 && st->dtype != SIM_DTYPE_FP16 &&
        st->dtype != SIM_DTYPE_BF16 && st->dtype != SIM_DTYPE_FP8)
        return sim_errf(err, "strategy: dtype: expected fp32, tf32, fp16, bf16 or fp8, got %s",
                        sim_dtype_name(st->dtype));
    /* FP8 GEMMs need FP8 tensor cores (Ada, Hopper and newer): the catalogue
     * gives those an fp8 rate above the 16-bit ones (it fills a missing fp8
     * rate with the bf16 or fp16 one) */
    if ((st->fp8_recipe != WL_FP8_DELAYED || st->fp8_standalone) && st->dtype != SIM_DTYPE_FP8)
        return sim_errf(err, "strategy: %s chooses how FP8 tensors are %s, but dtype=%s: give dtype=fp8 too",
                        st->fp8_standalone ? "fp8_casts" : "fp8_recipe", st->fp8_standalone ? "cast" : "scaled",
                        sim_dtype_name(st->dtype));
    for (int i = 0; mach && st->dtype == SIM_DTYPE_FP8 && i < mach->nmodels; i++)
        if (!(mach->gpus[i].peak_flops[SIM_DTYPE_FP8] >
              fmax(mach->gpus[i].peak_flops[SIM_DTYPE_BF16], mach->gpus[i].peak_flops[SIM_DTYPE_FP16])))
            return sim_errf(err, "strategy: dtype=fp8: the %s has no FP8 tensor cores (FP8 training needs Ada, Hopper "
                            "or newer); use dtype=bf16", mach->gpus[i].model);
    memset(pl, 0, sizeof *pl);
    pl->st = *st;
    if (resolve_attn(st, mach, &pl->st.flash, err))
        return -1;
    if (wl_layer_check_cp(m, &pl->st, err))
        return -1;
    if (wl_strategy_resolve_world(&pl->st, mach, err))
        return -1;
    /* Tesseract splits heads, hidden and ffn q ways, not tp ways (checked by wl_layer_new) */
    if (st->schedule != WL_TP_TESSERACT && m->heads % st->tp)
        return sim_errf(err, "tp=%d does not divide the %d attention heads of %s", st->tp, m->heads, m->name);
    if (st->schedule != WL_TP_TESSERACT && m->hidden % st->tp)
        return sim_errf(err, "tp=%d does not divide the hidden size %d of %s", st->tp, m->hidden, m->name);
    if (st->schedule != WL_TP_TESSERACT && m->ffn % st->tp)
        return sim_errf(err, "tp=%d does not divide the FFN size %d of %s", st->tp, m->ffn, m->name);
    /* Megatron-Core splits the query groups over the TP ranks
     * (megatron/core/transformer/attention.py: divide(num_query_groups,
     * world_size) asserts it); it does not replicate K/V heads as inference
     * engines do */
    if (st->schedule != WL_TP_TESSERACT && wl_model_kv_heads(m) % st->tp)
        return sim_errf(err, "tp=%d does not divide the %d K/V heads (kv_heads) of %s: Megatron-Core splits the query "
                        "groups over the TP ranks and requires it; use a tp that divides %d", st->tp,
                        wl_model_kv_heads(m), m->name, wl_model_kv_heads(m));
    if (st->stage_split == WL_SPLIT_UNIFORM && m->layers % st->pp)
        return sim_errf(err, "pp=%d does not divide the %d layers of %s (uneven stages: stage_split=embedding_as_layer "
                        "or pp_layers=)", st->pp, m->layers, m->name);
    long long mbdp = (long long)st->mb * pl->st.dp;
    if (pl->st.gb % mbdp)
        return sim_errf(err, "gb=%d is not divisible by mb*dp = %d*%d = %lld (it would give %.2f micro-batches "
                        "per pipeline)", pl->st.gb, st->mb, pl->st.dp, mbdp, (double)pl->st.gb / (double)mbdp);
    pl->t = st->tp;
    pl->p = st->pp;
    /* gradients are reduced, and the distributed optimizer shards, over the
     * data-parallel group with its context-parallel ranks (Megatron-Core's
     * get_data_parallel_group(with_context_parallel=True)); ranks are laid
     * out TP innermost, then CP, then DP, then PP (parallel_state.py) */
    pl->c = wl_strategy_cp(st);
    pl->d = pl->st.dp * pl->c;
    pl->s = m->seq / pl->c;
    pl->nmb = (int)(pl->st.gb / mbdp);
    int64_t mult = 128ll * st->tp;
    pl->vp = ((int64_t)m->vocab + mult - 1) / mult * mult;
    pl->tied = !m->untied;
    int fp32 = st->dtype == SIM_DTYPE_FP32 || st->dtype == SIM_DTYPE_TF32;
    pl->ab = fp32 ? 4 : 2;
    /* 16 bytes per parameter in every precision: fp32 keeps weights 4 +
     * gradients 4 + Adam m, v 8; mixed precision keeps fp16/bf16 weights 2 +
     * gradients 2 + fp32 master weights, m, v 12 (Rajbhandari et al. 2020,
     * ZeRO, Sec. 3.1).  Megatron's fp32 main-grad accumulation buffer (+2) is
     * not counted. */
    pl->fp8 = st->dtype == SIM_DTYPE_FP8;
    pl->wbytes = fp32 ? 4 : 2;
    pl->gbytes = fp32 ? 4 : 2;
    pl->obytes = fp32 ? 8 : 12;
    if (grad_dtype(st, &pl->gbytes, err))
        return -1;
    if (st->optimizer == WL_OPT_MEGATRON_LEGACY) {
        if (st->zero || st->fsdp != WL_FSDP_NONE || st->osdp[0] || st->dp_overlap)
            return sim_errf(err, "optimizer=megatron_legacy is Megatron-LM's step of early 2021, whole on every "
                            "data-parallel rank after a backward its DDP does not overlap: it needs zero=0, "
                            "dp_overlap=0 and no fsdp or osdp");
        if (!fp32)
            pl->obytes += 4; /* the fp32 main gradients, allocated at the first step and kept */
    }
    if (resolve_autocast(m, st, pl, err))
        return -1;

    /* pipeline schedule, ZeRO, OSDP */
    pl->v = st->vstages;
    if (st->p2p_sync && pl->p > 1 && !st->launch_blocking && st->pipeline != WL_PIPE_1F1B &&
        st->pipeline != WL_PIPE_GPIPE)
        return sim_errf(err, "strategy: p2p_sync is Megatron's device synchronisation after each exchange of its "
                        "non-interleaved pipelines (pipeline=1f1b or gpipe); pipeline=%s exchanges otherwise (Megatron's "
                        "interleaved schedule overlaps them: overlap_p2p_comm)",
                        wl_pipe_name(st->pipeline));
    if (wl_pipe_validate(st->pipeline, pl->p, pl->v, pl->nmb, err))
        return -1;
    if (resolve_split(m, st, pl, err))
        return -1;
    if (wl_pipe_is_merak(st->pipeline) && st->recompute == WL_RECOMPUTE_NONE)
        return sim_errf(err, "pipeline=%s places recomputation: give recompute=full (and ckpt_ratio, the fraction "
                        "of stage 0's layers recomputed, default 1)", wl_pipe_name(st->pipeline));
    if (st->ckpt_ratio >= 0 && !wl_pipe_is_merak(st->pipeline))
        return sim_errf(err, "ckpt_ratio is Merak's stage-aware recomputation: it needs pipeline="
                        "merak_last_no_recompute, merak_pre_recompute or merak_full_critical_path");
    if (st->recompute_layers >= 0 && st->recompute != WL_RECOMPUTE_FULL)
        return sim_errf(err,
                        "recompute_layers=%d says how many layers of each model chunk recompute=full "
                        "recomputes (Megatron's --recompute-num-layers), but recompute=%s",
                        st->recompute_layers, wl_recompute_name(st->recompute));
    if (st->recompute_layers >= 0 && wl_pipe_is_merak(st->pipeline))
        return sim_errf(err,
                        "recompute_layers with pipeline=%s: Merak's pipelines place their recomputation "
                        "themselves (ckpt_ratio)",
                        wl_pipe_name(st->pipeline));
    if (st->zero < 0 || st->zero > 3)
        return sim_errf(err, "strategy: zero: expected 0, 1, 2 or 3, got %d", st->zero);
    if (st->osdp[0]) {
        int n = (int)strlen(st->osdp);
        if (st->zero)
            return sim_errf(err, "osdp and zero=%d both choose the sharding: give one of them (zero=3 is osdp with "
                            "every layer at level 3)", st->zero);
        if (n != 1 && n != m->layers)
            return sim_errf(err, "osdp: expected one level for all layers or one per layer (%d), got %d levels",
                            m->layers, n);
        pl->osdp = 1;
    }
    if (st->param_overlap && (st->zero != 1 || !st->dp_overlap))
        return sim_errf(err, "param_overlap=1 (Megatron's --overlap-param-gather) all-gathers the distributed "
                        "optimizer's updated parameters while the next forward runs: it needs zero=1 and "
                        "dp_overlap=1 (Megatron asserts both), got zero=%d, dp_overlap=%d", st->zero, st->dp_overlap);
    pl->zero = pl->d > 1 ? st->zero : 0;
    if (pl->d == 1)
        pl->osdp = 0;
    if (resolve_fsdp(st, mach, pl, err))
        return -1;
    if (resolve_moe(m, pl, err))
        return -1;
    /* grad_collective: only ZeRO-1 has the choice.  It shards the optimizer
     * state but keeps whole gradients, so the buckets may be reduce-scattered
     * (Megatron's distributed optimizer) or all-reduced with each rank then
     * updating its shard (DeepSpeed's BF16_Optimizer, run as ZeRO stage 0:
     * pipe/engine.py _bf16_reduce_grads all-reduces the fp32 gradient buffer,
     * bf16_optimizer.py step() all-gathers the updated bf16 shards; DeepSpeed
     * 56c52238, read, not copied).  ZeRO-2/3, FSDP and OSDP keep only their
     * gradient shard; without sharding every rank needs the whole sum. */
    if (st->grad_coll == WL_GRAD_ALLREDUCE && (st->zero >= 2 || st->fsdp || st->osdp[0]))
        return sim_errf(err, "grad_collective=allreduce: %s keeps only this rank's shard of the gradients, which are "
                        "reduce-scattered; allreduce applies to zero=1 (and is zero=0's own)",
                        st->fsdp ? "fsdp" : st->osdp[0] ? "osdp" : st->zero == 2 ? "zero=2" : "zero=3");
    if (st->grad_coll == WL_GRAD_REDUCESCATTER && !st->zero && !st->fsdp && !st->osdp[0])
        return sim_errf(err, "grad_collective=reducescatter needs sharded optimizer state (zero=1 or more): without it "
                        "every rank updates every parameter and needs the whole reduced gradient");
    if (st->grad_accum == WL_GACC_CAST_ADD &&
        ((st->dtype != SIM_DTYPE_BF16 && st->dtype != SIM_DTYPE_FP16) || st->zero >= 2 || st->fsdp || st->osdp[0] ||
         st->autocast))
        return sim_errf(err, "grad_accum=cast_add adds 16-bit gradients into a whole fp32 buffer (DeepSpeed's "
                        "BF16_Optimizer): it needs dtype=bf16 or fp16 and whole gradients (zero=0 or 1, no fsdp or "
                        "osdp, not autocast=1, which has its own casts)");
    if (st->grad_coll == WL_GRAD_ALLREDUCE && st->param_overlap)
        return sim_errf(err, "param_overlap=1 is Megatron's distributed optimizer, whose gradients are "
                        "reduce-scattered: it does not go with grad_collective=allreduce");
    pl->grad_rs = (pl->zero == 1 && st->grad_coll != WL_GRAD_ALLREDUCE) || pl->zero == 2;
    if (st->osdp_split > 1) {
        if (!st->osdp[0])
            return sim_errf(err, "osdp_split=%d splits the linears OSDP shards: it needs osdp=<levels> (zero=3 is osdp=3)",
                            st->osdp_split);
        if (st->schedule != WL_TP_MEGATRON)
            return sim_errf(err, "osdp_split=%d is modelled for schedule=megatron only (its GEMMs are split per "
                            "linear), got schedule=%s", st->osdp_split, wl_tp_schedule_name(st->schedule));
    }
    if (st->tp_overlap_comm && st->osdp_split > 1)
        return sim_errf(err, "tp_overlap_comm=1 splits the linears' GEMMs into ring and pipeline chunks, osdp_split=%d "
                        "into weight slices: the two are not modelled together", st->osdp_split);
    if ((pl->zero == 3 || pl->osdp) &&
        (st->pipeline == WL_PIPE_MERAK_PRE || st->pipeline == WL_PIPE_MERAK_FCP))
        return sim_errf(err, "pipeline=%s recomputes ahead of the gradient, which would need every layer's sharded "
                        "parameters gathered at once: not modelled with zero=3 or osdp",
                        wl_pipe_name(st->pipeline));
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
/* Global index of local layer j of chunk c on a stage (interleaved: chunk c
 * of stage i is virtual stage c·p + i, Megatron's layer assignment). */
static int layer_index(const plan *pl, int stage, int chunk, int j)
{
    return pl->voff[chunk * pl->p + stage] + j;
}

/* Layers of chunk c of a stage (its virtual stage c·p + stage). */
static int nlay(const plan *pl, int stage, int chunk)
{
    return pl->vl[chunk * pl->p + stage];
}

/* Layers a stage holds before chunk c (its local index of the chunk's first). */
static int local_first(const plan *pl, int stage, int chunk)
{
    int n = 0;
    for (int c = 0; c < chunk; c++)
        n += nlay(pl, stage, c);
    return n;
}

/* Embeddings, final norm and the output layer: what the stage holds besides
 * its layers.  The first stage: its vocab/tp slice of the word embeddings,
 * the position table (learned positions) and BLOOM's embedding norm; the last
 * stage: the final norm and the output layer, its own weights when untied,
 * else, when pp > 1, its copy of the tied word embeddings. */
static int64_t root_params(const wl_model *m, const plan *pl, int stage)
{
    int64_t h = m->hidden, t = pl->t, n = 0, np = wl_model_norm_params(m);
    if (stage == 0)
        n += pl->vp / t * h + wl_model_pos_rows(m) * h + (m->embed_norm ? np : 0);
    if (stage == pl->p - 1)
        n += np + (pl->p > 1 || m->untied ? pl->vp / t * h : 0);
    return n;
}

static int64_t stage_params(const wl_model *m, const plan *pl, int stage)
{
    int64_t n = root_params(m, pl, stage);
    for (int c = 0; c < pl->v; c++)
        for (int j = 0; j < nlay(pl, stage, c); j++) /* per-layer TP degree: Oases cut-point, Tesseract */
            n += wl_layer_params(m, &pl->st, layer_index(pl, stage, c, j));
    return n;
}


/* The routed experts' parameters one rank of a stage holds (not in
 * stage_params: their gradients go to the expert-data-parallel group). */
static int64_t stage_expert_params(const wl_model *m, const plan *pl, int stage)
{
    int64_t n = 0;
    for (int c = 0; m->moe && c < pl->v; c++)
        for (int j = 0; j < nlay(pl, stage, c); j++)
            n += wl_layer_expert_params(m, &pl->st, layer_index(pl, stage, c, j));
    return n;
}

/* ---- sharding and persistent memory ------------------------------------- */

/* A layer's parameters on one TP rank by FSDP/OSDP unit (OSDP shards the
 * attention linears and the MLP linears separately, papers.md §3.6):
 * attention = LN1 + QKV weight and bias /t + projection /t + its bias;
 * MLP = LN2 + fc1 weight and bias /t + fc2 /t + its bias (for GPT: (4h² +
 * 3h)/t + 3h and (2hf + f)/t + 3h).  Together they are stage_params()'
 * per-layer count. */
static int64_t attn_megatron(const wl_model *m, const plan *pl)
{
    wl_layer_param_split p = wl_model_layer_params(m);
    return p.attn_split / pl->t + p.attn_rep;
}

static int64_t mlp_megatron(const wl_model *m, const plan *pl)
{
    wl_layer_param_split p = wl_model_layer_params(m);
    return p.mlp_split / pl->t + p.mlp_rep;
}

/* The MLP unit of a layer: exactly the Megatron count above under 1-D TP;
 * under layouts where a layer's parameters per rank differ (Oases cut-point,
 * Tesseract) the layer's count in the same attention : MLP proportion. */
static int64_t mlp_params(const wl_model *m, const plan *pl, int layer)
{
    int64_t a0 = attn_megatron(m, pl), m0 = mlp_megatron(m, pl);
    return wl_layer_params(m, &pl->st, layer) * m0 / (a0 + m0);
}

static int64_t attn_params(const wl_model *m, const plan *pl, int layer)
{
    return wl_layer_params(m, &pl->st, layer) - mlp_params(m, pl, layer);
}

/* OSDP level of a global layer: bit 0 attention sharded, bit 1 MLP sharded. */
static int osdp_level(const plan *pl, int layer)
{
    const char *o = pl->st.osdp;
    return o[o[1] ? layer : 0] - '0';
}

/* Parameters of a layer (one TP rank) sharded over the DP group: all of
 * them under ZeRO-3, the units OSDP's level selects, none otherwise. */
static int64_t layer_sharded(const wl_model *m, const plan *pl, int layer)
{
    if (pl->zero == 3)
        return wl_layer_params(m, &pl->st, layer);
    if (!pl->osdp)
        return 0;
    int lv = osdp_level(pl, layer);
    return (lv & 1 ? attn_params(m, pl, layer) : 0) + (lv & 2 ? mlp_params(m, pl, layer) : 0);
}

/* One rank's shard of x parameters (FSDP pads each flat parameter to a
 * multiple of the group size). */
static int64_t shard(int64_t x, int d)
{
    return (x + d - 1) / d;
}


/* Parameters whose optimizer state (and, for ZeRO-2/3 and OSDP, gradients)
 * this rank owns, and the replicated ones that go through DP buckets. */
typedef struct stage_params_split {
    int64_t all;        /* the stage's parameters on one TP rank */
    int64_t sharded;    /* of the layers: sharded over DP (ZeRO-3 / OSDP) */
    int64_t owned;      /* sharded ones: this rank's shards (root included under ZeRO-3) */
    int64_t replicated; /* neither sharded nor (under ZeRO-3) root: all-reduced or reduce-scattered in buckets */
    int64_t root;       /* root_params */
} stage_params_split;

static stage_params_split split_params(const wl_model *m, const plan *pl, int stage)
{
    stage_params_split sp = {0};
    sp.all = stage_params(m, pl, stage);
    sp.root = root_params(m, pl, stage);
    for (int c = 0; c < pl->v; c++)
        for (int j = 0; j < nlay(pl, stage, c); j++) {
            int64_t x = layer_sharded(m, pl, layer_index(pl, stage, c, j));
            sp.sharded += x;
            sp.owned += shard(x, pl->ds);
        }
    if (pl->zero == 3) {
        sp.owned += shard(sp.root, pl->ds);
        sp.replicated = 0;
    } else {
        sp.replicated = sp.all - sp.sharded;
    }
    return sp;
}

/* The layer parameters (not embeddings nor output layer) a rank holds
 * across the step: what FP8 training casts and keeps in FP8. */
static int64_t fp8_layer_params(const plan *pl, const stage_params_split *sp)
{
    if (pl->zero == 3)
        return sp->owned - shard(sp->root, pl->d);
    if (pl->osdp)
        return sp->replicated + sp->owned - sp->root;
    return sp->all - sp->root;
}

/* Parameters the optimizer step of a rank updates. */
static int64_t optimizer_params(const wl_model *m, const plan *pl, int stage)
{
    stage_params_split sp = split_params(m, pl, stage);
    int64_t ex = stage_expert_params(m, pl, stage);
    ex = pl->zero == 1 || pl->zero == 3 ? shard(ex, pl->edp) : ex;
    if (pl->zero == 1 || pl->zero == 2)
        return shard(sp.all, pl->d) + ex;
    return sp.replicated + sp.owned + ex;
}

/* optimizer=megatron_legacy: bytes per parameter of Megatron-LM's step of
 * early 2021 (NVIDIA/Megatron-LM 8aa4619, read, not copied: DLPerf's
 * commit), every pass after the backward and before the next forward:
 *  - the local DDP (model/distributed.py allreduce_params, even with one
 *    replica): the gradients flattened into one buffer, divided by the
 *    replicas, copied back, a read and a write each (6 gradient sizes);
 *  - under mixed precision (optimizer/optimizer.py
 *    FP16OptimizerWithFP16Params.step): the 16-bit gradients copied to
 *    fp32 main gradients (g + 4), fp16's unscale and inf check (8);
 *  - the norm for clipping (clip_grads.py, a read: 4; the scaling that
 *    follows when the norm exceeds the bound is not counted);
 *  - apex's FusedAdam on the fp32 main weights (16 read, 12 written);
 *  - the main weights copied to the model's (4 + w).
 * The all-reduce sits between the flattening and the copy back; as nothing
 * else runs beside them, counting them in the step's pass gives the same
 * time. */
static int64_t legacy_step_bytes(const plan *pl)
{
    int64_t per = 6 * pl->gbytes + 4 + 28;
    if (pl->wbytes < 4)
        per += (pl->gbytes + 4) + (4 + pl->wbytes);
    if (pl->st.dtype == SIM_DTYPE_FP16)
        per += 8;
    return per;
}

/* ---- data-parallel buckets ---------------------------------------------- */

#define MEGATRON_BUCKET_PARAMS 40000000ll  /* Megatron-Core DDP: max(40M, 1M·dp) parameters */
#define DEEPSPEED_BUCKET_ELEMS 500000000ll /* DeepSpeed ZeRO reduce_bucket_size default */
#define DDP_BUCKET_BYTES (25ll << 20)      /* PyTorch DDP bucket_cap_mb default */

/* bucket=auto is the bucket the framework of each scheme chooses:
 *  - zero=0/1 (Megatron-Core DDP and distributed optimizer, core_v0.7.0 and
 *    later, distributed_data_parallel.py): with overlap-grad-reduce
 *    max(40M, 1M·dp) parameters per bucket (commit 0fda386c04, "Tune DDP
 *    bucket size to improve speed at large DP counts"; 40M before), but one
 *    bucket on pipeline stages after the first ("not on the critical path")
 *    and on model chunks after the first (training.py get_model's
 *    disable_bucketing); without overlap the whole buffer is one bucket
 *    (bucket_size = None);
 *  - zero=2 (DeepSpeed ZeRO-2): reduce_bucket_size, 5e8 elements;
 *  - OSDP's replicated parameters: PyTorch DDP's 25 MiB.
 * An explicit bucket= is that many bytes everywhere.  INT64_MAX = one
 * bucket. */
int64_t wl_gpt_bucket_bytes(const wl_strategy *st, int dp, int grad_bytes, int stage, int chunk)
{
    if (st->dp_bucket_bytes > 0)
        return st->dp_bucket_bytes;
    if (st->zero == 2)
        return DEEPSPEED_BUCKET_ELEMS * grad_bytes;
    if (st->osdp[0])
        return DDP_BUCKET_BYTES;
    if (!st->dp_overlap || stage > 0 || chunk > 0)
        return INT64_MAX;
    int64_t params = 1000000ll * dp;
    return (params > MEGATRON_BUCKET_PARAMS ? params : MEGATRON_BUCKET_PARAMS) * grad_bytes;
}

static int64_t bucket_cap(const plan *pl, int stage, int chunk)
{
    return wl_gpt_bucket_bytes(&pl->st, pl->d, (int)pl->gbytes, stage, chunk);
}

/* Memory held for the whole iteration by one rank of a stage (bytes):
 * model states by ZeRO stage (Rajbhandari et al. 2020 §5: stage 1 shards
 * the optimizer state, 2 also the gradients, 3 also the weights; with K = 8
 * (fp32 Adam m, v) or 12 (mixed precision: fp32 master weights, m, v)),
 * pipeline receive buffers, ZeRO-2's bucket buffers and the context. */
static void persistent_memory(const wl_model *m, const plan *pl, int stage, wl_memory *mem)
{
    stage_params_split sp = split_params(m, pl, stage);
    int64_t sbhd = pl->s * pl->st.mb * m->hidden * pl->ab;
    int last = stage == pl->p - 1;
    int64_t w = sp.all, g = sp.all, o = sp.all;
    if (pl->zero >= 1)
        o = shard(sp.all, pl->d);
    if (pl->zero >= 2)
        g = shard(sp.all, pl->d);
    memset(mem, 0, sizeof *mem);
    mem->stage = stage;
    mem->weights = (double)(w * pl->wbytes);
    /* FP8 (Transformer Engine): the layers' weights also as an FP8 workspace
     * kept across the step's micro-batches, the weight and its transpose
     * (Hopper's FP8 GEMMs take one layout), 2 bytes per layer parameter; the
     * embeddings and the output layer stay bf16 */
    if (pl->fp8)
        mem->weights += 2.0 * (double)fp8_layer_params(pl, &sp);
    mem->gradients = (double)(g * pl->gbytes);
    mem->optimizer = (double)(o * pl->obytes);
    if (pl->zero == 3 || pl->osdp) { /* the replicated parameters, and the shards at rest */
        mem->weights = (double)(sp.replicated * pl->wbytes + sp.owned * pl->sw);
        mem->gradients = (double)(sp.replicated * pl->gbytes + sp.owned * pl->sg);
        mem->optimizer = (double)(sp.replicated * pl->obytes + sp.owned * pl->so);
    }
    /* the routed experts: weights and gradients whole, the optimizer state
     * sharded over the expert's replicas under the distributed optimizer;
     * all three sharded at rest under ZeRO-3 (the gathered copies are in the
     * schedule) */
    int64_t ex = stage_expert_params(m, pl, stage);
    if (pl->zero == 3) { /* shards at rest; with one replica the shard is every expert, kept as shards are */
        int64_t own = shard(ex, pl->edp);
        mem->weights += (double)(own * pl->sw);
        mem->gradients += (double)(own * pl->sg);
        mem->optimizer += (double)(own * pl->so);
    } else {
        mem->weights += (double)(ex * pl->wbytes);
        mem->gradients += (double)(ex * pl->gbytes);
        mem->optimizer += (double)((pl->zero == 1 ? shard(ex, pl->edp) : ex) * pl->obytes);
    }
    /* pipeline receive buffers, one per neighbour (both neighbours on every
     * stage when interleaved chunks wrap around) */
    int nbuf = pl->p == 1 ? 0 : pl->v > 1 ? 2 : (stage > 0) + !last;
    double buf = (double)(nbuf * sbhd);
    /* ZeRO-2 reduces each micro-batch's gradients through a bucket being
     * filled and one being reduced (DeepSpeed's double-buffered IPG bucket) */
    if (pl->zero == 2)
        buf += 2.0 * (double)bucket_cap(pl, stage, 0);
    mem->buffers = buf;
    mem->context = (double)CONTEXT_BYTES;
}

/* Model FLOPs as Megatron-LM counts them (num_floating_point_operations in
 * megatron/training/training.py; Narayanan et al. 2021, Eq. 3 and App.),
 * without recomputation: every GEMM 3 times (forward, dgrad, wgrad) at 2 FLOPs
 * per multiply-add.  Per layer the forward does 2·B·s·h·(qkv + h + fc1 + ffn)
 * in the QKV (h + 2·kv_heads·head_dim wide), projection, fc1 (2·ffn wide with
 * swiglu) and fc2 GEMMs, and 4·B·s²·h in attention (QKᵀ and attention×V over
 * the whole s×s matrix: no causal halving, as Megatron counts); the logits
 * add 2·B·s·h·V:
 *   3·L·B·s·h·(2·(qkv + h + fc1 + ffn) + 4s) + 6·B·s·h·V,
 * which for GPT (qkv = 3h, fc1 = ffn = 4h) is Eq. 3,
 * 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)).  It is the "6N + attention" count
 * (PaLM's 6N + 12·L·h·s per token, Chowdhery et al. 2022 App. B) with N the
 * GEMM weights: biases, norms and the input embedding lookup do not count, the
 * output layer does, tied or not.  V is the model's vocabulary as given
 * (Megatron uses the padded one). */
double wl_gpt_model_flops(const wl_model *m, const wl_strategy *st)
{
    double B = st->gb > 0 ? st->gb : (double)st->mb * (st->dp > 0 ? st->dp : 1);
    double s = m->seq, h = m->hidden, f = m->ffn, L = m->layers, V = m->vocab;
    double qkv = (double)wl_model_qkv_out(m), fc1 = (double)wl_model_fc1_out(m, m->ffn);
    double total = 3.0 * L * B * s * h * (2 * (qkv + h + fc1 + f) + 4 * s) + 6.0 * B * s * h * V;
    if (m->moe) {
        /* an MoE layer's MLP: the router (h -> E), top_k experts and the
         * shared expert per token in place of the dense FFN (Megatron's count
         * with num_experts_routed_to and the shared expert size) */
        const wl_moe *x = &m->moe_cfg;
        double ef = x->expert_ffn, sf = x->shared_ffn;
        double moe = x->experts + x->top_k * ((double)wl_model_fc1_out(m, x->expert_ffn) + ef) +
                     (sf > 0 ? (double)wl_model_fc1_out(m, x->shared_ffn) + sf : 0);
        int n = 0;
        for (int l = 0; l < m->layers; l++)
            n += wl_model_is_moe_layer(m, l);
        total += 6.0 * n * B * s * h * (moe - fc1 - f);
    }
    return total;
}

/* ---- generation -------------------------------------------------------- */

enum { TAG_ACT = 0, TAG_GRAD = 1 };

/* Payload indices of what surrounds the layers (the layers' own are in the
 * wl_layer), built once per schedule. */
typedef struct payloads {
    uint32_t logits_alloc, logits_free;
    uint32_t embed, final_ln, logits, loss;
    uint32_t loss_b, logits_dg, logits_wg, final_ln_b, embed_b;
    /* autocast=1 (UINT32_MAX where nothing runs): the output layer's weight
     * cast in forward, its gradient cast (and accumulation) in backward, and
     * the word embeddings' gradient sum and accumulation; [0] the step's
     * first micro-batch, [1] the others */
    uint32_t out_wcast, out_gcast[2], emb_gacc[2];
    uint32_t tp_ar, loss_ar;
    uint32_t emb_red, out_ag, out_red; /* embedding and output-layer TP collectives (sequence parallel: RS, AG, RS) */
    uint32_t send_act, recv_act, send_grad, recv_grad;
} payloads;

/* Communicators, one array per kind, indexed as in make_comms(). */
typedef struct comms {
    int *tp, *dp, *emb, *ag, *rs, *ar;
    int *ep, *edp; /* MoE: per (stage, tp, EP group) and per (stage, tp, EP index) */
    int *edp_rs;   /* MoE under ZeRO-3: the expert-data-parallel groups again, for the reduce-scatter stream */
} comms;

/* The data-parallel buckets of one model chunk (see buckets_build). */
typedef struct dp_buckets {
    int n, cap_n;
    int64_t *params; /* per bucket, in Megatron's order (the last layers' first) */
    int *last_piece; /* per bucket: the piece whose gradients complete it */
    int *first;      /* per piece: the bucket holding its first parameter, -1 if it has none */
} dp_buckets;

typedef struct gen {
    sim_schedule *s;
    const wl_model *m;
    const plan *pl;
    payloads P;
    wl_layer *layer;    /* the transformer layers (workloads/layer.c) */
    wl_layer *layer_nr; /* the same without recomputation (Merak's stage-aware ratio) */
    /* the rank being generated */
    int rank, stage, prev, next;
    wl_cursor cur; /* compute and TP streams, pending dependencies */
    int sdp, s_send_next, s_recv_prev, s_send_prev, s_recv_next, s_ag, s_rs, s_ar;
    int dp_comm, emb_comm, ag_comm, rs_comm, ar_comm;
    int edp_comm;         /* MoE: the replicas of this rank's experts, -1 if none */
    int edp_ag, edp_rs;   /* MoE under ZeRO-3: their all-gather and reduce-scatter communicators, -1 if none */
    int nrec;             /* layers of this stage (local index < nrec) recomputed */
    int pre_recompute;    /* Merak: recompute before waiting for the gradient */
    wl_pipe_step *steps;  /* this stage's pipeline order */
    int nsteps;
    int *last_bwd;        /* per chunk: index in steps of its last backward */
    /* data-parallel buckets per model chunk; the next one to reduce while
     * backward runs; Megatron's overlapped parameter all-gather of each */
    dp_buckets *bk;
    int next_bucket;
    uint32_t *pg;         /* per chunk: first index into pg_op */
    uint32_t *pg_op;      /* the all-gathers at the start of the step, per chunk in bucket order */
    uint32_t last_dp, last_rs, last_ar; /* last op on "dp" / "fsdp-rs" / "hsdp-ar", UINT32_MAX = none */
    /* ZeRO-3 / OSDP */
    uint32_t *ag_of;      /* per global layer: all-gather of its sharded parameters */
    int gfree;            /* a layer's full gradients wait to be freed after their reduce-scatter */
    uint32_t gfree_pay, gfree_dep;
    /* OSDP operator splitting: the slice gathered ahead (pf_layer < 0: none) */
    int pf_layer, pf_lin, pf_slice, pf_dgrad, pf_micro;
    int64_t pf_bytes;
    uint32_t pf_ag;
    /* a routed MoE step (wl_gpt_generate_routed): its payloads, the
     * communicators of expert copies per (MoE layer, expert) (-1: none;
     * one per (stage, TP index, EP group) from there), this rank's */
    const wl_moe_route *route;
    wl_moe_routed *routed;
    int *copy_base;
    wl_moe_bal bal;
    int *bal_first, *bal_comm;
    uint32_t *bal_ready, *bal_end;
    unsigned char *bal_overlap;
} gen;

/* The loss's bytes forward (f) and backward (b) by element-wise class, for
 * L logits of e bytes each on this rank (wl_loss, model.h; sources read:
 * PyTorch aten/src/ATen/native/cuda/SoftMax.cu host_softmax,
 * cunn_SoftMaxForward / cunn_SoftMaxBackward; flash-attn
 * flash_attn/ops/triton/cross_entropy.py at 0251105a, the kernels
 * cross_entropy_fwd_kernel and cross_entropy_bwd_kernel; Megatron-Core
 * tensor_parallel/cross_entropy.py VocabParallelCrossEntropy and
 * fusions/fused_cross_entropy.py, Megatron-LM's and Megatron-DeepSpeed's
 * mpu/cross_entropy.py, the same passes).  The per-row statistics (the
 * max, the log-sum-exp, the picked logit, the nll kernels) are a
 * vocabulary's worth smaller and not counted.  row: the logits of one token
 * (the vocabulary shard); autocast: the loss runs under torch.autocast. */
static void loss_bytes(wl_loss loss, int64_t L, int64_t row, int64_t e, int autocast, int64_t f[SIM_MEMC_COUNT],
                       int64_t b[SIM_MEMC_COUNT])
{
    memset(f, 0, SIM_MEMC_COUNT * sizeof *f);
    memset(b, 0, SIM_MEMC_COUNT * sizeof *b);
    int widen = e < 4; /* 16-bit logits taken to fp32 first */
    switch (loss) {
    case WL_LOSS_TORCH: {
        /* cast up (16-bit logits under autocast or .float(): the dynamic-
         * casting path), log_softmax forward in fp32: a block per row reads
         * the row for its max, again for the sum of exp and again to write
         * (a row past the 48 KB of shared memory a block gets by default; a
         * shorter one, cached in shared memory by cunn_SoftMaxForwardSmem,
         * is read once).  Without autocast a 16-bit row is read and written
         * in its own dtype (the kernels accumulate in fp32). */
        widen = widen && autocast;
        int64_t x = widen ? 4 : e, reads = row * x < 48 * 1024 - 128 && row % 4 == 0 ? 1 : 3;
        f[SIM_MEMC_CAST_UP] = widen ? (e + 4) * L : 0;
        f[SIM_MEMC_STREAM] = (reads + 1) * x * L;
        /* the gradient of the log-probabilities zero-filled (nll_loss_backward
         * then writes one value a row), log_softmax backward (the gradient
         * read for its row sum, then with the output to write the input
         * gradient), the cast back down (vectorised) */
        b[SIM_MEMC_STREAM] = 5 * x * L + (widen ? (4 + e) * L : 0);
        break;
    }
    case WL_LOSS_FUSED:
        f[SIM_MEMC_STREAM] = e * L;     /* the logits read once (an online log-sum-exp) */
        b[SIM_MEMC_STREAM] = 2 * e * L; /* read again, the gradient written in their dtype */
        break;
    case WL_LOSS_MEGATRON_FUSED:
        /* three fused kernels forward: the cast with the max (a no-op cast
         * on fp32 logits leaves the max's read), the subtraction, exp and
         * sum in place, the softmax's division in place; one backward: the
         * gradient scaled in place and written in the logits' dtype */
        f[SIM_MEMC_STREAM] = (widen ? e + 4 : 4) * L + 8 * L + 8 * L;
        b[SIM_MEMC_STREAM] = (8 + (widen ? e : 0)) * L;
        break;
    default:
        /* Megatron unfused, one kernel per op: logits.float() (cast_up), the
         * max (a read), the max subtracted in place, exp in place, the sum
         * (a read), the division in place that keeps the softmax for the
         * backward; backward the target's entry corrected (a row's worth),
         * the gradient scaled in place, autograd's cast back */
        f[SIM_MEMC_CAST_UP] = widen ? (e + 4) * L : 0;
        f[SIM_MEMC_STREAM] = (4 + 8 + 8 + 4 + 8) * L;
        b[SIM_MEMC_STREAM] = 8 * L + (widen ? (4 + e) * L : 0);
    }
}

static void build_payloads(gen *g)
{
    sim_schedule *s = g->s;
    const wl_model *m = g->m;
    const plan *pl = g->pl;
    payloads *P = &g->P;
    /* FP8 runs the layers' GEMMs in FP8; the embedding, output layer and loss
     * stay bf16 (Megatron-Core's TE layers are the transformer layers') */
    sim_dtype dt = pl->fp8 ? SIM_DTYPE_BF16 : pl->st.dtype;
    int64_t t = pl->t, sb = pl->s * pl->st.mb, h = m->hidden, d = pl->ab; /* the rank's tokens (cp) */
    int64_t sbhd = sb * h * d, vt = pl->vp / t;
    int64_t logits_bytes = sb * vt * 4;
    int64_t rt = pl->st.sp ? t : 1; /* sequence parallel: s/t tokens between the TP regions */

    P->logits_alloc = wl_pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, logits_bytes);
    P->logits_free = wl_pay_mem(s, "logits", SIM_MEM_ACTIVATIONS, -logits_bytes);

    /* kernels=eager: the final norm's backward computes its weight and bias
     * gradients too (2 more passes, as the layers' norms: layer_payloads.c);
     * with autocast=1 the embeddings and the stream up to the final norm
     * are fp32 (twice the bytes), the norm runs in fp32 (4) and its output
     * is cast for the output layer (3), its backward in fp32 (6 + 4) after
     * the cast of the output layer's input gradient (3) */
    int eager = pl->st.eager_kernels, f32 = eager && pl->st.autocast;
    int64_t emb = f32 ? 2 : 1;
    /* the final norm's passes by element-wise class (layer_payloads.c
     * elem_passes_of): eager's LayerNorm forward and input gradient norm,
     * its weight and bias gradients reduce, the gradient cast up cast_up;
     * the fused kernels stream */
    int64_t fln[SIM_MEMC_COUNT] = {0}, fln_b[SIM_MEMC_COUNT] = {0};
    if (f32) {
        fln[SIM_MEMC_NORM] = 4, fln[SIM_MEMC_STREAM] = 3;
        fln_b[SIM_MEMC_CAST_UP] = 3, fln_b[SIM_MEMC_NORM] = 6, fln_b[SIM_MEMC_REDUCE] = 4;
    } else if (eager) {
        fln[SIM_MEMC_NORM] = 2;
        fln_b[SIM_MEMC_NORM] = 3, fln_b[SIM_MEMC_REDUCE] = 2;
    } else {
        fln[SIM_MEMC_STREAM] = 2;
        fln_b[SIM_MEMC_STREAM] = 3;
    }
    for (int c = 0; c < SIM_MEMC_COUNT; c++) {
        fln[c] = fln[c] * sbhd / rt;
        fln_b[c] = fln_b[c] * sbhd / rt;
    }

    /* forward */
    /* word row (+ position row) -> sum (+ BLOOM's embedding norm) */
    P->embed = wl_pay_elem(s, "embed",
                           emb * ((m->position == WL_POS_LEARNED ? 3 : 2) * sbhd + (m->embed_norm ? 2 * sbhd : 0)), dt);
    P->final_ln = wl_pay_elem_cls(s, "final_ln", fln, dt);
    P->logits = wl_pay_gemm(s, "logits", sb, vt, h, dt);
    int64_t lf[SIM_MEMC_COUNT], lb[SIM_MEMC_COUNT];
    loss_bytes(pl->st.loss, sb * vt, vt, sim_dtype_bytes(dt), pl->st.autocast, lf, lb);
    P->loss = wl_pay_elem_cls(s, "loss", lf, SIM_DTYPE_FP32);

    /* backward */
    P->loss_b = wl_pay_elem_cls(s, "loss_bwd", lb, SIM_DTYPE_FP32);
    P->logits_dg = wl_pay_gemm(s, "logits_dgrad", sb, h, vt, dt);
    P->logits_wg = wl_pay_gemm(s, "logits_wgrad", vt, h, sb, dt);
    P->final_ln_b = wl_pay_elem_cls(s, "final_ln_bwd", fln_b, dt);
    P->embed_b = wl_pay_elem(s, "embed_bwd", emb * ((m->position == WL_POS_LEARNED ? 3 : 2) * sbhd +
                                                    (m->embed_norm ? 3 * sbhd : 0)), dt);

    /* autocast=1: the output layer's fp32 weight (its own, or the tied word
     * embeddings) cast in forward and its gradient cast back (6 bytes per
     * parameter each), as a layer's linears (layer_payloads.c).  When one
     * rank holds both uses of the tied weight (pp = 1) autograd sums their
     * fp32 gradients before AccumulateGrad (12); from the second micro-batch
     * on AccumulateGrad adds into .grad (12 per weight: the output layer's
     * own when untied or on another stage, the word embeddings').  The
     * position table's few s*h are not counted. */
    int64_t vh = vt * h, same = !m->untied && pl->p == 1;
    P->out_wcast = P->out_gcast[0] = P->out_gcast[1] = P->emb_gacc[0] = P->emb_gacc[1] = UINT32_MAX;
    if (pl->st.autocast) {
        /* the gradient's cast up runs PyTorch's dynamic-casting path (cast_up) */
        const int64_t gc[SIM_MEMC_COUNT] = {[SIM_MEMC_CAST_UP] = 6 * vh},
                      gca[SIM_MEMC_COUNT] = {[SIM_MEMC_CAST_UP] = 6 * vh, [SIM_MEMC_STREAM] = (same ? 0 : 12) * vh};
        P->out_wcast = wl_pay_elem(s, "output_weight_cast", 6 * vh, dt);
        P->out_gcast[0] = wl_pay_elem_cls(s, "output_grad_cast", gc, dt);
        P->out_gcast[1] = wl_pay_elem_cls(s, "output_grad_cast_accumulate", gca, dt);
        if (same)
            P->emb_gacc[0] = wl_pay_elem(s, "tied_grad_sum", 12 * vh, dt);
        P->emb_gacc[1] = wl_pay_elem(s, same ? "tied_grad_sum_accumulate" : "grad_accumulate", (same ? 24 : 12) * vh, dt);
    }

    P->tp_ar = wl_pay_coll(s, "tp_allreduce", SIM_COLL_ALLREDUCE, sbhd);
    /* vocab-parallel cross-entropy: max, predicted logit and sum of exp over
     * the vocabulary shards, one fp32 value per token each */
    P->loss_ar = wl_pay_coll(s, "loss_allreduce", SIM_COLL_ALLREDUCE, sb * 4);
    /* sequence parallelism (Korthikanti et al. 2022 Sec. 4.2.2): the
     * embedding output is reduce-scattered along the sequence; the final
     * layer norm runs on s/t tokens, all-gathered for the logits GEMM, whose
     * input gradient is reduce-scattered; pipeline messages carry the shard */
    P->emb_red = P->out_red = P->tp_ar;
    P->out_ag = UINT32_MAX;
    if (pl->st.sp) {
        P->emb_red = P->out_red = wl_pay_coll(s, "sp_reducescatter", SIM_COLL_REDUCESCATTER, sbhd);
        P->out_ag = wl_pay_coll(s, "sp_allgather", SIM_COLL_ALLGATHER, sbhd);
    }

    /* autocast=1: the residual stream between stages, and its gradient, are fp32 */
    int64_t msg = (pl->st.autocast ? 4 * sb * h : sbhd) / rt;
    P->send_act = wl_pay_p2p(s, SIM_OP_SEND, "send_act", msg, TAG_ACT);
    P->recv_act = wl_pay_p2p(s, SIM_OP_RECV, "recv_act", msg, TAG_ACT);
    P->send_grad = wl_pay_p2p(s, SIM_OP_SEND, "send_grad", msg, TAG_GRAD);
    P->recv_grad = wl_pay_p2p(s, SIM_OP_RECV, "recv_grad", msg, TAG_GRAD);
}

static sim_tags tags(int layer, int micro, sim_phase ph)
{
    sim_tags t = {layer, micro, -1, (uint8_t)ph};
    return t;
}

/* The layers of a model chunk that recompute: its first ones, as many as
 * recompute_layers says (Megatron's block method: in every chunk), or with
 * Merak's stage-aware ratio the stage's first nrec across its chunks. */
static int chunk_recomputed(const gen *g, int chunk)
{
    int nl = nlay(g->pl, g->stage, chunk);
    int n =
        g->pl->st.recompute_layers >= 0 ? g->pl->st.recompute_layers : g->nrec - local_first(g->pl, g->stage, chunk);
    return n < 0 ? 0 : n > nl ? nl : n;
}

static wl_layer *layer_of(gen *g, int chunk, int j) { return j < chunk_recomputed(g, chunk) ? g->layer : g->layer_nr; }

/* ZeRO-3: a MoE layer's experts on this rank, sharded over their replicas
 * (0 where they have none or are not sharded). */
static int64_t expert_sharded(const gen *g, int layer)
{
    return g->edp_ag >= 0 ? wl_layer_expert_params(g->m, &g->pl->st, layer) : 0;
}

/* ZeRO-3 / OSDP: before a layer's parameters are needed, allocate their full
 * copy and all-gather it (FSDP's unshard, issued one layer ahead so that it
 * overlaps the layer before: forward and backward prefetch).  A MoE layer's
 * experts follow on the same stream over their own replicas. */
static void gather(gen *g, int layer, int micro, sim_phase ph)
{
    int64_t x = layer_sharded(g->m, g->pl, layer), e = expert_sharded(g, layer), wb = g->pl->wbytes;
    if (x == 0 || g->pl->st.osdp_split > 1)
        return;
    sim_tags t = tags(layer, micro, ph);
    uint32_t mem = sim_sched_add(g->s, g->cur.sc, wl_pay_mem(g->s, "gathered_weights", SIM_MEM_WEIGHTS, (x + e) * wb),
                                 -1, t, NULL, 0);
    g->ag_of[layer] = sim_sched_add(g->s, g->s_ag, wl_pay_coll(g->s, "fsdp_allgather", SIM_COLL_ALLGATHER, x * wb),
                                    g->ag_comm, t, &mem, 1);
    if (e > 0) /* the layer is ready when the later of the two, on one stream, is */
        g->ag_of[layer] = sim_sched_add(g->s, g->s_ag,
                                        wl_pay_coll(g->s, "fsdp_expert_allgather", SIM_COLL_ALLGATHER, e * wb),
                                        g->edp_ag, t, &mem, 1);
}

static void fsdp_copy_out(gen *g, int64_t x, sim_tags t);

/* The next kernel waits for the layer's gathered parameters. */
static void use_gathered(gen *g, int layer, sim_tags t)
{
    int64_t x = layer_sharded(g->m, g->pl, layer);
    if (x > 0 && g->pl->st.osdp_split == 1) {
        wl_cursor_pend(&g->cur, g->ag_of[layer]);
        fsdp_copy_out(g, x + expert_sharded(g, layer), t);
    }
}

/* FSDP's reshard: the full copy is freed after the layer ran. */
static void release(gen *g, int layer, int micro, sim_phase ph)
{
    int64_t x = layer_sharded(g->m, g->pl, layer), e = expert_sharded(g, layer);
    if (x > 0 && g->pl->st.osdp_split == 1)
        wl_cursor_mem(&g->cur, wl_pay_mem(g->s, "gathered_weights", SIM_MEM_WEIGHTS, -(x + e) * g->pl->wbytes),
                      tags(layer, micro, ph));
}

/* ---- OSDP operator splitting (papers.md §3.6) ----------------------------
 * OSDP's code splits a Linear along its input features into k slices whose
 * outputs are summed, each slice FSDP-wrapped on its own, so only one slice's
 * parameters are all-gathered at a time.  With osdp_split=k the sharded
 * linears of a layer are gathered slice by slice, each slice just before its
 * GEMM (the next slice prefetched meanwhile, within the layer) and freed
 * after it.  Assumptions (ours, not measured):
 *  - a unit's parameters (weights, biases, layer norms) go to its linears in
 *    the proportion of their weights (attention: QKV 3/4, projection 1/4;
 *    MLP: fc1 and fc2 1/2 each), then in k equal slices (remainders on the
 *    last), so the all-gathered bytes in total do not change with k;
 *  - forward (and recompute): k GEMMs with 1/k of the reduction dimension
 *    and an element-wise add of each partial output into the sum (read two,
 *    write one); the partial output buffer is not counted in memory;
 *  - backward: the input gradient is k GEMMs with 1/k of the output columns
 *    (concatenated, no add); the weight gradient reads no weights and stays
 *    one GEMM; the gradients are reduce-scattered per layer as without
 *    splitting;
 *  - the first slice of a layer is gathered when the layer starts (no
 *    prefetch across layers), so the gathered-weight peak is the largest two
 *    consecutive slices instead of two layers' units. */

static int64_t linear_sharded(gen *g, int layer, wl_linear lin)
{
    int lv = osdp_level(g->pl, layer);
    int attn = lin == WL_LIN_QKV || lin == WL_LIN_PROJ;
    if (!(lv & (attn ? 1 : 2)))
        return 0;
    int64_t x = attn ? attn_params(g->m, g->pl, layer) : mlp_params(g->m, g->pl, layer);
    int64_t h = g->m->hidden, qkv = wl_model_qkv_out(g->m), fc1 = wl_model_fc1_out(g->m, g->m->ffn);
    int64_t first = attn ? x * qkv / (qkv + h) : x * fc1 / (fc1 + g->m->ffn);
    return lin == WL_LIN_QKV || lin == WL_LIN_FC1 ? first : x - first;
}

static int64_t slice_of(int64_t y, int k, int i)
{
    return i < k - 1 ? y / k : y - (k - 1) * (y / k);
}

/* The all-gather of one slice, after its memory is allocated. */
static uint32_t gather_slice(gen *g, int64_t bytes, sim_tags t)
{
    uint32_t mem = sim_sched_add(g->s, g->cur.sc, wl_pay_mem(g->s, "gathered_weights", SIM_MEM_WEIGHTS, bytes), -1, t,
                                 NULL, 0);
    return sim_sched_add(g->s, g->s_ag, wl_pay_coll(g->s, "fsdp_allgather", SIM_COLL_ALLGATHER, bytes), g->ag_comm,
                         t, &mem, 1);
}

/* The sharded linear used after `lin` in the same layer (forward order QKV,
 * projection, fc1, fc2; input gradients the reverse of the blocks: fc2, fc1,
 * projection, QKV), -1 if none. */
static int next_linear(gen *g, int layer, int lin, int dgrad)
{
    static const int fwd[4] = {WL_LIN_QKV, WL_LIN_PROJ, WL_LIN_FC1, WL_LIN_FC2};
    static const int bwd[4] = {WL_LIN_FC2, WL_LIN_FC1, WL_LIN_PROJ, WL_LIN_QKV};
    const int *o = dgrad ? bwd : fwd;
    int i = 0;
    while (o[i] != lin)
        i++;
    for (i++; i < 4; i++)
        if (linear_sharded(g, layer, (wl_linear)o[i]) > 0)
            return o[i];
    return -1;
}

static uint32_t osdp_linear(wl_cursor *c, int layer, wl_linear lin, uint32_t payload, sim_tags t)
{
    gen *g = c->linear_ctx;
    int64_t y = linear_sharded(g, layer, lin);
    if (y == 0)
        return wl_cursor_comp(c, payload, t);
    int k = g->pl->st.osdp_split, dgrad = t.phase == SIM_PHASE_BACKWARD;
    int64_t wb = g->pl->wbytes;
    sim_tags tl = tags(layer, t.micro, (sim_phase)t.phase);
    sim_payload whole = g->s->payloads[payload];
    uint32_t out = 0;
    for (int i = 0; i < k; i++) {
        int64_t bytes = slice_of(y, k, i) * wb;
        uint32_t ag;
        if (g->pf_layer == layer && g->pf_lin == (int)lin && g->pf_slice == i && g->pf_dgrad == dgrad &&
            g->pf_micro == t.micro) {
            ag = g->pf_ag;
        } else {
            if (g->pf_layer >= 0) /* a prefetch the order did not use: freed (not reached with megatron) */
                wl_cursor_mem(c, wl_pay_mem(g->s, "gathered_weights", SIM_MEM_WEIGHTS, -g->pf_bytes), tl);
            ag = gather_slice(g, bytes, tl);
        }
        g->pf_layer = -1;
        /* prefetch the next slice while this one computes */
        int nl = i + 1 < k ? (int)lin : next_linear(g, layer, lin, dgrad);
        if (nl >= 0) {
            g->pf_layer = layer;
            g->pf_lin = nl;
            g->pf_slice = i + 1 < k ? i + 1 : 0;
            g->pf_dgrad = dgrad;
            g->pf_micro = t.micro;
            g->pf_bytes = slice_of(linear_sharded(g, layer, (wl_linear)nl), k, g->pf_slice) * wb;
            g->pf_ag = gather_slice(g, g->pf_bytes, tl);
        }
        sim_payload p = whole;
        if (dgrad)
            p.n = slice_of(whole.n, k, i);
        else
            p.k = slice_of(whole.k, k, i);
        wl_cursor_pend(c, ag);
        out = wl_cursor_comp(c, sim_sched_payload(g->s, &p), t);
        if (!dgrad && i > 0) /* partial output summed into the result */
            out = wl_cursor_comp(c, wl_pay_elem(g->s, "osdp_split_add",
                                                3 * whole.m * whole.n * sim_dtype_bytes((sim_dtype)whole.dtype),
                                                (sim_dtype)whole.dtype), t);
        wl_cursor_mem(c, wl_pay_mem(g->s, "gathered_weights", SIM_MEM_WEIGHTS, -bytes), tl);
    }
    return out;
}

/* FSDP's post-backward reduction of a unit's x gradients, after op `dep`:
 * reduce-scatter over the shard group on "fsdp-rs", and under fsdp=hybrid
 * (HSDP) the all-reduce of the resulting shard over the replicas (the
 * nodes) on its own stream, as FSDP1's _all_reduce_stream
 * (_runtime_utils.py _post_backward_hook).  Returns the reduce-scatter (the
 * full gradients can go after it). */
static uint32_t reduce_shard(gen *g, int64_t x, const uint32_t *dep, int ndep, sim_tags t)
{
    const plan *pl = g->pl;
    uint32_t rs = sim_sched_add(g->s, g->s_rs, wl_pay_coll(g->s, "fsdp_reducescatter", SIM_COLL_REDUCESCATTER,
                                                            x * pl->gbytes),
                                g->rs_comm, t, dep, ndep);
    g->last_rs = rs;
    if (g->ar_comm >= 0)
        g->last_ar = sim_sched_add(g->s, g->s_ar, wl_pay_coll(g->s, "hsdp_allreduce", SIM_COLL_ALLREDUCE,
                                                               shard(x, pl->ds) * pl->gbytes),
                                   g->ar_comm, t, &rs, 1);
    return rs;
}

/* PyTorch FSDP's own passes over a unit's x gathered gradients before their
 * reduce-scatter, every micro-batch (sources read, not copied: pytorch/pytorch
 * torch/distributed/fsdp/_runtime_utils.py _post_backward_hook and
 * algorithms/_comm_hooks/default_hooks.py reduce_scatter_hook for FSDP1;
 * _fully_shard/_fsdp_collectives.py foreach_reduce for FSDP2).  w and r
 * are the gradient's bytes as computed (the parameter dtype) and as reduced.
 * FSDP1: the flat parameter's gradient is autograd's cat of its views'
 *   gradients (the views are split() of the flat parameter, so
 *   SplitWithSizesBackward concatenates them: w read, w written per
 *   parameter, on the compute stream, the cat kernel's class); then on the
 *   post-backward stream the cast to the reduce dtype where it differs
 *   (w + r, a widening copy) and the pre-division in place (r + r: the
 *   predivide factor is above 1 for every group of 2 or more), then the
 *   reduce-scatter.
 * FSDP2: one copy-in of the gradients into the reduce-scatter buffer,
 *   widened as it copies (torch._chunk_cat, w + r, on the compute stream);
 *   NCCL averages fp32 and bf16 (ReduceOp.AVG), fp16 is pre-divided.
 * Megatron-FSDP: none (megatron/core/distributed/fsdp: the weight-gradient
 *   GEMMs accumulate into the bucket the reduce-scatter reads, and the
 *   gathered parameters alias the all-gather's bucket).
 * Returns the op the reduce-scatter waits for. */
static uint32_t fsdp_grad_passes(gen *g, int64_t x, sim_tags t)
{
    const plan *pl = g->pl;
    int64_t w = pl->wbytes, r = pl->gbytes;
    sim_dtype dt = pl->fp8 ? SIM_DTYPE_BF16 : pl->st.dtype;
    if (pl->st.fsdp == WL_FSDP_NONE || pl->st.fsdp_impl == WL_FSDP_IMPL_MEGATRON)
        return g->cur.last_comp;
    if (pl->st.fsdp_impl == WL_FSDP_IMPL_FSDP2) {
        uint32_t in = wl_cursor_comp(&g->cur, wl_pay_elem(g->s, "fsdp_grad_copy_in", x * (w + r), dt), t);
        if (r == 2 && pl->st.dtype == SIM_DTYPE_FP16)
            sim_sched_add(g->s, g->s_rs, wl_pay_elem(g->s, "fsdp_grad_predivide", 2 * x * r, dt), -1, t, &in, 1);
        return in;
    }
    int64_t cat[SIM_MEMC_COUNT] = {[SIM_MEMC_STRIDED] = 2 * w * x};
    uint32_t flat = wl_cursor_comp(&g->cur, wl_pay_elem_cls(g->s, "fsdp_grad_cat", cat, dt), t);
    if (r != w) {
        int64_t cast[SIM_MEMC_COUNT] = {[SIM_MEMC_CAST_UP] = (w + r) * x};
        sim_sched_add(g->s, g->s_rs, wl_pay_elem_cls(g->s, "fsdp_grad_cast", cast, dt), -1, t, &flat, 1);
    }
    sim_sched_add(g->s, g->s_rs, wl_pay_elem(g->s, "fsdp_grad_predivide", 2 * x * r, dt), -1, t, &flat, 1);
    return flat;
}

/* FSDP2 copies each all-gathered parameter out of the all-gather buffer into
 * its own unsharded tensor (split_with_sizes_copy, w read and w written) on
 * the compute stream before the unit runs; FSDP1 gathers straight into the
 * flat parameter, which its views alias. */
static void fsdp_copy_out(gen *g, int64_t x, sim_tags t)
{
    const plan *pl = g->pl;
    sim_dtype dt = pl->fp8 ? SIM_DTYPE_BF16 : pl->st.dtype;
    if (pl->st.fsdp_impl == WL_FSDP_IMPL_FSDP2) /* resolve_fsdp: only with fsdp= */
        wl_cursor_comp(&g->cur, wl_pay_elem(g->s, "fsdp_param_copy_out", 2 * pl->wbytes * x, dt), t);
}

/* Frees the full gradients of the previous layer once its reduce-scatter is
 * done (the compute stream waits for it, as FSDP's memory limit does). */
static void free_gradients(gen *g)
{
    if (!g->gfree)
        return;
    sim_sched_add(g->s, g->cur.sc, g->gfree_pay, -1, SIM_NO_TAGS, &g->gfree_dep, 1);
    g->gfree = 0;
}

/* ---- data-parallel buckets of a model chunk ------------------------------
 * Megatron-Core lays a chunk's parameters out in one buffer in reverse
 * order of registration, which is the order backward produces their
 * gradients (param_and_grad_buffer.py, "backprop order"): on the last
 * stage the output layer's copy of the word embeddings and the final layer
 * norm, then the layers last to first, then on the first stage the
 * position and word embeddings.  Buckets are cut every `cap` bytes (here
 * within a parameter; Megatron closes a bucket after the parameter that
 * fills it) and, under the distributed optimizer, the shared word
 * embedding is a bucket of its own whatever its size (distrib_optimizer.py,
 * _does_param_require_new_bucket).  The pieces, with n the chunk's layers:
 * 0 output copy, 1 final layer norm, 2 + (n-1-j) local layer j, n + 2
 * position embedding, n + 3 word embedding. */

static int npieces(const gen *g, int c)
{
    return nlay(g->pl, g->stage, c) + 4;
}

/* Replicated (all-reduced or reduce-scattered) parameters of piece k of
 * chunk c, and whether it is a bucket of its own. */
static int64_t piece_params(const gen *g, int c, int k, int *alone)
{
    const plan *pl = g->pl;
    int64_t h = g->m->hidden, vt = pl->vp / pl->t;
    int first_v = g->stage == 0 && c == 0, last_v = g->stage == pl->p - 1 && c == pl->v - 1;
    int n = nlay(pl, g->stage, c), own = pl->zero == 1 && pl->grad_rs; /* Megatron's distributed optimizer */
    *alone = 0;
    if (pl->zero == 3)
        return 0; /* everything is sharded (fsdp_reducescatter) */
    if (k < 2) {
        *alone = k == 0 && own;
        return !last_v ? 0 : k == 1 ? 2 * h : pl->p > 1 ? vt * h : 0;
    }
    if (k >= n + 2) {
        *alone = k == n + 3 && own;
        return !first_v ? 0 : k == n + 2 ? wl_model_pos_rows(g->m) * h : vt * h; /* positions, words */
    }
    int l = layer_index(pl, g->stage, c, n + 1 - k);
    return wl_layer_params(g->m, &pl->st, l) - layer_sharded(g->m, pl, l);
}

static void buckets_free(dp_buckets *b)
{
    free(b->params);
    free(b->last_piece);
    free(b->first);
    memset(b, 0, sizeof *b);
}

static int bucket_close(dp_buckets *b, int64_t params, int piece)
{
    if (b->n == b->cap_n) {
        int cap = b->cap_n ? 2 * b->cap_n : 16;
        int64_t *p = realloc(b->params, sizeof *p * (size_t)cap);
        if (p)
            b->params = p;
        int *l = realloc(b->last_piece, sizeof *l * (size_t)cap);
        if (l)
            b->last_piece = l;
        if (!p || !l)
            return -1;
        b->cap_n = cap;
    }
    b->params[b->n] = params;
    b->last_piece[b->n++] = piece;
    return 0;
}

/* Builds the buckets of chunk c of the rank's stage into b. */
static int buckets_build(gen *g, int c, dp_buckets *b)
{
    const plan *pl = g->pl;
    memset(b, 0, sizeof *b);
    int n = npieces(g, c);
    b->first = malloc(sizeof *b->first * (size_t)n);
    if (!b->first)
        return -1;
    int64_t cap = bucket_cap(pl, g->stage, c);
    cap = cap == INT64_MAX ? INT64_MAX : (cap + pl->gbytes - 1) / pl->gbytes; /* in parameters */
    int64_t cur = 0;
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        int alone;
        int64_t x = piece_params(g, c, k, &alone);
        b->first[k] = -1;
        if (x == 0)
            continue;
        if (alone && cur > 0) {
            rc = bucket_close(b, cur, k - 1);
            cur = 0;
        }
        b->first[k] = b->n;
        while (!rc && !alone && x >= cap - cur) {
            x -= cap - cur;
            rc = bucket_close(b, cap, k);
            cur = 0;
        }
        cur += x;
        if (!rc && alone && cur > 0) {
            rc = bucket_close(b, cur, k);
            cur = 0;
        }
    }
    if (!rc && cur > 0)
        rc = bucket_close(b, cur, n - 1);
    return rc;
}

/* The gradient reduction of bucket i of chunk c on "dp", after op `dep`
 * (all-reduce; reduce-scatter under ZeRO-1/2: Megatron's distributed
 * optimizer, DeepSpeed ZeRO-2; ZeRO-1 with grad_collective=allreduce
 * all-reduces). */
static uint32_t reduce_bucket(gen *g, int c, int i, uint32_t dep, sim_tags t)
{
    sim_coll kind = g->pl->grad_rs ? SIM_COLL_REDUCESCATTER : SIM_COLL_ALLREDUCE;
    const char *name = kind == SIM_COLL_ALLREDUCE ? "dp_allreduce" : "dp_reducescatter";
    g->last_dp = sim_sched_add(g->s, g->sdp, wl_pay_coll(g->s, name, kind, g->bk[c].params[i] * g->pl->gbytes),
                               g->dp_comm, t, &dep, 1);
    return g->last_dp;
}

/* Overlapped reduction (DDP's Reducer, Li et al. 2020 §3.2.3; Megatron's
 * overlap-grad-reduce, register_grad_ready): the pieces up to k of chunk c
 * have their gradients after the last kernel; every bucket they complete
 * goes out on "dp" at once. */
static void pieces_done(gen *g, int c, int k, sim_tags t)
{
    const dp_buckets *b = &g->bk[c];
    while (g->next_bucket < b->n && b->last_piece[g->next_bucket] <= k)
        reduce_bucket(g, c, g->next_bucket++, g->cur.last_comp, t);
}

/* Megatron's --overlap-param-gather (distributed_data_parallel.py forward
 * pre-hooks; param_and_grad_buffer.py start_param_sync/finish_param_sync):
 * the distributed optimizer's updated parameters are all-gathered bucket by
 * bucket while the next forward runs, in the reverse of the buckets' order
 * (the first layers' bucket first), and a module's forward waits for its
 * bucket.  The step simulated is a steady-state one: its all-gathers are
 * those of the previous step's update, so they wait for nothing (the
 * previous optimizer step ends at time 0) and the first forward of each
 * chunk waits for them. */
static void param_gathers(gen *g)
{
    const plan *pl = g->pl;
    sim_tags t = tags(-1, 0, SIM_PHASE_FORWARD);
    for (int c = 0; c < pl->v; c++)
        for (int i = g->bk[c].n - 1; i >= 0; i--)
            g->pg_op[g->pg[c] + (uint32_t)i] = sim_sched_add(
                g->s, g->sdp, wl_pay_coll(g->s, "dp_param_allgather", SIM_COLL_ALLGATHER, g->bk[c].params[i] * pl->wbytes),
                g->dp_comm, t, NULL, 0);
}

/* Under param_overlap, the first forward of chunk c waits for the
 * all-gather of the bucket holding piece k's first parameter. */
static void wait_param(gen *g, int c, int micro, int k)
{
    if (!g->pl->st.param_overlap || g->pl->zero != 1 || micro != 0 || g->bk[c].first[k] < 0)
        return;
    wl_cursor_pend(&g->cur, g->pg_op[g->pg[c] + (uint32_t)g->bk[c].first[k]]);
}

static int chunk_sharded(gen *g, int chunk)
{
    for (int j = 0; j < nlay(g->pl, g->stage, chunk); j++)
        if (layer_sharded(g->m, g->pl, layer_index(g->pl, g->stage, chunk, j)) > 0)
            return 1;
    return 0;
}

static void forward(gen *g, int micro, int chunk)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    wl_cursor *c = &g->cur;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_FORWARD);
    int first_v = g->stage == 0 && chunk == 0, last_v = g->stage == pl->p - 1 && chunk == pl->v - 1;
    int first = layer_index(pl, g->stage, chunk, 0), nl = nlay(pl, g->stage, chunk);
    if (!first_v) {
        wl_cursor_pend(c, sim_sched_add(g->s, g->s_recv_prev, P->recv_act, g->prev, t0, NULL, 0));
    } else {
        wait_param(g, chunk, micro, nl + 2); /* position (and word) embeddings */
        wl_cursor_comp(c, P->embed, t0);
        wl_cursor_tp_allreduce(c, pl->t, P->emb_red, t0); /* VocabParallelEmbedding */
    }
    if (chunk_sharded(g, chunk)) {
        /* one layer at a time, the next one's parameters gathered meanwhile */
        gather(g, first, micro, SIM_PHASE_FORWARD);
        for (int j = 0; j < nl; j++) {
            if (j + 1 < nl)
                gather(g, first + j + 1, micro, SIM_PHASE_FORWARD);
            use_gathered(g, first + j, tags(first + j, micro, SIM_PHASE_FORWARD));
            wl_layer_forward(layer_of(g, chunk, j), c, first + j, 1, micro, 0);
            if (pl->reshard) /* SHARD_GRAD_OP keeps it for the backward */
                release(g, first + j, micro, SIM_PHASE_FORWARD);
        }
    } else {
        /* runs of layers with the same recomputation; one layer at a time
         * where each waits for its parameters' all-gather */
        int one = pl->st.param_overlap && micro == 0;
        for (int j = 0; j < nl;) {
            int e = j;
            while (e < nl && layer_of(g, chunk, e) == layer_of(g, chunk, j) && !(one && e > j))
                e++;
            wait_param(g, chunk, micro, nl + 1 - j);
            wl_layer_forward(layer_of(g, chunk, j), c, first + j, e - j, micro, 0);
            j = e;
        }
    }
    if (last_v) {
        wait_param(g, chunk, micro, g->bk[chunk].first[0] >= 0 ? 0 : 1); /* output layer, final layer norm */
        wl_cursor_comp(c, P->final_ln, t0);
        if (P->out_ag != UINT32_MAX)
            wl_cursor_tp_allreduce(c, pl->t, P->out_ag, t0); /* gather_from_sequence_parallel_region */
        wl_cursor_mem(c, P->logits_alloc, t0);
        if (P->out_wcast != UINT32_MAX)
            wl_cursor_comp(c, P->out_wcast, t0);
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

/* step: index of this backward in g->steps (to know whether it is the
 * chunk's last, when overlapped DP buckets go out). */
static void backward(gen *g, int micro, int chunk, int step)
{
    const payloads *P = &g->P;
    const plan *pl = g->pl;
    wl_cursor *c = &g->cur;
    sim_tags t0 = tags(-1, micro, SIM_PHASE_BACKWARD);
    int first_v = g->stage == 0 && chunk == 0, last_v = g->stage == pl->p - 1 && chunk == pl->v - 1;
    int first = layer_index(pl, g->stage, chunk, 0);
    /* gradients synchronised inside this backward: ZeRO-2 every micro-batch
     * (it keeps only its shard); DDP overlap in the chunk's last one (the
     * others accumulate locally, DDP's no_sync; Megatron's is_last_microbatch) */
    int sync = pl->d > 1 && g->bk[chunk].n > 0 &&
               (pl->zero == 2 || (pl->st.dp_overlap && g->last_bwd[chunk] == step));
    g->next_bucket = 0;
    if (last_v) {
        wl_cursor_comp(c, P->loss_b, t0);
        wl_cursor_comp(c, P->logits_dg, t0);
        wl_cursor_tp_allreduce(c, pl->t, P->out_red, t0); /* output layer's copy_to_tensor_model_parallel_region */
        wl_cursor_comp_overlap(c, P->logits_wg, t0);
        if (P->out_gcast[0] != UINT32_MAX)
            wl_cursor_comp(c, P->out_gcast[micro > 0], t0);
        wl_cursor_mem(c, P->logits_free, t0);
        wl_cursor_comp(c, P->final_ln_b, t0);
        if (sync)
            pieces_done(g, chunk, 1, t0); /* output layer and final layer norm */
    } else {
        wl_cursor_pend(c, sim_sched_add(g->s, g->s_recv_next, P->recv_grad, g->next, t0, NULL, 0));
    }
    /* layers of this chunk that are recomputed: local j < nrc */
    int nl = nlay(pl, g->stage, chunk);
    int nrc = chunk_recomputed(g, chunk);
    unsigned flags = 0;
    if (g->pre_recompute && nrc > 0 && !last_v) {
        /* Merak pre_recompute_1f1b (papers.md §2.3, `RecomputeRecvGrad`): the
         * checkpointed layers' forward is rebuilt before the gradient
         * receive is waited for, so it fills the wait */
        uint32_t saved[WL_MAX_PENDING];
        int nsaved = c->npending;
        memcpy(saved, c->pending, sizeof saved);
        c->npending = 0;
        wl_layer_recompute(g->layer, c, first, nrc, micro, 0);
        memcpy(c->pending, saved, sizeof saved);
        c->npending = nsaved;
        flags = WL_LAYER_RECOMPUTED;
    }
    int sharded = chunk_sharded(g, chunk);
    if (sharded || sync) {
        for (int j = nl - 1; j >= 0; j--) {
            int l = first + j;
            int64_t x = layer_sharded(g->m, pl, l), e = expert_sharded(g, l);
            sim_tags t = tags(l, micro, SIM_PHASE_BACKWARD);
            if (sharded && pl->reshard) { /* gathered again, the next one prefetched (BACKWARD_PRE) */
                if (j == nl - 1)
                    gather(g, l, micro, SIM_PHASE_BACKWARD);
                if (j > 0)
                    gather(g, l - 1, micro, SIM_PHASE_BACKWARD);
                use_gathered(g, l, t);
            }
            if (sharded) {
                if (x > 0)
                    wl_cursor_mem(c, wl_pay_mem(g->s, "gathered_gradients", SIM_MEM_GRADIENTS, (x + e) * pl->gbytes),
                                  t);
            }
            wl_layer_backward(layer_of(g, chunk, j), c, l, 1, micro, j < nrc ? flags : 0);
            if (sharded) {
                uint32_t passes = x > 0 ? fsdp_grad_passes(g, x, t) : UINT32_MAX;
                uint32_t rs = x > 0 ? reduce_shard(g, x, &passes, 1, t) : UINT32_MAX;
                if (x > 0 && e > 0) /* the experts' after the layer's, on the same stream */
                    g->last_rs = rs = sim_sched_add(g->s, g->s_rs,
                                                    wl_pay_coll(g->s, "fsdp_expert_reducescatter",
                                                                SIM_COLL_REDUCESCATTER, e * pl->gbytes),
                                                    g->edp_rs, t, &c->last_comp, 1);
                release(g, l, micro, SIM_PHASE_BACKWARD);
                free_gradients(g);
                if (x > 0) {
                    g->gfree = 1;
                    g->gfree_pay = wl_pay_mem(g->s, "gathered_gradients", SIM_MEM_GRADIENTS, -(x + e) * pl->gbytes);
                    g->gfree_dep = rs;
                }
            }
            if (sync)
                pieces_done(g, chunk, nl + 1 - j, t);
        }
    } else {
        /* runs of layers with the same recomputation, last first */
        for (int e = nl; e > 0;) {
            int j = e - 1;
            while (j > 0 && layer_of(g, chunk, j - 1) == layer_of(g, chunk, e - 1))
                j--;
            wl_layer_backward(layer_of(g, chunk, j), c, first + j, e - j, micro, j < nrc ? flags : 0);
            e = j;
        }
    }
    if (first_v) {
        wl_cursor_comp(c, P->embed_b, t0);
        if (P->emb_gacc[micro > 0] != UINT32_MAX)
            wl_cursor_comp(c, P->emb_gacc[micro > 0], t0);
    } else {
        uint32_t dep = c->last_comp;
        sim_sched_add(g->s, g->s_send_prev, P->send_grad, g->prev, t0, &dep, 1);
    }
    if (sync)
        pieces_done(g, chunk, npieces(g, chunk), t0); /* embeddings: the last buckets */
    if (pl->st.grad_accum == WL_GACC_CAST_ADD && chunk == 0) {
        /* DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py
         * update_hp_grads, which pipe/engine.py _exec_backward_pass and the
         * engine's backward call after every micro-batch; read, not copied):
         * every 16-bit weight gradient of the stage cast to fp32 (2 + 4, a
         * widening copy) and added into the fp32 gradient buffer (4 + 4
         * read, 4 written), on the compute stream before the next pass */
        int64_t n = stage_params(g->m, pl, g->stage), w = pl->wbytes;
        int64_t by[SIM_MEMC_COUNT] = {[SIM_MEMC_STREAM] = 12 * n, [SIM_MEMC_CAST_UP] = (w + 4) * n};
        wl_cursor_comp(c, wl_pay_elem_cls(g->s, "hp_grad_accumulate", by, pl->st.dtype), t0);
    }
}

/* ---- routed MoE steps (trainsim moe) ----------------------------------- */

/* The EP rank that owns expert e. */
static int expert_owner(const wl_moe_route *r, int experts, int e)
{
    return e / (experts / r->ep);
}

/* A communicator per copied expert of each MoE layer and per (stage, TP
 * index, EP group): its owner first (the root), then the EP ranks holding a
 * copy, in EP order. */
static int copy_comms(gen *g, sim_err *err)
{
    const plan *pl = g->pl;
    const wl_moe_route *r = g->route;
    int E = g->m->moe_cfg.experts, ep = pl->ep, td = pl->t * pl->d, ng = pl->edp;
    g->copy_base = malloc(sizeof(int) * ((size_t)r->layers * E + 1));
    int *ranks = malloc(sizeof(int) * ((size_t)ep + 1));
    if (!g->copy_base || !ranks) {
        free(ranks);
        return sim_errf(err, "out of memory");
    }
    char name[96];
    for (int q = 0; q < r->layers; q++)
        for (int e = 0; e < E; e++) {
            const wl_moe_place *pc = r->places ? r->places[q] : NULL;
            int owner = expert_owner(r, E, e), copies = 0;
            for (int j = 0; pc && j < ep; j++)
                copies += j != owner && pc->holds[(size_t)e * ep + j];
            g->copy_base[(size_t)q * E + e] = copies ? g->s->ncomms : -1;
            for (int p = 0; copies && p < pl->p; p++)
                for (int t = 0; t < pl->t; t++)
                    for (int grp = 0; grp < ng; grp++) {
                        int k = 0;
                        ranks[k++] = p * td + (grp * ep + owner) * pl->t + t;
                        for (int j = 0; j < ep; j++)
                            if (j != owner && pc->holds[(size_t)e * ep + j])
                                ranks[k++] = p * td + (grp * ep + j) * pl->t + t;
                        snprintf(name, sizeof name, "copies.l%d.e%d.p%d.t%d.g%d", q, e, p, t, grp);
                        sim_sched_comm(g->s, name, ranks, k);
                    }
        }
    free(ranks);
    return 0;
}

/* The cursor's routed payloads and this rank's expert copies. */
static void route_rank(gen *g, int stage, int dpi, int tpi)
{
    const plan *pl = g->pl;
    const wl_moe_route *r = g->route;
    int E = g->m->moe_cfg.experts, ep = pl->ep, epi = dpi % ep;
    int block = (stage * pl->t + tpi) * pl->edp + dpi / ep; /* within a copy communicator's run */
    wl_moe_bal *b = &g->bal;
    int n = 0;
    for (int q = 0; q < r->layers; q++) {
        const wl_moe_place *pc = r->places ? r->places[q] : NULL;
        g->bal_first[q] = n;
        for (int e = 0; e < E; e++) {
            int base = g->copy_base[(size_t)q * E + e];
            if (base >= 0 && (expert_owner(r, E, e) == epi || pc->holds[(size_t)e * ep + epi]))
                g->bal_comm[n++] = base + block;
        }
        g->bal_ready[q] = g->bal_end[q] = UINT32_MAX;
    }
    g->bal_first[r->layers] = n;
    b->sprophet = -1;
    b->last_side = UINT32_MAX;
    g->cur.routed = g->routed;
    g->cur.ep_index = epi;
    g->cur.bal = b;
}

/* Checks a routed step against the plan and sets the generator up for it. */
static int route_init(gen *g, const wl_moe_route *r, sim_err *err)
{
    const plan *pl = g->pl;
    const wl_model *m = g->m;
    int nq = 0;
    for (int l = 0; l < m->layers; l++)
        nq += wl_model_is_moe_layer(m, l);
    if (!m->moe || r->ep != pl->ep || r->layers != nq)
        return sim_errf(err, "routed MoE step: %d MoE layers at ep=%d given, the plan has %d at ep=%d", r->layers,
                        r->ep, nq, pl->ep);
    const char *no = routed_unsupported(pl); /* trainsim moe's steps come here unchecked by resolve_moe */
    if (no)
        return sim_errf(err, "routed MoE step: %s is not modelled with skewed routing (1F1B, GPipe or eager "
                        "pipelines without interleaving, no context parallelism, zero=0 or zero=1)", no);
    int E = m->moe_cfg.experts;
    for (int q = 0; r->places && q < nq; q++)
        if (r->places[q] && (r->places[q]->experts != E || r->places[q]->ep != pl->ep))
            return sim_errf(err, "routed MoE step: the copies of MoE layer %d are for %d experts over ep=%d, the "
                            "model has %d over ep=%d", q, r->places[q]->experts, r->places[q]->ep, E, pl->ep);
    g->route = r;
    g->routed = wl_moe_routed_new(g->layer, g->s, r);
    g->bal_first = malloc(sizeof(int) * ((size_t)nq + 1));
    g->bal_comm = malloc(sizeof(int) * ((size_t)nq * E + 1));
    g->bal_ready = malloc(sizeof(uint32_t) * ((size_t)nq + 1));
    g->bal_end = malloc(sizeof(uint32_t) * ((size_t)nq + 1));
    if (!g->routed || !g->bal_first || !g->bal_comm || !g->bal_ready || !g->bal_end)
        return sim_errf(err, "out of memory");
    if (copy_comms(g, err))
        return -1;
    int64_t one = 0;
    for (int l = 0; l < m->layers && !one; l++)
        one = wl_layer_expert_params(m, &pl->st, l) / (E / pl->ep);
    g->bal = (wl_moe_bal){.last_micro = pl->nmb - 1, .first = g->bal_first, .comm = g->bal_comm,
                          .expert_bytes = one * pl->wbytes, .expert_grad_bytes = one * pl->gbytes,
                          .ready = g->bal_ready, .end = g->bal_end};
    g->bal_overlap = malloc((size_t)nq + 1);
    if (!g->bal_overlap)
        return sim_errf(err, "out of memory");
    for (int q = 0; q < nq; q++)
        g->bal_overlap[q] = r->places && r->places[q] && r->places[q]->overlap;
    g->bal.overlap = g->bal_overlap;
    return 0;
}

static int generate_rank(gen *g, int rank, const comms *C)
{
    sim_schedule *s = g->s;
    const plan *pl = g->pl;
    const wl_model *m = g->m;
    int td = pl->t * pl->d;
    int stage = rank / td, dpi = rank % td / pl->t, tpi = rank % pl->t;
    int last = stage == pl->p - 1;
    g->rank = rank;
    g->stage = stage;
    /* neighbours; interleaved chunks wrap from the last stage to the first */
    g->prev = ((stage + pl->p - 1) % pl->p) * td + rank % td;
    g->next = ((stage + 1) % pl->p) * td + rank % td;
    g->dp_comm = C->dp[stage * pl->t + tpi];
    int nsg = pl->d / pl->ds, fsdp = pl->zero == 3 || pl->osdp;
    g->ag_comm = fsdp ? C->ag[(stage * pl->t + tpi) * nsg + dpi / pl->ds] : -1;
    g->rs_comm = fsdp ? C->rs[(stage * pl->t + tpi) * nsg + dpi / pl->ds] : -1;
    g->ar_comm = fsdp && nsg > 1 ? C->ar[(stage * pl->t + tpi) * pl->ds + dpi % pl->ds] : -1;
    g->emb_comm = pl->p > 1 ? C->emb[dpi * pl->t + tpi] : -1;
    wl_cursor_init(&g->cur, s, rank, C->tp[stage * pl->d + dpi]); /* its "compute" and "tp" streams */
    g->cur.ep_comm = pl->ep > 1 ? C->ep[(stage * pl->t + tpi) * pl->edp + dpi / pl->ep] : -1;
    if (g->route)
        route_rank(g, stage, dpi, tpi);
    /* the replicas of this rank's experts: with ep = 1 every member of the
     * gradient group holds all of them, so the group itself */
    g->edp_comm = pl->edp < 2 ? -1 : pl->edp < pl->d ? C->edp[(stage * pl->t + tpi) * pl->ep + dpi % pl->ep] : g->dp_comm;
    /* ZeRO-3: the experts' all-gathers and reduce-scatters on the FSDP
     * streams, each with a communicator of its own (one per stream, as NCCL
     * needs); with ep = 1 the shard group's own */
    g->edp_ag = g->edp_rs = -1;
    if (pl->zero == 3 && pl->edp > 1) {
        g->edp_ag = pl->edp < pl->d ? g->edp_comm : g->ag_comm;
        g->edp_rs = pl->edp < pl->d ? C->edp_rs[(stage * pl->t + tpi) * pl->ep + dpi % pl->ep] : g->rs_comm;
    }
    /* the CP ring's neighbours: the same stage, DP and TP index, CP index ±1 */
    int cpi = dpi % pl->c, cp0 = rank - cpi * pl->t;
    g->cur.cp_next = cp0 + (cpi + 1) % pl->c * pl->t;
    g->cur.cp_prev = cp0 + (cpi + pl->c - 1) % pl->c * pl->t;
    g->pf_layer = -1;
    if (pl->st.osdp_split > 1 && pl->osdp) {
        g->cur.linear = osdp_linear;
        g->cur.linear_ctx = g;
    }
    g->cur.scp_send = pl->c > 1 ? sim_sched_stream_role(s, rank, "cp-ring-send", SIM_ROLE_CP) : -1;
    g->cur.scp_recv = pl->c > 1 ? sim_sched_stream_role(s, rank, "cp-ring-recv", SIM_ROLE_CP) : -1;
    g->sdp = pl->d > 1 || (pl->p > 1 && !m->untied && (stage == 0 || last)) ? sim_sched_stream_role(s, rank, "dp", SIM_ROLE_DP) : -1;
    g->s_ag = fsdp ? sim_sched_stream_role(s, rank, "fsdp-ag", SIM_ROLE_DP) : -1;
    g->s_rs = fsdp ? sim_sched_stream_role(s, rank, "fsdp-rs", SIM_ROLE_DP) : -1;
    g->s_ar = g->ar_comm >= 0 ? sim_sched_stream_role(s, rank, "hsdp-ar", SIM_ROLE_DP) : -1;
    g->s_send_next = g->s_recv_next = g->s_send_prev = g->s_recv_prev = -1;
    int wrap = pl->v > 1;
    if (!last || wrap) {
        g->s_send_next = sim_sched_stream_role(s, rank, "pp-send-next", SIM_ROLE_PP);
        g->s_recv_next = sim_sched_stream_role(s, rank, "pp-recv-next", SIM_ROLE_PP);
    }
    if (stage > 0 || wrap) {
        g->s_recv_prev = sim_sched_stream_role(s, rank, "pp-recv-prev", SIM_ROLE_PP);
        g->s_send_prev = sim_sched_stream_role(s, rank, "pp-send-prev", SIM_ROLE_PP);
    }
    g->last_dp = g->last_rs = g->last_ar = UINT32_MAX;
    g->gfree = 0;
    int nb = 0;
    for (int c = 0; c < pl->v; c++) {
        buckets_free(&g->bk[c]);
        if (buckets_build(g, c, &g->bk[c]))
            return -1;
        g->pg[c] = (uint32_t)nb;
        nb += g->bk[c].n;
    }
    uint32_t *pg = realloc(g->pg_op, sizeof *pg * (size_t)(nb + 1));
    if (!pg)
        return -1;
    g->pg_op = pg;

    /* recomputation: every layer under the strategy's mode, except with
     * Merak's schedules, which recompute the first ⌊ratio_k·n⌋ layers of
     * stage k (stage-aware ratio, papers.md §2.4, Merak `module.py`) */
    g->pre_recompute = pl->st.pipeline == WL_PIPE_MERAK_PRE || pl->st.pipeline == WL_PIPE_MERAK_FCP;
    if (wl_pipe_is_merak(pl->st.pipeline)) {
        double r0 = pl->st.ckpt_ratio >= 0 ? pl->st.ckpt_ratio : 1.0;
        double r = wl_pipe_merak_ratio(pl->st.pipeline, r0, pl->p, stage);
        g->nrec = (int)(r * local_first(pl, stage, pl->v) + 1e-9);
    } else {
        g->nrec = local_first(pl, stage, pl->v);
    }

    /* persistent memory */
    wl_memory mm;
    persistent_memory(m, pl, stage, &mm);
    sim_tags nt = SIM_NO_TAGS;
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "weights", SIM_MEM_WEIGHTS, (int64_t)mm.weights), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "gradients", SIM_MEM_GRADIENTS, (int64_t)mm.gradients), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "optimizer", SIM_MEM_OPTIMIZER, (int64_t)mm.optimizer), nt);
    if (mm.buffers > 0)
        wl_cursor_mem(&g->cur, wl_pay_mem(s, "buffers", SIM_MEM_BUFFERS, (int64_t)mm.buffers), nt);
    wl_cursor_mem(&g->cur, wl_pay_mem(s, "context", SIM_MEM_CONTEXT, (int64_t)mm.context), nt);

    stage_params_split sp = split_params(m, pl, stage);
    int64_t root_full = pl->zero == 3 ? sp.root : 0;
    if (root_full > 0) {
        /* ZeRO-3: the root unit (embeddings, final layer norm, output layer)
         * is gathered once and stays unsharded for the step (FSDP does not
         * reshard the root module after forward); its full gradients
         * accumulate until the end of the step */
        uint32_t mem = sim_sched_add(s, g->cur.sc, wl_pay_mem(s, "gathered_weights", SIM_MEM_WEIGHTS, root_full * pl->wbytes),
                                     -1, nt, NULL, 0);
        wl_cursor_mem(&g->cur, wl_pay_mem(s, "gathered_gradients", SIM_MEM_GRADIENTS, root_full * pl->gbytes), nt);
        wl_cursor_pend(&g->cur, sim_sched_add(s, g->s_ag, wl_pay_coll(s, "fsdp_allgather", SIM_COLL_ALLGATHER,
                                                                       root_full * pl->wbytes),
                                              g->ag_comm, nt, &mem, 1));
    }

    if (pl->st.param_overlap && pl->zero == 1)
        param_gathers(g);

    /* the pipeline schedule's order of forward and backward passes */
    g->nsteps = wl_pipe_order(pl->st.pipeline, pl->p, pl->v, pl->nmb, stage, g->steps);
    for (int c = 0; c < pl->v; c++)
        g->last_bwd[c] = -1;
    for (int i = 0; i < g->nsteps; i++)
        if (g->steps[i].backward)
            g->last_bwd[g->steps[i].chunk] = i;
    for (int i = 0; i < g->nsteps; i++) {
        if (g->steps[i].backward)
            backward(g, g->steps[i].micro, g->steps[i].chunk, i);
        else
            forward(g, g->steps[i].micro, g->steps[i].chunk);
    }
    free_gradients(g);

    /* gradient synchronisation after the flush, then the optimizer step */
    uint32_t last_bwd = g->cur.last_comp, tp_sync = UINT32_MAX;
    for (int c = 0; c < pl->v; c++) /* Tesseract's depth all-reduce of the weight gradients */
        wl_layer_step_sync(g->layer, &g->cur, layer_index(pl, stage, c, 0), nlay(pl, stage, c), last_bwd, &tp_sync);
    sim_tags bt = tags(-1, -1, SIM_PHASE_BACKWARD);
    if (pl->d > 1 && pl->zero != 2 && !pl->st.dp_overlap)
        /* end of step (the Oases benchmark's reduce_grad, DeepSpeed's and
         * Merak's ReduceGrads after the flush, papers.md §2.3; Megatron's
         * finalize_model_grads without overlap) */
        for (int c = 0; c < pl->v; c++)
            for (int i = 0; i < g->bk[c].n; i++)
                reduce_bucket(g, c, i, last_bwd, bt);
    int64_t ex = stage_expert_params(m, pl, stage);
    if (g->edp_comm >= 0 && ex > 0 && g->edp_ag < 0) {
        /* the experts' gradients over their replicas, after the flush (under
         * ZeRO-3 each layer's were reduce-scattered after its backward) */
        sim_coll k = pl->zero == 1 && pl->grad_rs ? SIM_COLL_REDUCESCATTER : SIM_COLL_ALLREDUCE;
        uint32_t p = wl_pay_coll(s, k == SIM_COLL_REDUCESCATTER ? "expert_dp_reducescatter" : "expert_dp_allreduce", k,
                                 ex * pl->gbytes);
        uint32_t dep[3] = {last_bwd};
        int nd = 1;
        if (g->last_dp != UINT32_MAX)
            dep[nd++] = g->last_dp;
        if (g->route && g->bal.last_side != UINT32_MAX) /* the copies' gradients are home */
            dep[nd++] = g->bal.last_side;
        g->last_dp = sim_sched_add(s, g->sdp, p, g->edp_comm, bt, dep, nd);
    }
    if (pl->p > 1 && !m->untied && (stage == 0 || last)) {
        uint32_t p = wl_pay_coll(s, "embed_allreduce", SIM_COLL_ALLREDUCE, pl->vp / pl->t * m->hidden * pl->gbytes);
        g->last_dp = sim_sched_add(s, g->sdp, p, g->emb_comm, bt, &last_bwd, 1);
    }
    if (root_full > 0) {
        uint32_t passes = fsdp_grad_passes(g, root_full, bt);
        /* after its own gradient passes and the stage's last collective on "dp" */
        uint32_t dep[2] = {passes, g->last_dp};
        uint32_t rs = reduce_shard(g, root_full, dep, g->last_dp != UINT32_MAX ? 2 : 1, bt);
        wl_cursor_mem(&g->cur, wl_pay_mem(s, "gathered_weights", SIM_MEM_WEIGHTS, -root_full * pl->wbytes), bt);
        sim_sched_add(s, g->cur.sc, wl_pay_mem(s, "gathered_gradients", SIM_MEM_GRADIENTS, -root_full * pl->gbytes), -1,
                      bt, &rs, 1);
    }
    /* Adam over the parameters this rank updates, as the strategy's
     * optimizer runs it (wl_optimizer): the fused pass reads p, g, m, v and
     * writes p, m, v (28 bytes/param in fp32; mixed precision reads a 2-byte
     * gradient and writes a 2-byte weight copy besides: also 28) */
    int64_t np = optimizer_params(m, pl, stage), per = 28;
    if (pl->st.optimizer == WL_OPT_FOREACH)
        per = 80;
    else if (pl->st.optimizer == WL_OPT_MEGATRON)
        per = 28 + (pl->st.dtype == SIM_DTYPE_FP16 ? 4 : 2) * pl->gbytes;
    else if (pl->st.optimizer == WL_OPT_MEGATRON_LEGACY)
        per = legacy_step_bytes(pl);
    uint32_t opt = wl_pay_kernel(s, "optimizer", SIM_KERNEL_OPTIMIZER, np, 0, 0, 0, per * np, SIM_DTYPE_FP32);
    uint32_t deps[5];
    int nd = 0;
    if (tp_sync != UINT32_MAX)
        deps[nd++] = tp_sync;
    if (g->route && g->bal.last_side != UINT32_MAX)
        deps[nd++] = g->bal.last_side;
    if (g->last_dp != UINT32_MAX)
        deps[nd++] = g->last_dp;
    if (g->last_rs != UINT32_MAX)
        deps[nd++] = g->last_rs;
    if (g->last_ar != UINT32_MAX)
        deps[nd++] = g->last_ar;
    uint32_t opt_op = sim_sched_add(s, g->cur.sc, opt, -1, tags(-1, -1, SIM_PHASE_OPTIMIZER), deps, nd);
    uint32_t last_ag = opt_op; /* the last op the updated weights wait for */
    if ((pl->zero == 1 || pl->zero == 2) && !pl->st.param_overlap) {
        /* ZeRO-1/2: every rank updated its shard; all-gather the new
         * weights, bucket by bucket (Megatron's start_param_sync) */
        sim_tags ot = tags(-1, -1, SIM_PHASE_OPTIMIZER);
        for (int c = 0; c < pl->v; c++)
            for (int i = 0; i < g->bk[c].n; i++)
                last_ag = sim_sched_add(s, g->sdp,
                                        wl_pay_coll(s, "dp_allgather", SIM_COLL_ALLGATHER, g->bk[c].params[i] * pl->wbytes),
                                        g->dp_comm, ot, &opt_op, 1);
    }
    if (pl->zero == 1 && g->edp_comm >= 0 && ex > 0)
        last_ag = sim_sched_add(s, g->sdp, wl_pay_coll(s, "expert_dp_allgather", SIM_COLL_ALLGATHER, ex * pl->wbytes),
                                g->edp_comm, tags(-1, -1, SIM_PHASE_OPTIMIZER), &opt_op, 1);
    if (pl->fp8 && !pl->st.fp8_standalone) {
        /* Transformer Engine casts the updated weights to FP8 once per step
         * (at the first micro-batch, cached for the others): read bf16, write
         * the FP8 weight and its transpose, 4 bytes per layer parameter
         * (fp8_casts=standalone casts them in every forward instead:
         * layer_payloads.c) */
        int64_t n = fp8_layer_params(pl, &sp);
        sim_sched_add(s, g->cur.sc, wl_pay_elem(s, "fp8_weight_cast", 4 * n, SIM_DTYPE_BF16), -1,
                      tags(-1, -1, SIM_PHASE_OPTIMIZER), &last_ag, 1);
    }
    return 0;
}

static void free_comms(comms *C)
{
    free(C->tp);
    free(C->dp);
    free(C->emb);
    free(C->ag);
    free(C->rs);
    free(C->ar);
    free(C->ep);
    free(C->edp);
    free(C->edp_rs);
    memset(C, 0, sizeof *C);
}

/* ZeRO-3/OSDP/FSDP: for each (stage, TP index) the all-gather and
 * reduce-scatter communicators of each shard group (the DP group, or under
 * fsdp=hybrid each node's block of ds members), and under hybrid the
 * all-reduce communicators over the replicas (members with the same index
 * in every block). */
static void shard_comms(sim_schedule *s, const plan *pl, comms *C, int *ranks)
{
    int td = pl->t * pl->d, nsg = pl->d / pl->ds;
    char name[64];
    for (int p = 0; p < pl->p; p++)
        for (int t = 0; t < pl->t; t++) {
            int at = p * pl->t + t;
            for (int q = 0; q < nsg; q++) {
                char sfx[16] = "";
                if (nsg > 1)
                    snprintf(sfx, sizeof sfx, ".n%d", q);
                for (int k = 0; k < pl->ds; k++)
                    ranks[k] = p * td + (q * pl->ds + k) * pl->t + t;
                snprintf(name, sizeof name, "fsdp-ag.p%d.t%d%s", p, t, sfx);
                C->ag[at * nsg + q] = sim_sched_comm(s, name, ranks, pl->ds);
                snprintf(name, sizeof name, "fsdp-rs.p%d.t%d%s", p, t, sfx);
                C->rs[at * nsg + q] = sim_sched_comm(s, name, ranks, pl->ds);
            }
            for (int k = 0; nsg > 1 && k < pl->ds; k++) {
                for (int q = 0; q < nsg; q++)
                    ranks[q] = p * td + (q * pl->ds + k) * pl->t + t;
                snprintf(name, sizeof name, "hsdp-ar.p%d.t%d.k%d", p, t, k);
                C->ar[at * pl->ds + k] = sim_sched_comm(s, name, ranks, nsg);
            }
        }
}

/* MoE: the expert-parallel groups (ep consecutive members of the gradient
 * group, same TP index) and the expert-data-parallel groups (the members
 * with the same EP index in every EP group), per stage and TP index. */
static void expert_comms(sim_schedule *s, const plan *pl, comms *C, int *ranks)
{
    int td = pl->t * pl->d, ng = pl->edp;
    char name[64];
    for (int p = 0; p < pl->p; p++)
        for (int t = 0; t < pl->t; t++) {
            int at = p * pl->t + t;
            for (int g = 0; g < ng; g++) {
                for (int j = 0; j < pl->ep; j++)
                    ranks[j] = p * td + (g * pl->ep + j) * pl->t + t;
                snprintf(name, sizeof name, "ep.p%d.t%d.g%d", p, t, g);
                C->ep[at * ng + g] = pl->ep > 1 ? sim_sched_comm(s, name, ranks, pl->ep) : -1;
            }
            for (int j = 0; j < pl->ep; j++) {
                for (int g = 0; g < ng; g++)
                    ranks[g] = p * td + (g * pl->ep + j) * pl->t + t;
                snprintf(name, sizeof name, "edp.p%d.t%d.e%d", p, t, j);
                C->edp[at * pl->ep + j] = ng > 1 ? sim_sched_comm(s, name, ranks, ng) : -1;
                snprintf(name, sizeof name, "edp-rs.p%d.t%d.e%d", p, t, j);
                C->edp_rs[at * pl->ep + j] = ng > 1 && pl->zero == 3 ? sim_sched_comm(s, name, ranks, ng) : -1;
            }
        }
}

/* Communicators, ranks in Megatron order: rank = pp·(tp·dp) + dp·tp + tp.
 * ZeRO-3/OSDP all-gathers and reduce-scatters have their own communicators
 * over the DP group (one per stream, as NCCL needs). */
static int make_comms(sim_schedule *s, const plan *pl, comms *C, sim_err *err)
{
    int td = pl->t * pl->d, n = td * pl->p;
    memset(C, 0, sizeof *C);
    C->tp = malloc(sizeof(int) * (size_t)(pl->p * pl->d));
    C->dp = malloc(sizeof(int) * (size_t)(pl->p * pl->t));
    C->ag = malloc(sizeof(int) * (size_t)(pl->p * td));
    C->rs = malloc(sizeof(int) * (size_t)(pl->p * td));
    C->ar = malloc(sizeof(int) * (size_t)(pl->p * td));
    C->emb = malloc(sizeof(int) * (size_t)td);
    C->ep = malloc(sizeof(int) * (size_t)(pl->p * td));
    C->edp = malloc(sizeof(int) * (size_t)(pl->p * td));
    C->edp_rs = malloc(sizeof(int) * (size_t)(pl->p * td));
    int *ranks = malloc(sizeof(int) * (size_t)(n > 2 ? n : 2));
    if (!C->tp || !C->dp || !C->ag || !C->rs || !C->ar || !C->emb || !C->ep || !C->edp || !C->edp_rs || !ranks) {
        free_comms(C);
        free(ranks);
        return sim_errf(err, "out of memory");
    }
    int fsdp = pl->zero == 3 || pl->osdp;
    char name[64];
    for (int p = 0; p < pl->p; p++)
        for (int d = 0; d < pl->d; d++) {
            for (int t = 0; t < pl->t; t++)
                ranks[t] = p * td + d * pl->t + t;
            snprintf(name, sizeof name, "tp.p%d.d%d", p, d);
            C->tp[p * pl->d + d] = pl->t > 1 ? sim_sched_comm(s, name, ranks, pl->t) : -1;
        }
    for (int p = 0; p < pl->p; p++)
        for (int t = 0; t < pl->t; t++) {
            for (int d = 0; d < pl->d; d++)
                ranks[d] = p * td + d * pl->t + t;
            snprintf(name, sizeof name, "dp.p%d.t%d", p, t);
            C->dp[p * pl->t + t] = pl->d > 1 ? sim_sched_comm(s, name, ranks, pl->d) : -1;
        }
    if (fsdp)
        shard_comms(s, pl, C, ranks);
    if (pl->ep > 1 || pl->edp < pl->d)
        expert_comms(s, pl, C, ranks);
    for (int d = 0; d < pl->d; d++)
        for (int t = 0; t < pl->t; t++) {
            ranks[0] = d * pl->t + t;
            ranks[1] = (pl->p - 1) * td + d * pl->t + t;
            snprintf(name, sizeof name, "embed.d%d.t%d", d, t);
            C->emb[d * pl->t + t] = pl->p > 1 && pl->tied ? sim_sched_comm(s, name, ranks, 2) : -1;
        }
    free(ranks);
    return 0;
}

/* Sets up a generator on schedule s (payloads, layers, per-stage buffers). */
static int gen_init(gen *g, sim_schedule *s, const wl_model *m, const plan *pl, sim_err *err)
{
    g->s = s;
    g->m = m;
    g->pl = pl;
    build_payloads(g);
    g->layer = wl_layer_new(s, m, &pl->st, err);
    if (!g->layer)
        return -1;
    g->layer_nr = g->layer;
    if (wl_pipe_is_merak(pl->st.pipeline) || pl->st.recompute_layers >= 0) {
        if (pl->st.schedule != WL_TP_MEGATRON && pl->st.schedule != WL_TP_MERAK && pl->st.schedule != WL_TP_TESSERACT)
            return sim_errf(err,
                            "%s recomputes only some layers of each stage, but schedule=%s fixes recompute=%s for "
                            "every layer; use schedule=megatron, merak or tesseract",
                            pl->st.recompute_layers >= 0 ? "recompute_layers" : wl_pipe_name(pl->st.pipeline),
                            wl_tp_schedule_name(pl->st.schedule), wl_recompute_name(pl->st.recompute));
        wl_strategy nr = pl->st;
        nr.recompute = WL_RECOMPUTE_NONE;
        g->layer_nr = wl_layer_new(s, m, &nr, err);
    }
    g->steps = malloc(sizeof *g->steps * (size_t)(2 * pl->nmb * pl->v));
    g->last_bwd = malloc(sizeof *g->last_bwd * (size_t)pl->v);
    g->ag_of = malloc(sizeof *g->ag_of * (size_t)m->layers);
    g->bk = calloc((size_t)pl->v, sizeof *g->bk);
    g->pg = malloc(sizeof *g->pg * (size_t)pl->v);
    if (!g->layer_nr || !g->steps || !g->last_bwd || !g->ag_of || !g->bk || !g->pg)
        return sim_errf(err, "out of memory");
    return 0;
}

static void gen_free(gen *g)
{
    if (g->layer_nr && g->layer_nr != g->layer)
        wl_layer_free(g->layer_nr);
    wl_layer_free(g->layer);
    free(g->steps);
    free(g->last_bwd);
    free(g->ag_of);
    for (int c = 0; g->bk && c < g->pl->v; c++)
        buckets_free(&g->bk[c]);
    free(g->bk);
    free(g->pg);
    free(g->pg_op);
    wl_moe_routed_free(g->routed);
    free(g->copy_base);
    free(g->bal_first);
    free(g->bal_comm);
    free(g->bal_ready);
    free(g->bal_end);
    free(g->bal_overlap);
}

/* ---- memory check ------------------------------------------------------- */

/* The peak of each stage from the memory effects the generator emits for one
 * rank of the stage (all on its "compute" stream, so their order, and so the
 * peak, is the one the simulation will see): the check and the schedule
 * agree by construction. */
static int stage_peaks_at(const wl_model *m, const plan *pl, wl_memory *out, sim_err *err)
{
    int n = pl->t * pl->p * pl->d;
    sim_schedule *s = sim_sched_new(n);
    if (!s)
        return sim_errf(err, "out of memory");
    comms C;
    gen g;
    memset(&g, 0, sizeof g);
    int rc = make_comms(s, pl, &C, err);
    if (rc == 0)
        rc = gen_init(&g, s, m, pl, err);
    if (rc == 0) {
        for (int i = 0; i < pl->p; i++) {
            int rank = i * pl->t * pl->d;
            if (generate_rank(&g, rank, &C)) {
                rc = sim_errf(err, "out of memory");
                break;
            }
            wl_memory *w = &out[i];
            memset(w, 0, sizeof *w);
            w->stage = i;
            w->inflight = wl_pipe_max_inflight(g.steps, g.nsteps);
            double cur[SIM_MEM_KIND_COUNT] = {0}, total = 0, gathered = 0;
            const sim_stream *S = &s->streams[g.cur.sc];
            int32_t gw = sim_sched_str(s, "gathered_weights"), gg = sim_sched_str(s, "gathered_gradients");
            for (uint32_t k = 0; k < S->nops; k++) {
                const sim_payload *p = sim_sched_payload_of(s, S->ops[k]);
                if (p->kind != SIM_OP_MEMORY)
                    continue;
                cur[p->sub] += (double)p->bytes;
                total += (double)p->bytes;
                if (p->name == gw || p->name == gg)
                    gathered += (double)p->bytes;
                if (total > w->total) {
                    w->total = total;
                    w->weights = cur[SIM_MEM_WEIGHTS];
                    w->gradients = cur[SIM_MEM_GRADIENTS];
                    w->optimizer = cur[SIM_MEM_OPTIMIZER];
                    w->activations = cur[SIM_MEM_ACTIVATIONS];
                    w->buffers = cur[SIM_MEM_BUFFERS];
                    w->context = cur[SIM_MEM_CONTEXT];
                    w->gathered = gathered;
                }
            }
        }
    }
    gen_free(&g);
    free_comms(&C);
    sim_sched_free(s);
    return rc;
}

/* The peaks of many micro-batches without generating them all: a stage's
 * memory either stops growing once the pipeline is full (1F1B, interleaved:
 * the same at 4p and 8p micro-batches) or grows by the same activations per
 * micro-batch (GPipe, eager), so the peaks at 4p and 8p extend linearly to
 * nmb, exactly in both cases.  A check of millions of micro-batches stays
 * as cheap as one of 8p. */
static int stage_peaks(const wl_model *m, const plan *pl, wl_memory *out, sim_err *err)
{
    int n1 = 4 * pl->p, n2 = 8 * pl->p;
    if (pl->nmb <= n2)
        return stage_peaks_at(m, pl, out, err);
    wl_memory *at = calloc((size_t)pl->p, sizeof *at);
    if (!at)
        return sim_errf(err, "out of memory");
    plan a = *pl, b = *pl;
    int64_t mbdp = (int64_t)pl->st.mb * pl->st.dp;
    a.nmb = n1, a.st.gb = (int)(n1 * mbdp);
    b.nmb = n2, b.st.gb = (int)(n2 * mbdp);
    int rc = stage_peaks_at(m, &a, at, err) || stage_peaks_at(m, &b, out, err) ? -1 : 0;
    double f = (double)(pl->nmb - n2) / (n2 - n1);
    for (int i = 0; rc == 0 && i < pl->p; i++) {
        wl_memory *o = &out[i];
        const wl_memory *l = &at[i];
        o->weights += f * (o->weights - l->weights);
        o->gradients += f * (o->gradients - l->gradients);
        o->optimizer += f * (o->optimizer - l->optimizer);
        o->activations += f * (o->activations - l->activations);
        o->buffers += f * (o->buffers - l->buffers);
        o->context += f * (o->context - l->context);
        o->total += f * (o->total - l->total);
        o->gathered += f * (o->gathered - l->gathered);
        o->inflight += (int)lround(f * (o->inflight - l->inflight));
    }
    free(at);
    return rc;
}

static int check_plan(const wl_model *m, const plan *pl, const sim_machine *mach, wl_memory *peak, sim_err *err)
{
    wl_memory *per = calloc((size_t)pl->p, sizeof *per);
    if (!per)
        return sim_errf(err, "out of memory");
    if (stage_peaks(m, pl, per, err)) {
        free(per);
        return -1;
    }
    wl_memory best = {0}, worst_mem = {0};
    int worst = -1;
    double worst_over = 0, worst_cap = 0;
    const char *worst_gpu = "";
    for (int i = 0; i < pl->p; i++) {
        wl_memory mem = per[i];
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
            worst_cap = cap;
            worst_gpu = gpu;
        }
    }
    free(per);
    if (peak)
        *peak = best;
    if (worst >= 0) {
        char hint[200] = "", gathered[96] = "";
        size_t k = 0;
        wl_strategy fused = pl->st;
        fused.attn = WL_ATTN_FLASH;
        int can_flash = 0;
        if (!pl->st.flash && resolve_attn(&fused, mach, &can_flash, NULL) == 0 && can_flash)
            k += (size_t)snprintf(hint + k, sizeof hint - k, "attn=flash (no s x s scores kept), ");
        if (pl->st.recompute == WL_RECOMPUTE_NONE)
            k += (size_t)snprintf(hint + k, sizeof hint - k, "recompute=full, ");
        if (pl->st.mb > 1)
            k += (size_t)snprintf(hint + k, sizeof hint - k, "a smaller mb, ");
        if (pl->d > 1 && pl->zero < 3 && !pl->osdp)
            k += (size_t)snprintf(hint + k, sizeof hint - k, "zero=%d, ", pl->zero + 1);
        snprintf(hint + k, sizeof hint - k, "more pp/tp");
        if (worst_mem.gathered > 0)
            snprintf(gathered, sizeof gathered, " (of which %.1f are gathered copies of sharded parameters and their "
                     "gradients)", worst_mem.gathered / GB);
        int n = worst_mem.inflight;
        return sim_errf(err,
                        "out of GPU memory on stage %d: needs %.1f GB per GPU (weights %.1f, gradients %.1f, "
                        "optimizer %.1f, activations %.1f for %d micro-batch%s in flight under pipeline=%s, buffers "
                        "%.1f, context %.1f)%s but the %s has %.1f GB; try %s",
                        worst, worst_mem.total / GB, worst_mem.weights / GB, worst_mem.gradients / GB,
                        worst_mem.optimizer / GB, worst_mem.activations / GB, n, n == 1 ? "" : "es",
                        wl_pipe_name(pl->st.pipeline), worst_mem.buffers / GB, worst_mem.context / GB, gathered,
                        worst_gpu[0] ? worst_gpu : "GPU", worst_cap / GB, hint);
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

int wl_gpt_memory(const wl_model *m, const wl_strategy *st, const sim_machine *mach, wl_memory *per_stage,
                  sim_err *err)
{
    plan pl;
    if (resolve(m, st, mach, &pl, err))
        return -1;
    return stage_peaks(m, &pl, per_stage, err);
}

int wl_gpt_cut(const wl_model *m, const wl_strategy *st, int k, wl_model *mo, wl_strategy *so, sim_err *err)
{
    plan pl;
    memset(&pl, 0, sizeof pl);
    pl.p = st->pp;
    pl.v = st->vstages;
    if (st->pp < 1 || st->vstages < 1 || k < 0)
        return sim_errf(err, "wl_gpt_cut: pp=%d, vstages=%d, k=%d", st->pp, st->vstages, k);
    if (st->stage_split == WL_SPLIT_UNIFORM && m->layers % st->pp)
        return sim_errf(err, "pp=%d does not divide the %d layers of %s", st->pp, m->layers, m->name);
    if (resolve_split(m, st, &pl, err))
        return -1;
    int n = pl.p * pl.v, least = pl.vl[0];
    for (int i = 1; i < n; i++)
        least = pl.vl[i] < least ? pl.vl[i] : least;
    int d = least - k; /* layers every virtual stage loses (gains when negative) */
    *mo = *m;
    *so = *st;
    mo->layers = m->layers - n * d;
    for (int i = 0; st->stage_split == WL_SPLIT_LIST && i < n; i++)
        so->pp_layers[i] = (short)(st->pp_layers[i] - d);
    if (mo->layers < 1)
        return sim_errf(err, "wl_gpt_cut: %d layers per virtual stage leave no layer", k);
    return mo->layers;
}

/* Refused before memory is spent: a generated rank holds about 41
 * operations per layer and micro-batch (GPT-3 175B on 1,024 GPUs: 48.2 M
 * operations, 2.1 GB), so this many take about 13 GB. */
static int too_many_ops(const plan *pl, int ranks, sim_err *err)
{
    double ops = (double)ranks * pl->nmb * (pl->lp_max + 2) * 41;
    if (ops <= WL_MAX_SCHEDULE_OPS)
        return 0;
    return sim_errf(err, "strategy: the %sschedule would hold about %.0f M operations (%d GPUs x %d micro-batches "
                    "x %d layers per stage), more than the %.0f M that fit in about 13 GB; use fewer micro-batches "
                    "(a larger mb or a smaller gb), or the planner's fast fidelity (trainsim plan --strategies ...), "
                    "which simulates a few",
                    ranks < pl->t * pl->p * pl->d ? "reduced " : "whole ", ops / 1e6, ranks, pl->nmb, pl->lp_max,
                    WL_MAX_SCHEDULE_OPS / 1e6);
}

/* The schedule; with fold (not NULL), only the ranks the fold keeps and a
 * sample of the others when the replicas fold (see wl_gpt_generate_folded). */
static sim_schedule *generate(const wl_model *m, const wl_strategy *st, const sim_machine *mach,
                              const wl_moe_route *route, int what, sim_fold *fold, sim_err *err)
{
    plan pl;
    if (fold)
        memset(fold, 0, sizeof *fold);
    if (resolve(m, st, mach, &pl, err) || check_plan(m, &pl, mach, NULL, err))
        return NULL;
    int n = pl.t * pl.p * pl.d;
    if (!fold && too_many_ops(&pl, n, err))
        return NULL;
    sim_schedule *s = sim_sched_new(n);
    unsigned char *want = fold ? calloc((size_t)n, 1) : NULL;
    if (!s || (fold && !want)) {
        sim_sched_free(s);
        free(want);
        sim_errf(err, "out of memory creating a schedule for %d ranks", n);
        return NULL;
    }
    char strat[sizeof s->meta.name];
    wl_strategy_format(&pl.st, strat, sizeof strat);
    /* an MoE model says the routing it was simulated with: uniform (every
     * expert gets the same tokens, so the all-to-alls are even) or a step's */
    snprintf(s->meta.name, sizeof s->meta.name, "%.40s %.190s%s", m->name, strat,
             !m->moe ? "" : route ? " (MoE, routed step)" : " (MoE, routing uniform)");
    s->meta.samples_per_iteration = pl.st.gb;
    s->meta.tokens_per_iteration = (double)pl.st.gb * m->seq;
    s->meta.model_flops_per_iteration = wl_gpt_model_flops(m, &pl.st);
    s->meta.dtype = pl.st.dtype;
    s->layout = (sim_layout){pl.t, pl.c, pl.d / pl.c, pl.p, 1};

    comms C;
    gen g;
    memset(&g, 0, sizeof g);
    int rc = make_comms(s, &pl, &C, err), folds = 0;
    if (rc == 0 && fold && (folds = sim_fold_select(s, mach, what, want, err)) < 0)
        rc = -1;
    if (rc == 0 && fold && !folds) { /* nothing folds: the whole schedule, as without fold */
        free(want);
        want = NULL;
    }
    int ngen = 0;
    for (int r = 0; r < n; r++)
        ngen += !want || want[r];
    if (rc == 0 && too_many_ops(&pl, ngen, err))
        rc = -1;
    if (rc == 0)
        rc = gen_init(&g, s, m, &pl, err);
    if (rc == 0 && route)
        rc = route_init(&g, route, err);
    for (int r = 0; rc == 0 && r < n; r++)
        if ((!want || want[r]) && generate_rank(&g, r, &C))
            rc = sim_errf(err, "out of memory");
    gen_free(&g);
    free_comms(&C);
    if (rc == 0 && (pl.st.launch_blocking || pl.st.p2p_sync) &&
        sim_sched_chain_host(s, pl.st.launch_blocking ? SIM_HOST_LAUNCH_BLOCKING : SIM_HOST_P2P_SYNC) < 0)
        rc = sim_errf(err, "out of memory ordering the host's launches on %d ranks", n);
    if (rc == 0 && want && (rc = sim_fold_partial(s, mach, what, want, fold, err)) == 0) {
        /* a sampled replica does not repeat its stand-in: every rank, made
         * afresh (the operations in the order a whole generation gives) */
        free(want);
        sim_sched_free(s);
        return generate(m, st, mach, route, 0, NULL, err);
    }
    free(want);
    if (rc < 0) {
        sim_sched_free(s);
        return NULL;
    }
    return s;
}

sim_schedule *wl_gpt_generate(const wl_model *m, const wl_strategy *st, const sim_machine *mach, sim_err *err)
{
    if (st->routing[0])
        return wl_moe_routed_step(m, st, mach, err);
    return generate(m, st, mach, NULL, 0, NULL, err);
}

sim_schedule *wl_gpt_generate_routed(const wl_model *m, const wl_strategy *st, const sim_machine *mach,
                                     const wl_moe_route *route, sim_err *err)
{
    return generate(m, st, mach, route, 0, NULL, err);
}

sim_schedule *wl_gpt_generate_folded(const wl_model *m, const wl_strategy *st, const sim_machine *mach, int what,
                                     sim_fold *f, sim_err *err)
{
    if (st->routing[0]) { /* a routed step's EP groups differ: nothing folds */
        memset(f, 0, sizeof *f);
        return wl_moe_routed_step(m, st, mach, err);
    }
    return generate(m, st, mach, NULL, what, f, err);
}

sim_schedule *wl_gpt_regenerate(void *ctx, int what, sim_fold *f, sim_err *err)
{
    const wl_gpt_regen_ctx *c = ctx;
    return what ? wl_gpt_generate_folded(c->model, c->st, c->m, what, f, err) : wl_gpt_generate(c->model, c->st, c->m, err);
}
