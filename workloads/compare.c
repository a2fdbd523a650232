/* compare.c — see compare.h.  Each value is generated, checked and
 * simulated on its own (the simulation in a child process, since SimGrid
 * keeps one engine per process); an impossible value (a strategy that does
 * not divide, does not fit in memory ...) is reported in its column instead
 * of stopping the others. */
#include "workloads/compare.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/gpt.h"

int wl_compare_parse(const char *spec, char *key, size_t keylen, char ***values, int *nvalues, sim_err *err)
{
    *values = NULL;
    *nvalues = 0;
    const char *eq = spec ? strchr(spec, '=') : NULL;
    if (!eq || eq == spec)
        return sim_errf(err, "--compare: expected KEY=v1,v2,... (for example pipeline=1f1b,gpipe or zero=0,1,2,3), "
                        "got \"%s\"", spec ? spec : "");
    size_t kl = (size_t)(eq - spec);
    while (kl > 0 && (spec[kl - 1] == ' ' || spec[kl - 1] == '\t'))
        kl--;
    if (kl + 1 > keylen || memchr(spec, ',', kl))
        return sim_errf(err, "--compare: bad key in \"%s\"", spec);
    memcpy(key, spec, kl);
    key[kl] = 0;
    char *copy = strdup(eq + 1);
    if (!copy)
        return sim_errf(err, "out of memory");
    int cap = 8, n = 0;
    char **v = malloc(sizeof *v * (size_t)cap);
    for (char *tok = strtok(copy, ","); tok && v; tok = strtok(NULL, ",")) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        size_t l = strlen(tok);
        while (l > 0 && (tok[l - 1] == ' ' || tok[l - 1] == '\t'))
            tok[--l] = 0;
        if (!*tok)
            continue;
        if (l >= sizeof ((wl_compare_row *)0)->value) {
            free(copy);
            for (int i = 0; i < n; i++)
                free(v[i]);
            free(v);
            return sim_errf(err, "--compare: value \"%s\" is too long", tok);
        }
        if (n == cap) {
            cap *= 2;
            char **nv = realloc(v, sizeof *v * (size_t)cap);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = strdup(tok);
    }
    free(copy);
    if (!v)
        return sim_errf(err, "out of memory");
    if (n == 0) {
        free(v);
        return sim_errf(err, "--compare %s: give at least one value after '='", key);
    }
    *values = v;
    *nvalues = n;
    return 0;
}

wl_compare_row *wl_compare_run(const sim_machine *mach, const wl_model *model, const char *base_strategy,
                               const char *spec, const sim_options *opt_in, int *nrows, sim_err *err)
{
    char key[64];
    char **values;
    int n;
    *nrows = 0;
    if (wl_compare_parse(spec, key, sizeof key, &values, &n, err))
        return NULL;
    /* the key must be a strategy key: try it on a default strategy with its
     * first value, so that a typo in the key fails once, here */
    {
        wl_strategy probe;
        wl_strategy_default(&probe);
        char text[160];
        snprintf(text, sizeof text, "%s=%.*s", key, (int)strcspn(values[0], "+"), values[0]);
        sim_err e2;
        if (wl_strategy_parse(text, &probe, &e2) && strstr(e2.msg, "unknown key")) {
            for (int i = 0; i < n; i++)
                free(values[i]);
            free(values);
            sim_errf(err, "--compare: %s", e2.msg);
            return NULL;
        }
    }
    wl_compare_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) {
        sim_errf(err, "out of memory");
        return NULL;
    }
    sim_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        sim_options_default(&opt);
    opt.trace_path = NULL; /* one trace or timeline file would be overwritten by each run */
    opt.memory_path = NULL;
    for (int i = 0; i < n; i++) {
        wl_compare_row *row = &rows[i];
        snprintf(row->value, sizeof row->value, "%s", values[i]);
        size_t len = strlen(base_strategy ? base_strategy : "") + strlen(key) + strlen(values[i]) + 4;
        char *text = malloc(len);
        snprintf(text, len, "%s%s%s=%s", base_strategy ? base_strategy : "",
                 base_strategy && base_strategy[0] ? "," : "", key, values[i]);
        /* a value may carry settings of other keys after '+'
         * ("oases+recompute=oases"): they apply to that run only */
        for (char *c = text; *c; c++)
            if (*c == '+')
                *c = ',';
        wl_strategy st, full;
        sim_err e;
        wl_strategy_default(&st);
        sim_schedule *s = NULL;
        if (wl_strategy_parse(text, &st, &e) == 0 && wl_gpt_resolve(model, &st, mach, &full, &e) == 0) {
            wl_strategy_format(&full, row->strategy, sizeof row->strategy);
            s = wl_gpt_generate(model, &full, mach, &e);
        }
        free(text);
        if (s && sim_run_isolated(s, mach, &opt, &row->r, &e) == 0) {
            double T = row->r.iteration_s;
            const sim_gpu *g = sim_machine_gpu(mach, 0);
            row->ok = 1;
            row->samples_per_s = s->meta.samples_per_iteration / T;
            row->tokens_per_s = s->meta.tokens_per_iteration / T;
            row->tflops_per_gpu = s->meta.model_flops_per_iteration / T / s->nranks / 1e12;
            double peak = g->peak_flops[s->meta.dtype] / 1e12;
            row->mfu = peak > 0 ? row->tflops_per_gpu / peak : 0;
        } else {
            snprintf(row->error, sizeof row->error, "%.1000s", e.msg);
        }
        sim_sched_free(s);
        free(values[i]);
    }
    free(values);
    *nrows = n;
    return rows;
}

