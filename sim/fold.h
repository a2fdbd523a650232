/* fold.h — exact reductions of a schedule: data-parallel replicas (and any
 * communicator over three or more whole servers) simulated on two servers,
 * the others standing in (sim/fold.c says when that is exact).  `trainsim
 * run` uses it unless --exact; the planner's fast fidelity too. */
#ifndef SIM_FOLD_H
#define SIM_FOLD_H

#include "sim/engine.h"
#include "sim/error.h"
#include "sim/machine.h"
#include "sim/schedule.h"

/* A generated cluster whose servers only meet at non-blocking switches:
 * one switch, or a fat tree without oversubscription (groups then fold
 * within a leaf); all servers alike, no NVLink domain spanning servers. */
int sim_fold_fabric(const sim_machine *m);

/* What may fold: data-parallel groups over servers, tensor-parallel peers
 * inside an NVSwitch server, or both. */
enum { SIM_FOLD_SERVERS = 1, SIM_FOLD_PEERS = 2, SIM_FOLD_ALL = 3 };

typedef struct sim_fold {
    sim_schedule *sched; /* the kept ranks' operations */
    sim_machine *mach;   /* the kept ranks' hosts */
    int *rep;            /* per rank of the original schedule: the folded rank that stands for it */
    int nranks;          /* ranks of the original schedule */
} sim_fold;

/* what: SIM_FOLD_*.  1: folded into *f (free with sim_fold_free); 0: s
 * does not fold; -1: error. */
int sim_fold_schedule(const sim_schedule *s, const sim_machine *m, int what, sim_fold *f, sim_err *err);
void sim_fold_free(sim_fold *f);

/* For a generator that builds only what the fold keeps: from s's
 * communicators alone (no operations needed yet), select[r] = 1 for a rank
 * the fold keeps, 2 for a dropped rank to generate all the same and check
 * against its stand-in (those on the last server of each folded group), 0
 * for a rank not to generate.  1: something folds; 0: nothing does (select
 * untouched); -1: error. */
int sim_fold_select(const sim_schedule *s, const sim_machine *m, int what, unsigned char *select, sim_err *err);
/* sim_fold_schedule of a schedule holding the operations of the ranks with
 * present[r] != 0 only (sim_fold_select's choice): the absent dropped ranks
 * stand as their stand-ins.  0 when a present dropped rank does not do its
 * stand-in's work (generate every rank then). */
int sim_fold_partial(const sim_schedule *s, const sim_machine *m, int what, const unsigned char *present,
                     sim_fold *f, sim_err *err);

/* The folded simulation's result r (of f->sched) as the whole schedule's:
 * every rank takes its stand-in's figures, the means are over all ranks.
 * -1 when out of memory (r unchanged). */
int sim_fold_expand(const sim_fold *f, sim_result *r, sim_err *err);

/* Makes the schedule again, folded as `what` says (0: whole); a generator
 * that builds only the kept ranks (wl_gpt_generate_folded). */
typedef sim_schedule *(*sim_regen_fn)(void *ctx, int what, sim_fold *f, sim_err *err);

/* How a reduced run went: the ranks simulated (0: all of them) and a GPU's
 * tree all-reduces over folded servers, taken at their uncontended time. */
typedef struct sim_reduced {
    int ranks;
    double tree_s;
} sim_reduced;

/* sim_run as `trainsim run` does it: on the ranks the fold keeps where that
 * is exact, with the results of every rank.  pre: NULL to fold s here (a
 * whole schedule); else the generator's fold of s (pre->sched NULL: nothing
 * folds, s is whole; else s is the kept ranks' shell, and regen makes the
 * schedule again for the next try; pre is consumed).  A folded run whose
 * tree all-reduces over folded servers are more than a trace of the
 * iteration is not exact: with retry it runs again with the servers whole
 * (TP peers still folded), then whole; without, it returns 1 (nothing run,
 * r untouched) for a caller that then prices the run otherwise (validate's
 * end-to-end rows: the planner's fast fidelity).  isolate: every simulation
 * in a forked child (sim_run_isolated), for a process that runs many; else a
 * whole schedule runs in this process (SimGrid once per process).  reduced
 * may be NULL. */
int sim_run_reduced(const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_fold *pre,
                    sim_regen_fn regen, void *ctx, int isolate, int retry, sim_result *r, sim_reduced *reduced,
                    sim_err *err);

#endif
