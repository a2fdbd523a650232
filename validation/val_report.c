/* val_report.c — validation results as a text table, JSON, CSV and SVG, and
 * the threshold check (see val_report.h).  The SVG writer is a few hundred
 * bytes of markup per panel written by hand: no plotting dependency. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json.h"
#include "sim/outfile.h"
#include "val_report.h"

#define MAX_SUBSETS 16

int val_subsets(const val_set *s, const char **out, int max)
{
    int n = 0;
    for (int i = 0; i < val_set_count(s); i++) {
        const char *sub = val_set_get(s, i)->subset;
        if (!sub[0])
            continue;
        int seen = 0;
        for (int j = 0; j < n && !seen; j++)
            seen = !strcmp(out[j], sub);
        if (!seen && n < max)
            out[n++] = sub;
    }
    return n;
}

/* One line of the check: a group or one of its subsets. */
typedef struct unit_check {
    char key[96];
    val_stats st;
    int has;        /* a threshold is recorded */
    double mape_max, worst_max, bias_max;
    int cases_min;  /* -1: none recorded */
    int ok;
} unit_check;

static void check_unit(const val_result *r, const char *subset, const val_thresholds *t, unit_check *u)
{
    memset(u, 0, sizeof *u);
    if (subset)
        snprintf(u->key, sizeof u->key, "%s/%s", r->group->name, subset);
    else
        snprintf(u->key, sizeof u->key, "%s", r->group->name);
    val_stats_of(r->set, subset, &u->st);
    u->has = val_thresholds_get(t, u->key, &u->mape_max, &u->worst_max);
    u->cases_min = val_thresholds_cases(t, u->key);
    u->bias_max = val_thresholds_bias(t, u->key);
    u->ok = !r->error && (!u->has || ((isnan(u->mape_max) || u->st.mape <= u->mape_max) &&
                                       (isnan(u->worst_max) || u->st.worst <= u->worst_max) &&
                                       (isnan(u->bias_max) || fabs(u->st.bias) <= u->bias_max))) &&
            (u->cases_min < 0 || u->st.n >= u->cases_min);
}

static int has_limits(const unit_check *u)
{
    return u->has && (!isnan(u->mape_max) || !isnan(u->worst_max) || !isnan(u->bias_max));
}

/* Units of a result: the whole group, then each subset. */
static int units_of(const val_result *r, const val_thresholds *t, unit_check *u, int max)
{
    const char *subs[MAX_SUBSETS];
    int ns = val_subsets(r->set, subs, MAX_SUBSETS);
    int n = 0;
    check_unit(r, NULL, t, &u[n++]);
    for (int i = 0; i < ns && n < max; i++)
        check_unit(r, subs[i], t, &u[n++]);
    return n;
}

/* The failures of one group that are not a unit over its limits: none
 * recorded, no cases (unless the entry says 0 are expected), cases but no
 * limit anywhere (rows became expressible: record their errors). */
static void check_group(const val_result *r, const unit_check *u, int nu, int check, FILE *log, int *failed)
{
    int any = 0, limits = 0;
    for (int j = 0; j < nu; j++) {
        any |= u[j].has;
        limits |= has_limits(&u[j]);
    }
    const char *g = r->group->name;
    int n = val_set_count(r->set);
    if (!any) {
        *failed = 1;
        if (check)
            fprintf(log, "trainsim: validate --check: no threshold recorded for group %s in thresholds.json\n", g);
    } else if (n == 0 && u[0].cases_min != 0) {
        *failed = 1;
        if (check)
            fprintf(log, "trainsim: validate --check: group %s produced no cases\n", g);
    } else if (n > 0 && !limits) {
        *failed = 1;
        if (check)
            fprintf(log,
                    "trainsim: validate --check: group %s produced %d cases but thresholds.json records no mape or "
                    "worst limit for it (rows became expressible: run it and record what it measures)\n",
                    g, n);
    }
    for (int j = 0; j < nu; j++)
        if (u[j].cases_min >= 0 && u[j].st.n < u[j].cases_min) {
            *failed = 1;
            if (check)
                fprintf(log,
                        "trainsim: validate --check: %s produced %d cases, thresholds.json expects at least %d "
                        "(rows that ran no longer do: see --unexpressed)\n",
                        u[j].key, u[j].st.n, u[j].cases_min);
        }
}

