/* g_micro.c — groups h100-gemm and hbm-stream: vendor-style micro-benchmarks
 * of one GPU (data/gemm/, data/hbm/; PROVENANCE.md) against the same kernel
 * simulated alone on one GPU of that catalogue model.
 *
 * h100-gemm: cuBLASLt FP8 GEMMs on Azure ND H100 v5 and ND H200 v5 (time per
 *   GEMM = 2mnk / TFLOP/s; the benchmark runs them back to back, so the time
 *   includes the launch gap, as the simulator charges it) and stas00's H100
 *   SXM maximum-achievable bf16 and FP8 rows.  Every row is a prediction:
 *   validation/fit_gemm.c fits each card's curve and FP8 scale on this
 *   project's own table of it (h100-micro/, h200-micro/; groups h100-micro
 *   and h200-micro).  Subsets H100-SXM and H200.
 * v100-gemm: DeepBench's tensor-core GEMMs (fp16 inputs, fp32 accumulation)
 *   on an NVIDIA DGX-1 V100 (gemm/deepbench_v100_fp16_mixed.csv), the rows
 *   whose edges are multiples of 8: subset wide (both output edges at least
 *   one 128-wide tile, the shapes of training) and narrow (batch-sized
 *   edges of 16-64, which cuBLAS runs with other kernels).  Every row is a
 *   prediction: the V100's GEMM curve is still the catalogue's prior (its
 *   fp32 scale, fitted on a trace's small SIMT GEMMs, is defined against
 *   that curve: fit_gemm.c), so this group says how far the prior is.
 * hbm-stream: BabelStream Copy, Mul, Add and Triad on ND A100 v4, ND H100 v5
 *   and ND H200 v5 (2^25 doubles per array, BabelStream's default): an
 *   element-wise kernel of arrays x 268 MB.  validation/fit_memory.c fits
 *   on Copy and Add (A100 with its Kineto kernels), Mul and Triad are
 *   predicted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "platforms/catalog.h"
#include "val_csv.h"
#include "val_groups.h"
#include "val_sim.h"

static const struct {
    const char *gpu, *csv;
} GEMM_TABLES[] = {
    {"H100-SXM", "gemm/azure_nd_h100_v5_gemm_cublaslt_fp8.csv"},
    {"H200", "gemm/azure_nd_h200_v5_gemm_cublaslt_fp8.csv"},
};

static int gemm_case(const val_ctx *ctx, const sim_machine *m, const char *gpu, const char *what, double mm,
                     double nn, double kk, sim_dtype dt, double tflops, val_set *out, sim_err *err)
{
    sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .dtype = (uint8_t)dt, .name = -1,
                     .m = (int64_t)mm, .n = (int64_t)nn, .k = (int64_t)kk, .batch = 1};
    double sim, F = 2 * mm * nn * kk;
    if (val_sim_kernel(ctx, m, 0, &p, &sim, err) < 0)
        return -1;
    char name[128];
    snprintf(name, sizeof name, "%s %s %s %.0fx%.0fx%.0f (%.1f TFLOP/s)", gpu, what, sim_dtype_name(dt), mm, nn, kk,
             tflops);
    return val_add(out, gpu, name, F / (tflops * 1e12), sim, "s", F, err);
}

static int mamf_rows(const val_ctx *ctx, const sim_machine *m, val_set *out, sim_err *err)
{
    val_csv *c = val_csv_load_data(ctx, "gemm/stas00_mamf_bf16_fp8.csv", err);
    if (!c)
        return -1;
    int ca = val_csv_col(c, "accelerator", err), cd = val_csv_col(c, "dtype", err);
    int cm = val_csv_col(c, "mamf_tflops", err), cs = val_csv_col(c, "best_shape_MxNxK", err);
    int rc = ca < 0 || cd < 0 || cm < 0 || cs < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double t, mm, nn, kk;
        if (strcmp(val_csv_str(c, i, ca), "NVIDIA H100 SXM"))
            continue;
        sim_dtype dt = strcmp(val_csv_str(c, i, cd), "bf16") ? SIM_DTYPE_FP8 : SIM_DTYPE_BF16;
        if (val_csv_num(c, i, cm, &t, err) < 0 || sscanf(val_csv_str(c, i, cs), "%lfx%lfx%lf", &mm, &nn, &kk) != 3)
            rc = sim_errf(err, "stas00_mamf_bf16_fp8.csv: H100 row %d: expected TFLOP/s and an MxNxK shape", i + 1);
        else
            rc = gemm_case(ctx, m, "H100-SXM", "MAMF", mm, nn, kk, dt, t, out, err);
    }
    val_csv_free(c);
    return rc;
}

int val_group_h100_gemm(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof GEMM_TABLES / sizeof GEMM_TABLES[0]; t++) {
        sim_machine *m = val_sim_node(GEMM_TABLES[t].gpu, 1, err);
        val_csv *c = m ? val_csv_load_data(ctx, GEMM_TABLES[t].csv, err) : NULL;
        int rc = c ? 0 : -1;
        int cm = rc ? -1 : val_csv_col(c, "m", err), cn = rc ? -1 : val_csv_col(c, "n", err);
        int ck = rc ? -1 : val_csv_col(c, "k", err), ct = rc ? -1 : val_csv_col(c, "tflops", err);
        if (cm < 0 || cn < 0 || ck < 0 || ct < 0)
            rc = -1;
        for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
            double mm, nn, kk, tf;
            if (val_csv_num(c, i, cm, &mm, err) < 0 || val_csv_num(c, i, cn, &nn, err) < 0 ||
                val_csv_num(c, i, ck, &kk, err) < 0 || val_csv_num(c, i, ct, &tf, err) < 0)
                rc = -1;
            else
                rc = gemm_case(ctx, m, GEMM_TABLES[t].gpu, "cuBLASLt", mm, nn, kk, SIM_DTYPE_FP8, tf, out, err);
        }
        if (rc == 0 && t == 0)
            rc = mamf_rows(ctx, m, out, err);
        val_csv_free(c);
        sim_machine_free(m);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int val_group_v100_gemm(const val_ctx *ctx, val_set *out, sim_err *err)
{
    sim_machine *m = val_sim_node("V100-SXM2-32GB", 1, err);
    val_csv *c = m ? val_csv_load_data(ctx, "gemm/deepbench_v100_fp16_mixed.csv", err) : NULL;
    int rc = c ? 0 : -1;
    int cm = rc ? -1 : val_csv_col(c, "m", err), cn = rc ? -1 : val_csv_col(c, "n", err);
    int ck = rc ? -1 : val_csv_col(c, "k", err), ct = rc ? -1 : val_csv_col(c, "ms", err);
    int ca = rc ? -1 : val_csv_col(c, "a_t", err), cb = rc ? -1 : val_csv_col(c, "b_t", err);
    if (cm < 0 || cn < 0 || ck < 0 || ct < 0 || ca < 0 || cb < 0)
        rc = -1;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double mm, nn, kk, ms, sim;
        if (val_csv_num(c, i, cm, &mm, err) < 0 || val_csv_num(c, i, cn, &nn, err) < 0 ||
            val_csv_num(c, i, ck, &kk, err) < 0 || val_csv_num(c, i, ct, &ms, err) < 0 || !(ms > 0)) {
            rc = rc ? rc : sim_errf(err, "deepbench_v100_fp16_mixed.csv: row %d: expected m, n, k and ms > 0", i + 1);
            break;
        }
        if (fmod(mm, 8) != 0 || fmod(nn, 8) != 0 || fmod(kk, 8) != 0)
            continue;
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .dtype = SIM_DTYPE_FP16, .name = -1,
                         .m = (int64_t)mm, .n = (int64_t)nn, .k = (int64_t)kk, .batch = 1};
        if ((rc = val_sim_kernel(ctx, m, 0, &p, &sim, err)) < 0)
            break;
        double F = 2 * mm * nn * kk;
        char name[128];
        snprintf(name, sizeof name, "V100 fp16 %.0fx%.0fx%.0f %s%s (%.1f TFLOP/s)", mm, nn, kk, val_csv_str(c, i, ca),
                 val_csv_str(c, i, cb), F / (ms * 1e-3) / 1e12);
        rc = val_add(out, mm >= 128 && nn >= 128 ? "wide" : "narrow", name, ms * 1e-3, sim, "s", F, err);
    }
    val_csv_free(c);
    sim_machine_free(m);
    return rc;
}

int val_group_hbm_stream(const val_ctx *ctx, val_set *out, sim_err *err)
{
    val_csv *c = val_csv_load_data(ctx, "hbm/azure_babelstream.csv", err);
    if (!c)
        return -1;
    int cg = val_csv_col(c, "gpu", err), ck = val_csv_col(c, "kernel", err), ca = val_csv_col(c, "arrays", err);
    int cb = val_csv_col(c, "array_bytes", err), ct = val_csv_col(c, "TBps", err);
    int rc = cg < 0 || ck < 0 || ca < 0 || cb < 0 || ct < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double a, b, t, sim;
        const char *gpu = val_csv_str(c, i, cg);
        if (val_csv_num(c, i, ca, &a, err) < 0 || val_csv_num(c, i, cb, &b, err) < 0 ||
            val_csv_num(c, i, ct, &t, err) < 0) {
            rc = -1;
            break;
        }
        sim_machine *m = val_sim_node(gpu, 1, err);
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .name = -1, .bytes = (int64_t)(a * b)};
        rc = m ? val_sim_kernel(ctx, m, 0, &p, &sim, err) : -1;
        sim_machine_free(m);
        if (rc == 0) {
            char name[96];
            snprintf(name, sizeof name, "%s %s (%.0f MB, %.2f TB/s)", gpu, val_csv_str(c, i, ck), a * b / 1e6, t);
            rc = val_add(out, gpu, name, a * b / (t * 1e12), sim, "s", a * b, err);
        }
    }
    val_csv_free(c);
    return rc;
}

/* One of the card's tables (rel: its path under the data, for messages; 256 bytes). */
static val_csv *card_csv(const val_ctx *ctx, const val_micro_card *card, const char *file, char rel[256],
                         sim_err *err)
{
    snprintf(rel, 256, "%s/%s", card->dir, file);
    return val_csv_load_data(ctx, rel, err);
}

