/* g_kineto.c — groups kineto-gemm and kineto-nccl: kernels of real
 * PyTorch-profiler traces (data/kineto-traces/, read by kineto.c) against
 * the same kernels and collectives simulated on the trace's GPU.
 *
 * kineto-gemm: every GEMM kernel whose launching aten op recorded shapes.
 *   The kernels one op call launched are summed (split-K GEMMs launch two),
 *   and each (GPU, shape, dtype) is compared by the *median* over its calls:
 *   the traces are training runs where GEMMs sometimes share the GPU with
 *   NCCL kernels and clocks vary; the median is the typical call, not the
 *   luckiest or the most disturbed one.  The trace's median back-to-back gap
 *   is added (wl_kineto_busy_gap_us), as in kineto-elementwise: a kernel's
 *   busy-stream cost, what the simulator charges (duration, then launch_s).
 *   Simulated: the GEMM alone on one GPU of the trace's catalogue model
 *   (sim/costmodel.c through the engine).  The H100 traces' GEMMs are
 *   cuBLASLt nvjet kernels launched through the driver API (kineto.c links
 *   them); a split-K call's cublasLt::splitKreduce_kernel is not a GEMM
 *   kernel and is not in the sum, as the A100 traces' splitKreduce is not.
 *
 * kineto-elementwise: the vectorised pointwise kernels (add, mul, tanh,
 *   copy_, fill_, ...) of the same traces that ran alone on their GPU
 *   (wl_kineto_pointwise), median duration per (op, elements, bytes), plus
 *   the trace's median back-to-back gap: the busy-stream cost of the kernel,
 *   which is what the simulator charges (duration, then launch_s).
 *   Simulated: an element-wise payload of the op's bytes alone on one GPU.
 *   The A100/V100 memory curves, shortest kernel and launch gap come from
 *   these kernels (validation/fit_memory.c: even-indexed sizes fitted, odd
 *   ones predicted; kernels the L2 cache could serve are not fitted and show
 *   the cache's speed-up as a negative error).  An op over more than 2^31
 *   bytes that PyTorch launched in parts (the GPT logits' fill_ and copy_)
 *   is one case of its parts summed (wl_kineto_pointwise).
 *
 *   Subsets "H100-SXM classed" and "H200 classed": the H100 and H200 steps'
 *   element-wise kernels of the classes slower than streaming
 *   (wl_kineto_classed: bf16 -> fp32 copies and fp32 + bf16 adds, LayerNorm
 *   and its gradients, bias-gradient sums, cat and permuted copies), each
 *   simulated with all its bytes of its class, so at the card's fitted
 *   fraction (fit_memory.c: its 350M trace's
 *   kernels above twice the L2, half of them; the rest predicted).
 *
 * Subsets of both: one per catalogue GPU.  The H100-SXM and H200 subsets
 * are this project's own single-GPU GPT steps (h100-micro/: seven models,
 * h200-micro/: three of them); no GEMM curve is fitted on them, and only
 * the 350M trace's element-wise kernels take part in a memory fit (half of
 * them).
 *
 * kineto-nccl: every NCCL kernel whose args carry collective, element count,
 *   dtype and group size (PyTorch >= 2.3 traces).  A collective kernel starts
 *   when this rank launches it and ends when the slowest peer has done its
 *   part, so its duration includes waiting for peers that arrive later; the
 *   *minimum* over the calls of one (collective, bytes, group size) is the
 *   call where the peers were already there, i.e. the transfer itself, which
 *   is what the simulation of the collective alone predicts.  Simulated on
 *   one NVSwitch node of the trace's GPU model (the traces do not record
 *   the interconnect; A100 SXM modules sit on NVSwitch boards), members
 *   0..g-1, with the algorithm the kernel name gives (RING / TREE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/kineto.h"
#include "platforms/platform.h"
#include "val_groups.h"
#include "val_sim.h"

/* This project's own H100 SXM5 steps (h100-micro/, PyTorch 2.11, bf16
 * autocast, one GPU, no NCCL): one training step of each GPT of steps.csv.
 * The H100 curves are fitted on h100-micro's micro tables, never on these. */
#define H100_STEPS                                                                                                     \
    "h100-micro/trace_gpt-125m.json.gz", "h100-micro/trace_gpt-350m.json.gz", "h100-micro/trace_gpt-760m.json.gz",     \
        "h100-micro/trace_gpt-1.3b.json.gz", "h100-micro/trace_gpt-2.7b.json.gz",                              \
        "h100-micro/trace_gpt-h4096-l8.json.gz", "h100-micro/trace_gpt-h6144-l4.json.gz"
/* This project's own H200 steps (h200-micro/): three of the same GPTs.  The
 * H200 curves are fitted on h200-micro's micro tables and, for the memory
 * curve and the element-wise classes, half of the 350M trace's kernels
 * (fit_memory.c), as the H100's. */
