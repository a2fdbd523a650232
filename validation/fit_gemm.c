/* fit_gemm.c — GEMM efficiency curves and launch overhead (fit.h).
 *
 * Model (sim/costmodel.c): t = FLOPs / (peak x eff(F) x tile(m, n)) + launch,
 * eff(F) = e_max / (1 + (F_half / F)^g) over the GEMM's FLOPs F, tile() the
 * 128 x 128 tile quantisation.  Per GPU model the fit gives e_max, F_half, g
 * (and the launch overhead where the table reaches small sizes); the curve
 * is stored in platforms/catalog/gpus.json sampled at log10 F = 6 ... 13
 * (the catalogue's curve format, linear between points).
 *   RTX3090: validation/data/gemm/mli_micro_bench_3090ti_matmul.csv, square
 *     matmuls on an RTX 3090 Ti, TF32 and fp16, as fractions of the 3090 Ti's
 *     dense peaks (40 and 80 TFLOP/s, NVIDIA RTX 3090 Ti specifications:
 *     84 SMs at 1.86 GHz); the same fraction of peak is applied to the
 *     RTX 3090.  The n = 128 points are mostly the per-call overhead of the
 *     benchmark, so a launch overhead is fitted beside the curve as a
 *     nuisance parameter and not stored (the stored one comes from
 *     fit_kernels.c).
 *   A100-SXM-80GB: gemm/azure_nd_a100_v4_gemm_cublaslt_fp16.csv (cuBLASLt
 *     fp16 on ND A100 v4, incl. a skinny 802816 x 192 x 768 shape) and the
 *     A100 SXM row of gemm/stas00_mamf_bf16_fp8.csv (best shape), against
 *     312 TFLOP/s; launch stays at the default (no small sizes).
 * Nothing from the Oases profile is used: the per-block group predicts it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "sim/costmodel.h"
#include "val_csv.h"

typedef struct gemm_pt {
    double m, n, k, tflops, peak;
} gemm_pt;

typedef struct gemm_data {
    int n, fit_launch;
    gemm_pt p[32];
    double launch;
} gemm_data;

static double eff_of(const double *x, double F)
{
    /* g within (0.3, 2): four sizes cannot pin a steeper knee, and a steep one
     * would starve tiny GEMMs below the data */
    double emax = 1 / (1 + exp(-x[0])), fh = pow(10, x[1]), g = 0.3 + 1.7 / (1 + exp(-x[2]));
    return emax / (1 + pow(fh / F, g));
}

static int resid(const double *x, double *r, void *user)
{
    gemm_data *d = user;
    double launch = d->fit_launch ? exp(x[3]) * 1e-6 : d->launch;
    for (int i = 0; i < d->n; i++) {
        const gemm_pt *q = &d->p[i];
        double F = 2 * q->m * q->n * q->k;
        double t = F / (q->peak * eff_of(x, F) * sim_cost_tile_eff(q->m, q->n)) + launch;
        r[i] = log(t / (F / (q->tflops * 1e12)));
    }
    return 0;
}

static int load(const char *data_dir, const char *rel, val_csv **out, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    *out = val_csv_load(path, err);
    return *out ? 0 : -1;
}

static int fit_one(gemm_data *d, const char *model, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    double x[4] = {1.5, 9.5, 0.0, log(10)}, rms;
    if (val_fit_lm(resid, d, d->n, d->fit_launch ? 4 : 3, x, &rms, err))
        return sim_err_prefix(err, "%s GEMM efficiency: ", model);
    sim_gpu g;
    if (plat_gpu_lookup_info(model, &g, NULL, err))
        return -1;
    static char names[2][12][64];
    int slot = strcmp(model, "RTX3090") ? 1 : 0, k = 0;
    if (logf) {
        fprintf(logf, "%s GEMM: e_max %.3f, F_half 10^%.2f FLOPs, g %.2f, launch %.2f us; rms log error %.3f\n", model,
                1 / (1 + exp(-x[0])), x[1], 0.3 + 1.7 / (1 + exp(-x[2])), d->fit_launch ? exp(x[3]) : d->launch * 1e6, rms);
        double r[32];
        resid(x, r, d);
        for (int i = 0; i < d->n; i++)
            fprintf(logf, "  %6.0f x %6.0f x %6.0f  measured %7.1f TFLOP/s  model %7.1f  %+6.1f %%\n", d->p[i].m,
                    d->p[i].n, d->p[i].k, d->p[i].tflops, d->p[i].tflops / exp(r[i]), 100 * (1 / exp(r[i]) - 1));
    }
    for (int e = 6; e <= 13 && k < max; e++, k++) {
        snprintf(names[slot][k], sizeof names[slot][k], "%s gemm[%d]", model, e);
        out[k] = (val_fitted){names[slot][k], eff_of(x, pow(10, e)), sim_curve_eval(&g.gemm_eff, pow(10, e)), ""};
    }
    return k;
}

