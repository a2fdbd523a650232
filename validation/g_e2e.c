/* g_e2e.c — the end-to-end groups (e2e-*): each published training run of
 * a family (g_e2e_map.c) that trainsim can express is simulated through the
 * pipeline `trainsim run` uses and compared by iteration time; the rows it
 * cannot express are recorded with the reason.
 *
 * Expressing a row: the cluster JSON goes to plat_from_json, each model
 * field and each strategy key is tried alone against the parsers (so the
 * reason names the field or key a build lacks, and a key with a fallback
 * falls back: g_e2e.h), then the whole strategy to wl_gpt_resolve.  When the
 * memory model says the row does not fit (it did, for real), the row is
 * still simulated with the capacity check off and the note says what the
 * memory model needed: a memory miss is not a time miss.
 *
 * Cost.  A row is simulated as `trainsim run` simulates it, on the ranks
 * its exact reductions keep (sim/fold.h sim_run_reduced).  That can still
 * take minutes for a large row (hundreds of GPUs that do not fold, hundreds
 * of micro-batches), so each row's cost is estimated in the reduced run's
 * engine operations, from the schedule generated at one and two layers per
 * stage and one and two (rounds of) micro-batches, extrapolated bilinearly
 * to the row's layers and micro-batches.  Above FULL_BUDGET operations the
 * row runs through the planner's fast fidelity (planner/eval.c: reduced
 * simulations extrapolated; its errors against whole simulation are in the
 * README's planner section) and the note says so.  ctest runs, per family,
 * the cheapest rows whose estimated costs add up to the family's CI budget
 * (at least one), a deterministic subset; `--all` runs every row.
 *
 * One row, one case: measured and simulated iteration time, the simulated
 * compute / exposed communication / bubble (means over GPUs), and a note. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g_e2e.h"
#include "planner/plan.h"
#include "sim/fold.h"
#include "sim/outfile.h"
#include "sim/alloc.h"
#include "platforms/platform.h"
#include "val_groups.h"
#include "val_sim.h"
#include "workloads/gpt.h"

/* Rows estimated above this many engine operations run by the fast
 * fidelity.  Measured on the development VM (README, e2e section): the
 * DLPerf rows run 0.2-1 us per operation. */
#define FULL_BUDGET 10e6

typedef struct prepared {
    e2e_map map;
    char strategy[512];
    char model_json[2112]; /* "{" model ", " fields "}" */
    wl_model model;
    double est_full;   /* estimated engine operations of a whole simulation */
    double cost;       /* of the fidelity it will run at */
    int fast;
    char mem_note[64]; /* the memory model's refusal, if any */
    char fallbacks[96]; /* items this build took in their fallback form: "zero=3 for fsdp=full" */
    int chosen;
} prepared;

/* Appends src to buf[n], cut to fit (reasons and names are cut to their
 * fields on purpose). */
static void append(char *buf, size_t n, const char *src)
{
    size_t l = strlen(buf), k = strlen(src);
    if (l >= n)
        return;
    if (k > n - 1 - l)
        k = n - 1 - l;
    memcpy(buf + l, src, k);
    buf[l + k] = 0;
}

/* A parser message without its list of known keys. */
static void trim_known(char *msg)
{
    char *k = strstr(msg, " (known:");
    if (!k)
        k = strstr(msg, "; known:");
    if (k)
        *k = 0;
}

/* Appends "; why" to a reason and "|k" to the kinds. */
static void add_reason(char *kind, size_t nk, char *reason, size_t nr, const char *k, const char *why)
{
    if (kind[0])
        append(kind, nk, "|");
    append(kind, nk, k);
    size_t l = strlen(reason);
    if (l)
        append(reason, nr, "; ");
    append(reason, nr, why);
}

/* "cp=4" -> "cp=N", "\"kv_heads\": 8" -> "\"kv_heads\": N": one kind for
 * every value of a numeric key. */
