/* import.h — PyTorch-profiler (Kineto) traces as schedules: bring your own job.
 *
 * One trace per rank (kineto.h reads them) becomes one schedule rank: one
 * stream per CUDA stream, every kernel and memory copy of one profiler step
 * in its recorded order, NCCL kernels as collectives on their process group
 * or all ranks (matched by order across ranks, as NCCL matches them), the
 * cross-stream waits the host asked for, and the time each stream waited for
 * the host as a delay (SIM_KERNEL_DELAY), so that a host-bound job stays
 * host-bound.  Kernels keep their recorded durations (SIM_KERNEL_FIXED), or
 * with a target GPU (reprice) are priced again: import.c says how. */
#ifndef WL_IMPORT_H
#define WL_IMPORT_H

#include "sim/error.h"
#include "sim/machine.h"
#include "sim/schedule.h"
#include "workloads/et.h"

typedef struct wl_import_opts {
    int step;               /* ProfilerStep#N to import; -1: each trace's last step (whole trace without markers) */
    const sim_gpu *reprice; /* NULL: recorded durations; else the GPU the schedule will run on */
    const char *const *et;  /* NULL, or [n]: each trace's PyTorch execution trace (et.h), NULL entries for none */
} wl_import_opts;

/* What was imported from one trace (for the front end's summary and the
 * replay's error against the trace's own step time). */
typedef struct wl_import_rank {
    const char *path;     /* the caller's string */
    char device[128];     /* the trace's GPU ("Tesla V100-SXM2-32GB") */
    char step[64];        /* the step imported ("ProfilerStep#10"), "" for the whole trace */
    double step_s;        /* its duration: from the step annotation's start (else its first launch) to the
                             later of the annotation's end and the end of the last work launched in it */
    double offset_s;      /* when it starts in the replay (shared clock: its start after the earliest rank's) */
    int kernels, copies, collectives;
    int waits;            /* cross-stream dependencies (event waits and host synchronisations) */
    int waits_recorded;   /* 1: from the trace's cuda_sync records; 0: inferred from host calls and timing */
    int delays;           /* host delays inserted, and their sum: */
    double delay_s;
    int repriced;         /* kernels priced by the target's cost model (GEMM, element-wise) */
    int scaled;           /* kernels whose recorded time was scaled by the GPUs' ratio */
    int p2p;              /* point-to-point sends and receives (SendRecv kernels with a known peer) */
    const char *et;       /* its execution trace (the caller's string), or NULL */
    wl_et_stats et_join;  /* what the join supplied (all zero without an ET) */
} wl_import_rank;

typedef struct wl_import_info {
    int nranks;
    int rank_from_trace;  /* 1: ranks from each trace's distributedInfo; 0: the argument order */
    int shared_clock;     /* 1: the traces' steps overlap in time (one machine's clock): replayed with their skew */
    wl_import_rank *rank; /* [nranks] by schedule rank; wl_import_info_free() */
} wl_import_info;

/* Builds the schedule of n traces.  Errors name the file and what is wrong
 * (kineto.h's, then: a rank given twice or missing, no such step, a
 * collective whose size or peers the trace does not record, collectives that
 * differ across ranks at the same position, sends and receives that do not
 * pair up, a GPU the catalogue lacks when repricing; et.h's for the ETs).
 * info may be NULL. */
sim_schedule *wl_import_kineto(const char *const *paths, int n, const wl_import_opts *o, wl_import_info *info,
                               sim_err *err);
void wl_import_info_free(wl_import_info *info);

/* The recorded side of a side-by-side timeline: the kernels and copies of
 * the step the import takes from one trace (`step` as wl_import_opts's),
 * as Chrome trace events of process `pid` named `label`, one thread per CUDA
 * stream, in microseconds with the first of them at first_us.  Each event is
 * written ",\n{...}" (sim_options.trace_extra); malloc'd, or NULL with err
 * (the trace's own errors, no such step). */
char *wl_import_recorded_events(const char *path, int step, int pid, const char *label, double first_us,
                                sim_err *err);
/* Where the replay of an imported schedule starts rank r's first kernel:
 * the import puts the host's wait before it (and, on a shared clock, the
 * rank's offset) as a leading delay on its streams; the shortest of those
 * that wait for nothing else, in microseconds (0 when such a stream starts
 * with a kernel). */
double wl_import_replay_start_us(const sim_schedule *s, int rank);

/* `trainsim import kineto ...` (import_cli.c). */
int wl_import_cli_main(int argc, char **argv);

#endif
