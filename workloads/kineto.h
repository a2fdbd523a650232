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
 *   - every kernel gets when its launch call started and returned, and on
 *     which host thread, so a stream's back-to-back gaps (launch queued
 *     before the previous kernel ended: the GPU, not the host, decided the
 *     gap) and the host's launch order can be measured;
 * the memory copies, the host calls that order GPU work (event waits,
 * synchronisations) and the ProfilerStep#N steps.  It lives in workloads/
 * because the trace importer (import.c) builds schedules from these records;
 * validation reads the same records to fit and check the cost model. */
#ifndef WL_KINETO_H
#define WL_KINETO_H

#include <stdint.h>
#include <stdio.h>

#include "sim/error.h"
#include "sim/machine.h"

typedef enum wl_kclass {
    WL_K_OTHER,
    WL_K_GEMM,
    WL_K_NCCL,
    WL_K_COUNT
} wl_kclass;

typedef struct wl_kernel {
    const char *name;   /* kernel name (owned by the trace) */
    double ts_us, dur_us;
    int stream;
    wl_kclass cls;
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
    const char *pg_ranks;  /* kernel args' "Process Group Ranks" ("[0, 1]", global ranks), or NULL */
    const char *in_splits; /* kernel args' "In split size" of an all-to-all ("[4, 4]", elements per
                              member), or NULL when not recorded or even ("[]") */
    int elem_size;         /* bytes per element of the message (kernel args' dtype), 0 = unknown */
    /* element-wise (cls OTHER): bytes read + written by a known pointwise aten
     * op (op names it), elements of its output, and whether the kernel is the
     * contiguous vectorised template (vectorized_elementwise_kernel) */
    int64_t elem_bytes, elem_numel;
    int elem_vectorized;
    /* an element-wise class slower than streaming (sim_mem_class), from the
     * launching aten op (wl_kineto_classed), and the bytes this kernel moves;
     * SIM_MEMC_STREAM / 0 otherwise */
    int mclass;
    int64_t mclass_bytes;
    double launch_end_us; /* when the launching runtime call returned, -1 = not linked */
    double launch_ts_us;  /* when it was called, -1 = not linked */
    int64_t launch_tid;   /* the host thread that launched it */
    int64_t corr;         /* its correlation id (host order of launches), -1 = none */
    int host_op;          /* the innermost host op (wl_kineto_op) around its launch, -1 = none */
    /* point-to-point NCCL (SendRecv kernels of send/recv): the kernel args'
     * "Collective name" send or recv and "Dst Rank"/"Src Rank" (PyTorch >= 2.4) */
    int p2p;              /* WL_P2P_NONE, WL_P2P_SEND, WL_P2P_RECV */
    int peer;             /* the peer's global rank, -1 = not recorded */
} wl_kernel;

enum { WL_P2P_NONE, WL_P2P_SEND, WL_P2P_RECV };

/* A host operator (cat cpu_op or user_annotation, ProfilerStep# excepted):
 * what an execution trace's nodes are joined to (et.h). */
typedef struct wl_host_op {
    const char *name;     /* owned by the trace */
    int64_t tid;
    double ts_us, end_us;
    int64_t ext_id;       /* args "External id", -1 = none */
    int64_t rf_id;        /* args "Record function id" (newer PyTorch: the ET node's rf_id), -1 = none */
    const char *dims;     /* args "Input Dims" as JSON text (owned by the trace), or NULL */
} wl_host_op;

/* A stream-to-stream wait as CUPTI recorded it (cat "cuda_sync", "Stream
 * Wait Event": PyTorch's enable_cuda_sync_events): stream `stream` waited,
 * from ts_us, for the event recorded on `wait_stream` by the runtime call
 * with correlation `record_corr` (so for the work launched on wait_stream
 * before that call). */
typedef struct wl_stream_wait {
    int stream, wait_stream;
    int64_t record_corr;
    double ts_us;
} wl_stream_wait;

/* A host runtime call that orders GPU work: cudaStreamWaitEvent (the next
 * launch of its thread waits for an event recorded on another stream; the
 * traces name neither) or a synchronisation (cudaStreamSynchronize,
 * cudaDeviceSynchronize, cudaEventSynchronize, cudaMemcpy: the host waits
 * for the GPU). */
