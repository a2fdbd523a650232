/* eval.c — one strategy, simulated.
 *
 * PLAN_FULL simulates the whole iteration.  PLAN_FAST (the default) makes
 * the same prediction from at most four much smaller simulations, using
 * facts about the schedules the generator builds:
 *  - when every layer adds the same kernels, collectives and gradient bytes
 *    (layers_additive), with pipeline degree p the iteration time is affine
 *    in the layers per stage;
 *  - the time is affine in the micro-batches m: each further micro-batch adds
 *    one forward and one backward of the slowest stage.  For 1F1B, GPipe,
 *    eager and interleaved pipelines this holds from m = 1, since a uniform
 *    pipeline takes (m + p - 1) stage times whether or not m reaches p
 *    (Narayanan et al. 2021, Sec. 2.2.1; Huang et al. 2019); Merak's
 *    pipelines change what they recompute near the end of the batch, so
 *    they are sampled in their steady state, at m = p and p + 2; uneven
 *    stages (stage_split, pp_layers) reach theirs later, at 2p and 3p.
 * So the time is bilinear in (layers, micro-batches): simulate the model cut
 * to one and two layers on its lightest virtual stage, every stage losing
 * the same layers (wl_gpt_cut: u and 2u = p·vstages and twice that for a
 * uniform split; uneven splits keep their differences) with 1 and 3
 * micro-batches (a step of two: under some schedules, Oases on a 2-stage
 * pipeline, one more micro-batch alternately adds more and less than the
 * average; without a pipeline the micro-batches run one after another and 1
 * and 2 do), and evaluate the bilinear
 * interpolant at the real (L, m).  Where L <= 2u or m is no more than the
 * larger sample that dimension is simulated at its real value instead.  The
 * compute / exposed-communication / idle means are interpolated the same
 * way.
 *
 * Three corners are enough for 1F1B and GPipe (not interleaved) when the
 * synchronisation is simulated apart (below): the pipeline then takes
 * (m + p - 1) stage times plus parts that do not grow with the layers, so one
 * more layer per stage adds (m + p - 1) times that layer's forward and
 * backward, and T(2u, m2) = T(u, m2) + (m2 + p - 1) / (m1 + p - 1) x
 * (T(2u, m1) - T(u, m1)).  That skips the largest of the four simulations;
 * on the four sweeps of the README it is as close to full simulation as the
 * fourth corner was.
 *
 * The peak memory is not simulated at all: the workload's memory check
 * replays the schedule's own memory effects (workloads/gpt.c), so it equals
 * the simulated peak.  The error against full simulation is measured in
 * tests/planner/plan_fidelity*_heavy.sh and bench/plan_bench.sh and stated
 * in the README.  Nothing here is fitted to measurements.
 *
 * The synchronisation apart.  When the data-parallel streams (role
 * SIM_ROLE_DP, set by the generator) hold nothing but the
 * gradient synchronisation after the flush (no dp_overlap, ZeRO or OSDP),
 * the simulations above run the pipeline with the synchronisation and the
 * optimizer step taken out: they give each GPU's end of the pipeline
 * E(rank), interpolated like the rest.  One more simulation runs every GPU
 * of the full model's synchronisation (gradient and embedding all-reduces,
 * optimizer step), each GPU starting at its E: that part sees the whole
 * machine.  What it misses: stage s's gradient all-reduce sharing links with
 * other stages' remaining pipeline traffic (pp > 1).
 *
 * Data-parallel replicas.  Replicas that share no server (and a fabric that
 * is one non-blocking switch, as the generated single-switch platforms are)
 * interact only through that synchronisation.  So the pipeline simulations
 * run only the replicas that share servers with replica 0 (k of dp; k = 1
 * when a TP group fills its servers).
 *
 * Communicators over three or more whole servers are simulated on two
 * servers each (fold.c).
 *
 * Deep pipelines (4 stages or more, 8 layers or fewer per stage) are
 * sampled whole in their steady state and extrapolated at its pace; from 5
 * stages on, with their first 4 (or more: stage_sample) standing for them
 * (see plan_evaluate_st). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "planner/plan.h"
#include "sim/engine.h"
#include "workloads/gpt.h"
#include "workloads/pipeline.h"
#include <stdlib.h>

static double wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

typedef struct point {
    double T, compute, exposed, idle, comm, peak;
    double kernel[SIM_KCLASS_COUNT]; /* the kernels' own seconds by class, means over the simulated GPUs */
    int folded; /* simulated on two servers per group (fold.c) */
    double *end; /* per rank of the simulated machine, or NULL */
    double *start; /* the same, when its first kernel started */
    double pace; /* paced runs: seconds per micro-batch in the steady state, 0 = not measured */
} point;

/* ---- splitting a schedule into the pipeline and the synchronisation ---- */

static int is_sync_op(const sim_schedule *s, uint32_t id, const unsigned char *dpstream)
{
    const sim_op *o = &s->ops[id];
    return dpstream[o->stream] || o->phase == SIM_PHASE_OPTIMIZER;
}

