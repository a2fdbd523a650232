/* search.c — the seeds' planners, re-implemented over simulated fragment
 * costs (papers.md §7.F).
 *
 *  oases      per-block TP degrees with resharding at every change (§1.6:
 *             the ILP over a chain of 2L blocks is a shortest path, here a
 *             Viterbi dynamic programme with a memory knapsack);
 *  galvatron  per-layer strategies from Galvatron's decision tree (DP, SDP,
 *             TP and TP x (S)DP in both nestings, §3.1), knapsack DP with
 *             transition costs f_i(v,s) = min_s' f_{i-1}(v - m(s), s') +
 *             R(s', s) + c(s) per pipeline stage, inside Galvatron's outer
 *             loop over the PP degree, the global batch and the micro-batch
 *             count (§3.4; galvatron_cli below says which parts are ours);
 *  osdp       per-layer sharding level 0..3 (bit 0 shards the attention
 *             block, bit 1 the MLP), knapsack without transitions (§3.6);
 *  oases-compare  Oases' own cost model (per-block comp/bp from compute-only
 *             fragments, comm priced as a world all-reduce as its profiler
 *             did, its max() windows, its resharding and memory formulas,
 *             §1.6) against the oases search on simulated fragments; both
 *             plans are then simulated whole.
 *
 * Costs: c(kind, s) and m(kind, s) from simulating one block under s
 * (chain.c: its kernels, TP all-reduces, DP all-reduce or SDP all-gathers
 * and reduce-scatter, optimizer step, on the platform), R(s', s) from
 * simulating only the resharding.  Memory is the sum of the blocks'
 * simulated peaks, in MB rounded up (Galvatron's unit), which counts SDP's
 * transient gathered parameters once per block: conservative.
 * --exhaustive enumerates every assignment and checks the DP's optimum both
 * under the same additive costs and by simulating every assignment whole. */
#include "planner/search.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/chain.h"
#include "sim/engine.h"
#include "sim/json.h"

#define MAXS 32
#define MAXN 256

void search_opts_default(search_opts *o)
{
    memset(o, 0, sizeof *o);
}

/* A node option: the block strategies of one node (1 block or a layer's 2). */
typedef struct option {
    int nb;
    int blk[2]; /* indices into the block strategy table */
    char name[48];
} option;

/* Fragments shared by all the stage problems of Galvatron's outer loop,
 * keyed by what they simulate (stage GPUs, micro-batch, kinds, strategies). */
typedef struct gfrag {
    int type; /* 0 block without sync, 1 sync only, 2 resharding */
    int first, G, b, kind;
    plan_bstrat x, y;
    plan_chain_out out;
} gfrag;

typedef struct gcache {
    gfrag *v;
    int n, cap, sims;
} gcache;

/* A zeroed new entry at the end of the fragment cache, NULL when out of memory. */
static gfrag *gfrag_new(gcache *gc, sim_err *err)
{
    if (gc->n == gc->cap) {
        int cap = gc->cap ? 2 * gc->cap : 256;
        gfrag *v = realloc(gc->v, sizeof *v * (size_t)cap);
        if (!v) {
            sim_errf(err, "out of memory");
            return NULL;
        }
        gc->v = v;
        gc->cap = cap;
    }
    gfrag *f = &gc->v[gc->n++];
    memset(f, 0, sizeof *f);
    return f;
}

typedef struct problem {
    const plan_ctx *ctx;
    int G, batch, nodes, blocks_per_node;
    int nst;
    plan_bstrat st[MAXS];
    int nopt;
    option opt[MAXS];
    plan_block_kind kind[2 * MAXN]; /* per block of the whole chain */
    /* fragment costs */
    double c[2][MAXS], m[2][MAXS], R[MAXS][MAXS];
    int have_c[2][MAXS], have_R[MAXS][MAXS];
    int sims;
    double budget; /* bytes */
    /* a pipeline stage of Galvatron's outer loop (gc != NULL): its GPUs
     * start at `first`, `batch` is the micro-batch, costs are
     * weight x per-micro-batch + per-step, memory holds `micro` micro-batches */
    gcache *gc;
    int first, micro;
    double weight;
} problem;

static int same_st(const plan_bstrat *a, const plan_bstrat *b)
{
    return a->tp == b->tp && a->sdp == b->sdp && a->consec == b->consec;
}

static int gcache_get(problem *p, int type, int kind, const plan_bstrat *x, const plan_bstrat *y, plan_chain_out *out,
                      sim_err *err)
{
    gcache *gc = p->gc;
    int b = type == 1 ? 0 : p->batch;
    for (int i = 0; i < gc->n; i++) {
        gfrag *f = &gc->v[i];
        if (f->type == type && f->first == p->first && f->G == p->G && f->b == b && f->kind == kind &&
            same_st(&f->x, x) && (type != 2 || same_st(&f->y, y))) {
            *out = f->out;
            return 0;
        }
    }
    plan_block_kind k[2] = {(plan_block_kind)kind, PLAN_MLP};
    plan_bstrat two[2] = {*x, type == 2 ? *y : *x};
    /* the sync fragment does not depend on the batch: any that divides */
    plan_chain c = {.model = &p->ctx->model, .gpus = p->G, .batch = type == 1 ? p->G : p->batch,
                    .dtype = p->ctx->dtype, .n = type == 2 ? 2 : 1, .kind = k, .st = two, .first = p->first,
                    .reshard_only = type == 2, .no_sync = type == 0, .sync_only = type == 1};
    if (plan_chain_run(&c, p->ctx->mach, out, err) < 0)
        return -1;
    gfrag *f = gfrag_new(gc, err);
    if (!f)
        return -1;
    f->type = type;
    f->first = p->first;
    f->G = p->G;
    f->b = b;
    f->kind = kind;
    f->x = *x;
    if (type == 2)
        f->y = *y;
    f->out = *out;
    gc->sims++;
    return 0;
}

static int frag_block(problem *p, int kind, int s, sim_err *err)
{
    if (p->have_c[kind][s])
        return 0;
    plan_block_kind k = (plan_block_kind)kind;
    if (p->gc) {
        /* Galvatron's pipeline (papers.md §3.4): the block's forward and
         * backward per micro-batch weigh (m + PP - 1) times, its gradient
         * all-reduce and optimizer step once; GPipe keeps every
         * micro-batch's activations [derived from the schedule] */
        plan_chain_out mb, sy;
        if (gcache_get(p, 0, kind, &p->st[s], NULL, &mb, err) < 0 || gcache_get(p, 1, kind, &p->st[s], NULL, &sy, err) < 0)
            return -1;
        p->c[kind][s] = p->weight * mb.time_s + sy.time_s;
        p->m[kind][s] = mb.peak_kind[SIM_MEM_WEIGHTS] + mb.peak_kind[SIM_MEM_GRADIENTS] +
                        mb.peak_kind[SIM_MEM_OPTIMIZER] + p->micro * mb.peak_kind[SIM_MEM_ACTIVATIONS] +
                        mb.peak_kind[SIM_MEM_BUFFERS];
        p->have_c[kind][s] = 1;
        return 0;
    }
    plan_chain c = {.model = &p->ctx->model, .gpus = p->G, .batch = p->batch, .dtype = p->ctx->dtype, .n = 1,
                    .kind = &k, .st = &p->st[s]};
    if (plan_chain_simulate(&c, p->ctx->mach, &p->c[kind][s], &p->m[kind][s], err) < 0)
        return -1;
    p->have_c[kind][s] = 1;
    p->sims++;
    return 0;
}

static int frag_reshard(problem *p, int a, int b, sim_err *err)
{
    if (p->have_R[a][b])
        return 0;
    p->have_R[a][b] = 1;
    if (p->st[a].tp == p->st[b].tp && p->st[a].consec == p->st[b].consec) {
        p->R[a][b] = 0;
        return 0;
    }
    if (p->gc) {
        plan_chain_out o;
        if (gcache_get(p, 2, PLAN_ATTN, &p->st[a], &p->st[b], &o, err) < 0)
            return -1;
        p->R[a][b] = p->weight * o.time_s;
        return 0;
    }
    plan_block_kind k[2] = {PLAN_ATTN, PLAN_MLP};
    plan_bstrat two[2] = {p->st[a], p->st[b]};
    plan_chain c = {.model = &p->ctx->model, .gpus = p->G, .batch = p->batch, .dtype = p->ctx->dtype, .n = 2, .kind = k,
                    .st = two, .reshard_only = 1};
    if (plan_chain_simulate(&c, p->ctx->mach, &p->R[a][b], NULL, err) < 0)
        return -1;
    p->sims++;
    return 0;
}