/* h100-micro and h200-micro: this project's own measurement of one H100
 * SXM5 (h100-micro/) and of one H200 (h200-micro/) with bench/gpu/measure.py
 * (PROVENANCE.md), each row simulated alone on one GPU of that catalogue
 * model, whose curves are fitted on the card's own tables (val_micro_cards).
 * Subsets:
 *   gemm-fitted / gemm-predicted: the bf16 products whose edges are
 *     multiples of 8, ordered by FLOPs, even-indexed (fitted by
 *     validation/fit_gemm.c) and odd-indexed (predicted); fp8: the FP8 rows
 *     (the even ones fit the FP8 scale);
 *   gemm-unaligned: products with an edge that is not a multiple of 8, which
 *     cuBLAS runs with other kernels; the model has no separate path for
 *     them (listed so that the size of that miss is on record);
 *   attn-cudnn / attn-flash2: SDPA's cuDNN and FlashAttention-2 backends,
 *     forward and backward, causal or not, head dims 64 and 128 (the
 *     non-causal hd-128 forward and backward rows and the causal hd-128
 *     forward rows are fitted by validation/fit_flash.c; the hd-64 and
 *     causal backward rows are predictions);
 *   elementwise: the streaming kernels (copy, add, GELU, fp32->bf16 cast)
 *     outside the L2 window fit the memory curve (validation/fit_memory.c);
 *     those inside it, softmax and dropout are predictions; LayerNorm and
 *     RMSNorm run as class norm, whose fraction the rows above twice the L2
 *     fit with the 350M trace's norm kernels (half of them; the smaller
 *     rows, one CTA per row, sit at a fixed cost the class does not model).
 * The GEMM and element-wise rows are CUDA-graph replays: a row is the
 * kernel with no launch gap, so the simulated time loses the GPU's launch_s;
 * the attention rows were timed eagerly, gaps included, as simulated.  A
 * GEMM row is simulated at the power state the card was in when it ran
 * (its recorded SM clock, through duty.csv: fit_gemm.c), the rest cool.
 *   duty: the power model itself: duty.csv's GEMM interleaved with copies
 *     at 20-100 % GEMM time share, ten cycles simulated on one GPU with
 *     its power table (the engine's tensor load), the GEMM's time against
 *     the measured median. */
