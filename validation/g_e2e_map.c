/* g_e2e_map.c — one row of validation/data/end-to-end/ (a CSV per family) mapped to a
 * cluster JSON, a model JSON and a strategy string (see g_e2e.h).
 *
 * The mapping reads the row's columns and, where the row is silent, its
 * family's documented defaults: the stack (attention kernel, recompute,
 * sharding, overlaps) and the provider's platform (GPUs per node, network),
 * each stated once per family in FAMILIES below with its source, never per
 * row.  Architecture facts a row does not repeat (norm, tied embeddings,
 * biases, position encoding, vocabulary of a public model) come from the
 * model family's published configuration (ARCH).  Nothing here knows
 * whether trainsim can run the result: g_e2e.c asks the parsers.
 *
 * Node layouts, per GPU class (node_json):
 *  - HGX / DGX boards (A100, H100, B200 SXM): 2 sockets, 4 PCIe switches of
 *    two GPUs each, NVSwitch, the node's NICs spread over the switches
 *    (NVIDIA DGX A100 / DGX H100 user guides: one NIC per GPU pair switch
 *    pair, GPUDirect RDMA);
 *  - V100 SXM2 (DGX-1): the same PCIe tree and the hybrid cube-mesh NVLink
 *    of the DGX-1 V100 whitepaper (Fig. 4: 16 GPU pairs, 8 of them of two
 *    links, [a, b, 2]);
 *  - PCIe cards (GeForce, RTX A6000, A40): up to 4 GPUs on one socket's root
 *    ports, 8 as two PCIe switches of 4 on two sockets (the layout of
 *    platforms/clusters/rtx4090-4x8.json); P2P as the catalogue says;
 *  - GB200 / GB300 trays: 4 GPUs per node (4 single-GPU PCIe links with a
 *    NIC each) in a 72-GPU NVLink domain (node.nvlink.domain_gpus: the
 *    rack's 18 trays; a job of fewer GPUs sits in one rack).  The rows do
 *    not say how a job of 256 GPUs is placed on the racks: consecutive
 *    trays fill racks of 72 (3 full racks and 10 trays of a fourth).
 * The fabric is one non-blocking switch (the rows' fat trees are
 * non-blocking; it also lets the planner's fast fidelity simulate one
 * data-parallel replica, planner/eval.c). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g_e2e.h"

/* ---- columns ---------------------------------------------------------- */

enum {
    C_ID, C_FAMILY, C_SECTION, C_SOFTWARE, C_FRAMEWORK, C_GPU, C_MEM, C_NGPUS, C_NODES, C_GPN, C_INTER, C_MODEL,
    C_LAYERS, C_HIDDEN, C_HEADS, C_KV, C_FFN, C_FFN_TYPE, C_VOCAB, C_SEQ, C_POS, C_PREC, C_TP, C_PP, C_DP, C_CP,
    C_EP, C_VP, C_SP, C_ZERO, C_MB, C_GB, C_RECOMP, C_FLASH, C_OTHER, C_ITER, C_TOKENS, C_TFLOPS, C_MFU, C_METRIC,
    C_MOTHER, C_NCOLS
};
static const char *const COLS[C_NCOLS] = {
    "row_id", "source_family", "source_section", "software_version", "framework", "gpu_model", "gpu_mem_gb",
    "num_gpus", "nodes", "gpus_per_node", "inter_node_network", "model_name", "num_layers", "hidden_size",
    "num_heads", "num_kv_heads", "ffn_hidden_size", "ffn_type", "vocab_size", "seq_len", "position_embedding",
    "precision", "tp", "pp", "dp", "cp", "ep", "vp", "sequence_parallel", "zero_or_fsdp", "micro_batch_size",
    "global_batch_size", "activation_recompute", "flash_attention", "other_optimizations", "measured_iter_time_s",
    "measured_tokens_per_s_per_gpu", "measured_tflops_per_gpu", "measured_mfu_pct", "metric_definition",
    "measured_other"};

typedef struct row {
    const val_csv *csv;
    int i;
    int col[C_NCOLS];
    e2e_map *m;
} row;

static const char *S(const row *r, int c) { return val_csv_str(r->csv, r->i, r->col[c]); }

/* Case-insensitive substring test. */
static int has(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; s && *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return 1;
    return 0;
}

static void gap(e2e_map *m, const char *kind, const char *fmt, ...)
{
    if (m->ngaps == E2E_MAX_GAPS)
        return;
    e2e_gap *g = &m->gaps[m->ngaps++];
    snprintf(g->kind, sizeof g->kind, "%s", kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->reason, sizeof g->reason, fmt, ap);
    va_end(ap);
}

/* A number column: 1 stated, 0 empty, -1 text that is not a number (a gap). */
static int num(row *r, int c, double *v)
{
    const char *s = S(r, c);
    *v = 0;
    if (!*s)
        return 0;
    char *end;
    *v = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (*end || !isfinite(*v)) {
        gap(r->m, "column not a number", "column %s: \"%.60s\" is not a number", COLS[c], s);
        return -1;
    }
    return 1;
}

/* A positive whole number the mapping needs: 0 with a gap when not stated. */
static int need(row *r, int c)
{
    double v;
    int k = num(r, c, &v);
    if (k == 0) {
        char kind[64];
        snprintf(kind, sizeof kind, "%s not stated", COLS[c]);
        gap(r->m, kind, "%s not stated", COLS[c]);
        return 0;
    }
    if (k < 0)
        return 0;
    if (!(v >= 1 && v == floor(v) && v < 1e9)) {
        gap(r->m, "column not a number", "column %s: %g is not a positive whole number", COLS[c], v);
        return 0;
    }
    return (int)v;
}

/* An optional whole number (0 when empty or not a number). */
static int opt_int(row *r, int c)
{
    double v;
    return num(r, c, &v) > 0 && v >= 1 ? (int)v : 0;
}

static void item(e2e_item *a, int *n, int kind, const char *fallback, const char *fmt, ...)
{
    if (*n == E2E_MAX_ITEMS)
        return;
    e2e_item *it = &a[(*n)++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->text, sizeof it->text, fmt, ap);
    va_end(ap);
    it->fallback_kind = kind;
    snprintf(it->fallback, sizeof it->fallback, "%s", fallback ? fallback : "");
}
#define STRAT(...) item(m->strat, &m->nstrat, 0, NULL, __VA_ARGS__)
#define MODEL(...) item(m->model_items, &m->nmodel, 0, NULL, __VA_ARGS__)
/* keys whose absence already means what the row needs (see e2e_item) */
#define STRAT_OR_DROP(...) item(m->strat, &m->nstrat, 1, NULL, __VA_ARGS__)
#define MODEL_OR_DROP(...) item(m->model_items, &m->nmodel, 1, NULL, __VA_ARGS__)

/* ---- model families: architecture facts a row does not repeat --------- */

typedef struct arch {
    const char *match;    /* substring of model_name (first match wins) */
    const char *norm;     /* layernorm | rmsnorm */
    int tied, bias;
    const char *position; /* when the row leaves position_embedding empty */
    int vocab;            /* when the row leaves vocab_size empty (0: not known) */
    int embed_norm;       /* a LayerNorm after the word embeddings (BLOOM) */
} arch;

