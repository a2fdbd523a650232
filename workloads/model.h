/* model.h — model descriptions (workloads/models/<name>.json) and training
 * strategies with Megatron-like names. */
#ifndef WL_MODEL_H
#define WL_MODEL_H

#include <stdint.h>

#include "sim/error.h"
#include "sim/machine.h"
#include "workloads/pipeline.h"

struct cJSON;

/* The FFN's activation: gelu (GPT-2/3: fc1 -> GeLU -> fc2), swiglu (Llama:
 * gate and up projections, SiLU(gate)*up -> down; ffn is the intermediate
 * size, fc1 carries gate and up fused as Megatron-Core's linear_fc1 does),
 * squared-relu (Primer / Nemotron: relu(x)^2, shaped as gelu), relu (OPT,
 * shaped as gelu). */
typedef enum wl_ffn_type { WL_FFN_GELU, WL_FFN_SWIGLU, WL_FFN_SQRELU, WL_FFN_RELU, WL_FFN_COUNT } wl_ffn_type;
typedef enum wl_norm { WL_NORM_LAYERNORM, WL_NORM_RMSNORM, WL_NORM_COUNT } wl_norm;
/* learned: a position-embedding table of seq x hidden (GPT-2/3); rope:
 * rotary embeddings applied to Q and K in every layer (Llama); alibi: a
 * per-head linear bias added to the attention scores (BLOOM, MPT). */
typedef enum wl_position { WL_POS_LEARNED, WL_POS_ROPE, WL_POS_ALIBI, WL_POS_COUNT } wl_position;

/* The "moe" object of a model file (workloads/README.md, "Mixture of
 * experts"): every `every`-th layer from `first` has `experts` routed FFN
 * experts of inner size expert_ffn (fine-grained when smaller than ffn), each
 * token sent to top_k of them, and shared_ffn > 0 adds an always-on dense
 * shared expert beside them (DeepSeek-MoE).  capacity_factor > 0 drops the
 * tokens an expert receives beyond its GShard capacity; pad_to_capacity
 * also pads what it receives below it, so every expert computes and every
 * all-to-all moves the capacity whatever the routing. */
typedef struct wl_moe {
    int experts;            /* experts per MoE layer */
    int top_k;              /* experts per token */
    double capacity_factor; /* GShard capacity per (source GPU, expert); 0 = no limit (dropless) */
    int pad_to_capacity;    /* 1: every (source, expert) slot padded up to the capacity (Megatron-Core's
                               --moe-pad-expert-input-to-capacity, GShard's drop-and-pad) */
    int expert_ffn;         /* FFN inner size of one expert (default: the model's ffn) */
    int shared_ffn;         /* inner size of the shared expert(s), 0 = none */
    int every, first;       /* MoE layers: first, first+every, ... (default every 2 from layer 1) */
} wl_moe;

/* A decoder-only transformer.  Every architecture field's zero value is the
 * GPT-2/3 default (gelu, layernorm with bias, learned positions, tied
 * embeddings, biased linears, kv_heads = heads), so a struct filled field by
 * field, or read from a file without those keys, is the model it always
 * was. */
typedef struct wl_model {
    char name[64];
    int layers;
    int hidden;
    int heads;
    int ffn;   /* FFN inner size; 4*hidden when absent */
    int seq;
    int pos_table; /* rows of a learned position table; 0 = seq (wl_model_pos_rows): OPT's is seq + 2 */
    int vocab;
    int moe;   /* the file has a "moe" object: mixture-of-experts FFN layers, described by moe_cfg */
    wl_moe moe_cfg;
    /* architecture (workloads/README.md, "Architectures") */
    int kv_heads;          /* K/V heads (GQA, MQA = 1); 0 = heads (use wl_model_kv_heads) */
    wl_ffn_type ffn_type;
    wl_norm norm;
    int norm_no_bias;      /* a layernorm without its bias vector (MPT's no_bias) */
    wl_position position;
    int untied;            /* the output layer has its own weights (tie_embeddings: false) */
    int no_bias;           /* the linear layers have no biases (bias: false) */
    int embed_norm;        /* a norm after the word embeddings (BLOOM's word_embeddings_layernorm) */
    int qkv_bias;          /* with no_bias: the QKV projection keeps its bias (Qwen2) */
} wl_model;