int val_fit_gemm(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    gemm_data d;
    val_csv *c;
    int total = 0;
    /* RTX 3090 from the 3090 Ti table */
    memset(&d, 0, sizeof d);
    d.fit_launch = 1;
    if (load(data_dir, "gemm/mli_micro_bench_3090ti_matmul.csv", &c, err))
        return -1;
    int cd = val_csv_col(c, "dtype", err), cn = val_csv_col(c, "n", err), ct = val_csv_col(c, "tflops_square_matmul", err);
    if (cd < 0 || cn < 0 || ct < 0) {
        val_csv_free(c);
        return -1;
    }
    for (int i = 0; i < val_csv_rows(c) && d.n < 32; i++) {
        double n, t;
        if (val_csv_num(c, i, cn, &n, err) < 0 || val_csv_num(c, i, ct, &t, err) < 0) {
            val_csv_free(c);
            return -1;
        }
        int fp16 = strstr(val_csv_str(c, i, cd), "16") != NULL;
        d.p[d.n++] = (gemm_pt){n, n, n, t, fp16 ? 80e12 : 40e12};
    }
    val_csv_free(c);
    int k = fit_one(&d, "RTX3090", out, max, logf, err);
    if (k < 0)
        return -1;
    total += k;
    /* A100 SXM from the Azure cuBLASLt table and stas00's MAMF row */
    memset(&d, 0, sizeof d);
    d.launch = 5e-6;
    if (load(data_dir, "gemm/azure_nd_a100_v4_gemm_cublaslt_fp16.csv", &c, err))
        return -1;
    int cm = val_csv_col(c, "m", err), cn2 = val_csv_col(c, "n", err), ck = val_csv_col(c, "k", err);
    int ct2 = val_csv_col(c, "tflops", err);
    if (cm < 0 || cn2 < 0 || ck < 0 || ct2 < 0) {
        val_csv_free(c);
        return -1;
    }
    for (int i = 0; i < val_csv_rows(c) && d.n < 31; i++) {
        double m, n, kk, t;
        if (val_csv_num(c, i, cm, &m, err) < 0 || val_csv_num(c, i, cn2, &n, err) < 0 ||
            val_csv_num(c, i, ck, &kk, err) < 0 || val_csv_num(c, i, ct2, &t, err) < 0) {
            val_csv_free(c);
            return -1;
        }
        d.p[d.n++] = (gemm_pt){m, n, kk, t, 312e12};
    }
    val_csv_free(c);
    if (load(data_dir, "gemm/stas00_mamf_bf16_fp8.csv", &c, err))
        return -1;
    int ca = val_csv_col(c, "accelerator", err), cdt = val_csv_col(c, "dtype", err);
    int cmf = val_csv_col(c, "mamf_tflops", err), cs = val_csv_col(c, "best_shape_MxNxK", err);
    if (ca < 0 || cdt < 0 || cmf < 0 || cs < 0) {
        val_csv_free(c);
        return -1;
    }
    for (int i = 0; i < val_csv_rows(c); i++) {
        double t, m, n, kk;
        if (strcmp(val_csv_str(c, i, ca), "NVIDIA A100 SXM") || strcmp(val_csv_str(c, i, cdt), "bf16"))
            continue;
        if (val_csv_num(c, i, cmf, &t, err) < 0 || sscanf(val_csv_str(c, i, cs), "%lfx%lfx%lf", &m, &n, &kk) != 3) {
            val_csv_free(c);
            return sim_errf(err, "stas00_mamf_bf16_fp8.csv: A100 row: expected a number and an MxNxK shape");
        }
        d.p[d.n++] = (gemm_pt){m, n, kk, t, 312e12};
    }
    val_csv_free(c);
    k = fit_one(&d, "A100-SXM-80GB", out + total, max - total, logf, err);
    if (k < 0)
        return -1;
    return total + k;
}