static const arch ARCH[] = {
    /* Meta Llama 2 / 3 and TinyLlama config.json: RMSNorm, untied
     * embeddings, no biases, RoPE */
    {"Llama", "rmsnorm", 0, 0, "rope", 0, 0},
    /* NeMo Nemotron-3 / Nemotron-4 configs (Nemotron3Config8B/22B,
     * Nemotron4Config340B): LayerNorm1p (a LayerNorm), untied, no bias, RoPE;
     * the 256k SentencePiece vocabulary (Nemotron-3-8B-Base model card) */
    {"Nemotron", "layernorm", 0, 0, "rope", 256000, 0},
    /* llm-foundry MPT benchmark configs: LayerNorm, tied, biases on (the
     * NumParams column matches 12Ld^2 + 13Ld + Vd + Sd + 2d, data notes) */
    {"MPT", "layernorm", 1, 1, "learned", 0, 0},
    /* BLOOM (tr11-176B-ml README and slurm script: --embed-layernorm,
     * --position-embedding-type alibi, --pad-vocab-size-to 250880):
     * LayerNorm and an embedding LayerNorm, tied, biases, ALiBi, the
     * 250,880-entry padded vocabulary */
    {"BLOOM", "layernorm", 1, 1, "alibi", 250880, 1},
    /* modded-nanogpt's first records: F.rms_norm without affine parameters
     * (the row's model name says so) */
    {"RMSNorm", "rmsnorm", 1, 1, NULL, 0, 0},
    {"GPT-2 124M-class", "rmsnorm", 1, 1, NULL, 0, 0},
    /* OPT (Zhang et al. 2022): GPT-style with ReLU; MT-NLG: GPT-style */
    {"OPT", "layernorm", 1, 1, "learned", 50272, 0},
    {"MT-NLG", "layernorm", 1, 1, "learned", 50257, 0},
    /* GPT-2/3 as Megatron and NeMo build them (GPTConfig*: LayerNorm,
     * tied, biases, learned positions, GPT-2 BPE vocabulary of 50,257) */
    {"GPT", "layernorm", 1, 1, "learned", 50257, 0},
};

static const arch *arch_of(const char *model_name)
{
    for (size_t i = 0; i < sizeof ARCH / sizeof ARCH[0]; i++)
        if (has(model_name, ARCH[i].match))
            return &ARCH[i];
    return NULL;
}

/* ---- families (groups) ------------------------------------------------ */

typedef struct netdef {
    const char *gpu;     /* substring of the catalogue name; "" = any */
    const char *text;    /* as an inter_node_network cell */
} netdef;

struct e2e_family {
    const char *group, *file;
    const char *gpu_match;     /* rows whose gpu_model contains one of these ('|'-separated); NULL = all */
    const char *(*subset)(const row *r);
    /* the stack, where a row is silent (NULL: not stated, the row cannot be expressed) */
    const char *attn;          /* flash | unfused */
    const char *recompute;     /* none | full | selective */
    const char *sharding;      /* a zero_or_fsdp cell */
    int sp;                    /* sequence parallelism whenever tp > 1 */
    int dp_overlap;            /* gradient buckets reduced during backward: 0, 1, or -1 = by framework */
    int mcore_overlaps;        /* Megatron-Core: param all-gather and TP communication overlapped */
    int selective_is_blocks;   /* "selective" = checkpointing every n-th block (fms-fsdp), not Megatron's */
    double hsdp_below;         /* "per size" sharding: HSDP below this many parameters, FSDP above */
    const char *stage_split;   /* the pipeline's stage split where the row is silent (NULL: uniform) */
    /* the platform, where a row is silent */
    int gpus_per_node;
    const char *nic_kind;      /* IB | GbE | OPA */
    netdef net[3];
    double ci_budget;          /* estimated simulation cost the default (ctest) subset may use */
    int eager;                 /* the stack runs PyTorch eager (kernels=eager): one kernel per element-wise op */
    const char *loss;          /* the loss the stack computes (loss=...), NULL: the default */
    const char *optimizer;     /* its optimizer step (optimizer=...), NULL: the default (fused) */
    int launch_blocking;       /* the runs set CUDA_LAUNCH_BLOCKING=1 (launch_blocking=1) */
    int megatron_p2p;          /* Megatron's pipeline exchanges (p2p_sync=1 where not interleaved) */
};

static const char *subset_mem(const row *r)
{
    return has(S(r, C_GPU), "40GB") || atoi(S(r, C_MEM)) == 40 ? "a100-40gb" : "a100-80gb";
}
static const char *subset_dtype(const row *r) { return has(S(r, C_PREC), "fp8") ? "fp8" : "bf16"; }
static const char *subset_nemo(const row *r)
{
    if (has(S(r, C_SOFTWARE), "24.07"))
        return "summary-24.07";
    if (has(S(r, C_SOFTWARE), "24.03"))
        return "long-context";
    return "bridge-25.11+";
}
/* NeMo Framework Launcher 24.01 to 24.07 (its tags' launcher_scripts/conf/
 * config.yaml, read, not copied) sets NVTE_FUSED_ATTN: 0 for every run
 * ("Disable cudnn FA until we've tested it more"; set 2024-02-13, removed
 * for 24.09 by "enable fused attention", 2024-08-29), so Transformer Engine
 * ran its FlashAttention backend, the flash-attn 2 package, on H100 instead
 * of cuDNN's fused attention: attn=flash2 for the rows of those releases. */
static const char *nemo_attention(const e2e_family *f, const row *r)
{
    const char *v = S(r, C_SOFTWARE);
    if (strncmp(f->group, "e2e-nemo", 8) != 0 || strncmp(v, "NeMo 24.", 8) != 0)
        return NULL;
    int month = atoi(v + 8);
    return month >= 1 && month <= 7 ? "flash2" : NULL;
}
static const char *subset_blackwell(const row *r)
{
    return has(S(r, C_GPU), "GB300") ? "gb300" : has(S(r, C_GPU), "GB200") ? "gb200" : "b200";
}
static const char *subset_gpu(const row *r) { return has(S(r, C_GPU), "H100") ? "h100" : "a100"; }
static const char *subset_commodity(const row *r)
{
    const char *f = S(r, C_FAMILY);
    return has(f, "megatron") ? "rtx4090-megatron" : has(f, "nanogpt") ? "nanogpt-ddp" : "tinyllama-hf";
}

/* Costs are in estimated engine operations (g_e2e.c); ~15 M is about two
 * minutes of one core on the development VM. */
