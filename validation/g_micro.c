/* g_micro.c — groups h100-gemm and hbm-stream: vendor-style micro-benchmarks
 * of one GPU (data/gemm/, data/hbm/; PROVENANCE.md) against the same kernel
 * simulated alone on one GPU of that catalogue model.
 *
 * h100-gemm: cuBLASLt FP8 GEMMs on Azure ND H100 v5 and ND H200 v5 (time per
 *   GEMM = 2mnk / TFLOP/s; the benchmark runs them back to back, so the time
 *   includes the launch gap, as the simulator charges it) and stas00's H100
 *   SXM maximum-achievable bf16 and FP8 rows.  validation/fit_gemm.c fits the
 *   H100's FP8 plateau on the even-indexed H100 rows and the FP8 MAMF row
 *   (subset H100-SXM); the odd rows, the bf16 MAMF row and every H200 row
 *   (the H200 takes the H100's curve: subset H200) are predictions.
 * hbm-stream: BabelStream Copy, Mul, Add and Triad on ND A100 v4, ND H100 v5
 *   and ND H200 v5 (2^25 doubles per array, BabelStream's default): an
 *   element-wise kernel of arrays x 268 MB.  validation/fit_memory.c fits
 *   on Copy and Add (A100 with its Kineto kernels), Mul and Triad are
 *   predicted. */
#include <string.h>

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
