/* val.h — the validation harness: groups of cases, each a real measurement
 * and the simulated value of the same thing, with the error statistics that
 * `trainsim validate` reports and checks.
 *
 * A *group* is one data set compared one way (the Azure A100 all-reduce curve,
 * Galvatron's PCIe coefficients, …).  Its run function fills a val_set with
 * *cases*: name, measured, simulated, unit, an optional x (message bytes,
 * FLOPs) for plots, and an optional *subset* label when parts of the group
 * have their own threshold (the Azure curve: ">=1MB" and "<1MB").  Every
 * simulated value comes from the pipeline users run: a cluster from
 * platforms/, a schedule built with the sim/schedule.h builders or the
 * workloads generator, and sim_run_isolated() (helpers in val_sim.h).
 *
 * Adding a group: write `int my_group(const val_ctx *, val_set *, sim_err *)`
 * in its own validation/ file, declare it in val_groups.h and add one line to
 * the table in groups.c; then record its threshold in
 * validation/thresholds.json and add tests/validation/<group>.sh
 * (validation/README.md). */
#ifndef VAL_VAL_H
#define VAL_VAL_H

#include "sim/engine.h"
#include "sim/error.h"

typedef struct val_case {
    char name[128];
    char subset[32];  /* "" = none; else a part of the group with its own threshold */
    char unit[16];    /* of measured and simulated: "s", "GB/s", "ms/MB" … */
    double measured;
    double simulated;
    double x;         /* e.g. message bytes; 0 = none */
    /* Optional, for whole-iteration cases (val_case_detail): where the
     * simulated time went, means over GPUs in seconds (all 0 = not given),
     * and a short note (how it was simulated, what the memory model said). */
    double compute_s, exposed_s, bubble_s;
    double kernel_s[SIM_KCLASS_COUNT]; /* the kernels' own seconds by class (sim/engine.h; all 0 = not given) */
    char note[192];
} val_case;

/* A row of a group's data that was not simulated, and why: `kind` holds
 * short labels shared by rows with the same cause ("attn=flash",
 * "micro_batch_size not stated"), '|'-separated when there are several;
 * `reason` the whole explanation. */
typedef struct val_skipped {
    char name[64];
    char subset[32];
    char kind[256];
    char reason[768];
} val_skipped;

/* The cases of one group, in the order they were added (opaque). */
typedef struct val_set val_set;

val_set *val_set_new(void);
void val_set_free(val_set *s);
/* Adds a case.  subset and unit may be NULL.  Returns -1 with a message when
 * measured is not a positive finite number or simulated is not finite (a
 * group must not report a case it could not compute). */
int val_add(val_set *s, const char *subset, const char *name, double measured, double simulated, const char *unit,
            double x, sim_err *err);
int val_set_count(const val_set *s);
const val_case *val_set_get(const val_set *s, int i);
/* Adds the simulated breakdown and a note (may be NULL) to the last case added. */
void val_case_detail(val_set *s, double compute_s, double exposed_s, double bubble_s, const char *note);
/* The last case's kernel seconds by class (sim_result.kernel_s). */
void val_case_kernels(val_set *s, const double kernel_s[SIM_KCLASS_COUNT]);

/* Records a row the group could not simulate (subset may be NULL). */
int val_skip(val_set *s, const char *subset, const char *name, const char *kind, const char *reason, sim_err *err);
int val_skip_count(const val_set *s);
const val_skipped *val_skip_get(const val_set *s, int i);
/* For groups whose rows are configurations: how many rows the data hold and
 * how many of them trainsim can express (-1 = not given).  The report
 * prints them beside the number of cases simulated. */
void val_set_rows(val_set *s, int in_data, int expressible);
void val_get_rows(const val_set *s, int *in_data, int *expressible);

/* Signed relative error in percent: 100 (simulated − measured) / measured. */
double val_error_pct(double measured, double simulated);

typedef struct val_stats {
    int n;
    double mape;       /* mean of |error %| */
    double worst;      /* max |error %| */
    int worst_index;   /* index into the set of the worst case, -1 if n = 0 */
    double bias;       /* mean signed error % (positive: simulation too slow/high) */
} val_stats;

/* Statistics over the cases of a subset (NULL = every case of the set). */
void val_stats_of(const val_set *s, const char *subset, val_stats *out);

/* What a group's run function gets. */
typedef struct val_ctx {
    const char *data_dir;  /* validation/data (copied data sets, PROVENANCE.md) */
    sim_options opt;       /* simulation options every case uses */
    int verbose;
    /* For groups of whole training runs (g_e2e.c): all = every expressible
     * row, not only the subset ctest checks; map_only = map the rows and
     * record what cannot be expressed, simulate nothing (--unexpressed);
     * fidelity: 0 = each row as its cost estimate decides, 1 = every row
     * simulated whole, 2 = every row by the planner's fast fidelity; rows:
     * "ID,ID,..." only these rows (NULL = all); emit_dir: write each
     * expressible row's cluster, model and `trainsim run` command there. */
    int all, map_only, fidelity;
    const char *rows, *emit_dir;
} val_ctx;

/* Returns the malloc'd path data_dir/rel. */
char *val_data_path(const val_ctx *ctx, const char *rel);

typedef int (*val_group_fn)(const val_ctx *ctx, val_set *out, sim_err *err);

typedef struct val_group {
    const char *name;     /* --group NAME, key in thresholds.json */
    const char *what;     /* one line: data, platform, statistic compared */
    const char *x_label;  /* what val_case.x is ("message bytes"), NULL if unused */
    val_group_fn run;
} val_group;

/* The registry (groups.c).  Returns the table and its length. */
const val_group *val_groups(int *n);
const val_group *val_group_find(const char *name);

/* Thresholds (validation/thresholds.json):
 *   {"set": "DATE", "commit": "HASH", "note": "...",
 *    "groups": {"GROUP": {"mape": 12.5, "worst": 40, "target": "..."},
 *               "GROUP/SUBSET": {...}}}
 * "mape" and "worst" are maxima in percent; either may be absent.  A group
 * with subsets is checked per subset ("GROUP/SUBSET") and, if it has an
 * entry, as a whole.  "bias" (optional) limits the absolute mean signed
 * error in percent.  "cases" (optional) is the fewest cases the entry's
 * group or subset must produce: a group whose rows cannot be expressed yet
 * records 0 (its skipped rows say why), one whose rows can records how many,
 * so that rows becoming inexpressible fail --check. */
typedef struct val_thresholds val_thresholds;

val_thresholds *val_thresholds_load(const char *path, sim_err *err);
void val_thresholds_free(val_thresholds *t);
/* The file's "set" and "commit" fields ("" when absent). */
const char *val_thresholds_set(const val_thresholds *t);
const char *val_thresholds_commit(const val_thresholds *t);
/* Looks up "key" (GROUP or GROUP/SUBSET).  Returns 1 and fills the limits
 * (NAN where absent) if recorded, 0 if not. */
int val_thresholds_get(const val_thresholds *t, const char *key, double *mape_max, double *worst_max);
/* The entry's "cases" minimum, or -1 when it records none (or there is no entry). */
int val_thresholds_cases(const val_thresholds *t, const char *key);
/* The entry's "bias" limit (largest |mean signed error| in percent), NAN when none. */
double val_thresholds_bias(const val_thresholds *t, const char *key);

#endif
