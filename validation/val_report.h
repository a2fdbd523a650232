/* val_report.h — reporting validation results: text table, JSON, CSV, SVG,
 * and the threshold check. */
#ifndef VAL_REPORT_H
#define VAL_REPORT_H

#include <stdio.h>

#include "val.h"

typedef struct val_result {
    const val_group *group;
    val_set *set;
    int error;    /* the group could not run: err says why */
    sim_err err;
} val_result;

/* Compares each group (and subset) with its thresholds; prints one line per
 * failure to `log` when check is set.  *failed = 1 when any group errored,
 * exceeded a threshold, or has none recorded. */
void val_report_check(const val_result *r, int n, const val_thresholds *t, int check, FILE *log, int *failed);
void val_report_text(const val_result *r, int n, const val_thresholds *t, FILE *out);
void val_report_json(const val_result *r, int n, const val_thresholds *t, FILE *out);
void val_report_csv(const val_result *r, int n, FILE *out);
/* Every row each group did not simulate, with its reason (--unexpressed). */
void val_report_unexpressed(const val_result *r, int n, FILE *out);
/* One panel per group: simulated against measured (or both against x when
 * the cases carry one), log axes where the values span decades. */
int val_report_svg(const val_result *r, int n, const val_thresholds *t, const char *path, sim_err *err);

/* The distinct non-empty subsets of a set, in first-seen order (up to max). */
int val_subsets(const val_set *s, const char **out, int max);

#endif
