/* purchase.c — one cluster of a purchasing comparison (see purchase.h).
 *
 * A cluster is named as `trainsim --platform` takes it, optionally followed
 * by edits ("rtx4090-4x8+nodes=8+nic=IB-HDR", platforms/edit.h); its JSON
 * after the edits is kept, hashed and reported, so that a comparison can be
 * re-run from its own output.
 *
 * Its strategy is given, or chosen as `trainsim plan --refine K` chooses:
 * the planner's space swept at fast fidelity (plan_sweep_run, with the
 * cache), the K fastest simulated whole, and the fastest of those taken.
 * A given strategy is checked (divisibility, memory) and simulated whole.
 * Every failure is reported in the row with the cluster's name, and the
 * stages that did work are kept: a cluster with a part that has no price
 * still reports its time and energy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/purchase.h"
#include "platforms/edit.h"
#include "platforms/platform.h"
#include "workloads/gpt.h"

void plan_cluster_free(plan_cluster *c)
{
    free(c->json);
    c->json = NULL;
}

/* dst[n] = the pieces joined, truncated (messages are longer than the slots) */
static void say(char *dst, size_t n, const char *a, const char *b, const char *c, const char *d)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s%s%s", a, b, c, d);
    plan_copy(dst, n, buf);
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

/* Applies "field=value" to c->json; 0, or -1 with c->error set. */
static int apply_edit(plan_cluster *c, const char *edit)
{
    char field[64];
    const char *eq = strchr(edit, '=');
    sim_err e;
    if (!eq || eq == edit || (size_t)(eq - edit) >= sizeof field || !eq[1]) {
        snprintf(c->error, sizeof c->error, "cluster %s: \"%s\": expected FIELD=VALUE (fields: %s)", c->label, edit,
                 plat_cluster_edit_fields());
        return -1;
    }
    snprintf(field, sizeof field, "%.*s", (int)(eq - edit), edit);
    if (!c->json) {
        snprintf(c->error, sizeof c->error,
                 "cluster %s: %s: a SimGrid XML platform cannot be edited (give a cluster JSON)", c->label, edit);
        return -1;
    }
    char who[224];
    snprintf(who, sizeof who, "cluster %s", c->label);
    char *next = plat_cluster_edit(c->json, who, field, eq + 1, &e);
    if (!next) {
        say(c->error, sizeof c->error, e.msg, "", "", "");
        return -1;
    }
    free(c->json);
    c->json = next;
    return 0;
}

void plan_cluster_prepare(const char *spec, plan_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->rent_usd_per_gpu_h = -1;
    snprintf(c->label, sizeof c->label, "%s", spec);
    char *copy = strdup(spec);
    if (!copy) {
        snprintf(c->error, sizeof c->error, "%s: out of memory", spec);
        return;
    }
    char *plus = strchr(copy, '+');
    if (plus)
        *plus = 0;
    sim_err e;
    if (ends_with(copy, ".xml")) {
        snprintf(c->xml_path, sizeof c->xml_path, "%s", copy);
        snprintf(c->source, sizeof c->source, "%s", copy);
    } else if (!(c->json = plat_cluster_text(copy, c->source, sizeof c->source, &e))) {
        say(c->error, sizeof c->error, "cluster ", spec, ": ", e.msg);
    }
    for (char *edit = plus ? plus + 1 : NULL; edit && !c->error[0];) {
        char *next = strchr(edit, '+');
        if (next)
            *next++ = 0;
        apply_edit(c, edit);
        edit = next;
    }
    free(copy);
}

void plan_cluster_vary(const plan_cluster *base, const char *field, const char *value, plan_cluster *c)
{
    *c = *base;
    c->json = base->json ? strdup(base->json) : NULL;
    char edit[256];
    snprintf(edit, sizeof edit, "%s=%s", field, value);
    if (!base->error[0] && base->json && !c->json)
        snprintf(c->error, sizeof c->error, "%s: out of memory", base->label);
    if (!c->error[0])
        apply_edit(c, edit); /* errors name the base cluster and the edit */
    plan_copy(c->label, sizeof c->label, edit);
}

