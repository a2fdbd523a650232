/* reshard.h — cross-mesh resharding (AlpaComm, Zhuang et al. MLSys'23,
 * papers.md §6): a tensor sharded one way on a source mesh moved to a
 * destination mesh sharded another way, as between pipeline stages of
 * different shapes. */
#ifndef WL_RESHARD_H
#define WL_RESHARD_H

#include <stdint.h>
#include <stdio.h>

#include "sim/error.h"
#include "sim/machine.h"
#include "sim/schedule.h"
#include "workloads/pipeline.h"

#define WL_RS_MAXDIM 3
#define WL_RS_MAXAX 3

/* A mesh of `nodes` x `gpus` GPUs: GPUs 0..gpus-1 of nodes first_node.. */
typedef struct wl_mesh {
    int first_node, nodes, gpus;
} wl_mesh;

/* A sharding spec in JAX/Alpa's form: each tensor dimension is cut into
 * chunks[d] pieces; the mesh's devices (node-major) are read as a
 * mixed-radix number with digits ax_size[0..nax) (most significant first);
 * digit a gives the chunk index along tensor dimension ax_dim[a], or is a
 * replication axis when ax_dim[a] = -1. */
typedef struct wl_shard_spec {
    int chunks[WL_RS_MAXDIM];
    int nax;
    int ax_size[WL_RS_MAXAX];
    int ax_dim[WL_RS_MAXAX];
} wl_shard_spec;

typedef struct wl_reshard_case {
    char name[32];
    int ndims;
    int64_t shape[WL_RS_MAXDIM];
    int elem_bytes;
    wl_mesh src, dst;
    wl_shard_spec src_spec, dst_spec;
} wl_reshard_case;

/* One unit task: a tile of the union of both tilings, the source devices
 * holding it and the destination devices needing it (global GPU ranks). */
typedef struct wl_rs_task {
    int64_t lo[WL_RS_MAXDIM], hi[WL_RS_MAXDIM];
    int64_t bytes;
    int nsrc, ndst;
    int *src, *dst;
} wl_rs_task;

typedef struct wl_rs_tasks {
    int n;
    wl_rs_task *t;
} wl_rs_tasks;

int wl_reshard_tasks(const wl_reshard_case *c, const sim_machine *m, wl_rs_tasks *out, sim_err *err);
void wl_reshard_tasks_free(wl_rs_tasks *t);
/* The destination tile of global rank r: lo/hi per dimension; 0 if r is not in the destination mesh. */
int wl_reshard_dst_tile(const wl_reshard_case *c, const sim_machine *m, int rank, int64_t *lo, int64_t *hi);

typedef enum wl_rs_impl {
    WL_RS_SENDRECV,          /* one p2p per (unit task, receiver) */
    WL_RS_SENDRECV_ALLGATHER, /* 1/k to each of a host's k receivers, then an intra-host all-gather */
    WL_RS_BROADCAST,         /* one broadcast per unit task, first holder sends */
    WL_RS_BROADCAST_LB_SIZE, /* senders chosen greedily by NIC load */
    WL_RS_BROADCAST_LB_ORDER, /* senders and task order by a bounded depth-first search */
    WL_RS_IMPL_COUNT
} wl_rs_impl;
const char *wl_rs_impl_name(int i);

/* The schedule of one implementation.  nic_bytes (may be NULL) receives, per
 * node, the bytes leaving plus entering it (the engine's ring and chain
 * order: members sorted by node, then rank). */
sim_schedule *wl_reshard_schedule(const wl_reshard_case *c, const sim_machine *m, const wl_rs_tasks *tasks,
                                  wl_rs_impl impl, double *nic_bytes, sim_err *err);

/* Appends one resharding to s (streams prefix+"send"/"recv", or
 * prefix+"bcast"): each rank's part waits for after[rank] (NULL or
 * UINT32_MAX: nothing), and done[rank] (may be NULL) receives each
 * destination rank's last op, for the compute that uses the data. */
int wl_reshard_emit(sim_schedule *s, const sim_machine *m, const wl_rs_tasks *tasks, wl_rs_impl impl,
                    const char *prefix, const uint32_t *after, uint32_t *done, double *nic, sim_err *err);

/* The paper's microbenchmarks (papers.md §6.3; Alpa benchmark/alpa/resharding/suite.py). */
int wl_reshard_suite(wl_reshard_case **out); /* returns the count; caller frees */

/* A synthetic pipeline whose stages sit on different meshes (one node each)
 * with different shardings, so each boundary reshards (Alpa's setting,
 * papers.md §6.2): fixed forward/backward times per micro-batch, the
 * activations and gradients moved by one implementation, in a pipeline
 * order from pipeline.h (1f1b or Alpa's eager 1F1B, whose extra warm-up
 * forwards let a stage's cross-mesh send overlap its next forward). */
typedef struct wl_xmesh_pipe {
    int stages, micro;
    double fwd_s;           /* forward seconds per micro-batch; backward is twice that */
    int64_t rows, cols;     /* activation tensor per micro-batch */
    int elem_bytes;
} wl_xmesh_pipe;
/* Simulated iteration time, or -1 with err set. */
double wl_reshard_pipeline_time(const sim_machine *m, const wl_xmesh_pipe *p, wl_pipeline kind, wl_rs_impl impl,
                                sim_err *err);

/* Simulated seconds of one implementation of case c (tasks from
 * wl_reshard_tasks), or -1 with err set. */
double wl_reshard_time(const wl_reshard_case *c, const sim_machine *m, const wl_rs_tasks *tasks, wl_rs_impl impl,
                       sim_err *err);

/* `trainsim reshard ...` (workloads/reshard_cli.c) */
int wl_reshard_cli_main(int argc, char **argv);

#endif
