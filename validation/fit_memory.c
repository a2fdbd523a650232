/* fit_memory.c — memory-bound efficiency curves, the shortest kernel and
 * the launch gap of the A100 (40 and 80 GB), V100, H100 and H200, and the
 * H100's and H200's element-wise classes and optimizer rate (fit.h).
 *
 * Model (sim/costmodel.c): an element-wise kernel of B bytes read + written
 * lasts max(kernel_min_s, B / (mem_bw x eff(B))), eff(B) = e_max / (1 +
 * B_half / B) (stored in platforms/catalog/gpus.json sampled at log10 B =
 * 3 ... 10), and the stream then waits launch_s before the next kernel.
 *
 * Data (validation/data/, PROVENANCE.md):
 *   - the vectorised pointwise kernels (add, mul, tanh, copy_, fill_, ...)
 *     of the Kineto traces that ran alone on their GPU (wl_kineto_pointwise):
 *     trace_diff/control (A100-SXM-40GB), negative_queue_length_values_check/
 *     rank0 (A100-SXM-80GB), trace_diff/test (V100-SXM2-16GB); bytes from the
 *     launching aten op's shapes, durations as the profiler recorded them;
 *   - BabelStream Copy/Mul/Add/Triad on the Azure ND A100 v4, ND H100 v5 and
 *     ND H200 v5 nodes (hbm/azure_babelstream.csv: 2^25 doubles per array,
 *     BabelStream's default), kernels of 0.5-0.8 GB.
 * launch_s is measured, not fitted: the trace's median back-to-back gap on
 * its main stream (wl_kineto_busy_gap_us: the next kernel was already
 * queued and no NCCL kernel ran, so the gap is the device's).
 * kernel_min_s, e_max and B_half are fitted on the even-indexed points of
 * each GPU (by size); the odd ones are predicted (group kineto-elementwise
 * shows them all, as busy-stream costs: duration + gap).  Kernels whose
 * traffic could be served by the L2 cache (between a quarter and twice its
 * capacity: the traces show up to 1.4x the HBM bandwidth there, consumers
 * reading what the kernel before just wrote) are left out of the fit: the
 * model has no cache, and they would pull e_max above what kernels larger
 * than the cache reach.  They stay in the group, where the simulation is
 * slower than measured.
 *   - H100-SXM and H200: the whole training step of a 350M GPT on the card
 *     that this project recorded (h100-micro/ and h200-micro/
 *     trace_gpt-350m.json.gz: launch gap and pointwise kernels, as for the
 *     A100s; the other models' traces are predictions, group
 *     kineto-elementwise), BabelStream on ND H100 v5 / ND H200 v5 (kept in
 *     the fit beside the card's own kernels, as one more source of large
 *     kernels), and the streaming kernels (copy, add, GELU, fp32->bf16 cast)
 *     of this project's element-wise table on the same card
 *     (<card>/memory.csv: 2^10 ... 2^28 elements, CUDA-graph replays, so no
 *     launch gap in the time), whose small sizes pin the knee and the
 *     shortest kernel that the trace's large kernels cannot;
 *   - the H100-SXM's and H200's element-wise classes (sim_mem_class, catalogue
 *     key memory_class): each class's fraction of the fitted curve, on the
 *     350M trace's classed kernels (wl_kineto_classed: the launching aten op
 *     gives the class) and the table's LayerNorm and RMSNorm rows (norm), the
 *     kernels above twice the L2 only: below it a kernel's fixed cost (one CTA
 *     per row for the norms, a reduction's second pass) and the table's
 *     replays of one buffer, which the L2 holds, set the time, not the rate
 *     the class stands for.  Per class, sorted by bytes, the even-indexed rows
 *     are fitted and the odd ones predicted; the other traces are predictions
 *     (group kineto-elementwise, subsets "H100-SXM classed" and "H200
 *     classed").  The table's softmax and dropout rows are no class: no
 *     generator emits a kernel of theirs (the loss's log-softmax is counted at
 *     the traffic it makes, workloads/gpt.c);
 * A GPU with no trace of its own may take a traced GPU's knee (B_half
 * scaled by the bandwidth ratio: Little's law), shortest kernel and launch
 * gap, and fit only e_max on BabelStream (knee_from): the H200 did so until
 * this project measured one (2026-11-27, h200-micro/). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "workloads/kineto.h"
#include "platforms/catalog.h"
#include "sim/costmodel.h"
#include "val_csv.h"

#define MF_MAX 400

typedef struct mf_pt {
    double bytes, seconds; /* measured kernel duration */
    int timed_alone;       /* 1: timed with a host sync (BabelStream): the launch gap is in the time */
} mf_pt;