/* Loads a model by built-in name ("gpt-3072", see workloads/models/) or JSON
 * path; a Hugging Face config.json (it has "architectures" or "model_type")
 * is translated (workloads/README.md, "Hugging Face configs"). */
int wl_model_load(const char *spec, wl_model *out, sim_err *err);
int wl_model_from_json(const char *text, const char *source, wl_model *out, sim_err *err);
/* Parses a model file's text: trainsim's own object as it is, a Hugging Face
 * config.json translated into one (workloads/hf_config.c).  Errors name the
 * source, line and column, or the field.  The caller cJSON_Deletes it. */
struct cJSON *wl_model_parse(const char *text, const char *source, sim_err *err);
/* The Hugging Face translation itself: NULL with err set for an unsupported
 * architecture or field. */
struct cJSON *wl_hf_translate(const struct cJSON *config, const char *source, sim_err *err);
/* Parameters of the whole model (embeddings, and the output layer when
 * untied, included; a "moe" model's experts are counted by moe.c). */
double wl_model_params(const wl_model *m);
/* A model's description for --json results: its dimensions, architecture
 * fields and parameter count (caller frees with cJSON_Delete). */
struct cJSON *wl_model_describe(const wl_model *m);

/* Shape helpers, the one place the architecture fields turn into sizes. */
/* Rows of a learned position table (pos_table, else seq); 0 for other positions. */
int64_t wl_model_pos_rows(const wl_model *m);
int wl_model_kv_heads(const wl_model *m);
/* Output width of the fused QKV projection: hidden + 2 * kv_heads * head_dim. */
int64_t wl_model_qkv_out(const wl_model *m);
/* Output width of fc1 for an FFN of inner size ffn (2 * ffn with swiglu). */
int64_t wl_model_fc1_out(const wl_model *m, int64_t ffn);
/* Parameters of one norm (hidden, or 2 * hidden with a layernorm bias). */
int64_t wl_model_norm_params(const wl_model *m);
/* A layer's parameters as tensor parallelism splits them: the column- and
 * row-parallel weights and the column-parallel biases (split), and what every
 * TP rank holds whole (the row-parallel bias and the block's norm). */
typedef struct wl_layer_param_split {
    int64_t attn_split, attn_rep; /* QKV and projection weights, QKV bias | projection bias, norm 1 */
    int64_t mlp_split, mlp_rep;   /* fc1 and fc2 weights, fc1 bias | fc2 bias, norm 2 */
} wl_layer_param_split;
wl_layer_param_split wl_model_layer_params(const wl_model *m);
/* Parameters of one FFN of inner size ffn (a dense FFN or one expert). */
double wl_model_ffn_params(const wl_model *m, int64_t ffn);
/* Is layer `layer` an MoE layer of m (0 for a dense model)? */
int wl_model_is_moe_layer(const wl_model *m, int layer);
/* Parameters of what every token of an MoE layer passes through besides its
 * routed experts: the router and the shared expert (0 for a dense model). */
/* Parameters of the model with its experts (active: the top_k experts a token
 * passes through instead of all of them); wl_model_params for a dense one. */
double wl_model_moe_params(const wl_model *m, int active);
double wl_model_moe_dense_params(const wl_model *m);
const char *wl_ffn_type_name(wl_ffn_type t);
const char *wl_norm_name(wl_norm n);
const char *wl_position_name(wl_position p);

#define WL_OSDP_MAX 512 /* most layers an osdp= mask may describe */
#define WL_PP_LAYERS_MAX 512 /* most virtual stages (pp·vstages) a pp_layers= list may give */

