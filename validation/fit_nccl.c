/* fit_nccl.c — NCCL protocol numbers of the A100 SXM and NVLink SHARP
 * numbers of the H100 SXM (fit.h).
 *
 * A100 data: validation/data/collectives/azure_nd_a100_v4_allreduce_busbw.csv
 * (nccl-tests all_reduce_perf on one Azure ND A100 v4 node, 8 GPUs on
 * NVSwitch, 1 KB-8 GB; time = 2(n-1)/n x bytes / busbw).
 * Model: sim_coll_predict(), the formula the engine uses to choose and run a
 * protocol, with the platform's NVSwitch path (catalogue NVLink bandwidth per
 * GPU, two NVLink hops of the default latency): per protocol a base latency
 * and an efficiency are fitted (6 numbers); the per-step latencies stay at
 * NCCL's NVLink priors (one node gives one ring length, so step and base
 * latency cannot be told apart).  Fitted on the even-indexed sizes (1 KB,
 * 4 KB, ..., 4 GB); the odd-indexed ones are predicted and reported.
 *
 * H100 data: .../azure_nd_h100_v5_allreduce_busbw.csv (one Azure ND H100 v5
 * node, NCCL's NVLS algorithm at every size).  Model: sim_coll_predict()
 * with SIM_ALGO_NVLS, base + route latency + S (n + 1) / n / (NVLink x
 * efficiency) (collectives.c, nvls_time): the NVLS base latency and
 * efficiency (2 numbers), on the even-indexed sizes again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "platforms/platform.h"
#include "sim/engine.h"
#include "val_csv.h"

#define NCCL_CSV "collectives/azure_nd_a100_v4_allreduce_busbw.csv"
#define NCCL_N 8

typedef struct nccl_data {
    int n;
    double bytes[64], secs[64];
    int use[64];
    double bw, lat;
    sim_collparams cp;
    int nfit;                                      /* sizes used in the fit */
    sim_algo algo;                                 /* the algorithm the curve ran */
    void (*unpack)(const double *x, sim_collparams *cp); /* fit parameters -> numbers */
} nccl_data;

static void unpack(const double *x, sim_collparams *cp)
{
    for (int p = 0; p < SIM_PROTO_COUNT; p++) {
        cp->base_s[p] = exp(x[p]) * 1e-6;
        cp->eff[p] = 1 / (1 + exp(-x[3 + p]));
    }
}

static int resid(const double *x, double *r, void *user)
{
    nccl_data *d = user;
    sim_collparams cp = d->cp;
    d->unpack(x, &cp);
    int k = 0;
    for (int i = 0; i < d->n; i++)
        if (d->use[i])
            r[k++] = log(sim_coll_predict(&cp, SIM_COLL_ALLREDUCE, d->algo, NCCL_N, 1, d->bytes[i], d->bw, d->lat, NULL) /
                         d->secs[i]);
    return 0;
}

/* A one-node all-reduce curve (sizes, times; even-indexed ones fitted) and
 * its platform's GPU: collective numbers as stored, NVSwitch bandwidth and
 * route latency. */
static int load_curve(const char *data_dir, const char *csv_name, const char *platform, const char *gpu,
                      sim_algo algo, void (*unpack)(const double *, sim_collparams *), nccl_data *d, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, csv_name);
    val_csv *csv = val_csv_load(path, err);
    if (!csv)
        return -1;
    memset(d, 0, sizeof *d);
    int cb = val_csv_col(csv, "message_size_bytes_approx", err), cw = val_csv_col(csv, "busbw_GBps", err);
    if (cb < 0 || cw < 0) {
        val_csv_free(csv);
        return -1;
    }
    for (int i = 0; i < val_csv_rows(csv) && d->n < 64; i++) {
        double b, w;
        if (val_csv_num(csv, i, cb, &b, err) < 0 || val_csv_num(csv, i, cw, &w, err) < 0) {
            val_csv_free(csv);
            return -1;
        }
        d->bytes[d->n] = b;
        d->secs[d->n] = 2.0 * (NCCL_N - 1) / NCCL_N * b / (w * 1e9);
        d->use[d->n] = d->n % 2 == 0;
        d->n++;
    }
    val_csv_free(csv);
    sim_machine *m = plat_load(platform, err);
    if (!m)
        return -1;
    d->cp = m->gpus[0].coll;
    sim_machine_free(m);
    sim_gpu g;
    plat_gpu_info info;
    plat_defaults df;
    if (plat_gpu_lookup_info(gpu, &g, &info, err))
        return -1;
    plat_catalog_defaults(&df);
    d->bw = info.nvlink_GBps * 1e9;
    d->lat = 2 * df.nvlink_lat;
    d->algo = algo;
    d->unpack = unpack;
    for (int i = 0; i < d->n; i++)
        d->nfit += d->use[i];
    return 0;
}

