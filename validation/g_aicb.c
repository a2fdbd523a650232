/* g_aicb.c — group aicb-a100: the collectives aicb measured inside a
 * Megatron-style MoE training run on 8 A100 (NVSwitch), TP = 2, DP = 4
 * (data/collectives/aicb_A100_example.csv, one row per call: type, group,
 * group size, bytes, elapsed ms).
 *
 * Cases: one per (type, group, group size, size bucket), bucket = the power
 * of two at or below the message size (the run has a few distinct sizes, so
 * buckets hold one size each).  Compared: the *median* elapsed time of the
 * bucket's calls.  These are timings of calls inside a training step, not an
 * isolated benchmark: a call's time includes waiting for the slowest peer
 * (MoE all-to-all after uneven routing: up to 2.4 s against a 0.2 ms median)
 * and first-call set-up.  The median is the typical call and ignores those
 * tails; the mean would be dominated by them.  Rows not simulated: set-up
 * ("init.*" stages: communicator creation is timed with the first call),
 * zero-byte calls, "epoch_end" markers, and groups whose size is not recorded
 * ("None": the tp_group's rows take its size from the group's other rows,
 * 2; the expert-parallel group's size is never recorded, so its all-to-alls
 * are left out).  The CSV's busbw column uses an 8-rank factor even for
 * 4-rank groups; the case names carry the bus bandwidth recomputed from
 * bytes, median time and the group's own size.
 *
 * Simulated on azure-nd-a100-v4 (one node, 8 A100-SXM4 on NVSwitch), with
 * Megatron's rank layout: TP groups of consecutive ranks {0, 1}, DP groups
 * strided {0, 2, 4, 6}; each collective alone.  Subsets ">=1MB" and "<1MB"
 * as for the Azure curve. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "val_csv.h"
#include "val_groups.h"
#include "val_sim.h"

#define AICB_PLATFORM "azure-nd-a100-v4"

typedef struct row {
    int coll;
    int group;    /* 0 tp, 1 dp */
    int size;
    double bytes;
    double ms;
} row;

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->coll != y->coll)
        return x->coll - y->coll;
    if (x->group != y->group)
        return x->group - y->group;
    int bx = (int)floor(log2(x->bytes)), by = (int)floor(log2(y->bytes));
    if (bx != by)
        return bx - by;
    return x->ms < y->ms ? -1 : x->ms > y->ms;
}

static int coll_of(const char *t)
{
    static const struct {
        const char *name;
        int coll;
    } T[] = {{"CommType.all_reduce", SIM_COLL_ALLREDUCE},         {"CommType.all_gather", SIM_COLL_ALLGATHER},
             {"CommType.reduce_scatter", SIM_COLL_REDUCESCATTER}, {"CommType.all_to_all", SIM_COLL_ALLTOALL},
             {"CommType.broadcast", SIM_COLL_BROADCAST}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(t, T[i].name))
            return T[i].coll;
    return -1;
}

int val_group_aicb_a100(const val_ctx *ctx, val_set *out, sim_err *err)
{
    val_csv *csv = val_csv_load_data(ctx, "collectives/aicb_A100_example.csv", err);
    if (!csv)
        return -1;
    int rc = -1;
    sim_machine *m = NULL;
    row *rows = NULL;
    int ctype = val_csv_col(csv, "comm_type", err), cgroup = val_csv_col(csv, "comm_group", err);
    int csize = val_csv_col(csv, "comm_group_size", err), cbytes = val_csv_col(csv, "msg_size", err);
    int cstage = val_csv_col(csv, "stage", err), ct = val_csv_col(csv, "_elapsed_time", err);
    if (ctype < 0 || cgroup < 0 || csize < 0 || cbytes < 0 || cstage < 0 || ct < 0)
        goto done;
    int nr = val_csv_rows(csv), n = 0;
    rows = malloc((size_t)(nr ? nr : 1) * sizeof *rows);
    int known_size[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nr; i++) {
            const char *g = val_csv_str(csv, i, cgroup);
            int grp = !strcmp(g, "CommGroup.tp_group") ? 0 : !strcmp(g, "CommGroup.dp_group") ? 1 : -1;
            int coll = coll_of(val_csv_str(csv, i, ctype));
            if (grp < 0 || coll < 0 || !strncmp(val_csv_str(csv, i, cstage), "init", 4))
                continue;
            const char *sz = val_csv_str(csv, i, csize);
            double size = 0;
            if (strcmp(sz, "None") && val_csv_num(csv, i, csize, &size, err) < 0)
                goto done;
            if (pass == 0) { /* learn each group's size from the rows that record it */
                if (size > 0 && known_size[grp] && known_size[grp] != (int)size) {
                    sim_errf(err, "aicb_A100_example.csv: %s recorded with sizes %d and %g", g, known_size[grp], size);
                    goto done;
                }
                if (size > 0)
                    known_size[grp] = (int)size;
                continue;
            }
            double bytes, ms;
            if (val_csv_num(csv, i, cbytes, &bytes, err) < 0 || val_csv_num(csv, i, ct, &ms, err) < 0)
                goto done;
            if (bytes <= 0 || !(ms > 0))
                continue;
            rows[n++] = (row){coll, grp, size > 0 ? (int)size : known_size[grp], bytes, ms};
        }
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_row);
    m = plat_load(AICB_PLATFORM, err);
    if (!m)
        goto done;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && rows[j].coll == rows[i].coll && rows[j].group == rows[i].group &&
               floor(log2(rows[j].bytes)) == floor(log2(rows[i].bytes)))
            j++;
        const row *r = &rows[i];
        int cnt = j - i, gs = r->size;
        double med_ms = cnt % 2 ? rows[i + cnt / 2].ms : 0.5 * (rows[i + cnt / 2 - 1].ms + rows[i + cnt / 2].ms);
        /* the bucket's sizes: its median size is what is simulated (one size per bucket in this run) */
        double bytes = rows[i + cnt / 2].bytes;
        int ranks[8];
        if (gs < 2 || gs > 8 || (r->group == 0 && 8 % gs) || (r->group == 1 && gs * known_size[0] > 8)) {
            sim_errf(err, "aicb_A100_example.csv: a %s group of %d does not fit 8 GPUs with TP %d",
                     r->group ? "dp" : "tp", gs, known_size[0]);
            goto done;
        }
        for (int k = 0; k < gs; k++) /* Megatron: TP consecutive, DP strided by TP */
            ranks[k] = r->group == 0 ? k : k * (known_size[0] > 0 ? known_size[0] : 1);
        double sim;
        if (val_sim_collective(ctx, m, (sim_coll)r->coll, ranks, gs, (int64_t)bytes, &sim, err) < 0)
            goto done;
        double busbw = val_busbw_factor((sim_coll)r->coll, gs) * bytes / (med_ms * 1e-3) / 1e9;
        char name[128];
        snprintf(name, sizeof name, "%s %s%d %.0f B (x%d, busbw %.3g GB/s)", sim_coll_name(r->coll),
                 r->group ? "dp" : "tp", gs, bytes, cnt, busbw);
        if (val_add(out, bytes >= 1048576 ? ">=1MB" : "<1MB", name, med_ms * 1e-3, sim, "s", bytes, err) < 0)
            goto done;
        i = j;
    }
    rc = 0;
done:
    free(rows);
    sim_machine_free(m);
    val_csv_free(csv);
    return rc;
}
