/* val_groups.h — the run functions of the registered validation groups
 * (one per validation/g_*.c file; the table is in groups.c). */
#ifndef VAL_GROUPS_H
#define VAL_GROUPS_H

#include "val.h"

int val_group_azure_a100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_azure_h100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_galvatron_pcie(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_aicb_a100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_kineto_gemm(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_kineto_elementwise(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_kineto_nccl(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_h100_gemm(const val_ctx *ctx, val_set *out, sim_err *err);  /* g_micro.c */
int val_group_v100_gemm(const val_ctx *ctx, val_set *out, sim_err *err);  /* g_micro.c */
int val_group_hbm_stream(const val_ctx *ctx, val_set *out, sim_err *err); /* g_micro.c */
int val_group_h100_micro(const val_ctx *ctx, val_set *out, sim_err *err); /* g_micro.c */
int val_group_h200_micro(const val_ctx *ctx, val_set *out, sim_err *err); /* g_micro.c */
int val_group_oases_blocks(const val_ctx *ctx, val_set *out, sim_err *err); /* oases_blocks.c (fid) */
/* g_e2e.c: published whole-iteration measurements, one group per family */
int val_group_e2e_mosaicml_a100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_mosaicml_h100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_nemo_h100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_nemo_blackwell(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_dlperf_v100(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_bloom(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_ibm_fsdp(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_commodity(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_large(const val_ctx *ctx, val_set *out, sim_err *err);
/* g_steps.c: this project's own single-GPU H100 and H200 training steps, through the same pipeline */
int val_group_e2e_h100_steps(const val_ctx *ctx, val_set *out, sim_err *err);
int val_group_e2e_h200_steps(const val_ctx *ctx, val_set *out, sim_err *err);

#endif
