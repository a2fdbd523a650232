/* placement.c — pipeline stages over node groups of mixed GPUs
 * (`trainsim plan --placements K`).
 *
 * The generators lay ranks out Megatron's way (stage s holds ranks
 * s·B .. (s+1)·B − 1, B = GPUs / pp), so on a cluster of node groups the
 * rank order alone decides which GPU kind runs which stage: group 0's GPUs
 * the first stages.  Which stage goes where matters: the last stage carries
 * the output layer and the loss, the first the embedding and the most
 * activations in flight.  A placement here is a permutation of the pp
 * blocks of B machine ranks: stage s runs on block order[s], the schedule
 * unchanged (a machine view, sim_machine_subset, as `run --job` with a GPU
 * list builds it).  Blocks of the same GPU kinds in the same order are
 * interchangeable for pricing, so only distinct sequences of block kinds
 * are tried (at most PLAN_PLACE_MAX); each is evaluated as the sweep
 * evaluates a strategy (eval.c, in a forked child), and the fastest is
 * reported with the GPU list that reproduces it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "workloads/model.h"

/* Block b's kind: the index of the first block with the same GPU models. */
static void block_kinds(const sim_machine *m, int pp, int *kind)
{
    int B = m->ngpus / pp;
    for (int b = 0; b < pp; b++) {
        kind[b] = b;
        for (int a = 0; a < b && kind[b] == b; a++) {
            int same = 1;
            for (int i = 0; i < B && same; i++)
                same = m->gpu_model[a * B + i] == m->gpu_model[b * B + i];
            if (same)
                kind[b] = kind[a];
        }
    }
}

/* Every distinct sequence of block kinds, blocks of one kind taken in
 * index order; orders[n][pp].  Returns how many (capped at max). */
static int enumerate(const int *kind, int pp, int *cur, int depth, unsigned used, int (*orders)[PLAN_PLACE_PP],
                     int n, int max)
{
    if (depth == pp) {
        if (n < max)
            memcpy(orders[n], cur, sizeof *orders);
        return n + 1;
    }
    for (int b = 0; b < pp; b++) {
        if (used & (1u << b))
            continue;
        int first = 1; /* the lowest unused block of its kind */
        for (int a = 0; a < b && first; a++)
            first = (used & (1u << a)) || kind[a] != kind[b];
        if (!first)
            continue;
        cur[depth] = b;
        n = enumerate(kind, pp, cur, depth + 1, used | (1u << b), orders, n, max);
    }
    return n;
}

typedef struct place_arg {
    const plan_ctx *ctx;
    const char *strategy;
    const int *order;
    int pp;
} place_arg;

/* In a forked child: the strategy on the machine with stage s on block order[s]. */
static void place_eval(void *arg, void *out)
{
    const place_arg *a = arg;
    const sim_machine *m = a->ctx->mach;
    int B = m->ngpus / a->pp;
    int *ranks = malloc(sizeof *ranks * (size_t)m->ngpus);
    plan_result *r = out;
    memset(r, 0, sizeof *r);
    sim_machine *v = NULL;
    if (ranks) {
        for (int i = 0; i < m->ngpus; i++)
            ranks[i] = a->order[i / B] * B + i % B;
        v = sim_machine_subset(m, ranks, m->ngpus);
    }
    if (!v) {
        r->status = -1;
        snprintf(r->error, sizeof r->error, "out of memory");
    } else {
        plan_ctx c = *a->ctx;
        c.mach = v;
        plan_evaluate(&c, a->strategy, r);
    }
    sim_machine_free(v);
    free(ranks);
}

int plan_place(const plan_ctx *ctx, const char *strategy, plan_placement *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    plan_copy(out->strategy, sizeof out->strategy, strategy);
    wl_strategy s;
    wl_strategy_default(&s);
    if (wl_strategy_parse(strategy, &s, err) < 0)
        return -1;
    const sim_machine *m = ctx->mach;
    out->pp = s.pp;
    if (s.pp < 2 || s.pp > PLAN_PLACE_PP || m->ngpus % s.pp)
        return 0; /* nothing to place (or more stages than the search takes) */
    int kind[PLAN_PLACE_PP], cur[PLAN_PLACE_PP];
    block_kinds(m, s.pp, kind);
    int (*orders)[PLAN_PLACE_PP] = calloc(PLAN_PLACE_MAX, sizeof *orders);
    if (!orders)
        return sim_errf(err, "out of memory");
    int n = enumerate(kind, s.pp, cur, 0, 0, orders, 0, PLAN_PLACE_MAX);
    out->distinct = n;
    out->tried = n < PLAN_PLACE_MAX ? n : PLAN_PLACE_MAX;
    int rc = 0;
    for (int i = 0; i < out->tried && !rc; i++) {
        plan_result r;
        place_arg a = {ctx, strategy, orders[i], s.pp};
        if (plan_fork_call(place_eval, &a, &r, sizeof r, err) < 0) {
            rc = -1;
            break;
        }
        if (r.status != 0) {
            rc = sim_errf(err, "%s with stages on blocks %d..: %s", strategy, orders[i][0], r.error);
            break;
        }
        if (i == 0) /* the rank order: blocks 0, 1, ... is the first sequence enumerated */
            out->rank_order_s = r.iteration_s;
        if (i == 0 || r.iteration_s < out->best_s) {
            out->best_s = r.iteration_s;
            memcpy(out->order, orders[i], sizeof out->order);
        }
    }
    free(orders);
    return rc;
}