#define H200_STEPS                                                                                                     \
    "h200-micro/trace_gpt-350m.json.gz", "h200-micro/trace_gpt-1.3b.json.gz", "h200-micro/trace_gpt-h4096-l8.json.gz"

/* The traces compared, with what PROVENANCE.md says they are. */
static const char *GEMM_TRACES[] = {
    "kineto-traces/trace_diff/control/control.json.gz",                   /* 8x A100 40 GB (PG509-200), TF32 */
    "kineto-traces/trace_diff/test/test.json.gz",                         /* V100-SXM2-16GB */
    "kineto-traces/negative_queue_length_values_check/rank0.json.gz",     /* A100-SXM4-80GB */
    H100_STEPS,
    H200_STEPS,
};
static const char *ELEM_TRACES[] = {
    "kineto-traces/trace_diff/control/control.json.gz",               /* A100-SXM-40GB */
    "kineto-traces/negative_queue_length_values_check/rank0.json.gz", /* A100-SXM-80GB */
    "kineto-traces/trace_diff/test/test.json.gz",                     /* V100-SXM2-16GB */
    H100_STEPS,
    H200_STEPS,
};
/* The traces whose classed kernels are cases too: the H100 and H200 steps,
 * where the classes are fitted (fit_memory.c).  The A100 and V100 traces' classed
 * kernels (LayerNorm, bias-gradient sums) are small and none lies above
 * twice the L2, where a class's rate is fitted: their GPUs keep the
 * streaming rate for every class. */
#define ELEM_FIRST_CLASSED 3
static const char *NCCL_TRACES[] = {
    "kineto-traces/nccl_parser_config/nccl_data.json.gz", /* rank 0 of 2, A100-PG509-200, NCCL 2.17.1 */
};

static wl_kineto *load(const val_ctx *ctx, const char *rel, const char **gpu, sim_err *err)
{
    char *path = val_data_path(ctx, rel);
    wl_kineto *k = wl_kineto_load(path, err);
    free(path);
    if (!k)
        return NULL;
    *gpu = wl_kineto_catalog_gpu(wl_kineto_device(k));
    if (!*gpu) {
        sim_errf(err, "%s: device \"%s\" is not in the hardware catalogue", rel, wl_kineto_device(k));
        wl_kineto_free(k);
        return NULL;
    }
    return k;
}

int val_group_kineto_gemm(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof GEMM_TRACES / sizeof GEMM_TRACES[0]; t++) {
        const char *gpu;
        wl_kineto *k = load(ctx, GEMM_TRACES[t], &gpu, err);
        if (!k)
            return -1;
        sim_machine *m = val_sim_node(gpu, 1, err);
        if (!m) {
            wl_kineto_free(k);
            return -1;
        }
        double gap = wl_kineto_busy_gap_us(k, wl_kineto_main_stream(k));
        if (gap < 0)
            gap = 0;
        wl_gemm_shape *calls;
        int nc = wl_kineto_gemms(k, &calls), rc = 0;
        wl_kineto_free(k);
        if (nc < 0) {
            sim_machine_free(m);
            return sim_errf(err, "%s: out of memory", GEMM_TRACES[t]);
        }
        for (int i = 0; i < nc && rc == 0; i++) {
            double med = calls[i].median_us;
            int cnt = calls[i].calls;
            sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .dtype = (uint8_t)calls[i].dtype,
                             .name = -1, .m = calls[i].m, .n = calls[i].n, .k = calls[i].k, .batch = calls[i].batch};
            double sim;
            rc = val_sim_kernel(ctx, m, 0, &p, &sim, err);
            if (rc == 0) {
                char name[128];
                snprintf(name, sizeof name, "%s %s %s %lldx%lldx%lldx%lld (x%d)", gpu,
                         calls[i].op + (strncmp(calls[i].op, "aten::", 6) ? 0 : 6), sim_dtype_name(calls[i].dtype), (long long)calls[i].batch, (long long)calls[i].m,
                         (long long)calls[i].n, (long long)calls[i].k, cnt);
                double flops = 2.0 * calls[i].m * calls[i].n * calls[i].k * calls[i].batch;
                rc = val_add(out, gpu, name, (med + gap) * 1e-6, sim, "s", flops, err);
            }
        }
        free(calls);
        sim_machine_free(m);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The trace's classed element-wise kernels (wl_kineto_classed), subset
 * "<GPU> classed": each an element-wise payload whose bytes are all of its
 * class, against its median plus the gap. */