static const e2e_family FAMILIES[] = {
    /* MosaicML llm-foundry benchmarks (scripts/train/benchmarking/README.md,
     * submit_benchmarks.py, yamls/pretrain/mpt-*.yaml @5e85bd62): Composer
     * with PyTorch FSDP as each row states (FULL_SHARD / SHARD_GRAD_OP),
     * attn_impl triton (flash) by default, recompute as stated, bf16;
     * the model runs in PyTorch eager (no torch.compile in these
     * benchmarks: kernels=eager, MPTBlock's element-wise ops one by one);
     * the loss is flash-attn's fused Triton cross-entropy on the bf16
     * logits (llmfoundry/models/mpt/modeling_mpt.py ComposerMPTCausalLM:
     * loss_fn 'fused_crossentropy', the default; flash_attn/ops/triton/
     * cross_entropy.py: loss=fused).  The optimizer is Composer's
     * DecoupledAdamW (the MPT yamls' decoupled_adamw), a loop of per-tensor
     * PyTorch ops: optimizer=foreach moves the same bytes within 10 %.
     * Platform: MosaicML's A100 clusters, 8 GPUs per node (HGX A100) and
     * the stated 1,600 Gb/s per node of RoCE (8 x 200 GbE). */
    {"e2e-mosaicml-a100", "end-to-end/mosaicml_llm_foundry.csv", "A100", subset_mem,
     "flash", NULL, NULL, 0, 0, 0, 0, 0, NULL, 8, "GbE", {{"", "1600 Gbps node-node (RoCE)"}}, 15e6, 1, "fused", "foreach", 0, 0},
    /* The same stack on H100 (bf16 and TransformerEngine fp8).  The H100
     * sections do not state the fabric: MosaicML ran its H100 benchmarks on
     * CoreWeave HGX H100 nodes with 3.2 Tb/s of InfiniBand per node
     * (MosaicML blog "Benchmarking Large Language Models on NVIDIA H100
     * GPUs with CoreWeave", 2023): 8 x NDR 400. */
    {"e2e-mosaicml-h100", "end-to-end/mosaicml_llm_foundry.csv", "H100", subset_dtype,
     "flash", NULL, NULL, 0, 0, 0, 0, 0, NULL, 8, "IB", {{"", "3200 Gbps InfiniBand"}}, 15e6, 1, "fused", "foreach", 0, 0},
    /* NeMo 24.03-24.07 and Megatron-Bridge 25.11+ performance recipes
     * (NeMo docs performance_summary.md; Megatron-Bridge
     * performance-summary-archive.md; recipes in nemo/collections/llm/
     * recipes and scripts/performance): Megatron-Core with sequence
     * parallelism whenever tp > 1, the distributed optimizer (ZeRO-1) with
     * overlapped gradient reduce-scatter and parameter all-gather, TP
     * communication overlap, TransformerEngine fused (flash) attention, no
     * recompute unless stated, interleaved pipeline where vp is given;
     * Megatron-Core's fused cross-entropy (cross_entropy_loss_fusion, on in
     * the NeMo launcher's yamls and Megatron-Bridge's GPT provider:
     * loss=megatron_fused); Megatron's optimizer step (optimizer=megatron:
     * fused Adam, the gradient norm, the buffer zeroed).
     * Platform: DGX-H100 (the rows state 8 x 400 Gb/s NDR). */
    {"e2e-nemo-h100", "end-to-end/nvidia_nemo_megatron_bridge.csv", "H100", subset_nemo,
     "flash", "none", "DDP + distributed optimizer", 1, 1, 1, 0, 0, NULL, 8, "IB",
     {{"", "IB NDR 8x400Gb/s per node"}}, 15e6, 0, "megatron_fused", "megatron", 0, 1},
    /* The same recipes on Blackwell.  Network not stated: DGX-B200 and
     * GB200 NVL72 compute trays carry one ConnectX-7 400 Gb/s NIC per GPU,
     * GB300 one ConnectX-8 800 Gb/s (NVIDIA DGX B200 / GB200 NVL72 / GB300
     * NVL72 datasheets). */
    {"e2e-nemo-blackwell", "end-to-end/nvidia_nemo_megatron_bridge.csv", "B200|GB200|GB300", subset_blackwell,
     "flash", "none", "DDP + distributed optimizer", 1, 1, 1, 0, 0, NULL, 8, "IB",
     {{"GB300", "one 800 Gb/s InfiniBand NIC per GPU"}, {"", "one 400 Gb/s InfiniBand NIC per GPU"}}, 15e6, 0,
     "megatron_fused", "megatron", 0, 1},
    /* OneFlow DLPerf's Megatron-LM runs (commit 8aa4619, NGC 20.12; the
     * run script mutil_perf_pretrain_gpt_dp_mp_pp.sh): fp16,
     * --checkpoint-activations (full recompute), the fused-softmax but
     * unfused attention of 2021, Megatron's DDP reducing gradients after
     * the backward, 1F1B, Megatron-LM's fp16 step of that commit
     * (optimizer=megatron_legacy: its DDP's flattening copies, the fp16
     * gradients copied to fp32, unscale and inf check, gradient norm, fused
     * Adam, the weights copied back).  Platform as stated: DGX-1-like 8 x
     * V100 hybrid cube-mesh, one EDR HCA per node. */
    {"e2e-dlperf-v100", "end-to-end/oneflow_dlperf_megatron_v100.csv", NULL, NULL,
     "unfused", NULL, NULL, 0, 0, 0, 0, 0, NULL, 8, "IB", {{NULL, NULL}}, 15e6, 0, NULL, "megatron_legacy", 0, 1},
    /* BigScience BLOOM (tr11-176B-ml README and slurm script,
     * chronicles-prequel.md; bigscience@9e64edec): Megatron-DeepSpeed, bf16
     * with DeepSpeed's BF16_Optimizer run as ZeRO stage 0 ("bf16 must use
     * z0! it implements its own zero stage 1 equivalent": fp32 gradients
     * all-reduced, the fp32 master weights and Adam state sharded, the bf16
     * shards all-gathered; map_sharding), full recompute
     * (--checkpoint-activations), fused softmax (unfused attention),
     * DeepSpeed's pipeline engine (1F1B, gradients reduced after the flush),
     * and the stage split --pp-partition-method
     * 'type:transformer|embedding': the tied embedding counts as a layer on
     * the first and the last stage, (L + 2) / pp units per stage ("pp rank 0:
     * [embed | 5 transformer blocks] ... pp rank 11: [5 transformer blocks |
     * embed]"; the prequel's "Rebalancing layers" chose L so that L + 2
     * divides); DeepSpeed's BF16_Optimizer steps as Megatron's does
     * (optimizer=megatron: gradient norm, fused Adam on the fp32 shard, the
     * bf16 copy).  Every launch synchronous (launch_blocking=1): the
     * tr11 slurm script exports CUDA_LAUNCH_BLOCKING=1 ("do not remove or
     * the training will hang"), and BigScience ran the whole training so
     * with "zero slowdown" (stas00's ml-engineering, debug/pytorch.md):
     * Megatron-DeepSpeed's pipeline engine ran nothing beside anything else,
     * so the search rows, whether or not they set it, run the same.
     * Platform: Jean Zay gpu_p5, 8 x A100 80 GB per node, 4
     * Omni-Path 100 Gb/s links per node (as stated). */
    {"e2e-bloom", "end-to-end/bigscience_bloom.csv", NULL, NULL,
     "unfused", NULL, NULL, 0, 0, 0, 0, 0, "embedding_as_layer",
     8, "OPA", {{NULL, NULL}}, 15e6, 0, NULL, "megatron", 1, 0},
    /* IBM's fms-fsdp (PyTorch blogs 2024-03 "Maximizing training
     * throughput using PyTorch FSDP" and its torch.compile follow-up;
     * fms-fsdp README): PyTorch FSDP, HSDP for the 7B/13B models and FSDP
     * for 34B/70B (README), SDPA flash attention, bf16; its "selective"
     * checkpointing wraps every n-th block (fms-fsdp's
     * selective_checkpointing fraction), not Megatron's attention-only
     * recompute; torch.optim.AdamW as fms-fsdp's main_training creates it
     * (foreach, PyTorch's default: optimizer=foreach); the loss
     * torch.nn.CrossEntropyLoss on the bf16 logits FSDP's mixed precision
     * leaves (no autocast: loss=torch over 2-byte elements).  Platform: 8 GPUs
     * per node; the blog's A100 cluster has
     * 400 Gb/s per node (RoCE assumed: IBM's Vela is an Ethernet cluster). */
    {"e2e-ibm-fsdp", "end-to-end/ibm_pytorch_fsdp_llama2.csv", NULL, subset_gpu,
     "flash", NULL, NULL, 0, 0, 0, 1, 20e9, NULL, 8, "GbE", {{"", "400 Gbps inter-node"}}, 15e6, 0, "torch", "foreach", 0, 0},
    /* Consumer and workstation GPUs: Infinigence's Megatron-LM r0.10 on
     * RTX 4090, modded-nanogpt (PyTorch DDP) on 2 RTX 4090, TinyLlama's HF
     * Trainer tables.  PyTorch DDP (nanoGPT, HF Trainer via accelerate)
     * reduces buckets during the backward; Megatron-LM only with
     * --overlap-grad-reduce (off by default).  Nothing else is common to
     * these stacks: what a row does not state stays unstated. */
    {"e2e-commodity", "end-to-end/commodity_consumer_workstation_gpus.csv", NULL, subset_commodity,
     NULL, NULL, NULL, 0, -1, 0, 0, 0, NULL, 8, "GbE", {{NULL, NULL}}, 15e6, 0, NULL, NULL, 0, 0},
    /* MT-NLG 530B (Smith et al. 2022 Sec. 2.4) on Selene's DGX A100 (8 HDR
     * 200 Gb/s compute NICs per node, DGX A100 user guide) and OPT-175B's
     * throughput statement.  The attention of 2021 was unfused; Megatron-
     * DeepSpeed's optimizer step as Megatron's (optimizer=megatron). */
    {"e2e-large", "end-to-end/large_public_runs.csv", NULL, NULL,
     "unfused", NULL, NULL, 0, 0, 0, 0, 0, NULL, 8, "IB", {{"", "8 x 200 Gb/s HDR InfiniBand"}}, 15e6, 0, NULL, "megatron", 0, 1},
};
#define NFAMILIES ((int)(sizeof FAMILIES / sizeof FAMILIES[0]))