void val_report_check(const val_result *r, int n, const val_thresholds *t, int check, FILE *log, int *failed)
{
    *failed = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].error) {
            *failed = 1;
            continue; /* already reported */
        }
        unit_check u[MAX_SUBSETS + 1];
        int nu = units_of(&r[i], t, u, MAX_SUBSETS + 1);
        for (int j = 0; j < nu; j++) {
            int over = u[j].has && !u[j].ok && !(u[j].cases_min >= 0 && u[j].st.n < u[j].cases_min);
            if (over) {
                *failed = 1;
                if (check)
                    fprintf(log,
                            "trainsim: validate --check: %s: MAPE %.2f %% (limit %s%.2f), worst %.2f %% (limit %s%.2f, "
                            "case \"%s\"), bias %+.2f %% (limit %s%.2f) exceeds the threshold in thresholds.json\n",
                            u[j].key, u[j].st.mape, isnan(u[j].mape_max) ? "none " : "",
                            isnan(u[j].mape_max) ? 0 : u[j].mape_max, u[j].st.worst,
                            isnan(u[j].worst_max) ? "none " : "", isnan(u[j].worst_max) ? 0 : u[j].worst_max,
                            u[j].st.worst_index >= 0 ? val_set_get(r[i].set, u[j].st.worst_index)->name : "",
                            u[j].st.bias, isnan(u[j].bias_max) ? "none " : "", isnan(u[j].bias_max) ? 0 : u[j].bias_max);
            }
        }
        check_group(&r[i], u, nu, check, log, failed);
    }
}

static const char *fmt_limit(double mape_max, double worst_max, int has, char *buf, size_t n)
{
    if (!has) {
        snprintf(buf, n, "-");
        return buf;
    }
    char a[16] = "-", b[16] = "-";
    if (!isnan(mape_max))
        snprintf(a, sizeof a, "%g", mape_max);
    if (!isnan(worst_max))
        snprintf(b, sizeof b, "%g", worst_max);
    snprintf(buf, n, "%s / %s", a, b);
    return buf;
}

/* Mean shares of the simulated time in compute, exposed communication and
 * bubble over the cases that carry a breakdown; returns how many do. */
static int shares_of(const val_set *s, double sh[3])
{
    int n = 0;
    sh[0] = sh[1] = sh[2] = 0;
    for (int i = 0; i < val_set_count(s); i++) {
        const val_case *c = val_set_get(s, i);
        double t = c->compute_s + c->exposed_s + c->bubble_s;
        if (!(t > 0))
            continue;
        sh[0] += c->compute_s / t;
        sh[1] += c->exposed_s / t;
        sh[2] += c->bubble_s / t;
        n++;
    }
    for (int k = 0; n && k < 3; k++)
        sh[k] *= 100.0 / n;
    return n;
}

/* Mean shares of the kernels' own seconds by class (sim_kclass) over the
 * cases that carry them; returns how many do. */
static int kernel_shares_of(const val_set *s, double sh[SIM_KCLASS_COUNT])
{
    int n = 0;
    memset(sh, 0, sizeof(double) * SIM_KCLASS_COUNT);
    for (int i = 0; i < val_set_count(s); i++) {
        const val_case *c = val_set_get(s, i);
        double t = 0;
        for (int k = 0; k < SIM_KCLASS_COUNT; k++)
            t += c->kernel_s[k];
        if (!(t > 0))
            continue;
        for (int k = 0; k < SIM_KCLASS_COUNT; k++)
            sh[k] += c->kernel_s[k] / t;
        n++;
    }
    for (int k = 0; n && k < SIM_KCLASS_COUNT; k++)
        sh[k] *= 100.0 / n;
    return n;
}

/* The distinct skip kinds of a set with the rows that have each (a row
 * counts under every kind it has; first-seen order). */
static int skip_kinds(const val_set *s, char kind[][64], int *count, int max)
{
    int n = 0;
    for (int i = 0; i < val_skip_count(s); i++) {
        const char *k = val_skip_get(s, i)->kind;
        while (*k) {
            size_t len = strcspn(k, "|");
            char one[64];
            snprintf(one, sizeof one, "%.*s", (int)(len < 63 ? len : 63), k);
            int j = 0;
            while (j < n && strcmp(kind[j], one))
                j++;
            if (j < n)
                count[j]++;
            else if (n < max) {
                memcpy(kind[n], one, sizeof one);
                count[n++] = 1;
            }
            k += len + (k[len] == '|');
        }
    }
    return n;
}

