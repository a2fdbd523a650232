/* plan.h — the planner: search parallel strategies against simulated costs.
 *
 * The planner works on strategy *strings* ("tp=4,pp=2,mb=1,recompute=full"),
 * the same ones `trainsim run --strategy` takes, so a key the workloads learn
 * joins the search space by one line in the axis table (space.c); values the
 * build's wl_strategy_parse rejects are dropped automatically.
 *
 *   space.c   the axis table, enumeration, pruning with reasons
 *   eval.c    one strategy -> simulated figures (full, or extrapolated from
 *             reduced simulations: fewer layers and micro-batches)
 *   fold.c    communicators over many servers simulated on two of them
 *   pool.c    evaluations in forked processes (one SimGrid engine each)
 *   cache.c   append-only result cache keyed by a hash of the inputs
 *   mpi.c     spreading evaluations over MPI ranks (optional at build time)
 *   search.c  the seeds' searches (Galvatron, OSDP, Oases), priced by
 *             fragments of the workload generator; search_cli.c prints them
 *   cli.c     `trainsim plan`
 */
#ifndef PLAN_PLAN_H
#define PLAN_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "sim/engine.h"
#include "sim/error.h"
#include "sim/fold.h"
#include "sim/outfile.h"
#include "sim/machine.h"
#include "sim/schedule.h"
#include "workloads/model.h"

#define PLAN_STRATEGY_MAX 256

#include <string.h>
/* Copies src into dst[n], truncating (messages are longer than the slots). */
static inline void plan_copy(char *dst, size_t n, const char *src)
{
    size_t l = strnlen(src, n - 1);
    memcpy(dst, src, l);
    dst[l] = 0;
}

/* The outcome of one evaluation.  Fixed size so that it crosses pipes and
 * MPI as plain bytes. */
typedef struct plan_result {
    char strategy[PLAN_STRATEGY_MAX]; /* as enumerated (the cache key) */
    int status;                       /* 0 ok, -1 failed (error says why) */
    double iteration_s, samples_per_s, tokens_per_s, tflops_per_gpu;
    double peak_mem;                  /* bytes, most loaded GPU */
    double compute_s, exposed_comm_s, idle_s, comm_s; /* means over GPUs */
    double kernel_s[SIM_KCLASS_COUNT]; /* the kernels' own seconds by class (sim/engine.h), means over GPUs */
    int sims;                         /* simulations it took */
    int folded;                       /* of which on two servers per group (fold.c; not stored) */
    int replicas;                     /* DP replicas its pipeline simulations ran (eval.c; not stored) */
    int cached;                       /* 1 when it came from the cache (not stored) */
    int refined;                      /* 1 when --refine simulated it whole after a fast sweep (not stored) */
    double wall_s;                    /* wall seconds it took (not stored, not printed to stdout) */
    char error[512];
} plan_result;

typedef enum plan_fidelity {
    PLAN_FAST, /* extrapolate from reduced simulations (eval.c) */
    PLAN_FULL  /* simulate the whole iteration */
} plan_fidelity;

/* What every evaluation shares. */
typedef struct plan_ctx {
    sim_machine *mach;
    const char *platform_spec, *model_spec;
    int platform_gpus;         /* the platform's GPUs before --gpus kept the first mach->ngpus */
    wl_model model;
    int gb;            /* global batch */
    sim_dtype dtype;
    plan_fidelity fidelity;
    uint64_t inputs_hash; /* platform + model + version + fidelity */
    const char *only;     /* "s1;s2;...": evaluate these instead of enumerating */
    const char *const *axis; /* --axis KEY=V1,V2 overrides or additions */
    int naxis;
} plan_ctx;

/* ---- hashing (FNV-1a 64) ---- */
uint64_t plan_hash(uint64_t h, const void *data, size_t n);
uint64_t plan_hash_str(uint64_t h, const char *s);
#define PLAN_HASH_INIT 0xcbf29ce484222325ull
/* Hash of everything a result depends on besides the strategy. */
uint64_t plan_inputs_hash(const sim_machine *m, const wl_model *model, plan_fidelity f);

/* ---- space.c ---- */
typedef struct plan_space plan_space;

enum { PLAN_PRUNE_DIVISIBILITY, PLAN_PRUNE_BATCH, PLAN_PRUNE_MEMORY, PLAN_PRUNE_REDUNDANT, PLAN_PRUNE_OTHER,
       PLAN_PRUNE_COUNT };
const char *plan_prune_name(int reason);

/* Enumerates the strategies for ctx (tp, pp, dp, mb and every axis of the
 * table that this build's parser accepts) and prunes what cannot run. */