/* A copy of s with only the pipeline part (sync = 0: all but the
 * data-parallel streams and the optimizer step) or only the synchronisation
 * part (sync = 1: those, each rank first waiting start[rank] seconds on its
 * compute stream). */
static sim_schedule *split(const sim_schedule *s, int sync, const double *start, sim_err *err)
{
    sim_schedule *n = sim_sched_new(s->nranks);
    unsigned char *dpstream = calloc(s->nstreams + 1, 1);
    int *smap = malloc(sizeof(int) * (s->nstreams + 1));
    uint32_t *map = malloc(sizeof(uint32_t) * (s->nops + 1));
    uint32_t *pmap = malloc(sizeof(uint32_t) * (s->npayloads + 1));
    uint32_t *fixed = calloc((size_t)s->nranks, sizeof *fixed);
    uint32_t *deps = NULL;
    if (!n || !dpstream || !smap || !map || !pmap || !fixed) {
        sim_errf(err, "out of memory splitting a schedule");
        goto fail;
    }
    n->meta = s->meta;
    n->layout = s->layout;
    for (int c = 0; c < s->ncomms; c++) {
        const char *nm = sim_sched_strname(s, s->comms[c].name);
        sim_sched_comm(n, nm ? nm : "comm", s->comms[c].ranks, s->comms[c].nranks);
    }
    for (uint32_t i = 0; i < s->nstreams; i++) {
        dpstream[i] = s->streams[i].role == SIM_ROLE_DP;
        smap[i] = -1;
    }
    for (uint32_t i = 0; i < s->npayloads; i++)
        pmap[i] = UINT32_MAX;
    if (sync)
        for (int r = 0; r < s->nranks; r++) {
            int st = sim_sched_stream_role(n, r, "compute", SIM_ROLE_COMPUTE);
            sim_payload p;
            memset(&p, 0, sizeof p);
            p.kind = SIM_OP_COMPUTE;
            p.sub = SIM_KERNEL_FIXED;
            p.name = sim_sched_str(n, "pipeline (simulated apart)");
            p.seconds = start[r];
            fixed[r] = sim_sched_add(n, st, sim_sched_payload(n, &p), -1, SIM_NO_TAGS, NULL, 0);
        }
    int maxdeps = 8;
    deps = malloc(sizeof(uint32_t) * (size_t)maxdeps);
    for (uint32_t id = 0; id < s->nops; id++) {
        const sim_op *o = &s->ops[id];
        map[id] = UINT32_MAX;
        if (is_sync_op(s, id, dpstream) != sync)
            continue;
        if (o->ndeps + 1 > maxdeps) {
            maxdeps = o->ndeps + 1;
            uint32_t *d = realloc(deps, sizeof(uint32_t) * (size_t)maxdeps);
            if (!d) {
                sim_errf(err, "out of memory splitting a schedule");
                goto fail;
            }
            deps = d;
        }
        int nd = 0;
        for (uint32_t k = 0; k < o->ndeps; k++) {
            uint32_t d = map[s->deps[o->dep_first + k]];
            if (d != UINT32_MAX)
                deps[nd++] = d;
        }
        int rank = s->streams[o->stream].rank;
        if (sync && dpstream[o->stream])
            deps[nd++] = fixed[rank];
        if (smap[o->stream] < 0)
            smap[o->stream] = sim_sched_stream_role(n, rank, sim_sched_strname(s, s->streams[o->stream].name),
                                                    s->streams[o->stream].role);
        if (pmap[o->payload] == UINT32_MAX)
            pmap[o->payload] = sim_sched_copy_payload(n, s, o->payload);
        sim_tags t = {o->layer, o->micro, o->subbatch, o->phase};
        map[id] = sim_sched_add(n, smap[o->stream], pmap[o->payload], o->arg, t, nd ? deps : NULL, nd);
    }
    goto done;
fail:
    sim_sched_free(n);
    n = NULL;
done:
    free(dpstream);
    free(smap);
    free(map);
    free(pmap);
    free(fixed);
    free(deps);
    return n;
}

/* Replicas (Megatron order: rank = stage·tp·dp + replica·tp + t) that share
 * servers with replica 0; dp when the reduction does not apply. */
