/* fit_gemm.c — GEMM efficiency curves and per-dtype scales (fit.h).
 *
 * Model (sim/costmodel.c): a GEMM of F FLOPs in dtype d lasts
 *   max(kernel_min_s, F / (peak[d] x eff(F) x scale[d] x tile(m, n)))
 * and the stream then waits launch_s; eff(F) = e_max / (1 + (F_half / F)^g)
 * over the GEMM's FLOPs, tile() the 128 x 128 tile quantisation, scale[d]
 * = 1 for the curve's own types (fp16/bf16) and fitted for a dtype whose
 * GEMMs reach a different fraction of their peak (TF32 on A100, FP8 on
 * H100).  The curve is stored in platforms/catalog/gpus.json sampled at
 * log10 F = 6 ... 13 (the catalogue's curve format, linear between points),
 * a scale as gemm_scale.<dtype>.  kernel_min_s and launch_s come from the
 * catalogue (validation/fit_memory.c); benchmark tables time back-to-back
 * GEMMs, so their time per GEMM includes the launch gap, and Kineto kernels
 * are compared as duration + the trace's back-to-back gap.
 *   RTX3090: validation/data/gemm/mli_micro_bench_3090ti_matmul.csv, square
 *     matmuls on an RTX 3090 Ti, TF32 and fp16, as fractions of the 3090 Ti's
 *     dense peaks (40 and 80 TFLOP/s, NVIDIA RTX 3090 Ti specifications:
 *     84 SMs at 1.86 GHz); the same fraction of peak is applied to the
 *     RTX 3090.  The n = 128 points are mostly the per-call overhead of the
 *     benchmark, so a launch overhead is fitted beside the curve as a
 *     nuisance parameter and not stored (the stored one comes from
 *     fit_kernels.c).
 *   A100-SXM-80GB: gemm/azure_nd_a100_v4_gemm_cublaslt_fp16.csv (cuBLASLt
 *     fp16 on ND A100 v4, incl. a skinny 802816 x 192 x 768 shape), the A100
 *     SXM bf16 row of gemm/stas00_mamf_bf16_fp8.csv (best shape), and the
 *     even-indexed (by FLOPs) TF32 GEMM shapes of the A100 40 GB Kineto trace
 *     (trace_diff/control) whose dimensions are multiples of 4 (others run
 *     cuBLAS's align1 kernels, a different code path) for the TF32 scale;
 *     the odd ones are predicted (group kineto-gemm).  The 40 GB SXM4 module
 *     is the same GA100 at the same clocks: it gets the same curve.  The
 *     A100 PCIe cards (250-300 W) get it scaled by the ratio of stas00's
 *     A100 PCIe and SXM MAMF rows (derived, not fitted).
 *   H100-SXM and H200: each card's own table, measured by this project
 *     with bench/gpu/measure.py (h100-micro/gemm.csv on one H100 SXM5,
 *     h200-micro/gemm.csv on one H200: val_micro_cards): the bf16 products
 *     whose edges are all multiples of 8, ordered by FLOPs, even-indexed
 *     fitted and odd-indexed predicted (random shapes, squares, and the fwd
 *     / dgrad / wgrad products of GPT and Llama layers; groups h100-micro
 *     and h200-micro); the FP8 scale on the even-indexed FP8 rows of the
 *     same table.  The table replays CUDA graphs, so a row is the kernel's
 *     duration with no launch gap.  Rows with an edge that is not a
 *     multiple of 8 are left out: their operand rows are not 16-byte
 *     aligned and cuBLAS runs other, slower kernels (75 to 145 TFLOP/s
 *     where aligned neighbours reach 400-700); they give gemm_unaligned.
 *     Both cards ran at their 700 W limit through the large products (the
 *     SM clock at 1,300 to 1,600 MHz instead of 1,980: <card>/sustained.csv),
 *     as in a training step; each row is taken at the power state its
 *     recorded SM clock gives (the card's own duty.csv), so the curve is
 *     the cool state's and the card's duty.csv is its power table.
 *     Predicted: the ND H100 v5 / ND H200 v5 cuBLASLt FP8 tables and
 *     stas00's H100 (bf16, FP8) and H200 (FP8) MAMF rows (group h100-gemm).
 * Nothing from the Oases profile or a training step is used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "workloads/kineto.h"
#include "platforms/catalog.h"
#include "sim/costmodel.h"
#include "val_csv.h"

#define GF_MAX 1024

typedef struct gemm_pt {
    double m, n, k, b, seconds; /* measured time per GEMM */
    double peak;                /* FLOP/s the fraction is of */
    double launch, kmin;        /* the measuring GPU's catalogue launch_s and kernel_min_s */
    int dtype, fit;             /* fit = 0: predicted, not fitted */
    double rate;                /* the card's power state when measured: the fraction of the cool
                                   rate its tensor cores ran at (0 = 1: cool or not known) */
} gemm_pt;

/* Parameters: x = (logit e_max, log10 F_half, logit g, log launch_us,
 * log scale); a fit varies x[first .. first + np) and holds the rest. */
#define GP_N 5
#define GP_SCALE 4
typedef struct gemm_data {
    int n, fit_launch;
    gemm_pt p[GF_MAX];
    sim_gpu g;                     /* catalogue entry: launch_s, kernel_min_s */
    int scaled;                    /* the dtype x[GP_SCALE] scales, -1 = none */
    double x[GP_N];                /* all parameters (held ones and the last fit's) */
    int first, np;                 /* the fitted slice */
    unsigned only;                 /* fit only points of these dtypes (bit per sim_dtype) */
    int stored_curve;              /* 1: the catalogue's curve (d->g) instead of eff_of(x) */
} gemm_data;