static void kind_of_item(const char *text, char *kind, size_t n)
{
    snprintf(kind, n, "%s", text);
    char *v = strpbrk(kind, "=:");
    if (!v)
        return;
    v++;
    while (*v == ' ')
        v++;
    char *e = v;
    while (*e >= '0' && *e <= '9')
        e++;
    if (e > v + 1 || (e == v + 1 && *v > '1'))
        snprintf(v, n - (size_t)(v - kind), "N");
}

/* Does this build accept these items together (model fields on the row's
 * base fields, or strategy keys)?  texts[i] NULL = left out. */
static int accepted(int model, const char *base, const char *const *texts, int n, sim_err *e)
{
    char buf[2112] = "";
    if (model)
        append(buf, sizeof buf, base);
    for (int i = 0; i < n; i++)
        if (texts[i]) {
            append(buf, sizeof buf, buf[0] ? (model ? ", " : ",") : "");
            append(buf, sizeof buf, texts[i]);
        }
    if (model) {
        char json[2200];
        wl_model m;
        snprintf(json, sizeof json, "{%s}", buf);
        return wl_model_from_json(json, "model", &m, e) == 0;
    }
    wl_strategy s;
    wl_strategy_default(&s);
    return wl_strategy_parse(buf, &s, e) == 0;
}

/* The reason an item was not accepted: "item: message" (without the parser's
 * "model: " / "strategy: " source and list of known keys). */
static void item_reason(const e2e_item *it, sim_err *e, char *kind, size_t nk, char *reason, size_t nr)
{
    char k[sizeof it->text], why[300] = "";
    kind_of_item(it->text, k, sizeof k);
    trim_known(e->msg);
    append(why, sizeof why, it->text);
    append(why, sizeof why, ": ");
    const char *msg = strchr(e->msg, ':');
    append(why, sizeof why, msg && msg[1] == ' ' ? msg + 2 : e->msg);
    add_reason(kind, nk, reason, nr, k, why);
}

/* Resolves the items of one kind (model fields or strategy keys) into out
 * (joined with sep, in their order), falling back as each item says;
 * reasons for the rest.  An item is first tried alone, then, if refused,
 * beside every item accepted alone: a key whose parser checks its partners
 * (tp_overlap_comm=1 needs sp=1) is known to the build all the same. */
static void resolve_items(const e2e_item *it, int n, int model, const char *base, char *out, size_t nout,
                          const char *sep, char *fallbacks, size_t nf, char *kind, size_t nk, char *reason, size_t nr)
{
    const char *use[E2E_MAX_ITEMS] = {0}, *one[1];
    sim_err e = {{0}};
    for (int i = 0; i < n; i++) {
        one[0] = it[i].text;
        if (accepted(model, base, one, 1, &e))
            use[i] = it[i].text;
    }
    for (int i = 0; i < n; i++) {
        if (use[i])
            continue;
        use[i] = it[i].text;
        if (accepted(model, base, use, n, &e))
            continue;
        sim_err why = e;
        use[i] = it[i].fallback_kind == 2 ? it[i].fallback : NULL;
        if (use[i] && accepted(model, base, use, n, &e)) {
            append(fallbacks, nf, fallbacks[0] ? ", " : "");
            append(fallbacks, nf, use[i]);
            append(fallbacks, nf, " for ");
            append(fallbacks, nf, it[i].text);
            continue;
        }
        use[i] = NULL;
        if (it[i].fallback_kind != 1)
            item_reason(&it[i], &why, kind, nk, reason, nr);
    }
    for (int i = 0; i < n; i++)
        if (use[i]) {
            append(out, nout, out[0] ? sep : "");
            append(out, nout, use[i]);
        }
}

/* "refused: <the message's first clause>", one kind for a refusal. */
static void refusal_kind(const char *msg, char *k, size_t n)
{
    const char *m = strncmp(msg, "strategy: ", 10) ? msg : msg + 10;
    snprintf(k, n, "refused: %.*s", (int)(strcspn(m, ":(,") < 50 ? strcspn(m, ":(,") : 50), m);
}