/* How the transformer layers are split over the pipeline's virtual stages
 * (pp·vstages of them; workloads/gpt.c, workloads/README.md "Stage
 * split"): uniform = L/(pp·vstages) each; embedding_as_layer = the input
 * embedding and the output layer each count as one layer, (L + 2)/(pp·vstages)
 * units per virtual stage, the first and the last one layer short
 * (Megatron-DeepSpeed's --pp-partition-method 'type:transformer|embedding',
 * Megatron-Core's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split); list = pp_layers= as given. */
typedef enum wl_stage_split { WL_SPLIT_UNIFORM, WL_SPLIT_EMBEDDING, WL_SPLIT_LIST, WL_SPLIT_COUNT } wl_stage_split;
const char *wl_stage_split_name(wl_stage_split k);

/* Which collective reduces the data-parallel gradients under ZeRO-1
 * (strategy key grad_collective): auto = reduce-scatter (Megatron's
 * distributed optimizer, DeepSpeed ZeRO-1/2), all-reduce without sharding;
 * allreduce under zero=1 = every rank gets the whole reduced gradient and
 * updates its shard (DeepSpeed's BF16_Optimizer behind ZeRO stage 0). */
typedef enum wl_grad_coll { WL_GRAD_AUTO, WL_GRAD_ALLREDUCE, WL_GRAD_REDUCESCATTER, WL_GRAD_COUNT } wl_grad_coll;

/* How each micro-batch's weight gradients reach the buffer they accumulate
 * in across micro-batches (strategy key grad_accum): fused = the
 * weight-gradient GEMMs add into it (Megatron's gradient-accumulation
 * fusion: no pass of their own); cast_add = after every micro-batch's
 * backward the 16-bit gradients are cast to fp32 and added into an fp32
 * buffer (DeepSpeed's BF16_Optimizer, update_hp_grads). */
typedef enum wl_grad_accum { WL_GACC_FUSED, WL_GACC_CAST_ADD, WL_GACC_COUNT } wl_grad_accum;

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
/* The implementation, for the copies it makes around its collectives
 * (gpt.c fsdp_grad_passes): PyTorch's FullyShardedDataParallel (FSDP1, flat
 * parameters), its fully_shard (FSDP2, per-parameter DTensors), or
 * Megatron-Core's Megatron-FSDP (buckets the GEMMs accumulate into). */
typedef enum wl_fsdp_impl { WL_FSDP_IMPL_FSDP1, WL_FSDP_IMPL_FSDP2, WL_FSDP_IMPL_MEGATRON, WL_FSDP_IMPL_COUNT } wl_fsdp_impl;

/* How dtype=fp8 scales its tensors (Megatron's --fp8-recipe; Transformer
 * Engine's recipes, layer_payloads.c wl_opset_fp8):
 *   delayed     DelayedScaling, the default: each tensor's scale from its
 *               amax history, so the norms and activations write FP8 directly;
 *   tensorwise  Float8CurrentScaling: the scale from the tensor itself, so
 *               those kernels write 16 bits and an amax, and a quantize pass
 *               follows; a standalone cast first reads its input for the amax;
 *   mxfp8       MXFP8BlockScaling (Blackwell): a scale per 32 elements,
 *               computed inside the cast, as delayed's traffic. */
typedef enum wl_fp8_recipe { WL_FP8_DELAYED, WL_FP8_TENSORWISE, WL_FP8_MXFP8, WL_FP8_RECIPE_COUNT } wl_fp8_recipe;
/* Attention kernels (strategy key attn): auto = what the training stacks
 * run (Megatron-Core with Transformer Engine, PyTorch SDPA): fused
 * FlashAttention kernels in fp16/bf16 (and fp8, whose attention stays bf16)
 * on the GPUs FlashAttention-2 supports (sm80+), the unfused core (two
 * batched GEMMs, softmax, dropout; s x s scores kept) otherwise; flash or
 * unfused force one.  flash is the GPU's best fused kernel (FA2 on Ampere
 * and Ada, FA3 / cuDNN on Hopper); flash2, flash1 and flash-triton name an
 * older kernel a stack may run instead (sim_attn_impl). */
