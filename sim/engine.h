/* engine.h — runs a schedule on a machine with SimGrid.
 *
 * One SimGrid engine per process: sim_run() may be called once (the planner
 * runs evaluations in separate processes, sim_run_isolated()). */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "machine.h"
#include "schedule.h"

typedef enum sim_coll_mode {
    SIM_COLLMODE_AUTO,       /* step by step for small rings, aggregated for large */
    SIM_COLLMODE_STEP,       /* every ring step / tree chunk is its own flow */
    SIM_COLLMODE_AGGREGATED  /* one flow per member per phase, latency terms added */
} sim_coll_mode;

/* Where a run stands, for a front end's progress line. */
typedef struct sim_progress {
    double simulated_s;     /* the simulated clock */
    uint64_t ops_done, ops; /* operations finished, of all */
    double wall_s;          /* wall time since the run started */
} sim_progress;

typedef struct sim_options {
    sim_coll_mode coll_mode;
    int step_max_ring;   /* AUTO: rings of at most this many members go step by step */
    double chunk_bytes;  /* pipelining chunk of broadcast and reduce chains */
    double tree_chunk_bytes; /* pipelining chunk of the tree all-reduce (NCCL's tree moves small chunks) */
    int max_channels;    /* at most this many channels per collective (NCCL_MAX_NCHANNELS on the
                            search's channels); 0 = as NCCL: one per NIC the members reach across
                            nodes, both ring directions inside a ring_bidir node */
    const char *trace_path; /* Chrome trace (Perfetto) output, or NULL; gzip-compressed for "*.gz" */
    const unsigned char *trace_ranks; /* [nranks]: the ranks traced, or NULL for all */
    double trace_from, trace_to; /* only what meets [from, to] (simulated seconds); to <= from: all */
    int trace_detail;       /* every kernel and every step of a collective its own slice (else one
                               slice per run of merged kernels, per collective and peer); the
                               kernels then run one by one (engine.c can_merge) */
    const char *trace_extra; /* Chrome trace events written as they are after the run's own (each
                                ",\n{...}"; a recorded timeline beside the simulated one), or NULL */
    const char *memory_path; /* per-GPU memory timeline (CSV, one line per memory effect), or NULL */
    int verbose;
    /* Called about twice a second of wall time from the simulation (not at
     * all in a run shorter than that); NULL = none. */
    void (*progress)(void *ctx, const sim_progress *p);
    void *progress_ctx;
    /* pace = 1: record when each micro-batch's backward ends on rank
     * pace_rank (sim_result.micro_end), the pipeline's pace for the
     * planner's extrapolation in micro-batches */
    int pace, pace_rank;
} sim_options;

/* Whether a folded communicator can run collective payload p: a ring
 * all-reduce, all-gather or reduce-scatter (the rest need the members it
 * does not hold). */
int sim_coll_foldable(const sim_payload *p);

void sim_options_default(sim_options *o);

/* What a GPU's kernels did, by kind: each kernel at its own duration on
 * that GPU (its power state and straggler factor applied, before any
 * slowdown beside communication or another stream), summed.  The classes
 * do not add up to the compute time: that is the union of busy intervals,
 * longer where interference stretches kernels, shorter where two streams'
 * kernels share the GPU. */
typedef enum sim_kclass {
    SIM_KCLASS_GEMM,        /* GEMMs */
    SIM_KCLASS_ATTENTION,   /* the attention core, unfused or fused */
    SIM_KCLASS_ELEMENTWISE, /* memory-bound kernels: norms, activations, casts, the loss */
    SIM_KCLASS_OPTIMIZER,   /* the optimizer step */
    SIM_KCLASS_MEASURED,    /* kernels replayed at a measured duration (trace import) */
    SIM_KCLASS_COUNT
} sim_kclass;

/* The class of a compute payload's kernel kind, or -1 (a host delay). */
int sim_kclass_of(int kernel);
const char *sim_kclass_name(int c);  /* "gemm", "attention", "elementwise", ...: keys of JSON and CSV */
const char *sim_kclass_label(int c); /* "GEMM", "attention", "element-wise", ...: for people */

