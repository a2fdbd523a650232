/* et.h — PyTorch execution traces (ExecutionTraceObserver JSON, the host
 * operator graph Chakra's converter reads) and their join to Kineto traces.
 *
 * A Kineto trace says when every kernel ran but, in older PyTorch, little
 * about the operators that launched them: no output shapes, no all-to-all
 * splits, no process-group ranks, no peer of a send or receive.  The
 * execution trace (ET) of the same rank and step records exactly that for
 * every host operator.  The reader keeps, per node: id, parent, rf_id,
 * thread, name, the inputs' shapes and types (Kineto's "Input Dims" /
 * "Input type" form, so kineto.c's shape rules read them), the bytes of
 * each input argument and of the outputs, and for record_param_comms the
 * collective, its sizes, splits, peer and process group.  Both schemas are
 * read: 1.0.x (flat input_shapes / input_types) and 1.1.x-chakra (inputs
 * {values, shapes, types}, attrs, "## process_group:init ##" records).
 * The join (import_et.c) links ET nodes to the trace's host ops and adds
 * what the ET knows to the kernels those ops launched. */
#ifndef WL_ET_H
#define WL_ET_H

#include <stdint.h>

#include "kineto.h"
#include "sim/error.h"

typedef struct wl_et wl_et;

typedef struct wl_et_node {
    int64_t id, parent, rf_id, tid;
    const char *name;
    const char *in_dims, *in_types; /* JSON text, Kineto's form; NULL when none */
    int nargs;
    const double *arg_bytes;        /* [nargs]: bytes of the tensors of each input argument, 0 for non-tensors */
    double out_bytes;               /* bytes of every output tensor */
    int nreads, nwrites;            /* the GPU storages its tensor inputs and outputs live in */
    const int *reads, *writes;      /* dense storage indices 0..wl_et_nstorages() - 1 */
    /* record_param_comms (comm = 1) */
    int comm;
    char coll[24];                  /* "all_to_allv", "allreduce", "send", "recv", ... */
    int elem_size;                  /* bytes per element, 0 = unknown */
    int64_t in_nelems;              /* elements sent, -1 = unknown */
    const char *in_splits;          /* "[96, 224, ...]" elements per member, NULL = none/even */
    int64_t peer;                   /* its rank argument (send: destination, recv: source, within the group), -1 */
    int pg;                         /* process group (wl_et_group), -1 = unknown */
    int64_t rank_start, rank_stride, pg_size; /* global ranks start + i*stride, -1 = not recorded */
} wl_et_node;

/* Loads an execution trace (.json or .json.gz).  Errors name the file:
 * unreadable, corrupt or truncated gzip, not JSON, no "nodes" array, a node
 * without name or id, an integer out of range (with the node's index). */
wl_et *wl_et_load(const char *path, sim_err *err);
wl_et *wl_et_parse(const char *text, const char *source, sim_err *err);
void wl_et_free(wl_et *et);

const char *wl_et_schema(const wl_et *et);
int64_t wl_et_pid(const wl_et *et); /* -1 when not recorded */
int wl_et_nnodes(const wl_et *et);
const wl_et_node *wl_et_node_at(const wl_et *et, int i); /* sorted by id */
const wl_et_node *wl_et_find(const wl_et *et, int64_t id);
int wl_et_nstorages(const wl_et *et);
/* The global ranks of a record_param_comms node's group: written to
 * ranks[0..n), n returned; 0 when the ET does not say (1.0.x schemas), -1
 * when it says something impossible (a rank out of 0..max-1 or more than
 * max ranks). */
int wl_et_group_ranks(const wl_et *et, const wl_et_node *n, int *ranks, int max);
/* A string kept as long as the ET (the join's split and group lists). */
const char *wl_et_keep(wl_et *et, const char *s);

/* What a join supplied (the import summary prints it). */
typedef struct wl_et_stats {
    int linked;    /* host ops of the trace joined to ET nodes */
    int by_rf_id;  /* 1: by "Record function id"; 0: by order on each host thread */
    int shapes;    /* kernels that gained a GEMM shape or element-wise bytes */
    int splits;    /* all-to-alls that gained their per-member sizes */
    int groups;    /* collectives whose process-group ranks the ET recorded */
    int peers;     /* send/recv kernels whose peer the ET gave */
    int deps;      /* cross-stream dependencies added from the ET's data flow (import.c counts them) */
} wl_et_stats;

/* Joins the ET of one rank to its Kineto trace (import_et.c): nodes to
 * host ops by rf_id where the trace records "Record function id", else by
 * order of the ops on each host thread (the ET records every op a thread
 * ran, in rf_id order).  Returns copies of the trace's kernels
 * ([wl_kineto_nkernels], free() it; strings owned by et) with shapes,
 * element-wise bytes, all-to-all splits, process groups and send/recv
 * peers the trace lacks, and in *producer ([nk], free() it) for each kernel
 * the kernel that wrote a tensor it reads (the last kernel launched under
 * the ET op that last wrote the storage of one of its op's inputs before
 * it), -1 for none.  NULL with err naming both files: an ET of another
 * process (its pid), no thread of the trace running the ET's ops in order or
 * no matching rf_id, an op whose recorded input shapes differ (another
 * step), an all-to-all whose splits do not add up to the kernel's size. */
wl_kernel *wl_et_join(wl_et *et, const char *et_path, const wl_kineto *t, const char *trace_path, int nranks,
                      wl_et_stats *st, int **producer, sim_err *err);

#endif