/* A machine for the row: its cluster JSON, or the named platform's first
 * platform_gpus GPUs as `trainsim run --platform NAME --gpus N` loads them;
 * NULL with err. */
static sim_machine *row_machine(const e2e_map *m, sim_err *err)
{
    if (!m->platform[0])
        return plat_from_json(m->cluster, "cluster", err);
    sim_machine *mach = plat_load(m->platform, err);
    if (mach && sim_machine_first(mach, m->platform_gpus, err) < 0) {
        sim_machine_free(mach);
        return NULL;
    }
    return mach;
}

/* Expresses a mapped row: fills p's model and strategy, or returns 0 with
 * the kind and reason it cannot be expressed. */
static int express(prepared *p, char *kind, size_t nk, char *reason, size_t nr)
{
    e2e_map *m = &p->map;
    kind[0] = reason[0] = 0;
    for (int g = 0; g < m->ngaps; g++)
        add_reason(kind, nk, reason, nr, m->gaps[g].kind, m->gaps[g].reason);
    sim_err e = {{0}};
    int has_machine = m->cluster[0] || m->platform[0];
    sim_machine *mach = has_machine ? row_machine(m, &e) : NULL;
    if (has_machine && !mach) {
        trim_known(e.msg);
        char k[64];
        const char *msg = strncmp(e.msg, "cluster: ", 9) ? e.msg : e.msg + 9;
        k[0] = 0;
        append(k, sizeof k, msg);
        add_reason(kind, nk, reason, nr, k, msg);
    }
    if (m->model[0]) {
        char fields[1024] = "";
        resolve_items(m->model_items, m->nmodel, 1, m->model, fields, sizeof fields, ", ", p->fallbacks,
                      sizeof p->fallbacks, kind, nk, reason, nr);
        snprintf(p->model_json, sizeof p->model_json, "{%s%s%s}", m->model, fields[0] ? ", " : "", fields);
    }
    resolve_items(m->strat, m->nstrat, 0, NULL, p->strategy, sizeof p->strategy, ",", p->fallbacks,
                  sizeof p->fallbacks, kind, nk, reason, nr);
    int ok = !reason[0];
    if (ok && wl_model_from_json(p->model_json, "model", &p->model, &e) < 0) {
        add_reason(kind, nk, reason, nr, "model refused", e.msg);
        ok = 0;
    }
    wl_strategy st, res;
    wl_strategy_default(&st);
    if (ok && (wl_strategy_parse(p->strategy, &st, &e) < 0 || wl_gpt_resolve(&p->model, &st, mach, &res, &e) < 0)) {
        char k[64];
        refusal_kind(e.msg, k, sizeof k);
        add_reason(kind, nk, reason, nr, k, e.msg);
        ok = 0;
    }
    sim_machine_free(mach);
    return ok;
}

/* The memory model's peak against the GPU: a note when it does not fit,
 * and the capacity check off so that the time is still simulated. */
static void memory_note(prepared *p, sim_machine *mach, const wl_strategy *st)
{
    wl_memory per[512];
    sim_err e = {{0}};
    p->mem_note[0] = 0;
    if (st->pp > 512 || wl_gpt_memory(&p->model, st, mach, per, &e) < 0)
        return;
    double need = 0, cap = mach->gpus[0].mem_capacity;
    for (int s = 0; s < st->pp; s++)
        need = per[s].total > need ? per[s].total : need;
    if (cap > 0 && need > cap) {
        snprintf(p->mem_note, sizeof p->mem_note, "memory model: %.1f GB > %.0f GB", need / 1e9, cap / 1e9);
        for (int g = 0; g < mach->nmodels; g++)
            mach->gpus[g].mem_capacity = 0;
    }
}

/* Operations of the schedule of the model cut to k layers on its lightest
 * virtual stage (wl_gpt_cut) and `rounds` rounds of micro-batches, as
 * `trainsim run` simulates it: the ranks its exact reductions keep
 * (sim/fold.h; a run that falls back to whole servers costs more). */
