/* oases_blocks.c — group oases-3090-blocks (fid, issue 3): every row of the
 * Oases RTX 3090 per-block profile (validation/data/profiles/
 * oases_rtx3090_blocks_dev.csv; papers.md §1.6 and Appendix A).
 *
 * What was timed (papers.md §1.6, Oases profiler.py): attention and MLP
 * blocks forward and backward at TP degree tp with input [1024, b, h] per
 * rank, fp32 with TF32 matmuls, heads = h/64, run with skip_comm=True: the
 * blocks' TP all-reduces are not in the times.  So each block is its
 * kernels, as the workloads generator emits them (workloads/layer_megatron.c, the
 * Megatron 1-D layer: attention = ln1, qkv, attention core, proj, post_attn
 * (bias, dropout, residual, LN2); MLP = fc1, gelu, fc2, post_mlp; backward
 * the matching dgrad/wgrad and element-wise backward kernels: the generator's
 * schedule of a one-layer model, layer 0 of rank 0), copied onto one RTX
 * 3090 of oases-3090 and simulated alone (subsets attn_fwd, attn_bwd,
 * mlp_fwd, mlp_bwd).
 *
 * world32_allreduce_ms is the profiler's `comm`: an all-reduce of the fp32
 * block output [1024, b, h] over the whole 32-GPU world (§1.6 quirk), so it
 * is simulated as that all-reduce on all 32 GPUs of oases-3090 (subset
 * world32).
 *
 * Nothing here is fitted: the GEMM curve comes from the GEMM tables
 * (validation/fit_gemm.c); the RTX 3090's launch overhead, memory-bound and
 * attention curves from the h = 1024 rows (validation/fit_kernels.c), so
 * the h = 3072 rows are predictions; the NIC from the h = 1024 world
 * all-reduces (validation/fit_oases.c). */
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "val_csv.h"
#include "val_groups.h"
#include "val_sim.h"
#include "fit.h"
#include "workloads/gpt.h"

#define OASES_PLATFORM "oases-3090"

static const char *const BLOCK_NAMES[4] = {"attn_fwd", "attn_bwd", "mlp_fwd", "mlp_bwd"};

/* Which block a kernel of the layer belongs to, by its payload name; -1 = none. */
static int block_of(const char *name)
{
    static const char *const sets[4][8] = {
        {"ln1", "qkv", "attn", "proj", "post_attn", NULL},
        {"post_attn_bwd", "proj_dgrad", "proj_wgrad", "attn_bwd", "qkv_dgrad", "qkv_wgrad", "ln1_bwd", NULL},
        {"fc1", "gelu", "fc2", "post_mlp", NULL},
        {"post_mlp_bwd", "fc2_dgrad", "fc2_wgrad", "gelu_bwd", "fc1_dgrad", "fc1_wgrad", NULL}};
    for (int k = 0; k < 4; k++)
        for (int i = 0; sets[k][i]; i++)
            if (!strcmp(name, sets[k][i]))
                return k;
    return -1;
}

/* The four blocks of one layer at (h, tp, b): one schedule each, its
 * kernels in order on rank 0 (fit.h).  The layer is the workload
 * generator's (wl_gpt_generate, as `trainsim run` builds it) for a model of
 * one layer on tp GPUs: rank 0's kernels of layer 0, by block. */
int val_oases_blocks_build(int h, int tp, int b, sim_schedule *blk[4], sim_err *err)
{
    wl_model md;
    memset(&md, 0, sizeof md);
    snprintf(md.name, sizeof md.name, "oases-h%d", h);
    md.layers = 1, md.hidden = h, md.heads = h / 64, md.ffn = 4 * h, md.seq = 1024, md.vocab = 50257;
    wl_strategy st;
    wl_strategy_default(&st);
    st.tp = tp, st.dp = 1, st.mb = b, st.gb = b, st.dtype = SIM_DTYPE_TF32, st.recompute = WL_RECOMPUTE_NONE;
    /* tp GPUs without a memory limit: the profile timed the blocks, not
     * whether a whole model fits */
    sim_machine *mach = sim_machine_new(tp, 1);
    if (!mach)
        return sim_errf(err, "out of memory");
    for (int r = 0; r < tp; r++)
        mach->node[r] = 0;
    mach->nnodes = 1;
    sim_schedule *whole = wl_gpt_generate(&md, &st, mach, err);
    sim_machine_free(mach);
    if (!whole)
        return -1;
    int nk[4] = {0};
    for (int k = 0; k < 4; k++) {
        blk[k] = sim_sched_new(1);
        sim_sched_stream(blk[k], 0, "compute");
    }
    for (uint32_t i = 0; i < whole->nops; i++) {
        const sim_op *o = &whole->ops[i];
        const sim_stream *S = &whole->streams[o->stream];
        const sim_payload *p = &whole->payloads[o->payload];
        if (S->rank != 0 || S->role != SIM_ROLE_COMPUTE || o->layer != 0 || p->kind != SIM_OP_COMPUTE ||
            p->name < 0)
            continue;
        int k = block_of(sim_sched_strname(whole, p->name));
        if (k < 0)
            continue;
        sim_sched_add(blk[k], 0, sim_sched_copy_payload(blk[k], whole, o->payload), -1, SIM_NO_TAGS, NULL, 0);
        nk[k]++;
    }
    sim_sched_free(whole);
    for (int k = 0; k < 4; k++)
        if (nk[k] == 0) {
            for (int j = 0; j < 4; j++)
                sim_sched_free(blk[j]);
            return sim_errf(err, "h=%d tp=%d b=%d: the layer has no %s kernels", h, tp, b, BLOCK_NAMES[k]);
        }
    return 0;
}