/* What a group of configurations did with its rows: counts, the breakdown
 * of the simulated time, and why rows were not simulated (by kind). */
static void text_rows(const val_result *r, FILE *out)
{
    int in_data, expressible;
    val_get_rows(r->set, &in_data, &expressible);
    if (in_data >= 0)
        fprintf(out, "  rows: %d in the data, %d expressible, %d simulated%s\n", in_data, expressible,
                val_set_count(r->set),
                val_set_count(r->set) < expressible ? " (the subset ctest checks; --all for every expressible row)" : "");
    double sh[3];
    if (shares_of(r->set, sh))
        fprintf(out, "  simulated time (mean share over the cases): compute %.1f %%, exposed communication %.1f %%, "
                     "bubble/idle %.1f %%\n", sh[0], sh[1], sh[2]);
    double ks[SIM_KCLASS_COUNT];
    int nks = kernel_shares_of(r->set, ks);
    if (nks) {
        fprintf(out, "  kernels (mean share of their own seconds over the %d cases that carry them):", nks);
        const char *sep = " ";
        for (int k = 0; k < SIM_KCLASS_COUNT; k++)
            if (ks[k] > 0) {
                fprintf(out, "%s%s %.1f %%", sep, sim_kclass_label(k), ks[k]);
                sep = ", ";
            }
        fputc('\n', out);
    }
    enum { MAXK = 64 };
    char kind[MAXK][64];
    int count[MAXK];
    int nk = skip_kinds(r->set, kind, count, MAXK);
    for (int a = 1; a < nk; a++) /* most rows first; insertion sort keeps first-seen order among equals */
        for (int b = a; b > 0 && count[b] > count[b - 1]; b--) {
            char t[64];
            memcpy(t, kind[b], sizeof t);
            memcpy(kind[b], kind[b - 1], sizeof t);
            memcpy(kind[b - 1], t, sizeof t);
            int c = count[b];
            count[b] = count[b - 1];
            count[b - 1] = c;
        }
    if (nk)
        fprintf(out,
                "  not simulated: %d rows; what they lack, rows per cause (a row counts under each of its causes;\n"
                "  trainsim validate --group %s --unexpressed lists every row with its reasons):\n",
                val_skip_count(r->set), r->group->name);
    for (int k = 0; k < nk; k++)
        fprintf(out, "    %4d  %s\n", count[k], kind[k]);
}

void val_report_unexpressed(const val_result *r, int n, FILE *out)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s: %s\n", r[i].group->name, r[i].group->what);
        if (r[i].error) {
            fprintf(out, "  error: %s\n\n", r[i].err.msg);
            continue;
        }
        int in_data, expressible;
        val_get_rows(r[i].set, &in_data, &expressible);
        if (in_data >= 0)
            fprintf(out, "  %d rows in the data, %d expressible, %d not:\n", in_data, expressible,
                    val_skip_count(r[i].set));
        for (int k = 0; k < val_skip_count(r[i].set); k++) {
            const val_skipped *x = val_skip_get(r[i].set, k);
            fprintf(out, "  %-12s %-16s %s\n", x->name, x->subset[0] ? x->subset : "-", x->reason);
        }
        fputc('\n', out);
    }
}