static double eff_of(const double *x, double F)
{
    /* g within (0.3, 2): few sizes cannot pin a steeper knee, and a steep one
     * would starve tiny GEMMs below the data */
    double emax = 1 / (1 + exp(-x[0])), fh = pow(10, x[1]), g = 0.3 + 1.7 / (1 + exp(-x[2]));
    return emax / (1 + pow(fh / F, g));
}

static double model_t(const double *x, const gemm_data *d, const gemm_pt *q)
{
    double F = 2 * q->m * q->n * q->k * q->b;
    double launch = d->fit_launch ? exp(x[3]) * 1e-6 : q->launch;
    double scale = q->dtype == d->scaled ? exp(x[GP_SCALE]) : 1;
    double eff = d->stored_curve ? sim_curve_eval(&d->g.gemm_eff, F) : eff_of(x, F);
    double t = F / (q->peak * eff * scale * sim_cost_tile_eff(q->m, q->n) * (q->rate > 0 ? q->rate : 1));
    return fmax(t, q->kmin) + launch;
}

static int in_fit(const gemm_data *d, const gemm_pt *q)
{
    return q->fit && (d->only >> q->dtype & 1u);
}

static int resid(const double *xs, double *r, void *user)
{
    gemm_data *d = user;
    double x[GP_N];
    memcpy(x, d->x, sizeof x);
    memcpy(x + d->first, xs, sizeof x[0] * (size_t)d->np);
    for (int i = 0, k = 0; i < d->n; i++)
        if (in_fit(d, &d->p[i]))
            r[k++] = log(model_t(x, d, &d->p[i]) / d->p[i].seconds);
    return 0;
}

static int load(const char *data_dir, const char *rel, val_csv **out, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    *out = val_csv_load(path, err);
    return *out ? 0 : -1;
}

static void add_pt(gemm_data *d, double m, double n, double k, double b, double seconds, double peak, int dtype,
                   int fit)
{
    if (d->n < GF_MAX)
        d->p[d->n++] = (gemm_pt){m, n, k, b, seconds, peak, d->g.launch_s, d->g.kernel_min_s, dtype, fit, 0};
}

/* m,n,k,tflops rows (Azure cuBLASLt tables); every `stride`-th row from
 * `first` is fitted, the others predicted. */
static int add_table(const char *data_dir, const char *rel, gemm_data *d, int dtype, int first, int stride,
                     sim_err *err)
{
    val_csv *c;
    if (load(data_dir, rel, &c, err))
        return -1;
    int cm = val_csv_col(c, "m", err), cn = val_csv_col(c, "n", err), ck = val_csv_col(c, "k", err);
    int ct = val_csv_col(c, "tflops", err), rc = cm < 0 || cn < 0 || ck < 0 || ct < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double m, n, k, t;
        if (val_csv_num(c, i, cm, &m, err) < 0 || val_csv_num(c, i, cn, &n, err) < 0 ||
            val_csv_num(c, i, ck, &k, err) < 0 || val_csv_num(c, i, ct, &t, err) < 0)
            rc = -1;
        else
            add_pt(d, m, n, k, 1, 2 * m * n * k / (t * 1e12), d->g.peak_flops[dtype], dtype,
                   i >= first && (i - first) % stride == 0);
    }
    val_csv_free(c);
    return rc;
}

/* stas00's MAMF row of an accelerator and dtype: its rate and the peak it
 * states (TFLOP/s), and its best shape. */
static int mamf_row(const char *data_dir, const char *accel, const char *dtname, double *tflops, double *theory,
                    double *m, double *n, double *k, sim_err *err)
{
    val_csv *c;
    if (load(data_dir, "gemm/stas00_mamf_bf16_fp8.csv", &c, err))
        return -1;
    int ca = val_csv_col(c, "accelerator", err), cd = val_csv_col(c, "dtype", err);
    int cmf = val_csv_col(c, "mamf_tflops", err), cth = val_csv_col(c, "theory_tflops", err);
    int cs = val_csv_col(c, "best_shape_MxNxK", err);
    int rc = ca < 0 || cd < 0 || cmf < 0 || cth < 0 || cs < 0 ? -1 : 1;
    for (int i = 0; rc == 1 && i < val_csv_rows(c); i++) {
        if (strcmp(val_csv_str(c, i, ca), accel) || strcmp(val_csv_str(c, i, cd), dtname))
            continue;
        if (val_csv_num(c, i, cmf, tflops, err) < 0 || val_csv_num(c, i, cth, theory, err) < 0 || !(*theory > 0) ||
            sscanf(val_csv_str(c, i, cs), "%lfx%lfx%lf", m, n, k) != 3) {
            rc = sim_errf(err, "stas00_mamf_bf16_fp8.csv: %s %s row: expected numbers and an MxNxK shape", accel, dtname);
            break;
        }
        rc = 0;
    }
    val_csv_free(c);
    if (rc == 1)
        return sim_errf(err, "stas00_mamf_bf16_fp8.csv: no %s %s row", accel, dtname);
    return rc;
}

/* stas00's MAMF row of an accelerator and dtype (best shape), fitted. */
static int add_mamf(const char *data_dir, gemm_data *d, const char *accel, const char *dtname, int dtype, double *tf,
                    sim_err *err)
{
    double t, th, m, n, k;
    if (mamf_row(data_dir, accel, dtname, &t, &th, &m, &n, &k, err))
        return -1;
    if (d)
        add_pt(d, m, n, k, 1, 2 * m * n * k / (t * 1e12), d->g.peak_flops[dtype], dtype, 1);
    if (tf)
        *tf = t;
    return 0;
}

/* stas00's MAMF row as a fraction of the peak it states. */
static int mamf_fraction(const char *data_dir, const char *accel, const char *dtname, double *frac, double *m,
                         double *n, double *k, sim_err *err)
{
    double t, th;
    if (mamf_row(data_dir, accel, dtname, &t, &th, m, n, k, err))
        return -1;
    *frac = t / th;
    return 0;
}

