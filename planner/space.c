/* space.c — the strategy space: enumeration over strategy strings and
 * pruning with reasons.
 *
 * Numeric axes come from the machine and the model: tp over the powers of two
 * dividing the GPU count, pp over the divisors of GPUs/tp, dp = GPUs/(tp·pp),
 * mb over the powers of two up to gb/dp.  Every other axis is one line of
 * AXES below: a key, its values (the first is the default) and the condition
 * under which a non-default value means something (sequence parallelism
 * needs tp > 1, virtual stages pp > 1, ZeRO dp > 1).  At start-up each value
 * is offered to this build's wl_strategy_parse; values it rejects are left
 * out, so keys join the search as the workloads learn them.
 *
 * Pruning asks the workload itself (wl_gpt_check: divisibility and per-GPU
 * memory), so the planner never disagrees with `trainsim run` about what can
 * run; its message is kept as the example of each reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/plan.h"
#include "workloads/gpt.h"

typedef enum { REQ_NONE, REQ_TP, REQ_PP, REQ_DP } req;

typedef struct axis_def {
    const char *key;
    const char *values[8]; /* first = the default */
    req needs;             /* a non-default value is redundant unless this holds */
} axis_def;

/* The table.  Order matters only for the order of keys in the strings. */
static const axis_def AXES[] = {
    {"recompute", {"none", "full", "selective", "oases"}, REQ_NONE},
    {"schedule", {"megatron", "merak", "oases"}, REQ_TP},     /* TP layer schedule, papers.md §1.3, §2.2 */
    {"sp", {"0", "1"}, REQ_TP},                               /* sequence parallelism */
    {"vstages", {"1", "2", "4"}, REQ_PP},                     /* interleaved 1F1B virtual stages */
    {"zero", {"0", "1", "2", "3"}, REQ_DP},                   /* ZeRO stage */
};
#define NAXES ((int)(sizeof AXES / sizeof AXES[0]))

struct plan_space {
    char **strings;
    int n, cap;
    int enumerated;
    int pruned[PLAN_PRUNE_COUNT];
    char example[PLAN_PRUNE_COUNT][640];
    char axes[1024];
};

const char *plan_prune_name(int reason)
{
    static const char *names[] = {"divisibility", "global batch", "out of memory", "redundant", "other"};
    return reason >= 0 && reason < PLAN_PRUNE_COUNT ? names[reason] : "?";
}

int plan_prune_classify(const char *msg)
{
    if (strstr(msg, "out of GPU memory"))
        return PLAN_PRUNE_MEMORY;
    if (strstr(msg, "gb=") && strstr(msg, "not divisible"))
        return PLAN_PRUNE_BATCH;
    if (strstr(msg, "does not divide") || strstr(msg, "not divisible") || strstr(msg, "divisible"))
        return PLAN_PRUNE_DIVISIBILITY;
    return PLAN_PRUNE_OTHER;
}