void val_report_text(const val_result *r, int n, const val_thresholds *t, FILE *out)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s: %s\n", r[i].group->name, r[i].group->what);
        if (r[i].error) {
            fprintf(out, "  error: %s\n\n", r[i].err.msg);
            continue;
        }
        int w = 20, notes = 0;
        for (int k = 0; k < val_set_count(r[i].set); k++) {
            int l = (int)strlen(val_set_get(r[i].set, k)->name);
            w = l > w ? l : w;
            notes |= val_set_get(r[i].set, k)->note[0] != 0;
        }
        fprintf(out, "  %-*s %-14s %17s %17s %9s%s\n", w, "case", "subset", "measured", "simulated", "error %",
                notes ? "  note" : "");
        for (int k = 0; k < val_set_count(r[i].set); k++) {
            const val_case *c = val_set_get(r[i].set, k);
            fprintf(out, "  %-*s %-14s %11.5g %-5s %11.5g %-5s %+9.2f%s%s\n", w, c->name,
                    c->subset[0] ? c->subset : "-", c->measured, c->unit, c->simulated, c->unit,
                    val_error_pct(c->measured, c->simulated), c->note[0] ? "  " : "", c->note);
        }
        text_rows(&r[i], out);
        fputc('\n', out);
    }
    if (t)
        fprintf(out, "thresholds set %s at %s\n", val_thresholds_set(t), val_thresholds_commit(t));
    fprintf(out, "%-36s %6s %9s %9s %9s  %-14s %-6s %s\n", "group / subset", "cases", "MAPE %", "worst %", "bias %",
            "limit MAPE/worst", "status", "worst case");
    for (int i = 0; i < n; i++) {
        if (r[i].error) {
            fprintf(out, "%-36s %6s %9s %9s %9s  %-14s %-6s %s\n", r[i].group->name, "-", "-", "-", "-", "-", "ERROR",
                    r[i].err.msg);
            continue;
        }
        unit_check u[MAX_SUBSETS + 1];
        int nu = units_of(&r[i], t, u, MAX_SUBSETS + 1);
        for (int j = 0; j < nu; j++) {
            char lim[48];
            const char *worst = u[j].st.worst_index >= 0 ? val_set_get(r[i].set, u[j].st.worst_index)->name : "-";
            fprintf(out, "%-36s %6d %9.2f %9.2f %+9.2f  %-16s %-6s %s\n", u[j].key, u[j].st.n, u[j].st.mape,
                    u[j].st.worst, u[j].st.bias, fmt_limit(u[j].mape_max, u[j].worst_max, u[j].has, lim, sizeof lim),
                    u[j].has ? (u[j].ok ? "ok" : "FAIL") : "-", worst);
        }
    }
}

static cJSON *stats_json(const val_result *r, const unit_check *u)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "cases", u->st.n);
    cJSON_AddNumberToObject(o, "mape_pct", u->st.mape);
    cJSON_AddNumberToObject(o, "worst_pct", u->st.worst);
    cJSON_AddNumberToObject(o, "bias_pct", u->st.bias);
    cJSON_AddStringToObject(o, "worst_case",
                            u->st.worst_index >= 0 ? val_set_get(r->set, u->st.worst_index)->name : "");
    if (u->has) {
        cJSON *th = cJSON_AddObjectToObject(o, "threshold");
        if (!isnan(u->mape_max))
            cJSON_AddNumberToObject(th, "mape_pct", u->mape_max);
        if (!isnan(u->worst_max))
            cJSON_AddNumberToObject(th, "worst_pct", u->worst_max);
        if (!isnan(u->bias_max))
            cJSON_AddNumberToObject(th, "abs_bias_pct", u->bias_max);
        if (u->cases_min >= 0)
            cJSON_AddNumberToObject(th, "cases_min", u->cases_min);
        cJSON_AddBoolToObject(o, "within_threshold", u->ok);
    }
    return o;
}

/* Rows of a group of configurations: counts, mean breakdown shares and the
 * rows not simulated with their reasons. */
static void rows_json(const val_result *r, cJSON *g)
{
    int in_data, expressible;
    val_get_rows(r->set, &in_data, &expressible);
    if (in_data >= 0) {
        cJSON *o = cJSON_AddObjectToObject(g, "rows");
        cJSON_AddNumberToObject(o, "in_data", in_data);
        cJSON_AddNumberToObject(o, "expressible", expressible);
        cJSON_AddNumberToObject(o, "simulated", val_set_count(r->set));
    }
    double sh[3];
    if (shares_of(r->set, sh)) {
        cJSON *o = cJSON_AddObjectToObject(g, "breakdown_share_pct");
        cJSON_AddNumberToObject(o, "compute", sh[0]);
        cJSON_AddNumberToObject(o, "exposed_comm", sh[1]);
        cJSON_AddNumberToObject(o, "bubble", sh[2]);
    }
    if (val_skip_count(r->set) == 0)
        return;
    cJSON *a = cJSON_AddArrayToObject(g, "not_simulated");
    for (int k = 0; k < val_skip_count(r->set); k++) {
        const val_skipped *x = val_skip_get(r->set, k);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "row", x->name);
        if (x->subset[0])
            cJSON_AddStringToObject(o, "subset", x->subset);
        cJSON_AddStringToObject(o, "kind", x->kind);
        cJSON_AddStringToObject(o, "reason", x->reason);
        cJSON_AddItemToArray(a, o);
    }
}