/* Per-rank outcome.  The breakdown splits [0, iteration time] into compute
 * (some compute kernel running), exposed communication (communication and
 * no compute), and idle (nothing running: pipeline bubble and waiting). */
typedef struct sim_rank_result {
    double compute_s;
    double comm_s;          /* all communication time */
    double exposed_comm_s;  /* communication with no compute beside it */
    double idle_s;
    double end_s;
    double start_s;         /* when its first kernel started (0: none ran) */
    double peak_mem;
    double peak_by_kind[SIM_MEM_KIND_COUNT];
    double kernel_s[SIM_KCLASS_COUNT]; /* its kernels' own seconds by class (sim_kclass) */
} sim_rank_result;

typedef struct sim_result {
    double iteration_s;
    int nranks;
    sim_rank_result *rank;  /* [nranks] */
    double compute_s, comm_s, exposed_comm_s, idle_s; /* means over ranks */
    double kernel_s[SIM_KCLASS_COUNT];                 /* means over ranks */
    double peak_mem;        /* max over ranks */
    int peak_mem_rank;
    uint64_t ops, flows, execs;
    /* tree all-reduces of folded communicators (sim/fold.h), each taken at
     * its predicted uncontended time rather than simulated: a folded
     * result is exact only without them */
    uint64_t folded_trees;
    double folded_tree_s; /* their predicted seconds, summed over the members' calls */
    double wall_s;
    int nmicro;           /* with sim_options.pace: micro-batches of the schedule */
    double *micro_end;    /* [nmicro]: when micro-batch j's last backward operation on the pace
                           * rank ended (0: it has none there) */
} sim_result;

int sim_run(const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_result *out, sim_err *err);
void sim_result_free(sim_result *r);



/* NCCL-style predicted time of one collective on an uncontended path of
 * bandwidth bw (bytes/s per direction) and route latency lat (s) per hop,
 * n members on nnodes nodes (trees: a chain per node, a tree over nodes):
 * base + steps x (lat + step) + bytes moved / (efficiency x bw), minimised
 * over the protocols (the chosen one in *proto_out, may be NULL).  The
 * engine picks algorithm and protocol with it; on an uncontended platform
 * the simulated ring time equals it (tests/sim/test_oracles.c), so the
 * fitting code (validation/fit_nccl.c) can fit against it. */
double sim_coll_predict(const sim_collparams *cp, sim_coll coll, sim_algo algo, int n, int nnodes, double bytes,
                        double bw, double lat, sim_proto *proto_out);

/* Runs sim_run() in a child process and returns its result here, so that a
 * process can run many simulations (tests, the planner). */
int sim_run_isolated(const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_result *out,
                     sim_err *err);

/* Optional, for processes that run many simulations on one platform (the
 * planner): starts SimGrid and loads m's platform once in this process, so
 * that every later sim_run_isolated() here or in a forked descendant skips
 * that fixed cost (a temporary file, SimGrid's start-up, the XML parse).
 * Afterwards every simulation of this process and its descendants must use
 * a machine with the same platform_xml (other rank-to-host maps are fine),
 * else sim_run() fails; this process may still run one sim_run() itself.
 * Call it before any sim_run() of the process; calling it again with the
 * same platform does nothing.  Results are identical with or without it. */
int sim_preload(const sim_machine *m, sim_err *err);

/* Loads m's platform in a forked child and checks it as SimGrid sees it:
 * the host of every rank exists, every link has a finite bandwidth > 0 and
 * latency >= 0, and (with routes) every ordered pair of GPU hosts has a
 * route.  SimGrid aborts on a platform it cannot use, often without a
 * message; here the caller gets an error naming the problem (the host
 * pair, the link, or SimGrid's own message) instead. */
int sim_platform_probe(const sim_machine *m, int routes, sim_err *err);
#endif