static int classed_cases(const val_ctx *ctx, const char *rel, const sim_machine *m, const char *gpu, double gap,
                         val_set *out, sim_err *err)
{
    if (!m)
        return -1;
    char *path = val_data_path(ctx, rel);
    wl_kineto *k = wl_kineto_load(path, err);
    free(path);
    if (!k)
        return -1;
    wl_classed *c;
    int n = wl_kineto_classed(k, &c), rc = 0;
    wl_kineto_free(k);
    char subset[32];
    snprintf(subset, sizeof subset, "%s classed", gpu);
    for (int i = 0; i < n && rc == 0; i++) {
        sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .name = -1, .bytes = c[i].bytes};
        p.class_bytes[c[i].mclass - 1] = c[i].bytes;
        double sim;
        rc = val_sim_kernel(ctx, m, 0, &p, &sim, err);
        if (rc == 0) {
            char name[128];
            snprintf(name, sizeof name, "%s %s %s %.3g MB (x%d)", gpu, sim_mem_class_name(c[i].mclass),
                     c[i].op + (strncmp(c[i].op, "aten::", 6) ? 0 : 6), c[i].bytes / 1e6, c[i].calls);
            rc = val_add(out, subset, name, (c[i].median_us + gap) * 1e-6, sim, "s", (double)c[i].bytes, err);
        }
    }
    free(c);
    return rc;
}

int val_group_kineto_elementwise(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof ELEM_TRACES / sizeof ELEM_TRACES[0]; t++) {
        const char *gpu;
        wl_kineto *k = load(ctx, ELEM_TRACES[t], &gpu, err);
        if (!k)
            return -1;
        double gap = wl_kineto_busy_gap_us(k, wl_kineto_main_stream(k));
        wl_pointwise *pw;
        int n = wl_kineto_pointwise(k, &pw), rc = 0;
        wl_kineto_free(k);
        if (n < 0)
            return sim_errf(err, "%s: out of memory", ELEM_TRACES[t]);
        if (gap < 0)
            gap = 0;
        sim_machine *m = val_sim_node(gpu, 1, err);
        for (int i = 0; m && i < n && rc == 0; i++) {
            sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .name = -1,
                             .bytes = pw[i].bytes};
            double sim;
            rc = val_sim_kernel(ctx, m, 0, &p, &sim, err);
            if (rc == 0) {
                char name[128];
                snprintf(name, sizeof name, "%s %s %lld el, %.3g MB (x%d)", gpu,
                         pw[i].op + (strncmp(pw[i].op, "aten::", 6) ? 0 : 6), (long long)pw[i].numel,
                         pw[i].bytes / 1e6, pw[i].calls);
                rc = val_add(out, gpu, name, (pw[i].median_us + gap) * 1e-6, sim, "s", (double)pw[i].bytes, err);
            }
        }
        free(pw);
        if (t >= ELEM_FIRST_CLASSED)
            rc = rc ? rc : classed_cases(ctx, ELEM_TRACES[t], m, gpu, gap, out, err);
        if (!m)
            return -1;
        sim_machine_free(m);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int val_group_kineto_nccl(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof NCCL_TRACES / sizeof NCCL_TRACES[0]; t++) {
        const char *gpu;
        wl_kineto *k = load(ctx, NCCL_TRACES[t], &gpu, err);
        if (!k)
            return -1;
        sim_machine *m = val_sim_node(gpu, 8, err);
        if (!m) {
            wl_kineto_free(k);
            return -1;
        }
        int nk = wl_kineto_nkernels(k), rc = 0;
        char *done = calloc((size_t)nk, 1);
        for (int i = 0; i < nk && rc == 0; i++) {
            const wl_kernel *a = wl_kineto_kernel(k, i);
            if (a->cls != WL_K_NCCL || done[i] || a->coll < 0 || a->bytes <= 0 || a->group_size < 2)
                continue;
            double best = INFINITY;
            int cnt = 0;
            for (int j = i; j < nk; j++) {
                const wl_kernel *b = wl_kineto_kernel(k, j);
                if (b->cls == WL_K_NCCL && !done[j] && b->coll == a->coll && b->bytes == a->bytes &&
                    b->group_size == a->group_size && b->algo == a->algo) {
                    done[j] = 1;
                    cnt++;
                    best = fmin(best, b->dur_us);
                }
            }
            if (a->group_size > m->ngpus) {
                rc = sim_errf(err, "%s: a %d-member collective does not fit the %d-GPU node", NCCL_TRACES[t],
                              a->group_size, m->ngpus);
                break;
            }
            int ranks[64];
            for (int r = 0; r < a->group_size && r < 64; r++)
                ranks[r] = r;
            double sim;
            rc = val_sim_collective_algo(ctx, m, (sim_coll)a->coll, (sim_algo)a->algo, ranks, a->group_size, a->bytes,
                                         &sim, err);
            if (rc == 0) {
                char name[128];
                snprintf(name, sizeof name, "%s %s %lld B, %d GPUs, %s/%s (min of %d)", gpu, sim_coll_name(a->coll),
                         (long long)a->bytes, a->group_size, sim_algo_name(a->algo), a->proto[0] ? a->proto : "-", cnt);
                rc = val_add(out, NULL, name, best * 1e-6, sim, "s", (double)a->bytes, err);
            }
        }
        free(done);
        sim_machine_free(m);
        wl_kineto_free(k);
        if (rc < 0)
            return -1;
    }
    return 0;
}
