/* kineto.h — a reader for PyTorch-profiler (Kineto) Chrome traces.
 *
 * Reads a trace (.json or .json.gz, through zlib) with cJSON, and keeps a
 * compact list of its GPU kernels, classified as GEMM, NCCL or other:
 *   - GEMM kernels get their shape (m, n, k, batch, dtype) where the trace
 *     recorded shapes: the kernel's launch (cuda_runtime event with the same
 *     correlation id) lies inside an aten::mm / addmm / bmm / baddbmm cpu_op
 *     whose "Input Dims" give the matrices;
 *   - NCCL kernels get collective, message bytes (sim/schedule.h
 *     convention), group size, dtype, algorithm and protocol where the kernel
 *     args carry them (PyTorch >= 2.3 traces: "Collective name", "In msg
 *     nelems", "Group size", "dtype"), and the collective, algorithm and
 *     protocol from the kernel name otherwise; without args, collective and
 *     bytes come from the launching c10d op's "Input Dims" where it records
 *     tensors (alltoall_base_, _allgather_base_, _reduce_scatter_base_, a
 *     single-tensor allreduce_), the group size from the output/input ratio
 *     (gather, scatter) or else the world size (flagged);
 *   - element-wise kernels (PyTorch's elementwise_kernel templates) get the
 *     bytes they read and write where the launching aten op is a pointwise
 *     op the reader knows (add, mul, tanh, copy_, fill_, ...) and recorded
 *     its shapes without broadcasting;
 *   - every kernel gets the time its launch call returned, so a stream's
 *     back-to-back gaps (launch queued before the previous kernel ended:
 *     the GPU, not the host, decided the gap) can be measured;
 * and the ProfilerStep#N step durations.  Trace replay (issue: trace-driven
 * simulation) can build schedules from the same records. */
#ifndef VAL_KINETO_H
#define VAL_KINETO_H

#include <stdint.h>
#include <stdio.h>

#include "sim/error.h"
#include "sim/machine.h"

typedef enum val_kclass {
    VAL_K_OTHER,
    VAL_K_GEMM,
    VAL_K_NCCL,
    VAL_K_COUNT
} val_kclass;

typedef struct val_kernel {
    const char *name;   /* kernel name (owned by the trace) */
    double ts_us, dur_us;
    int stream;
    val_kclass cls;
    /* GEMM: has_shape = 1 when the launching cpu_op recorded shapes */
    int has_shape;
    int64_t m, n, k, batch;
    sim_dtype dtype;
    const char *op;     /* the aten op that launched it, or NULL */
    int op_index;       /* which launch of that op (kernels of one op call share it), -1 = none */
    /* NCCL */
    int coll;           /* sim_coll, -1 = unknown or point-to-point (SendRecv) */
    int algo;           /* sim_algo from the name (RING, TREE), SIM_ALGO_AUTO if not said */
    char proto[8];      /* "LL", "LL128", "SIMPLE" or "" */
    int64_t bytes;      /* message bytes (sim/schedule.h convention), 0 = unknown */
    int group_size;     /* 0 = unknown */
    int nccl_from_op;   /* 1: collective and bytes come from the launching c10d op, not the kernel args */
    int group_is_world; /* 1: group size not recorded, the trace's world size assumed */
    /* element-wise (cls OTHER): bytes read + written by a known pointwise aten
     * op (op names it), elements of its output, and whether the kernel is the
     * contiguous vectorised template (vectorized_elementwise_kernel) */
    int64_t elem_bytes, elem_numel;
    int elem_vectorized;
    double launch_end_us; /* when the launching runtime call returned, -1 = not linked */
} val_kernel;

typedef struct val_kineto val_kineto;

/* Traces larger than this (decompressed) are refused as they are read, so
 * that a gzip bomb stops there and not when memory runs out. */
#define VAL_KINETO_MAX_BYTES ((size_t)1 << 30)

/* Loads a trace.  Errors name the file: unreadable, corrupt gzip, larger
 * than VAL_KINETO_MAX_BYTES, not JSON (sim/json.h: keys given twice, trailing
 * text), no traceEvents, an integer field (ids, ranks, streams, sizes, GEMM
 * dimensions) out of its range, with the event's index. */
val_kineto *val_kineto_load(const char *path, sim_err *err);
/* The same from the trace's text; source names it in errors. */
val_kineto *val_kineto_parse(const char *text, const char *source, sim_err *err);
void val_kineto_free(val_kineto *k);

const char *val_kineto_path(const val_kineto *k);
/* deviceProperties[0].name ("NVIDIA A100-SXM4-80GB"), or "" if absent. */
const char *val_kineto_device(const val_kineto *k);
/* distributedInfo rank and world_size; -1 / 0 when absent. */
int val_kineto_rank(const val_kineto *k);
int val_kineto_world(const val_kineto *k);

int val_kineto_nkernels(const val_kineto *k);
const val_kernel *val_kineto_kernel(const val_kineto *k, int i);
/* Kernels of a class; for GEMM, *with_shape counts those with a shape. */
int val_kineto_count(const val_kineto *k, val_kclass cls, int *with_shape);

/* The stream with the most kernels (the compute stream of a training trace). */
int val_kineto_main_stream(const val_kineto *k);
/* Median gap (us) between consecutive kernels of a stream where the second
 * was launched before the first ended (the stream was busy, so the gap is
 * the device's, not the host's); -1 when the stream has no such pair. */
double val_kineto_busy_gap_us(const val_kineto *k, int stream);

/* Element-wise work of a trace: the vectorised (contiguous) pointwise
 * kernels of the main stream that ran alone (no NCCL kernel on the GPU at
 * the same time), grouped by (op, elements, bytes), with the median
 * duration of each group; sorted by bytes, then op.  Returns the number of
 * groups (*out malloc'd, free() it; out of memory ends the process: sim/alloc.h). */
typedef struct val_pointwise {
    const char *op;            /* static string, "aten::add_" */
    int64_t numel, bytes;
    double median_us;
    int calls;
} val_pointwise;
int val_kineto_pointwise(const val_kineto *k, val_pointwise **out);

/* GEMM work of a trace: every GEMM op call with a shape (the kernels one
 * call launched summed: split-K GEMMs launch two), grouped by (dtype,
 * batch, m, n, k) in that order, with the median over the calls.  Returns
 * the number of shapes (*out malloc'd, free() it; out of memory: sim/alloc.h). */
typedef struct val_gemm_shape {
    const char *op;            /* static string, "aten::addmm" */
    int64_t m, n, k, batch;
    sim_dtype dtype;
    double median_us;
    int calls;
} val_gemm_shape;
int val_kineto_gemms(const val_kineto *k, val_gemm_shape **out);

int val_kineto_nsteps(const val_kineto *k);
double val_kineto_step_us(const val_kineto *k, int i);
const char *val_kineto_step_name(const val_kineto *k, int i);

/* The catalogue model of a trace's device name ("NVIDIA A100-PG509-200" ->
 * "A100-SXM-40GB"), or NULL when the catalogue has no such GPU. */
const char *val_kineto_catalog_gpu(const char *device);

/* What was extracted, for `trainsim validate --trace FILE`. */
void val_kineto_print_summary(const val_kineto *k, FILE *out);

#endif