/* Block index of node i's j-th block. */
static int kind_of(const problem *p, int node, int j)
{
    return p->kind[node * p->blocks_per_node + j];
}

static int node_cost(problem *p, int node, int o, double *cost, double *mem, sim_err *err)
{
    const option *op = &p->opt[o];
    *cost = 0;
    *mem = 0;
    for (int j = 0; j < op->nb; j++) {
        int k = kind_of(p, node, j);
        if (frag_block(p, k, op->blk[j], err) < 0)
            return -1;
        *cost += p->c[k][op->blk[j]];
        *mem += p->m[k][op->blk[j]];
        if (j > 0) {
            if (frag_reshard(p, op->blk[j - 1], op->blk[j], err) < 0)
                return -1;
            *cost += p->R[op->blk[j - 1]][op->blk[j]];
        }
    }
    return 0;
}

static int edge_cost(problem *p, int a, int b, double *cost, sim_err *err)
{
    int x = p->opt[a].blk[p->opt[a].nb - 1], y = p->opt[b].blk[0];
    if (frag_reshard(p, x, y, err) < 0)
        return -1;
    *cost = p->R[x][y];
    return 0;
}

static int mb_of(double bytes) { return (int)ceil(bytes / 1e6); }

/* The cheapest final state (memory v, option o) of a knapsack DP's last
 * row f[(V + 1) x O]; bv = -1 when none is reachable (all DBL_MAX). */
static double dp_argmin(const double *f, int V, int O, int *bv, int *bo)
{
    double bc = DBL_MAX;
    *bv = *bo = -1;
    for (int v = 0; v <= V; v++)
        for (int o = 0; o < O; o++)
            if (f[(size_t)v * O + o] < bc) {
                bc = f[(size_t)v * O + o];
                *bv = v;
                *bo = o;
            }
    return bc;
}

/* The knapsack DP over nodes.  pick[] gets the option of each node. */
static int dp_solve(problem *p, int *pick, double *best, sim_err *err)
{
    int O = p->nopt, N = p->nodes, V = (int)floor(p->budget / 1e6);
    double nc[MAXS], ed[MAXS][MAXS];
    int nm[MAXS];
    /* node costs are the same for nodes of the same kinds; compute per node anyway (cached fragments) */
    double *f = malloc(sizeof(double) * (size_t)(V + 1) * O), *g = malloc(sizeof(double) * (size_t)(V + 1) * O);
    unsigned char *back = malloc((size_t)N * (V + 1) * O);
    if (!f || !g || !back) {
        free(f);
        free(g);
        free(back);
        return sim_errf(err, "out of memory for the dynamic programme (%d MB budget)", V);
    }
    for (int a = 0; a < O; a++)
        for (int b = 0; b < O; b++)
            if (edge_cost(p, a, b, &ed[a][b], err) < 0)
                goto fail;
    for (size_t i = 0; i < (size_t)(V + 1) * O; i++)
        f[i] = DBL_MAX;
    for (int n = 0; n < N; n++) {
        for (int o = 0; o < O; o++) {
            double mem;
            if (node_cost(p, n, o, &nc[o], &mem, err) < 0)
                goto fail;
            nm[o] = mb_of(mem);
        }
        for (size_t i = 0; i < (size_t)(V + 1) * O; i++)
            g[i] = DBL_MAX;
        for (int v = 0; v <= V; v++)
            for (int o = 0; o < O; o++) {
                int u = v - nm[o];
                if (u < 0)
                    continue;
                double bestc = DBL_MAX;
                int arg = 0;
                if (n == 0) {
                    if (u == 0)
                        bestc = nc[o];
                } else {
                    for (int q = 0; q < O; q++) {
                        double x = f[(size_t)u * O + q];
                        if (x == DBL_MAX)
                            continue;
                        x += ed[q][o] + nc[o];
                        if (x < bestc) {
                            bestc = x;
                            arg = q;
                        }
                    }
                }
                g[(size_t)v * O + o] = bestc;
                back[((size_t)n * (V + 1) + v) * O + o] = (unsigned char)arg;
            }
        double *t = f;
        f = g;
        g = t;
    }
    int bv, bo;
    double bc = dp_argmin(f, V, O, &bv, &bo);
    if (bv < 0) {
        sim_errf(err, "no assignment fits the memory budget of %.2f GB", p->budget / 1e9);
        goto fail;
    }
    for (int n = N - 1; n >= 0; n--) {
        pick[n] = bo;
        int prev = back[((size_t)n * (V + 1) + bv) * O + bo];
        double mem, c;
        node_cost(p, n, bo, &c, &mem, err);
        bv -= mb_of(mem);
        bo = prev;
    }
    *best = bc;
    free(f);
    free(g);
    free(back);
    return 0;
fail:
    free(f);
    free(g);
    free(back);
    return -1;
}

/* Additive cost and memory (MB) of an assignment. */
static int additive(problem *p, const int *pick, double *cost, int *mem, sim_err *err)
{
    *cost = 0;
    *mem = 0;
    for (int n = 0; n < p->nodes; n++) {
        double c, m;
        if (node_cost(p, n, pick[n], &c, &m, err) < 0)
            return -1;
        *cost += c;
        *mem += mb_of(m);
        if (n > 0) {
            double e;
            if (edge_cost(p, pick[n - 1], pick[n], &e, err) < 0)
                return -1;
            *cost += e;
        }
    }
    return 0;
}

/* The whole chain of an assignment, simulated. */
static int simulate_plan(problem *p, const int *pick, double *t, double *peak, sim_err *err)
{
    plan_bstrat st[2 * MAXN];
    int nb = 0;
    for (int n = 0; n < p->nodes; n++)
        for (int j = 0; j < p->opt[pick[n]].nb; j++)
            st[nb++] = p->st[p->opt[pick[n]].blk[j]];
    plan_chain c = {.model = &p->ctx->model, .gpus = p->G, .batch = p->batch, .dtype = p->ctx->dtype, .n = nb,
                    .kind = p->kind, .st = st};
    return plan_chain_simulate(&c, p->ctx->mach, t, peak, err);
}

static void describe(const problem *p, const int *pick, char *buf, size_t len)
{
    size_t w = 0;
    buf[0] = 0;
    for (int n = 0; n < p->nodes && w + 1 < len;) {
        int k = n;
        while (k + 1 < p->nodes && pick[k + 1] == pick[n])
            k++;
        int r = snprintf(buf + w, len - w, "%s%s x%d", w ? ", " : "", p->opt[pick[n]].name, k - n + 1);
        if (r < 0)
            break;
        w += (size_t)r;
        n = k + 1;
    }
}

static int add_block_strategy(problem *p, int tp, int sdp, int consec)
{
    const wl_model *m = &p->ctx->model;
    int dp = p->G / tp;
    if (p->G % tp || m->heads % tp || m->hidden % tp || m->ffn % tp || p->batch % dp || p->nst == MAXS)
        return -1;
    plan_bstrat s = {tp, sdp, consec};
    p->st[p->nst] = s;
    return p->nst++;
}

/* Galvatron's decision tree on p->G GPUs (papers.md §3.1): DP, SDP, TP and
 * TP x (S)DP in both nestings. */
static void galvatron_options(problem *p)
{
    for (int tp = 1; tp <= p->G; tp *= 2)
        for (int sdp = 0; sdp < 2; sdp++)
            for (int consec = 1; consec >= 0; consec--) {
                int dp = p->G / tp;
                if ((sdp && dp == 1) || (!consec && (tp == 1 || dp == 1)))
                    continue;
                int s = add_block_strategy(p, tp, sdp, consec);
                if (s < 0)
                    continue;
                option *op = &p->opt[p->nopt++];
                op->nb = 2;
                op->blk[0] = op->blk[1] = s;
                plan_bstrat_name(&p->st[s], p->G, op->name, sizeof op->name);
            }
}

