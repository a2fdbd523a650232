/* space.c — the strategy space: enumeration over strategy strings and
 * pruning with reasons.
 *
 * Numeric axes come from the machine and the model: tp over the powers of two
 * dividing the GPU count, pp over the divisors of GPUs/tp, cp (context
 * parallelism) over the powers of two dividing GPUs/(tp·pp) that leave every
 * rank at least PLAN_CP_MIN_TOKENS of each sequence, dp = GPUs/(tp·pp·cp),
 * mb over the powers of two up to gb/dp, and for an MoE model ep over the
 * powers of two dividing dp·cp and the expert count (Megatron-Core's rules).  Every other axis is one line of
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

/* Context parallelism pays for its ring when a rank's attention chunks are
 * long enough to hide the K/V transfers: the searched cp keep at least this
 * many tokens of a sequence per rank (seq 8192 gives cp 1, 2; seq 4096 and
 * shorter cp 1 only).  A choice of the search space, not a rule of
 * Megatron's; other values can be given with --strategies. */
#define PLAN_CP_MIN_TOKENS 4096

typedef struct axis_def {
    const char *key;
    const char *values[8]; /* first = the default */
    req needs;             /* a non-default value is redundant unless this holds */
} axis_def;

/* The table.  Keys appear in the strings in this order: schedule before
 * recompute, because an Oases-ladder schedule implies its recompute mode and
 * a different recompute after it is refused (counted as redundant).  Keys
 * the workloads accept but not searched by default (pipeline, dp_overlap,
 * tp_overlap, ckpt_ratio, osdp, tp_cut, ...) are searched with --axis. */
static const axis_def AXES[] = {
    {"schedule", {"megatron", "merak", "oases"}, REQ_TP},      /* TP layer schedule, papers.md §1.3, §2.2 */
    {"recompute", {"none", "full", "selective"}, REQ_NONE},    /* oases comes with schedule=oases */
    {"sp", {"0", "1"}, REQ_TP},                                /* Megatron sequence parallelism */
    {"vstages", {"1", "2"}, REQ_PP},                           /* interleaved 1F1B model chunks per stage */
    {"zero", {"0", "1", "3"}, REQ_DP},                         /* ZeRO stage (3 = FSDP) */
};
#define NBUILTIN ((int)(sizeof AXES / sizeof AXES[0]))
#define NAXES_MAX (NBUILTIN + 8)

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
    /* an option that another implies or excludes (schedule=oases with a
     * different recompute, sp=1 with a non-Megatron schedule, ...) */
    if (strstr(msg, " was given") || strstr(msg, " only") || strstr(msg, "requires") || strstr(msg, "needs "))
        return PLAN_PRUNE_REDUNDANT;
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

/* An axis as searched: the table's, narrowed to what this build's parser
 * accepts, or as given with --axis. */
typedef struct axis_live {
    const char *key;
    int nv;
    const char *v[16];
    req needs;
} axis_live;

static int accepted(const char *key, const char *val)
{
    char kv[160];
    snprintf(kv, sizeof kv, "%s=%s", key, val);
    wl_strategy st;
    wl_strategy_default(&st);
    sim_err e;
    return wl_strategy_parse(kv, &st, &e) == 0;
}

/* Builds the live axes; user gives "key=v1,v2,..." strings (strings kept in
 * *pool, freed by the caller). */