/* A kernel of an element-wise class (sim_mem_class) and where it is from. */
typedef struct mf_cpt {
    int mclass;
    double bytes, seconds;
    const char *src; /* the aten op or the table's kernel name: the tie-break of the order */
} mf_cpt;

typedef struct mf_data {
    int n;
    mf_pt p[MF_MAX];
    int nc; /* the classed kernels (a GPU with classes) */
    mf_cpt c[MF_MAX];
    int fit_class; /* the class being fitted (classes_resid) */
    sim_gpu g;
    int fit_knee;         /* 1: kernel_min, e_max and B_half; 0: e_max only */
    double kmin, half;    /* held when fit_knee = 0 */
    double gap;           /* measured launch gap (s), -1 = none */
} mf_data;

/* One GPU's data: which trace, and its L2 capacity (datasheets: A100 40 MB,
 * NVIDIA A100 Tensor Core GPU Architecture whitepaper; V100 6 MB, Tesla
 * V100 GPU Architecture whitepaper; H100 SXM5 50 MB, H100 Tensor Core GPU
 * Architecture whitepaper; H200: the same GH100 die and L2). */
static const struct {
    const char *model, *trace;
    double l2_bytes;
    const char *knee_from; /* a GPU without a trace: the one whose knee, shortest kernel and launch it takes */
    const char *micro;     /* an element-wise table measured on the GPU (bench/gpu/measure.py), or NULL */
    int classes;           /* 1: fit its element-wise classes too */
} MF_GPUS[] = {
    {"A100-SXM-40GB", "kineto-traces/trace_diff/control/control.json.gz", 40e6, NULL, NULL, 0},
    {"A100-SXM-80GB", "kineto-traces/negative_queue_length_values_check/rank0.json.gz", 40e6, NULL, NULL, 0},
    {"V100-SXM2-16GB", "kineto-traces/trace_diff/test/test.json.gz", 6e6, NULL, NULL, 0},
    {"H100-SXM", "h100-micro/trace_gpt-350m.json.gz", 50e6, NULL, "h100-micro/memory.csv", 1},
    {"H200", "h200-micro/trace_gpt-350m.json.gz", 50e6, NULL, "h200-micro/memory.csv", 1},
};
#define MF_NGPUS (int)(sizeof MF_GPUS / sizeof MF_GPUS[0])

static void curve_of(double emax, double half, sim_curve *c)
{
    c->n = 8;
    for (int i = 0; i < 8; i++) {
        c->log10_work[i] = 3 + i;
        c->efficiency[i] = emax / (1 + half / pow(10, 3 + i));
    }
}

static void params(const double *x, const mf_data *d, double *kmin, double *emax, double *half)
{
    *emax = 1 / (1 + exp(-x[0]));
    *kmin = d->fit_knee ? exp(x[1]) * 1e-6 : d->kmin;
    *half = d->fit_knee ? pow(10, x[2]) : d->half;
}

/* The kernel's time as the cost model prices it: its duration, plus the
 * launch gap when the measurement includes it. */
static double duration(const sim_gpu *g, const mf_pt *q, double gap)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ELEMENTWISE;
    p.bytes = (int64_t)q->bytes;
    sim_gpu h = *g;
    h.launch_s = q->timed_alone ? gap : 0;
    return sim_cost_kernel(&h, &p);
}

/* Residuals over the points with index parity `par` (0 = fitted half). */
static int resid_par(const double *x, double *r, const mf_data *d, int par)
{
    sim_gpu g = d->g;
    double emax, half;
    params(x, d, &g.kernel_min_s, &emax, &half);
    curve_of(emax, half, &g.mem_eff);
    int k = 0;
    for (int i = par; i < d->n; i += 2)
        r[k++] = log(duration(&g, &d->p[i], d->gap) / d->p[i].seconds);
    return k;
}