typedef enum wl_host_kind {
    WL_HOST_WAIT_EVENT,
    WL_HOST_SYNC
} wl_host_kind;
typedef struct wl_host_call {
    wl_host_kind kind;
    int64_t tid;
    double ts_us, end_us;
} wl_host_call;

typedef struct wl_kineto wl_kineto;

/* Traces larger than this (decompressed) are refused as they are read, so
 * that a gzip bomb stops there and not when memory runs out. */
#define WL_KINETO_MAX_BYTES ((size_t)1 << 30)

/* Loads a trace.  Errors name the file: unreadable, corrupt gzip, larger
 * than WL_KINETO_MAX_BYTES, not JSON (sim/json.h: keys given twice, trailing
 * text), no traceEvents, an integer field (ids, ranks, streams, sizes, GEMM
 * dimensions) out of its range, with the event's index. */
wl_kineto *wl_kineto_load(const char *path, sim_err *err);
/* A trace file's text (.json, or .gz through zlib), NUL-terminated, at most
 * WL_KINETO_MAX_BYTES; malloc'd, free() it.  NULL with err naming the file:
 * unreadable, corrupt or truncated gzip, too large, empty.  (et.c reads
 * execution traces through it too.) */
char *wl_kineto_read_text(const char *path, sim_err *err);
/* The same from the trace's text; source names it in errors. */
wl_kineto *wl_kineto_parse(const char *text, const char *source, sim_err *err);
void wl_kineto_free(wl_kineto *k);

/* deviceProperties[0].name ("NVIDIA A100-SXM4-80GB"), or "" if absent. */
const char *wl_kineto_device(const wl_kineto *k);
/* distributedInfo rank and world_size; -1 / 0 when absent. */
int wl_kineto_rank(const wl_kineto *k);
int wl_kineto_world(const wl_kineto *k);

int wl_kineto_nkernels(const wl_kineto *k);
const wl_kernel *wl_kineto_kernel(const wl_kineto *k, int i);
/* Kernels of a class; for GEMM, *with_shape counts those with a shape. */
int wl_kineto_count(const wl_kineto *k, wl_kclass cls, int *with_shape);

/* The stream with the most kernels (the compute stream of a training trace). */
int wl_kineto_main_stream(const wl_kineto *k);
/* Median gap (us) between consecutive kernels of a stream where the second
 * was launched before the first ended (the stream was busy, so the gap is
 * the device's, not the host's); -1 when the stream has no such pair. */
double wl_kineto_busy_gap_us(const wl_kineto *k, int stream);

/* Element-wise work of a trace: the vectorised (contiguous) pointwise
 * kernels of the main stream that ran alone (no NCCL kernel on the GPU at
 * the same time), grouped by (op, elements, bytes), with the median
 * duration of each group; sorted by bytes, then op.  An op over more than
 * 2^31 bytes, which PyTorch may run as several launches each over a part
 * of its tensors, counts as one call: its kernels summed, when all of them
 * qualify.  Returns the number of
 * groups (*out malloc'd, free() it; out of memory ends the process: sim/alloc.h). */
/* An op over more than this many bytes may run as several launches, each
 * over a part of the tensors its shapes describe (PyTorch splits a kernel
 * whose byte offsets do not fit 32 bits). */
#define WL_KINETO_SPLIT_BYTES ((int64_t)INT32_MAX)
typedef struct wl_pointwise {
    const char *op;            /* static string, "aten::add_" */
    int64_t numel, bytes;
    double median_us;
    int calls;
} wl_pointwise;
int wl_kineto_pointwise(const wl_kineto *k, wl_pointwise **out);

/* Element-wise kernels of the classes slower than streaming (sim_mem_class),
 * classified by the aten op that launched them and its arguments: a
 * pointwise op's kernel off the vectorised template (strided arguments:
 * strided; a 16-bit input into a 32-bit result: cast_up), native_layer_norm
 * and its input gradient (norm), sum and the LayerNorm weight and bias
 * gradients (reduce), cat (strided).  The same selection and grouping as
 * wl_kineto_pointwise (main stream, no NCCL kernel beside it, a split op's
 * parts summed), by (bytes, op, class); sorted by bytes, then op.  Returns
 * the number of groups (*out malloc'd, free() it). */
typedef struct wl_classed {
    const char *op; /* static string, "aten::cat" */
    int mclass;     /* sim_mem_class */
    int64_t bytes;  /* read + written by one call */
    double median_us;
    int calls;
} wl_classed;
int wl_kineto_classed(const wl_kineto *k, wl_classed **out);

