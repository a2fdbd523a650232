/* jobs.h — several jobs on one cluster (`trainsim run --job A.json --job B.json`).
 *
 * A job file names what runs (a model and a strategy, generated on the
 * job's own GPUs, or a schedule file) and where (a GPU list, whole nodes,
 * or a GPU count placed packed or spread).  The jobs become one schedule
 * (sim_sched_place), so they share links, NICs and switches in one
 * simulation as they would on the cluster; each job alone is the same
 * schedule with only its operations, on the same GPUs.
 *
 *   { "name": "A",                          default: the file's base name
 *     "model": "gpt-1024", "strategy": "tp=2,mb=2,gb=64"  |  "schedule": "job.json",
 *     "gpus": [0, 1, 2, 3]  |  "nodes": [0, 1]  |  "count": 8,
 *     "placement": "packed" | "spread" }     with count: fill nodes one after
 *                                             the other, or one GPU per node in turn
 * A schedule's path is relative to the job file.  A GPU belongs to at most
 * one job; explicit GPU and node lists are placed first, counts after, in
 * the order the jobs are given. */
#ifndef WL_JOBS_H
#define WL_JOBS_H

#include "sim/error.h"
#include "sim/machine.h"
#include "sim/schedule.h"

typedef struct wl_job {
    char name[64];
    char strategy[256];   /* the strategy as run ("" for a schedule file) */
    char model[64];       /* the model's name ("" for a schedule file) */
    char schedule[256];   /* the schedule file as given ("" for a model) */
    int ngpus;
    int *gpus;            /* [ngpus] the platform ranks that play the job's ranks 0 .. ngpus-1 */
    sim_schedule *sched;  /* the job in its own rank numbering */
} wl_job;

/* Reads the job files, places them on m and builds each job's schedule.
 * NULL with err naming the file, the field and what was expected (an
 * unknown key, a GPU outside the cluster or taken twice, a strategy that
 * does not fit the job's GPUs, ...). */
wl_job *wl_jobs_load(const char *const *paths, int n, const sim_machine *m, sim_err *err);
/* The same from the files' texts (paths name them in messages and anchor
 * their schedules' relative paths). */
wl_job *wl_jobs_from_json(const char *const *texts, const char *const *paths, int n, const sim_machine *m,
                          sim_err *err);
void wl_jobs_free(wl_job *jobs, int n);

/* One schedule over all of m's ranks with the jobs whose include[j] is
 * set (NULL: all), each on its GPUs, its streams and communicators named
 * "<job>/...".  NULL with err. */
sim_schedule *wl_jobs_schedule(const wl_job *jobs, int n, const int *include, const sim_machine *m, sim_err *err);
#endif
