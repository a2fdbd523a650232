/* g_kineto.c — groups kineto-gemm and kineto-nccl: kernels of real
 * PyTorch-profiler traces (data/kineto-traces/, read by kineto.c) against
 * the same kernels and collectives simulated on the trace's GPU.
 *
 * kineto-gemm: every GEMM kernel whose launching aten op recorded shapes.
 *   The kernels one op call launched are summed (split-K GEMMs launch two),
 *   and each (GPU, shape, dtype) is compared by the *median* over its calls:
 *   the traces are training runs where GEMMs sometimes share the GPU with
 *   NCCL kernels and clocks vary; the median is the typical call, not the
 *   luckiest or the most disturbed one.  Simulated: the GEMM alone on one GPU
 *   of the trace's catalogue model (sim/costmodel.c through the engine).
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

#include "kineto.h"
#include "platforms/platform.h"
#include "val_groups.h"
#include "val_sim.h"

/* The traces compared, with what PROVENANCE.md says they are. */
static const char *GEMM_TRACES[] = {
    "kineto-traces/trace_diff/control/control.json.gz",                   /* 8x A100 40 GB (PG509-200), TF32 */
    "kineto-traces/trace_diff/test/test.json.gz",                         /* V100-SXM2-16GB */
    "kineto-traces/negative_queue_length_values_check/rank0.json.gz",     /* A100-SXM4-80GB */
};
static const char *NCCL_TRACES[] = {
    "kineto-traces/nccl_parser_config/nccl_data.json.gz", /* rank 0 of 2, A100-PG509-200, NCCL 2.17.1 */
};

/* A one-node machine of `gpus` GPUs of a catalogue model (NVSwitch where the
 * model has it), built through the cluster JSON path users take. */
static sim_machine *node_of(const char *model, int gpus, sim_err *err)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"name\": \"kineto-%s-x%d\", \"nodes\": 1, \"node\": {\"gpu\": \"%s\", \"gpus_per_node\": %d}, "
             "\"fabric\": {\"type\": \"switch\"}}",
             model, gpus, model, gpus);
    return plat_from_json(json, "kineto validation node", err);
}

static val_kineto *load(const val_ctx *ctx, const char *rel, const char **gpu, sim_err *err)
{
    char *path = val_data_path(ctx, rel);
    val_kineto *k = val_kineto_load(path, err);
    free(path);
    if (!k)
        return NULL;
    *gpu = val_kineto_catalog_gpu(val_kineto_device(k));
    if (!*gpu) {
        sim_errf(err, "%s: device \"%s\" is not in the hardware catalogue", rel, val_kineto_device(k));
        val_kineto_free(k);
        return NULL;
    }
    return k;
}

typedef struct call {
    int64_t m, n, k, batch;
    int dtype;
    const char *op; /* static string from kineto.c */
    double us;
} call;

static int cmp_call(const void *a, const void *b)
{
    const call *x = a, *y = b;
#define C(f)                                                                                                           \
    if (x->f != y->f)                                                                                                  \
        return x->f < y->f ? -1 : 1;
    C(dtype) C(batch) C(m) C(n) C(k)
#undef C
    return x->us < y->us ? -1 : x->us > y->us;
}

int val_group_kineto_gemm(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof GEMM_TRACES / sizeof GEMM_TRACES[0]; t++) {
        const char *gpu;
        val_kineto *k = load(ctx, GEMM_TRACES[t], &gpu, err);
        if (!k)
            return -1;
        sim_machine *m = node_of(gpu, 1, err);
        if (!m) {
            val_kineto_free(k);
            return -1;
        }
        /* one entry per op call: the sum of the GEMM kernels it launched */
        int nk = val_kineto_nkernels(k), nc = 0;
        call *calls = calloc((size_t)nk + 1, sizeof *calls);
        int max_op = -1;
        for (int i = 0; i < nk; i++)
            if (val_kineto_kernel(k, i)->op_index > max_op)
                max_op = val_kineto_kernel(k, i)->op_index;
        int *slot = malloc(((size_t)max_op + 2) * sizeof *slot);
        for (int i = 0; i <= max_op; i++)
            slot[i] = -1;
        for (int i = 0; i < nk; i++) {
            const val_kernel *x = val_kineto_kernel(k, i);
            if (x->cls != VAL_K_GEMM || !x->has_shape)
                continue;
            int *sl = &slot[x->op_index];
            if (*sl < 0) {
                *sl = nc++;
                calls[*sl] = (call){x->m, x->n, x->k, x->batch, x->dtype, x->op, 0};
            }
            calls[*sl].us += x->dur_us;
        }
        free(slot);
        val_kineto_free(k);
        k = NULL;
        qsort(calls, (size_t)nc, sizeof *calls, cmp_call);
        int rc = 0;
        for (int i = 0; i < nc && rc == 0;) {
            int j = i;
            while (j < nc && calls[j].m == calls[i].m && calls[j].n == calls[i].n && calls[j].k == calls[i].k &&
                   calls[j].batch == calls[i].batch && calls[j].dtype == calls[i].dtype)
                j++;
            int cnt = j - i;
            double med = cnt % 2 ? calls[i + cnt / 2].us : 0.5 * (calls[i + cnt / 2 - 1].us + calls[i + cnt / 2].us);
            sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_GEMM, .dtype = (uint8_t)calls[i].dtype,
                             .name = -1, .m = calls[i].m, .n = calls[i].n, .k = calls[i].k, .batch = calls[i].batch};
            double sim;
            rc = val_sim_kernel(ctx, m, 0, &p, &sim, err);
            if (rc == 0) {
                char name[128];
                snprintf(name, sizeof name, "%s %s %s %lldx%lldx%lldx%lld (x%d)", gpu,
                         calls[i].op + (strncmp(calls[i].op, "aten::", 6) ? 0 : 6),
                         sim_dtype_name((sim_dtype)calls[i].dtype), (long long)calls[i].batch, (long long)calls[i].m,
                         (long long)calls[i].n, (long long)calls[i].k, cnt);
                double flops = 2.0 * calls[i].m * calls[i].n * calls[i].k * calls[i].batch;
                rc = val_add(out, gpu, name, med * 1e-6, sim, "s", flops, err);
            }
            i = j;
        }
        free(calls);
        sim_machine_free(m);
        val_kineto_free(k);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int val_group_kineto_nccl(const val_ctx *ctx, val_set *out, sim_err *err)
{
    for (size_t t = 0; t < sizeof NCCL_TRACES / sizeof NCCL_TRACES[0]; t++) {
        const char *gpu;
        val_kineto *k = load(ctx, NCCL_TRACES[t], &gpu, err);
        if (!k)
            return -1;
        sim_machine *m = node_of(gpu, 8, err);
        if (!m) {
            val_kineto_free(k);
            return -1;
        }
        int nk = val_kineto_nkernels(k), rc = 0;
        char *done = calloc((size_t)nk, 1);
        for (int i = 0; i < nk && rc == 0; i++) {
            const val_kernel *a = val_kineto_kernel(k, i);
            if (a->cls != VAL_K_NCCL || done[i] || a->coll < 0 || a->bytes <= 0 || a->group_size < 2)
                continue;
            double best = INFINITY;
            int cnt = 0;
            for (int j = i; j < nk; j++) {
                const val_kernel *b = val_kineto_kernel(k, j);
                if (b->cls == VAL_K_NCCL && !done[j] && b->coll == a->coll && b->bytes == a->bytes &&
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
        val_kineto_free(k);
        if (rc < 0)
            return -1;
    }
    return 0;
}