/* The aligned GEMM shapes of a Kineto trace as busy-stream costs: even
 * indices by FLOPs fitted, odd predicted; shapes with a dimension that is
 * not a multiple of 4 are left out (cuBLAS runs align1 kernels for them). */
static int add_kineto(const char *data_dir, const char *rel, gemm_data *d, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    wl_kineto *k = wl_kineto_load(path, err);
    if (!k)
        return -1;
    sim_gpu own; /* the traced GPU's launch gap and shortest kernel */
    const char *model = wl_kineto_catalog_gpu(wl_kineto_device(k));
    if (!model || plat_gpu_lookup_info(model, &own, NULL, err)) {
        wl_kineto_free(k);
        return model ? -1 : sim_errf(err, "%s: GPU not in the catalogue", rel);
    }
    double gap = wl_kineto_busy_gap_us(k, wl_kineto_main_stream(k));
    wl_gemm_shape *s;
    int n = wl_kineto_gemms(k, &s);
    wl_kineto_free(k);
    if (n < 0)
        return sim_errf(err, "%s: out of memory", rel);
    gemm_pt tmp[GF_MAX];
    int nt = 0;
    for (int i = 0; i < n && nt < GF_MAX; i++)
        if (s[i].m % 4 == 0 && s[i].n % 4 == 0 && s[i].k % 4 == 0)
            tmp[nt++] = (gemm_pt){(double)s[i].m, (double)s[i].n, (double)s[i].k, (double)s[i].batch,
                                  (s[i].median_us + (gap > 0 ? gap : 0)) * 1e-6, own.peak_flops[s[i].dtype],
                                  own.launch_s, own.kernel_min_s, s[i].dtype, 0, 0};
    free(s);
    /* order by FLOPs (insertion sort: a few hundred shapes) */
    for (int i = 1; i < nt; i++)
        for (int j = i; j > 0 && tmp[j].m * tmp[j].n * tmp[j].k * tmp[j].b < tmp[j - 1].m * tmp[j - 1].n * tmp[j - 1].k * tmp[j - 1].b; j--) {
            gemm_pt t = tmp[j];
            tmp[j] = tmp[j - 1];
            tmp[j - 1] = t;
        }
    for (int i = 0; i < nt && d->n < GF_MAX; i++) {
        d->p[d->n] = tmp[i];
        d->p[d->n++].fit = i % 2 == 0;
    }
    return 0;
}

static double mean_err(const double *x, const gemm_data *d, int fit, int *n)
{
    double s = 0;
    *n = 0;
    for (int i = 0; i < d->n; i++)
        if (fit ? in_fit(d, &d->p[i]) : !d->p[i].fit) {
            s += fabs(model_t(x, d, &d->p[i]) / d->p[i].seconds - 1);
            (*n)++;
        }
    return *n ? 100 * s / *n : 0;
}

#define DT(t) (1u << (t))
#define DT_ALL (~0u)
/* Fits x[first .. first + np) of d on its fitted points of the dtypes in
 * `only` and logs what it fitted. */
static int fit_set(gemm_data *d, const char *what, int first, int np, unsigned only, FILE *logf, sim_err *err)
{
    d->first = first, d->np = np, d->only = only;
    int nfit = 0;
    for (int i = 0; i < d->n; i++)
        nfit += in_fit(d, &d->p[i]);
    double rms, xs[GP_N];
    memcpy(xs, d->x + first, sizeof xs[0] * (size_t)np);
    if (val_fit_lm(resid, d, nfit, np, xs, &rms, err))
        return sim_err_prefix(err, "%s: ", what);
    memcpy(d->x + first, xs, sizeof xs[0] * (size_t)np);
    if (!logf)
        return 0;
    const double *x = d->x;
    int nf, npred;
    double ef = mean_err(x, d, 1, &nf), ep = mean_err(x, d, 0, &npred);
    if (d->stored_curve)
        fprintf(logf, "%s: the catalogue's curve, launch %.2f us", what, d->g.launch_s * 1e6);
    else
        fprintf(logf, "%s: e_max %.3f, F_half 10^%.2f FLOPs, g %.2f, launch %.2f us", what, 1 / (1 + exp(-x[0])),
                x[1], 0.3 + 1.7 / (1 + exp(-x[2])), d->fit_launch ? exp(x[3]) : d->g.launch_s * 1e6);
    if (d->scaled >= 0)
        fprintf(logf, ", %s scale %.3f", sim_dtype_name((sim_dtype)d->scaled), exp(x[GP_SCALE]));
    fprintf(logf, "; %d points fitted (rms log error %.3f), mean |error| %.1f %% over the data's fitted points, %.1f %% "
                  "over %d predicted\n", nfit, rms, ef, ep, npred);
    return 0;
}

/* The benchmark-table points beside the model (the trace's shapes are
 * listed by group kineto-gemm). */
static void list_points(const gemm_data *d, FILE *logf)
{
    const double *x = d->x;
    if (!logf)
        return;
    for (int i = 0; i < d->n; i++) {
        const gemm_pt *q = &d->p[i];
        if (q->b != 1 || q->dtype == SIM_DTYPE_TF32 || q->dtype == SIM_DTYPE_FP32)
            continue;
        double F = 2 * q->m * q->n * q->k, mt = model_t(x, d, q);
        fprintf(logf, "  %6.0f x %6.0f x %6.0f %-4s measured %7.1f TFLOP/s  model %7.1f  %+6.1f %%%s\n", q->m, q->n,
                q->k, sim_dtype_name((sim_dtype)q->dtype), F / q->seconds / 1e12, F / mt / 1e12,
                100 * (q->seconds / mt - 1), q->fit ? "" : "  (predicted)");
    }
}