static int push(plan_space *sp, const char *s)
{
    if (sp->n == sp->cap) {
        int cap = sp->cap ? 2 * sp->cap : 256;
        char **v = realloc(sp->strings, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        sp->strings = v;
        sp->cap = cap;
    }
    sp->strings[sp->n] = strdup(s);
    return sp->strings[sp->n++] ? 0 : -1;
}

static void reject(plan_space *sp, int reason, const char *strategy, const char *msg)
{
    sp->pruned[reason]++;
    if (!sp->example[reason][0]) {
        char buf[sizeof sp->example[reason]];
        size_t l = strnlen(strategy, sizeof buf / 2);
        memcpy(buf, strategy, l);
        buf[l++] = ':';
        buf[l++] = ' ';
        plan_copy(buf + l, sizeof buf - l, msg);
        memcpy(sp->example[reason], buf, sizeof buf);
    }
}

/* Values of each axis this build accepts. */
typedef struct axis_live {
    int nv;
    const char *v[8];
} axis_live;

static void probe_axes(axis_live *live)
{
    for (int a = 0; a < NAXES; a++) {
        live[a].nv = 0;
        for (int i = 0; i < 8 && AXES[a].values[i]; i++) {
            char kv[64];
            snprintf(kv, sizeof kv, "%s=%s", AXES[a].key, AXES[a].values[i]);
            wl_strategy st;
            wl_strategy_default(&st);
            sim_err e;
            if (wl_strategy_parse(kv, &st, &e) == 0)
                live[a].v[live[a].nv++] = AXES[a].values[i];
        }
        /* a key whose default value is not accepted is not known at all */
        if (live[a].nv && live[a].v[0] != AXES[a].values[0])
            live[a].nv = 0;
    }
}

typedef struct walk {
    plan_space *sp;
    const plan_ctx *ctx;
    const axis_live *live;
    int tp, pp, dp, mb;
    char base[PLAN_STRATEGY_MAX];
} walk;

static void try_candidate(walk *w, const char *s)
{
    plan_space *sp = w->sp;
    sp->enumerated++;
    wl_strategy st;
    wl_strategy_default(&st);
    sim_err e = {{0}};
    if (wl_strategy_parse(s, &st, &e) < 0) {
        reject(sp, PLAN_PRUNE_OTHER, s, e.msg);
        return;
    }
    wl_memory mem;
    if (wl_gpt_check(&w->ctx->model, &st, w->ctx->mach, &mem, &e) < 0) {
        reject(sp, plan_prune_classify(e.msg), s, e.msg);
        return;
    }
    push(sp, s);
}

static void walk_axes(walk *w, int a, char *buf)
{
    if (a == NAXES) {
        try_candidate(w, buf);
        return;
    }
    const axis_live *L = &w->live[a];
    if (L->nv == 0) {
        walk_axes(w, a + 1, buf);
        return;
    }
    size_t len = strlen(buf);
    for (int i = 0; i < L->nv; i++) {
        int ok = 1;
        if (i > 0) {
            switch (AXES[a].needs) {
            case REQ_TP: ok = w->tp > 1; break;
            case REQ_PP: ok = w->pp > 1; break;
            case REQ_DP: ok = w->dp > 1; break;
            default: break;
            }
        }
        snprintf(buf + len, PLAN_STRATEGY_MAX - len, ",%s=%s", AXES[a].key, L->v[i]);
        if (!ok) {
            /* counted once per full combination it would have multiplied */
            w->sp->enumerated++;
            reject(w->sp, PLAN_PRUNE_REDUNDANT, buf, "this value only matters with tp>1, pp>1 or dp>1 (see space.c)");
            buf[len] = 0;
            continue;
        }
        walk_axes(w, a + 1, buf);
        buf[len] = 0;
    }
}

plan_space *plan_space_new(const plan_ctx *ctx, sim_err *err)
{
    plan_space *sp = calloc(1, sizeof *sp);
    if (!sp) {
        sim_errf(err, "out of memory");
        return NULL;
    }
    axis_live live[NAXES];
    probe_axes(live);
    int G = ctx->mach->ngpus;
    if (ctx->only) {
        /* a given list: each on top of the sweep's gb and dtype */
        char *copy = strdup(ctx->only);
        walk w = {sp, ctx, live, 0, 0, 0, 0, ""};
        for (char *save = NULL, *tok = copy ? strtok_r(copy, ";", &save) : NULL; tok; tok = strtok_r(NULL, ";", &save)) {
            char buf[PLAN_STRATEGY_MAX];
            snprintf(buf, sizeof buf, "gb=%d,dtype=%s,%s", ctx->gb, sim_dtype_name(ctx->dtype), tok);
            try_candidate(&w, buf);
        }
        free(copy);
        snprintf(sp->axes, sizeof sp->axes, "the strategies given with --strategies");
        return sp;
    }
    char tps[128] = "", pps[128] = "", mbs[128] = "";
    for (int tp = 1; tp <= G; tp *= 2) {
        if (G % tp)
            continue;
        snprintf(tps + strlen(tps), sizeof tps - strlen(tps), "%s%d", tps[0] ? "," : "", tp);
        for (int pp = 1; pp <= G / tp; pp++) {
            if ((G / tp) % pp)
                continue;
            if (tp == 1)
                snprintf(pps + strlen(pps), sizeof pps - strlen(pps), "%s%d", pps[0] ? "," : "", pp);
            int dp = G / tp / pp;
            int maxmb = ctx->gb / dp;
            if (maxmb < 1)
                maxmb = 1;
            for (int mb = 1; mb <= maxmb && mb <= 64; mb *= 2) {
                if (tp == 1 && pp == 1)
                    snprintf(mbs + strlen(mbs), sizeof mbs - strlen(mbs), "%s%d", mbs[0] ? "," : "", mb);
                walk w = {sp, ctx, live, tp, pp, dp, mb, ""};
                char buf[PLAN_STRATEGY_MAX];
                snprintf(buf, sizeof buf, "tp=%d,pp=%d,dp=%d,mb=%d,gb=%d,dtype=%s", tp, pp, dp, mb, ctx->gb,
                         sim_dtype_name(ctx->dtype));
                walk_axes(&w, 0, buf);
            }
        }
    }
    snprintf(sp->axes, sizeof sp->axes, "tp{%s} pp{divisors of GPUs/tp: %s} dp{GPUs/(tp*pp)} mb{powers of 2 to gb/dp: %s}",
             tps, pps, mbs);
    for (int a = 0; a < NAXES; a++) {
        size_t l = strlen(sp->axes);
        if (live[a].nv == 0) {
            snprintf(sp->axes + l, sizeof sp->axes - l, " %s{not in this build}", AXES[a].key);
            continue;
        }
        snprintf(sp->axes + l, sizeof sp->axes - l, " %s{", AXES[a].key);
        for (int i = 0; i < live[a].nv; i++) {
            l = strlen(sp->axes);
            snprintf(sp->axes + l, sizeof sp->axes - l, "%s%s", i ? "," : "", live[a].v[i]);
        }
        l = strlen(sp->axes);
        snprintf(sp->axes + l, sizeof sp->axes - l, "}");
    }
    for (int i = 0; i < sp->n; i++)
        if (!sp->strings[i]) {
            plan_space_free(sp);
            sim_errf(err, "out of memory");
            return NULL;
        }
    return sp;
}

void plan_space_free(plan_space *sp)
{
    if (!sp)
        return;
    for (int i = 0; i < sp->n; i++)
        free(sp->strings[i]);
    free(sp->strings);
    free(sp);
}

int plan_space_count(const plan_space *sp) { return sp->n; }
const char *plan_space_get(const plan_space *sp, int i) { return sp->strings[i]; }
int plan_space_enumerated(const plan_space *sp) { return sp->enumerated; }
int plan_space_pruned(const plan_space *sp, int reason) { return sp->pruned[reason]; }
const char *plan_space_example(const plan_space *sp, int reason) { return sp->example[reason]; }
const char *plan_space_axes(const plan_space *sp) { return sp->axes; }