plan_space *plan_space_new(const plan_ctx *ctx, sim_err *err);
void plan_space_free(plan_space *sp);
int plan_space_count(const plan_space *sp);           /* survivors */
const char *plan_space_get(const plan_space *sp, int i);
int plan_space_enumerated(const plan_space *sp);
int plan_space_pruned(const plan_space *sp, int reason);
const char *plan_space_example(const plan_space *sp, int reason); /* strategy: message */
/* The axes searched, e.g. "tp{1,2,4} pp{1,2} mb{1,2,4} recompute{none,full}". */
const char *plan_space_axes(const plan_space *sp);
/* Classifies a wl_gpt_check message. */
int plan_prune_classify(const char *msg);

/* ---- eval.c ---- */
/* Evaluates one strategy by simulation.  Must run in a process that may
 * fork (every simulation runs in its own child).  Never fails as a call:
 * a failed evaluation has status -1 and the error. */
void plan_evaluate(const plan_ctx *ctx, const char *strategy, plan_result *out);
/* The same for a strategy already parsed (out->strategy: it formatted,
 * wl_strategy_format). */
void plan_evaluate_st(const plan_ctx *ctx, const wl_strategy *st, plan_result *out);

/* ---- pool.c ---- */
typedef void (*plan_job_fn)(void *arg, int job, plan_result *out);
typedef void (*plan_done_fn)(void *arg, int job, const plan_result *r);
/* Runs fn(arg, job) for every job in jobs[0..n) in forked children, at most
 * nproc at a time; done() is called in this process as each finishes.  A
 * child that dies yields a failed result naming the signal. */
int plan_pool_run(const int *jobs, int n, int nproc, plan_job_fn fn, void *arg, plan_done_fn done, void *done_arg,
                  sim_err *err);
int plan_ncpus(void);
/* Runs fn(arg, out) in one forked child and copies its n bytes at out back
 * here (out must hold no pointers): the child's SimGrid state (a preloaded
 * platform: one per process) and a crash stay there.  -1 with err when the
 * child dies or cannot start. */
int plan_fork_call(void (*fn)(void *arg, void *out), void *arg, void *out, size_t n, sim_err *err);

/* ---- progress (pool.c) ---- */
typedef struct plan_progress {
    int enabled, total, done;
    double t0, last;
} plan_progress;
void plan_progress_start(plan_progress *p, int total, int enabled);
void plan_progress_step(plan_progress *p, int done);
void plan_progress_end(plan_progress *p);

/* ---- cache.c ---- */
typedef struct plan_cache plan_cache;
/* Opens (creating) dir/results.tsv.  load=0 skips reading it (MPI ranks
 * other than 0 only append).  Corrupt lines are skipped and counted; a
 * cache this process may not write is read and kept in memory only. */
plan_cache *plan_cache_open(const char *dir, uint64_t inputs_hash, int load, sim_err *err);
/* A memory-only cache of the records in text[0, len) (tests, fuzzing). */
plan_cache *plan_cache_from_text(uint64_t inputs_hash, const char *text, size_t len);
/* Lines that were not records (torn, edited, a NUL byte) when it was read. */
int plan_cache_skipped(const plan_cache *c);
/* 1 when new records are not saved (the file or directory is read-only). */
int plan_cache_readonly(const plan_cache *c);
void plan_cache_close(plan_cache *c);
/* 1 and *out filled when present. */
int plan_cache_get(const plan_cache *c, const char *strategy, plan_result *out);
/* Appends one record with a single write(2) (atomic: a killed run leaves
 * whole records only; a torn tail is detected by its checksum). */
int plan_cache_put(plan_cache *c, const plan_result *r, sim_err *err);
int plan_cache_size(const plan_cache *c);

/* ---- mpi.c ---- */
/* 1 when started by mpirun with more than one rank (MPI initialised). */
int plan_mpi_start(int *argc, char ***argv, int *rank, int *size, sim_err *err);
void plan_mpi_bcast_ints(int *v, int n);
/* Rank 0 receives every rank's results into all[] (indexed by job); the
 * others send theirs (mine[0..nmine) with job indices jobs[]). */
int plan_mpi_gather(plan_result *all, int nall, const plan_result *mine, const int *jobs, int nmine, sim_err *err);
void plan_mpi_stop(void);
int plan_mpi_available(void);

/* ---- sweep.c ---- */
/* How a space is evaluated. */
typedef struct plan_sweep_opts {
    int jobs;               /* forked workers on this rank (>= 1) */
    const char *cache_dir;  /* result cache directory, NULL for none */
    int refine;             /* after a fast sweep, simulate the K fastest whole (0: no) */
    int verify;             /* after a fast sweep, simulate N drawn at random whole to check it (0: no) */
    int progress;           /* progress bar on stderr */
    int mpi_rank, mpi_size; /* 0 and 1 without MPI */
    plan_done_fn on_result; /* optional: each fresh result as it arrives */
    void *on_result_arg;
} plan_sweep_opts;
/* The fast fidelity's stated worst iteration-time error against whole
 * simulation (docs/planning.md: the worst of the measured sweeps, 6.7 %). */
