/* val_sim.h — running validation cases through the user pipeline.
 *
 * Each helper builds a small schedule with the sim/schedule.h builders, runs
 * it with sim_run_isolated() (a fresh SimGrid engine per case, ~2 ms for a
 * one-node collective) on a machine from plat_load(), and returns simulated
 * seconds.  So a case sees exactly the collectives, cost model and platform
 * routes that `trainsim run` uses. */
#ifndef VAL_SIM_H
#define VAL_SIM_H

#include <stdint.h>

#include "sim/machine.h"
#include "sim/schedule.h"
#include "val.h"

/* A one-node machine of `gpus` GPUs of a catalogue model (NVSwitch where
 * the model has it), built through the cluster JSON path users take; NULL
 * with a message when the model is unknown. */
/* One node of `gpus` GPUs of a catalogue model on one switch, its GPUs in
 * their cool power state (micro-benchmarks run in short bursts). */
sim_machine *val_sim_node(const char *model, int gpus, sim_err *err);

/* Runs a schedule and returns its result (caller frees with sim_result_free). */
int val_sim_run(const val_ctx *ctx, const sim_schedule *s, const sim_machine *m, sim_result *out, sim_err *err);

/* One collective c of `bytes` on ranks[0..n) (sim/schedule.h byte
 * conventions), alone on the machine.  *seconds = its simulated duration. */
int val_sim_collective(const val_ctx *ctx, const sim_machine *m, sim_coll c, const int *ranks, int n, int64_t bytes,
                       double *seconds, sim_err *err);

/* The same with the algorithm forced (as a trace's kernel name says). */
int val_sim_collective_algo(const val_ctx *ctx, const sim_machine *m, sim_coll c, sim_algo algo, const int *ranks,
                            int n, int64_t bytes, double *seconds, sim_err *err);

/* ngroups collectives c of `bytes` run at the same time, group g on ranks
 * ranks[g*size .. g*size+size) (disjoint).  seconds[g] = group g's duration
 * (the last member to finish), so contention between groups is included. */
int val_sim_concurrent(const val_ctx *ctx, const sim_machine *m, sim_coll c, const int *ranks, int ngroups, int size,
                       int64_t bytes, double *seconds, sim_err *err);

/* n point-to-point messages of `bytes` at the same time, src[i] -> dst[i].
 * Receivers must be distinct; seconds[i] = when message i has arrived. */
int val_sim_sends(const val_ctx *ctx, const sim_machine *m, const int *src, const int *dst, int n, int64_t bytes,
                  double *seconds, sim_err *err);

/* One compute payload (kind SIM_OP_COMPUTE) alone on `rank`. */
int val_sim_kernel(const val_ctx *ctx, const sim_machine *m, int rank, const sim_payload *p, double *seconds,
                   sim_err *err);

/* Bus-bandwidth factor of a collective over n ranks (nccl-tests' convention:
 * busbw = algbw · factor; all-reduce 2(n−1)/n, all-gather/reduce-scatter
 * (n−1)/n, broadcast/reduce 1, all-to-all (n−1)/n). */
double val_busbw_factor(sim_coll c, int n);

#endif
