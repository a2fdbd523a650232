/* fit_galvatron.c — Galvatron's PCIe servers (fit.h).
 *
 * Data: Galvatron-1's profiled all-reduce coefficients (validation/data/
 * profiles/galvatron_pcie_allreduce_coefficients.csv; papers.md Appendix B),
 * simulated as group galvatron-pcie does (g_galvatron.c) on platforms/
 * clusters/galvatron-rtxtitan-2x8.json with trial values of its device
 * numbers, simulator in the loop.  Fitted (log residuals, GSL):
 *   node.host_read_GBps        a GPU reading staged data (SHM, network)
 *   node.host_staging_GBps     a socket's DRAM for staged bytes
 *   node.switches[].p2p_GBps   P2P inside a PCIe switch, both directions
 *   node.nic_efficiency        the EDR NIC's share of line rate
 * on the even-indexed all-reduce keys of the table (13 of 25: each of the
 * four numbers limits at least one of them); the odd-indexed keys are
 * predicted by group galvatron-pcie.  The socket link is not fitted: the
 * only keys it limits, cross-socket pairs on one server (1x8 1_2_0) and the
 * same layout measured in the two-server run (2x8 2_2_0), differ by 38 %,
 * so it keeps the catalogue's UPI figure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "val.h"

#define GALV_CLUSTER "galvatron-rtxtitan-2x8"
#define NPAR 4

static const char *const FIELDS[NPAR] = {"host_read_GBps", "host_staging_GBps", "switches[].p2p_GBps",
                                         "nic_efficiency"};
/* the physical range of each: GB/s, and a share of line rate */
static const double LO[NPAR] = {0.5, 1, 0.5, 0.05}, HI[NPAR] = {100, 500, 100, 1};

typedef struct galv_data {
    val_galvatron_key *k;
    int nk, nfit;
    int fit[32];
    val_ctx ctx;
    sim_err *err;
} galv_data;

static void values_of(const double *x, double *v)
{
    for (int i = 0; i < NPAR; i++)
        v[i] = val_fit_bound(x[i], LO[i], HI[i]);
}

/* log(simulated / measured) of keys idx[0..n). */
static int resid_of(const double *x, const int *idx, int n, double *r, galv_data *d)
{
    double v[NPAR];
    values_of(x, v);
    sim_machine *m = val_fit_cluster(GALV_CLUSTER, FIELDS, v, NPAR, d->err);
    if (!m)
        return -1;
    for (int i = 0; i < n; i++) {
        double coe;
        if (val_galvatron_coe(&d->ctx, m, &d->k[idx[i]], &coe, d->err) < 0) {
            sim_machine_free(m);
            return -1;
        }
        r[i] = log(coe / d->k[idx[i]].coe);
    }
    sim_machine_free(m);
    return 0;
}

static int resid(const double *x, double *r, void *user)
{
    galv_data *d = user;
    return resid_of(x, d->fit, d->nfit, r, d);
}

int val_fit_galvatron(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    galv_data d;
    memset(&d, 0, sizeof d);
    d.err = err;
    sim_options_default(&d.ctx.opt);
    d.ctx.data_dir = data_dir;
    if ((d.nk = val_galvatron_keys(&d.ctx, &d.k, err)) < 0)
        return -1;
    for (int i = 0; i < d.nk && d.nfit < 32; i += 2)
        if (!d.k[i].p2p)
            d.fit[d.nfit++] = i;
    /* Several starts (fit.h): where host memory never binds, its capacity
     * has no gradient.  The stored values first; then memory at 15 and 40
     * GB/s. */
    double starts[3][NPAR] = {{0}, {5, 15, 8, 0.8}, {8, 40, 12, 0.9}}, rms, v[NPAR], x[NPAR];
    for (int i = 0; i < NPAR; i++)
        starts[0][i] = val_fit_stored(GALV_CLUSTER, FIELDS[i]);
    int rc = val_fit_starts(resid, &d, d.nfit, NPAR, LO, HI, &starts[0][0], 3, v, &rms, err);
    for (int i = 0; i < NPAR; i++)
        x[i] = val_fit_unbound(v[i], LO[i], HI[i]);
    if (rc == 0 && logf) {
        fprintf(logf, "%s from Galvatron's all-reduce keys (%d even-indexed fitted), rms log error %.3f\n", GALV_CLUSTER,
                d.nfit, rms);
        int all[64] = {0}, na = 0;
        double r[64];
        for (int i = 0; i < d.nk && na < 64; i++)
            if (!d.k[i].p2p)
                all[na++] = i;
        if (resid_of(x, all, na, r, &d) == 0)
            for (int i = 0; i < na; i++)
                fprintf(logf, "  %-22s %s measured %.4f simulated %.4f ms/MB %+6.1f %%\n", d.k[all[i]].name,
                        all[i] % 2 ? "predicted" : "fitted   ", d.k[all[i]].coe, d.k[all[i]].coe * exp(r[i]),
                        100 * (exp(r[i]) - 1));
    }
    free(d.k);
    if (rc)
        return sim_err_prefix(err, "%s: ", GALV_CLUSTER);
    static const char *const names[NPAR] = {GALV_CLUSTER " node.host_read_GBps", GALV_CLUSTER " node.host_staging_GBps",
                                            GALV_CLUSTER " switches[].p2p_GBps", GALV_CLUSTER " node.nic_efficiency"};
    int n = 0;
    for (int i = 0; i < NPAR && n < max; i++, n++)
        out[n] = (val_fitted){names[i], v[i], val_fit_stored(GALV_CLUSTER, FIELDS[i]), i == NPAR - 1 ? "" : "GB/s"};
    return n;
}