static int resid(const double *x, double *r, void *user)
{
    resid_par(x, r, user, 0);
    return 0;
}

static int cmp_pt(const void *a, const void *b)
{
    const mf_pt *x = a, *y = b;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* The trace's pointwise groups outside the L2 window, and its launch gap. */
static int add_trace(const char *data_dir, const char *rel, double l2, mf_data *d, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    wl_kineto *k = wl_kineto_load(path, err);
    if (!k)
        return -1;
    double gap = wl_kineto_busy_gap_us(k, wl_kineto_main_stream(k));
    wl_pointwise *pw;
    int n = wl_kineto_pointwise(k, &pw);
    wl_classed *c;
    int nc = wl_kineto_classed(k, &c);
    wl_kineto_free(k);
    for (int i = 0; i < nc && d->nc < MF_MAX; i++)
        if (c[i].bytes > 2 * l2)
            d->c[d->nc++] = (mf_cpt){c[i].mclass, (double)c[i].bytes, c[i].median_us * 1e-6, c[i].op};
    free(c);
    if (n < 0)
        return sim_errf(err, "%s: out of memory", rel);
    if (gap < 0 || n < 8) {
        free(pw);
        return sim_errf(err, "%s: too few back-to-back or element-wise kernels to fit a memory curve", rel);
    }
    d->gap = gap * 1e-6;
    for (int i = 0; i < n && d->n < MF_MAX; i++)
        if ((pw[i].bytes < l2 / 16 || pw[i].bytes > 2 * l2) && strcmp(pw[i].op, "aten::fill_") && strcmp(pw[i].op, "aten::zero_"))
            d->p[d->n++] = (mf_pt){(double)pw[i].bytes, pw[i].median_us * 1e-6, 0};
    free(pw);
    return 0;
}

static int add_babelstream(const char *data_dir, const char *model, mf_data *d, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/hbm/azure_babelstream.csv", data_dir);
    val_csv *c = val_csv_load(path, err);
    if (!c)
        return -1;
    int cg = val_csv_col(c, "gpu", err), ca = val_csv_col(c, "arrays", err), cb = val_csv_col(c, "array_bytes", err);
    int ct = val_csv_col(c, "TBps", err);
    int rc = cg < 0 || ca < 0 || cb < 0 || ct < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double a, b, t;
        if (strcmp(val_csv_str(c, i, cg), model))
            continue;
        if (val_csv_num(c, i, ca, &a, err) < 0 || val_csv_num(c, i, cb, &b, err) < 0 ||
            val_csv_num(c, i, ct, &t, err) < 0)
            rc = -1;
        else if (d->n < MF_MAX)
            d->p[d->n++] = (mf_pt){a * b, a * b / (t * 1e12), 1};
    }
    val_csv_free(c);
    return rc;
}

/* A table of bench/gpu/measure.py (data_dir/rel) and its kernel, bytes and
 * us columns; NULL with err set. */
static val_csv *load_table(const char *data_dir, const char *rel, int *ck, int *cb, int *cu, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    val_csv *c = val_csv_load(path, err);
    if (!c)
        return NULL;
    *ck = val_csv_col(c, "kernel", err), *cb = val_csv_col(c, "bytes", err), *cu = val_csv_col(c, "us", err);
    if (*ck < 0 || *cb < 0 || *cu < 0) {
        val_csv_free(c);
        return NULL;
    }
    return c;
}

/* The streaming kernels of a table from bench/gpu/measure.py outside the L2
 * window (the same rule as the traces'): kernel, elements, bytes, us.  The
 * other kernels of the table (norms, softmax, dropout, the optimizer) read
 * or compute more than their counted bytes and are not streaming. */