static int setup(problem *p, const plan_ctx *ctx, const char *algo, const search_opts *o, sim_err *err)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->G = ctx->mach->ngpus;
    p->batch = o->batch ? o->batch : 2 * p->G;
    int L = o->layers ? o->layers : ctx->model.layers;
    const sim_gpu *g = sim_machine_gpu(ctx->mach, 0);
    p->budget = o->mem_budget > 0 ? o->mem_budget : 0.95 * g->mem_capacity;
    if (!strcmp(algo, "oases") || !strcmp(algo, "oases-compare")) {
        p->blocks_per_node = 1;
        p->nodes = 2 * L;
        for (int tp = 1; tp <= p->G; tp *= 2) {
            /* Oases needs a sub-batch per TP group: gbs·t/N/2 whole (its
             * feasibility rule, papers.md §1.6); same set for both planners */
            if (!strcmp(algo, "oases-compare") && (p->G % tp || (p->batch / 2) % (p->G / tp)))
                continue;
            int s = add_block_strategy(p, tp, 0, 1);
            if (s < 0)
                continue;
            option *op = &p->opt[p->nopt++];
            op->nb = 1;
            op->blk[0] = s;
            plan_bstrat_name(&p->st[s], p->G, op->name, sizeof op->name);
        }
    } else if (!strcmp(algo, "galvatron")) {
        p->blocks_per_node = 2;
        p->nodes = L;
        galvatron_options(p);
    } else if (!strcmp(algo, "osdp")) {
        p->blocks_per_node = 2;
        p->nodes = L;
        int d = add_block_strategy(p, 1, 0, 1), s = add_block_strategy(p, 1, 1, 1);
        if (d < 0 || s < 0)
            return sim_errf(err, "osdp: batch %d is not divisible by the %d GPUs", p->batch, p->G);
        for (int level = 0; level < 4; level++) {
            option *op = &p->opt[p->nopt++];
            op->nb = 2;
            op->blk[0] = level & 1 ? s : d;
            op->blk[1] = level & 2 ? s : d;
            snprintf(op->name, sizeof op->name, "level%d", level);
        }
    } else {
        return sim_errf(err, "--search: expected oases, galvatron, osdp or oases-compare, got \"%s\"", algo);
    }
    if (p->nodes < 1 || p->nodes > MAXN)
        return sim_errf(err, "--search: %d nodes (layers or blocks); expected 1..%d", p->nodes, MAXN);
    if (p->nopt == 0)
        return sim_errf(err, "--search %s: no strategy divides %d GPUs, the model and batch %d", algo, p->G, p->batch);
    for (int i = 0; i < p->nodes * p->blocks_per_node; i++)
        p->kind[i] = p->blocks_per_node == 2 ? (plan_block_kind)(i % 2) : (plan_block_kind)(i % 2);
    return 0;
}

/* ---- Oases' own cost model (papers.md §1.6) ---- */

typedef struct oases_costs {
    double comp[2][MAXS], bp[2][MAXS], comm[MAXS], mem[2][MAXS];
} oases_costs;

static int oases_model(problem *p, oases_costs *oc, sim_err *err)
{
    const wl_model *m = &p->ctx->model;
    int64_t d = p->ctx->dtype == SIM_DTYPE_FP32 || p->ctx->dtype == SIM_DTYPE_TF32 ? 4 : 2;
    double h = m->hidden;
    for (int s = 0; s < p->nst; s++) {
        int t = p->st[s].tp, dp = p->G / t;
        /* sub-batch b_t = gbs·t/N/2: the chain's batch halved gives it per replica */
        if ((p->batch / 2) % dp)
            return sim_errf(err, "oases-compare: batch/2 = %d is not divisible by dp = %d", p->batch / 2, dp);
        for (int k = 0; k < 2; k++) {
            plan_block_kind kk = (plan_block_kind)k;
            plan_chain c = {.model = m, .gpus = p->G, .batch = p->batch / 2, .dtype = p->ctx->dtype, .n = 1,
                            .kind = &kk, .st = &p->st[s], .no_comm = 1, .fwd_only = 1};
            double fwd, all;
            if (plan_chain_simulate(&c, p->ctx->mach, &fwd, NULL, err) < 0)
                return -1;
            c.fwd_only = 0;
            if (plan_chain_simulate(&c, p->ctx->mach, &all, NULL, err) < 0)
                return -1;
            p->sims += 2;
            oc->comp[k][s] = fwd;
            oc->bp[k][s] = all - fwd;
            double Bt = (double)p->batch * t / p->G;
            double param = k == 0 ? 4 * (4 * h * h / t + 6 * h) : 4 * (8 * h * h / t + 7 * h);
            oc->mem[k][s] = 12 * Bt * m->seq * h + 5 * param;
        }
        /* the profiler's comm: all_reduce of the sub-batch output on the world group */
        int64_t bytes = (int64_t)(p->batch / 2 / dp) * m->seq * m->hidden * d;
        if (plan_world_allreduce(p->ctx->mach, p->G, bytes, &oc->comm[s], err) < 0)
            return -1;
        p->sims++;
    }
    return 0;
}

/* Viterbi over blocks with Oases' objective; node i's terms are priced at
 * its own degree (as the ILP does), edges by its resharding formula. */
static int oases_solve(problem *p, const oases_costs *oc, int *pick, double *best, sim_err *err)
{
    int N = p->nodes, O = p->nopt, V = (int)floor(p->budget / 1e6);
    double *f = malloc(sizeof(double) * (size_t)(V + 1) * O), *g = malloc(sizeof(double) * (size_t)(V + 1) * O);
    unsigned char *back = malloc((size_t)N * (V + 1) * O);
    if (!f || !g || !back) {
        free(f);
        free(g);
        free(back);
        return sim_errf(err, "out of memory");
    }
    for (size_t i = 0; i < (size_t)(V + 1) * O; i++)
        f[i] = DBL_MAX;
    for (int n = 0; n < N; n++) {
        int k = n % 2, k1 = (n + 1) % 2, km = (n + N - 1) % 2;
        for (size_t i = 0; i < (size_t)(V + 1) * O; i++)
            g[i] = DBL_MAX;
        for (int o = 0; o < O; o++) {
            int s = p->opt[o].blk[0];
            double cm = oc->comm[s], c;
            if (n == 0)
                c = oc->comp[k][s] + oc->bp[k][s];
            else if (n < N - 1)
                c = fmax(oc->comp[k][s], cm) + fmax(oc->comp[k1][s], cm) +
                    fmax(oc->bp[k][s] + oc->comp[k][s], cm) + fmax(oc->bp[k1][s] + oc->comp[k1][s], cm);
            else
                c = fmax(oc->comp[km][s], cm) + cm + fmax(oc->bp[km][s] + oc->comp[km][s], cm) + cm;
            int need = mb_of(oc->mem[k][s]);
            for (int v = need; v <= V; v++) {
                int u = v - need;
                double bc = DBL_MAX;
                int arg = 0;
                if (n == 0) {
                    if (u == 0)
                        bc = c;
                } else {
                    for (int q = 0; q < O; q++) {
                        double x = f[(size_t)u * O + q];
                        if (x == DBL_MAX)
                            continue;
                        int a = p->st[p->opt[q].blk[0]].tp, b = p->st[s].tp, sq = p->opt[q].blk[0];
                        double r = 0;
                        if (a < b)
                            r = (double)b / a * oc->comm[sq] + fmin(oc->comm[sq], oc->comp[k][s]);
                        else if (a > b)
                            r = (double)a / b * oc->comm[s] + fmin(oc->comm[sq], oc->bp[k][s]);
                        x += r + c;
                        if (x < bc) {
                            bc = x;
                            arg = q;
                        }
                    }
                }
                g[(size_t)v * O + o] = bc;
                back[((size_t)n * (V + 1) + v) * O + o] = (unsigned char)arg;
            }
        }
        double *t = f;
        f = g;
        g = t;
    }
    int bv, bo;
    double bc = dp_argmin(f, V, O, &bv, &bo);
    int rc = 0;
    if (bv < 0) {
        rc = sim_errf(err, "Oases' model: nothing fits 0.95 x the GPU memory");
    } else {
        for (int n = N - 1; n >= 0; n--) {
            pick[n] = bo;
            int prev = back[((size_t)n * (V + 1) + bv) * O + bo];
            bv -= mb_of(oc->mem[n % 2][p->opt[bo].blk[0]]);
            bo = prev;
        }
        *best = bc;
    }
    free(f);
    free(g);
    free(back);
    return rc;
}