static int coupled_replicas(const sim_machine *m, int tp, int pp, int dp)
{
    if (!sim_fold_fabric(m))
        return dp; /* unknown or oversubscribed fabric: replicas may meet there */
    int *comp = malloc(sizeof(int) * (size_t)dp);
    if (!comp)
        return dp;
    for (int d = 0; d < dp; d++)
        comp[d] = d;
    /* union replicas that share a node (small: quadratic is fine) */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int s = 0; s < pp; s++)
            for (int a = 0; a < dp; a++)
                for (int b = a + 1; b < dp; b++) {
                    if (comp[a] == comp[b])
                        continue;
                    int share = 0;
                    for (int x = 0; x < tp && !share; x++)
                        for (int y = 0; y < tp && !share; y++)
                            share = m->node[s * tp * dp + a * tp + x] == m->node[s * tp * dp + b * tp + y];
                    if (share) {
                        int lo = comp[a] < comp[b] ? comp[a] : comp[b];
                        comp[a] = comp[b] = lo;
                        changed = 1;
                    }
                }
    }
    int k = 0;
    while (k < dp && comp[k] == 0)
        k++;
    int ok = dp % k == 0;
    for (int d = 0; d < dp && ok; d++)
        ok = comp[d] == d / k * k; /* components are consecutive blocks of k */
    /* and every block sits on servers the same way as the first */
    for (int d = k; d < dp && ok; d++)
        for (int s = 0; s < pp && ok; s++)
            for (int x = 0; x < tp && ok; x++)
                for (int y = 0; y < tp && ok; y++) {
                    int r0 = s * tp * dp + (d % k) * tp, r1 = s * tp * dp + d * tp;
                    ok = (m->node[r0 + x] == m->node[r0 + y]) == (m->node[r1 + x] == m->node[r1 + y]);
                }
    free(comp);
    return ok ? k : dp;
}

/* The first k replicas as a machine of tp·pp·k ranks on the same hosts. */
static sim_machine *replica_view(const sim_machine *m, int tp, int pp, int dp, int k)
{
    int n = tp * pp * k;
    int *ranks = malloc(sizeof(int) * (size_t)n);
    if (!ranks)
        return NULL;
    for (int s = 0; s < pp; s++)
        for (int d = 0; d < k; d++)
            for (int t = 0; t < tp; t++)
                ranks[s * tp * k + d * tp + t] = s * tp * dp + d * tp + t;
    sim_machine *v = sim_machine_subset(m, ranks, n);
    free(ranks);
    return v;
}

/* Runs s on mach with opt, on two servers per group where fold.c allows it
 * (fold set, TRAINSIM_PLAN_FOLD not 0, which is there to measure the fold): r then holds the folded ranks, and *rep (when
 * rep is not NULL; the caller frees it) the folded rank standing for each
 * rank of s, else NULL. */
static int run_folded(const sim_schedule *s, const sim_machine *mach, sim_options *opt, int fold, sim_result *r,
                      int **rep, int *folded, sim_err *err)
{
    const char *env = getenv("TRAINSIM_PLAN_FOLD");
    sim_fold f;
    *folded = 0;
    if (rep)
        *rep = NULL;
    if (fold && !(env && !strcmp(env, "0")) &&
        (*folded = sim_fold_schedule(s, mach, SIM_FOLD_ALL, &f, err)) < 0)
        return -1;
    if (!*folded)
        return sim_run_isolated(s, mach, opt, r, err);
    int rc = sim_run_isolated(f.sched, f.mach, opt, r, err);
    if (rc == 0 && rep) {
        *rep = f.rep;
        f.rep = NULL;
    }
    sim_fold_free(&f);
    return rc;
}

/* The strategy as given (dp and gb as the user wrote them, auto or not)
 * with gb, and dp where dp > 0, replaced. */
static wl_strategy with_batch(const wl_strategy *given, int gb, int dp)
{
    wl_strategy st = *given;
    st.gb = gb;
    if (dp > 0)
        st.dp = dp;
    return st;
}

/* The steady pace of a 1F1B pipeline of p stages run with m micro-batches:
 * stage 0 ends micro-batch j's backward every pace seconds while it
 * alternates forwards and backwards, for j <= m - p - 1 (the next one
 * follows the last forward, which had nothing to wait for, and the rest
 * come one after the other).  The mean of those intervals; 0 when there
 * are none. */
static double steady_pace(const sim_result *r, int p)
{
    int last = r->nmicro - p - 1; /* the last backward with a full cycle before it */
    if (!r->micro_end || last < 1)
        return 0;
    for (int j = 0; j <= last; j++)
        if (!(r->micro_end[j] > 0))
            return 0;
    return (r->micro_end[last] - r->micro_end[0]) / last;
}

/* mode 0: the whole schedule; 1: the pipeline part only (split()), on the
 * replica view with dp = k, keeping each rank's start and end times.
 * aggregated: run the collectives as one flow per member and phase
 * (SIM_COLLMODE_AGGREGATED).  fold: on two servers per group where fold.c
 * allows it.  pace_stages > 0: measure the steady pace of a pipeline of
 * that many stages (steady_pace). */
