/* model.h — model descriptions (workloads/models/<name>.json) and training
 * strategies with Megatron-like names. */
#ifndef WL_MODEL_H
#define WL_MODEL_H

#include <stdint.h>

#include "sim/error.h"
#include "sim/machine.h"
#include "workloads/pipeline.h"

/* A GPT-style decoder. */
typedef struct wl_model {
    char name[64];
    int layers;
    int hidden;
    int heads;
    int ffn;   /* FFN inner size; 4*hidden when absent */
    int seq;
    int vocab;
    int moe;   /* the file has a "moe" object: mixture-of-experts FFN layers (workloads/moe.h) */
} wl_model;

/* Loads a model by built-in name ("gpt-3072", see workloads/models/) or JSON path. */
int wl_model_load(const char *spec, wl_model *out, sim_err *err);
int wl_model_from_json(const char *text, const char *source, wl_model *out, sim_err *err);
/* Parameters of the whole model (embeddings included, tied output). */
double wl_model_params(const wl_model *m);

#define WL_OSDP_MAX 512 /* most layers an osdp= mask may describe */

/* What a layer keeps for backward and rebuilds (workloads/layer.c):
 * none; full = Megatron per-layer checkpointing, the forward (all-reduces
 * included) rerun before the layer's backward; selective = the attention core
 * only (Korthikanti et al. 2022 Sec. 5); oases = block-level recomputation
 * from the saved post-all-reduce tensors, without communication (papers.md
 * Sec. 1.3). */
typedef enum wl_recompute { WL_RECOMPUTE_NONE, WL_RECOMPUTE_FULL, WL_RECOMPUTE_SELECTIVE, WL_RECOMPUTE_OASES }
wl_recompute;

/* Tensor-parallel layer schedules (workloads/layer.c, papers.md Sec. 1.3,
 * 2.2, 4). */
typedef enum wl_tp_schedule {
    WL_TP_MEGATRON,          /* 1-D, synchronous forward all-reduces (default) */
    WL_TP_DEFAULT_CKPT,      /* Oases ladder 1: full recompute, no overlap */
    WL_TP_OPTIM_COMM_CKPT,   /* Oases ladder 2: recompute without communication */
    WL_TP_OVERLAP_CKPT,      /* Oases ladder 3: two sub-batches overlapped, full recompute */
    WL_TP_OASES,             /* Oases: overlap + recompute without communication */
    WL_TP_MERAK,             /* Merak sub-pipelined TMP, level tp_overlap */
    WL_TP_TESSERACT,         /* 2.5-D, tp = q*q*tess_depth */
    WL_TP_SCHEDULE_COUNT
} wl_tp_schedule;

/* PyTorch FSDP sharding strategies (torch.distributed.fsdp.ShardingStrategy;
 * workloads/gpt.c): FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD. */
typedef enum wl_fsdp { WL_FSDP_NONE, WL_FSDP_FULL, WL_FSDP_GRAD_OP, WL_FSDP_HYBRID, WL_FSDP_COUNT } wl_fsdp;

typedef struct wl_strategy {
    int tp, pp, dp;
    int mb;             /* micro-batch size (sequences) */
    int gb;             /* global batch size (sequences) */
    sim_dtype dtype;    /* fp32, tf32 (fp32 with TF32 matmuls), fp16, bf16 (mixed precision) */
    wl_recompute recompute;
    int64_t dp_bucket_bytes; /* data-parallel gradient bucket size in bytes; 0 = auto (the
                                framework's own rule, wl_gpt_bucket_bytes in gpt.h) */
    wl_pipeline pipeline;    /* pipeline schedule (pipeline.h) */
    int vstages;             /* model chunks per stage (interleaved), 1 otherwise */
    double ckpt_ratio;       /* Merak's activation_checkpoint_ratio r0 in [0, 1]; <0: 1 */
    int dp_overlap;          /* 1: gradient buckets all-reduced while backward runs (DDP) */
    int param_overlap;       /* 1: Megatron --overlap-param-gather (needs zero=1, dp_overlap=1) */
    sim_dtype grad_reduce;   /* dtype gradients are reduced (and, under Megatron, accumulated) in;
                                SIM_DTYPE_COUNT = auto (gpt.c: the framework's default) */
    int zero;                /* ZeRO stage 0..3 (3 = FSDP) */
    wl_fsdp fsdp;            /* PyTorch FSDP / HSDP sharding with mixed precision (instead of zero) */
    int osdp_split;             /* OSDP operator splitting: sharded linears gathered in this many slices (1 = whole units) */
    char osdp[WL_OSDP_MAX + 1]; /* OSDP per-layer sharding levels '0'..'3', one per layer; "" = off */
    /* tensor-parallel layer schedule (workloads/layer.c) */
    wl_tp_schedule schedule;
    int sp;              /* Megatron sequence parallelism (schedule=megatron only) */
    int tp_overlap_comm; /* Megatron-Core --tp-comm-overlap (Transformer Engine userbuffers; needs sp) */
    int tp_overlap;      /* Merak tp_overlapping_level 1..3 */
    int tess_depth;      /* Tesseract depth d; tp = q*q*d */
    int tp_cut_layers;   /* Oases cut-point: the first tp_cut_layers layers run at */
    int tp_cut_tp;       /* TP degree tp_cut_tp (0 = no cut), the rest at tp */
} wl_strategy;

/* Name of a TP schedule as written in strategies ("megatron", "oases"...). */
const char *wl_tp_schedule_name(wl_tp_schedule s);
const char *wl_recompute_name(wl_recompute r);
/* Checks the TP-schedule keys against each other (schedule, recompute, sp,
 * tp_overlap, tess_depth, tp_cut); model-independent. */
int wl_strategy_check_tp(const wl_strategy *s, sim_err *err);

/* Defaults: tp=pp=1, dp=0 ("auto": filled from the GPU count by
 * wl_gpt_check), mb=1, gb=0 ("auto": mb*dp), dtype tf32, recompute none,
 * buckets and gradient reduction dtype auto, pipeline 1f1b, vstages 1, end-of-step DP, no ZeRO, no
 * OSDP, schedule megatron, sp 0, tp_overlap 3, tess_depth 1, no cut. */
void wl_strategy_default(wl_strategy *s);
/* Parses "tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full" on top of *s.
 * Unknown keys and bad values are errors naming the key and what is expected. */
int wl_strategy_parse(const char *text, wl_strategy *s, sim_err *err);
/* Formats a strategy back into the same syntax. */
void wl_strategy_format(const wl_strategy *s, char *buf, int len);

#endif