static int micro_gemm_rows(const val_ctx *ctx, const val_micro_card *card, const sim_machine *m, val_set *out,
                           sim_err *err)
{
    char rel[256];
    val_csv *c = card_csv(ctx, card, "gemm.csv", rel, err);
    if (!c)
        return -1;
    int cs = val_csv_col(c, "set", err), cl = val_csv_col(c, "layout", err), cd = val_csv_col(c, "dtype", err);
    int cm = val_csv_col(c, "m", err), cn = val_csv_col(c, "n", err), ck = val_csv_col(c, "k", err);
    int cu = val_csv_col(c, "us", err), cz = val_csv_col(c, "sm_mhz", err);
    int rc = cs < 0 || cl < 0 || cd < 0 || cm < 0 || cn < 0 || ck < 0 || cu < 0 || cz < 0 ? -1 : 0;
    int nr = val_csv_rows(c);
    val_power pt;
    val_csv *dc = rc ? NULL : card_csv(ctx, card, "duty.csv", rel, err);
    if (!dc || val_power_read(dc, &pt, err))
        rc = -1;
    val_csv_free(dc);
    /* the aligned bf16 rows' rank by FLOPs (ties in file order), as fit_gemm.c orders them */
    double *flops = calloc((size_t)nr + 1, sizeof *flops);
    if (!flops)
        rc = sim_errf(err, "out of memory");
    for (int i = 0; rc == 0 && i < nr; i++) {
        double mm, nn, kk;
        if (val_csv_num(c, i, cm, &mm, err) < 0 || val_csv_num(c, i, cn, &nn, err) < 0 ||
            val_csv_num(c, i, ck, &kk, err) < 0)
            rc = -1;
        else
            flops[i] = mm * nn * kk;
    }
    double launch = m->gpus[m->gpu_model[0]].launch_s;
    for (int i = 0; rc == 0 && i < nr; i++) {
        double mm, nn, kk, us, sim, mhz;
        const char *dt = val_csv_str(c, i, cd);
        int fp8 = !strcmp(dt, "fp8");
        if (val_csv_num(c, i, cm, &mm, err) < 0 || val_csv_num(c, i, cn, &nn, err) < 0 ||
            val_csv_num(c, i, ck, &kk, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0 ||
            val_csv_num(c, i, cz, &mhz, err) < 0) {
            rc = -1;
            break;
        }
        int aligned = fmod(mm, 8) == 0 && fmod(nn, 8) == 0 && fmod(kk, 8) == 0;
        int rank = 0;
        for (int j = 0; aligned && j < nr; j++) {
            double mj, nj, kj;
            if (j == i || strcmp(val_csv_str(c, j, cd), dt) || val_csv_num(c, j, cm, &mj, err) < 0 ||
                val_csv_num(c, j, cn, &nj, err) < 0 || val_csv_num(c, j, ck, &kj, err) < 0)
                continue;
            if (fmod(mj, 8) == 0 && fmod(nj, 8) == 0 && fmod(kj, 8) == 0 &&
                (flops[j] < flops[i] || (flops[j] == flops[i] && j < i)))
                rank++;
        }
        const char *subset = fp8 ? "fp8" : !aligned ? "gemm-unaligned" : rank % 2 == 0 ? "gemm-fitted" : "gemm-predicted";
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .name = -1, .m = (int64_t)mm,
                         .n = (int64_t)nn, .k = (int64_t)kk, .batch = 1,
                         .dtype = (uint8_t)(fp8 ? SIM_DTYPE_FP8 : SIM_DTYPE_BF16)};
        if (val_sim_kernel(ctx, m, 0, &p, &sim, err) < 0) {
            rc = -1;
            break;
        }
        char name[160];
        snprintf(name, sizeof name, "%s %s %s %.0fx%.0fx%.0f (%.0f TFLOP/s)", val_csv_str(c, i, cs),
                 val_csv_str(c, i, cl), dt, mm, nn, kk, 2 * flops[i] / us / 1e6);
        rc = val_add(out, subset, name, us * 1e-6, (sim - launch) / val_power_rate_at_clock(&pt, mhz), "s",
                     2 * flops[i], err);
    }
    free(flops);
    val_csv_free(c);
    return rc;
}