/* Report: the curve (times `factor`) and the scale, for `model`. */
static int report(const char *model, const gemm_data *d, double factor, val_fitted *out, int max, sim_err *err)
{
    const double *x = d->x;
    static char names[16][12][48];
    static int slot;
    sim_gpu g;
    if (plat_gpu_lookup_info(model, &g, NULL, err))
        return -1;
    int s = slot++ % 16, k = 0;
    for (int e = 6; e <= 13 && k < max && !d->stored_curve; e++, k++) {
        snprintf(names[s][k], sizeof names[s][k], "%s gemm[%d]", model, e);
        out[k] = (val_fitted){names[s][k], factor * eff_of(x, pow(10, e)), sim_curve_eval(&g.gemm_eff, pow(10, e)), ""};
    }
    if (d->scaled >= 0 && k < max) {
        snprintf(names[s][k], sizeof names[s][k], "%s gemm_scale.%s", model, sim_dtype_name((sim_dtype)d->scaled));
        out[k] = (val_fitted){names[s][k], exp(x[GP_SCALE]), g.gemm_scale[d->scaled], ""};
        k++;
    }
    return k;
}

static int fit_rtx3090(const char *data_dir, gemm_data *d, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    val_csv *c;
    memset(d, 0, sizeof *d);
    d->fit_launch = 1;
    d->scaled = -1;
    if (plat_gpu_lookup_info("RTX3090", &d->g, NULL, err) ||
        load(data_dir, "gemm/mli_micro_bench_3090ti_matmul.csv", &c, err))
        return -1;
    int cd = val_csv_col(c, "dtype", err), cn = val_csv_col(c, "n", err), ct = val_csv_col(c, "tflops_square_matmul", err);
    int rc = cd < 0 || cn < 0 || ct < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double n, t;
        if (val_csv_num(c, i, cn, &n, err) < 0 || val_csv_num(c, i, ct, &t, err) < 0) {
            rc = -1;
            break;
        }
        int fp16 = strstr(val_csv_str(c, i, cd), "16") != NULL;
        add_pt(d, n, n, n, 1, 2 * n * n * n / (t * 1e12), fp16 ? 80e12 : 40e12, fp16 ? SIM_DTYPE_FP16 : SIM_DTYPE_TF32,
               1);
    }
    val_csv_free(c);
    double x0[GP_N] = {1.5, 9.5, 0.0, log(10), 0};
    memcpy(d->x, x0, sizeof x0);
    if (rc || fit_set(d, "RTX3090 GEMM", 0, 4, DT_ALL, logf, err))
        return -1;
    list_points(d, logf);
    /* the data are the 3090 Ti's own: both cards get the curve */
    int k = report("RTX3090", d, 1, out, max, err);
    int k2 = k < 0 ? -1 : report("RTX3090Ti", d, 1, out + k, max - k, err);
    return k2 < 0 ? -1 : k + k2;
}

/* The SXM A100s' power limit (400 W): no duty measurement of an A100 in
 * the data.  The H100's measured table gives the shape (the tensor load at
 * which the rate starts to fall), scaled so that a fully loaded A100 runs at
 * the clock NVIDIA sustains at that limit under HPL, 1,305 of 1,410 MHz (the
 * clock of its A100 Rpeak figures: glennklockwood.com/garden/peak-FLOPS).
 * The A100 curve is the cool state's: stas00's A100 MAMF row reaches 86.9 %
 * of the 1,410 MHz peak, 94 % of a 1,305 MHz one, above any card's MAMF.
 * The PCIe cards (250-300 W) would throttle more; nothing says how much. */
#define A100_HPL_CLOCK (1305.0 / 1410.0)

static int a100_power(val_fitted *out, int max, FILE *logf, sim_err *err)
{
    static const char *const MODELS[] = {"A100-SXM-80GB", "A100-SXM-40GB"};
    static char names[2][8][48];
    sim_gpu h;
    if (plat_gpu_lookup_info("H100-SXM", &h, NULL, err))
        return -1;
    if (h.power_n < 2 || !(h.power_rate[h.power_n - 1] < 1))
        return sim_errf(err, "the H100-SXM's power table has no throttled point to scale");
    double drop = (1 - A100_HPL_CLOCK) / (1 - h.power_rate[h.power_n - 1]);
    int k = 0;
    for (int mi = 0; mi < 2; mi++) {
        sim_gpu a;
        if (plat_gpu_lookup_info(MODELS[mi], &a, NULL, err))
            return -1;
        if (logf && mi == 0) {
            fprintf(logf, "A100 SXM power state (the H100's table, its drop x %.3f: full load at %.0f of 1410 MHz):",
                    drop, 1410 * A100_HPL_CLOCK);
            for (int i = 0; i < h.power_n; i++)
                fprintf(logf, " %.1f -> %.4f", h.power_load[i], 1 - (1 - h.power_rate[i]) * drop);
            fprintf(logf, "\n");
        }
        for (int i = 0; i < h.power_n && i < 8 && k < max; i++) {
            snprintf(names[mi][i], sizeof names[mi][i], "%s power.gemm_rate[%d]", MODELS[mi], i);
            double stored = i < a.power_n && a.power_load[i] == h.power_load[i] ? a.power_rate[i] : NAN;
            out[k++] = (val_fitted){names[mi][i], 1 - (1 - h.power_rate[i]) * drop, stored, ""};
        }
    }
    return k;
}

