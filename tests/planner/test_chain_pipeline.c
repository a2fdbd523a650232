/* test_chain_pipeline.c — oracles for the pipelined chains that Galvatron's
 * outer loop simulates whole (planner/chain.c), on the uniform star platform
 * with free communication and uniform stages:
 *  - GPipe and 1F1B both take (m + PP - 1) x one stage's per-micro-batch
 *    time (its no_sync fragment) + the step's sync, the pipeline formula of
 *    papers.md §3.4, which holds exactly here;
 *  - a stage's fragment costs the same on any stage's GPUs (`first`);
 *  - memory: GPipe's first stage holds m micro-batches' activations, 1F1B's
 *    min(m, PP) (PipeDream-flush);
 *  - a stage layout that skips a stage is refused with a message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../sim/star.h"
#include "planner/chain.h"
#include "sim/engine.h"

static wl_model model(void)
{
    wl_model m;
    sim_err err;
    const char *json = "{\"name\":\"u\",\"layers\":4,\"hidden\":512,\"heads\":8,\"ffn\":2048,\"seq\":128,\"vocab\":128}";
    if (wl_model_from_json(json, "u.json", &m, &err))
        abort();
    return m;
}

/* Kernels cost their GEMM/attention FLOPs only, links are nearly free. */
static sim_machine *machine(int n)
{
    sim_machine *m = star_machine(n, 1e15, 0, 1);
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        m->gpus[0].peak_flops[d] = 100e12;
    m->gpus[0].mem_bw = 1e18;
    m->gpus[0].launch_s = 0;
    return m;
}

static int run(const plan_chain *c, const sim_machine *m, plan_chain_out *o)
{
    sim_err err;
    if (plan_chain_run(c, m, o, &err) < 0) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int pipeline_case(const wl_model *mod, sim_machine *mach, int G, int PP, int M, int f1b)
{
    int fails = 0, Gs = G / PP, L = 4, n = 2 * L, b = 2 * Gs;
    plan_block_kind kind[8];
    plan_bstrat st[8];
    int stage[8];
    for (int i = 0; i < n; i++) {
        kind[i] = (plan_block_kind)(i % 2);
        st[i] = (plan_bstrat){1, 0, 1}; /* dp = Gs */
        stage[i] = i / (n / PP);
    }
    /* one stage's fragments on the first and the last stage's GPUs */
    plan_chain_out f0, fl, sy, whole;
    plan_chain c0 = {.model = mod, .gpus = Gs, .batch = b, .dtype = SIM_DTYPE_FP32, .n = n / PP, .kind = kind,
                     .st = st, .no_sync = 1};
    plan_chain cl = c0;
    cl.first = (PP - 1) * Gs;
    plan_chain cs = c0;
    cs.no_sync = 0;
    cs.sync_only = 1;
    if (run(&c0, mach, &f0) || run(&cl, mach, &fl) || run(&cs, mach, &sy))
        return 1;
    char what[160];
    snprintf(what, sizeof what, "PP %d m %d: stage fragment on the last stage's GPUs", PP, M);
    fails += near(fl.time_s, f0.time_s, 1e-9, what);
    plan_chain w = {.model = mod, .gpus = Gs, .batch = b, .dtype = SIM_DTYPE_FP32, .n = n, .kind = kind, .st = st,
                    .pp = PP, .stage = stage, .micro = M, .one_f_one_b = f1b};
    if (run(&w, mach, &whole))
        return 1;
    snprintf(what, sizeof what, "PP %d m %d %s: (m + PP - 1) x stage + sync", PP, M, f1b ? "1F1B" : "GPipe");
    /* the transfers at 1e15 B/s still cost nanoseconds on the critical path */
    fails += near(whole.time_s, (M + PP - 1) * f0.time_s + sy.time_s, 1e-5, what);
    int live = f1b && PP < M ? PP : M;
    snprintf(what, sizeof what, "PP %d m %d %s: activations of %d micro-batches", PP, M, f1b ? "1F1B" : "GPipe", live);
    fails += near(whole.peak_kind[SIM_MEM_ACTIVATIONS], live * f0.peak_kind[SIM_MEM_ACTIVATIONS], 1e-12, what);
    return fails;
}

int main(void)
{
    int fails = 0;
    wl_model mod = model();
    sim_machine *mach = machine(4);
    fails += pipeline_case(&mod, mach, 4, 4, 8, 0);
    fails += pipeline_case(&mod, mach, 4, 4, 8, 1);
    fails += pipeline_case(&mod, mach, 4, 2, 4, 0);
    fails += pipeline_case(&mod, mach, 4, 2, 4, 1);
    fails += pipeline_case(&mod, mach, 4, 4, 2, 1); /* fewer micro-batches than stages */

    /* a stage that holds no block */
    plan_block_kind kind[4] = {PLAN_ATTN, PLAN_MLP, PLAN_ATTN, PLAN_MLP};
    plan_bstrat st[4] = {{1, 0, 1}, {1, 0, 1}, {1, 0, 1}, {1, 0, 1}};
    int stage[4] = {0, 0, 2, 2};
    plan_chain c = {.model = &mod, .gpus = 1, .batch = 2, .dtype = SIM_DTYPE_FP32, .n = 4, .kind = kind, .st = st,
                    .pp = 3, .stage = stage, .micro = 2};
    sim_err err;
    sim_schedule *s = plan_chain_build(&c, &err);
    if (s || !strstr(err.msg, "expected every one of the 3 stages to hold a run of blocks")) {
        printf("FAIL: a skipped stage was not refused (%s)\n", s ? "built" : err.msg);
        fails++;
    }
    sim_sched_free(s);
    sim_machine_free(mach);
    if (fails)
        return 1;
    printf("ok\n");
    return 0;
}
