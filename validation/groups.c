/* groups.c — the registry of validation groups: one line per group.
 * A group lives in its own file (validation/g_*.c) and is declared in
 * val_groups.h; see validation/README.md for how to add one. */
#include <string.h>

#include "val_groups.h"

static const val_group GROUPS[] = {
    {"azure-a100-allreduce",
     "NCCL all-reduce on one 8x A100-SXM4-80GB NVSwitch node (Azure ND A100 v4), 1 KB-8 GB: time per size",
     "message bytes", val_group_azure_a100},
    {"azure-h100-allreduce",
     "NCCL NVLS all-reduce on one 8x H100-SXM NVSwitch node (Azure ND H100 v5), 1 KB-8 GB: time per size",
     "message bytes", val_group_azure_h100},
    {"galvatron-pcie",
     "Galvatron all-reduce coefficients (ms/MB) for every group key on 1x8 and 2x8 PCIe servers, groups concurrent",
     NULL, val_group_galvatron_pcie},
    {"aicb-a100",
     "collectives inside a Megatron MoE run on 8 A100 (aicb): median time per (type, group size, size bucket)",
     "message bytes", val_group_aicb_a100},
    {"kineto-gemm",
     "GEMM kernels of PyTorch-profiler traces (A100 40/80 GB, V100, H100, H200): median time per (GPU, shape, dtype)",
     "FLOPs", val_group_kineto_gemm},
    {"kineto-elementwise",
     "element-wise kernels of PyTorch-profiler traces (A100 40/80 GB, V100, H100, H200): median time + launch gap per "
     "(GPU, op, size)",
     "bytes", val_group_kineto_elementwise},
    {"kineto-nccl",
     "NCCL kernels of PyTorch-profiler traces: minimum time per (collective, bytes, group size)",
     "message bytes", val_group_kineto_nccl},
    {"h100-gemm",
     "cuBLASLt FP8 GEMMs on Azure ND H100 v5 / ND H200 v5 and stas00's H100 bf16/FP8 maxima: time per GEMM",
     "FLOPs", val_group_h100_gemm},
    {"v100-gemm", "DeepBench's fp16 tensor-core GEMMs on a DGX-1 V100 (predicted by the V100's prior curve): time per GEMM",
     "FLOPs", val_group_v100_gemm},
    {"hbm-stream", "BabelStream Copy/Mul/Add/Triad on Azure ND A100 v4, ND H100 v5, ND H200 v5: time per kernel",
     "bytes", val_group_hbm_stream},
    {"h100-micro",
     "this project's H100 SXM5 measurement: bf16/FP8 GEMMs, SDPA cuDNN and FlashAttention-2, element-wise kernels: time per kernel",
     "FLOPs, sequence or bytes", val_group_h100_micro},
    {"h200-micro",
     "this project's H200 measurement: bf16/FP8 GEMMs, SDPA cuDNN and FlashAttention-2, element-wise kernels: time per kernel",
     "FLOPs, sequence or bytes", val_group_h200_micro},
    {"oases-3090-blocks", "Oases RTX 3090 per-block profile: attention/MLP fwd/bwd kernels (no TP comm) and the 32-GPU world all-reduce", "message bytes", val_group_oases_blocks},
    /* end-to-end: one published training run per row, iteration time (g_e2e.c) */
    {"e2e-mosaicml-a100", "MosaicML llm-foundry MPT on A100 40/80 GB (PyTorch FSDP): iteration time per run", NULL,
     val_group_e2e_mosaicml_a100},
    {"e2e-mosaicml-h100", "MosaicML llm-foundry MPT on H100 (PyTorch FSDP, bf16 and fp8): iteration time per run", NULL,
     val_group_e2e_mosaicml_h100},
    {"e2e-nemo-h100", "NVIDIA NeMo / Megatron-Bridge recipes on DGX-H100 (fp8): iteration time per run", NULL,
     val_group_e2e_nemo_h100},
    {"e2e-nemo-blackwell", "NeMo / Megatron-Bridge recipes on DGX-B200, GB200 and GB300 NVL72: iteration time per run",
     NULL, val_group_e2e_nemo_blackwell},
    {"e2e-dlperf-v100", "OneFlow DLPerf Megatron-LM GPT on 1-4 x 8 V100 (TP/PP/DP ablations): iteration time per run",
     NULL, val_group_e2e_dlperf_v100},
    {"e2e-bloom", "BigScience BLOOM-176B and its layout variants on 384 A100 (Megatron-DeepSpeed): iteration time", NULL,
     val_group_e2e_bloom},
    {"e2e-ibm-fsdp", "IBM fms-fsdp Llama 2 7B-70B on 96-464 A100/H100 (PyTorch FSDP/HSDP): iteration time per run",
     NULL, val_group_e2e_ibm_fsdp},
    {"e2e-commodity", "RTX 4090 / 3090, RTX A6000, A40 runs (Megatron-LM, nanoGPT DDP, TinyLlama HF): iteration time",
     NULL, val_group_e2e_commodity},
    {"e2e-large", "MT-NLG 530B on 2,240-3,360 A100 and OPT-175B: iteration time", NULL, val_group_e2e_large},
    {"e2e-h100-steps",
     "this project's H100 SXM5: whole single-GPU GPT training steps (125M-2.7B and two wide GEMM-dense ones, bf16 autocast, PyTorch eager): "
     "median step time per model",
     NULL, val_group_e2e_h100_steps},
    {"e2e-h200-steps",
     "this project's H200: whole single-GPU GPT training steps (350M, 1.3B and the wide GEMM-dense h4096-l8, bf16 autocast, "
     "PyTorch eager): median step time per model",
     NULL, val_group_e2e_h200_steps},
};

const val_group *val_groups(int *n)
{
    *n = (int)(sizeof GROUPS / sizeof GROUPS[0]);
    return GROUPS;
}

const val_group *val_group_find(const char *name)
{
    int n;
    const val_group *g = val_groups(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(g[i].name, name))
            return &g[i];
    return NULL;
}