/* Whether a case carries its kernels' seconds by class (whole iterations
 * do, simulated or by the planner's fast fidelity; single-kernel and
 * collective cases do not). */
static int has_kernels(const val_case *c)
{
    for (int j = 0; j < SIM_KCLASS_COUNT; j++)
        if (c->kernel_s[j] > 0)
            return 1;
    return 0;
}

void val_report_json(const val_result *r, int n, const val_thresholds *t, FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "trainsim_version", TRAINSIM_VERSION);
    if (t) {
        cJSON *th = cJSON_AddObjectToObject(root, "thresholds");
        cJSON_AddStringToObject(th, "set", val_thresholds_set(t));
        cJSON_AddStringToObject(th, "commit", val_thresholds_commit(t));
    }
    cJSON *groups = cJSON_AddArrayToObject(root, "groups");
    for (int i = 0; i < n; i++) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddItemToArray(groups, g);
        cJSON_AddStringToObject(g, "name", r[i].group->name);
        cJSON_AddStringToObject(g, "what", r[i].group->what);
        if (r[i].group->x_label)
            cJSON_AddStringToObject(g, "x", r[i].group->x_label);
        if (r[i].error) {
            cJSON_AddStringToObject(g, "error", r[i].err.msg);
            continue;
        }
        unit_check u[MAX_SUBSETS + 1];
        int nu = units_of(&r[i], t, u, MAX_SUBSETS + 1);
        cJSON_AddItemToObject(g, "stats", stats_json(&r[i], &u[0]));
        if (nu > 1) {
            cJSON *subs = cJSON_AddObjectToObject(g, "subsets");
            for (int j = 1; j < nu; j++)
                cJSON_AddItemToObject(subs, strchr(u[j].key, '/') + 1, stats_json(&r[i], &u[j]));
        }
        rows_json(&r[i], g);
        cJSON *cases = cJSON_AddArrayToObject(g, "cases");
        for (int k = 0; k < val_set_count(r[i].set); k++) {
            const val_case *c = val_set_get(r[i].set, k);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", c->name);
            if (c->subset[0])
                cJSON_AddStringToObject(o, "subset", c->subset);
            cJSON_AddStringToObject(o, "unit", c->unit);
            cJSON_AddNumberToObject(o, "measured", c->measured);
            cJSON_AddNumberToObject(o, "simulated", c->simulated);
            cJSON_AddNumberToObject(o, "error_pct", val_error_pct(c->measured, c->simulated));
            if (c->x > 0)
                cJSON_AddNumberToObject(o, "x", c->x);
            if (c->note[0])
                cJSON_AddStringToObject(o, "note", c->note);
            if (c->compute_s + c->exposed_s + c->bubble_s > 0) {
                cJSON *b = cJSON_AddObjectToObject(o, "breakdown");
                cJSON_AddNumberToObject(b, "compute_s", c->compute_s);
                cJSON_AddNumberToObject(b, "exposed_comm_s", c->exposed_s);
                cJSON_AddNumberToObject(b, "bubble_s", c->bubble_s);
                if (has_kernels(c)) {
                    cJSON *kc = cJSON_AddObjectToObject(b, "kernels_s");
                    for (int j = 0; j < SIM_KCLASS_COUNT; j++)
                        cJSON_AddNumberToObject(kc, sim_kclass_name(j), c->kernel_s[j]);
                }
            }
            cJSON_AddItemToArray(cases, o);
        }
    }
    sim_json_print(out, root);
}

static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void val_report_csv(const val_result *r, int n, FILE *out)
{
    fputs("group,subset,case,unit,x,measured,simulated,error_pct,compute_s,exposed_comm_s,bubble_s,note", out);
    for (int j = 0; j < SIM_KCLASS_COUNT; j++)
        fprintf(out, ",kernels_%s_s", sim_kclass_name(j));
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        for (int k = 0; !r[i].error && k < val_set_count(r[i].set); k++) {
            const val_case *c = val_set_get(r[i].set, k);
            csv_field(out, r[i].group->name);
            fputc(',', out);
            csv_field(out, c->subset);
            fputc(',', out);
            csv_field(out, c->name);
            fputc(',', out);
            csv_field(out, c->unit);
            fprintf(out, ",%.10g,%.10g,%.10g,%.6f,%.10g,%.10g,%.10g,", c->x, c->measured, c->simulated,
                    val_error_pct(c->measured, c->simulated), c->compute_s, c->exposed_s, c->bubble_s);
            csv_field(out, c->note);
            for (int j = 0; j < SIM_KCLASS_COUNT; j++) /* empty where not given (not a whole iteration) */
                if (has_kernels(c))
                    fprintf(out, ",%.10g", c->kernel_s[j]);
                else
                    fputc(',', out);
            fputc('\n', out);
        }
    }
}