/* GEMM work of a trace: every GEMM op call with a shape (the kernels one
 * call launched summed: split-K GEMMs launch two), grouped by (dtype,
 * batch, m, n, k) in that order, with the median over the calls.  Returns
 * the number of shapes (*out malloc'd, free() it; out of memory: sim/alloc.h). */
typedef struct wl_gemm_shape {
    const char *op;            /* static string, "aten::addmm" */
    int64_t m, n, k, batch;
    sim_dtype dtype;
    double median_us;
    int calls;
} wl_gemm_shape;
int wl_kineto_gemms(const wl_kineto *k, wl_gemm_shape **out);

/* Memory copies and sets (cat gpu_memcpy / gpu_memset), in start order, as
 * records of class OTHER with their stream, times and launch. */
int wl_kineto_ncopies(const wl_kineto *k);
const wl_kernel *wl_kineto_copy(const wl_kineto *k, int i);
/* Recorded stream-to-stream waits, in time order (none in traces without
 * cuda_sync records). */
int wl_kineto_nwaits(const wl_kineto *k);
const wl_stream_wait *wl_kineto_wait(const wl_kineto *k, int i);
/* Host calls that order GPU work, in start order. */
int wl_kineto_nhost(const wl_kineto *k);
const wl_host_call *wl_kineto_host(const wl_kineto *k, int i);

/* Host operators sorted by (thread, start; an enclosing op before the ops
 * it holds), and the process id they ran in (-1 when none). */
int wl_kineto_nops(const wl_kineto *k);
const wl_host_op *wl_kineto_op(const wl_kineto *k, int i);
int64_t wl_kineto_pid(const wl_kineto *k);

/* The work of an aten op from its arguments' shapes and types, written as a
 * cpu_op's "Input Dims" and "Input type" (dims, types: JSON arrays): a GEMM
 * (aten::mm, addmm, bmm, baddbmm: *gemm = 1, m, n, k, batch, dtype) or a
 * pointwise op of the reader's table without broadcasting (bytes read and
 * written, elements).  Returns 1 when found, 0 when the op is neither or
 * the shapes do not say, -1 with err for a dimension out of range. */
typedef struct wl_op_work {
    int gemm;
    int64_t m, n, k, batch;
    sim_dtype dtype;
    int64_t bytes, numel;
    const char *op;       /* static string */
} wl_op_work;
int wl_kineto_op_work(const char *op, const char *dims, const char *types, const char *source, wl_op_work *w,
                      sim_err *err);
/* Arguments a pointwise op of the reader's table reads (0: fill_/zero_, -1:
 * copy_(self, src) reads src), -2 when the op is not in the table. */
int wl_kineto_pointwise_arity(const char *op);
/* Bytes per element of a dtype as traces spell it ("float", "c10::Half",
 * "BFloat16"), 0 when unknown. */
int wl_kineto_dtype_bytes(const char *type);

int wl_kineto_nsteps(const wl_kineto *k);
/* Start (us, the trace's clock) of the i-th ProfilerStep# annotation. */
double wl_kineto_step_ts_us(const wl_kineto *k, int i);
double wl_kineto_step_us(const wl_kineto *k, int i);
const char *wl_kineto_step_name(const wl_kineto *k, int i);

/* The catalogue model of a trace's device name ("NVIDIA A100-PG509-200" ->
 * "A100-SXM-40GB"), or NULL when the catalogue has no such GPU. */
const char *wl_kineto_catalog_gpu(const char *device);

/* Kernels of class cls (WL_K_NCCL, or WL_K_GEMM with a shape) grouped by
 * their key (NCCL: collective, bytes, group size, kernel name; GEMM: m, n,
 * k, batch, dtype), groups in the order each key was first seen, with the
 * durations' min, median and max.  Returns the number of groups (*out
 * malloc'd, free() it; out of memory: sim/alloc.h).  For `trainsim validate
 * --trace FILE` (validation/val_cli.c prints them). */
typedef struct wl_kgroup {
    const wl_kernel *first; /* the group's first kernel: its key */
    int count;
    double min_us, median_us, max_us;
} wl_kgroup;
int wl_kineto_groups(const wl_kineto *k, wl_kclass cls, wl_kgroup **out);

#endif
