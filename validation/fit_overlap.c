/* fit_overlap.c — the overlap slowdowns of the cards this project measured
 * (fit.h, val_micro_cards): each from its own <card>/overlap.csv and
 * overlap_priority.csv (bench/gpu/measure.py; h100-micro/ on one H100
 * SXM5, h200-micro/ on one H200).  The ranges below are the H100's.
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
 * overlap.comm: the same GEMMs and copy with the copy launched first
 * (<card>/overlap_priority.csv, order copy_first, either stream
 * priority), so its CTAs are resident before the GEMMs take the SMs: the
 * median slowdown of the copy, 1.18-1.25x.  Launched after the GEMMs, the
 * copy slows 2.5-3.4x whatever its stream's priority (overlap.csv and the
 * gemms_first rows), because cuBLAS's Hopper GEMMs hold every SM's
 * registers (384 threads x 168 registers per CTA, one CTA per SM: the
 * traces' nvjet kernels) and the copy's CTAs wait 1.2-2.5 ms for SMs: a
 * start delay, not a rate.  The engine's comm factor multiplies a whole
 * collective's bytes, so the delay is not charged (as a factor it would
 * slow NIC-bound transfers between nodes too: IBM FSDP on 96 H100 went from
 * -22 to +32 %); it is reported here, with its rows. */
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

/* The median of after / before over rows of `path` whose ctas column is in
 * [8, 16] and whose column `col_only` (if any) equals `only`. */
static int ratio_median(const char *path, const char *col_only, const char *only, const char *before,
                        const char *after, double *med, int *n, double *lo, double *hi, sim_err *err)
{
    val_csv *c = val_csv_load(path, err);
    if (!c)
        return -1;
    int cc = val_csv_col(c, "ctas", err), cb = val_csv_col(c, before, err), ca = val_csv_col(c, after, err);
    int co = col_only ? val_csv_col(c, col_only, err) : -2;
    int rc = cc < 0 || cb < 0 || ca < 0 || co == -1 ? -1 : 0;
    double v[64];
    *n = 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c) && *n < 64; i++) {
        double ctas, b, a;
        if (col_only && strcmp(val_csv_str(c, i, co), only))
            continue;
        if (val_csv_num(c, i, cc, &ctas, err) < 0 || val_csv_num(c, i, cb, &b, err) < 0 ||
            val_csv_num(c, i, ca, &a, err) < 0)
            rc = -1;
        else if (ctas >= 8 && ctas <= 16) {
            if (!(b > 0 && a > 0))
                rc = sim_errf(err, "%s: row %d: times must be positive", path, i + 2);
            v[(*n)++] = a / b;
        }
    }
    val_csv_free(c);
    if (rc)
        return -1;
    if (*n < 2)
        return sim_errf(err, "%s: fewer than 2 rows with 8-16 CTAs", path);
    *med = median(v, *n);
    *lo = v[0];
    *hi = v[*n - 1];
    return 0;
}

static int fit_card(const char *data_dir, const val_micro_card *card, int slot, val_fitted *out, int max, FILE *logf,
                    sim_err *err)
{
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/%s/overlap.csv", data_dir, card->dir);
    snprintf(p2, sizeof p2, "%s/%s/overlap_priority.csv", data_dir, card->dir);
    double fc, fm, fd, lo[3], hi[3];
    int n[3];
    if (ratio_median(p1, NULL, NULL, "gemm_us_alone", "gemm_us_beside", &fc, &n[0], &lo[0], &hi[0], err) ||
        ratio_median(p2, "order", "copy_first", "copy_us_alone", "copy_us_beside", &fm, &n[1], &lo[1], &hi[1], err) ||
        ratio_median(p2, "order", "gemms_first", "copy_us_alone", "copy_us_beside", &fd, &n[2], &lo[2], &hi[2], err))
        return -1;
    if (logf)
        fprintf(logf, "%s overlap: GEMMs %.3fx slower beside an 8-16 CTA copy kernel (%d rows, %.2f-%.2f); "
                      "the copy %.3fx slower launched first (%d rows, %.2f-%.2f), %.3fx launched after the GEMMs "
                      "(%d rows, %.2f-%.2f: a wait for SMs, reported, not stored)\n",
                card->model, fc, n[0], lo[0], hi[0], fm, n[1], lo[1], hi[1], fd, n[2], lo[2], hi[2]);
    static char names[8][2][48];
    sim_gpu info;
    if (max < 2)
        return 0;
    if (plat_gpu_lookup_info(card->model, &info, NULL, err))
        return -1;
    slot %= 8;
    snprintf(names[slot][0], sizeof names[slot][0], "%s overlap.compute", card->model);
    snprintf(names[slot][1], sizeof names[slot][1], "%s overlap.comm", card->model);
    out[0] = (val_fitted){names[slot][0], fc, info.overlap_compute, ""};
    out[1] = (val_fitted){names[slot][1], fm, info.overlap_comm, ""};
    return 2;
}

int val_fit_overlap(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    int k = 0;
    for (int c = 0; c < val_micro_ncards; c++) {
        int n = fit_card(data_dir, &val_micro_cards[c], c, out + k, max - k, logf, err);
        if (n < 0)
            return -1;
        k += n;
    }
    return k;
}
