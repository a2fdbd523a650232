/* g_azure.c — groups azure-a100-allreduce and azure-h100-allreduce: NCCL
 * all-reduce on one Azure node, 1 KB to 8 GB, NCCL 2.18.5:
 *   ND A100 v4: 8x A100-SXM4-80GB on NVSwitch, the ring / tree NCCL picks
 *     (data/collectives/azure_nd_a100_v4_allreduce_busbw.csv);
 *   ND H100 v5: 8x H100 80GB HBM3 on NVSwitch, NCCL's NVLS algorithm (NVLink
 *     SHARP: the switch reduces), which the data state they ran, so the
 *     simulation runs NVLS too (data/collectives/azure_nd_h100_v5_allreduce_busbw.csv).
 *
 * The data give bus bandwidth; nccl-tests defines busbw = algbw · 2(n−1)/n
 * with algbw = bytes / time, so the measured time is 2(n−1)/n · bytes /
 * busbw.  We compare *time*: the error in bandwidth is −e/(1+e) for a time
 * error e, the same to first order and of the same sign-flipped size.
 * Issue 3's targets apply per point: ≤ 10 % from 1 MB up (subset ">=1MB"),
 * ≤ 25 % below (subset "<1MB").  The smallest sizes carry their own
 * transcription error: 0.04 GB/s at 1 KB has one significant digit (±12 %). */
#include <stdlib.h>

#include "platforms/platform.h"
#include "val_csv.h"
#include "val_groups.h"
#include "val_sim.h"

/* One node's curve: every size of csv_path simulated on platform's ranks
 * 0-7 with algorithm algo. */
static int azure_curve(const val_ctx *ctx, const char *csv_path, const char *platform, sim_algo algo, val_set *out,
                       sim_err *err)
{
    val_csv *csv = val_csv_load_data(ctx, csv_path, err);
    if (!csv)
        return -1;
    int rc = -1;
    sim_machine *m = NULL;
    int clabel = val_csv_col(csv, "message_size_label", err);
    int cbytes = clabel < 0 ? -1 : val_csv_col(csv, "message_size_bytes_approx", err);
    int cbw = cbytes < 0 ? -1 : val_csv_col(csv, "busbw_GBps", err);
    if (cbw < 0)
        goto done;
    m = plat_load(platform, err);
    if (!m)
        goto done;
    int ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    if (m->ngpus < 8) {
        sim_errf(err, "platform %s: expected 8 GPUs, got %d", platform, m->ngpus);
        goto done;
    }
    for (int i = 0; i < val_csv_rows(csv); i++) {
        double bytes, busbw;
        if (val_csv_num(csv, i, cbytes, &bytes, err) < 0 || val_csv_num(csv, i, cbw, &busbw, err) < 0)
            goto done;
        double measured = val_busbw_factor(SIM_COLL_ALLREDUCE, 8) * bytes / (busbw * 1e9);
        double sim;
        if (val_sim_collective_algo(ctx, m, SIM_COLL_ALLREDUCE, algo, ranks, 8, (int64_t)bytes, &sim, err) < 0)
            goto done;
        char name[96];
        snprintf(name, sizeof name, "allreduce %s (%.0f B)", val_csv_str(csv, i, clabel), bytes);
        if (val_add(out, bytes >= 1048576 ? ">=1MB" : "<1MB", name, measured, sim, "s", bytes, err) < 0)
            goto done;
    }
    rc = 0;
done:
    sim_machine_free(m);
    val_csv_free(csv);
    return rc;
}

int val_group_azure_a100(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return azure_curve(ctx, "collectives/azure_nd_a100_v4_allreduce_busbw.csv", "azure-nd-a100-v4", SIM_ALGO_AUTO,
                       out, err);
}

int val_group_azure_h100(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return azure_curve(ctx, "collectives/azure_nd_h100_v5_allreduce_busbw.csv", "azure-nd-h100-v5", SIM_ALGO_NVLS,
                       out, err);
}