const e2e_family *e2e_family_find(const char *group)
{
    for (int i = 0; i < NFAMILIES; i++)
        if (!strcmp(FAMILIES[i].group, group))
            return &FAMILIES[i];
    return NULL;
}

const char *e2e_family_file(const e2e_family *f) { return f->file; }
double e2e_family_ci_budget(const e2e_family *f) { return f->ci_budget; }

static int member(const e2e_family *f, const row *r)
{
    if (!f->gpu_match)
        return 1;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", f->gpu_match);
    const char *gpu = S(r, C_GPU);
    char *save = NULL;
    for (char *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
        if (has(gpu, tok))
            return 1;
    return 0;
}

/* ---- hardware --------------------------------------------------------- */

/* Catalogue names by the text of gpu_model (first match wins). */
static const struct {
    const char *match, *name;
} GPUS[] = {
    {"GB300", "GB300"}, {"GB200", "GB200"}, {"B200", "B200"},
    {"H100", "H100-SXM"}, /* the rows' H100s are HGX/DGX boards (SXM5) */
    {"V100-SXM2-16GB", "V100-SXM2-16GB"},
    {"4090 48GB", "RTX4090-48GB"}, /* a modified board: not the catalogue's 24 GB card */
    {"4090", "RTX4090"}, {"3090", "RTX3090"}, {"A6000", "A6000"}, {"A40", "A40"},
};

const char *e2e_gpu_name(const char *gpu_model, int mem_gb, const char **why)
{
    *why = NULL;
    if (has(gpu_model, "A100") && !has(gpu_model, "A1000")) {
        int m40 = mem_gb == 40 || (!mem_gb && has(gpu_model, "40GB")),
            m80 = mem_gb == 80 || (!mem_gb && has(gpu_model, "80GB"));
        if (m40 == m80) {
            *why = "A100 memory (40 or 80 GB) not resolved";
            return NULL;
        }
        /* 8-GPU A100 servers in these rows are HGX/DGX boards (SXM4) */
        return m40 ? "A100-SXM-40GB" : "A100-SXM-80GB";
    }
    for (size_t i = 0; i < sizeof GPUS / sizeof GPUS[0]; i++)
        if (has(gpu_model, GPUS[i].match))
            return GPUS[i].name;
    *why = "GPU model not in the mapping";
    return NULL;
}

/* Link rates per NIC kind that the catalogue names (platforms/catalog/nics.json). */
static const struct {
    const char *kind;
    int gbps;
    const char *name;
} NIC_RATES[] = {
    {"IB", 100, "IB-EDR"},   {"IB", 200, "IB-HDR"},   {"IB", 400, "IB-NDR"},   {"IB", 800, "IB-XDR"},
    {"GbE", 10, "10GbE"},    {"GbE", 25, "25GbE"},    {"GbE", 100, "100GbE"},  {"GbE", 200, "200GbE"},
    {"GbE", 400, "400GbE"},  {"GbE", 800, "800GbE"},
    /* Intel Omni-Path 100: the catalogue has no Omni-Path entry; its 100 Gb/s
     * EDR InfiniBand entry has the same line rate */
    {"OPA", 100, "IB-EDR"},
};

static const char *nic_name(const char *kind, double gbps)
{
    for (size_t i = 0; i < sizeof NIC_RATES / sizeof NIC_RATES[0]; i++)
        if (!strcmp(NIC_RATES[i].kind, kind) && fabs(NIC_RATES[i].gbps - gbps) < 0.5)
            return NIC_RATES[i].name;
    return NULL;
}

/* s contains w as a whole word (case-insensitive). */
static int word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = s; p && *p; p++)
        if (!strncasecmp(p, w, n) && (p == s || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]))
            return 1;
    return 0;
}

/* The catalogue name of a NIC of that kind and rate, else "KIND-RATEG". */
static void nic_model(char *model, size_t n, const char *kind, double gbps)
{
    const char *nm = nic_name(kind, gbps);
    if (nm)
        snprintf(model, n, "%s", nm);
    else
        snprintf(model, n, "%s-%gG", kind, gbps);
}

/* The first number in s followed (after spaces) by a rate unit; returns Gb/s or 0. */
static double rate_in(const char *s, const char **after)
{
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > s && (isdigit((unsigned char)p[-1]) || p[-1] == '.')))
            continue;
        char *end;
        double v = strtod(p, &end);
        while (*end == ' ')
            end++;
        double scale = !strncasecmp(end, "Tb", 2) ? 1000 : !strncasecmp(end, "Gb", 2) ? 1 : 0;
        if (scale > 0) {
            if (after)
                *after = end;
            return v * scale;
        }
    }
    return 0;
}