static double ops_at(const prepared *p, const wl_strategy *st, const sim_machine *mach, int k, int rounds, int round,
                     sim_err *e)
{
    wl_model m;
    wl_strategy s;
    if (wl_gpt_cut(&p->model, st, k, &m, &s, e) < 0)
        return -1;
    s.gb = st->mb * st->dp * round * rounds;
    sim_fold f;
    sim_schedule *sch = wl_gpt_generate_folded(&m, &s, mach, SIM_FOLD_ALL, &f, e);
    double n = !sch ? -1 : f.sched ? (double)f.sched->nops : (double)sch->nops;
    sim_fold_free(&f);
    sim_sched_free(sch);
    return n;
}

/* Estimated engine operations of the whole iteration (see the header) in
 * p->est_full, and of the fast fidelity's reduced simulations in *fast
 * (about three of them, at two layers' rounds when layers add up and at
 * most three rounds of micro-batches: planner/eval.c).  The samples have
 * one and two layers on the lightest virtual stage, every other stage
 * keeping its difference from it (an uneven split), so the operations are
 * linear in the real model's layers over pp·vstages. */
static int estimate(prepared *p, const wl_strategy *st, const sim_machine *mach, double *fast, sim_err *e)
{
    int u = st->pp * st->vstages, round = st->pipeline == WL_PIPE_INTERLEAVED ? st->pp : 1;
    double o[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if ((o[i][j] = ops_at(p, st, mach, i + 1, j + 1, round, e)) < 0)
                return -1;
    wl_model m1;
    wl_strategy s1;
    int L1 = wl_gpt_cut(&p->model, st, 1, &m1, &s1, e);
    if (L1 < 0)
        return -1;
    double a = o[0][0], b = o[1][0] - a, c = o[0][1] - a, d = o[1][1] - o[1][0] - o[0][1] + a;
    double L = 1 + (double)(p->model.layers - L1) / u, M = (double)st->gb / ((double)st->mb * st->dp * round);
    p->est_full = a + b * (L - 1) + c * (M - 1) + d * (L - 1) * (M - 1);
    /* the planner samples 1 and 3 micro-batches; p and p + 2 in the steady
     * state of Merak's pipelines; 2p and 3p under uneven stage splits
     * (planner/eval.c; M counts rounds of p when interleaved) */
    int merak = wl_pipe_is_merak(st->pipeline), uneven = st->stage_split != WL_SPLIT_UNIFORM;
    double Lf = st->zero < 2 && !st->dp_overlap ? fmin(L, 2) : L;
    double Mf = fmin(M, uneven ? 3.0 * (round > 1 ? 1 : st->pp) : merak ? st->pp + 2 : 3);
    *fast = 3 * (a + b * (Lf - 1) + c * (Mf - 1) + d * (Lf - 1) * (Mf - 1));
    return 0;
}

/* Maps and expresses one row; 1 = ready to simulate (cost estimated unless
 * map_only), 0 = not expressible (kind, reason): also what wl_gpt_check
 * refuses besides memory (interleaving conditions and the like). */
static int prepare(const val_ctx *ctx, prepared *p, char *kind, size_t nk, char *reason, size_t nr)
{
    if (!express(p, kind, nk, reason, nr))
        return 0;
    sim_err e = {{0}};
    sim_machine *mach = row_machine(&p->map, &e);
    wl_strategy st, res;
    wl_memory peak;
    wl_strategy_default(&st);
    int rc = mach && wl_strategy_parse(p->strategy, &st, &e) == 0 && wl_gpt_resolve(&p->model, &st, mach, &res, &e) == 0;
    if (rc) {
        memory_note(p, mach, &res); /* the capacity check off when the memory model refuses */
        double fast = 0;
        rc = wl_gpt_check(&p->model, &res, mach, &peak, &e) == 0 &&
             (ctx->map_only || estimate(p, &res, mach, &fast, &e) == 0);
        p->fast = ctx->fidelity == 2 || (ctx->fidelity == 0 && p->est_full > FULL_BUDGET);
        p->cost = p->fast ? fast : p->est_full;
    }
    if (!rc) {
        refusal_kind(e.msg, kind, nk);
        reason[0] = 0;
        append(reason, nr, e.msg);
    }
    sim_machine_free(mach);
    return rc;
}

/* Simulates a prepared row, whole or by the planner's fast fidelity. */
static int simulate(const val_ctx *ctx, prepared *p, double *T, double part[3], double kernels[SIM_KCLASS_COUNT],
                    sim_err *err)
{
    sim_machine *mach = row_machine(&p->map, err);
    if (!mach)
        return -1;
    if (p->mem_note[0]) /* simulated although the memory model refused it (see the header) */
        for (int g = 0; g < mach->nmodels; g++)
            mach->gpus[g].mem_capacity = 0;
    wl_strategy st, res;
    wl_strategy_default(&st);
    int rc = -1;
    if (wl_strategy_parse(p->strategy, &st, err) < 0 || wl_gpt_resolve(&p->model, &st, mach, &res, err) < 0)
        goto done;
    if (!p->fast) {
        /* as `trainsim run` simulates it: on the ranks the exact reductions
         * keep (sim/fold.h), the generator building only those; where that
         * run is larger than FULL_BUDGET after all (the estimate's small
         * schedules folded, this one does not) or its reduction is not
         * exact (run would try again with more ranks), the planner's fast
         * fidelity instead, and the note says so */
        sim_fold pre;
        wl_gpt_regen_ctx rc_ctx = {&p->model, &st, mach};
        sim_schedule *s = wl_gpt_generate_folded(&p->model, &st, mach, SIM_FOLD_ALL, &pre, err);
        if (!s)
            goto done;
        double ops = pre.sched ? (double)pre.sched->nops : (double)s->nops;
        int ran = 1;
        sim_result r;
        if (ops <= FULL_BUDGET || ctx->fidelity == 1) {
            sim_options o = ctx->opt;
            o.trace_path = NULL;
            ran = sim_run_reduced(s, mach, &o, &pre, wl_gpt_regenerate, &rc_ctx, 1, ctx->fidelity == 1, &r, NULL, err);
        }
        sim_fold_free(&pre);
        sim_sched_free(s);
        if (ran < 0)
            goto done;
        if (ran == 0) {
            *T = r.iteration_s;
            part[0] = r.compute_s;
            part[1] = r.exposed_comm_s;
            part[2] = r.idle_s;
            memcpy(kernels, r.kernel_s, sizeof r.kernel_s);
            sim_result_free(&r);
            rc = 0;
            goto done;
        }
        p->fast = 1;
    }
    {
        plan_ctx pc;
        memset(&pc, 0, sizeof pc);
        pc.mach = mach;
        pc.model = p->model;
        pc.gb = res.gb;
        pc.dtype = res.dtype;
        pc.fidelity = PLAN_FAST;
        plan_result r;
        plan_evaluate(&pc, p->strategy, &r);
        if (r.status < 0) {
            sim_errf(err, "%s", r.error);
            goto done;
        }
        *T = r.iteration_s;
        part[0] = r.compute_s;
        part[1] = r.exposed_comm_s;
        part[2] = r.idle_s;
        memcpy(kernels, r.kernel_s, sizeof r.kernel_s); /* estimated with the time (planner/eval.c) */
    }
    rc = 0;
done:
    sim_machine_free(mach);
    return rc;
}

static int by_cost(const void *a, const void *b)
{
    const prepared *x = *(prepared *const *)a, *y = *(prepared *const *)b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return strcmp(x->map.row, y->map.row);
}

/* Is row id in the comma-separated list (NULL = every row)? */
static int row_selected(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *q = list; q && *q;) {
        size_t len = strcspn(q, ",");
        if (len == n && !strncmp(q, id, n))
            return 1;
        q += len + (q[len] == ',');
    }
    return !list;
}