/* Oases' post-processing (papers.md §1.6): the two most frequent degrees,
 * tp = the larger, changed_tp = the smaller, cutpoint = (#blocks at the
 * smaller)//2 layers; as a strategy string for the workload generator's
 * Oases schedule (schedule=oases, tp_cut=LAYERS:TP). */
static void oases_strategy(const problem *p, const int *pick, int gb, char *buf, size_t len)
{
    int count[MAXS] = {0};
    for (int n = 0; n < p->nodes; n++)
        count[pick[n]]++;
    int a = -1, b = -1;
    for (int o = 0; o < p->nopt; o++) {
        if (!count[o])
            continue;
        if (a < 0 || count[o] > count[a] || (count[o] == count[a] && o > a)) {
            b = a;
            a = o;
        } else if (b < 0 || count[o] > count[b]) {
            b = o;
        }
    }
    int ta = p->st[p->opt[a].blk[0]].tp, tb = b >= 0 ? p->st[p->opt[b].blk[0]].tp : ta;
    int tp = ta > tb ? ta : tb, t2 = ta > tb ? tb : ta;
    int cut = b >= 0 ? count[ta > tb ? b : a] / 2 : 0;
    int dp = p->G / tp, ratio = tp / t2, mb = 4;
    if (cut > 0 && t2 < tp && 2 * ratio > mb)
        mb = 2 * ratio;
    while (mb > 1 && gb % (mb * dp))
        mb /= 2;
    if (cut > 0 && t2 < tp)
        snprintf(buf, len, "tp=%d,pp=1,dp=%d,mb=%d,schedule=oases,tp_cut=%d:%d", tp, dp, mb, cut, t2);
    else
        snprintf(buf, len, "tp=%d,pp=1,dp=%d,mb=%d,schedule=oases", tp, dp, mb);
}

/* ---- the command ---- */

static int exhaustive(problem *p, int json, const int *dpick, double dcost, int *agree_out, sim_err *err)
{
    int N = p->nodes, O = p->nopt;
    double combos = pow(O, N);
    if (combos > 20000)
        return sim_errf(err, "--exhaustive: %d^%d = %.0f assignments; use --layers to make the case smaller", O, N,
                        combos);
    int pick[MAXN], best_add[MAXN] = {0}, best_sim[MAXN] = {0};
    double bc_add = DBL_MAX, bc_sim = DBL_MAX, dp_sim = 0;
    int full = 0;
    memset(pick, 0, sizeof pick);
    for (long it = 0; it < (long)combos; it++) {
        long x = it;
        for (int n = 0; n < N; n++) {
            pick[n] = (int)(x % O);
            x /= O;
        }
        double c, t, peak;
        int mem;
        if (additive(p, pick, &c, &mem, err) < 0)
            return -1;
        if (mem > (int)floor(p->budget / 1e6))
            continue;
        if (c < bc_add - 1e-15) {
            bc_add = c;
            memcpy(best_add, pick, sizeof(int) * (size_t)N);
        }
        if (simulate_plan(p, pick, &t, &peak, err) < 0)
            return -1;
        full++;
        if (t < bc_sim) {
            bc_sim = t;
            memcpy(best_sim, pick, sizeof(int) * (size_t)N);
        }
        if (!memcmp(pick, dpick, sizeof(int) * (size_t)N))
            dp_sim = t;
    }
    char a[512], b[512];
    describe(p, best_add, a, sizeof a);
    describe(p, best_sim, b, sizeof b);
    int same_add = fabs(bc_add - dcost) <= 1e-9 * dcost;
    int same_sim = dp_sim > 0 && dp_sim <= bc_sim * (1 + 1e-6);
    *agree_out = same_add && same_sim;
    if (json) {
        printf(",\n  \"exhaustive\": {\"assignments\": %.0f, \"simulations\": %d, \"additive_best\": \"%s\", "
               "\"additive_best_s\": %.9g, \"simulated_best\": \"%s\", \"simulated_best_s\": %.9g, "
               "\"dp_plan_simulated_s\": %.9g, \"dp_matches_additive\": %s, \"dp_matches_simulated\": %s}",
               combos, full, a, bc_add, b, bc_sim, dp_sim, same_add ? "true" : "false",
               same_sim ? "true" : "false");
    } else {
        printf("exhaustive     %.0f assignments, %d whole-chain simulations\n", combos, full);
        printf("  additive optimum   %.6f s  %s  -> %s\n", bc_add, a, same_add ? "same as the DP" : "DIFFERS from the DP");
        printf("  simulated optimum  %.6f s  %s  -> DP plan simulates to %.6f s: %s\n", bc_sim, b, dp_sim,
               same_sim ? "same optimum" : "DIFFERENT optimum");
    }
    return 0;
}

/* ---- Galvatron's outer loop: PP degree x global batch x micro-batches ----
 *
 * From the paper/code (papers.md §3.4): for each batch and pipeline degree,
 * the layers are split uniformly over the PP stages, each stage's G/PP GPUs
 * run the layer-wise knapsack DP under the per-GPU memory budget, the plan's
 * time is the slowest stage's (m + PP - 1) micro-batch slots plus p2p, and
 * the objective is throughput (batch / time), the batch raised until memory
 * runs out.
 * Ours [derived]: costs are simulated fragments on the stage's own GPUs (a
 * block's forward + backward at the micro-batch, weighed m + PP - 1; its
 * gradient all-reduce and optimizer step, once; resharding, weighed
 * m + PP - 1); a stage's cost is that sum, so the plan's estimate is
 * max over stages + 2 x the sum of the boundaries' simulated transfers (the
 * first micro-batch's forward and the last one's backward cross each
 * boundary once); layers that do not divide go one more to the first
 * stages; GPipe (Galvatron-1's pipeline; memory holds every micro-batch's
 * activations); the batch sweep doubles from the GPU count (Galvatron steps
 * by 8) up to --max-batch; micro-batch counts PP, 2 PP, 4 PP by default
 * (Galvatron's chunk heuristic depends on its per-strategy local batch). */

#define MAXPP 64

typedef struct gplan {
    int pp, B, m, ok, f1b;
    double est, p2p, mem; /* estimate (s), its p2p part, largest stage memory (bytes) */
    plan_bstrat st[MAXN]; /* per layer */
    int lay[MAXPP];       /* layers per stage */
    char desc[1024];
    char why[320];        /* when not ok */
    double need;          /* when not ok for memory: the least a stage needs (bytes) */
    double sim_t, sim_peak;
    int unc_better;       /* the budget changed the plan: the unconstrained one */
    double unc_est, unc_mem;
    char unc_desc[1024];
} gplan;

typedef struct gexh {
    double assignments, best_thr;
    int mismatches, combos;
    gplan best;
    /* PP 1, one micro-batch: every feasible assignment also simulated whole */
    int whole, sim_mismatches;
} gexh;

/* "dp4 x2, tp2 x1 | tp2 x3", or "every stage: dp2 x6" when the stages agree. */
static void gplan_describe(const gplan *g, int Gs, char *buf, size_t len)
{
    char one[MAXPP][256];
    int l0 = 0, same = 1;
    for (int k = 0; k < g->pp; k++) {
        size_t w = 0;
        one[k][0] = 0;
        for (int n = l0; n < l0 + g->lay[k] && w + 1 < sizeof one[k];) {
            int e = n;
            while (e + 1 < l0 + g->lay[k] && same_st(&g->st[e + 1], &g->st[n]))
                e++;
            char nm[48];
            plan_bstrat_name(&g->st[n], Gs, nm, sizeof nm);
            int r = snprintf(one[k] + w, sizeof one[k] - w, "%s%s x%d", n > l0 ? ", " : "", nm, e - n + 1);
            if (r < 0)
                break;
            w += (size_t)r;
            n = e + 1;
        }
        same &= !strcmp(one[k], one[0]);
        l0 += g->lay[k];
    }
    if (g->pp > 1 && same) {
        snprintf(buf, len, "every stage: %s", one[0]);
        return;
    }
    /* runs of identical stages once, with their range */
    size_t w = 0;
    buf[0] = 0;
    for (int k = 0; k < g->pp && w + 1 < len;) {
        int e = k;
        while (e + 1 < g->pp && !strcmp(one[e + 1], one[k]))
            e++;
        int r = e > k ? snprintf(buf + w, len - w, "%sstages %d-%d: %s", k ? " | " : "", k, e, one[k])
                      : snprintf(buf + w, len - w, "%s%s", k ? " | " : "", one[k]);
        if (r < 0)
            break;
        w += (size_t)r;
        k = e + 1;
    }
}

