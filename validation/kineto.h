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

int val_kineto_nsteps(const val_kineto *k);
double val_kineto_step_us(const val_kineto *k, int i);
const char *val_kineto_step_name(const val_kineto *k, int i);

/* The catalogue model of a trace's device name ("NVIDIA A100-PG509-200" ->
 * "A100-SXM-40GB"), or NULL when the catalogue has no such GPU. */
const char *val_kineto_catalog_gpu(const char *device);

/* What was extracted, for `trainsim validate --trace FILE`. */
void val_kineto_print_summary(const val_kineto *k, FILE *out);

#endif