/* The default (ctest) subset: the cheapest rows whose estimated costs add
 * up to the family's budget, at least one; every row with --all. */
static void choose(const val_ctx *ctx, prepared **ok, int n, double budget)
{
    if (ctx->all || ctx->map_only || ctx->rows) {
        for (int i = 0; i < n; i++)
            ok[i]->chosen = 1;
        return;
    }
    prepared **s = sim_xcalloc((size_t)n, sizeof *s, "the end-to-end cases");
    memcpy(s, ok, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, by_cost);
    double used = 0;
    for (int i = 0; i < n && (i == 0 || used + s[i]->cost <= budget); i++) {
        used += s[i]->cost;
        s[i]->chosen = 1;
    }
    free(s);
}

/* The case of a simulated row. */
static int add_case(val_set *out, const prepared *p, double T, const double part[3],
                    const double kernels[SIM_KCLASS_COUNT], sim_err *err)
{
    char name[128], note[192];
    const char *st = p->strategy;
    /* tp, pp, dp, mb, gb are the first five items */
    int comma = 0;
    const char *e = st;
    while (*e && comma < 5)
        comma += *e++ == ',';
    char head[256];
    snprintf(head, sizeof head, "%.*s", (int)(e - st - (*e ? 1 : 0)), st);
    name[0] = 0;
    append(name, sizeof name, p->map.row);
    append(name, sizeof name, " ");
    append(name, sizeof name, p->map.label);
    append(name, sizeof name, " ");
    append(name, sizeof name, head);
    int stated = !strcmp(p->map.measured_how, "iteration time as stated");
    snprintf(note, sizeof note, "%s (run: ~%.2g M operations)", p->fast ? "fast fidelity" : "full", p->est_full / 1e6);
    append(note, sizeof note, stated ? "" : "; measured ");
    append(note, sizeof note, stated ? "" : p->map.measured_how);
    append(note, sizeof note, p->mem_note[0] ? "; " : "");
    append(note, sizeof note, p->mem_note);
    append(note, sizeof note, p->fallbacks[0] ? "; " : "");
    append(note, sizeof note, p->fallbacks);
    if (val_add(out, p->map.subset[0] ? p->map.subset : NULL, name, p->map.measured_s, T, "s", 0, err) < 0)
        return -1;
    val_case_detail(out, part[0], part[1], part[2], note);
    val_case_kernels(out, kernels);
    return 0;
}

