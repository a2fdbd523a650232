/* fit_overlap.c — the H100's overlap slowdowns (fit.h), measured on this
 * project's H100 SXM5 (h100-micro/overlap.csv, bench/gpu/measure.py).
 *
 * Model (sim/engine.c): while a collective of a GPU is in flight, its
 * kernels run overlap.compute times slower, and a collective that starts
 * while a kernel runs moves overlap.comm times the bytes.
 *
 * Data: three bf16 GEMMs (8192^3, 8192 x 6144 x 2048, 8192 x 2048 x 8192),
 * each run back to back on one stream beside a Triton copy kernel of a few
 * persistent CTAs on another (the stand-in for an NCCL kernel: NCCL runs a
 * CTA per channel, moving HBM), each timed alone and slowed by the other.
 * The rows with 8 to 16 CTAs (the channel counts NCCL opens on an 8-GPU
 * NVSwitch node; the copy then moves 0.5-1 TB/s of HBM, the traffic of a
 * ring at NVLink rate) give overlap.compute: the median of the GEMMs'
 * slowdowns (1.13-1.41x, from the SMs and HBM the copy holds).  No least
 * squares: the model's number is the measured ratio.
 * overlap.comm is not taken from these rows, only reported: the copy slows
 * 2.6-3.4x because cuBLAS's Hopper GEMMs hold every SM's registers (384
 * threads x 168 registers per CTA, one CTA per SM: the traces' nvjet
 * kernels), so the copy's CTAs wait for a GEMM's CTAs to retire.  That is a
 * wait for SMs, which the engine's comm factor (more bytes for the whole
 * collective) would also charge to a NIC-bound transfer between nodes, whose
 * CTAs, once resident, are not slowed by the GEMMs: with it the IBM FSDP rows
 * on 96 H100 (inter-node FSDP) go from -22 to +32 %, while the single-node
 * MosaicML ones improve.  It needs a model of the wait (a start delay), not a
 * byte factor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "val_csv.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int val_fit_overlap(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/h100-micro/overlap.csv", data_dir);
    val_csv *c = val_csv_load(path, err);
    if (!c)
        return -1;
    int cc = val_csv_col(c, "ctas", err), ga = val_csv_col(c, "gemm_us_alone", err);
    int gb = val_csv_col(c, "gemm_us_beside", err), ca = val_csv_col(c, "copy_us_alone", err);
    int cb = val_csv_col(c, "copy_us_beside", err);
    int rc = cc < 0 || ga < 0 || gb < 0 || ca < 0 || cb < 0 ? -1 : 0, n = 0;
    double comp[64], comm[64];
    for (int i = 0; rc == 0 && i < val_csv_rows(c) && n < 64; i++) {
        double ctas, g0, g1, c0, c1;
        if (val_csv_num(c, i, cc, &ctas, err) < 0 || val_csv_num(c, i, ga, &g0, err) < 0 ||
            val_csv_num(c, i, gb, &g1, err) < 0 || val_csv_num(c, i, ca, &c0, err) < 0 ||
            val_csv_num(c, i, cb, &c1, err) < 0)
            rc = -1;
        else if (ctas >= 8 && ctas <= 16) {
            if (!(g0 > 0 && c0 > 0))
                rc = sim_errf(err, "%s: row %d: times must be positive", path, i + 2);
            comp[n] = g1 / g0;
            comm[n++] = c1 / c0;
        }
    }
    val_csv_free(c);
    if (rc)
        return -1;
    if (n < 2)
        return sim_errf(err, "%s: fewer than 2 rows with 8-16 CTAs", path);
    double fc = median(comp, n), fm = median(comm, n);
    if (logf)
        fprintf(logf, "H100-SXM overlap: GEMMs %.3fx slower beside an 8-16 CTA copy kernel, the copy %.3fx slower "
                      "(medians of %d rows, %.2f-%.2f and %.2f-%.2f; the copy's slowdown is reported, not stored)\n",
                fc, fm, n, comp[0], comp[n - 1], comm[0], comm[n - 1]);
    static const char *const GPUS[] = {"H100-SXM", "H200"}; /* the same GH100 die and cuBLAS kernels */
    static char names[2][48];
    int k = 0;
    for (int g = 0; g < 2 && k < max; g++) {
        sim_gpu info;
        if (plat_gpu_lookup_info(GPUS[g], &info, NULL, err))
            return -1;
        snprintf(names[g], sizeof names[g], "%s overlap.compute", GPUS[g]);
        out[k++] = (val_fitted){names[g], fc, info.overlap_compute, ""};
    }
    return k;
}
