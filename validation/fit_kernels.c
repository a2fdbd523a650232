/* fit_kernels.c — the RTX 3090's launch overhead, memory-bound and
 * attention efficiency curves (fit.h).
 *
 * No table in the data measures element-wise, attention or launch costs on
 * its own, so these are fitted on a subset of the Oases per-block profile
 * and predicted on the rest: the h = 1024 rows (all TP degrees and batches,
 * the four blocks) are fitted, the h = 3072 rows are left for group
 * oases-3090-blocks to predict.  The blocks are the kernels workloads/
 * layer.c emits (val_oases_blocks_build), priced with sim_cost_kernel and
 * the GEMM curve already fitted from the GEMM tables (fit_gemm.c), which the
 * fit leaves alone.  Five numbers: launch overhead per kernel, and for the
 * memory-bound and attention curves eff(w) = e_max / (1 + w_half / w),
 * stored in platforms/catalog/gpus.json sampled at integer log10 work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "sim/costmodel.h"
#include "val_csv.h"

#define KF_MAX 160

typedef struct kf_block {
    int npay;
    sim_payload pay[24];
    double measured;
} kf_block;

typedef struct kf_data {
    int n;
    kf_block b[KF_MAX];
    sim_gpu g;
} kf_data;

static double sat(double emax, double half, double w) { return emax / (1 + half / w); }

static void curves(const double *x, sim_gpu *g)
{
    g->launch_s = exp(x[0]) * 1e-6;
    double em = 1 / (1 + exp(-x[1])), mh = pow(10, x[2]), ea = 1 / (1 + exp(-x[3])), ah = pow(10, x[4]);
    g->mem_eff.n = 8;
    for (int i = 0; i < 8; i++) {
        g->mem_eff.log10_work[i] = 3 + i;
        g->mem_eff.efficiency[i] = sat(em, mh, pow(10, 3 + i));
    }
    g->attn_eff.n = 8;
    for (int i = 0; i < 8; i++) {
        g->attn_eff.log10_work[i] = 6 + i;
        g->attn_eff.efficiency[i] = sat(ea, ah, pow(10, 6 + i));
    }
}

static double block_time(const kf_block *b, const sim_gpu *g)
{
    double t = 0;
    for (int i = 0; i < b->npay; i++)
        t += sim_cost_kernel(g, &b->pay[i]);
    return t;
}

static int resid(const double *x, double *r, void *user)
{
    kf_data *d = user;
    sim_gpu g = d->g;
    curves(x, &g);
    for (int i = 0; i < d->n; i++)
        r[i] = log(block_time(&d->b[i], &g) / d->b[i].measured);
    return 0;
}

int val_fit_kernels_3090(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/profiles/oases_rtx3090_blocks_dev.csv", data_dir);
    val_csv *csv = val_csv_load(path, err);
    if (!csv)
        return -1;
    kf_data *d = calloc(1, sizeof *d);
    kf_data *pred = calloc(1, sizeof *pred);
    int rc = -1;
    const char *cols[7] = {"hidden", "tp", "batch_per_tp_group", "attn_fwd_ms", "attn_bwd_ms", "mlp_fwd_ms", "mlp_bwd_ms"};
    int ci[7];
    for (int j = 0; j < 7; j++)
        if ((ci[j] = val_csv_col(csv, cols[j], err)) < 0)
            goto done;
    if (plat_gpu_lookup_info("RTX3090", &d->g, NULL, err))
        goto done;
    pred->g = d->g;
    for (int i = 0; i < val_csv_rows(csv); i++) {
        double v[7];
        for (int j = 0; j < 7; j++)
            if (val_csv_num(csv, i, ci[j], &v[j], err) < 0)
                goto done;
        kf_data *into = v[0] == 1024 ? d : pred; /* h = 3072 is predicted, never fitted */
        sim_schedule *blk[4];
        if (val_oases_blocks_build((int)v[0], (int)v[1], (int)v[2], blk, err) < 0)
            goto done;
        for (int k = 0; k < 4; k++) {
            if (into->n < KF_MAX) {
                kf_block *b = &into->b[into->n++];
                b->measured = v[3 + k] * 1e-3;
                const sim_stream *S = &blk[k]->streams[0];
                for (uint32_t o = 0; o < S->nops && b->npay < 24; o++)
                    b->pay[b->npay++] = blk[k]->payloads[blk[k]->ops[S->ops[o]].payload];
            }
            sim_sched_free(blk[k]);
        }
    }
    double x[5] = {log(10), 1.5, 6, -1, 9}, rms;
    if (val_fit_lm(resid, d, d->n, 5, x, &rms, err)) {
        sim_err_prefix(err, "RTX3090 kernels: ");
        goto done;
    }
    sim_gpu fitted = d->g;
    curves(x, &fitted);
    if (logf) {
        double r[KF_MAX], mf = 0, mp = 0;
        resid(x, r, d);
        for (int i = 0; i < d->n; i++)
            mf += fabs(exp(r[i]) - 1);
        resid(x, r, pred);
        for (int i = 0; i < pred->n; i++)
            mp += fabs(exp(r[i]) - 1);
        fprintf(logf,
                "RTX3090 kernels from the Oases h = 1024 blocks (%d fitted, mean |error| %.1f %%; %d h = 3072 blocks "
                "predicted, mean |error| %.1f %%): launch %.2f us, memory e_max %.3f half 10^%.2f B, attention e_max "
                "%.3f half 10^%.2f FLOPs\n",
                d->n, 100 * mf / d->n, pred->n, 100 * mp / (pred->n ? pred->n : 1), exp(x[0]), 1 / (1 + exp(-x[1])),
                x[2], 1 / (1 + exp(-x[3])), x[4]);
    }
    static char names[17][48];
    int k = 0;
    if (k < max) {
        snprintf(names[k], sizeof names[k], "RTX3090 launch_us");
        out[k] = (val_fitted){names[k], fitted.launch_s * 1e6, d->g.launch_s * 1e6, "us"};
        k++;
    }
    for (int i = 0; i < 8 && k < max; i++, k++) {
        snprintf(names[k], sizeof names[k], "RTX3090 memory[%d]", 3 + i);
        out[k] = (val_fitted){names[k], fitted.mem_eff.efficiency[i], sim_curve_eval(&d->g.mem_eff, pow(10, 3 + i)), ""};
    }
    for (int i = 0; i < 8 && k < max; i++, k++) {
        snprintf(names[k], sizeof names[k], "RTX3090 attention[%d]", 6 + i);
        out[k] = (val_fitted){names[k], fitted.attn_eff.efficiency[i], sim_curve_eval(&d->g.attn_eff, pow(10, 6 + i)),
                              ""};
    }
    rc = k;
done:
    free(d);
    free(pred);
    val_csv_free(csv);
    return rc;
}