void wl_compare_free(wl_compare_row *rows, int n)
{
    if (!rows)
        return;
    for (int i = 0; i < n; i++)
        if (rows[i].ok)
            sim_result_free(&rows[i].r);
    free(rows);
}

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)k;
        char *ns = realloc(b->s, cap);
        if (!ns)
            return;
        b->s = ns;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

static char *format_json(const wl_compare_row *rows, int n, const char *key, const sim_machine *mach,
                         const wl_model *model)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "compare", key);
    cJSON_AddStringToObject(o, "platform", mach->name);
    cJSON_AddStringToObject(o, "model", model->name);
    cJSON *info = wl_model_describe(model);
    if (info)
        cJSON_AddItemToObject(o, "model_info", info);
    cJSON_AddNumberToObject(o, "gpus", mach->ngpus);
    cJSON_AddNumberToObject(o, "memory_capacity_bytes", sim_machine_gpu(mach, 0)->mem_capacity);
    cJSON *runs = cJSON_AddArrayToObject(o, "runs");
    for (int i = 0; i < n; i++) {
        const wl_compare_row *r = &rows[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "value", r->value);
        cJSON_AddStringToObject(x, "strategy", r->strategy);
        cJSON_AddBoolToObject(x, "ok", r->ok);
        if (r->ok) {
            cJSON_AddNumberToObject(x, "iteration_time_s", r->r.iteration_s);
            cJSON_AddNumberToObject(x, "samples_per_s", r->samples_per_s);
            cJSON_AddNumberToObject(x, "tokens_per_s", r->tokens_per_s);
            cJSON_AddNumberToObject(x, "tflops_per_gpu", r->tflops_per_gpu);
            cJSON_AddNumberToObject(x, "mfu", r->mfu);
            cJSON *b = cJSON_AddObjectToObject(x, "breakdown");
            cJSON_AddNumberToObject(b, "compute_s", r->r.compute_s);
            cJSON_AddNumberToObject(b, "exposed_comm_s", r->r.exposed_comm_s);
            cJSON_AddNumberToObject(b, "bubble_s", r->r.idle_s);
            cJSON_AddNumberToObject(b, "comm_total_s", r->r.comm_s);
            cJSON *kc = cJSON_AddObjectToObject(b, "kernels_s"); /* each class at its kernels' own durations */
            for (int j = 0; j < SIM_KCLASS_COUNT; j++)
                cJSON_AddNumberToObject(kc, sim_kclass_name(j), r->r.kernel_s[j]);
            cJSON_AddNumberToObject(x, "peak_memory_bytes", r->r.peak_mem);
            cJSON_AddNumberToObject(x, "peak_memory_rank", r->r.peak_mem_rank);
            cJSON *k = cJSON_AddObjectToObject(x, "peak_memory_by_kind");
            for (int j = 0; j < SIM_MEM_KIND_COUNT; j++)
                cJSON_AddNumberToObject(k, sim_mem_kind_name(j), r->r.rank[r->r.peak_mem_rank].peak_by_kind[j]);
            cJSON_AddNumberToObject(x, "speedup_vs_first", rows[0].ok ? rows[0].r.iteration_s / r->r.iteration_s : 0);
        } else {
            cJSON_AddStringToObject(x, "error", r->error);
        }
        cJSON_AddItemToArray(runs, x);
    }
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    if (!txt)
        return NULL;
    size_t l = strlen(txt);
    char *out = malloc(l + 2);
    if (out) {
        memcpy(out, txt, l);
        out[l] = '\n';
        out[l + 1] = 0;
    }
    cJSON_free(txt);
    return out;
}