static int add_micro(const char *data_dir, const char *rel, double l2, mf_data *d, sim_err *err)
{
    int ck, cb, cu;
    val_csv *c = load_table(data_dir, rel, &ck, &cb, &cu, err);
    if (!c)
        return -1;
    int rc = 0;
    static const char *const STREAMING[] = {"copy", "add", "gelu_tanh", "cast_f32_bf16"};
    /* the norms are class norm (the rows above twice the L2) */
    static const char *const NORMS[] = {"layernorm", "rmsnorm"};
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        int stream = 0, norm = -1;
        for (size_t j = 0; j < sizeof STREAMING / sizeof STREAMING[0]; j++)
            stream |= !strcmp(val_csv_str(c, i, ck), STREAMING[j]);
        for (size_t j = 0; j < sizeof NORMS / sizeof NORMS[0]; j++)
            norm = !strcmp(val_csv_str(c, i, ck), NORMS[j]) ? (int)j : norm;
        double b, us;
        if (!stream && norm < 0)
            continue;
        if (val_csv_num(c, i, cb, &b, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0)
            rc = -1;
        else if (stream && (b < l2 / 16 || b > 2 * l2) && d->n < MF_MAX)
            d->p[d->n++] = (mf_pt){b, us * 1e-6, 0};
        else if (norm >= 0 && b > 2 * l2 && d->nc < MF_MAX)
            d->c[d->nc++] = (mf_cpt){SIM_MEMC_NORM, b, us * 1e-6, NORMS[norm]};
    }
    val_csv_free(c);
    return rc;
}

