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
    sg_sem_t *sem;          /* per stream: its actor sleeps on it while waiting for a dependency */
    uint32_t *wait_head;    /* per stream: the first stream waiting for it, or NO_WAITER */
    uint32_t *wait_next;    /* per waiting stream: the next stream waiting for the same one */
    uint32_t *wait_seq;     /* per waiting stream: the position it waits for the other to pass */
    uint8_t *depended;      /* bit per op: some op depends on it */
    double *kernel_s;       /* per (payload, GPU model): kernel seconds, <0 = not yet */
    double *power_slow;     /* per rank: tensor-core kernels' time x this (the GPU's power state) */
    sim_ivlist *compute, *comm; /* per rank */
    double *mem, *mem_kind; /* per rank, per (rank, kind) */
    struct sim_comm_rt *comms;
    int *nccl_node;         /* per rank: the node NCCL's topology sees, its multi-node NVLink domain (collectives.c) */
    int *comm_busy, *kern_busy; /* per rank: collectives/sends, compute kernels in flight */
    double *kclass_s;           /* per rank x SIM_KCLASS_COUNT: its kernels' own seconds by class */
    sg_exec_t *bg;          /* per rank: the interference load while communication is in flight */
    FILE *trace, *memlog;   /* the Chrome trace and the memory CSV, or NULL */
    FILE *trace_file;       /* the trace's output file (trace is a gzip stream into it for ".gz") */
    unsigned long long trace_flows; /* flow arrows written */
    void *trace_pending;
    uint64_t ops_done;      /* operations finished (progress) */
    double wall0, next_progress; /* wall clock at the start, of the next progress call */    /* per stream: transfers being gathered into one slice (trace.c) */
    sim_outfile trace_out, memlog_out;
    char **qname;           /* per string id: the name as a quoted JSON string */
    uint32_t nqname;
    uint64_t flows, execs;
    uint64_t folded_trees; /* tree all-reduces of folded communicators, taken at their predicted time */
    double folded_tree_s;  /* and that time, summed */
    sg_link_t *degraded;    /* links --degrade slowed, and their bandwidths before */
    double *degraded_bw;
    size_t ndegraded;
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
 * overlap_comm factor when a compute kernel is running beside it, else 1.
 * Where the factor is not 1 it first waits one nanosecond, for the other
 * events of this instant (so call it once per transfer, at its start). */
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
/* The Chrome trace (trace.c): opened and closed by the engine's setup and
 * teardown; every writer checks E.trace and the rank and window selection. */
int sim_trace_open(sim_err *err);
int sim_trace_close(int ok, sim_err *err);
void sim_trace_op(uint32_t op, double t0, double t1);
/* Kernels k..last of stream S, run as one execution over [t0, t1]: one
 * slice (with trace_detail the engine runs each kernel on its own). */
void sim_trace_kernels(const sim_stream *S, uint32_t k, uint32_t last, int rank, double t0, double t1);
void sim_engine_trace_transfer(uint32_t stream, int dst_rank, double bytes, double t0, double t1);
/* An arrow from a send's transfer (on the sender's transfers track) to its
 * receive, written when both are shown. */
void sim_trace_flow(uint32_t send_stream, double send_t0, double send_t1, uint32_t recv_stream, double recv_t0,
                    double recv_t1);
void sim_trace_memory(int rank, const double *kind_bytes);

#endif