static int simulate(const sim_machine *mach, const wl_model *m, const wl_strategy *given, int gb,
                    int dp, int mode, int aggregated, int fold, int pace_stages, point *out, sim_err *err)
{
    wl_strategy st = with_batch(given, gb, dp);
    sim_schedule *sch = wl_gpt_generate(m, &st, mach, err);
    if (!sch)
        return -1;
    if (mode == 1) {
        sim_schedule *p = split(sch, 0, NULL, err);
        sim_sched_free(sch);
        if (!p)
            return -1;
        sch = p;
    }
    sim_options opt;
    sim_options_default(&opt);
    if (aggregated)
        opt.coll_mode = SIM_COLLMODE_AGGREGATED;
    opt.pace = pace_stages > 0; /* rank 0: stage 0 in the schedule and in its fold */
    sim_result r;
    int *rep = NULL, folded = 0;
    int rc = run_folded(sch, mach, &opt, fold, &r, mode == 1 ? &rep : NULL, &folded, err);
    int nr = sch->nranks;
    sim_sched_free(sch);
    if (rc < 0)
        return -1;
    out->end = NULL;
    out->start = NULL;
    out->folded = folded;
    if (mode == 1) {
        out->end = malloc(sizeof(double) * (size_t)nr);
        out->start = malloc(sizeof(double) * (size_t)nr);
        for (int i = 0; out->end && out->start && i < nr; i++) {
            out->end[i] = r.rank[rep ? rep[i] : i].end_s;
            out->start[i] = r.rank[rep ? rep[i] : i].start_s;
        }
    }
    free(rep);
    out->T = r.iteration_s;
    out->compute = r.compute_s;
    out->exposed = r.exposed_comm_s;
    out->idle = r.idle_s;
    out->comm = r.comm_s;
    memcpy(out->kernel, r.kernel_s, sizeof out->kernel);
    out->peak = r.peak_mem;
    out->pace = pace_stages > 0 ? steady_pace(&r, pace_stages) : 0;
    sim_result_free(&r);
    return 0;
}

/* Does model m accept the strategy at global batch gb (divisibility only)? */
static int layers_ok(const plan_ctx *ctx, const wl_model *m, const wl_strategy *given, int gb)
{
    wl_strategy st = with_batch(given, gb, 0), res;
    sim_err e;
    return wl_gpt_resolve(m, &st, ctx->mach, &res, &e) == 0;
}

/* Does every layer add the same work, so that a model cut to fewer layers
 * predicts the real one?  Not when keys make layers differ (Oases' cut
 * point, OSDP's per-layer levels, Merak's pipelines and recompute_layers,
 * which choose what to recompute by a layer's place in its stage), nor when
 * gradient buckets overlap the backward (dp_overlap, ZeRO-2/3): there the
 * exposed tail depends on how the last layers' collectives line up with the
 * first layers' compute, which one or two layers do not show (measured: 20 %
 * off at pp = 1). */
static int layers_additive(const wl_strategy *res)
{
    return res->tp_cut_tp == 0 && res->osdp[0] == 0 && !wl_pipe_is_merak(res->pipeline) && res->dp_overlap == 0 &&
           res->zero < 2 && res->fsdp == WL_FSDP_NONE && res->recompute_layers < 0;
}

/* The stages a deep pipeline is sampled with (0: all of them): the first
 * p' of its p, p' at least 4 (two middle stages, between which the fill is
 * measured), placed as the whole pipeline is: a whole number of servers
 * when stages share a server, and at least two servers, so that the sample
 * has the stage-to-stage traffic through NICs that the whole pipeline has. */
static int stage_sample(const sim_machine *m, int tp, int dp, int p)
{
    int per_node = 0;
    for (int r = 0; r < m->ngpus && m->node[r] == m->node[0]; r++)
        per_node++;
    for (int r = 0; r < m->ngpus; r++) /* servers of unequal size: no sample */
        if ((r % per_node == 0) != (r == 0 || m->node[r] != m->node[r - 1]))
            return 0;
    int stage = tp * dp, per_server = stage < per_node && per_node % stage == 0 ? per_node / stage : 1;
    for (int q = 4; q < p; q++)
        if (q % per_server == 0 && q * stage >= 2 * per_node)
            return q;
    return 0;
}

void plan_evaluate(const plan_ctx *ctx, const char *strategy, plan_result *out)
{
    wl_strategy st;
    wl_strategy_default(&st);
    sim_err err = {{0}};
    if (wl_strategy_parse(strategy, &st, &err) < 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->strategy, sizeof out->strategy, "%s", strategy);
        out->status = -1;
        plan_copy(out->error, sizeof out->error, err.msg);
        return;
    }
    plan_evaluate_st(ctx, &st, out);
    snprintf(out->strategy, sizeof out->strategy, "%s", strategy); /* as the space and the cache spell it */
}