char *wl_compare_format(const wl_compare_row *rows, int n, const char *key, const sim_machine *mach,
                        const wl_model *model, int json)
{
    if (json)
        return format_json(rows, n, key, mach, model);
    sbuf b = {0};
    const sim_gpu *g = sim_machine_gpu(mach, 0);
    sb_printf(&b, "trainsim %s: %s on %s (%d x %s), compared by %s\n", TRAINSIM_VERSION, model->name, mach->name,
              mach->ngpus, g->model, key);
    sb_printf(&b, "%-26s", key);
#define W(i) ((int)strlen(rows[i].value) + 2 > 12 ? (int)strlen(rows[i].value) + 2 : 12)
    for (int i = 0; i < n; i++)
        sb_printf(&b, "%*s", W(i), rows[i].value);
    sb_printf(&b, "\n");
    struct {
        const char *label, *fmt;
        int what;
    } lines[] = {
        {"iteration time (s)", "%.4f", 0},  {"speed-up vs first", "%.2fx", 1},  {"samples/s", "%.2f", 2},
        {"tokens/s", "%.0f", 3},            {"TFLOP/s per GPU", "%.2f", 4},    {"MFU (%)", "%.1f", 5},
        {"compute (s)", "%.4f", 6},         {"  GEMM kernels (s)", "%.4f", 11}, {"  attention kernels (s)", "%.4f", 12},
        {"  element-wise kernels (s)", "%.4f", 13}, {"  optimizer kernels (s)", "%.4f", 14},
        {"exposed comm (s)", "%.4f", 7},    {"bubble/idle (s)", "%.4f", 8},    {"communication (s)", "%.4f", 9},
        {"peak memory (GB)", "%.2f", 10},
    };
    for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
        sb_printf(&b, "%-26s", lines[l].label);
        for (int i = 0; i < n; i++) {
            const wl_compare_row *r = &rows[i];
            if (!r->ok || (lines[l].what == 1 && !rows[0].ok)) {
                sb_printf(&b, "%*s", W(i), !r->ok && l == 0 ? "cannot run" : "-");
                continue;
            }
            double v = 0;
            switch (lines[l].what) {
            case 0: v = r->r.iteration_s; break;
            case 1: v = rows[0].ok ? rows[0].r.iteration_s / r->r.iteration_s : 0; break;
            case 2: v = r->samples_per_s; break;
            case 3: v = r->tokens_per_s; break;
            case 4: v = r->tflops_per_gpu; break;
            case 5: v = 100 * r->mfu; break;
            case 6: v = r->r.compute_s; break;
            case 7: v = r->r.exposed_comm_s; break;
            case 8: v = r->r.idle_s; break;
            case 9: v = r->r.comm_s; break;
            case 10: v = r->r.peak_mem / 1e9; break;
            case 11: v = r->r.kernel_s[SIM_KCLASS_GEMM]; break;
            case 12: v = r->r.kernel_s[SIM_KCLASS_ATTENTION]; break;
            case 13: v = r->r.kernel_s[SIM_KCLASS_ELEMENTWISE]; break;
            default: v = r->r.kernel_s[SIM_KCLASS_OPTIMIZER]; break;
            }
            char cell[64];
            snprintf(cell, sizeof cell, lines[l].fmt, v);
            sb_printf(&b, "%*s", W(i), cell);
        }
        sb_printf(&b, "\n");
    }
#undef W
    sb_printf(&b, "(times per GPU are means over GPUs, kernels at their own durations; peak memory of the most "
                  "loaded GPU, of %.2f GB)\n",
              g->mem_capacity / 1e9);
    for (int i = 0; i < n; i++) {
        if (rows[i].ok)
            sb_printf(&b, "%s: %s\n", rows[i].value, rows[i].strategy);
        else
            sb_printf(&b, "%s: cannot run: %s\n", rows[i].value, rows[i].error);
    }
    return b.s;
}