static int fit_a100(const char *data_dir, gemm_data *d, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    memset(d, 0, sizeof *d);
    d->scaled = SIM_DTYPE_TF32;
    double sxm, pcie;
    if (plat_gpu_lookup_info("A100-SXM-80GB", &d->g, NULL, err) ||
        add_table(data_dir, "gemm/azure_nd_a100_v4_gemm_cublaslt_fp16.csv", d, SIM_DTYPE_FP16, 0, 1, err) ||
        add_mamf(data_dir, d, "NVIDIA A100 SXM", "bf16", SIM_DTYPE_BF16, &sxm, err) ||
        add_mamf(data_dir, NULL, "NVIDIA A100 PCIe", "bf16", SIM_DTYPE_BF16, &pcie, err) ||
        add_kineto(data_dir, "kineto-traces/trace_diff/control/control.json.gz", d, err))
        return -1;
    /* the curve on the fp16/bf16 tables, then the TF32 scale on the trace */
    double x0[GP_N] = {1.5, 9.5, 0.0, 0, log(0.7)};
    memcpy(d->x, x0, sizeof x0);
    if (fit_set(d, "A100-SXM-80GB GEMM (fp16/bf16 tables)", 0, 3, DT(SIM_DTYPE_FP16) | DT(SIM_DTYPE_BF16), logf, err) ||
        fit_set(d, "A100 TF32 scale (A100 40 GB trace, curve held)", GP_SCALE, 1, DT(SIM_DTYPE_TF32), logf, err))
        return -1;
    list_points(d, logf);
    if (logf)
        fprintf(logf, "A100 PCIe: the SXM curve x %.4f (stas00 MAMF: PCIe %.1f / SXM %.1f TFLOP/s)\n", pcie / sxm, pcie,
                sxm);
    static const struct {
        const char *model;
        int pcie;
    } TO[] = {{"A100-SXM-80GB", 0}, {"A100-SXM-40GB", 0}, {"A100-PCIe-40GB", 1}, {"A100-PCIe-80GB", 1}};
    int total = 0;
    for (size_t i = 0; i < sizeof TO / sizeof TO[0]; i++) {
        int k = report(TO[i].model, d, TO[i].pcie ? pcie / sxm : 1, out + total, max - total, err);
        if (k < 0)
            return -1;
        total += k;
    }
    int k = a100_power(out + total, max - total, logf, err);
    return k < 0 ? -1 : total + k;
}

const val_micro_card val_micro_cards[] = {
    {"H100-SXM", "h100-micro"}, /* one H100 80GB HBM3 SXM5, 2026-11-27 */
    {"H200", "h200-micro"},     /* one H200 141 GB SXM, 2026-11-27 */
};
const int val_micro_ncards = (int)(sizeof val_micro_cards / sizeof val_micro_cards[0]);

const val_micro_card *val_micro_card_of(const char *model)
{
    for (int i = 0; i < val_micro_ncards; i++)
        if (!strcmp(val_micro_cards[i].model, model))
            return &val_micro_cards[i];
    return NULL;
}

/* The card's power state from its duty.csv (bench/gpu/measure.py):
 * an 8,192 x 8,192 x 4,096 GEMM interleaved with copies at GEMM time
 * shares 0.2 ... 1, its rate and the mean SM clock at each.  The cool rate
 * is the mean of the shares <= 0.4 (the card below its power limit there:
 * 1.96-1.98 GHz on the H100, 1.84-1.98 on the H200); each share's rate over it, at most 1, is the catalogue's
 * power table (tensor load = the share: the GEMM runs at its plateau); each
 * share's (clock, rate) maps a table row's recorded SM clock to its state. */
int val_power_read(val_csv *c, val_power *pt, sim_err *err)
{
    int cs = val_csv_col(c, "gemm_share", err), ct = val_csv_col(c, "gemm_tflops", err);
    int cm = val_csv_col(c, "sm_mhz_mean", err);
    int rc = cs < 0 || ct < 0 || cm < 0 ? -1 : 0;
    double tf[8], cool = 0;
    int ncool = 0;
    pt->n = 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c) && pt->n < 8; i++) {
        double sh, t, mhz;
        if (val_csv_num(c, i, cs, &sh, err) < 0 || val_csv_num(c, i, ct, &t, err) < 0 ||
            val_csv_num(c, i, cm, &mhz, err) < 0)
            rc = -1;
        else if (!(t > 0 && sh > 0 && sh <= 1) || (pt->n > 0 && !(sh > pt->share[pt->n - 1])))
            rc = sim_errf(err, "%s: row %d: expected increasing gemm_share in (0, 1] and a positive rate",
                          val_csv_path(c), i + 2);
        else {
            pt->share[pt->n] = sh, pt->mhz[pt->n] = mhz, tf[pt->n++] = t;
            if (sh <= 0.4)
                cool += t, ncool++;
        }
    }
    if (rc == 0 && (pt->n < 2 || !ncool))
        rc = sim_errf(err, "%s: expected at least 2 rows, one at a share <= 0.4", val_csv_path(c));
    for (int i = 0; rc == 0 && i < pt->n; i++)
        pt->rate[i] = fmin(1, tf[i] / (cool / ncool));
    return rc;
}

/* A table row's state from its recorded SM clock: the duty rows' rates by
 * clock, linear between them, held beyond them. */
static int load_power(const char *data_dir, const val_micro_card *card, val_power *pt, sim_err *err)
{
    val_csv *c;
    char rel[256];
    snprintf(rel, sizeof rel, "%s/duty.csv", card->dir);
    if (load(data_dir, rel, &c, err))
        return -1;
    int rc = val_power_read(c, pt, err);
    val_csv_free(c);
    return rc;
}