/* Simulated seconds of the four blocks of one layer at (h, tp, b). */
static int block_times(const val_ctx *ctx, const sim_machine *m, int h, int tp, int b, double out[4], sim_err *err)
{
    sim_schedule *blk[4];
    if (val_oases_blocks_build(h, tp, b, blk, err) < 0)
        return -1;
    int rc = 0;
    for (int k = 0; k < 4 && rc == 0; k++) {
        sim_result r;
        if (val_sim_run(ctx, blk[k], m, &r, err) < 0) {
            rc = -1;
            break;
        }
        out[k] = r.iteration_s;
        sim_result_free(&r);
    }
    for (int k = 0; k < 4; k++)
        sim_sched_free(blk[k]);
    return rc;
}

int val_group_oases_blocks(const val_ctx *ctx, val_set *out, sim_err *err)
{
    val_csv *csv = val_csv_load_data(ctx, "profiles/oases_rtx3090_blocks_dev.csv", err);
    if (!csv)
        return -1;
    int rc = -1;
    sim_machine *m = NULL;
    const char *cols[8] = {"hidden", "tp", "batch_per_tp_group", "attn_fwd_ms", "attn_bwd_ms", "mlp_fwd_ms",
                           "mlp_bwd_ms", "world32_allreduce_ms"};
    int ci[8];
    for (int j = 0; j < 8; j++)
        if ((ci[j] = val_csv_col(csv, cols[j], err)) < 0)
            goto done;
    m = plat_load(OASES_PLATFORM, err);
    if (!m)
        goto done;
    double ar_bytes[64], ar_secs[64];
    int nar = 0;
    for (int i = 0; i < val_csv_rows(csv); i++) {
        double v[8];
        for (int j = 0; j < 8; j++)
            if (val_csv_num(csv, i, ci[j], &v[j], err) < 0)
                goto done;
        int h = (int)v[0], tp = (int)v[1], b = (int)v[2];
        double t[4];
        if (block_times(ctx, m, h, tp, b, t, err) < 0) {
            sim_err_prefix(err, "oases-3090-blocks: ");
            goto done;
        }
        for (int k = 0; k < 4; k++) {
            char name[96];
            snprintf(name, sizeof name, "%s h=%d tp=%d b=%d", BLOCK_NAMES[k], h, tp, b);
            if (val_add(out, BLOCK_NAMES[k], name, v[3 + k] * 1e-3, t[k], "s", 0, err) < 0)
                goto done;
        }
        /* the world all-reduce of [1024, b, h] fp32: one simulation per size */
        double bytes = 4.0 * 1024 * b * h, secs = -1;
        for (int k = 0; k < nar; k++)
            if (ar_bytes[k] == bytes)
                secs = ar_secs[k];
        if (secs < 0) {
            int ranks[32];
            for (int r = 0; r < 32; r++)
                ranks[r] = r;
            if (m->ngpus < 32) {
                sim_errf(err, "%s has %d GPUs, the world all-reduce needs 32", OASES_PLATFORM, m->ngpus);
                goto done;
            }
            if (val_sim_collective(ctx, m, SIM_COLL_ALLREDUCE, ranks, 32, (int64_t)bytes, &secs, err) < 0)
                goto done;
            if (nar < 64)
                ar_bytes[nar] = bytes, ar_secs[nar++] = secs;
        }
        char name[96];
        snprintf(name, sizeof name, "world32 all-reduce h=%d tp=%d b=%d (%.0f MB)", h, tp, b, bytes / 1e6);
        if (val_add(out, "world32", name, v[7] * 1e-3, secs, "s", bytes, err) < 0)
            goto done;
    }
    rc = 0;
done:
    sim_machine_free(m);
    val_csv_free(csv);
    return rc;
}