int e2e_nics(const char *text, int gpus_per_node, const char *default_kind, int *count, char *model, size_t n,
             const char **why)
{
    const char *kind = has(text, "Omni-Path") || has(text, "OPA") ? "OPA"
                       : has(text, "InfiniBand") || has(text, "IB ") || !strncmp(text, "IB", 2) ? "IB"
                       : has(text, "RoCE") || has(text, "Ethernet") || has(text, "GbE") ? "GbE"
                                                                                         : default_kind;
    *why = NULL;
    double g = rate_in(text, NULL);
    /* "one 400 Gb/s NIC per GPU", "single 25 Gb/s NIC per node" */
    if (g > 0 && (word(text, "per GPU") || word(text, "one") || word(text, "single"))) {
        *count = word(text, "per GPU") ? gpus_per_node : 1;
        nic_model(model, n, kind, g);
        return 0;
    }
    /* "8x400Gb/s", "8 x 200 Gb/s": count x rate */
    for (const char *p = text; *p; p++) {
        char *end;
        if (!isdigit((unsigned char)*p) || (p > text && (isdigit((unsigned char)p[-1]) || p[-1] == '.')))
            continue;
        long c = strtol(p, &end, 10);
        while (*end == ' ')
            end++;
        double r = (*end == 'x' || *end == 'X') && c > 0 ? rate_in(end + 1, NULL) : 0;
        if (r > 0) {
            *count = (int)c;
            nic_model(model, n, kind, r);
            return 0;
        }
    }
    /* "4 links per node" of a one-rate kind (Omni-Path 100) */
    const char *lp = strstr(text, " links per node");
    if (lp && !strcmp(kind, "OPA")) {
        const char *q = lp;
        while (q > text && isdigit((unsigned char)q[-1]))
            q--;
        if (atoi(q) > 0) {
            *count = atoi(q);
            nic_model(model, n, "OPA", 100);
            return 0;
        }
    }
    if (g <= 0) {
        *why = "no link rate in the text";
        return -1;
    }
    /* a total per node: one NIC per GPU if the catalogue has that rate,
     * else as many NICs (dividing the GPUs) as give a catalogue rate */
    for (int c = gpus_per_node; c >= 1; c--) {
        if (gpus_per_node % c)
            continue;
        const char *nm = nic_name(kind, g / c);
        if (nm) {
            *count = c;
            snprintf(model, n, "%s", nm);
            return 0;
        }
    }
    *why = "the per-node rate splits into no catalogue NIC rate";
    return -1;
}

/* Appends to a fixed buffer. */
static void cat(char *buf, size_t n, const char *fmt, ...)
{
    size_t l = strlen(buf);
    if (l + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, n - l, fmt, ap);
    va_end(ap);
}

/* The DGX-1 V100 hybrid cube-mesh (DGX-1 with Tesla V100 System
 * Architecture whitepaper, Fig. 4), its eight pairs of two links as the
 * DLPerf servers' nvidia-smi topo -m shows them (NV2). */
static const char DGX1_PAIRS[] = "[[0,1],[0,2],[0,3,2],[0,4,2],[1,2,2],[1,3],[1,5,2],[2,3,2],[2,6],[3,7],[4,5],[4,6],"
                                 "[4,7,2],[5,6,2],[5,7],[6,7,2]]";

/* The node object of a cluster JSON for gpn GPUs of catalogue model gpu. */
static void node_json(char *b, size_t n, const char *gpu, int ngpus, int gpn, int nnics, const char *nic)
{
    int sxm = has(gpu, "SXM") || !strcmp(gpu, "B200") || has(gpu, "H100");
    int nvl72 = has(gpu, "GB200") || has(gpu, "GB300");
    int nsw = (sxm || nvl72) && gpn % 4 == 0 ? 4 : gpn > 4 && gpn % 2 == 0 ? 2 : 0;
    cat(b, n, "{\"gpu\": \"%s\", \"gpus_per_node\": %d, \"sockets\": %d", gpu, gpn, nsw >= 2 ? 2 : 1);
    if (nsw) {
        cat(b, n, ", \"switches\": [");
        for (int s = 0; s < nsw; s++) {
            cat(b, n, "%s{\"socket\": %d, \"gpus\": [", s ? ", " : "", s * 2 / nsw);
            for (int g = s * gpn / nsw; g < (s + 1) * gpn / nsw; g++)
                cat(b, n, "%s%d", g > s * gpn / nsw ? ", " : "", g);
            cat(b, n, "], \"uplink\": {\"width\": 16}}");
        }
        cat(b, n, "]");
    }
    if (has(gpu, "V100") && gpn == 8)
        cat(b, n, ", \"nvlink\": {\"pairs\": %s}", DGX1_PAIRS);
    else if (nvl72)
        cat(b, n, ", \"nvlink\": {\"nvswitch\": true, \"domain_gpus\": %d}", ngpus < 72 ? ngpus : 72);
    if (nnics == 1 || (nnics > 1 && !nsw)) {
        cat(b, n, ", \"nic\": \"%s\"", nic);
    } else if (nnics > 1) {
        cat(b, n, ", \"nics\": [");
        for (int j = 0; j < nnics; j++)
            cat(b, n, "%s{\"model\": \"%s\", \"switch\": %d}", j ? ", " : "", nic, j * nsw / nnics);
        cat(b, n, "]");
    }
    cat(b, n, "}");
}

static void map_cluster(const e2e_family *f, row *r)
{
    e2e_map *m = r->m;
    const char *why;
    const char *gpu = e2e_gpu_name(S(r, C_GPU), opt_int(r, C_MEM), &why);
    if (!gpu) {
        gap(m, why, "gpu_model \"%.60s\": %s", S(r, C_GPU), why);
        return;
    }
    int G = need(r, C_NGPUS);
    int gpn = opt_int(r, C_GPN);
    if (!gpn)
        gpn = G < f->gpus_per_node ? G : f->gpus_per_node;
    if (!G || !gpn)
        return;
    if (G % gpn) {
        gap(m, "GPUs not whole nodes", "%d GPUs are not whole nodes of %d", G, gpn);
        return;
    }
    int nodes = G / gpn, nnics = 0;
    char nic[32] = "";
    if (nodes > 1) {
        const char *text = S(r, C_INTER);
        for (int k = 0; !*text && k < 3 && f->net[k].text; k++)
            if (!*f->net[k].gpu || has(gpu, f->net[k].gpu))
                text = f->net[k].text;
        if (!*text) {
            gap(m, "inter_node_network not stated", "inter_node_network not stated for %d nodes", nodes);
            return;
        }
        if (e2e_nics(text, gpn, f->nic_kind, &nnics, nic, sizeof nic, &why) < 0) {
            /* a row that names the fabric but not its rate: the family's platform */
            const char *fam = NULL;
            for (int k = 0; !fam && k < 3 && f->net[k].text; k++)
                if (!*f->net[k].gpu || has(gpu, f->net[k].gpu))
                    fam = f->net[k].text;
            if (!fam || e2e_nics(fam, gpn, f->nic_kind, &nnics, nic, sizeof nic, &why) < 0) {
                gap(m, "inter_node_network not understood", "inter_node_network \"%.80s\": %s", text, why);
                return;
            }
        }
    }
    m->ngpus = G;
    snprintf(m->label, sizeof m->label, "%d x %s", G, gpu);
    snprintf(m->cluster, sizeof m->cluster, "{\"name\": \"%s\", \"nodes\": %d, \"node\": ", m->row, nodes);
    node_json(m->cluster, sizeof m->cluster, gpu, G, gpn, nnics, nic);
    cat(m->cluster, sizeof m->cluster, ", \"fabric\": {\"type\": \"switch\"}}");
}

/* ---- model ------------------------------------------------------------ */