int val_optimizer_rows(const char *model, const val_csv *c, int ck, int cb, int cu, int *rows, int max,
                       sim_err *err)
{
    double l2 = 0, fastest = INFINITY, b, us;
    for (int gi = 0; gi < MF_NGPUS; gi++)
        if (!strcmp(MF_GPUS[gi].model, model))
            l2 = MF_GPUS[gi].l2_bytes;
    if (!(l2 > 0))
        return sim_errf(err, "internal: no L2 size for %s", model);
    for (int i = 0; i < val_csv_rows(c); i++)
        if (!strcmp(val_csv_str(c, i, ck), "adamw_fused_fp32")) {
            if (val_csv_num(c, i, cu, &us, err) < 0)
                return -1;
            fastest = fmin(fastest, us);
        }
    int n = 0;
    for (int i = 0; i < val_csv_rows(c) && n < max; i++)
        if (!strcmp(val_csv_str(c, i, ck), "adamw_fused_fp32")) {
            if (val_csv_num(c, i, cb, &b, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0)
                return -1;
            if (b > 2 * l2 && us > 2 * fastest)
                rows[n++] = i;
        }
    return n;
}

/* The optimizer rate (sim_gpu.opt_rate, catalogue key optimizer_rate):
 * PyTorch's fused AdamW over one fp32 parameter of N elements, 28 bytes an
 * element (parameter, gradient and two moments read; parameter and moments
 * written), as the card's memory.csv times it (adamw_fused_fp32 rows,
 * event timing of opt.step, no CUDA graph).  Only the rows above twice the
 * L2 that take more than twice the table's fastest step (val_optimizer_rows):
 * the step has a fixed cost, its host launching several kernels (the H100's
 * 29 MB and 117 MB rows take 101 and 92 us, against 10 and 38 us at the
 * streaming rate), which hides the rate until the work is well above it.
 * The rate is the geometric mean of the fitted curve's time over the
 * measured one: there, time is proportional to 1 / rate. */
static int fit_optimizer_rate(const char *data_dir, const char *rel, const sim_gpu *fitted, double stored,
                              const char *model, int slot, val_fitted *out, FILE *logf, sim_err *err)
{
    static char names[8][48];
    int ck, cb, cu, rows[64];
    val_csv *c = load_table(data_dir, rel, &ck, &cb, &cu, err);
    if (!c)
        return -1;
    int n = val_optimizer_rows(model, c, ck, cb, cu, rows, 64, err);
    double sum = 0;
    sim_gpu g = *fitted;
    g.launch_s = 0;
    g.opt_rate = 1;
    for (int i = 0; i < n; i++) {
        double b, us;
        val_csv_num(c, rows[i], cb, &b, err); /* read once already by val_optimizer_rows */
        val_csv_num(c, rows[i], cu, &us, err);
        sim_payload p;
        memset(&p, 0, sizeof p);
        p.kind = SIM_OP_COMPUTE;
        p.sub = SIM_KERNEL_OPTIMIZER;
        p.bytes = (int64_t)b;
        sum += log(sim_cost_kernel(&g, &p) / (us * 1e-6));
    }
    val_csv_free(c);
    if (n < 0)
        return -1;
    if (n == 0)
        return sim_errf(err, "%s: no adamw_fused_fp32 row above twice the L2 and the fixed cost to fit the optimizer "
                             "rate on", rel);
    double f = fmin(1, exp(sum / n));
    if (logf)
        fprintf(logf, "%s optimizer rate: %.3f of the memory curve (fused AdamW, %d rows above twice the L2 and twice "
                      "the fastest step)\n", model, f, n);
    snprintf(names[slot], sizeof names[slot], "%s optimizer_rate", model);
    out[0] = (val_fitted){names[slot], f, stored, ""};
    return 1;
}

static int cmp_cpt(const void *a, const void *b)
{
    const mf_cpt *x = a, *y = b;
    if (x->mclass != y->mclass)
        return x->mclass - y->mclass;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return strcmp(x->src, y->src);
}

/* A classed kernel's time at class fraction f: all its bytes of its class,
 * no launch gap (the trace's durations and the table's graph replays). */
static double class_duration(const sim_gpu *g, const mf_cpt *q, double f)
{
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ELEMENTWISE;
    p.bytes = (int64_t)q->bytes;
    p.class_bytes[q->mclass - 1] = p.bytes;
    sim_gpu h = *g;
    h.launch_s = 0;
    h.mem_class[q->mclass] = f;
    return sim_cost_kernel(&h, &p);
}

/* The rows of class d->fit_class with index parity par within the class. */
static int class_resid_par(const double *x, double *r, const mf_data *d, int par)
{
    double f = 1 / (1 + exp(-x[0]));
    int k = 0, idx = 0;
    for (int i = 0; i < d->nc; i++) {
        if (d->c[i].mclass != d->fit_class)
            continue;
        if (idx++ % 2 == par)
            r[k++] = log(class_duration(&d->g, &d->c[i], f) / d->c[i].seconds);
    }
    return k;
}

static int class_resid(const double *x, double *r, void *user)
{
    class_resid_par(x, r, user, 0);
    return 0;
}

static double class_mape(const double *x, const mf_data *d, int par, int *n)
{
    double r[MF_MAX], s = 0;
    int k = class_resid_par(x, r, d, par);
    for (int i = 0; i < k; i++)
        s += fabs(exp(r[i]) - 1);
    *n = k;
    return k ? 100 * s / k : 0;
}

/* Each class's fraction of the GPU's fitted curve (d->g carries it). */
static int fit_classes(mf_data *d, const char *model, int slot, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    static char names[MF_NGPUS][SIM_MEMC_COUNT][48]; /* a GPU's names in its slot of MF_GPUS */
    qsort(d->c, (size_t)d->nc, sizeof d->c[0], cmp_cpt);
    int k = 0;
    for (int c = 1; c < SIM_MEMC_COUNT && k < max; c++) {
        int n = 0;
        for (int i = 0; i < d->nc; i++)
            n += d->c[i].mclass == c;
        if (n < 1)
            return sim_errf(err, "%s: no %s kernel above twice the L2 to fit the class on", model,
                            sim_mem_class_name(c));
        d->fit_class = c;
        double x[1] = {0}, rms;
        if (val_fit_lm(class_resid, d, (n + 1) / 2, 1, x, &rms, err))
            return sim_err_prefix(err, "%s memory_class.%s: ", model, sim_mem_class_name(c));
        double f = 1 / (1 + exp(-x[0]));
        int nf, np;
        double ef = class_mape(x, d, 0, &nf), ep = class_mape(x, d, 1, &np);
        if (logf)
            fprintf(logf,
                    "%s element-wise class %s: %.3f of the memory curve; %d kernels fitted (mean |error| %.1f %%), "
                    "%d predicted (%.1f %%)\n",
                    model, sim_mem_class_name(c), f, nf, ef, np, ep);
        snprintf(names[slot][c], sizeof names[slot][c], "%s memory_class.%s", model, sim_mem_class_name(c));
        out[k++] = (val_fitted){names[slot][c], f, sim_cost_mem_class(&d->g, c), ""};
    }
    return k;
}

static double mean_abs_err(const double *x, const mf_data *d, int par)
{
    double r[MF_MAX], s = 0;
    int k = resid_par(x, r, d, par);
    for (int i = 0; i < k; i++)
        s += fabs(exp(r[i]) - 1);
    return k ? 100 * s / k : 0;
}

/* Fits one GPU; x gets (logit e_max, log kernel_min_us, log10 B_half),
 * from the start x holds.  A knee that settles below the data's smallest
 * kernel is a flat direction, not a fit: every small kernel then sits at
 * the shortest kernel and every large one at the plateau, whatever the knee
 * (the H200 from 10^7 B: its small kernels reach the shortest kernel at
 * 1.5 MB, where the H100's are still on the knee).  The fit then starts
 * again from a knee at 10^8 B and keeps the better of the two. */
static int fit_gpu(mf_data *d, const char *model, double *x, FILE *logf, sim_err *err)
{
    qsort(d->p, (size_t)d->n, sizeof d->p[0], cmp_pt);
    int nfit = (d->n + 1) / 2, np = d->fit_knee ? 3 : 1;
    double rms, x0[3] = {x[0], x[1], x[2]};
    if (val_fit_lm(resid, d, nfit, np, x, &rms, err))
        return sim_err_prefix(err, "%s memory curve: ", model);
    double kmin, emax, half;
    params(x, d, &kmin, &emax, &half);
    if (d->fit_knee && d->n > 0 && half < d->p[0].bytes) {
        double x2[3] = {x0[0], x0[1], 8}, rms2;
        if (val_fit_lm(resid, d, nfit, np, x2, &rms2, err))
            return sim_err_prefix(err, "%s memory curve (from a knee at 10^8 B): ", model);
        if (logf)
            fprintf(logf, "%s memory-bound: the knee from 10^%.0f B settled at 10^%.2f B, below the smallest kernel "
                          "(rms log error %.3f); from 10^8 B: rms %.3f\n",
                    model, x0[2], log10(half), rms, rms2);
        if (rms2 < rms)
            memcpy(x, x2, sizeof x2);
        params(x, d, &kmin, &emax, &half);
    }
    if (logf)
        fprintf(logf,
                "%s memory-bound: e_max %.3f (%.0f GB/s of %.0f), half at 10^%.2f B, shortest kernel %.2f us%s, "
                "launch gap %.2f us; %d kernels fitted (mean |error| %.1f %%), %d predicted (%.1f %%)\n",
                model, emax, emax * d->g.mem_bw / 1e9, d->g.mem_bw / 1e9, log10(half), kmin * 1e6,
                d->fit_knee ? "" : " (knee and both times derived from the same die's)", d->gap * 1e6, nfit,
                mean_abs_err(x, d, 0), d->n - nfit, mean_abs_err(x, d, 1));
    return 0;
}

/* Cards that take a fitted GPU's numbers: the same die and memory type, so
 * the fraction of their own datasheet bandwidth, the shortest kernel and the
 * launch gap carry over (no trace of them in the data). */
static const struct {
    const char *model, *from;
} MF_COPIES[] = {
    {"A100-PCIe-40GB", "A100-SXM-40GB"},
    {"A100-PCIe-80GB", "A100-SXM-80GB"},
    {"V100-SXM2-32GB", "V100-SXM2-16GB"},
};
#define MF_NCOPIES (int)(sizeof MF_COPIES / sizeof MF_COPIES[0])

static int report(const char *model, const mf_data *d, const double *x, val_fitted *out, int max, int slot)
{
    static char names[MF_NGPUS + MF_NCOPIES][10][48];
    double kmin, emax, half;
    params(x, d, &kmin, &emax, &half);
    sim_curve c;
    curve_of(emax, half, &c);
    int k = 0;
    if (k + 2 <= max) {
        snprintf(names[slot][0], sizeof names[slot][0], "%s launch_us", model);
        out[k++] = (val_fitted){names[slot][0], d->gap * 1e6, d->g.launch_s * 1e6, "us"};
        snprintf(names[slot][1], sizeof names[slot][1], "%s kernel_min_us", model);
        out[k++] = (val_fitted){names[slot][1], kmin * 1e6, d->g.kernel_min_s * 1e6, "us"};
    }
    for (int i = 0; i < 8 && k < max; i++, k++) {
        snprintf(names[slot][k], sizeof names[slot][k], "%s memory[%d]", model, 3 + i);
        out[k] = (val_fitted){names[slot][k], c.efficiency[i], sim_curve_eval(&d->g.mem_eff, pow(10, 3 + i)), ""};
    }
    return k;
}

/* Element-wise classes of cards without a measurement of them.  A class's
 * kernels are bound by the SMs (instruction issue and latency: unvectorised
 * loads, one block per row, index arithmetic), not by the HBM: on the H100
 * and the H200, the same GH100 SMs at the same clock over 1.39x the HBM
 * bandwidth, they run at about the same absolute rate (cast_up 1.98 / 2.14
 * TB/s, norm 2.34 / 2.68, reduce 2.06 / 2.64, strided 1.07 / 1.08: their
 * fitted fractions of their plateaus).  So such a card takes the H100's
 * absolute class rates scaled by its SMs x clock, as a fraction of its own
 * fitted plateau (at most 1: never faster than streaming).  SMs and boost
 * clocks: A100 SXM 108 at 1,410 MHz (NVIDIA A100 Tensor Core GPU
 * Architecture whitepaper); H100 SXM5 132 at 1,980 MHz (H100 Tensor Core GPU
 * Architecture whitepaper). */
static const struct {
    const char *model;
    double sm_clock; /* SMs x MHz */
} MF_CLASS_FROM_H100[] = {
    {"A100-SXM-80GB", 108 * 1410.0},
    {"A100-SXM-40GB", 108 * 1410.0},
};
#define MF_NCLASSFROM (int)(sizeof MF_CLASS_FROM_H100 / sizeof MF_CLASS_FROM_H100[0])
#define H100_SM_CLOCK (132 * 1980.0)

static int classes_from_h100(const double *h100_cls, double h100_plateau, const double *plateau, val_fitted *out,
                             int max, FILE *logf, sim_err *err)
{
    static char names[MF_NCLASSFROM][SIM_MEMC_COUNT][48];
    int k = 0;
    for (int i = 0; i < MF_NCLASSFROM; i++) {
        sim_gpu g;
        if (plat_gpu_lookup_info(MF_CLASS_FROM_H100[i].model, &g, NULL, err))
            return -1;
        double scale = MF_CLASS_FROM_H100[i].sm_clock / H100_SM_CLOCK;
        for (int c = 1; c < SIM_MEMC_COUNT && k < max; c++) {
            double f = fmin(1, h100_cls[c] * h100_plateau * scale / plateau[i]);
            if (logf)
                fprintf(logf, "%s element-wise class %s: %.3f of its plateau (the H100's %.2f TB/s x %.3f SMs x clock)\n",
                        MF_CLASS_FROM_H100[i].model, sim_mem_class_name(c), f, h100_cls[c] * h100_plateau / 1e12,
                        scale);
            snprintf(names[i][c], sizeof names[i][c], "%s memory_class.%s", MF_CLASS_FROM_H100[i].model,
                     sim_mem_class_name(c));
            out[k++] = (val_fitted){names[i][c], f, sim_cost_mem_class(&g, c), ""};
        }
    }
    return k;
}

int val_fit_memory(const char *data_dir, val_fitted *out, int max, FILE *logf, sim_err *err)
{
    mf_data *d = calloc(1, sizeof *d);
    if (!d)
        return sim_errf(err, "out of memory");
    int total = 0, rc = 0;
    double kmins[MF_NGPUS] = {0}, halves[MF_NGPUS] = {0}, gaps[MF_NGPUS] = {0};
    /* plateaus (bytes/s) of the fitted curves, the H100's class fractions */
    double plateaus[MF_NGPUS] = {0}, h100_cls[SIM_MEMC_COUNT] = {0}, h100_plateau = 0;
    for (int gi = 0; gi < MF_NGPUS && rc == 0; gi++) {
        const char *model = MF_GPUS[gi].model;
        int from = -1;
        for (int j = 0; MF_GPUS[gi].knee_from && j < gi; j++)
            if (!strcmp(MF_GPUS[j].model, MF_GPUS[gi].knee_from))
                from = j;
        if (!MF_GPUS[gi].trace && from < 0) {
            rc = sim_errf(err, "internal: %s needs a trace or an earlier GPU's knee", model);
            break;
        }
        memset(d, 0, sizeof *d);
        if (plat_gpu_lookup_info(model, &d->g, NULL, err) || add_babelstream(data_dir, model, d, err) ||
            (MF_GPUS[gi].trace && add_trace(data_dir, MF_GPUS[gi].trace, MF_GPUS[gi].l2_bytes, d, err)) ||
            (MF_GPUS[gi].micro && add_micro(data_dir, MF_GPUS[gi].micro, MF_GPUS[gi].l2_bytes, d, err))) {
            rc = -1;
            break;
        }
        d->fit_knee = MF_GPUS[gi].trace != NULL;
        if (from >= 0) {
            sim_gpu f;
            if (plat_gpu_lookup_info(MF_GPUS[from].model, &f, NULL, err)) {
                rc = -1;
                break;
            }
            d->gap = gaps[from];
            d->kmin = kmins[from];
            d->half = halves[from] * d->g.mem_bw / f.mem_bw;
        }
        double x[3] = {1.5, log(5), 7};
        if (fit_gpu(d, model, x, logf, err)) {
            rc = -1;
            break;
        }
        double e;
        params(x, d, &kmins[gi], &e, &halves[gi]);
        gaps[gi] = d->gap;
        plateaus[gi] = e * d->g.mem_bw;
        total += report(model, d, x, out + total, max - total, gi);
        if (MF_GPUS[gi].classes) {
            /* the classes ride on the curve just fitted */
            curve_of(e, halves[gi], &d->g.mem_eff);
            d->g.kernel_min_s = kmins[gi];
            int k = fit_classes(d, model, gi, out + total, max - total, logf, err);
            if (k < 0) {
                rc = -1;
                break;
            }
            if (!strcmp(model, "H100-SXM")) {
                /* each fraction by the class its name gives ("... memory_class.NAME") */
                for (int j = 0; j < k; j++) {
                    const char *dot = strrchr(out[total + j].name, '.');
                    int c = dot ? sim_mem_class_parse(dot + 1) : -1;
                    if (c > 0 && c < SIM_MEMC_COUNT)
                        h100_cls[c] = out[total + j].value;
                }
                for (int c = 1; c < SIM_MEMC_COUNT; c++)
                    if (!(h100_cls[c] > 0))
                        rc = sim_errf(err, "internal: the H100's %s class was not fitted", sim_mem_class_name(c));
                h100_plateau = plateaus[gi];
                if (rc)
                    break;
            }
            total += k;
            sim_gpu cat;
            if (total >= max || plat_gpu_lookup_info(model, &cat, NULL, err) ||
                (k = fit_optimizer_rate(data_dir, MF_GPUS[gi].micro, &d->g, cat.opt_rate, model, gi, out + total,
                                        logf, err)) < 0) {
                rc = total >= max ? sim_errf(err, "internal: too many fitted parameters") : -1;
                break;
            }
            total += k;
        }
        for (int c = 0; c < MF_NCOPIES; c++) {
            if (strcmp(MF_COPIES[c].from, model))
                continue;
            mf_data *cd = calloc(1, sizeof *cd);
            if (!cd || plat_gpu_lookup_info(MF_COPIES[c].model, &cd->g, NULL, err)) {
                free(cd);
                rc = cd ? -1 : sim_errf(err, "out of memory");
                break;
            }
            cd->fit_knee = 1;
            cd->gap = d->gap;
            total += report(MF_COPIES[c].model, cd, x, out + total, max - total, MF_NGPUS + c);
            free(cd);
        }
    }
    if (rc == 0) {
        double plateau[MF_NCLASSFROM] = {0};
        for (int i = 0; i < MF_NCLASSFROM; i++)
            for (int gi = 0; gi < MF_NGPUS; gi++)
                if (!strcmp(MF_GPUS[gi].model, MF_CLASS_FROM_H100[i].model))
                    plateau[i] = plateaus[gi];
        int k = h100_plateau > 0 ? classes_from_h100(h100_cls, h100_plateau, plateau, out + total, max - total, logf, err)
                                 : sim_errf(err, "internal: the H100's classes were not fitted");
        if (k < 0)
            rc = -1;
        else
            total += k;
    }
    free(d);
    return rc ? -1 : total;
}