/* One file of --emit: dir/row.ext holding text, written whole or not at
 * all (sim/outfile.h); -1 with err naming it. */
static int emit_file(const char *dir, const char *row, const char *ext, const char *text, sim_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, row, ext);
    sim_outfile out;
    FILE *f = sim_out_open(&out, path, err);
    if (!f)
        return sim_err_prefix(err, "--emit: ");
    fputs(text, f);
    return sim_out_commit(&out, err) < 0 ? sim_err_prefix(err, "--emit: ") : 0;
}

/* A row as `trainsim run` takes it: its cluster (or the named platform and
 * --gpus), its model and the command (the validation's own simulation
 * options are run's defaults). */
static int emit_row(const char *dir, const prepared *p, sim_err *err)
{
    char cmd[1100], where[256];
    if (p->map.platform[0])
        snprintf(where, sizeof where, "%s --gpus %d", p->map.platform, p->map.platform_gpus);
    else
        snprintf(where, sizeof where, "%s.cluster.json", p->map.row);
    snprintf(cmd, sizeof cmd,
             "# %s (%s): measured %.6g s per iteration\n"
             "trainsim run --platform %s --model %s.model.json --strategy '%s'\n",
             p->map.row, p->map.label, p->map.measured_s, where, p->map.row, p->strategy);
    char model[2200];
    snprintf(model, sizeof model, "%s\n", p->model_json);
    char cluster[sizeof p->map.cluster + 2];
    snprintf(cluster, sizeof cluster, "%s\n", p->map.cluster);
    return (!p->map.platform[0] && emit_file(dir, p->map.row, "cluster.json", cluster, err) < 0) ||
                   emit_file(dir, p->map.row, "model.json", model, err) < 0 ||
                   emit_file(dir, p->map.row, "sh", cmd, err) < 0
               ? -1
               : 0;
}