#define PLAN_FAST_BOUND 0.07
#define PLAN_VERIFY_MAX 64
/* One strategy of --verify: its fast and whole iteration times. */
typedef struct plan_verified {
    char strategy[PLAN_STRATEGY_MAX];
    double fast_s, full_s;
} plan_verified;
typedef struct plan_sweep_stats {
    int evaluated, cached, sims; /* of the sweep; sims: simulations it took */
    int mine;                    /* evaluated on this rank */
    int refined;                 /* simulated whole afterwards (--refine) */
    double wall_s, cpu_s;        /* the sweep's; cpu_s: this rank's evaluation processes */
    double refine_wall_s, refine_cpu_s;
    int verified;                /* --verify: strategies drawn and simulated whole, in check[] */
    plan_verified check[PLAN_VERIFY_MAX];
    double verify_wall_s;
    char cache_warning[512];     /* the first cache problem, "" when none (the sweep goes on without) */
} plan_sweep_stats;
/* Evaluates every candidate of sp into res[0 .. plan_space_count(sp)): from
 * the cache where it holds them, else simulated (ctx->fidelity), then the
 * refinement.  On MPI rank 0 res holds every result afterwards.  Prints only
 * the progress bar asked for.  -1 with err when the sweep itself fails
 * (evaluations that fail are results with status -1). */
int plan_sweep_run(plan_ctx *ctx, const plan_space *sp, const plan_sweep_opts *o, plan_result *res,
                   plan_sweep_stats *st, sim_err *err);
/* qsort comparator over plan_result pointers: ok first, then by throughput
 * (samples/s) descending, then by strategy. */
int plan_result_cmp(const void *a, const void *b);
/* The ok results of res[0..n) into ok[] (room for n), fastest first; returns how many. */
int plan_result_rank(plan_result *res, int n, plan_result **ok);

/* ---- pipeline stages over node groups (placement.c) ---- */
#define PLAN_PLACE_PP 8   /* pipeline depths searched */
#define PLAN_PLACE_MAX 72 /* placements tried per strategy (two GPU kinds over 8 stages: 70) */
typedef struct plan_placement {
    char strategy[PLAN_STRATEGY_MAX];
    int pp;
    int distinct, tried;        /* distinct sequences of GPU kinds over the stages; how many were evaluated */
    int order[PLAN_PLACE_PP];   /* the fastest: stage s on machine ranks order[s]·B .. (order[s]+1)·B − 1 */
    double rank_order_s, best_s; /* iteration time in the rank order (order 0, 1, ...) and the fastest */
} plan_placement;
/* Tries the strategy's pipeline stages on every distinct arrangement of the
 * machine's blocks of GPUs/pp ranks (each evaluated as the sweep does, in a
 * forked child).  tried = 0 when there is nothing to place (pp < 2, more
 * than PLAN_PLACE_PP stages).  -1 with err when an evaluation fails. */
int plan_place(const plan_ctx *ctx, const char *strategy, plan_placement *out, sim_err *err);

/* ---- svg.c: the charts' common parts (scatter, bars, lines) ---- */
/* A plot area on the page and its value ranges (from 0). */
typedef struct plan_svg_panel {
    double left, top, width, height; /* the plot area, in SVG units */
    double xmax, ymax;               /* the value at the right and top edges */
} plan_svg_panel;
double plan_svg_x(const plan_svg_panel *p, double v);
double plan_svg_y(const plan_svg_panel *p, double v);
/* <svg> with a white background and a centred title (escaped). */
void plan_svg_begin(FILE *f, double width, double height, const char *title);
/* Axes, five y grid lines with labels, the axis titles; xticks: label five x
 * values too (a numeric x axis), else the caller labels its categories. */
void plan_svg_axes(FILE *f, const plan_svg_panel *p, const char *xlabel, const char *ylabel, int xticks);
/* The smallest 5 x {1, 2, 2.5, 5, 10} x 10^k at or above v: an axis maximum
 * whose five grid lines fall on round values. */
double plan_svg_nice(double v);
/* Text with <, & and > escaped. */
void plan_svg_text(FILE *f, const char *s);
/* Closes the document; -1 with err when the file could not be written. */
int plan_svg_end(sim_outfile *out, sim_err *err);

/* ---- cli.c ---- */
int plan_cli_main(int argc, char **argv);

#endif
