/* fit_oases.c — the Oases cluster's network and host staging (fit.h).
 *
 * Data: the world32_allreduce_ms column of validation/data/profiles/
 * oases_rtx3090_blocks_dev.csv (an fp32 all-reduce of [1024, b, h] over all
 * 32 RTX 3090 of the 8-node cluster; papers.md §1.6, Appendix A).  Its cost
 * per byte grows with size: ~11 GB/s of ring bus bandwidth up to ~25 MB,
 * 6.6 GB/s from ~100 MB.  Without GPUDirect RDMA every hop of the ring is
 * staged through host memory (three SHM hops and the network's send and
 * receive buffers per node), and what NCCL keeps in flight on a hop grows
 * with its chunk, S/32, up to its FIFOs: small collectives stay in the
 * cache in front of DRAM, large ones spill (sim/staging.c).  Fitted, with
 * the simulator in the loop (AUTO algorithm and protocol, as users get it):
 *   node.nic_efficiency    the share of the NIC's line rate NCCL reaches
 *                          (the paper does not name the NIC; 100 GbE assumed)
 *   node.host_staging_GBps DRAM's capacity for staged bytes
 *   node.host_cache_MB     the cache share that absorbs staged buffers
 * on the h = 1024 rows (6 sizes, 4-134 MB, mean per size); the h = 3072 rows
 * (13-403 MB) are predicted by group oases-3090-blocks/world32.  The same
 * values go into oases-3090-nvlink (the same servers with bridges). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "val_csv.h"
#include "val_sim.h"

#define NPAR 3

static const char *const FIELDS[NPAR] = {"nic_efficiency", "host_staging_GBps", "host_cache_MB"};
/* the physical range of each: a share of line rate, GB/s, MB */
static const double LO[NPAR] = {0.05, 1, 0.05}, HI[NPAR] = {1, 500, 512};

typedef struct oases_data {
    int n;
    double bytes[16], secs[16];
    int cnt[16];
    val_ctx ctx;
    sim_err *err;
} oases_data;

static void values_of(const double *x, double *v)
{
    for (int i = 0; i < NPAR; i++)
        v[i] = val_fit_bound(x[i], LO[i], HI[i]);
}

static int resid(const double *x, double *r, void *user)
{
    oases_data *d = user;
    double v[NPAR];
    values_of(x, v);
    sim_machine *m = val_fit_cluster("oases-3090", FIELDS, v, NPAR, d->err);
    if (!m)
        return -1;
    int ranks[32];
    for (int i = 0; i < 32; i++)
        ranks[i] = i;
    for (int i = 0; i < d->n; i++) {
        double s;
        if (val_sim_collective(&d->ctx, m, SIM_COLL_ALLREDUCE, ranks, 32, (int64_t)d->bytes[i], &s, d->err) < 0) {
            sim_machine_free(m);
            return -1;
        }
        r[i] = log(s / d->secs[i]);
    }
    sim_machine_free(m);
    return 0;
}

/* The h = 1024 rows' mean time per size. */
static int load_sizes(const char *data_dir, oases_data *d, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/profiles/oases_rtx3090_blocks_dev.csv", data_dir);
    val_csv *csv = val_csv_load(path, err);
    if (!csv)
        return -1;
    int ch = val_csv_col(csv, "hidden", err), cb = val_csv_col(csv, "batch_per_tp_group", err);
    int cw = val_csv_col(csv, "world32_allreduce_ms", err), rc = ch < 0 || cb < 0 || cw < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(csv); i++) {
        double h, b, ms;
        if (val_csv_num(csv, i, ch, &h, err) < 0 || val_csv_num(csv, i, cb, &b, err) < 0 ||
            val_csv_num(csv, i, cw, &ms, err) < 0) {
            rc = -1;
            break;
        }
        if (h != 1024)
            continue; /* h = 3072 is predicted, never fitted */
        double bytes = 4.0 * 1024 * b * h;
        int k = 0;
        while (k < d->n && d->bytes[k] != bytes)
            k++;
        if (k == d->n && d->n < 16)
            d->bytes[d->n++] = bytes;
        if (k < 16) {
            d->secs[k] += ms * 1e-3;
            d->cnt[k]++;
        }
    }
    val_csv_free(csv);
    for (int k = 0; k < d->n; k++)
        d->secs[k] /= d->cnt[k];
    return rc;
}

int val_fit_oases_nic(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    oases_data d;
    memset(&d, 0, sizeof d);
    d.err = err;
    sim_options_default(&d.ctx.opt);
    d.ctx.data_dir = data_dir;
    if (load_sizes(data_dir, &d, err) < 0)
        return -1;
    /* Several starts (fit.h): from where the cache never fills the least
     * squares settle on the NIC alone.  The stored values first, so a refit
     * of them is quick; then a 1 MB cache before DRAM at 20 GB/s and 8 MB
     * before 80 GB/s. */
    double starts[3][NPAR] = {{0}, {0.8, 20, 1}, {0.8, 80, 8}}, rms, v[NPAR], x[NPAR];
    for (int i = 0; i < NPAR; i++)
        starts[0][i] = val_fit_stored("oases-3090", FIELDS[i]);
    if (val_fit_starts(resid, &d, d.n, NPAR, LO, HI, &starts[0][0], 3, v, &rms, err))
        return sim_err_prefix(err, "oases-3090 network and host staging: ");
    for (int i = 0; i < NPAR; i++)
        x[i] = val_fit_unbound(v[i], LO[i], HI[i]);
    if (logf) {
        fprintf(logf,
                "oases-3090 NIC and host staging from the world all-reduce (h = 1024 rows, %d sizes), "
                "rms log error %.3f\n",
                d.n, rms);
        double r[16];
        if (resid(x, r, &d) == 0)
            for (int k = 0; k < d.n; k++)
                fprintf(logf, "  %10.0f B  measured %8.3f ms  simulated %8.3f ms  %+6.1f %%\n", d.bytes[k],
                        d.secs[k] * 1e3, d.secs[k] * exp(r[k]) * 1e3, 100 * (exp(r[k]) - 1));
    }
    static const char *const clusters[2] = {"oases-3090", "oases-3090-nvlink"};
    static const char *const units[NPAR] = {"", "GB/s", "MB"};
    static char names[2][NPAR][64];
    int n = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < NPAR && n < max; i++, n++) {
            snprintf(names[c][i], sizeof names[c][i], "%s node.%s", clusters[c], FIELDS[i]);
            out[n] = (val_fitted){names[c][i], v[i], val_fit_stored(clusters[c], FIELDS[i]), units[i]};
        }
    return n;
}