static int stage_setup(problem *p, const plan_ctx *ctx, gcache *gc, int first, int Gs, int b, int layers, int m,
                       double w, double budget)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->G = Gs;
    p->batch = b;
    p->gc = gc;
    p->first = first;
    p->micro = m;
    p->weight = w;
    p->budget = budget;
    p->blocks_per_node = 2;
    p->nodes = layers;
    galvatron_options(p);
    for (int i = 0; i < 2 * layers; i++)
        p->kind[i] = (plan_block_kind)(i % 2);
    return p->nopt;
}

/* Smallest memory (MB) of a stage: every layer at its least-memory option
 * (transitions cost time, never memory). */
static int stage_min_mem(problem *p, int *min_mb, int *max_mb, sim_err *err)
{
    *min_mb = *max_mb = 0;
    for (int n = 0; n < p->nodes; n++) {
        int lo = 0, hi = 0;
        for (int o = 0; o < p->nopt; o++) {
            double c, m;
            if (node_cost(p, n, o, &c, &m, err) < 0)
                return -1;
            if (o == 0 || mb_of(m) < lo)
                lo = mb_of(m);
            if (mb_of(m) > hi)
                hi = mb_of(m);
        }
        *min_mb += lo;
        *max_mb += hi;
    }
    return 0;
}

static int p2p_cost(const plan_ctx *ctx, gcache *gc, int first, int Gs, int b, double *t, sim_err *err)
{
    for (int i = 0; i < gc->n; i++)
        if (gc->v[i].type == 3 && gc->v[i].first == first && gc->v[i].G == Gs && gc->v[i].b == b) {
            *t = gc->v[i].out.time_s;
            return 0;
        }
    const wl_model *m = &ctx->model;
    int64_t d = ctx->dtype == SIM_DTYPE_FP32 || ctx->dtype == SIM_DTYPE_TF32 ? 4 : 2;
    int64_t bytes = ((int64_t)b * m->seq * m->hidden * d + Gs - 1) / Gs; /* as chain.c's transfer */
    if (plan_p2p_time(ctx->mach, first, Gs, bytes, t, err) < 0)
        return -1;
    gfrag *f = gfrag_new(gc, err);
    if (!f)
        return -1;
    f->type = 3;
    f->first = first;
    f->G = Gs;
    f->b = b;
    f->out.time_s = *t;
    gc->sims++;
    return 0;
}

/* Enumerates every joint assignment of the stages' layers and prices it by
 * the same additive model: the exhaustive check of the stage DPs. */
static int gal_simulate(const plan_ctx *ctx, gplan *g, sim_err *err);

static int gal_exhaustive(problem *ps, int PP, double p2p, gplan *best, double *count, int *feasible, gexh *ex,
                          const gplan *dp, sim_err *err)
{
    /* with one stage and one micro-batch the estimate is the whole chain's
     * sum of fragments: check it by simulating every assignment whole */
    int whole = PP == 1 && best->m == 1 && dp && dp->ok;
    double best_sim = DBL_MAX, dp_sim = -1;
    int L = 0, off[MAXPP + 1];
    for (int k = 0; k < PP; k++) {
        off[k] = L;
        L += ps[k].nodes;
    }
    off[PP] = L;
    double combos = 1;
    for (int k = 0; k < PP; k++)
        combos *= pow(ps[k].nopt, ps[k].nodes);
    if (combos > 2e5)
        return sim_errf(err, "--exhaustive: %.0f assignments at PP %d, batch %d, m %d; use --layers or fewer GPUs", combos,
                        PP, best->B, best->m);
    *count += combos;
    *feasible = 0;
    int pick[MAXN] = {0};
    double bc = DBL_MAX;
    for (long it = 0; it < (long)combos; it++) {
        long x = it;
        for (int k = 0; k < PP; k++)
            for (int n = 0; n < ps[k].nodes; n++) {
                pick[off[k] + n] = (int)(x % ps[k].nopt);
                x /= ps[k].nopt;
            }
        double worst = 0;
        int fits = 1;
        for (int k = 0; k < PP && fits; k++) {
            double c;
            int mem;
            if (additive(&ps[k], pick + off[k], &c, &mem, err) < 0)
                return -1;
            fits = mem <= (int)floor(ps[k].budget / 1e6);
            worst = fmax(worst, c);
        }
        if (!fits)
            continue;
        double est = worst + p2p;
        if (whole) {
            gplan w = *best;
            for (int n = 0; n < ps[0].nodes; n++)
                w.st[n] = ps[0].st[ps[0].opt[pick[n]].blk[0]];
            if (gal_simulate(ps[0].ctx, &w, err) < 0)
                return -1;
            ex->whole++;
            best_sim = fmin(best_sim, w.sim_t);
            int same = 1;
            for (int n = 0; n < ps[0].nodes; n++)
                same &= same_st(&w.st[n], &dp->st[n]);
            if (same)
                dp_sim = w.sim_t;
        }
        if (est < bc) {
            bc = est;
            *feasible = 1;
            for (int k = 0; k < PP; k++)
                for (int n = 0; n < ps[k].nodes; n++)
                    best->st[off[k] + n] = ps[k].st[ps[k].opt[pick[off[k] + n]].blk[0]];
        }
    }
    best->est = bc;
    best->ok = *feasible;
    if (whole && !(dp_sim > 0 && dp_sim <= best_sim * (1 + 1e-6)))
        ex->sim_mismatches++;
    return 0;
}

/* One (PP, batch, micro-batches) combination: the stage DPs and the
 * estimate.  unconstrained: solve without the memory budget. */
static int gal_combo(const plan_ctx *ctx, gcache *gc, int L, int PP, int B, int m, int f1b, double budget,
                     int unconstrained, gplan *g, gexh *ex, sim_err *err)
{
    int G = ctx->mach->ngpus, Gs = G / PP, b = B / m;
    memset(g, 0, sizeof *g);
    g->f1b = f1b;
    g->pp = PP;
    g->B = B;
    g->m = m;
    if (B % m) {
        snprintf(g->why, sizeof g->why, "batch %d is not divisible by %d micro-batches", B, m);
        return 0;
    }
    problem *ps = calloc((size_t)PP, sizeof *ps);
    if (!ps)
        return sim_errf(err, "out of memory");
    int rc = -1, l0 = 0;
    double worst = 0;
    for (int k = 0; k < PP; k++) {
        problem *p = &ps[k];
        g->lay[k] = L / PP + (k < L % PP);
        /* activations in flight: all m under GPipe, PP - k under 1F1B */
        int live = f1b && PP - k < m ? PP - k : m;
        if (!stage_setup(p, ctx, gc, k * Gs, Gs, b, g->lay[k], live, m + PP - 1, budget)) {
            snprintf(g->why, sizeof g->why, "no strategy on %d GPUs divides the micro-batch of %d (and the model)", Gs,
                     b);
            rc = 0;
            goto out;
        }
        int lo, hi;
        if (stage_min_mem(p, &lo, &hi, err) < 0)
            goto out;
        if (unconstrained)
            p->budget = (hi + 1) * 1e6;
        else if (lo > (int)floor(p->budget / 1e6) && !g->why[0]) {
            g->need = lo * 1e6;
            snprintf(g->why, sizeof g->why,
                     "stage %d needs at least %.2f GB per GPU (each layer at its least-memory strategy) > budget %.2f GB",
                     k, lo / 1e3, budget / 1e9);
            rc = 0;
            if (!ex)
                goto out;
        }
    }
    if (g->why[0]) {
        /* the exhaustive check agrees it is infeasible */
        double p2p = 0;
        gplan e = *g;
        int feas = 0;
        if (gal_exhaustive(ps, PP, p2p, &e, &ex->assignments, &feas, ex, NULL, err) < 0)
            goto out;
        ex->combos++;
        if (feas)
            ex->mismatches++;
        rc = 0;
        goto out;
    }
    for (int k = 0; k < PP; k++) {
        problem *p = &ps[k];
        int pick[MAXN];
        double cost;
        if (dp_solve(p, pick, &cost, err) < 0)
            goto out;
        double c;
        int mem;
        if (additive(p, pick, &c, &mem, err) < 0)
            goto out;
        worst = fmax(worst, cost);
        g->mem = fmax(g->mem, mem * 1e6);
        for (int n = 0; n < p->nodes; n++)
            g->st[l0 + n] = p->st[p->opt[pick[n]].blk[0]];
        l0 += p->nodes;
    }
    for (int k = 0; k + 1 < PP; k++) {
        double t;
        if (p2p_cost(ctx, gc, k * Gs, Gs, b, &t, err) < 0)
            goto out;
        g->p2p += 2 * t;
    }
    g->est = worst + g->p2p;
    g->ok = 1;
    gplan_describe(g, Gs, g->desc, sizeof g->desc);
    if (ex) {
        gplan e = *g;
        int feas = 0;
        if (gal_exhaustive(ps, PP, g->p2p, &e, &ex->assignments, &feas, ex, g, err) < 0)
            goto out;
        ex->combos++;
        if (!feas || fabs(e.est - g->est) > 1e-9 * g->est)
            ex->mismatches++;
        if (feas && B / e.est > ex->best_thr) {
            ex->best_thr = B / e.est;
            ex->best = e;
            gplan_describe(&ex->best, Gs, ex->best.desc, sizeof ex->best.desc);
        }
    }
    rc = 0;
out:
    free(ps);
    return rc;
}