/* ---- SVG -------------------------------------------------------------- */

#define PW 520   /* panel width, height */
#define PH 400
#define ML 70    /* margins */
#define MR 20
#define MT 50
#define MB 50

typedef struct axis {
    double lo, hi;
    int log;
} axis;

static void axis_fit(axis *a, double lo, double hi)
{
    if (!(hi > lo)) {
        double c = lo != 0 ? fabs(lo) : 1;
        lo -= 0.1 * c;
        hi += 0.1 * c;
    }
    a->log = lo > 0 && hi / lo >= 100; /* log where the values span two decades or more */
    if (a->log) {
        a->lo = pow(10, floor(log10(lo)));
        a->hi = pow(10, ceil(log10(hi)));
    } else {
        double pad = 0.05 * (hi - lo);
        a->lo = lo - pad < 0 && lo >= 0 ? 0 : lo - pad;
        a->hi = hi + pad;
    }
}

static double axis_pos(const axis *a, double v, double p0, double p1)
{
    double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return p0 + f * (p1 - p0);
}

static void tick_label(char *buf, size_t n, double v)
{
    double a = fabs(v);
    if (a != 0 && (a >= 1e5 || a < 1e-3)) {
        int e = (int)floor(log10(a) + 1e-9);
        double m = v / pow(10, e);
        if (fabs(m - 1) < 1e-9)
            snprintf(buf, n, "1e%d", e);
        else
            snprintf(buf, n, "%.3ge%d", m, e);
    } else {
        snprintf(buf, n, "%.4g", v);
    }
}

/* Tick values along an axis: decades for log, ~5 round steps for linear. */
static int ticks(const axis *a, double *v, int max)
{
    int n = 0;
    if (a->log) {
        for (double d = a->lo; d <= a->hi * 1.0001 && n < max; d *= 10)
            v[n++] = d;
        return n;
    }
    double span = a->hi - a->lo, step = pow(10, floor(log10(span / 5)));
    if (span / step > 10)
        step *= 2;
    if (span / step > 10)
        step *= 2.5;
    for (double x = ceil(a->lo / step) * step; x <= a->hi + 1e-12 * span && n < max; x += step)
        v[n++] = fabs(x) < 1e-12 * span ? 0 : x;
    return n;
}

static void svg_text_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
}

static void svg_axes(FILE *f, double ox, double oy, const axis *ax, const axis *ay, const char *xl, const char *yl)
{
    double x0 = ox + ML, x1 = ox + PW - MR, y0 = oy + PH - MB, y1 = oy + MT;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", x0, y1,
            x1 - x0, y0 - y1);
    double tv[64];
    char lab[32];
    int nt = ticks(ax, tv, 64);
    for (int i = 0; i < nt; i++) {
        double x = axis_pos(ax, tv[i], x0, x1);
        tick_label(lab, sizeof lab, tv[i]);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
                x, y0, x, y1, x, y0 + 14, lab);
    }
    nt = ticks(ay, tv, 64);
    for (int i = 0; i < nt; i++) {
        double y = axis_pos(ay, tv[i], y0, y1);
        tick_label(lab, sizeof lab, tv[i]);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
                x0, y, x1, y, x0 - 4, y + 3, lab);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">", (x0 + x1) / 2, y0 + 32);
    svg_text_escaped(f, xl);
    fprintf(f, "%s</text>\n", ax->log ? " (log)" : "");
    fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">",
            ox + 16, (y0 + y1) / 2);
    svg_text_escaped(f, yl);
    fprintf(f, "%s</text>\n", ay->log ? " (log)" : "");
}