static void map_model(row *r, int *params_ok)
{
    e2e_map *m = r->m;
    int L = need(r, C_LAYERS), h = need(r, C_HIDDEN), a = need(r, C_HEADS), ffn = need(r, C_FFN);
    int seq = need(r, C_SEQ), kv = opt_int(r, C_KV), vocab = opt_int(r, C_VOCAB);
    const arch *ar = arch_of(S(r, C_MODEL));
    if (!vocab && ar)
        vocab = ar->vocab;
    if (!vocab)
        gap(m, "vocab_size not stated", "vocab_size not stated");
    *params_ok = L && h && a && ffn && seq && vocab;
    if (!*params_ok)
        return;
    snprintf(m->model, sizeof m->model,
             "\"name\": \"%s\", \"layers\": %d, \"hidden\": %d, \"heads\": %d, \"ffn\": %d, \"seq\": %d, \"vocab\": %d",
             m->row, L, h, a, ffn, seq, vocab);
    if (kv && kv < a)
        MODEL("\"kv_heads\": %d", kv);
    const char *ft = S(r, C_FFN_TYPE);
    if (has(ft, "SwiGLU"))
        MODEL("\"ffn_type\": \"swiglu\"");
    else if (has(ft, "squared") || has(ft, "ReLU^2"))
        MODEL("\"ffn_type\": \"squared-relu\"");
    else if (has(ft, "ReLU"))
        MODEL("\"ffn_type\": \"relu\"");
    else if (has(ft, "GELU"))
        MODEL_OR_DROP("\"ffn_type\": \"gelu\"");
    else
        gap(m, "ffn_type not stated", "ffn_type \"%.40s\" not understood", ft);
    if (!ar) {
        gap(m, "architecture not known", "model \"%.60s\": norm, embeddings and biases not known", S(r, C_MODEL));
        return;
    }
    if (!strcmp(ar->norm, "rmsnorm"))
        MODEL("\"norm\": \"rmsnorm\"");
    else
        MODEL_OR_DROP("\"norm\": \"layernorm\"");
    const char *pos = S(r, C_POS);
    const char *p = has(pos, "RoPE") ? "rope" : has(pos, "ALiBi") ? "alibi" : has(pos, "learned") ? "learned" : NULL;
    if (!p && !*pos)
        p = ar->position;
    if (!p)
        gap(m, "position_embedding not stated", "position_embedding \"%.40s\" not stated", pos);
    else if (!strcmp(p, "learned"))
        MODEL_OR_DROP("\"position\": \"learned\"");
    else
        MODEL("\"position\": \"%s\"", p);
    if (ar->embed_norm)
        MODEL("\"embedding_norm\": true");
    if (ar->tied)
        MODEL_OR_DROP("\"tie_embeddings\": true");
    else
        MODEL("\"tie_embeddings\": false");
    if (ar->bias)
        MODEL_OR_DROP("\"bias\": true");
    else
        MODEL("\"bias\": false");
}

double e2e_params(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab, int seq, int gated,
                  int tied, int bias, int learned_pos)
{
    double h = hidden, kvd = (double)hidden / heads * (kv_heads ? kv_heads : heads);
    double attn = h * h + 2 * h * kvd + h * h + (bias ? h + 2 * kvd + h : 0);
    double mlp = (gated ? 3 : 2) * h * ffn + (bias ? ffn + h : 0);
    double norms = bias ? 4 * h : 2 * h;
    double emb = (tied ? 1 : 2) * (double)vocab * h + (learned_pos ? (double)seq * h : 0);
    return layers * (attn + mlp + norms) + emb + (bias ? 2 * h : h);
}

/* ---- measurement ------------------------------------------------------ */

double e2e_time_from_tokens(double tokens_per_s_per_gpu, int gb, int seq, int gpus)
{
    return (double)gb * seq / (tokens_per_s_per_gpu * gpus);
}

double e2e_time_from_mfu(double mfu_pct, double params, int layers, int hidden, int seq, int gb, int gpus,
                         double peak_tflops)
{
    double per_token = 6 * params + 12.0 * layers * hidden * seq;
    return (double)gb * seq * per_token / (gpus * peak_tflops * 1e12 * mfu_pct / 100);
}

/* The iteration time the row measured, by its own definition. */
static void map_measured(row *r, const char *gpu)
{
    e2e_map *m = r->m;
    double t, tok, mfu;
    int G = opt_int(r, C_NGPUS), gb = opt_int(r, C_GB), seq = opt_int(r, C_SEQ);
    const char *metric = S(r, C_METRIC);
    if (has(metric, "up to")) {
        gap(m, "measurement is a bound", "the measurement is an upper bound (\"%.60s\"), not one configuration's time",
            metric);
        return;
    }
    if (num(r, C_ITER, &t) > 0 && t > 0) {
        m->measured_s = t;
        snprintf(m->measured_how, sizeof m->measured_how, "iteration time as stated");
    } else if (num(r, C_TOKENS, &tok) > 0 && tok > 0 && G && gb && seq) {
        m->measured_s = e2e_time_from_tokens(tok, gb, seq, G);
        snprintf(m->measured_how, sizeof m->measured_how, "from tokens/s per GPU");
    } else if (num(r, C_MFU, &mfu) > 0 && mfu > 0 && G && gb && seq &&
               (has(metric, "PaLM") || has(metric, "6N + 12") || has(metric, "same method"))) {
        /* PaLM / nanoGPT MFU (the row's metric_definition) against the bf16
         * peak the source names: 312 TF/s A100, 989 TF/s H100 */
        double peak = has(gpu, "A100") ? 312 : has(gpu, "H100") ? 989 : 0;
        const arch *ar = arch_of(S(r, C_MODEL));
        int L = opt_int(r, C_LAYERS), h = opt_int(r, C_HIDDEN), a = opt_int(r, C_HEADS), f = opt_int(r, C_FFN);
        if (peak > 0 && ar && L && h && a && f) {
            int learned = ar->position && !strcmp(ar->position, "learned");
            double N = e2e_params(L, h, a, opt_int(r, C_KV), f, opt_int(r, C_VOCAB), seq,
                                  has(S(r, C_FFN_TYPE), "SwiGLU"), ar->tied, ar->bias, learned);
            m->measured_s = e2e_time_from_mfu(mfu, N, L, h, seq, gb, G, peak);
            snprintf(m->measured_how, sizeof m->measured_how, "from MFU (6N + 12Lhs per token, %g TF/s peak)", peak);
        }
    }
    int missing = !G || !gb || !seq; /* already a gap of its own */
    if (!(m->measured_s > 0) && !missing)
        gap(m, "no convertible measurement",
            "no iteration time, and the measurement (%s%s%s) has no conversion under the row's definition \"%.60s\"",
            *S(r, C_TFLOPS) ? "TFLOP/s " : "", S(r, C_TFLOPS), *S(r, C_MFU) ? " MFU" : "", metric);
}

/* ---- strategy --------------------------------------------------------- */

static const char *dtype_of(row *r)
{
    const char *p = S(r, C_PREC);
    if (has(p, "FP4")) { /* NVFP4 (Megatron-Bridge's fp4 recipes) */
        gap(r->m, "fp4 not modelled",
            "precision \"%.60s\": NVFP4 GEMMs are not modelled (no fp4 type in the cost model, and no FP4 GEMM "
            "measurement to calibrate one: platforms/README.md)",
            p);
        return NULL;
    }
    if (has(p, "fp8"))
        return "fp8"; /* FP8 (delayed / current scaling) and MXFP8 alike */
    int b = has(p, "bf16"), h = has(p, "fp16");
    if (b && h) {
        gap(r->m, "precision not resolved", "precision \"%.60s\": fp16 or bf16 not resolved", p);
        return NULL;
    }
    if (!b && !h)
        gap(r->m, "precision not stated", "precision \"%.60s\" not understood", p);
    return b ? "bf16" : h ? "fp16" : NULL;
}

/* Sharding from a zero_or_fsdp cell (the family's default when empty).
 * Returns 1 for FSDP-style sharding (its gradients are reduce-scattered
 * layer by layer: no DDP bucket overlap to add). */