typedef enum wl_attn {
    WL_ATTN_AUTO,
    WL_ATTN_FLASH,
    WL_ATTN_UNFUSED,
    WL_ATTN_FLASH2,
    WL_ATTN_FLASH1,
    WL_ATTN_TRITON,
    WL_ATTN_COUNT
} wl_attn;
/* The fused kernel a strategy's attn asks for (SIM_ATTN_BEST for auto). */
int wl_attn_impl(wl_attn a);

/* How the stack computes the cross-entropy loss on the logits (gpt.c, bytes
 * per logit of the rank's vocabulary shard, e = the logits' element size,
 * 16-bit logits unless the model runs in fp32):
 *   megatron  the default: Megatron's vocab-parallel cross-entropy
 *             unfused (Megatron-LM, Megatron-DeepSpeed, Megatron-Core
 *             without cross_entropy_loss_fusion): the logits cast to fp32
 *             (e + 4, cast_up), their max (4), the max subtracted in place
 *             (8), exp in place (8), the sum (4), the softmax kept for the
 *             backward divided in place (8); backward the gradient scaled
 *             in place (8) and autograd's cast back (4 + e): 52 for bf16;
 *   megatron_fused  Megatron-Core's native fused version
 *             (cross_entropy_loss_fusion, the NeMo and Megatron-Bridge
 *             recipes): the cast and the max in one kernel (e + 4), the
 *             subtraction, exp and sum in one (8), the division (8);
 *             backward the scaling and the cast in one (8 + e): 32 for bf16;
 *   torch     PyTorch's F.cross_entropy.  Under autocast (cross_entropy and
 *             log_softmax are on its fp32 list) or on logits.float(): the
 *             16-bit logits cast up (e + 4, cast_up), log_softmax forward
 *             (cunn_SoftMaxForward reads a row too long for shared memory
 *             three times: max, sum of exp, output; 12 + 4), the gradient's
 *             zero fill (4), log_softmax backward (the gradient read twice,
 *             the output once, the input gradient written: 16) and the cast
 *             back (4 + e): 48 for bf16.  Without autocast on 16-bit logits
 *             the same kernels read and write e-byte elements: 18 for bf16;
 *   fused     flash-attn's Triton cross-entropy (MPT's default loss_fn): one
 *             kernel reads the logits forward (e), one reads them and
 *             writes their gradient backward (2e): 6 for bf16. */
typedef enum wl_loss {
    WL_LOSS_MEGATRON,
    WL_LOSS_TORCH,
    WL_LOSS_FUSED,
    WL_LOSS_MEGATRON_FUSED,
    WL_LOSS_COUNT
} wl_loss;

/* The optimizer step's passes over the parameters it updates (gpt.c, bytes
 * per parameter; the Adam state is fp32):
 *   fused     the default: one fused AdamW kernel (torch.optim.AdamW(fused=
 *             True), apex / Transformer Engine FusedAdam) reads p, g, m, v
 *             and writes p, m, v: 28;
 *   foreach   PyTorch's multi-tensor AdamW (its default when fused is not
 *             asked for): a kernel per operation over every tensor, weight
 *             decay 8, m's lerp 12, v's mul 8 and addcmul 12, sqrt 8, bias
 *             correction 8, eps 8, the addcdiv update 16: 80;
 *   megatron  Megatron's mixed-precision optimizer step: the fused Adam (28),
 *             the gradient norm for clipping (one read of the gradients),
 *             the gradient buffer zeroed for the next step (one write), and
 *             under fp16 the loss-scale unscale with its inf check (a read
 *             and a write): 28 + 2 or 4 gradient sizes. */
typedef enum wl_optimizer {
    WL_OPT_FUSED,
    WL_OPT_FOREACH,
    WL_OPT_MEGATRON,
    WL_OPT_MEGATRON_LEGACY,
    WL_OPT_COUNT
} wl_optimizer;

/* How an MoE step balances the experts' load under skewed routing
 * (workloads/moe_balance.c): none (DeepSpeed-MoE), FasterMoE's dynamic
 * shadowing, Pro-Prophet's planned replication. */