static void fail(plan_purchase_row *row, const char *label, const char *what, const char *msg)
{
    char head[256];
    snprintf(head, sizeof head, "cluster %s: ", label);
    row->ok = 0;
    say(row->error, sizeof row->error, head, what, msg, "");
}

/* A given strategy, checked and simulated whole (from the cache when it has it). */
static int run_given(const plan_purchase_opts *o, const plan_cluster *c, plan_ctx *ctx, plan_purchase_row *row)
{
    char text[PLAN_STRATEGY_MAX + 64], canon[PLAN_STRATEGY_MAX];
    snprintf(text, sizeof text, "gb=%d,dtype=%s,%s", c->gb, sim_dtype_name(o->dtype), c->strategy);
    wl_strategy st, res;
    wl_memory mem;
    sim_err e;
    wl_strategy_default(&st);
    if (wl_strategy_parse(text, &st, &e) < 0 || wl_gpt_resolve(&ctx->model, &st, ctx->mach, &res, &e) < 0 ||
        wl_gpt_check(&ctx->model, &res, ctx->mach, &mem, &e) < 0) {
        char what[PLAN_STRATEGY_MAX + 32];
        snprintf(what, sizeof what, "strategy %s: ", c->strategy);
        fail(row, c->label, what, e.msg);
        return -1;
    }
    wl_strategy_format(&res, canon, sizeof canon);
    ctx->fidelity = PLAN_FULL;
    ctx->inputs_hash = plan_inputs_hash(ctx->mach, &ctx->model, PLAN_FULL);
    plan_cache *cache = NULL;
    if (o->sweep.cache_dir)
        cache = plan_cache_open(o->sweep.cache_dir, ctx->inputs_hash, 1, &e);
    if (cache && plan_cache_get(cache, canon, &row->best)) {
        row->cached = 1;
    } else {
        plan_evaluate(ctx, canon, &row->best);
        if (cache && row->best.status == 0)
            plan_cache_put(cache, &row->best, &e);
    }
    plan_cache_close(cache);
    row->evaluated = !row->cached;
    if (row->best.status != 0) {
        fail(row, c->label, "", row->best.error);
        return -1;
    }
    return 0;
}

/* The planner's choice: a fast sweep, the fastest simulated whole. */
static int run_search(const plan_purchase_opts *o, const plan_cluster *c, plan_ctx *ctx, plan_purchase_row *row)
{
    sim_err e;
    ctx->axis = o->axis;
    ctx->naxis = o->naxis;
    plan_space *sp = plan_space_new(ctx, &e);
    if (!sp)
        return fail(row, c->label, "", e.msg), -1;
    int n = plan_space_count(sp);
    row->searched = 1;
    row->candidates = n;
    row->enumerated = plan_space_enumerated(sp);
    if (n == 0) {
        const char *why = plan_space_example(sp, PLAN_PRUNE_MEMORY);
        for (int r = 0; !why[0] && r < PLAN_PRUNE_COUNT; r++)
            why = plan_space_example(sp, r);
        fail(row, c->label, "no strategy can run, e.g. ", why[0] ? why : "(none enumerated)");
        plan_space_free(sp);
        return -1;
    }
    plan_result *res = calloc((size_t)n, sizeof *res);
    plan_result **ok = calloc((size_t)n, sizeof *ok);
    plan_sweep_opts so = o->sweep;
    if (so.refine < 1)
        so.refine = 1;
    plan_sweep_stats st;
    int rc = -1;
    if (!res || !ok) {
        fail(row, c->label, "", "out of memory");
    } else if (plan_sweep_run(ctx, sp, &so, res, &st, &e) < 0) {
        fail(row, c->label, "", e.msg);
    } else {
        row->evaluated = st.evaluated;
        row->cached = st.cached;
        int nok = plan_result_rank(res, n, ok);
        for (int i = 0; i < nok && rc < 0; i++)
            if (ok[i]->refined) { /* the fastest of those simulated whole */
                row->best = *ok[i];
                rc = 0;
            }
        if (rc < 0) {
            const char *why = nok ? "the fastest strategies failed when simulated whole" : res[0].error;
            fail(row, c->label, "no strategy could be simulated, e.g. ", why);
        }
    }
    free(res);
    free(ok);
    plan_space_free(sp);
    return rc;
}