static int map_sharding(const e2e_family *f, row *r, double params, int dp)
{
    e2e_map *m = r->m;
    const char *z = *S(r, C_ZERO) ? S(r, C_ZERO) : f->sharding;
    if (!z) {
        gap(m, "sharding not stated", "zero_or_fsdp not stated");
        return 0;
    }
    int per_size = f->hsdp_below > 0 && (has(z, "per size") || has(z, "not restated"));
    if (has(z, "BF16_Optimizer")) {
        /* DeepSpeed's BF16_Optimizer (run as ZeRO stage 0; DeepSpeed
         * runtime/bf16_optimizer.py and pipe/engine.py _bf16_reduce_grads
         * @56c52238): the fp32 gradient buffer all-reduced after the flush,
         * each rank updating its shard of the fp32 master weights and Adam
         * state, the bf16 shards all-gathered: ZeRO-1's memory with an
         * all-reduce */
        STRAT("zero=1");
        STRAT("grad_collective=allreduce");
        /* and every micro-batch's bf16 gradients cast and added into that
         * buffer (update_hp_grads after each backward) */
        STRAT("grad_accum=cast_add");
        return 0;
    }
    if (has(z, "SHARD_GRAD_OP")) {
        STRAT("fsdp=grad_op");
        return 1;
    } else if (per_size ? params < f->hsdp_below : has(z, "HSDP")) {
        STRAT("fsdp=hybrid");
        return 1;
    } else if (has(z, "Megatron-FSDP")) {
        /* Megatron-Core's own FSDP: sharded as FULL_SHARD, without PyTorch
         * FSDP's copies around the collectives */
        item(m->strat, &m->nstrat, 2, "zero=3", "fsdp=full");
        STRAT("fsdp_impl=megatron");
        return 1;
    } else if (per_size || has(z, "FULL_SHARD") || has(z, "PyTorch FSDP")) {
        /* FSDP FULL_SHARD: before the fsdp key, zero=3 is the same (one
         * unit per layer, gathered before forward and backward, resharded) */
        item(m->strat, &m->nstrat, 2, "zero=3", "fsdp=full");
        return 1;
    } else if (has(z, "ZeRO-1") || has(z, "distributed optimizer")) {
        STRAT("zero=1");
        if (f->mcore_overlaps && dp > 1) /* the all-gather of the updated shards, overlapped */
            STRAT("param_overlap=1");
    } else if (has(z, "stage not stated")) {
        gap(m, "ZeRO stage not stated", "zero_or_fsdp \"%.60s\"", z);
    } else if (!has(z, "none")) {
        gap(m, "sharding not understood", "zero_or_fsdp \"%.60s\" not understood", z);
    }
    return 0;
}

/* fms-fsdp's selective checkpointing wraps every n-th of the L blocks
 * (ac_handler.py: the blocks whose count is a multiple of n), which
 * recompute_layers expresses as L/n recomputed layers: the same work and the
 * same peak, since every layer's saved activations are alive together at
 * the end of the forward.  The blogs do not state n, but a row that gives
 * both FLOP utilisations does: the hardware count (PyTorch's FLOP counter)
 * adds the recomputed forwards to the model count's forward and backward,
 * HFU / MFU = 1 + f / 3 for a fraction f of the blocks (the embedding and
 * output layer, a percent of a 13B model, left out).  0 when the row cannot
 * tell. */
static int blocks_recomputed(row *r)
{
    double mfu, hfu;
    const char *h = S(r, C_MOTHER);
    while (h && *h && strncasecmp(h, "HFU", 3))
        h++;
    int L = opt_int(r, C_LAYERS);
    if (!L || !h || !*h || num(r, C_MFU, &mfu) <= 0 || !(mfu > 0) || sscanf(h + 3, " %lf", &hfu) != 1)
        return 0;
    /* either may be a percentage or a fraction */
    double f = 3 * ((hfu > 1.5 ? hfu / 100 : hfu) / (mfu > 1.5 ? mfu / 100 : mfu) - 1);
    if (!(f > 0.05 && f < 1.1))
        return 0;
    int n = (int)lround(1 / f);
    return L / (n < 1 ? 1 : n);
}

static void map_recompute(const e2e_family *f, row *r)
{
    const char *rc = S(r, C_RECOMP);
    if (!*rc && f->recompute)
        rc = f->recompute;
    int blocks = has(rc, "selective") && f->selective_is_blocks ? blocks_recomputed(r) : 0;
    if (blocks > 0) {
        item(r->m->strat, &r->m->nstrat, 0, NULL, "recompute=full");
        item(r->m->strat, &r->m->nstrat, 0, NULL, "recompute_layers=%d", blocks);
    } else if (has(rc, "selective") && f->selective_is_blocks)
        gap(r->m, "checkpointing every n-th block",
            "activation_recompute \"%.60s\": checkpointing every n-th block, n not stated and no HFU beside the MFU "
            "to infer it from",
            rc);
    else if (has(rc, "selective"))
        item(r->m->strat, &r->m->nstrat, 0, NULL, "recompute=selective");
    else if (!strncasecmp(rc, "full", 4))
        item(r->m->strat, &r->m->nstrat, 0, NULL, "recompute=full");
    else if (!strncasecmp(rc, "none", 4))
        item(r->m->strat, &r->m->nstrat, 0, NULL, "recompute=none");
    else
        gap(r->m, "activation_recompute not stated", "activation_recompute not stated");
}

static int framework_overlaps(const row *r)
{
    const char *fw = S(r, C_FRAMEWORK);
    return has(fw, "DDP") || has(fw, "HuggingFace") || has(fw, "accelerate");
}