int e2e_run_maps(const val_ctx *ctx, const e2e_map *maps, int n, double ci_budget, val_set *out, sim_err *err)
{
    int in = 0, nok = 0, rc = -1;
    prepared *p = sim_xcalloc(n > 0 ? (size_t)n : 1, sizeof *p, "the end-to-end cases");
    prepared **ok = sim_xcalloc(n > 0 ? (size_t)n : 1, sizeof *ok, "the end-to-end cases");
    for (int i = 0; i < n; i++) {
        if (!row_selected(ctx->rows, maps[i].row))
            continue;
        prepared *q = &p[in++];
        q->map = maps[i];
        char kind[256], reason[768];
        if (prepare(ctx, q, kind, sizeof kind, reason, sizeof reason)) {
            ok[nok++] = q;
            if (ctx->emit_dir && emit_row(ctx->emit_dir, q, err) < 0)
                goto done;
        }
        else if (val_skip(out, q->map.subset[0] ? q->map.subset : NULL, q->map.row, kind, reason, err) < 0)
            goto done;
    }
    choose(ctx, ok, nok, ci_budget);
    for (int i = 0; i < nok && !ctx->map_only; i++) {
        if (!ok[i]->chosen)
            continue;
        double T, part[3], kernels[SIM_KCLASS_COUNT] = {0};
        sim_err e = {{0}};
        if (simulate(ctx, ok[i], &T, part, kernels, &e) < 0) {
            if (val_skip(out, ok[i]->map.subset[0] ? ok[i]->map.subset : NULL, ok[i]->map.row, "simulation failed",
                         e.msg, err) < 0)
                goto done;
            continue;
        }
        if (add_case(out, ok[i], T, part, kernels, err) < 0)
            goto done;
    }
    val_set_rows(out, in, nok);
    rc = 0;
done:
    free(p);
    free(ok);
    return rc;
}

static int run_family(const char *group, const val_ctx *ctx, val_set *out, sim_err *err)
{
    const e2e_family *f = e2e_family_find(group);
    if (!f)
        return sim_errf(err, "internal: no end-to-end family %s", group);
    val_csv *csv = val_csv_load_data(ctx, e2e_family_file(f), err);
    if (!csv)
        return -1;
    int nrows = val_csv_rows(csv), n = 0, rc = -1;
    if (e2e_map_columns(csv, err) < 0) {
        val_csv_free(csv);
        return -1;
    }
    e2e_map *maps = sim_xcalloc(nrows > 0 ? (size_t)nrows : 1, sizeof *maps, "the end-to-end cases");
    for (int i = 0; i < nrows; i++) {
        int k = e2e_map_row(f, csv, i, &maps[n], err);
        if (k < 0)
            goto done;
        n += k; /* 0: a row of another family sharing the file */
    }
    rc = e2e_run_maps(ctx, maps, n, e2e_family_ci_budget(f), out, err);
done:
    free(maps);
    val_csv_free(csv);
    return rc;
}

#define E2E_GROUP(fn, name)                                                                                         \
    int fn(const val_ctx *ctx, val_set *out, sim_err *err) { return run_family(name, ctx, out, err); }
E2E_GROUP(val_group_e2e_mosaicml_a100, "e2e-mosaicml-a100")
E2E_GROUP(val_group_e2e_mosaicml_h100, "e2e-mosaicml-h100")
E2E_GROUP(val_group_e2e_nemo_h100, "e2e-nemo-h100")
E2E_GROUP(val_group_e2e_nemo_blackwell, "e2e-nemo-blackwell")
E2E_GROUP(val_group_e2e_dlperf_v100, "e2e-dlperf-v100")
E2E_GROUP(val_group_e2e_bloom, "e2e-bloom")
E2E_GROUP(val_group_e2e_ibm_fsdp, "e2e-ibm-fsdp")
E2E_GROUP(val_group_e2e_commodity, "e2e-commodity")
E2E_GROUP(val_group_e2e_large, "e2e-large")
