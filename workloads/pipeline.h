/* pipeline.h — the order in which a pipeline stage runs the forward and
 * backward passes of its micro-batches, for each pipeline schedule.
 *
 * Pure functions of (schedule, pp, virtual stages, micro-batches, stage), so
 * that the generator (gpt.c), the memory check and the tests share one
 * definition.  Each schedule cites the paper section or code it follows
 * (papers.md §2.3, §6.2, §7.D). */
#ifndef WL_PIPELINE_H
#define WL_PIPELINE_H

#include "sim/error.h"

typedef enum wl_pipeline {
    WL_PIPE_1F1B,        /* PipeDream-Flush / Megatron non-interleaved (default) */
    WL_PIPE_GPIPE,       /* all forwards, then all backwards */
    WL_PIPE_INTERLEAVED, /* Megatron interleaved 1F1B over vstages model chunks */
    WL_PIPE_EAGER,       /* Alpa eager 1F1B: 2(p-i)-1 warm-up forwards */
    WL_PIPE_MERAK_LNR,   /* Merak last_no_recompute_1f1b */
    WL_PIPE_MERAK_PRE,   /* Merak pre_recompute_1f1b */
    WL_PIPE_MERAK_FCP,   /* Merak full_critical_path_1f1b */
    WL_PIPE_COUNT
} wl_pipeline;

typedef struct wl_pipe_step {
    int backward; /* 0 = forward, 1 = backward */
    int micro;    /* micro-batch */
    int chunk;    /* model chunk (virtual stage index on this stage), 0 unless interleaved */
} wl_pipe_step;

const char *wl_pipe_name(wl_pipeline k);
/* Parses a schedule name; -1 if unknown. */
int wl_pipe_parse(const char *name, wl_pipeline *out);
/* The list of names, for error messages. */
#define WL_PIPE_NAMES \
    "1f1b, gpipe, interleaved, eager, merak_last_no_recompute, merak_pre_recompute, merak_full_critical_path"

/* Whether a schedule is one of Merak's shifted critical path variants
 * (stage-aware recomputation, papers.md §2.4). */
int wl_pipe_is_merak(wl_pipeline k);

/* Checks that (k, p, v, m) can run: interleaved needs p >= 2, v >= 2 and m a
 * multiple of p (Megatron's condition); vstages > 1 needs interleaved;
 * full_critical_path needs m >= 4. */
int wl_pipe_validate(wl_pipeline k, int p, int v, int m, sim_err *err);

/* Writes the 2·m·v steps of stage `stage` (0-based) into out[] in program
 * order and returns their count. */
int wl_pipe_order(wl_pipeline k, int p, int v, int m, int stage, wl_pipe_step *out);

/* The most micro-batch passes (forward done, backward not yet) a stage
 * holds at once under that order, counted per model chunk and summed. */
int wl_pipe_max_inflight(const wl_pipe_step *steps, int n);

/* Merak's stage-aware recomputation ratio of stage k (papers.md §2.4,
 * Merak `module.py`): 1 − (1 − r0)(P−1)/(P−1−k) for k < P−1, 0 on the last
 * stage, clamped to [0, 1]; full_critical_path gives stage P−2 the ratio of
 * stage P−3 when P > 2. */
double wl_pipe_merak_ratio(wl_pipeline k, double r0, int p, int stage);

#endif