static void map_strategy(const e2e_family *f, row *r, double params)
{
    e2e_map *m = r->m;
    int tp = opt_int(r, C_TP), pp = opt_int(r, C_PP), cp = opt_int(r, C_CP), vp = opt_int(r, C_VP);
    int dp = opt_int(r, C_DP), G = opt_int(r, C_NGPUS);
    tp = tp ? tp : 1;
    pp = pp ? pp : 1;
    cp = cp ? cp : 1;
    if (!*S(r, C_TP))
        gap(m, "tp not stated", "tp not stated");
    if (!dp && G && G % (tp * pp * cp) == 0)
        dp = G / (tp * pp * cp);
    int mb = need(r, C_MB), gb = need(r, C_GB);
    if (!mb || !gb || !dp)
        return;
    const char *dt = dtype_of(r);
    if (!dt)
        return;
    item(m->strat, &m->nstrat, 0, NULL, "tp=%d", tp);
    item(m->strat, &m->nstrat, 0, NULL, "pp=%d", pp);
    item(m->strat, &m->nstrat, 0, NULL, "dp=%d", dp);
    item(m->strat, &m->nstrat, 0, NULL, "mb=%d", mb);
    item(m->strat, &m->nstrat, 0, NULL, "gb=%d", gb);
    item(m->strat, &m->nstrat, 0, NULL, "dtype=%s", dt);
    /* the FP8 recipe the row names (Megatron-Bridge's tables: FP8-CS current
     * scaling, FP8-MX / MXFP8 block scaling); plain FP8 is delayed scaling,
     * Transformer Engine's default and NeMo 24.07's (fp8_amax_history_len) */
    const char *prec = S(r, C_PREC);
    if (!strcmp(dt, "fp8") && (has(prec, "FP8-CS") || has(prec, "current")))
        STRAT("fp8_recipe=tensorwise");
    else if (!strcmp(dt, "fp8") && (has(prec, "MXFP8") || has(prec, "FP8-MX")))
        STRAT("fp8_recipe=mxfp8");
    /* llm-foundry's benchmarks run FP8 with fc_type 'te' (scripts/train/
     * benchmarking/submit_benchmarks.py: "if gpu_type == 'h100_80gb' and
     * precision == 'fp8': parameters['model']['fc_type'] = 'te'"): te.Linear
     * in place of each nn.Linear, the norms and GELU PyTorch's, so every
     * linear casts its own input */
    if (!strcmp(dt, "fp8") && !strncmp(f->group, "e2e-mosaicml", 12))
        STRAT("fp8_casts=standalone");
    if (cp > 1)
        STRAT("cp=%d", cp);
    if (vp > 1) {
        STRAT("pipeline=interleaved");
        STRAT("vstages=%d", vp);
    }
    /* the stage split as the row states it (DeepSpeed's partition method
     * in other_optimizations), or as its recipe sets it: NeMo / Megatron-
     * Bridge's Llama 3.1 405B recipe (llama31_405b_pretrain_config) sets
     * account_for_embedding_in_pipeline_split and
     * account_for_loss_in_pipeline_split, so its 126 layers and the two
     * ends split as 128 units; else the family's */
    const char *split = has(S(r, C_OTHER), "type:transformer|embedding") ? "embedding_as_layer" : f->stage_split;
    if (!strncmp(f->group, "e2e-nemo", 8) && has(S(r, C_MODEL), "405B"))
        split = "embedding_as_layer";
    if (pp > 1 && split)
        STRAT("stage_split=%s", split);
    map_recompute(f, r);
    const char *spc = S(r, C_SP);
    int sp = has(spc, "yes") || has(spc, "true") ? 1 : has(spc, "no") ? 0 : f->sp;
    if (sp && tp > 1)
        STRAT("sp=1");
    if (f->mcore_overlaps && sp && tp > 1)
        STRAT("tp_overlap_comm=1");
    int fsdp = map_sharding(f, r, params, dp);
    /* torch.autocast over fp32 parameters, where a row says so and nothing
     * keeps 16-bit weights (FSDP's MixedPrecision gathers bf16 weights,
     * DeepSpeed holds them): each forward casts the weights, each backward
     * casts the gradients into fp32 .grad (workloads/README.md, autocast).
     * The nanoGPT speedrun rows (tyler-romero/nanogpt-speedrun
     * src/train_gpt2.py @b7bb93fd: an fp32 model, torch.compile, DDP,
     * torch.amp.autocast(bf16) around the forward) */
    if (has(prec, "autocast") && has(prec, "fp32 master") && !fsdp && !has(S(r, C_ZERO), "DeepSpeed") &&
        !has(S(r, C_ZERO), "ZeRO") && !has(S(r, C_ZERO), "FSDP"))
        STRAT("autocast=1");
    int ov = f->dp_overlap < 0 ? framework_overlaps(r) : f->dp_overlap;
    if (ov && dp > 1 && !fsdp)
        STRAT("dp_overlap=1");
    const char *fl = S(r, C_FLASH), *stack_attn = nemo_attention(f, r);
    /* the kernel the row names: MPT's attn_impl=triton (the 2022 Triton
     * kernel), FlashAttention-2 (itself, or PyTorch SDPA's), else the GPU's
     * best fused kernel (Transformer Engine / cuDNN on Hopper); a row that
     * names none takes its stack's (nemo_attention) */
    const char *attn = has(fl, "triton")                                                   ? "flash-triton"
                       : has(fl, "FlashAttention-2")                                       ? "flash2"
                       : has(fl, "yes") || has(fl, "fused attention") || has(fl, "flash") ? "flash"
                       : !strncasecmp(fl, "no", 2)                                        ? "unfused"
                       : stack_attn                                                       ? stack_attn
                                                                                          : f->attn;
    if (!attn)
        gap(m, "flash_attention not stated", "flash_attention not stated");
    else if (!strcmp(attn, "unfused"))
        STRAT_OR_DROP("attn=unfused"); /* what trainsim's attention kernel was before the key */
    else
        STRAT("attn=%s", attn);
    if (f->eager)
        STRAT("kernels=eager");
    /* the commodity stacks' own losses: TinyLlama's flash-attn cross-entropy
     * (the row's "fused cross-entropy", TINY_FUSED_CROSSENTROPY), nanoGPT's
     * F.cross_entropy compiled with the model (torch.compile: the logits
     * read for the log-sum-exp, read again for the gradient, which is
     * written in bf16; `fused` counts one read fewer); Megatron-LM r0.10
     * unfused (cross_entropy_loss_fusion is off by default) */
    int commodity = !strcmp(f->group, "e2e-commodity"), megatron_lm = commodity && has(S(r, C_FAMILY), "megatron");
    const char *loss = commodity && !megatron_lm ? "fused" : f->loss;
    if (loss)
        STRAT("loss=%s", loss);
    if (f->optimizer)
        STRAT("optimizer=%s", f->optimizer);
    if (f->launch_blocking)
        STRAT("launch_blocking=1");
    /* Megatron's pipeline exchanges: batch_isend_irecv, the requests waited,
     * then a device synchronisation (Megatron-LM's p2p_communication.py
     * before Megatron-Core; Megatron-Core's batch_p2p_sync, on by default
     * with batch_p2p_comm, which the interleaved schedule's default
     * overlap_p2p_comm turns off: megatron/core/model_parallel_config.py,
     * pipeline_parallel/p2p_communication.py, read) */
    if ((f->megatron_p2p || megatron_lm) && !f->launch_blocking && pp > 1 && vp <= 1)
        STRAT("p2p_sync=1");
    if (opt_int(r, C_EP) > 1)
        gap(m, "expert parallelism", "ep=%d: mixture of experts is not in the dense generator", opt_int(r, C_EP));
}

/* ---- a row ------------------------------------------------------------ */

int e2e_map_columns(const val_csv *csv, sim_err *err)
{
    for (int c = 0; c < C_NCOLS; c++)
        if (val_csv_col(csv, COLS[c], err) < 0)
            return -1;
    return 0;
}

int e2e_map_row(const e2e_family *f, const val_csv *csv, int i, e2e_map *out, sim_err *err)
{
    row r = {.csv = csv, .i = i, .m = out};
    for (int c = 0; c < C_NCOLS; c++)
        if ((r.col[c] = val_csv_col(csv, COLS[c], err)) < 0)
            return -1;
    if (!member(f, &r))
        return 0;
    memset(out, 0, sizeof *out);
    snprintf(out->row, sizeof out->row, "%s", S(&r, C_ID));
    if (f->subset)
        snprintf(out->subset, sizeof out->subset, "%s", f->subset(&r));
    map_cluster(f, &r);
    int params_ok;
    map_model(&r, &params_ok);
    const arch *ar = arch_of(S(&r, C_MODEL));
    double params = params_ok && ar ? e2e_params(opt_int(&r, C_LAYERS), opt_int(&r, C_HIDDEN), opt_int(&r, C_HEADS),
                                                 opt_int(&r, C_KV), opt_int(&r, C_FFN), opt_int(&r, C_VOCAB),
                                                 opt_int(&r, C_SEQ), has(S(&r, C_FFN_TYPE), "SwiGLU"), ar->tied,
                                                 ar->bias, 0)
                                    : 0;
    map_strategy(f, &r, params);
    const char *why;
    const char *gpu = e2e_gpu_name(S(&r, C_GPU), opt_int(&r, C_MEM), &why);
    map_measured(&r, gpu ? gpu : "");
    return 1;
}