/* The bill of materials and the arithmetic, after a successful run. */
static void costs(const plan_purchase_opts *o, const plan_cluster *c, const sim_machine *m, plan_purchase_row *row)
{
    sim_err e;
    int rc = c->json ? plat_bom_from_json(c->json, c->source, &row->bom, &e) : plat_bom_from_machine(m, &row->bom, &e);
    if (rc == 0 && o->costs_text)
        rc = plat_bom_apply_costs(&row->bom, o->costs_text, o->costs_source, &e);
    if (rc < 0) {
        say(row->bom_error, sizeof row->bom_error, "cluster ", c->label, ": ", e.msg);
        return;
    }
    row->bom_ok = 1;
    plan_tco_in in = {row->best.iteration_s, (double)row->gb * o->model->seq, row->best.compute_s,
                      row->best.exposed_comm_s, &row->bom, o->tokens, o->steps, o->pue, o->carbon_g_per_kwh,
                      c->rent_usd_per_gpu_h};
    if (plan_tco_compute(&in, &row->tco, &e) < 0)
        say(row->tco_error, sizeof row->tco_error, "cluster ", c->label, ": ", e.msg);
    else
        row->tco_ok = 1;
}

static void evaluate(const plan_purchase_opts *o, const plan_cluster *c, plan_purchase_row *row)
{
    sim_err e;
    sim_machine *m = c->json ? plat_from_json(c->json, c->source, &e) : plat_load(c->xml_path, &e);
    if (!m) {
        fail(row, c->label, "", e.msg);
        return;
    }
    snprintf(row->name, sizeof row->name, "%s", m->name);
    row->cluster_hash = plan_hash_str(PLAN_HASH_INIT, c->json ? c->json : m->platform_xml);
    row->ngpus = m->ngpus;
    row->nodes = m->nnodes;
    const sim_gpu *g = sim_machine_gpu(m, 0);
    snprintf(row->gpu_model, sizeof row->gpu_model, "%.47s%s", g->model, m->nmodels > 1 ? " and others" : "");
    row->mem_capacity = g->mem_capacity;
    plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.mach = m;
    ctx.platform_spec = c->label;
    ctx.model = *o->model;
    ctx.gb = c->gb;
    ctx.dtype = o->dtype;
    ctx.fidelity = PLAN_FAST;
    ctx.inputs_hash = plan_inputs_hash(m, &ctx.model, PLAN_FAST);
    int rc = c->strategy[0] ? run_given(o, c, &ctx, row) : run_search(o, c, &ctx, row);
    if (rc == 0) {
        wl_strategy st;
        wl_strategy_default(&st);
        sim_err e2;
        wl_strategy_parse(row->best.strategy, &st, &e2);
        row->gb = st.gb; /* a given strategy may set its own */
        row->peak_flops = g->peak_flops[st.dtype];
        row->mfu = row->peak_flops > 0 ? row->best.tflops_per_gpu * 1e12 / row->peak_flops : 0;
        row->ok = 1;
        costs(o, c, m, row);
    }
    sim_machine_free(m);
}

typedef struct call {
    const plan_purchase_opts *o;
    const plan_cluster *c;
} call;

static void child(void *arg, void *out)
{
    call *k = arg;
    evaluate(k->o, k->c, out);
}

/* In a child of its own: a process preloads one platform (sim_preload), and
 * a crash of one cluster's search must not take the others' results. */
void plan_purchase_cluster(const plan_purchase_opts *o, const plan_cluster *c, plan_purchase_row *row)
{
    memset(row, 0, sizeof *row);
    row->gb = c->gb;
    if (c->error[0]) {
        plan_copy(row->error, sizeof row->error, c->error);
        return;
    }
    call k = {o, c};
    sim_err e;
    if (plan_fork_call(child, &k, row, sizeof *row, &e) < 0) {
        memset(row, 0, sizeof *row);
        row->gb = c->gb;
        fail(row, c->label, "", e.msg);
    }
}