double val_power_rate_at_clock(const val_power *pt, double mhz)
{
    int idx[8] = {0};
    for (int i = 0; i < pt->n; i++)
        idx[i] = i;
    for (int i = 1; i < pt->n; i++) /* by clock */
        for (int j = i; j > 0 && pt->mhz[idx[j]] < pt->mhz[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    if (mhz <= pt->mhz[idx[0]])
        return pt->rate[idx[0]];
    for (int i = 1; i < pt->n; i++)
        if (mhz <= pt->mhz[idx[i]]) {
            const int a = idx[i - 1], b = idx[i];
            return pt->rate[a] + (pt->rate[b] - pt->rate[a]) * (mhz - pt->mhz[a]) / (pt->mhz[b] - pt->mhz[a]);
        }
    return pt->rate[idx[pt->n - 1]];
}

/* The rows of a table from bench/gpu/measure.py (set, layout, dtype, m, n,
 * k, us) in `dtype` whose edges are multiples of 8, ordered by FLOPs,
 * even-indexed fitted.  The rows are graph replays: no launch gap. */
static int add_micro(const char *data_dir, const char *rel, gemm_data *d, const char *dtname, int dtype,
                     const val_power *pt, sim_err *err)
{
    val_csv *c;
    if (load(data_dir, rel, &c, err))
        return -1;
    int cd = val_csv_col(c, "dtype", err), cm = val_csv_col(c, "m", err), cn = val_csv_col(c, "n", err);
    int ck = val_csv_col(c, "k", err), cu = val_csv_col(c, "us", err), cz = val_csv_col(c, "sm_mhz", err);
    int rc = cd < 0 || cm < 0 || cn < 0 || ck < 0 || cu < 0 || cz < 0 ? -1 : 0, first = d->n;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double m, n, k, us, mhz;
        if (strcmp(val_csv_str(c, i, cd), dtname))
            continue;
        if (val_csv_num(c, i, cm, &m, err) < 0 || val_csv_num(c, i, cn, &n, err) < 0 ||
            val_csv_num(c, i, ck, &k, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0 ||
            val_csv_num(c, i, cz, &mhz, err) < 0)
            rc = -1;
        else if (fmod(m, 8) == 0 && fmod(n, 8) == 0 && fmod(k, 8) == 0 && d->n < GF_MAX)
            d->p[d->n++] = (gemm_pt){m, n, k, 1, us * 1e-6, d->g.peak_flops[dtype], 0, d->g.kernel_min_s, dtype, 0,
                                     val_power_rate_at_clock(pt, mhz)};
    }
    val_csv_free(c);
    if (rc == 0 && d->n - first < 8)
        return sim_errf(err, "%s: fewer than 8 aligned %s rows", rel, dtname);
    for (int i = first + 1; i < d->n; i++) /* by FLOPs: insertion sort, stable */
        for (int j = i; j > first && d->p[j].m * d->p[j].n * d->p[j].k < d->p[j - 1].m * d->p[j - 1].n * d->p[j - 1].k; j--) {
            gemm_pt t = d->p[j];
            d->p[j] = d->p[j - 1];
            d->p[j - 1] = t;
        }
    for (int i = first; i < d->n; i++)
        d->p[i].fit = (i - first) % 2 == 0;
    return rc;
}

/* gemm_unaligned: the bf16 rows of the table with an edge that is not a
 * multiple of 8 (16 bytes), ordered by FLOPs, against the aligned curve just
 * fitted: the scale is the median of model / measured over the
 * even-indexed rows (robust: one row whose only odd edge is m, never a
 * leading dimension in that layout, ran an aligned kernel), the odd ones
 * predicted.  The cost model cannot tell leading dimensions (a payload has
 * no layout), so any odd edge counts, as it must for a weight gradient whose
 * odd edge is the output's.  Each measured card on its own table. */
static int fit_unaligned(const char *data_dir, const val_micro_card *card, const gemm_data *fitted,
                         const val_power *pt, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    val_csv *c;
    char rel[256];
    snprintf(rel, sizeof rel, "%s/gemm.csv", card->dir);
    if (load(data_dir, rel, &c, err))
        return -1;
    int cd = val_csv_col(c, "dtype", err), cm = val_csv_col(c, "m", err), cn = val_csv_col(c, "n", err);
    int ck = val_csv_col(c, "k", err), cu = val_csv_col(c, "us", err), cz = val_csv_col(c, "sm_mhz", err);
    int rc = cd < 0 || cm < 0 || cn < 0 || ck < 0 || cu < 0 || cz < 0 ? -1 : 0, n = 0;
    gemm_pt pts[GF_MAX];
    for (int i = 0; rc == 0 && i < val_csv_rows(c) && n < GF_MAX; i++) {
        double m, nn, k, us, mhz;
        if (strcmp(val_csv_str(c, i, cd), "bf16"))
            continue;
        if (val_csv_num(c, i, cm, &m, err) < 0 || val_csv_num(c, i, cn, &nn, err) < 0 ||
            val_csv_num(c, i, ck, &k, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0 ||
            val_csv_num(c, i, cz, &mhz, err) < 0)
            rc = -1;
        else if (fmod(m, 8) != 0 || fmod(nn, 8) != 0 || fmod(k, 8) != 0)
            pts[n++] = (gemm_pt){m, nn, k, 1, us * 1e-6, fitted->g.peak_flops[SIM_DTYPE_BF16], 0,
                                 fitted->g.kernel_min_s, SIM_DTYPE_BF16, 0, val_power_rate_at_clock(pt, mhz)};
    }
    val_csv_free(c);
    if (rc)
        return -1;
    if (n < 4)
        return sim_errf(err, "%s: %d unaligned bf16 rows; expected at least 4", rel, n);
    for (int i = 1; i < n; i++) /* by FLOPs */
        for (int j = i; j > 0 && pts[j].m * pts[j].n * pts[j].k < pts[j - 1].m * pts[j - 1].n * pts[j - 1].k; j--) {
            gemm_pt t = pts[j];
            pts[j] = pts[j - 1];
            pts[j - 1] = t;
        }
    double ratio[GF_MAX];
    int nf = 0;
    for (int i = 0; i < n; i += 2)
        ratio[nf++] = model_t(fitted->x, fitted, &pts[i]) / pts[i].seconds;
    for (int i = 1; i < nf; i++) /* median: insertion sort */
        for (int j = i; j > 0 && ratio[j] < ratio[j - 1]; j--) {
            double t = ratio[j];
            ratio[j] = ratio[j - 1];
            ratio[j - 1] = t;
        }
    double scale = nf % 2 ? ratio[nf / 2] : 0.5 * (ratio[nf / 2 - 1] + ratio[nf / 2]), efit = 0, epred = 0;
    for (int i = 0; i < n; i++) {
        /* the model's time once scaled: the flop term grows by 1 / scale (kernel_min rarely binds here) */
        double e = fabs(model_t(fitted->x, fitted, &pts[i]) / scale / pts[i].seconds - 1);
        if (i % 2 == 0)
            efit += e;
        else
            epred += e;
    }
    if (logf)
        fprintf(logf, "%s unaligned bf16 GEMMs (an edge not a multiple of 8): %.3f of the aligned rate; %d rows "
                      "fitted (mean |error| %.1f %%), %d predicted (%.1f %%)\n",
                card->model, scale, nf, 100 * efit / nf, n - nf, 100 * epred / (n - nf));
    static char names[8][48];
    static int slot;
    int sl = slot++ % 8;
    if (max < 1)
        return 0;
    snprintf(names[sl], sizeof names[sl], "%s gemm_unaligned", card->model);
    out[0] = (val_fitted){names[sl], scale, fitted->g.gemm_unaligned, ""};
    return 1;
}

/* The cards with no measurement of their own that take the H100's
 * (catalogue key calibrated_like): its curve times the ratio of their MAMF
 * bf16 fraction of peak to the H100 SXM's, derived here and checked against
 * the catalogue; their MAMF FP8 rows are predicted (logged). */
static const struct {
    const char *model;
    const char *mamf; /* stas00's accelerator whose rows stand for it */
} LIKE_H100[] = {{"B200", "NVIDIA B200 SXM"}, {"GB200", "NVIDIA GB200 SXM"}, {"GB300", "NVIDIA B300 SXM"}};

static int report_like_h100(const char *data_dir, const gemm_data *d, val_fitted *out, int max, FILE *logf,
                            sim_err *err)
{
    double h100, m, n, k;
    if (mamf_fraction(data_dir, "NVIDIA H100 SXM", "bf16", &h100, &m, &n, &k, err))
        return -1;
    int total = 0;
    for (size_t i = 0; i < sizeof LIKE_H100 / sizeof LIKE_H100[0]; i++) {
        double own, ratio;
        sim_gpu g;
        if (mamf_fraction(data_dir, LIKE_H100[i].mamf, "bf16", &own, &m, &n, &k, err) ||
            plat_gpu_lookup_info(LIKE_H100[i].model, &g, NULL, err))
            return -1;
        ratio = own / h100;
        int r = report(LIKE_H100[i].model, d, ratio, out + total, max - total, err);
        if (r < 0)
            return -1;
        total += r;
        if (!logf)
            continue;
        fprintf(logf, "%s: the H100-SXM curve x %.4f (stas00 MAMF bf16: %s %.1f %% of peak / H100 SXM %.1f %%)\n",
                LIKE_H100[i].model, ratio, LIKE_H100[i].mamf, 100 * own, 100 * h100);
        double f8;
        if (mamf_fraction(data_dir, LIKE_H100[i].mamf, "fp8_e4m3fn", &f8, &m, &n, &k, err) == 0) {
            gemm_pt q = {m, n, k, 1, 0, g.peak_flops[SIM_DTYPE_FP8] * ratio, 0, 0, SIM_DTYPE_FP8, 0, 0};
            double F = 2 * m * n * k, mt = model_t(d->x, d, &q);
            fprintf(logf, "  %6.0f x %6.0f x %6.0f fp8  MAMF %7.1f TFLOP/s  model %7.1f  %+6.1f %%  (published, predicted)\n",
                    m, n, k, f8 * g.peak_flops[SIM_DTYPE_FP8] / 1e12, F / mt / 1e12,
                    100 * (F / mt / (f8 * g.peak_flops[SIM_DTYPE_FP8]) - 1));
        }
    }
    return total;
}

/* Each measured card (val_micro_cards): the curve on the bf16 rows of its
 * own table, then the FP8 scale on its FP8 rows with the curve held; the
 * published tables are predictions. */
static const struct {
    const char *model;
    const char *mamf;     /* stas00's accelerator name */
    int mamf_bf16;        /* 1: its MAMF table has a bf16 row (the H200 has FP8 only) */
    const char *azure;    /* Azure's cuBLASLt FP8 table of the card */
} MICRO_PUBLISHED[] = {
    {"H100-SXM", "NVIDIA H100 SXM", 1, "gemm/azure_nd_h100_v5_gemm_cublaslt_fp8.csv"},
    {"H200", "NVIDIA H200 SXM", 0, "gemm/azure_nd_h200_v5_gemm_cublaslt_fp8.csv"},
};

static int fit_micro(const char *data_dir, const val_micro_card *card, gemm_data *d, val_fitted *out, int max,
                     FILE *logf, sim_err *err)
{
    memset(d, 0, sizeof *d);
    d->scaled = SIM_DTYPE_FP8;
    static val_power pt;
    char rel[256], what[160];
    snprintf(rel, sizeof rel, "%s/gemm.csv", card->dir);
    if (load_power(data_dir, card, &pt, err) || plat_gpu_lookup_info(card->model, &d->g, NULL, err) ||
        add_micro(data_dir, rel, d, "bf16", SIM_DTYPE_BF16, &pt, err) ||
        add_micro(data_dir, rel, d, "fp8", SIM_DTYPE_FP8, &pt, err))
        return -1;
    int micro = d->n;
    for (size_t i = 0; i < sizeof MICRO_PUBLISHED / sizeof MICRO_PUBLISHED[0]; i++) {
        if (strcmp(MICRO_PUBLISHED[i].model, card->model))
            continue;
        if ((MICRO_PUBLISHED[i].mamf_bf16 &&
             add_mamf(data_dir, d, MICRO_PUBLISHED[i].mamf, "bf16", SIM_DTYPE_BF16, NULL, err)) ||
            add_mamf(data_dir, d, MICRO_PUBLISHED[i].mamf, "fp8_e4m3fn", SIM_DTYPE_FP8, NULL, err) ||
            add_table(data_dir, MICRO_PUBLISHED[i].azure, d, SIM_DTYPE_FP8, 0, 1, err))
            return -1;
    }
    for (int i = micro; i < d->n; i++)
        d->p[i].fit = 0; /* published: predicted */
    double x0[GP_N] = {1.0, 9.5, 0.0, 0, log(0.9)};
    memcpy(d->x, x0, sizeof x0);
    snprintf(what, sizeof what, "%s GEMM, cool state (this project's bf16 table, each row at its recorded power state)",
             card->model);
    if (fit_set(d, what, 0, 3, DT(SIM_DTYPE_BF16), logf, err))
        return -1;
    snprintf(what, sizeof what, "%s FP8 scale (its FP8 rows, curve held)", card->model);
    if (fit_set(d, what, GP_SCALE, 1, DT(SIM_DTYPE_FP8), logf, err))
        return -1;
    if (logf) /* the published rows beside the model: the table's own are listed by the card's micro group */
        for (int i = micro; i < d->n; i++) {
            const gemm_pt *q = &d->p[i];
            double F = 2 * q->m * q->n * q->k, mt = model_t(d->x, d, q);
            fprintf(logf, "  %6.0f x %6.0f x %6.0f %-4s measured %7.1f TFLOP/s  model %7.1f  %+6.1f %%  (published, predicted)\n",
                    q->m, q->n, q->k, sim_dtype_name((sim_dtype)q->dtype), F / q->seconds / 1e12, F / mt / 1e12,
                    100 * (q->seconds / mt - 1));
        }
    int k = report(card->model, d, 1, out, max, err);
    if (k < 0)
        return -1;
    if (!strcmp(card->model, "H100-SXM")) {
        int kl = report_like_h100(data_dir, d, out + k, max - k, logf, err);
        if (kl < 0)
            return -1;
        k += kl;
    }
    int k2 = fit_unaligned(data_dir, card, d, &pt, out + k, max - k, logf, err);
    if (k2 < 0)
        return -1;
    k += k2;
    /* the power table (load = share, rate) */
    static char names[8][16][48];
    static int slot;
    int sl = slot++ % 8;
    if (logf) {
        fprintf(logf, "%s power state (%s/duty.csv): tensor load -> rate of the cool state:", card->model, card->dir);
        for (int i = 0; i < pt.n; i++)
            fprintf(logf, " %.1f -> %.3f (%.0f MHz)", pt.share[i], pt.rate[i], pt.mhz[i]);
        fprintf(logf, "\n");
    }
    for (int i = 0; i < pt.n && 2 * i + 1 < 16 && k + 2 <= max; i++) {
        snprintf(names[sl][2 * i], sizeof names[sl][2 * i], "%s power.load[%d]", card->model, i);
        snprintf(names[sl][2 * i + 1], sizeof names[sl][2 * i + 1], "%s power.gemm_rate[%d]", card->model, i);
        out[k++] = (val_fitted){names[sl][2 * i], pt.share[i], i < d->g.power_n ? d->g.power_load[i] : NAN, ""};
        out[k++] = (val_fitted){names[sl][2 * i + 1], pt.rate[i], i < d->g.power_n ? d->g.power_rate[i] : NAN, ""};
    }
    return k;
}

/* V100: its GEMM curve is the catalogue prior (no tensor-core table in the
 * data); the fp32 (SIMT sgemm) scale is fitted on the even-indexed aligned
 * fp32 shapes of the V100 trace (trace_diff/test), the odd ones predicted. */
static int fit_v100(const char *data_dir, gemm_data *d, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    memset(d, 0, sizeof *d);
    d->scaled = SIM_DTYPE_FP32;
    if (plat_gpu_lookup_info("V100-SXM2-16GB", &d->g, NULL, err) ||
        add_kineto(data_dir, "kineto-traces/trace_diff/test/test.json.gz", d, err))
        return -1;
    d->stored_curve = 1;
    d->x[GP_SCALE] = 0;
    if (fit_set(d, "V100 fp32 scale (V100 trace, the prior curve held)", GP_SCALE, 1, DT(SIM_DTYPE_FP32), logf, err))
        return -1;
    int k = report("V100-SXM2-16GB", d, 1, out, max, err);
    int k2 = k < 0 ? -1 : report("V100-SXM2-32GB", d, 1, out + k, max - k, err);
    return k2 < 0 ? -1 : k + k2;
}

int val_fit_gemm(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    gemm_data *d = malloc(sizeof *d);
    if (!d)
        return sim_errf(err, "out of memory");
    int n = 0, k = fit_rtx3090(data_dir, d, out, max, logf, err);
    if (k >= 0) {
        n += k;
        k = fit_a100(data_dir, d, out + n, max - n, logf, err);
    }
    for (int c = 0; k >= 0 && c < val_micro_ncards; c++) {
        n += k;
        k = fit_micro(data_dir, &val_micro_cards[c], d, out + n, max - n, logf, err);
    }
    if (k >= 0) {
        n += k;
        k = fit_v100(data_dir, d, out + n, max - n, logf, err);
    }
    free(d);
    return k < 0 ? -1 : n + k;
}
