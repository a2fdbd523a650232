/* engine_internal.h — state shared by engine.c and collectives.c.  Private
 * to sim/: the one place that owns the SimGrid engine of the process. */
#ifndef SIM_ENGINE_INTERNAL_H
#define SIM_ENGINE_INTERNAL_H

#include <simgrid/forward.h>

#include "engine.h"
#include "outfile.h"

#define SIM_TRACE_XFER_TID 1000000u

typedef struct sim_ivl {
    double a, b;
} sim_ivl;

typedef struct sim_ivlist {
    sim_ivl *v;
    uint32_t n, cap;
} sim_ivlist;

typedef struct sim_engine {
    const sim_schedule *s;
    const sim_machine *m;
    sim_options opt;
    sim_result *res;
    sg_host_t *hosts;       /* per rank */
    uint32_t *pos;          /* per stream: operations finished */
    uint8_t *has_waiters;   /* per stream */
    sg_cond_t *cond;        /* per stream */
    sg_mutex_t mutex;
    uint8_t *depended;      /* bit per op: some op depends on it */
    double *kernel_s;       /* per (payload, GPU model): kernel seconds, <0 = not yet */
    sim_ivlist *compute, *comm; /* per rank */
    double *mem, *mem_kind; /* per rank, per (rank, kind) */
    struct sim_comm_rt *comms;
    int *nccl_node;         /* per rank: the node NCCL's topology sees, its multi-node NVLink domain (collectives.c) */
    int *comm_busy, *kern_busy; /* per rank: collectives/sends, compute kernels in flight */
    sg_exec_t *bg;          /* per rank: the interference load while communication is in flight */
    FILE *trace, *memlog;   /* the Chrome trace and the memory CSV, or NULL */
    sim_outfile trace_out, memlog_out;
    char **qname;           /* per string id: the name as a quoted JSON string */
    uint32_t nqname;
    uint64_t flows, execs;
} sim_engine;

/* The engine's state is private to engine.c (a static there, reset by every
 * sim_run); collectives.c reaches it through sim_engine_state(), spelled E
 * so that its code reads as the engine's. */
sim_engine *sim_engine_state(void);
#define E (*sim_engine_state())

int sim_coll_setup(sim_err *err);
void sim_coll_teardown(void);
/* Runs this rank's part of a collective on communicator comm. */
void sim_coll_run(uint32_t stream, int comm, int rank, const sim_payload *p);
/* Communication slowdown for a transfer starting now on this rank: the GPU's
 * overlap_comm factor when a compute kernel is running beside it, else 1. */
double sim_engine_comm_factor(int rank);
/* Host-staged transfers (staging.c): the machine's staging memories and
 * their caches.  hold adds (bytes > 0) or takes back (< 0) staged bytes in
 * flight on the route from rank a to rank b, re-sharing the memory. */
/* NCCL's in-flight bytes on one staged hop at most: two channels' 4 MiB
 * FIFOs (NCCL_BUFFSIZE). */
#define SIM_STAGE_FIFO_BYTES (2.0 * 4194304.0)
int sim_staging_setup(sim_err *err);
void sim_staging_teardown(void);
void sim_staging_hold(int a, int b, double bytes);
void sim_engine_trace_transfer(uint32_t stream, int dst_rank, double bytes, double t0, double t1);

#endif
