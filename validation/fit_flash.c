/* fit_flash.c — fused attention (FlashAttention) efficiency curves (fit.h).
 *
 * Model (sim/costmodel.c): a flash_fwd / flash_bwd kernel takes
 * FLOPs / (peak × eff(s)) + launches, eff(s) = e_max / (1 + (s_half / s)^g)
 * over the sequence length s a query row runs through (s/2 when causal),
 * the variable the FlashAttention benchmarks sweep at a fixed, full grid
 * (batch·seq = 16k tokens, 16 heads of 128).  Stored in
 * platforms/catalog/gpus.json under "flash_attention" sampled at
 * s = 2^7 ... 2^17 (keys log10 s).  The measured times lose the kernels'
 * launches first (the cost model adds them back).
 *   H100-SXM (and H100-PCIe, the same fractions of its own peak) and H200:
 *     this project's measurement on each card (h100-micro/attention.csv on
 *     one H100 SXM5, h200-micro/attention.csv on one H200: val_micro_cards;
 *     bench/gpu/measure.py: PyTorch's scaled_dot_product_attention, 16k
 *     tokens, hidden 2,048, hd 128), against the card's dense BF16 peak
 *     (989.4 TFLOP/s on both): the cuDNN fused-attention backend for the
 *     GPU's best kernel (the one Megatron-Core runs on Hopper through
 *     Transformer Engine, and the one PyTorch picks there by default), its
 *     FlashAttention-2 backend for attn=flash2; causal factors from its
 *     causal rows.  The FA3 paper's own FA3 and FA2 bars on H100 SXM5 (Figs.
 *     5-6) are predictions for the H100.
 *   defaults (FlashAttention-2 on Ampere and Ada, A100 included): no
 *     per-sequence-length A100 table is in the data, so the shape (s_half,
 *     g) is fitted on FlashAttention-2's own bars on H100 in the same
 *     figures, and e_max is set so that at 16k tokens the curve is at the
 *     maxima the FA2 paper states for A100 (Dao 2023, abstract and Sec. 4.1:
 *     up to 73 % of the theoretical peak forward, 63 % backward).
 * A causal kernel is read at s/2 (a query row's mean K/V loop) and slowed by
 * one factor per curve set, "causal", the mean ratio of the causal forward
 * rows to the non-causal curve at s/2 (the measured ones for H100, FA2's
 * bars in the FA3 paper for the defaults): the load imbalance and masking of
 * the diagonal blocks; the backward takes the same factor.  Predicted, not fitted: the A100 FA2 forward measurements of the
 * gpu_travel rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "sim/costmodel.h"
#include "val_csv.h"

#define FA2_A100_FWD_MAX 0.73 /* Dao 2023: "reaching 50-73% of the theoretical maximum FLOPs/s on A100" (fwd) */
#define FA2_A100_BWD_MAX 0.63 /* Dao 2023, Sec. 4.1: backward "up to 63%" */
/* gpu_travel's A100 ran at ~1200 of its 1410 MHz during those measurements
 * (its README says the clock dropped under load); the A100's GEMM curve is
 * fitted on tables taken at the sustained full clock (platforms/README.md,
 * Calibration), so its rows are brought to that clock before use */
#define GPU_TRAVEL_CLOCK (1200.0 / 1410.0)
#define H100_SXM_BF16 989.4e12
#define A100_BF16 312e12

typedef struct flash_pt {
    double seq, eff; /* the kernel's efficiency once its launches are taken off, a fraction of peak */
    double tflops;   /* as measured */
} flash_pt;

typedef struct flash_data {
    int n;
    flash_pt p[16];
} flash_data;

/* The kernel time the cost model charges besides FLOPs / (peak x eff): its
 * launches (1 forward, 3 backward) at the GPU's launch_s and the
 * backward's two memory-bound side kernels (sim_cost_flash_side); taken off
 * the measured time so that the fitted curve and the cost model add up to
 * the measurement. */
static double overhead_of(const char *gpu, int bwd, double b, double heads, double seq, double hd)
{
    sim_gpu g;
    sim_err e;
    if (plat_gpu_lookup_info(gpu, &g, NULL, &e))
        return 0;
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = bwd ? SIM_KERNEL_FLASH_BWD : SIM_KERNEL_FLASH_FWD;
    p.batch = (int64_t)b;
    p.m = (int64_t)heads;
    p.n = (int64_t)seq;
    p.k = (int64_t)hd;
    return (bwd ? 3 : 1) * g.launch_s + sim_cost_flash_side(&g, &p);
}