static void svg_panel(FILE *f, const val_result *r, const val_thresholds *t, double ox, double oy)
{
    const val_set *s = r->set;
    int n = val_set_count(s);
    unit_check u;
    check_unit(r, NULL, t, &u);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">", ox + ML, oy + 18);
    svg_text_escaped(f, r->group->name);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", ox + ML, oy + 34);
    if (r->error) {
        fputs("error: could not run", f);
        fputs("</text>\n", f);
        return;
    }
    fprintf(f, "%d cases, MAPE %.1f %%, worst %.1f %%, bias %+.1f %%", u.st.n, u.st.mape, u.st.worst, u.st.bias);
    if (val_skip_count(s))
        fprintf(f, "; %d rows not simulated", val_skip_count(s));
    fputs("</text>\n", f);
    if (n == 0)
        return;
    const char *unit = val_set_get(s, 0)->unit;
    int by_x = r->group->x_label != NULL;
    double vlo = INFINITY, vhi = -INFINITY, xlo = INFINITY, xhi = -INFINITY;
    for (int i = 0; i < n; i++) {
        const val_case *c = val_set_get(s, i);
        by_x &= c->x > 0;
        double lo = fmin(c->measured, c->simulated), hi = fmax(c->measured, c->simulated);
        vlo = fmin(vlo, lo);
        vhi = fmax(vhi, hi);
        xlo = fmin(xlo, c->x);
        xhi = fmax(xhi, c->x);
    }
    if (vlo <= 0) /* a zero simulated value cannot go on a log axis */
        vlo = fmin(vhi, 1e-12);
    axis ax, ay;
    char yl[64], xl[96];
    double x0 = ox + ML, x1 = ox + PW - MR, y0 = oy + PH - MB, y1 = oy + MT;
    if (by_x) {
        axis_fit(&ax, xlo, xhi);
        axis_fit(&ay, vlo, vhi);
        snprintf(xl, sizeof xl, "%s", r->group->x_label);
        snprintf(yl, sizeof yl, "%s", unit);
    } else {
        axis_fit(&ax, vlo, vhi);
        ay = ax;
        snprintf(xl, sizeof xl, "measured (%s)", unit);
        snprintf(yl, sizeof yl, "simulated (%s)", unit);
    }
    svg_axes(f, ox, oy, &ax, &ay, xl, yl);
    if (!by_x) { /* the diagonal: simulated = measured */
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n", x0,
                y0, x1, y1);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const val_case *c = val_set_get(s, i);
            double v = pass ? c->simulated : c->measured;
            if (ay.log && v <= 0)
                continue;
            double px = by_x ? axis_pos(&ax, c->x, x0, x1) : axis_pos(&ax, c->measured, x0, x1);
            double py = by_x ? axis_pos(&ay, v, y0, y1) : axis_pos(&ay, c->simulated, y0, y1);
            if (!by_x && pass == 0)
                continue;
            if (pass == 0 || !by_x)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", px, py,
                        pass ? "#d95f02" : "#1b9e77");
            else
                fprintf(f,
                        "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" transform=\"translate(-3,-3)\" stroke=\"#d95f02\" "
                        "stroke-width=\"1.5\"><title>",
                        px, py);
            svg_text_escaped(f, c->name);
            fprintf(f, ": measured %.4g, simulated %.4g %s (%+.1f %%)</title>%s\n", c->measured, c->simulated, unit,
                    val_error_pct(c->measured, c->simulated), pass == 0 || !by_x ? "</circle>" : "</path>");
        }
    }
    if (by_x) {
        fprintf(f,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1b9e77\"/><text x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"10\">measured</text>\n",
                x0 + 10, y1 + 12, x0 + 18, y1 + 15);
        fprintf(f,
                "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" stroke=\"#d95f02\" stroke-width=\"1.5\"/><text x=\"%.1f\" "
                "y=\"%.1f\" font-size=\"10\">simulated</text>\n",
                x0 + 7, y1 + 23, x0 + 18, y1 + 29);
    }
}

int val_report_svg(const val_result *r, int n, const val_thresholds *t, const char *path, sim_err *err)
{
    sim_outfile out;
    FILE *f = sim_out_open(&out, path, err);
    if (!f)
        return -1;
    int cols = n < 2 ? 1 : 2, rows = (n + cols - 1) / cols;
    if (rows < 1)
        rows = 1;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            cols * PW, rows * PH, cols * PW, rows * PH);
    for (int i = 0; i < n; i++)
        svg_panel(f, &r[i], t, (i % cols) * PW, (i / cols) * PH);
    fputs("</svg>\n", f);
    return sim_out_commit(&out, err);
}