static int micro_attention_rows(const val_ctx *ctx, const val_micro_card *card, const sim_machine *m, val_set *out,
                                sim_err *err)
{
    char rel[256];
    val_csv *c = card_csv(ctx, card, "attention.csv", rel, err);
    if (!c)
        return -1;
    int cb = val_csv_col(c, "backend", err), cd = val_csv_col(c, "direction", err), cc = val_csv_col(c, "causal", err);
    int ch = val_csv_col(c, "head_dim", err), cs = val_csv_col(c, "seq", err), cn = val_csv_col(c, "batch", err);
    int chs = val_csv_col(c, "heads", err), cu = val_csv_col(c, "us", err);
    int rc = cb < 0 || cd < 0 || cc < 0 || ch < 0 || cs < 0 || cn < 0 || chs < 0 || cu < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double causal, hd, s, b, heads, us, sim;
        if (val_csv_num(c, i, cc, &causal, err) < 0 || val_csv_num(c, i, ch, &hd, err) < 0 ||
            val_csv_num(c, i, cs, &s, err) < 0 || val_csv_num(c, i, cn, &b, err) < 0 ||
            val_csv_num(c, i, chs, &heads, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0) {
            rc = -1;
            break;
        }
        const char *be = val_csv_str(c, i, cb), *dir = val_csv_str(c, i, cd);
        int cudnn = !strcmp(be, "cudnn"), bwd = !strcmp(dir, "bwd");
        if (!cudnn && strcmp(be, "flash2")) {
            rc = sim_errf(err, "%s: row %d: backend \"%s\"; expected cudnn or flash2", rel, i + 2, be);
            break;
        }
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = bwd ? SIM_KERNEL_FLASH_BWD : SIM_KERNEL_FLASH_FWD, .name = -1,
                         .dtype = SIM_DTYPE_BF16, .batch = (int64_t)b, .m = (int64_t)heads, .n = (int64_t)s,
                         .k = (int64_t)hd, .tag = causal != 0, .algo = (uint8_t)(cudnn ? SIM_ATTN_BEST : SIM_ATTN_FA2)};
        if (val_sim_kernel(ctx, m, 0, &p, &sim, err) < 0) {
            rc = -1;
            break;
        }
        char name[128], subset[32];
        snprintf(name, sizeof name, "%s %s%s hd %.0f seq %.0f", be, dir, causal != 0 ? " causal" : "", hd, s);
        snprintf(subset, sizeof subset, "attn-%s", be);
        rc = val_add(out, subset, name, us * 1e-6, sim, "s", s, err);
    }
    val_csv_free(c);
    return rc;
}