static double eff_of(const double *x, double s)
{
    double emax = 1 / (1 + exp(-x[0])), sh = pow(10, x[1]), g = 0.3 + 2.7 / (1 + exp(-x[2]));
    return emax / (1 + pow(sh / s, g));
}

static int resid(const double *x, double *r, void *user)
{
    flash_data *d = user;
    for (int i = 0; i < d->n; i++)
        r[i] = log(eff_of(x, d->p[i].seq) / d->p[i].eff);
    return 0;
}

/* The rows of one (gpu, implementation, direction, causal) at head dim 128
 * (the papers' figures; bench/gpu/measure.py's table also has 64).  A table
 * of one GPU has no gpu column (table_gpu names it) and calls its
 * implementation "backend". */
static int select_rows_of(val_csv *c, const char *table_gpu, const char *gpu, const char *impl, const char *dir,
                          int causal, double peak, int min, flash_data *d, sim_err *err)
{
    int cg = table_gpu ? -2 : val_csv_col(c, "gpu", err);
    int ci = val_csv_col(c, table_gpu ? "backend" : "implementation", err);
    int cd = val_csv_col(c, "direction", err), cc = val_csv_col(c, "causal", err);
    int cs = val_csv_col(c, "seq", err), ct = val_csv_col(c, "tflops", err), cb = val_csv_col(c, "batch", err);
    int ch = val_csv_col(c, "heads", err), cdim = val_csv_col(c, "head_dim", err);
    if (cg == -1 || ci < 0 || cd < 0 || cc < 0 || cs < 0 || ct < 0 || cb < 0 || ch < 0 || cdim < 0)
        return -1;
    if (table_gpu && strcmp(table_gpu, gpu))
        return sim_errf(err, "internal: a table of %s asked for %s", table_gpu, gpu);
    int bwd = !strcmp(dir, "bwd");
    d->n = 0;
    for (int i = 0; i < val_csv_rows(c) && d->n < 16; i++) {
        double cz, s, t, b, h, hd;
        if ((!table_gpu && strcmp(val_csv_str(c, i, cg), gpu)) || strcmp(val_csv_str(c, i, ci), impl) ||
            strcmp(val_csv_str(c, i, cd), dir))
            continue;
        if (val_csv_num(c, i, cc, &cz, err) < 0 || val_csv_num(c, i, cs, &s, err) < 0 ||
            val_csv_num(c, i, ct, &t, err) < 0 || val_csv_num(c, i, cb, &b, err) < 0 ||
            val_csv_num(c, i, ch, &h, err) < 0 || val_csv_num(c, i, cdim, &hd, err) < 0)
            return -1;
        if ((int)cz != causal || hd != 128)
            continue;
        /* the benchmark's FLOP count (sim_cost_flops' for this shape) and time */
        double f = 4 * b * h * s * s * hd * (causal ? 0.5 : 1) * (bwd ? 2.5 : 1), time = f / (t * 1e12);
        double launch = overhead_of(gpu, bwd, b, h, s, hd);
        if (time <= launch)
            return sim_errf(err, "%s: %s %s seq %.0f: %.3g s is shorter than the launches and side kernels", val_csv_path(c), gpu,
                            impl, s, time);
        d->p[d->n++] = (flash_pt){s, f / (time - launch) / peak, t};
    }
    if (d->n < min)
        return sim_errf(err, "%s: %d rows for %s %s %s causal=%d at head dim 128; expected at least %d",
                        val_csv_path(c), d->n, gpu, impl, dir, causal, min);
    return 0;
}

static int select_rows(val_csv *c, const char *gpu, const char *impl, const char *dir, int causal, double peak,
                       int min, flash_data *d, sim_err *err)
{
    return select_rows_of(c, NULL, gpu, impl, dir, causal, peak, min, d, err);
}

static int fit_curve(flash_data *d, double *x, const char *what, FILE *logf, sim_err *err)
{
    double rms;
    x[0] = 0.5;
    x[1] = 2.5;
    x[2] = 0.0;
    if (val_fit_lm(resid, d, d->n, 3, x, &rms, err))
        return sim_err_prefix(err, "%s: ", what);
    if (logf)
        fprintf(logf, "%s: e_max %.3f, s_half %.0f, g %.2f; rms log error %.3f\n", what, 1 / (1 + exp(-x[0])),
                pow(10, x[1]), 0.3 + 2.7 / (1 + exp(-x[2])), rms);
    return 0;
}

