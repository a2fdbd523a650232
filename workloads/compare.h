/* compare.h — `trainsim run --compare KEY=v1,v2,...`: the same job under
 * several values of one strategy key, each simulated in its own process
 * (sim_run_isolated), side by side.
 *
 * Lives in workloads/ because the values are strategy keys (wl_strategy);
 * the result is text (or JSON) returned to sim/cli.c, the one place that
 * prints. */
#ifndef WL_COMPARE_H
#define WL_COMPARE_H

#include "sim/engine.h"
#include "sim/machine.h"
#include "workloads/model.h"

/* One value's outcome. */
typedef struct wl_compare_row {
    char value[64];      /* the value as given */
    char strategy[256];  /* the canonical strategy it ran */
    int ok;              /* 0: could not run; why is in error */
    char error[1024];
    sim_result r;        /* when ok (rank[] owned by the row) */
    double tflops_per_gpu, mfu, samples_per_s, tokens_per_s;
} wl_compare_row;

/* Splits "KEY=v1,v2,..." into key and values; 0 or -1 with err. */
int wl_compare_parse(const char *spec, char *key, size_t keylen, char ***values, int *nvalues, sim_err *err);

/* Runs base strategy + ",KEY=value" for each value on mach; a value may
 * carry other keys' settings after '+' ("oases+recompute=oases").  Returns the
 * rows (*nrows of them; free with wl_compare_free) or NULL with err when
 * the spec itself is bad; a value whose strategy is impossible gives a row
 * with ok = 0 and the reason. */
wl_compare_row *wl_compare_run(const sim_machine *mach, const wl_model *model, const char *base_strategy,
                               const char *spec, const sim_options *opt, int *nrows, sim_err *err);
void wl_compare_free(wl_compare_row *rows, int n);

/* The rows side by side: a text table (one column per value) or JSON.
 * Returns a malloc'd string. */
char *wl_compare_format(const wl_compare_row *rows, int n, const char *key, const sim_machine *mach,
                        const wl_model *model, int json);

#endif