static int micro_elementwise_rows(const val_ctx *ctx, const val_micro_card *card, const sim_machine *m, val_set *out,
                                  sim_err *err)
{
    char rel[256];
    val_csv *c = card_csv(ctx, card, "memory.csv", rel, err);
    if (!c)
        return -1;
    int ck = val_csv_col(c, "kernel", err), cb = val_csv_col(c, "bytes", err), cu = val_csv_col(c, "us", err);
    int ce = val_csv_col(c, "elements", err);
    int rc = ck < 0 || cb < 0 || cu < 0 || ce < 0 ? -1 : 0;
    double launch = m->gpus[m->gpu_model[0]].launch_s;
    /* subset optimizer: the fused AdamW steps the optimizer rate is fitted on (val_optimizer_rows: the
     * smaller ones are the step's fixed host cost) */
    int opt_rows[64], nopt = rc ? 0 : val_optimizer_rows(card->model, c, ck, cb, cu, opt_rows, 64, err);
    if (nopt < 0)
        rc = -1;
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double bytes, us, el, sim;
        const char *k = val_csv_str(c, i, ck);
        if (!strcmp(k, "adamw_fused_fp32")) {
            int used = 0;
            for (int j = 0; j < nopt; j++)
                used |= opt_rows[j] == i;
            if (!used)
                continue;
            if (val_csv_num(c, i, cb, &bytes, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0 ||
                val_csv_num(c, i, ce, &el, err) < 0) {
                rc = -1;
                break;
            }
            sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_OPTIMIZER, .name = -1, .m = (int64_t)el,
                             .bytes = (int64_t)bytes, .dtype = SIM_DTYPE_FP32};
            if (val_sim_kernel(ctx, m, 0, &p, &sim, err) < 0) {
                rc = -1;
                break;
            }
            char name[96];
            snprintf(name, sizeof name, "fused AdamW %.0f parameters (%.3g GB)", el, bytes / 1e9);
            rc = val_add(out, "optimizer", name, us * 1e-6, sim - launch, "s", bytes, err);
            continue;
        }
        if (!strncmp(k, "tiny_", 5))
            continue; /* launch costs: not one streaming kernel of counted bytes */
        if (val_csv_num(c, i, cb, &bytes, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0 ||
            val_csv_num(c, i, ce, &el, err) < 0) {
            rc = -1;
            break;
        }
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .name = -1, .bytes = (int64_t)bytes};
        if (!strcmp(k, "layernorm") || !strcmp(k, "rmsnorm"))
            p.class_bytes[SIM_MEMC_NORM - 1] = p.bytes; /* a row normalisation: class norm */
        if (val_sim_kernel(ctx, m, 0, &p, &sim, err) < 0) {
            rc = -1;
            break;
        }
        char name[96];
        snprintf(name, sizeof name, "%s %.0f el (%.3g MB)", k, el, bytes / 1e6);
        rc = val_add(out, "elementwise", name, us * 1e-6, sim - launch, "s", bytes, err);
    }
    val_csv_free(c);
    return rc;
}