/* Prints measured against modelled for rows fitted or predicted (causal rows
 * are read at s/2). */
static void report(const flash_data *d, const double *x, double scale, int causal, const char *what, FILE *logf)
{
    if (!logf)
        return;
    double sum = 0;
    for (int i = 0; i < d->n; i++) {
        double m = scale * eff_of(x, causal ? d->p[i].seq / 2 : d->p[i].seq);
        sum += fabs(m / d->p[i].eff - 1);
        fprintf(logf, "  %-34s seq %6.0f  measured %5.3f of peak  model %5.3f  %+6.1f %%\n", what, d->p[i].seq,
                d->p[i].eff, m, 100 * (m / d->p[i].eff - 1));
    }
    fprintf(logf, "  %-34s mean absolute error %.1f %%\n", what, 100 * sum / d->n);
}

/* The causal factor over causal rows: the mean of measured / curve(s/2)
 * for the forward; the median for the backward, whose causal kernel at the
 * shortest length departs most from the s/2 reading (a mean there pulls
 * the factor 8 % above the rows at 2-4k, the lengths models train at). */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double causal_factor(const flash_data *d, const double *x, int median)
{
    double r[16], sum = 0;
    for (int i = 0; i < d->n; i++)
        sum += r[i] = d->p[i].eff / eff_of(x, d->p[i].seq / 2);
    if (!median)
        return sum / d->n;
    qsort(r, (size_t)d->n, sizeof r[0], cmp_double);
    return d->n % 2 ? r[d->n / 2] : 0.5 * (r[d->n / 2 - 1] + r[d->n / 2]);
}

/* The curve sampled at s = 2^7 ... 2^17 (its stored points, keyed by
 * log10 s; the benchmark's lengths fall on them) against the stored one. */
static int emit(const char *model, int fa2, int bwd, const double *x, double scale, val_fitted *out, int max)
{
    static char names[16][11][64];
    static int slot = 0;
    sim_gpu g;
    sim_err e;
    if (plat_gpu_lookup_info(model, &g, NULL, &e))
        return 0;
    const sim_curve *c = &(fa2 ? &g.flash2 : &g.flash)->eff[bwd];
    int k = 0, sl = slot++ % 16;
    for (int i = 7; i <= 17 && k < max; i++, k++) {
        double s = pow(2, i);
        snprintf(names[sl][k], sizeof names[sl][k], "%s flash%s_%s[2^%d]", model, fa2 ? "2" : "", bwd ? "bwd" : "fwd", i);
        out[k] = (val_fitted){names[sl][k], scale * eff_of(x, s), sim_curve_eval(c, s), ""};
    }
    return k;
}

/* score_share (sim_flash) of one implementation and direction: the
 * table's non-causal rows at head dims 64 and 128 have the same FLOPs at
 * each sequence length (twice the heads at 64), so the mean ratio of their
 * times, minus 1, is the share of the hd-128 time that doubles at hd 64. */