int val_fit_nccl_a100(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    nccl_data d;
    if (load_curve(data_dir, NCCL_CSV, "azure-nd-a100-v4", "A100-SXM-80GB", SIM_ALGO_RING, unpack, &d, err))
        return -1;
    sim_collparams stored = d.cp;
    /* starts (log base µs, logit efficiency): LL quick to start and slow to
     * stream, Simple the opposite; the best of a few deterministic starts */
    static const double starts[3][6] = {{3.7, 3.7, 4.6, -2, 0, 1}, {3.0, 3.5, 4.6, -1.1, -0.5, 1.2},
                                        {3.5, 3.0, 5.0, -1.5, 1, 1.5}};
    int nfit = d.nfit;
    double x[6], rms = INFINITY;
    for (int s = 0; s < 3; s++) {
        double y[6], r;
        memcpy(y, starts[s], sizeof y);
        if (val_fit_lm(resid, &d, nfit, 6, y, &r, err))
            return sim_err_prefix(err, "A100 NCCL protocols: ");
        if (r < rms - 1e-9) {
            rms = r;
            memcpy(x, y, sizeof x);
        }
    }
    unpack(x, &d.cp);
    if (logf) {
        fprintf(logf, "A100-SXM-80GB NCCL protocols from %s (%d sizes fitted, %d predicted), rms log error %.3f\n",
                NCCL_CSV, nfit, d.n - nfit, rms);
        for (int i = 0; i < d.n; i++) {
            sim_proto p;
            double t = sim_coll_predict(&d.cp, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, NCCL_N, 1, d.bytes[i], d.bw, d.lat, &p);
            fprintf(logf, "  %12.0f B  measured %10.2f us  model %10.2f us  %+6.1f %%  %-6s %s\n", d.bytes[i],
                    d.secs[i] * 1e6, t * 1e6, 100 * (t - d.secs[i]) / d.secs[i], sim_proto_name(p),
                    d.use[i] ? "fitted" : "predicted");
        }
    }
    static char names[6][64];
    int k = 0;
    for (int p = 0; p < SIM_PROTO_COUNT && k + 2 <= max; p++) {
        snprintf(names[k], sizeof names[k], "A100-SXM-80GB nccl.base_us.%s", sim_proto_name((sim_proto)p));
        out[k] = (val_fitted){names[k], d.cp.base_s[p] * 1e6, stored.base_s[p] * 1e6, "us"};
        k++;
        snprintf(names[k], sizeof names[k], "A100-SXM-80GB nccl.efficiency.%s", sim_proto_name((sim_proto)p));
        out[k] = (val_fitted){names[k], d.cp.eff[p], stored.eff[p], ""};
        k++;
    }
    return k;
}

/* ---- H100 NVLS ---------------------------------------------------------- */

#define NVLS_CSV "collectives/azure_nd_h100_v5_allreduce_busbw.csv"

static void unpack_nvls(const double *x, sim_collparams *cp)
{
    cp->nvls_base_s = exp(x[0]) * 1e-6;
    cp->nvls_eff = 1 / (1 + exp(-x[1]));
}

int val_fit_nvls_h100(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    nccl_data d;
    if (load_curve(data_dir, NVLS_CSV, "azure-nd-h100-v5", "H100-SXM", SIM_ALGO_NVLS, unpack_nvls, &d, err))
        return -1;
    sim_collparams stored = d.cp;
    int nfit = d.nfit;
    double x[2] = {log(30.0), 0.5}, rms; /* 30 us, efficiency 0.62 */
    if (val_fit_lm(resid, &d, nfit, 2, x, &rms, err))
        return sim_err_prefix(err, "H100 NVLS: ");
    unpack_nvls(x, &d.cp);
    if (logf) {
        fprintf(logf, "H100-SXM NVLS all-reduce from %s (%d sizes fitted, %d predicted), rms log error %.3f\n",
                NVLS_CSV, nfit, d.n - nfit, rms);
        for (int i = 0; i < d.n; i++) {
            double t =
                sim_coll_predict(&d.cp, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, NCCL_N, 1, d.bytes[i], d.bw, d.lat, NULL);
            fprintf(logf, "  %12.0f B  measured %10.2f us  model %10.2f us  %+6.1f %%  %s\n", d.bytes[i],
                    d.secs[i] * 1e6, t * 1e6, 100 * (t - d.secs[i]) / d.secs[i], d.use[i] ? "fitted" : "predicted");
        }
    }
    if (max < 2)
        return 0;
    out[0] = (val_fitted){"H100-SXM nccl.nvls.base_us", d.cp.nvls_base_s * 1e6, stored.nvls_base_s * 1e6, "us"};
    out[1] = (val_fitted){"H100-SXM nccl.nvls.efficiency", d.cp.nvls_eff, stored.nvls_eff, ""};
    return 2;
}