static int build_axes(const plan_ctx *ctx, axis_live *live, int *nlive, char **pool, sim_err *err)
{
    int n = 0;
    for (int a = 0; a < NBUILTIN; a++) {
        axis_live *L = &live[n];
        L->key = AXES[a].key;
        L->needs = AXES[a].needs;
        L->nv = 0;
        for (int i = 0; i < 8 && AXES[a].values[i]; i++)
            if (accepted(AXES[a].key, AXES[a].values[i]))
                L->v[L->nv++] = AXES[a].values[i];
        /* a key whose default value is not accepted is not known at all */
        if (L->nv && L->v[0] != AXES[a].values[0])
            L->nv = 0;
        n++;
    }
    for (int u = 0; u < ctx->naxis; u++) {
        char *spec = strdup(ctx->axis[u]);
        if (!spec)
            return sim_errf(err, "out of memory");
        pool[u] = spec;
        char *eq = strchr(spec, '=');
        if (!eq || eq == spec || !eq[1])
            return sim_errf(err, "--axis \"%s\": expected KEY=V1,V2,...", ctx->axis[u]);
        *eq = 0;
        static const char *const numeric[] = {"tp", "pp", "cp", "ep", "dp", "mb", "gb", "dtype", NULL};
        for (int i = 0; numeric[i]; i++)
            if (!strcmp(spec, numeric[i]))
                return sim_errf(err, "--axis %s: tp, pp, cp, ep, dp and mb are enumerated from the GPUs (cp from the "
                                "sequence too, ep from the experts: at least %d tokens per rank); gb and dtype are --global-batch and "
                                "--dtype; other values with --strategies", spec, PLAN_CP_MIN_TOKENS);
        axis_live *L = NULL;
        for (int a = 0; a < n; a++)
            if (!strcmp(live[a].key, spec))
                L = &live[a];
        if (!L) {
            if (n == NAXES_MAX)
                return sim_errf(err, "--axis: at most %d extra keys", NAXES_MAX - NBUILTIN);
            L = &live[n++];
            L->key = spec;
            L->needs = REQ_NONE;
        }
        L->nv = 0;
        for (char *save = NULL, *v = strtok_r(eq + 1, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
            if (!accepted(spec, v)) {
                char kv[160];
                snprintf(kv, sizeof kv, "%s=%s", spec, v);
                wl_strategy st;
                wl_strategy_default(&st);
                wl_strategy_parse(kv, &st, err);
                return sim_err_prefix(err, "--axis %s: ", spec);
            }
            if (L->nv == 16)
                return sim_errf(err, "--axis %s: at most 16 values", spec);
            L->v[L->nv++] = v;
        }
    }
    *nlive = n;
    return 0;
}

typedef struct walk {
    plan_space *sp;
    const plan_ctx *ctx;
    const axis_live *live;
    int nlive;
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
    if (a == w->nlive) {
        try_candidate(w, buf);
        return;
    }
    const axis_live *L = &w->live[a];
    if (L->nv == 0) {
        walk_axes(w, a + 1, buf);
        return;
    }
    size_t len = strlen(buf);
    /* an earlier key may imply this one (schedule=oases implies its recompute
     * mode and refuses another): when the parser refuses every value after
     * this prefix, the key is left out of this branch */
    int any = 0;
    for (int i = 0; i < L->nv && !any; i++) {
        snprintf(buf + len, PLAN_STRATEGY_MAX - len, ",%s=%s", L->key, L->v[i]);
        wl_strategy st;
        wl_strategy_default(&st);
        sim_err e;
        any = wl_strategy_parse(buf, &st, &e) == 0;
        buf[len] = 0;
    }
    if (!any) {
        walk_axes(w, a + 1, buf);
        return;
    }
    for (int i = 0; i < L->nv; i++) {
        int ok = 1;
        if (i > 0) {
            switch (L->needs) {
            case REQ_TP: ok = w->tp > 1; break;
            case REQ_PP: ok = w->pp > 1; break;
            case REQ_DP: ok = w->dp > 1; break;
            default: break;
            }
        }
        snprintf(buf + len, PLAN_STRATEGY_MAX - len, ",%s=%s", L->key, L->v[i]);
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

/* A --strategies entry may repeat the sweep's gb and dtype but not change
 * them: the header, the cache key and the figures are the sweep's.  Returns
 * which of the two it sets (1 gb, 2 dtype), or -1. */
static int given_keys(const plan_ctx *ctx, const char *tok, sim_err *err)
{
    char want_gb[32];
    snprintf(want_gb, sizeof want_gb, "%d", ctx->gb);
    const char *want_dtype = sim_dtype_name(ctx->dtype);
    int set = 0;
    for (const char *k = tok; *k;) {
        size_t len = strcspn(k, ",");
        const char *eq = memchr(k, '=', len);
        if (eq) {
            size_t klen = (size_t)(eq - k), vlen = len - klen - 1;
            int is_gb = klen == 2 && !strncmp(k, "gb", 2), is_dtype = klen == 5 && !strncmp(k, "dtype", 5);
            const char *want = is_gb ? want_gb : want_dtype;
            if ((is_gb || is_dtype) && (strlen(want) != vlen || strncmp(eq + 1, want, vlen)))
                return sim_errf(err, "--strategies: \"%s\" sets %.*s=%.*s, but the sweep's is %s=%s; give it with %s",
                                tok, (int)klen, k, (int)vlen, eq + 1, is_gb ? "gb" : "dtype", want,
                                is_gb ? "--global-batch" : "--dtype");
            set |= is_gb | is_dtype << 1;
        }
        k += len;
        if (*k == ',')
            k++;
    }
    return set;
}

plan_space *plan_space_new(const plan_ctx *ctx, sim_err *err)
{
    plan_space *sp = calloc(1, sizeof *sp);
    if (!sp) {
        sim_errf(err, "out of memory");
        return NULL;
    }
    axis_live live[NAXES_MAX];
    char *pool[64] = {0};
    int nlive = 0;
    if (ctx->naxis > 64 || build_axes(ctx, live, &nlive, pool, err) < 0) {
        if (ctx->naxis > 64)
            sim_errf(err, "--axis: at most 64");
        for (int i = 0; i < 64; i++)
            free(pool[i]);
        free(sp);
        return NULL;
    }
    int G = ctx->mach->ngpus;
    if (ctx->only) {
        /* a given list: each on top of the sweep's gb and dtype */
        char *copy = strdup(ctx->only);
        walk w = {sp, ctx, live, nlive, 0, 0, 0, 0, ""};
        int bad = 0;
        for (char *save = NULL, *tok = copy ? strtok_r(copy, ";", &save) : NULL; tok;
             tok = strtok_r(NULL, ";", &save)) {
            int set = given_keys(ctx, tok, err);
            if (set < 0) {
                bad = 1;
                break;
            }
            char buf[PLAN_STRATEGY_MAX], gb[32] = "", dtype[32] = "";
            if (!(set & 1))
                snprintf(gb, sizeof gb, "gb=%d,", ctx->gb);
            if (!(set & 2))
                snprintf(dtype, sizeof dtype, "dtype=%s,", sim_dtype_name(ctx->dtype));
            snprintf(buf, sizeof buf, "%s%s%s", gb, dtype, tok);
            try_candidate(&w, buf);
        }
        free(copy);
        for (int i = 0; i < 64; i++)
            free(pool[i]);
        if (bad) {
            plan_space_free(sp);
            return NULL;
        }
        snprintf(sp->axes, sizeof sp->axes, "the strategies given with --strategies");
        return sp;
    }
    char tps[128] = "", pps[128] = "", cps[128] = "", mbs[128] = "", eps[128] = "";
    int seq = ctx->model.seq;
    for (int tp = 1; tp <= G; tp *= 2) {
        if (G % tp)
            continue;
        snprintf(tps + strlen(tps), sizeof tps - strlen(tps), "%s%d", tps[0] ? "," : "", tp);
        for (int pp = 1; pp <= G / tp; pp++) {
            if ((G / tp) % pp)
                continue;
            if (tp == 1)
                snprintf(pps + strlen(pps), sizeof pps - strlen(pps), "%s%d", pps[0] ? "," : "", pp);
            for (int cp = 1; cp <= G / tp / pp; cp *= 2) {
                if ((G / tp / pp) % cp || (cp > 1 && (seq % (2 * cp) || seq / cp < PLAN_CP_MIN_TOKENS)))
                    continue;
                if (tp == 1 && pp == 1)
                    snprintf(cps + strlen(cps), sizeof cps - strlen(cps), "%s%d", cps[0] ? "," : "", cp);
                int dp = G / tp / pp / cp;
                int maxmb = ctx->gb / dp;
                if (maxmb < 1)
                    maxmb = 1;
                for (int mb = 1; mb <= maxmb && mb <= 64; mb *= 2) {
                    if (tp == 1 && pp == 1 && cp == 1)
                        snprintf(mbs + strlen(mbs), sizeof mbs - strlen(mbs), "%s%d", mbs[0] ? "," : "", mb);
                    /* MoE: ep over the powers of two dividing dp·cp and the
                     * experts (Megatron-Core's rules); 1 only for a dense model */
                    int E = ctx->model.moe ? ctx->model.moe_cfg.experts : 1;
                    for (int ep = 1; ep <= dp * cp && ep <= E; ep *= 2) {
                        if ((dp * cp) % ep || E % ep)
                            continue;
                        if (tp == 1 && pp == 1 && cp == 1 && mb == 1 && E > 1)
                            snprintf(eps + strlen(eps), sizeof eps - strlen(eps), "%s%d", eps[0] ? "," : "", ep);
                        walk w = {sp, ctx, live, nlive, tp, pp, dp, mb, ""};
                        char buf[PLAN_STRATEGY_MAX], cpk[16] = "", epk[16] = "";
                        if (cp > 1)
                            snprintf(cpk, sizeof cpk, "cp=%d,", cp);
                        if (ep > 1)
                            snprintf(epk, sizeof epk, "ep=%d,", ep);
                        snprintf(buf, sizeof buf, "tp=%d,pp=%d,%s%sdp=%d,mb=%d,gb=%d,dtype=%s", tp, pp, cpk, epk, dp,
                                 mb, ctx->gb, sim_dtype_name(ctx->dtype));
                        walk_axes(&w, 0, buf);
                    }
                }
            }
        }
    }
    snprintf(sp->axes, sizeof sp->axes,
             "tp{%s} pp{divisors of GPUs/tp: %s} cp{seq/cp >= %d: %s} dp{GPUs/(tp*pp*cp)} "
             "mb{powers of 2 to gb/dp: %s}", tps, pps, PLAN_CP_MIN_TOKENS, cps, mbs);
    if (eps[0]) {
        size_t l = strlen(sp->axes);
        snprintf(sp->axes + l, sizeof sp->axes - l, " ep{powers of 2 dividing dp*cp and the experts: %s}", eps);
    }
    for (int a = 0; a < nlive; a++) {
        size_t l = strlen(sp->axes);
        if (live[a].nv == 0) {
            snprintf(sp->axes + l, sizeof sp->axes - l, " %s{not in this build}", live[a].key);
            continue;
        }
        snprintf(sp->axes + l, sizeof sp->axes - l, " %s{", live[a].key);
        for (int i = 0; i < live[a].nv; i++) {
            l = strlen(sp->axes);
            snprintf(sp->axes + l, sizeof sp->axes - l, "%s%s", i ? "," : "", live[a].v[i]);
        }
        l = strlen(sp->axes);
        snprintf(sp->axes + l, sizeof sp->axes - l, "}");
    }
    for (int i = 0; i < 64; i++)
        free(pool[i]);
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