static int score_share(val_csv *c, const char *impl, const char *dir, double *share, sim_err *err)
{
    int ci = val_csv_col(c, "backend", err), cd = val_csv_col(c, "direction", err);
    int cc = val_csv_col(c, "causal", err), cs = val_csv_col(c, "seq", err), cu = val_csv_col(c, "us", err);
    int cb = val_csv_col(c, "batch", err), ch = val_csv_col(c, "heads", err), cdim = val_csv_col(c, "head_dim", err);
    if (ci < 0 || cd < 0 || cc < 0 || cs < 0 || cu < 0 || cb < 0 || ch < 0 || cdim < 0)
        return -1;
    double sum = 0;
    int n = 0;
    for (int i = 0; i < val_csv_rows(c); i++) {
        double cz, s, t, b, h, hd;
        if (strcmp(val_csv_str(c, i, ci), impl) || strcmp(val_csv_str(c, i, cd), dir))
            continue;
        if (val_csv_num(c, i, cc, &cz, err) < 0 || val_csv_num(c, i, cs, &s, err) < 0 ||
            val_csv_num(c, i, cu, &t, err) < 0 || val_csv_num(c, i, cb, &b, err) < 0 ||
            val_csv_num(c, i, ch, &h, err) < 0 || val_csv_num(c, i, cdim, &hd, err) < 0)
            return -1;
        if (cz != 0 || hd != 64)
            continue;
        for (int j = 0; j < val_csv_rows(c); j++) {
            double cz2, s2, t2, b2, h2, hd2;
            if (strcmp(val_csv_str(c, j, ci), impl) || strcmp(val_csv_str(c, j, cd), dir) ||
                val_csv_num(c, j, cc, &cz2, err) < 0 || val_csv_num(c, j, cs, &s2, err) < 0 ||
                val_csv_num(c, j, cu, &t2, err) < 0 || val_csv_num(c, j, cb, &b2, err) < 0 ||
                val_csv_num(c, j, ch, &h2, err) < 0 || val_csv_num(c, j, cdim, &hd2, err) < 0)
                continue;
            if (cz2 == 0 && hd2 == 128 && s2 == s && b2 * h2 * hd2 == b * h * hd && t2 > 0) {
                sum += t / t2;
                n++;
                break;
            }
        }
    }
    if (n < 3)
        return sim_errf(err, "%s: %d pairs of %s %s rows at head dims 64 and 128 with equal FLOPs; expected at least 3",
                        val_csv_path(c), n, impl, dir);
    *share = sum / n - 1;
    if (!(*share >= 0 && *share < 1))
        return sim_errf(err, "%s: %s %s: hd-64 rows take %.2f x the hd-128 time per FLOP; expected 1 to 2",
                        val_csv_path(c), impl, dir, sum / n);
    return 0;
}

/* One measured card's curves (x of eff_of): cuDNN's fused attention (the
 * GPU's best) and FlashAttention-2, forward and backward, and their causal
 * factors, from its own attention.csv. */
typedef struct card_fit {
    double best[2][3], fa2[2][3];
    double causal_best, causal_fa2;         /* forward */
    double causal_bwd_best, causal_bwd_fa2; /* backward */
    double share_best[2], share_fa2[2];     /* score_share, fwd and bwd */
} card_fit;

static const char *const DIRS[2] = {"fwd", "bwd"};

static int fit_card(const char *data_dir, const val_micro_card *card, card_fit *cf, FILE *logf, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/attention.csv", data_dir, card->dir);
    val_csv *h = val_csv_load(path, err);
    if (!h)
        return -1;
    sim_gpu g;
    if (plat_gpu_lookup_info(card->model, &g, NULL, err)) {
        val_csv_free(h);
        return -1;
    }
    const double peak = g.peak_flops[SIM_DTYPE_BF16];
    const char *m = card->model;
    flash_data d;
    int rc = 0;
    for (int b = 0; b < 2 && !rc; b++) {
        char what[96];
        snprintf(what, sizeof what, "%s cuDNN fused attention %s (measured)", m, DIRS[b]);
        rc = select_rows_of(h, m, m, "cudnn", DIRS[b], 0, peak, 6, &d, err) || fit_curve(&d, cf->best[b], what, logf, err);
        if (!rc)
            report(&d, cf->best[b], 1, 0, what, logf);
        snprintf(what, sizeof what, "%s FlashAttention-2 %s (measured)", m, DIRS[b]);
        rc = rc || select_rows_of(h, m, m, "flash2", DIRS[b], 0, peak, 6, &d, err) ||
             fit_curve(&d, cf->fa2[b], what, logf, err);
        if (!rc)
            report(&d, cf->fa2[b], 1, 0, what, logf);
    }
    /* the causal factors, forward then backward, cuDNN then FA2 */
    static const char *const IMPL[2] = {"cudnn", "flash2"}, *const LABEL[2] = {"cuDNN", "FA2"};
    double *factor[2][2] = {{&cf->causal_best, &cf->causal_fa2}, {&cf->causal_bwd_best, &cf->causal_bwd_fa2}};
    for (int b = 0; b < 2 && !rc; b++)
        for (int f = 0; f < 2 && !rc; f++) {
            const double *x = f ? cf->fa2[b] : cf->best[b];
            rc = select_rows_of(h, m, m, IMPL[f], DIRS[b], 1, peak, 6, &d, err);
            if (!rc) {
                char what[96];
                *factor[b][f] = causal_factor(&d, x, b);
                snprintf(what, sizeof what, "%s %s %s causal", m, LABEL[f], DIRS[b]);
                report(&d, x, *factor[b][f], 1, what, logf);
            }
        }
    for (int b = 0; b < 2 && !rc; b++)
        rc = score_share(h, "cudnn", DIRS[b], &cf->share_best[b], err) ||
             score_share(h, "flash2", DIRS[b], &cf->share_fa2[b], err);
    if (!rc && logf)
        fprintf(logf, "%s score share (hd 64 against 128, equal FLOPs): cuDNN fwd %.3f bwd %.3f, FA2 fwd %.3f bwd %.3f\n",
                m, cf->share_best[0], cf->share_best[1], cf->share_fa2[0], cf->share_fa2[1]);
    val_csv_free(h);
    return rc ? -1 : 0;
}