typedef enum wl_balance { WL_BAL_NONE, WL_BAL_FASTERMOE, WL_BAL_PROPHET, WL_BAL_COUNT } wl_balance;
const char *wl_balance_name(int b);

#define WL_ROUTING_SPEC_MAX 95

typedef struct wl_strategy {
    int tp, pp, dp;
    int ep;             /* expert parallelism (Megatron's --expert-model-parallel-size) for MoE
                           models: 0 reads as 1 (wl_strategy_ep) */
    int cp;             /* context parallelism (Megatron-Core): each sequence split over cp ranks
                           (workloads/README.md "Context parallelism"); 0 reads as 1 (wl_strategy_cp) */
    int mb;             /* micro-batch size (sequences) */
    int gb;             /* global batch size (sequences) */
    sim_dtype dtype;    /* fp32, tf32 (fp32 with TF32 matmuls), fp16, bf16 (mixed precision) */
    wl_recompute recompute;
    int64_t dp_bucket_bytes; /* data-parallel gradient bucket size in bytes; 0 = auto (the
                                framework's own rule, wl_gpt_bucket_bytes in gpt.h) */
    wl_pipeline pipeline;    /* pipeline schedule (pipeline.h) */
    int vstages;             /* model chunks per stage (interleaved), 1 otherwise */
    double ckpt_ratio;       /* Merak's activation_checkpoint_ratio r0 in [0, 1]; <0: 1 */
    int recompute_layers;    /* Megatron's --recompute-method block --recompute-num-layers N: with
                                recompute=full only the first N layers of each model chunk of a
                                stage are recomputed; -1: every layer */
    int dp_overlap;          /* 1: gradient buckets all-reduced while backward runs (DDP) */
    int param_overlap;       /* 1: Megatron --overlap-param-gather (needs zero=1, dp_overlap=1) */
    sim_dtype grad_reduce;   /* dtype gradients are reduced (and, under Megatron, accumulated) in;
                                SIM_DTYPE_COUNT = auto (gpt.c: the framework's default) */
    int zero;                /* ZeRO stage 0..3 (3 = FSDP) */
    wl_fsdp fsdp;            /* PyTorch FSDP / HSDP sharding with mixed precision (instead of zero) */
    wl_fsdp_impl fsdp_impl;  /* whose FSDP: PyTorch's FSDP1 or FSDP2, or Megatron-Core's */
    wl_fp8_recipe fp8_recipe; /* dtype=fp8's scaling (fp8_recipe=) */
    int fp8_standalone;       /* fp8_casts=standalone: every linear casts its own input (te.Linear alone,
                                 no LayerNormLinear / LayerNormMLP writing FP8 for it) */
    int osdp_split;             /* OSDP operator splitting: sharded linears gathered in this many slices (1 = whole units) */
    char osdp[WL_OSDP_MAX + 1]; /* OSDP per-layer sharding levels '0'..'3', one per layer; "" = off */
    wl_grad_coll grad_coll;     /* grad_collective: the gradients' collective under zero=1 */
    wl_grad_accum grad_accum;   /* grad_accum: the pass, if any, that accumulates each micro-batch's gradients */
    /* pipeline stage split (wl_stage_split); with WL_SPLIT_LIST the layers of
     * each virtual stage, in Megatron's order (chunk 0 of stages 0..pp-1,
     * then chunk 1, ...) */
    wl_stage_split stage_split;
    int npp_layers;
    short pp_layers[WL_PP_LAYERS_MAX];
    /* tensor-parallel layer schedule (workloads/layer.c) */
    wl_tp_schedule schedule;
    int sp;              /* Megatron sequence parallelism (schedule=megatron only) */
    int tp_overlap_comm; /* Megatron-Core --tp-comm-overlap (Transformer Engine userbuffers; needs sp) */
    int tp_overlap;      /* Merak tp_overlapping_level 1..3 */
    int tess_depth;      /* Tesseract depth d; tp = q*q*d */
    int tp_cut_layers;   /* Oases cut-point: the first tp_cut_layers layers run at */
    int tp_cut_tp;       /* TP degree tp_cut_tp (0 = no cut), the rest at tp */
    wl_attn attn;        /* attention kernels asked for */
    int eager_kernels;   /* kernels=eager: PyTorch eager autograd, one kernel per element-wise op
                            (layer.c), instead of Megatron's / Transformer Engine's fused ones */
    int autocast;        /* autocast=1: torch.autocast over fp32 parameters (plain PyTorch AMP): the
                            weights cast to bf16/fp16 by every forward, the gradients cast back into
                            fp32 .grad; 0: the framework keeps a 16-bit copy (Megatron, DeepSpeed,
                            FSDP mixed precision) */
    int launch_blocking; /* launch_blocking=1: the job runs with CUDA_LAUNCH_BLOCKING=1, every operation
                            of a rank launched synchronously in order (sim_sched_chain_host) */
    int p2p_sync;        /* p2p_sync=1: a device synchronisation after every pipeline exchange (Megatron-LM
                            before Megatron-Core, sim_sched_chain_host) */
    wl_loss loss;        /* how the cross-entropy runs (loss=megatron|megatron_fused|torch|fused) */
    wl_optimizer optimizer; /* the optimizer step's passes (optimizer=fused|foreach|megatron) */
    int flash;           /* resolved by wl_gpt_resolve: 1 = fused FlashAttention kernels, 0 = unfused */
    /* an MoE step under skewed routing (workloads/moe_balance.c): trainsim moe's
     * routing spec (zipf[:s], dirichlet[:a], uniform: a uniform draw,
     * trace:FILE), "" for the even split every rank sends under uniform
     * routing; and how the step balances the experts' load */
    char routing[WL_ROUTING_SPEC_MAX + 1];
    wl_balance balance;
} wl_strategy;