static int gal_simulate(const plan_ctx *ctx, gplan *g, sim_err *err)
{
    int f1b = g->f1b;
    int G = ctx->mach->ngpus, n = 0, stage[2 * MAXN];
    plan_block_kind kind[2 * MAXN];
    plan_bstrat st[2 * MAXN];
    for (int k = 0, l = 0; k < g->pp; k++)
        for (int j = 0; j < g->lay[k]; j++, l++)
            for (int h = 0; h < 2; h++) {
                stage[n] = k;
                kind[n] = (plan_block_kind)h;
                st[n++] = g->st[l];
            }
    plan_chain c = {.model = &ctx->model, .gpus = G / g->pp, .batch = g->B / g->m, .dtype = ctx->dtype, .n = n,
                    .kind = kind, .st = st, .pp = g->pp, .stage = stage, .micro = g->m, .one_f_one_b = f1b};
    plan_chain_out o;
    if (plan_chain_run(&c, ctx->mach, &o, err) < 0)
        return -1;
    g->sim_t = o.time_s;
    g->sim_peak = o.peak;
    return 0;
}

static int galvatron_cli(const plan_ctx *ctx, const search_opts *o, int json, sim_err *err)
{
    int G = ctx->mach->ngpus, L = o->layers ? o->layers : ctx->model.layers;
    const sim_gpu *gpu = sim_machine_gpu(ctx->mach, 0);
    double budget = o->mem_budget > 0 ? o->mem_budget : 0.95 * gpu->mem_capacity;
    if (L < 1 || L > MAXN)
        return sim_errf(err, "--search galvatron: %d layers; expected 1..%d", L, MAXN);
    /* thousands of fragments on one platform: load it once (sim/engine.h) */
    if (sim_preload(ctx->mach, err) < 0)
        return -1;
    int pps[MAXPP], npp = 0;
    if (o->npp) {
        for (int i = 0; i < o->npp; i++) {
            int p = o->pp[i];
            if (G % p || p > L || p > MAXPP)
                return sim_errf(err, "--pp %d: expected a divisor of the %d GPUs that is at most the %d layers (and %d)",
                                p, G, L, MAXPP);
            pps[npp++] = p;
        }
    } else {
        for (int p = 1; p <= G && p <= L && npp < MAXPP; p++)
            if (G % p == 0)
                pps[npp++] = p;
    }
    int max_batch = o->max_batch ? o->max_batch : 1024;
    int sweep = !o->nbatch && !o->batch;
    for (int i = 0; i < o->nmicro; i++)
        if (o->nbatch && o->micro[i] > o->batches[0] && o->nbatch == 1)
            return sim_errf(err, "--micro-batches %d: more micro-batches than the batch of %d", o->micro[i],
                            o->batches[0]);
    gcache gc = {0};
    gplan *best = calloc((size_t)npp, sizeof *best), *cur = malloc(sizeof *cur);
    gexh *ex = o->exhaustive ? calloc(1, sizeof *ex) : NULL;
    char (*notes)[400] = calloc(256, sizeof *notes);
    int nnotes = 0, ncombos = 0, rc = -1, whole = 0;
    if (!best || !cur || (o->exhaustive && !ex) || !notes) {
        sim_errf(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < npp; i++) {
        int PP = pps[i];
        int ms[16], nm = 0;
        if (o->nmicro) {
            memcpy(ms, o->micro, sizeof(int) * (size_t)o->nmicro);
            nm = o->nmicro;
        } else if (PP == 1) {
            ms[nm++] = 1;
        } else {
            ms[nm++] = PP;
            ms[nm++] = 2 * PP;
            ms[nm++] = 4 * PP;
        }
        /* the sweep doubles from the fewest micro-batches (1 at PP 1) */
        int m0 = ms[0];
        for (int q = 1; q < nm; q++)
            m0 = ms[q] < m0 ? ms[q] : m0;
        int nb = sweep ? 31 : o->nbatch ? o->nbatch : 1;
        for (int j = 0; j < nb; j++) {
            int B = sweep ? m0 << j : o->nbatch ? o->batches[j] : o->batch;
            if (sweep && (B > max_batch || B <= 0)) {
                if (j == 0 && nnotes < 256)
                    snprintf(notes[nnotes++], sizeof notes[0], "PP %d: its first batch, %d, is above --max-batch %d",
                             PP, m0, max_batch);
                break;
            }
            int any = 0, memfail = 0;
            double need = 0;
            char why[320] = "";
            for (int q = 0; q < nm; q++) {
                if (ms[q] > B || B % ms[q])
                    continue;
                ncombos++;
                if (gal_combo(ctx, &gc, L, PP, B, ms[q], o->one_f_one_b, budget, 0, cur, ex, err) < 0)
                    goto out;
                if (!cur->ok) {
                    /* the reason of the micro-batch count that came closest */
                    if (!why[0] || (cur->need > 0 && (need == 0 || cur->need < need))) {
                        plan_copy(why, sizeof why, cur->why);
                        need = cur->need;
                    }
                    memfail |= cur->need > 0;
                    continue;
                }
                any = 1;
                if (!best[i].ok || B / cur->est > best[i].B / best[i].est)
                    best[i] = *cur;
            }
            if (!any && nnotes < 256) {
                if (why[0])
                    snprintf(notes[nnotes++], sizeof notes[0], "PP %d, batch %d: %s", PP, B, why);
                else
                    snprintf(notes[nnotes++], sizeof notes[0], "PP %d, batch %d: no micro-batch count divides it", PP,
                             B);
            }
            if (sweep && !any && memfail)
                break; /* Galvatron raises the batch until memory runs out */
        }
    }
    int bi = -1;
    for (int i = 0; i < npp; i++)
        if (best[i].ok && (bi < 0 || best[i].B / best[i].est > best[bi].B / best[bi].est))
            bi = i;
    if (bi < 0) {
        char all[4096] = "";
        size_t w = 0;
        for (int i = 0; i < nnotes && w + 1 < sizeof all; i++) {
            int r = snprintf(all + w, sizeof all - w, "%s%s", i ? "; " : "", notes[i]);
            if (r < 0)
                break;
            w += (size_t)r;
        }
        sim_errf(err, "--search galvatron: no plan fits: %s", nnotes ? all : "no (PP, batch, micro-batch) combination");
        goto out;
    }
    int frag_sims = gc.sims;
    /* the budget's effect: each row against its unconstrained optimum */
    for (int i = 0; i < npp; i++) {
        if (!best[i].ok)
            continue;
        gplan u;
        if (gal_combo(ctx, &gc, L, best[i].pp, best[i].B, best[i].m, o->one_f_one_b, budget, 1, &u, NULL, err) < 0)
            goto out;
        if (u.ok && u.est < best[i].est * (1 - 1e-12)) {
            best[i].unc_better = 1;
            best[i].unc_est = u.est;
            best[i].unc_mem = u.mem;
            plan_copy(best[i].unc_desc, sizeof best[i].unc_desc, u.desc);
        }
        if (gal_simulate(ctx, &best[i], err) < 0)
            goto out;
        whole++;
    }
    int agree = 1;
    if (ex)
        agree = !ex->mismatches && !ex->sim_mismatches &&
                fabs(ex->best_thr - best[bi].B / best[bi].est) <= 1e-9 * ex->best_thr;
    if (json) {
        char *qp = sim_json_quote(ctx->mach->name), *qm = sim_json_quote(ctx->model.name);
        printf("{\n  \"algorithm\": \"galvatron\", \"platform\": %s, \"model\": %s, \"gpus\": %d, \"layers\": %d, "
               "\"memory_budget_bytes\": %.0f, \"pipeline\": \"%s\",\n  \"plans\": [\n",
               qp, qm, G, L, budget, o->one_f_one_b ? "1f1b" : "gpipe");
        free(qp), free(qm);
        int first = 1;
        for (int i = 0; i < npp; i++) {
            if (!best[i].ok)
                continue;
            gplan *g = &best[i];
            printf("%s    {\"pp\": %d, \"batch\": %d, \"micro_batches\": %d, \"plan\": \"%s\", \"estimated_s\": %.9g, "
                   "\"p2p_s\": %.9g, \"simulated_s\": %.9g, \"estimated_samples_per_s\": %.9g, "
                   "\"simulated_samples_per_s\": %.9g, \"memory_bytes\": %.0f, \"simulated_peak_bytes\": %.0f, "
                   "\"memory_bound\": %s, \"best\": %s}",
                   first ? "" : ",\n", g->pp, g->B, g->m, g->desc, g->est, g->p2p, g->sim_t, g->B / g->est,
                   g->B / g->sim_t, g->mem, g->sim_peak, g->unc_better ? "true" : "false", i == bi ? "true" : "false");
            first = 0;
        }
        printf("\n  ],\n  \"pruned\": [");
        for (int i = 0; i < nnotes; i++)
            printf("%s\"%s\"", i ? ", " : "", notes[i]);
        printf("],\n  \"combinations\": %d, \"fragment_simulations\": %d, \"whole_plan_simulations\": %d", ncombos,
               frag_sims, whole);
        if (ex)
            printf(",\n  \"exhaustive\": {\"assignments\": %.0f, \"combinations\": %d, \"mismatches\": %d, "
                   "\"best\": \"PP %d, batch %d, m %d: %s\", \"best_estimated_samples_per_s\": %.9g, "
                   "\"whole_plan_simulations\": %d, \"simulated_mismatches\": %d, \"same_as_search\": %s}",
                   ex->assignments, ex->combos, ex->mismatches, ex->best.pp, ex->best.B, ex->best.m, ex->best.desc,
                   ex->best_thr, ex->whole, ex->sim_mismatches, agree ? "true" : "false");
        printf("\n}\n");
    } else {
        printf("galvatron search on %s: %s, %d GPUs, %d layers, memory budget %.2f GB per GPU\n", ctx->mach->name,
               ctx->model.name, G, L, budget / 1e9);
        printf("outer loop     PP in {");
        for (int i = 0; i < npp; i++)
            printf("%s%d", i ? "," : "", pps[i]);
        if (sweep)
            printf("} x batch doubling from the fewest micro-batches until memory runs out (at most %d)", max_batch);
        else {
            printf("} x batch in {");
            for (int j = 0; j < (o->nbatch ? o->nbatch : 1); j++)
                printf("%s%d", j ? "," : "", o->nbatch ? o->batches[j] : o->batch);
            printf("}");
        }
        if (o->nmicro) {
            printf(" x micro-batches in {");
            for (int q = 0; q < o->nmicro; q++)
                printf("%s%d", q ? "," : "", o->micro[q]);
            printf("}\n");
        } else {
            printf(" x micro-batches 1 at PP 1, else PP, 2 PP, 4 PP\n");
        }
        printf("estimate       per stage: layer DP on its own GPUs, (m + PP - 1) x per-micro-batch fragments + per-step\n"
               "               sync fragments + resharding; plan: slowest stage + 2 x p2p per boundary (%s)\n\n",
               o->one_f_one_b ? "1F1B: stage k holds min(m, PP - k) micro-batches' activations"
                              : "GPipe: a stage holds all m micro-batches' activations");
        printf("%3s %6s %4s  %-44s %10s %10s %11s %11s %7s\n", "PP", "batch", "m", "per-layer strategies (stage | stage)",
               "est s", "sim s", "est samp/s", "sim samp/s", "mem GB");
        for (int i = 0; i < npp; i++) {
            gplan *g = &best[i];
            if (!g->ok) {
                printf("%3d %6s %4s  %s\n", pps[i], "-", "-", "no plan fits (see below)");
                continue;
            }
            printf("%3d %6d %4d  %-44s %10.6f %10.6f %11.3f %11.3f %7.2f%s\n", g->pp, g->B, g->m, g->desc, g->est,
                   g->sim_t, g->B / g->est, g->B / g->sim_t, g->mem / 1e9, i == bi ? "  <- best" : "");
        }
        for (int i = 0; i < npp; i++)
            if (best[i].ok && best[i].unc_better)
                printf("memory-bound   PP %d, batch %d, m %d: the fastest plan, %s (est %.6f s), needs %.2f GB per GPU > "
                       "budget %.2f GB\n",
                       best[i].pp, best[i].B, best[i].m, best[i].unc_desc, best[i].unc_est, best[i].unc_mem / 1e9,
                       budget / 1e9);
        for (int i = 0; i < nnotes; i++)
            printf("pruned         %s\n", notes[i]);
        gplan *g = &best[bi];
        printf("best           PP %d, batch %d, %d micro-batch%s: %s\n", g->pp, g->B, g->m, g->m == 1 ? "" : "es",
               g->desc);
        printf("               %.3f samples/s estimated, %.3f simulated whole (peak %.2f GB)\n", g->B / g->est,
               g->B / g->sim_t, g->sim_peak / 1e9);
        int by[4] = {0};
        for (int i = 0; i < gc.n; i++)
            by[gc.v[i].type]++;
        printf("simulations    %d fragments (%d blocks, %d step syncs, %d reshardings, %d p2p) + %d whole plans; "
               "%d (PP, batch, m) combinations\n",
               frag_sims, by[0], by[1], by[2], by[3], whole, ncombos);
        if (ex) {
            printf("exhaustive     %.0f assignments over %d (PP, batch, m) combinations, %d differ from the stage DPs\n",
                   ex->assignments, ex->combos, ex->mismatches);
            printf("  additive optimum   PP %d, batch %d, m %d: %s, %.3f samples/s  -> %s\n", ex->best.pp, ex->best.B,
                   ex->best.m, ex->best.desc, ex->best_thr,
                   !ex->mismatches && agree ? "same as the search" : "DIFFERS from the search");
            if (ex->whole)
                printf("  simulated whole    %d assignments at PP 1, m 1: the stage DP's plan is the simulated optimum "
                       "at %s\n",
                       ex->whole, ex->sim_mismatches ? "NOT every batch" : "every batch");
        }
    }
    rc = agree ? 0 : sim_errf(err, "the outer-loop search and the exhaustive search disagree");
out:
    free(gc.v);
    free(best);
    free(cur);
    free(ex);
    free(notes);
    return rc;
}

int search_cli(const plan_ctx *ctx, const char *algo, const search_opts *o, int json, sim_err *err)
{
    if (ctx->model.moe) /* the fragments below are dense layers */
        return sim_errf(err, "--search %s: model %s has mixture-of-experts layers, which the seeds' searches do not "
                        "model; the sweep (trainsim plan without --search) searches ep", algo, ctx->model.name);
    if (!strcmp(algo, "galvatron"))
        return galvatron_cli(ctx, o, json, err);
    if (o->npp || o->nbatch || o->nmicro || o->max_batch || o->one_f_one_b)
        return sim_errf(err, "--pp, --batches, --micro-batches, --max-batch and --pipeline apply to --search galvatron only");
    problem *p = calloc(1, sizeof *p);
    if (!p)
        return sim_errf(err, "out of memory");
    int rc = -1;
    if (setup(p, ctx, algo, o, err) < 0)
        goto out;
    int pick[MAXN] = {0};
    double cost = 0, t = 0, peak = 0;
    int compare = !strcmp(algo, "oases-compare"), have_pick = 1;
    if (dp_solve(p, pick, &cost, err) < 0) {
        /* the fragments keep every activation: for the comparison, whose
         * plans run under the Oases schedule (which recomputes), go on */
        if (!compare)
            goto out;
        have_pick = 0;
    }
    int frag_sims = p->sims;
    if (!compare && simulate_plan(p, pick, &t, &peak, err) < 0)
        goto out;
    char desc[1024];
    describe(p, pick, desc, sizeof desc);
    if (!strcmp(algo, "oases-compare")) {
        oases_costs oc;
        int opick[MAXN];
        double ocost = 0;
        int before = p->sims;
        if (oases_model(p, &oc, err) < 0 || oases_solve(p, &oc, opick, &ocost, err) < 0)
            goto out;
        int model_sims = p->sims - before;
        char odesc[1024];
        describe(p, opick, odesc, sizeof odesc);
        /* the plans, as strategies of the workload generator's Oases schedule,
         * simulated whole: Oases' pick, the fragment DP's pick (same
         * post-processing) and every uniform degree */
        enum { MAXC = MAXS + 2 };
        char cand[MAXC][PLAN_STRATEGY_MAX];
        int nc = 0;
        oases_strategy(p, opick, p->batch, cand[nc++], PLAN_STRATEGY_MAX);
        if (have_pick)
            oases_strategy(p, pick, p->batch, cand[nc], PLAN_STRATEGY_MAX);
        else
            cand[nc][0] = 0;
        nc++;
        for (int o = 0; o < p->nopt; o++) {
            int one[MAXN];
            for (int n = 0; n < p->nodes; n++)
                one[n] = o;
            oases_strategy(p, one, p->batch, cand[nc], PLAN_STRATEGY_MAX);
            int dup = 0;
            for (int c = 0; c < nc; c++)
                dup |= !strcmp(cand[c], cand[nc]);
            if (!dup)
                nc++;
        }
        if (!strcmp(cand[1], cand[0]))
            cand[1][0] = 0;
        plan_ctx c2 = *ctx;
        c2.gb = p->batch;
        plan_result res[MAXC];
        int best = -1, evsims = 0;
        for (int c = 0; c < nc; c++) {
            if (!cand[c][0]) {
                res[c].status = -2;
                continue;
            }
            char full[PLAN_STRATEGY_MAX + 8800];
            snprintf(full, sizeof full, "%s,gb=%d,dtype=%s", cand[c], p->batch, sim_dtype_name(ctx->dtype));
            plan_evaluate(&c2, full, &res[c]);
            evsims += res[c].sims;
            if (res[c].status == 0 && (best < 0 || res[c].samples_per_s > res[best].samples_per_s))
                best = c;
        }
        if (json) {
            char *qp = sim_json_quote(ctx->mach->name), *qm = sim_json_quote(ctx->model.name);
            printf("{\n  \"platform\": %s, \"model\": %s, \"gpus\": %d, \"global_batch\": %d,\n", qp, qm, p->G,
                   p->batch);
            free(qp), free(qm);
            printf("  \"oases_model_blocks\": \"%s\", \"oases_model_plan\": \"%s\",\n", odesc, cand[0]);
            printf("  \"candidates\": [\n");
            for (int c = 0; c < nc; c++) {
                if (res[c].status == -2)
                    continue;
                printf("    {\"strategy\": \"%s\", \"ok\": %s, \"samples_per_s\": %.9g, \"iteration_time_s\": %.9g, "
                       "\"peak_memory_bytes\": %.0f}%s\n",
                       cand[c], res[c].status == 0 ? "true" : "false", res[c].samples_per_s, res[c].iteration_s,
                       res[c].peak_mem, c + 1 < nc ? "," : "");
            }
            printf("  ],\n  \"trainsim_plan\": \"%s\",\n", best >= 0 ? cand[best] : "");
            printf("  \"simulations\": {\"oases_cost_model\": %d, \"fragments\": %d, \"whole_plans\": %d}\n}\n",
                   model_sims, frag_sims, evsims);
        } else {
            printf("Oases' planner vs trainsim on %s: %s, %d GPUs, global batch %d, Oases schedule (schedule=oases)\n",
                   ctx->mach->name, ctx->model.name, p->G, p->batch);
            printf("Oases' cost model (comm = %d-GPU world all-reduce, max(comp, comm) windows, papers.md §1.6)\n", p->G);
            printf("  per block        %s\n", odesc);
            printf("  its plan         %s\n", cand[0]);
            printf("\n%-62s %10s %9s %8s\n", "plan (simulated whole)", "samples/s", "iter s", "peak GB");
            for (int c = 0; c < nc; c++) {
                if (res[c].status == -2)
                    continue;
                const char *tag = c == 0 ? "  <- Oases' cost model" : c == 1 ? "  <- fragment DP" : "";
                if (res[c].status == 0)
                    printf("%-62s %10.3f %9.4f %8.2f%s%s\n", cand[c], res[c].samples_per_s, res[c].iteration_s,
                           res[c].peak_mem / 1e9, tag, c == best ? "  <- trainsim's pick" : "");
                else
                    printf("%-62s %s%s\n", cand[c], "cannot run: ", res[c].error);
            }
            if (best >= 0 && res[0].status == 0)
                printf("\ntrainsim's pick is %.2fx Oases' cost model's pick in simulated throughput\n",
                       res[best].samples_per_s / res[0].samples_per_s);
            else if (best >= 0)
                printf("\nOases' cost model's pick cannot run; trainsim's pick: %s\n", cand[best]);
            printf("simulations        %d for Oases' cost model, %d fragments, %d for the whole plans\n", model_sims,
                   frag_sims, evsims);
        }
        rc = 0;
        goto out;
    }
    if (json) {
        char *qp = sim_json_quote(ctx->mach->name), *qm = sim_json_quote(ctx->model.name);
        printf("{\n  \"algorithm\": \"%s\", \"platform\": %s, \"model\": %s, \"gpus\": %d, \"batch\": %d, "
               "\"nodes\": %d, \"strategies\": %d, \"memory_budget_bytes\": %.0f,\n",
               algo, qp, qm, p->G, p->batch, p->nodes, p->nopt, p->budget);
        free(qp), free(qm);
        printf("  \"plan\": \"%s\", \"predicted_s\": %.9g, \"simulated_s\": %.9g, \"samples_per_s\": %.9g, "
               "\"peak_memory_bytes\": %.0f, \"fragment_simulations\": %d",
               desc, cost, t, p->batch / t, peak, frag_sims);
    } else {
        printf("%s search on %s: %s, %d GPUs, batch %d, %d %s, %d strategies each, memory budget %.2f GB\n", algo,
               ctx->mach->name, ctx->model.name, p->G, p->batch, p->nodes, p->blocks_per_node == 1 ? "blocks" : "layers",
               p->nopt, p->budget / 1e9);
        printf("plan           %s\n", desc);
        printf("predicted      %.6f s (sum of simulated fragments)\n", cost);
        printf("simulated      %.6f s whole (%.3f samples/s, peak %.2f GB)\n", t, p->batch / t, peak / 1e9);
        printf("simulations    %d fragments + 1 whole plan\n", frag_sims);
    }
    int agree = 1;
    if (o->exhaustive && exhaustive(p, json, pick, cost, &agree, err) < 0)
        goto out;
    if (json)
        printf("\n}\n");
    rc = agree ? 0 : sim_errf(err, "the dynamic programme and the exhaustive search disagree");
out:
    free(p);
    return rc;
}