#define FLASH_MAX_CARDS 4

int val_fit_flash(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    if (val_micro_ncards > FLASH_MAX_CARDS)
        return sim_errf(err, "internal: fit_flash.c takes at most %d measured cards", FLASH_MAX_CARDS);
    card_fit cards[FLASH_MAX_CARDS];
    const card_fit *h100 = NULL; /* the card the FA3 paper's H100 bars are predicted with */
    for (int i = 0; i < val_micro_ncards; i++) {
        if (fit_card(data_dir, &val_micro_cards[i], &cards[i], logf, err))
            return -1;
        if (!strcmp(val_micro_cards[i].model, "H100-SXM"))
            h100 = &cards[i];
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/attention/flash_attention.csv", data_dir);
    val_csv *c = val_csv_load(path, err);
    if (!c)
        return -1;
    flash_data d;
    double fa2[2][3];
    int n = 0, rc = 0;
    for (int b = 0; b < 2 && !rc; b++) {
        char what[96];
        snprintf(what, sizeof what, "FlashAttention-2 shape (FA3 paper, H100) %s", DIRS[b]);
        rc = select_rows(c, "H100-SXM", "FlashAttention-2", DIRS[b], 0, H100_SXM_BF16, 6, &d, err) ||
             fit_curve(&d, fa2[b], what, logf, err);
    }
    /* the FA2 paper's A100 maxima at the figures' longest sequence, then
     * both directions brought to the A100 forward measured by gpu_travel,
     * taken at the full clock (GPU_TRAVEL_CLOCK); the paper has the only
     * backward figure, so the backward keeps its ratio */
    double scale[2] = {FA2_A100_FWD_MAX / eff_of(fa2[0], 16384), FA2_A100_BWD_MAX / eff_of(fa2[1], 16384)};
    double level = 0;
    rc = rc || select_rows(c, "A100-SXM-80GB", "FlashAttention-2", "fwd", 0, A100_BF16, 2, &d, err);
    for (int i = 0; !rc && i < d.n; i++)
        level += d.p[i].eff / GPU_TRAVEL_CLOCK / (scale[0] * eff_of(fa2[0], d.p[i].seq)) / d.n;
    if (!rc && logf)
        fprintf(logf, "A100 at full clock: %.3f of the FA2 paper's maxima (gpu_travel, %d forward rows at %.0f %% "
                "clock)\n", level, d.n, 100 * GPU_TRAVEL_CLOCK);
    scale[0] *= level;
    scale[1] *= level;
    double causal2 = 0;
    rc = rc || select_rows(c, "H100-SXM", "FlashAttention-2", "fwd", 1, H100_SXM_BF16, 6, &d, err);
    if (!rc)
        causal2 = causal_factor(&d, fa2[0], 0);
    if (!rc && logf) {
        fprintf(logf, "causal factor:");
        for (int i = 0; i < val_micro_ncards; i++)
            fprintf(logf, " %.3f (cuDNN, %s), %.3f (FA2, %s),", cards[i].causal_best, val_micro_cards[i].model,
                    cards[i].causal_fa2, val_micro_cards[i].model);
        fprintf(logf, " %.3f (FA2 in the FA3 paper: the defaults)\n", causal2);
        fprintf(logf, "defaults (FlashAttention-2, A100): e_max %.3f fwd, %.3f bwd (FA2's 73 %% / 63 %% at 16k, "
                "at gpu_travel's level, full clock)\n",
                scale[0] / (1 + exp(-fa2[0][0])), scale[1] / (1 + exp(-fa2[1][0])));
        if (!select_rows(c, "A100-SXM-80GB", "FlashAttention-2", "fwd", 0, A100_BF16, 1, &d, err))
            report(&d, fa2[0], scale[0] * GPU_TRAVEL_CLOCK, 0, "A100 FA2 fwd (gpu_travel at its clock, fitted)", logf);
        fprintf(logf, "predicted (not fitted):\n");
        if (!select_rows(c, "A100-SXM-80GB", "FlashAttention-2", "fwd", 1, A100_BF16, 1, &d, err))
            report(&d, fa2[0], scale[0] * GPU_TRAVEL_CLOCK * causal2, 1, "A100 FA2 fwd causal (gpu_travel at its clock)", logf);
        for (int b = 0; h100 && b < 2; b++) {
            char what[64];
            snprintf(what, sizeof what, "H100 FA3 paper %s by the cuDNN curve", DIRS[b]);
            if (!select_rows(c, "H100-SXM", "FlashAttention-3", DIRS[b], 0, H100_SXM_BF16, 1, &d, err))
                report(&d, h100->best[b], 1, 0, what, logf);
            snprintf(what, sizeof what, "H100 FA2 paper bars %s (measured curve)", DIRS[b]);
            if (!select_rows(c, "H100-SXM", "FlashAttention-2", DIRS[b], 0, H100_SXM_BF16, 1, &d, err))
                report(&d, h100->fa2[b], 1, 0, what, logf);
        }
    }
    val_csv_free(c);
    if (rc)
        return -1;
    /* each measured card: its best kernel (cuDNN), then FlashAttention-2
     * itself on Hopper (attn=flash2), as measured */
    for (int i = 0; i < val_micro_ncards; i++) {
        const char *m = val_micro_cards[i].model;
        n += emit(m, 0, 0, cards[i].best[0], 1, out + n, max - n);
        n += emit(m, 0, 1, cards[i].best[1], 1, out + n, max - n);
        n += emit(m, 1, 0, cards[i].fa2[0], 1, out + n, max - n);
        n += emit(m, 1, 1, cards[i].fa2[1], 1, out + n, max - n);
    }
    n += emit("A100-SXM-80GB", 0, 0, fa2[0], scale[0], out + n, max - n);
    n += emit("A100-SXM-80GB", 0, 1, fa2[1], scale[1], out + n, max - n);
    /* per family: the causal factors and the score shares; the defaults
     * (FA2 on Ampere and Ada) take the causal forward of FA2's bars in the
     * FA3 paper and the rest from FA2 measured on the H100 (the same
     * kernels; no other card has FA2's causal backward or hd-64 rows) */
    static char names[2 * FLASH_MAX_CARDS + 1][4][64];
    static const char *const KEY[4] = {"causal", "causal_bwd", "score_share.fwd", "score_share.bwd"};
    for (int i = 0; i <= 2 * val_micro_ncards; i++) {
        int is_default = i == 2 * val_micro_ncards;
        const char *who = is_default ? "A100-SXM-80GB" : val_micro_cards[i / 2].model;
        int is_fa2 = !is_default && i % 2;
        const card_fit *cf = is_default ? h100 : &cards[i / 2];
        if (!cf)
            continue;
        double fitted[4] = {is_default ? causal2 : is_fa2 ? cf->causal_fa2 : cf->causal_best,
                            is_default || is_fa2 ? cf->causal_bwd_fa2 : cf->causal_bwd_best,
                            is_default || is_fa2 ? cf->share_fa2[0] : cf->share_best[0],
                            is_default || is_fa2 ? cf->share_fa2[1] : cf->share_best[1]};
        sim_gpu g;
        sim_err e;
        if (plat_gpu_lookup_info(who, &g, NULL, &e))
            continue;
        const sim_flash *f = is_fa2 ? &g.flash2 : &g.flash;
        double stored[4] = {f->causal[0], f->causal[1], f->score_share[0], f->score_share[1]};
        for (int k = 0; k < 4 && n < max; k++) {
            snprintf(names[i][k], sizeof names[i][k], "%s flash%s %s", who, is_fa2 ? "2" : "", KEY[k]);
            out[n++] = (val_fitted){names[i][k], fitted[k], stored[k], ""};
        }
    }
    return n;
}