void plan_evaluate_st(const plan_ctx *ctx, const wl_strategy *given, plan_result *out)
{
    double t0 = wall_now();
    memset(out, 0, sizeof *out);
    wl_strategy_format(given, out->strategy, sizeof out->strategy);
    out->status = -1;
    sim_err err = {{0}};
    wl_strategy st = *given, res;
    if (wl_gpt_resolve(&ctx->model, &st, ctx->mach, &res, &err) < 0) {
        plan_copy(out->error, sizeof out->error, err.msg);
        return;
    }
    int L = ctx->model.layers, gb = res.gb, per = res.mb * res.dp, nmb = gb / per, p = res.pp;
    int lp[2] = {L, L}, nl = 1, np = 1, nm[2] = {nmb, nmb};
    /* the model (and under pp_layers the strategy) of each layer sample */
    wl_model ml[2] = {ctx->model, ctx->model};
    wl_strategy sl[2] = {st, st};
    /* MoE layers on some layers only: a model cut to fewer layers changes
     * their mix, so only all-MoE models are interpolated in the layers */
    int uniform = !ctx->model.moe || (ctx->model.moe_cfg.every == 1 && ctx->model.moe_cfg.first == 0);
    /* a routed step (routing=) draws each MoE layer's routing in turn: a cut
     * model would keep the first layers' only */
    uniform = uniform && !st.routing[0];
    /* A deep pipeline (4 stages or more) of few layers per stage (8 or
     * fewer) is sampled in its steady state, at p and 2p micro-batches,
     * with every layer: at 1 and 3 micro-batches its stages never all send
     * at once, as they do from p on over a shared PCIe or NIC path (a 13B
     * model, tp 4 · pp 8 · dp 2 on 64 RTX 4090: -14.5 % against full
     * simulation, -0.5 % so), and the model cut to 1 and 2 layers per stage
     * alternates with m there (dlperf-016, V100 tp 8 · pp 4: +16 % with the
     * cut at p and 2p, +1.6 % without; +4.0 % as before).  It costs about
     * five times the simulation (0.65 s instead of 0.13 s on the 13B case). */
    int deep = p >= 4 && L / p <= 8 && res.stage_split == WL_SPLIT_UNIFORM && !wl_pipe_is_merak(res.pipeline) &&
               res.vstages == 1;
    if (ctx->fidelity == PLAN_FAST && layers_additive(&res) && uniform && !deep) {
        /* one and two layers on the virtual stage with fewest (wl_gpt_cut:
         * every stage loses the same layers, so the step is affine in them;
         * for a uniform split p·vstages and twice that) */
        sim_err e;
        wl_model m1, m2;
        wl_strategy s1, s2;
        int u1 = wl_gpt_cut(&ctx->model, &st, 1, &m1, &s1, &e), u2 = wl_gpt_cut(&ctx->model, &st, 2, &m2, &s2, &e);
        if (u1 > 0 && u2 > u1 && u2 < L && layers_ok(ctx, &m1, &s1, gb) && layers_ok(ctx, &m2, &s2, gb)) {
            lp[0] = u1;
            lp[1] = u2;
            ml[0] = m1;
            ml[1] = m2;
            sl[0] = s1;
            sl[1] = s2;
            nl = 2;
        }
    }
    /* Merak's pre-recompute next to overlapped gradient buckets is not affine
     * in m even in the steady state (measured: 8.8 % off at pp = 2) */
    int m_affine = !(res.pipeline == WL_PIPE_MERAK_PRE && res.dp_overlap);
    if (ctx->fidelity == PLAN_FAST && m_affine) {
        /* the first pair the schedule accepts (interleaved wants whole rounds
         * of p).  Uneven stages (stage_split, pp_layers) from deeper in the
         * steady state: with stages of unequal time the slowest one sets the
         * pace only after the backlog in front of it has built up, which
         * takes more than p micro-batches (measured against whole
         * simulation: BLOOM-176B's tp 4 x pp 12 layout off by 2.0 % sampled
         * at p and p + 2, 0.3 % at p and 2p, 0.07 % at 2p and 3p; the
         * cases of tests/planner/plan_stage_split.sh at most 3.9 % at 1 and
         * 3, 1.0 % at 2p and 3p) */
        int uneven = res.stage_split != WL_SPLIT_UNIFORM;
        int pairs[4][2] = {{1, p == 1 ? 2 : 3}, {p, p + 2}, {p, 2 * p}, {2 * p, 3 * p}};
        static const int order[3][4] = {{0, 1, 2, -1}, {1, 2, -1, -1}, {3, 2, 1, -1}};
        static const int steady[4] = {2, 1, -1, -1};
        const int *o = deep ? steady : order[uneven ? 2 : wl_pipe_is_merak(res.pipeline) ? 1 : 0];
        for (int i = 0; i < 4 && o[i] >= 0 && np == 1; i++) {
            int n1 = pairs[o[i]][0], n2 = pairs[o[i]][1];
            if (n2 < nmb && layers_ok(ctx, &ctx->model, &st, n1 * per) && layers_ok(ctx, &ctx->model, &st, n2 * per)) {
                nm[0] = n1;
                nm[1] = n2;
                np = 2;
            }
        }
    }
    /* the synchronisation apart, and the data-parallel replicas (see the
     * header): only when the data-parallel streams hold nothing but the gradient
     * synchronisation after the flush, not with overlapped buckets, ZeRO or
     * OSDP, whose collectives run inside forward and backward */
    int k = res.dp;
    sim_machine *view = NULL;
    int split_sync = ctx->fidelity == PLAN_FAST && res.dp_overlap == 0 && res.zero == 0 && res.osdp[0] == 0 &&
                     res.fsdp == WL_FSDP_NONE && wl_strategy_cp(&res) == 1 && /* the view lays out tp·dp per stage */
                     wl_strategy_ep(&res) == 1; /* and MoE's all-to-alls need their whole EP groups */
    if (split_sync && res.dp > 1) {
        k = coupled_replicas(ctx->mach, res.tp, res.pp, res.dp);
        if (k < res.dp && !(view = replica_view(ctx->mach, res.tp, res.pp, res.dp, k)))
            k = res.dp;
    }
    out->replicas = k;
    /* A deep 1F1B pipeline whose synchronisation runs apart: one simulation
     * at p + 5 micro-batches, extrapolated at the steady pace measured in it
     * (steady_pace: every further micro-batch adds one), instead of two at p
     * and 2p.  All stages send at once in that steady phase, which is what
     * the deep rule samples for.  Against full simulation on the bench
     * sweep (bench/plan_bench.sh): mean 0.31 %, worst 2.11 % (0.21 / 2.11 %
     * with the two samples; with 1, 2 or 3 steady intervals instead of 4:
     * 1.15 / 9.32, 0.60 / 5.19, 0.36 / 2.11 %); dlperf-015 / -016 / -017
     * -1.4 / +0.9 / +0.3 % (-0.1 / +1.6 / +0.2 % with the two samples).
     * Falls back to p and 2p where no pace shows. */
    int paced = 0;
    if (deep && ctx->fidelity == PLAN_FAST && split_sync && res.pipeline == WL_PIPE_1F1B && p + 5 < nmb &&
        layers_ok(ctx, &ctx->model, &st, (p + 5) * per)) {
        nm[0] = p + 5;
        np = 1;
        paced = 1;
    }
    /* Deeper still: the first q stages of the pipeline (stage_sample) stand
     * for it, at q + 5 micro-batches.  Every stage the sample lacks adds a
     * middle stage's fill and drain (its forward, its backward and their
     * sends: measured between the sample's stages 1 and 2), every further
     * micro-batch the pace.  The sample keeps the whole pipeline's placement
     * on the servers, so its stages send at once over the same kind of
     * paths.  Against full simulation on the bench sweep: the 30 evaluations
     * it changes (pp 6 and 8) mean 0.76 %, worst 1.81 % (0.59 / 1.28 % with
     * every stage); the whole sweep 0.34 / 2.11 % (0.31 / 2.11 %), at 45.5
     * instead of 35.1 evaluations/s.  GPT-3 175B on 1,024 A100 (tp 8 · pp 16 ·
     * dp 8, bench/bench.sh): 27.1972 s as before, in 0.30 s instead of 0.64. */
    int q = 0;
    wl_model mq = ctx->model;
    wl_strategy sq = st;
    sim_machine *qview = NULL;
    const char *every_stage = getenv("TRAINSIM_PLAN_STAGE_SAMPLE"); /* 0: off, to measure it (tests) */
    if (paced && uniform && ctx->model.layers % p == 0 && !(every_stage && !strcmp(every_stage, "0")) &&
        (q = stage_sample(ctx->mach, res.tp, res.dp, p)) > 0) {
        mq.layers = ctx->model.layers / p * q;
        sq.pp = q;
        wl_strategy chk = with_batch(&sq, (q + 5) * res.mb * k, k), rq;
        sim_err e;
        if (!(qview = replica_view(ctx->mach, res.tp, q, res.dp, k)) || q + 5 >= nmb ||
            wl_gpt_resolve(&mq, &chk, qview, &rq, &e) < 0) {
            sim_machine_free(qview);
            qview = NULL;
            q = 0;
        } else {
            ml[0] = mq;
            sl[0] = sq;
            nm[0] = q + 5;
        }
    }
    /* Aggregated collectives where the reduced simulations hold no
     * data-parallel collectives beside the tensor-parallel ones: at most the
     * gradient synchronisation after the flush.  Measured against step mode
     * on four sweeps (README): no change above 0.5 %; with ZeRO-2/3 or
     * overlapped buckets, whose collectives share links with TP's while they
     * run, up to 5.6 % (TP rings of 2 and 4 GPUs go step by step otherwise). */
    int fast = ctx->fidelity == PLAN_FAST;
    int aggregated = fast && res.zero < 2 && res.dp_overlap == 0 && res.osdp[0] == 0 && res.fsdp == WL_FSDP_NONE;
    int perk = res.mb * k;
    point pt[2][2];
    memset(pt, 0, sizeof pt);
    int failed = 0;
    /* the fourth corner from the other three (see the header) */
    int three = split_sync && nl == 2 && np == 2 && res.vstages == 1 &&
                (res.pipeline == WL_PIPE_1F1B || res.pipeline == WL_PIPE_GPIPE);
    int nview = res.tp * res.pp * k;
    for (int i = 0; i < nl && !failed; i++)
        for (int j = 0; j < np && !failed; j++) {
            if (three && i == 1 && j == 1) {
                /* one more layer per stage: the iteration grows by m + p - 1
                 * of its forward and backward, a GPU's kernels and
                 * collectives by the m micro-batches it runs, the bubble by
                 * the p - 1 stage times it is (not growing with m); exposed
                 * communication is what remains */
                double ratio = (double)(nm[1] + p - 1) / (nm[0] + p - 1), busy = (double)nm[1] / nm[0];
                const point *a = &pt[0][1], *b = &pt[1][0], *c = &pt[0][0];
                point *o = &pt[1][1];
                o->T = a->T + ratio * (b->T - c->T);
                o->compute = a->compute + busy * (b->compute - c->compute);
                o->comm = a->comm + busy * (b->comm - c->comm);
                for (int kc = 0; kc < SIM_KCLASS_COUNT; kc++) /* kernels grow as the compute does */
                    o->kernel[kc] = a->kernel[kc] + busy * (b->kernel[kc] - c->kernel[kc]);
                o->idle = a->idle + (b->idle - c->idle);
                o->exposed = fmax(0, o->T - o->compute - o->idle);
                o->end = malloc(sizeof(double) * (size_t)nview);
                for (int q = 0; o->end && q < nview; q++)
                    o->end[q] = a->end[q] + ratio * (b->end[q] - c->end[q]);
                if (!o->end)
                    failed = sim_errf(&err, "out of memory") < 0;
                continue;
            }
            if (split_sync)
                failed = simulate(qview ? qview : view ? view : ctx->mach, &ml[i], &sl[i], nm[j] * perk, k, 1,
                                  aggregated, fast, paced ? (q ? q : p) : 0, &pt[i][j], &err) < 0 ||
                         !pt[i][j].end || !pt[i][j].start;
            else
                failed = simulate(ctx->mach, &ml[i], &sl[i], nm[j] * per, 0, 0, aggregated, fast, 0, &pt[i][j],
                                  &err) < 0;
            if (failed && !err.msg[0])
                sim_errf(&err, "out of memory");
            if (!failed) {
                out->sims++;
                out->folded += pt[i][j].folded;
            }
            if (!failed && paced && q && pt[i][j].pace <= 0) {
                /* the stage sample showed no pace: the whole pipeline after all */
                free(pt[i][j].end);
                free(pt[i][j].start);
                memset(&pt[i][j], 0, sizeof pt[i][j]);
                q = 0;
                ml[0] = ctx->model;
                sl[0] = st;
                nm[0] = p + 5;
                sim_machine_free(qview);
                qview = NULL;
                j--;
                continue;
            }
            if (!failed && paced && pt[i][j].pace <= 0) {
                /* no steady pace: a second sample after all, at 2p or else
                 * at the real count (never the sample alone, unextrapolated) */
                paced = 0;
                nm[1] = 2 * p < nmb && layers_ok(ctx, &ctx->model, &st, 2 * p * per) ? 2 * p : nmb;
                np = 2;
            }
        }
    if (paced && !failed) {
        /* every micro-batch past the sample adds one pace; kernels and
         * transfers grow with the micro-batches, the bubble does not */
        point *a = &pt[0][0];
        double extra = (nmb - nm[0]) * a->pace, grow = (double)nmb / nm[0];
        if (q) {
            /* the stages the sample lacks: each a middle stage's fill and
             * drain (stage 1 to 2 of the sample, as its first GPU saw them);
             * their ends continue the sample's middle stages' steps down to
             * the last stage, which ends its own step after them */
            int w = res.tp * k;
            double *end = malloc(sizeof(double) * (size_t)nview);
            if (!end) {
                failed = sim_errf(&err, "out of memory") < 0;
            } else {
                extra += (p - q) * ((a->start[2 * w] - a->start[w]) + (a->end[w] - a->end[2 * w]));
                for (int s2 = 0; s2 < p; s2++)
                    for (int x = 0; x < w; x++) {
                        const double *e1 = a->end + (size_t)x;
                        double e = s2 <= q - 2 ? e1[(size_t)s2 * w] + extra
                                               : e1[(size_t)(q - 2) * w] + extra -
                                                     ((s2 < p - 1 ? s2 : p - 2) - (q - 2)) * (e1[w] - e1[2 * w]);
                        if (s2 == p - 1)
                            e -= e1[(size_t)(q - 2) * w] - e1[(size_t)(q - 1) * w];
                        end[(size_t)s2 * w + x] = e;
                    }
                free(a->end);
                a->end = end;
            }
        }
        a->T += extra;
        a->compute *= grow;
        for (int kc = 0; kc < SIM_KCLASS_COUNT; kc++)
            a->kernel[kc] *= grow;
        a->comm *= grow;
        a->exposed *= grow;
        a->idle = fmax(0, a->T - a->compute - a->exposed);
        for (int x = 0; !q && x < nview; x++)
            a->end[x] += extra;
    }
    double wl[2] = {1, 0}, wm[2] = {1, 0};
    if (nl == 2) {
        double a = (double)(L - lp[0]) / (lp[1] - lp[0]);
        wl[0] = 1 - a;
        wl[1] = a;
    }
    if (np == 2) {
        double a = (double)(nmb - nm[0]) / (nm[1] - nm[0]);
        wm[0] = 1 - a;
        wm[1] = a;
    }
    point f = {0};
    for (int i = 0; i < nl && !failed; i++)
        for (int j = 0; j < np; j++) {
            double w = wl[i] * wm[j];
            f.T += w * pt[i][j].T;
            f.compute += w * pt[i][j].compute;
            f.exposed += w * pt[i][j].exposed;
            f.idle += w * pt[i][j].idle;
            f.comm += w * pt[i][j].comm;
            for (int kc = 0; kc < SIM_KCLASS_COUNT; kc++)
                f.kernel[kc] += w * pt[i][j].kernel[kc];
            f.peak += w * pt[i][j].peak;
        }
    if (split_sync && !failed) {
        /* the synchronisation of the full model on every GPU, each starting
         * where its replica-0..k-1 counterpart ended the pipeline */
        int G = ctx->mach->ngpus, td = res.tp * res.dp;
        double *start = calloc((size_t)G, sizeof *start), mean_start = 0;
        for (int r = 0; start && r < G; r++) {
            int st = r / td, d = r % td / res.tp, t = r % res.tp;
            int rv = st * res.tp * k + (d % k) * res.tp + t;
            for (int i = 0; i < nl; i++)
                for (int j = 0; j < np; j++)
                    start[r] += wl[i] * wm[j] * pt[i][j].end[rv];
            mean_start += start[r] / G;
        }
        /* the synchronisation does not depend on the micro-batches (its
         * waits on them become the start times): generated with the fewest
         * the schedule accepts rather than the sample's (the generator's
         * work; byte-identical results on the bench sweep) */
        int nsync = layers_ok(ctx, &ctx->model, &st, per) ? 1 : layers_ok(ctx, &ctx->model, &st, p * per) ? p : nm[0];
        wl_strategy st2 = with_batch(&st, nsync * per, 0);
        sim_schedule *full = NULL, *sync = NULL;
        sim_result r2;
        if (!start || !(full = wl_gpt_generate(&ctx->model, &st2, ctx->mach, &err)) ||
            !(sync = split(full, 1, start, &err))) {
            failed = 1;
        } else {
            sim_options opt;
            sim_options_default(&opt);
            /* gradient buckets after the flush, every ring alike: one flow
             * per member and phase (7e-5 relative here) instead of 2(n-1)
             * steps */
            opt.coll_mode = SIM_COLLMODE_AGGREGATED;
            int sync_folded = 0;
            if (run_folded(sync, ctx->mach, &opt, 1, &r2, NULL, &sync_folded, &err) < 0) {
                failed = 1;
            } else {
                out->sims++;
                out->folded += sync_folded;
                f.T = r2.iteration_s;
                f.compute += r2.compute_s - mean_start;
                /* the waits until each GPU's start are replayed kernels (split): not the job's */
                for (int kc = 0; kc < SIM_KCLASS_COUNT; kc++)
                    f.kernel[kc] += kc == SIM_KCLASS_MEASURED ? fmax(0, r2.kernel_s[kc] - mean_start) : r2.kernel_s[kc];
                f.exposed += r2.exposed_comm_s;
                f.comm += r2.comm_s;
                f.idle = fmax(0, f.T - f.compute - f.exposed);
                sim_result_free(&r2);
            }
        }
        sim_sched_free(full);
        sim_sched_free(sync);
        free(start);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            free(pt[i][j].end);
            free(pt[i][j].start);
        }
    sim_machine_free(view);
    sim_machine_free(qview);
    if (failed) {
        plan_copy(out->error, sizeof out->error, err.msg);
        out->wall_s = wall_now() - t0;
        return;
    }
    if (!(f.T > 0)) {
        snprintf(out->error, sizeof out->error, "simulated iteration time %g s is not positive", f.T);
        return;
    }
    /* The peak from the workload's memory check, which replays the
     * schedule's memory effects: the simulated peak of the real (L, m).
     * The reduced simulations' peaks are not interpolated: with fewer
     * micro-batches than stages fewer are in flight. */
    if (ctx->fidelity == PLAN_FAST) {
        wl_memory est;
        sim_err e2;
        if (wl_gpt_check(&ctx->model, &st, ctx->mach, &est, &e2) < 0) {
            plan_copy(out->error, sizeof out->error, e2.msg);
            out->wall_s = wall_now() - t0;
            return;
        }
        f.peak = est.total;
    }
    out->status = 0;
    out->iteration_s = f.T;
    out->samples_per_s = gb / f.T;
    out->tokens_per_s = (double)gb * ctx->model.seq / f.T;
    out->tflops_per_gpu = wl_gpt_model_flops(&ctx->model, &res) / f.T / ctx->mach->ngpus / 1e12;
    out->peak_mem = f.peak;
    out->compute_s = f.compute;
    out->exposed_comm_s = f.exposed;
    out->idle_s = f.idle;
    out->comm_s = f.comm;
    memcpy(out->kernel_s, f.kernel, sizeof out->kernel_s);
    out->wall_s = wall_now() - t0;
}