/* The context-parallel degree of a strategy (1 for a struct with cp left 0). */
int wl_strategy_cp(const wl_strategy *s);
/* The one resolver of the batch defaults, for every generator: dp=auto
 * becomes GPUs / (tp·pp·cp) of mach (given dp must fill mach exactly), then
 * gb=auto becomes mb·dp.  mach may be NULL when dp is given.  0, or -1 with
 * err naming the degrees and the GPU count. */
int wl_strategy_resolve_world(wl_strategy *s, const sim_machine *mach, sim_err *err);

/* The expert-parallel degree of a strategy (1 for a struct with ep left 0). */
int wl_strategy_ep(const wl_strategy *s);

/* Name of a TP schedule as written in strategies ("megatron", "oases"...). */
const char *wl_tp_schedule_name(wl_tp_schedule s);
const char *wl_recompute_name(wl_recompute r);
/* Checks the TP-schedule keys against each other (schedule, recompute, sp,
 * tp_overlap, tess_depth, tp_cut); model-independent. */
int wl_strategy_check_tp(const wl_strategy *s, sim_err *err);

/* Defaults: tp=pp=cp=1, dp=0 ("auto": filled from the GPU count by
 * wl_gpt_check), mb=1, gb=0 ("auto": mb*dp), dtype tf32, recompute none,
 * buckets and gradient reduction dtype auto, pipeline 1f1b, vstages 1, end-of-step DP, no ZeRO, no
 * OSDP, schedule megatron, sp 0, tp_overlap 3, tess_depth 1, no cut. */
void wl_strategy_default(wl_strategy *s);
/* Parses "tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full" on top of *s.
 * Unknown keys and bad values are errors naming the key and what is expected. */
int wl_strategy_parse(const char *text, wl_strategy *s, sim_err *err);
/* Sets the routing= key (validated as trainsim moe's routing spec); -1 with
 * err's message unprefixed (the caller names the key or option). */
int wl_strategy_set_routing(wl_strategy *s, const char *spec, sim_err *err);
/* Formats a strategy back into the same syntax. */
void wl_strategy_format(const wl_strategy *s, char *buf, int len);

#endif
