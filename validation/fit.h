/* fit.h — calibration of device-level parameters (fid, issue 3).
 *
 * Each fit reads micro-level measurements from validation/data, fits a
 * handful of device numbers with GSL's nonlinear least squares
 * (gsl_multifit_nlinear, trust region Levenberg-Marquardt, finite-difference
 * Jacobian) on relative (log) residuals, and reports the fitted values beside
 * the ones stored in platforms/catalog/ so that `trainsim calibrate --check`
 * (and ctest) fails when the catalogue and the data drift apart.  Which data
 * each fit uses and which it leaves out for prediction is in
 * platforms/README.md (Calibration). */
#ifndef VAL_FIT_H
#define VAL_FIT_H

#include <stdio.h>

#include "sim/error.h"

/* Residual function: x[p] parameters -> r[n] residuals. */
typedef int (*val_fit_fn)(const double *x, double *r, void *user);

/* Minimises sum r^2 from x (updated in place).  Returns 0, or -1 with a
 * message.  *rms = root mean square residual at the solution. */
int val_fit_lm(val_fit_fn f, void *user, int n, int p, double *x, double *rms, sim_err *err);

/* One fitted parameter for the report. */
typedef struct val_fitted {
    const char *name;     /* e.g. "A100-SXM-80GB nccl.base_us.Simple" */
    double value;         /* fitted */
    double stored;        /* in the catalogue (NAN = not stored) */
    const char *unit;
} val_fitted;

/* The fits.  Each fills up to max parameters, returns how many (or -1). */
int val_fit_nccl_a100(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);
int val_fit_nvls_h100(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);

int val_fit_gemm(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);
int val_fit_oases_nic(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);

int val_fit_kernels_3090(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);
/* Memory-bound curves and launch_s of A100/V100/H100/H200 (fit_memory.c). */
int val_fit_memory(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);
/* The rows of a card's memory.csv (c; columns kernel ck, bytes cb, us cu)
 * that measure its optimizer rate (fit_memory.c fit_optimizer_rate): fused
 * AdamW steps above twice the card's L2 that take more than twice the
 * table's fastest step.  Their row indices in rows[0..max); the count, or -1
 * with err set. */
typedef struct val_csv val_csv;
int val_optimizer_rows(const char *model, const val_csv *c, int ck, int cb, int cu, int *rows, int max,
                       sim_err *err);
/* Fused attention (FlashAttention) curves: each measured card (H100, H200)
 * from its own attention table, the catalogue default (FA2 on Ampere) from
 * FA2's figures (validation/fit_flash.c). */
int val_fit_flash(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);
/* The cards this project measured itself with bench/gpu/measure.py: a
 * catalogue model and its folder under validation/data (PROVENANCE.md,
 * h100-micro/ and h200-micro/).  Each card's GEMM curve, FP8 scale,
 * gemm_unaligned and power table (fit_gemm.c), memory curve, shortest
 * kernel, launch gap and element-wise classes (fit_memory.c), attention
 * curves (fit_flash.c) and overlap slowdowns (fit_overlap.c) come from its
 * own folder; groups h100-micro and h200-micro compare it (g_micro.c). */
typedef struct val_micro_card {
    const char *model; /* "H100-SXM" */
    const char *dir;   /* "h100-micro" */
} val_micro_card;
extern const val_micro_card val_micro_cards[];
extern const int val_micro_ncards;
/* The card of catalogue model `model`, or NULL. */
const val_micro_card *val_micro_card_of(const char *model);

/* The card's power state (<card>/duty.csv, fit_gemm.c): per GEMM time
 * share, its rate over the cool one and the mean SM clock. */
#include "val_csv.h"
typedef struct val_power {
    int n;
    double share[8], rate[8], mhz[8];
} val_power;
int val_power_read(val_csv *c, val_power *pt, sim_err *err);
/* A row's power state from its recorded SM clock (the duty rows by clock). */
double val_power_rate_at_clock(const val_power *pt, double mhz);
/* Each measured card's overlap slowdowns from its GEMM-beside-copy rows (fit_overlap.c). */
int val_fit_overlap(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);

/* The four Oases blocks of one layer (attn_fwd, attn_bwd, mlp_fwd, mlp_bwd)
 * at hidden h, TP tp, batch b: one schedule each, the kernels workloads/
 * layer.c emits, in order on rank 0 (validation/oases_blocks.c). */
#include "sim/schedule.h"
int val_oases_blocks_build(int h, int tp, int b, sim_schedule *blk[4], sim_err *err);

/* A built-in cluster with node fields replaced (fit_cluster.c): fields[i]
 * is a key of "node" or "switches[].KEY" (every switch), set to values[i]. */
#include "sim/machine.h"
sim_machine *val_fit_cluster(const char *name, const char *const *fields, const double *values, int n, sim_err *err);
/* The value a built-in cluster stores for such a field (NAN when absent). */
double val_fit_stored(const char *name, const char *field);
/* A fit variable x mapped into (lo, hi) on a log scale, and back. */
double val_fit_bound(double x, double lo, double hi);
double val_fit_unbound(double v, double lo, double hi);
/* val_fit_lm from each of nstarts starting points (starts[k*p + i], values
 * in (lo[i], hi[i]); f maps its x with val_fit_bound), keeping the best:
 * the values in v[p], its rms in *rms.  Least squares over a model with
 * min() bottlenecks has flat directions (a link that never binds), so one
 * start can settle on a local optimum. */
int val_fit_starts(val_fit_fn f, void *user, int n, int p, const double *lo, const double *hi, const double *starts,
                   int nstarts, double *v, double *rms, sim_err *err);
/* on: val_fit_starts uses its first start only (`calibrate --check`, whose
 * first start is the stored values: they must sit at a local optimum; plain
 * `calibrate` tries every start and would show a better one). */
void val_fit_first_start_only(int on);

int val_fit_galvatron(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err);

/* Galvatron's profiled keys (validation/g_galvatron.c): one row of the
 * coefficient table, and its simulation on a machine. */
typedef struct val_galvatron_key {
    char key[16], name[48];
    int world, pp, n, consec, p2p;
    double coe; /* measured ms/MB */
} val_galvatron_key;
struct val_ctx;
int val_galvatron_keys(const struct val_ctx *ctx, val_galvatron_key **out, sim_err *err);
int val_galvatron_coe(const struct val_ctx *ctx, const sim_machine *m, const val_galvatron_key *k, double *coe,
                      sim_err *err);

/* `trainsim calibrate [--data DIR] [--check]`. */
int val_fit_cli_main(int argc, char **argv);

#endif