static int micro_duty_rows(const val_ctx *ctx, const val_micro_card *card, sim_machine *m, val_set *out,
                           sim_err *err)
{
    char rel[256];
    val_csv *c = card_csv(ctx, card, "duty.csv", rel, err);
    if (!c)
        return -1;
    int cs = val_csv_col(c, "gemm_share", err), cg = val_csv_col(c, "gemms_per_cycle", err);
    int cc = val_csv_col(c, "copies_per_cycle", err), cu = val_csv_col(c, "gemm_us_median", err);
    int rc = cs < 0 || cg < 0 || cc < 0 || cu < 0 ? -1 : 0;
    sim_gpu info; /* the catalogue's power table: the machine's GPUs are cool (val_sim_node) */
    if (rc == 0 && plat_gpu_lookup_info(card->model, &info, NULL, err))
        rc = -1;
    sim_gpu *g = &m->gpus[m->gpu_model[0]];
    g->power_n = info.power_n;
    memcpy(g->power_load, info.power_load, sizeof g->power_load);
    memcpy(g->power_rate, info.power_rate, sizeof g->power_rate);
    const sim_payload gemm = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .name = -1, .m = 8192, .n = 8192,
                              .k = 4096, .batch = 1, .dtype = SIM_DTYPE_BF16};
    const sim_payload copy = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .name = -1,
                              .bytes = (int64_t)2 << 30}; /* 1 GiB read, 1 GiB written */
    double t_copy = 0;
    if (rc == 0 && val_sim_kernel(ctx, m, 0, &copy, &t_copy, err) < 0)
        rc = -1;
    enum { CYCLES = 10 };
    for (int i = 0; rc == 0 && i < val_csv_rows(c); i++) {
        double share, ng, nc, us;
        if (val_csv_num(c, i, cs, &share, err) < 0 || val_csv_num(c, i, cg, &ng, err) < 0 ||
            val_csv_num(c, i, cc, &nc, err) < 0 || val_csv_num(c, i, cu, &us, err) < 0) {
            rc = -1;
            break;
        }
        if (!(ng >= 1 && nc >= 0 && ng + nc <= 100)) {
            rc = sim_errf(err, "%s: row %d: expected 1 to 100 kernels a cycle", rel, i + 2);
            break;
        }
        sim_schedule *s = sim_sched_new(1);
        uint32_t st = sim_sched_stream(s, 0, "compute");
        sim_payload pg = gemm, pc = copy;
        uint32_t ig = sim_sched_payload(s, &pg), ic = sim_sched_payload(s, &pc);
        for (int cyc = 0; cyc < CYCLES; cyc++)
            for (int k = 0; k < (int)(ng + nc); k++)
                sim_sched_add(s, st, k < (int)ng ? ig : ic, -1, SIM_NO_TAGS, NULL, 0);
        sim_result r;
        rc = val_sim_run(ctx, s, m, &r, err);
        sim_sched_free(s);
        if (rc)
            break;
        double per_gemm = (r.rank[0].end_s - CYCLES * nc * t_copy) / (CYCLES * ng);
        sim_result_free(&r);
        char name[96];
        snprintf(name, sizeof name, "8192x8192x4096 bf16 at %.0f %% GEMM time share", 100 * share);
        rc = val_add(out, "duty", name, us * 1e-6, per_gemm, "s", share, err);
    }
    val_csv_free(c);
    return rc;
}

static int micro_group(const val_ctx *ctx, const char *model, val_set *out, sim_err *err)
{
    const val_micro_card *card = val_micro_card_of(model);
    if (!card)
        return sim_errf(err, "internal: %s is not a measured card (val_micro_cards)", model);
    sim_machine *m = val_sim_node(card->model, 1, err);
    if (!m)
        return -1;
    int rc = micro_gemm_rows(ctx, card, m, out, err);
    rc = rc ? rc : micro_attention_rows(ctx, card, m, out, err);
    rc = rc ? rc : micro_elementwise_rows(ctx, card, m, out, err);
    rc = rc ? rc : micro_duty_rows(ctx, card, m, out, err);
    sim_machine_free(m);
    return rc;
}

int val_group_h100_micro(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return micro_group(ctx, "H100-SXM", out, err);
}

int val_group_h200_micro(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return micro_group(ctx, "H200", out, err);
}
