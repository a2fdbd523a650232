/* test_pipeline_sim.c — simulated oracles for the generated pipeline and
 * data-parallel schedules, on the uniform star platform (tests/sim/star.h):
 *  - pipeline bubble with free communication and uniform stages: the idle
 *    time is (p−1)/m of the compute time for 1F1B, GPipe and eager 1F1B, and
 *    (p−1)/(v·m) for interleaved 1F1B (Narayanan et al. 2021 §2.2);
 *  - DP gradient all-reduce at the end of the step is exposed in full
 *    (S/B for a 2-member ring), and the DDP-overlapped buckets hide it when
 *    compute dominates;
 *  - ZeRO-3 moves 3× the parameters per step (all-gather in forward and
 *    backward, reduce-scatter) where DP's all-reduce moves 2×: with free
 *    compute, the step takes 1.5× as long. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/star.h"
#include "sim/engine.h"
#include "wl_test.h"
#include "workloads/gpt.h"

/* Uniform layers; the embedding and the logits are ~1% of a stage (vocab 128). */
static wl_model model(void)
{
    wl_model m;
    sim_err err;
    const char *json = "{\"name\":\"u\",\"layers\":8,\"hidden\":512,\"heads\":8,\"ffn\":2048,\"seq\":128,\"vocab\":128}";
    if (wl_model_from_json(json, "u.json", &m, &err))
        abort();
    return m;
}

/* Kernels cost their GEMM/attention FLOPs only (memory-bound kernels, the
 * optimizer step and launches are free), so stages are uniform. */
static sim_machine *machine(int n, double bw, double flops)
{
    return star_flops_machine(n, bw, flops, 1);
}

static int simulate(const wl_model *mod, const char *text, sim_machine *mach, sim_result *r)
{
    return wl_test_simulate(mod, text, mach, r, NULL);
}

static int bubbles(void)
{
    int fails = 0;
    wl_model mod = model();
    sim_machine *mach = machine(4, 1e15, 100e12);
    struct {
        const char *s;
        double want; /* idle / compute */
    } cases[] = {
        {"pp=4,mb=1,gb=8,dtype=fp32", 3.0 / 8},
        {"pp=4,mb=1,gb=16,dtype=fp32", 3.0 / 16},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=gpipe", 3.0 / 8},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=eager", 3.0 / 8},
        {"pp=4,mb=1,gb=8,dtype=fp32,pipeline=interleaved,vstages=2", 3.0 / (2 * 8)},
        {"pp=4,mb=1,gb=16,dtype=fp32,pipeline=interleaved,vstages=2", 3.0 / (2 * 16)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sim_result r;
        if (simulate(&mod, cases[k].s, mach, &r)) {
            fails++;
            continue;
        }
        /* the bubble is the step minus the busiest stage's compute (the last
         * stage's logits make it ~1% heavier); the engine's idle time is not
         * used because a GPU waiting inside a collective for the other
         * members (the last stage in the embedding all-reduce, as a spinning
         * NCCL kernel would) counts as communication there */
        double C = 0;
        for (int i = 0; i < r.nranks; i++)
            C = r.rank[i].compute_s > C ? r.rank[i].compute_s : C;
        char what[160];
        snprintf(what, sizeof what, "bubble/compute %s", cases[k].s);
        fails += near((r.iteration_s - C) / C, cases[k].want, 0.03, what);
        sim_result_free(&r);
    }
    sim_machine_free(mach);
    return fails;
}

static int dp_overlap(void)
{
    int fails = 0;
    wl_model mod = model();
    double bw = 4e12;
    sim_machine *mach = machine(2, bw, 100e12);
    sim_result end, ov;
    if (simulate(&mod, "dp=2,mb=1,gb=2,dtype=fp32,bucket=4", mach, &end) ||
        simulate(&mod, "dp=2,mb=1,gb=2,dtype=fp32,bucket=4,dp_overlap=1", mach, &ov)) {
        sim_machine_free(mach);
        return 1;
    }
    /* all gradients (fp32) all-reduced over 2 ranks: 2·(1/2)·S/B, after the flush */
    double P = wl_model_params(&mod) - 128.0 * 512 + 128.0 * 512; /* vocab 128 needs no padding at tp=1 */
    fails += near(end.exposed_comm_s, 4 * P / bw, 0.02, "end-of-step DP all-reduce exposed: S/B");
    fails += near(end.iteration_s, end.compute_s + 4 * P / bw, 0.02, "end-of-step: compute + S/B");
    printf("overlapped buckets: exposed %.3g s of %.3g s communication\n", ov.exposed_comm_s, ov.comm_s);
    if (!(ov.exposed_comm_s < 0.2 * end.exposed_comm_s)) {
        printf("FAIL: overlapped DP buckets leave %.3g s exposed (end of step: %.3g s)\n", ov.exposed_comm_s,
               end.exposed_comm_s);
        fails++;
    }
    if (!(ov.iteration_s < end.iteration_s - 0.7 * end.exposed_comm_s)) {
        printf("FAIL: overlap does not shorten the step (%.6g vs %.6g s)\n", ov.iteration_s, end.iteration_s);
        fails++;
    }
    /* CUDA_LAUNCH_BLOCKING=1: the buckets cannot run beside the backward,
     * each launch waits for the previous one, so the step takes its compute
     * plus every bucket's all-reduce (at least the end-of-step all-reduce's
     * time: a bucket's all-reduce costs no less than its share of it) */
    sim_result bl;
    if (simulate(&mod, "dp=2,mb=1,gb=2,dtype=fp32,bucket=4,dp_overlap=1,launch_blocking=1", mach, &bl) == 0) {
        printf("launch_blocking: iteration %.6g s, exposed %.3g s, compute %.6g s\n", bl.iteration_s,
               bl.exposed_comm_s, bl.compute_s);
        fails += near(bl.compute_s, end.compute_s, 1e-6, "launch_blocking: the same kernels");
        if (!(bl.exposed_comm_s > 0.98 * end.exposed_comm_s && bl.iteration_s > 0.999 * end.iteration_s)) {
            printf("FAIL: launch_blocking leaves %.3g s of %.3g s communication hidden\n",
                   end.exposed_comm_s - bl.exposed_comm_s, end.exposed_comm_s);
            fails++;
        }
        sim_result_free(&bl);
    } else {
        fails++;
    }
    sim_result_free(&end);
    sim_result_free(&ov);
    sim_machine_free(mach);
    return fails;
}

/* Under launch_blocking=1 every operation of a rank but its receives and
 * memory effects waits for the previous one, on whatever stream (pipeline,
 * data-parallel and optimizer work alike); the bubble oracle's pipeline still
 * runs (no deadlock between a blocking send and its peer). */
static int launch_chain(void)
{
    int fails = 0;
    wl_model mod = model();
    sim_machine *mach = machine(4, 1e15, 100e12);
    sim_err err;
    wl_strategy st = wl_test_strategy("pp=2,dp=2,mb=1,gb=8,dtype=fp32,dp_overlap=1,bucket=4,launch_blocking=1");
    sim_schedule *s = wl_gpt_generate(&mod, &st, mach, &err);
    if (!s) {
        printf("FAIL: launch_blocking schedule: %s\n", err.msg);
        sim_machine_free(mach);
        return 1;
    }
    uint32_t *prev = malloc(sizeof *prev * (size_t)s->nranks);
    for (int r = 0; r < s->nranks; r++)
        prev[r] = UINT32_MAX;
    int unchained = 0, chained = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        int kind = sim_sched_payload_of(s, i)->kind, r = sim_sched_rank_of(s, i);
        if (kind == SIM_OP_RECV || kind == SIM_OP_MEMORY)
            continue;
        uint32_t p = prev[r];
        prev[r] = i;
        if (p == UINT32_MAX || s->ops[p].stream == s->ops[i].stream)
            continue;
        int has = 0;
        for (int k = 0; k < s->ops[i].ndeps; k++)
            has |= s->deps[s->ops[i].dep_first + k] == p;
        chained += has;
        unchained += !has;
    }
    free(prev);
    if (unchained || !chained) {
        printf("FAIL: launch_blocking: %d operations not chained to their rank's previous (%d chained)\n",
               unchained, chained);
        fails++;
    }
    fails += sim_sched_check(s, &err) != 0;
    sim_sched_free(s);
    /* a 4-stage 1F1B pipeline completes, with the same kernels, no sooner
     * than with asynchronous launches (a stage waiting in a blocking send
     * counts as exposed communication, no longer as idle) */
    sim_result r, a;
    if (simulate(&mod, "pp=4,mb=1,gb=8,dtype=fp32,launch_blocking=1", mach, &r) == 0 &&
        simulate(&mod, "pp=4,mb=1,gb=8,dtype=fp32", mach, &a) == 0) {
        printf("launch_blocking pipeline: %.6g s (asynchronous %.6g s)\n", r.iteration_s, a.iteration_s);
        fails += near(r.compute_s, a.compute_s, 1e-4, "launch_blocking pipeline: the same kernels");
        if (!(r.iteration_s >= a.iteration_s * (1 - 1e-9))) {
            printf("FAIL: launch_blocking pipeline faster than the asynchronous one\n");
            fails++;
        }
        sim_result_free(&r);
        sim_result_free(&a);
    } else {
        fails++;
    }
    sim_machine_free(mach);
    return fails;
}

/* p2p_sync=1 (Megatron-LM's torch.cuda.synchronize() after each pipeline
 * exchange): the first operation on a stream after an exchange waits for all
 * of the exchange's sends and receives; the exchange waits for the earlier
 * work on the rank's other streams; the pipeline runs its kernels and
 * nothing deadlocks. */
static int p2p_barrier(void)
{
    int fails = 0;
    wl_model mod = model();
    sim_machine *mach = machine(4, 2e9, 100e12);
    sim_err err;
    wl_strategy st = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,p2p_sync=1");
    sim_schedule *s = wl_gpt_generate(&mod, &st, mach, &err);
    if (!s) {
        printf("FAIL: p2p_sync schedule: %s\n", err.msg);
        sim_machine_free(mach);
        return 1;
    }
    /* rank 1 (a middle stage): every compute operation right after an
     * exchange depends on each of the exchange's operations */
    uint32_t x[8];
    int nx = 0, closed = 0, checked = 0, missing = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        if (sim_sched_rank_of(s, i) != 1)
            continue;
        int kind = sim_sched_payload_of(s, i)->kind;
        if (kind == SIM_OP_SEND || kind == SIM_OP_RECV) {
            if (closed)
                nx = closed = 0;
            if (nx < 8)
                x[nx++] = i;
        } else if (kind == SIM_OP_COMPUTE && nx > 0 && !closed) {
            for (int k = 0; k < nx; k++) {
                int has = s->ops[x[k]].stream == s->ops[i].stream;
                for (int d = 0; d < s->ops[i].ndeps && !has; d++)
                    has = s->deps[s->ops[i].dep_first + d] == x[k];
                missing += !has;
            }
            checked++;
            closed = 1;
        }
    }
    if (!checked || missing) {
        printf("FAIL: p2p_sync: %d exchanges checked, %d dependencies missing\n", checked, missing);
        fails++;
    }
    fails += sim_sched_check(s, &err) != 0;
    sim_sched_free(s);
    /* only Megatron's own non-interleaved pipelines synchronise so */
    wl_strategy il = wl_test_strategy("pp=4,mb=1,gb=8,dtype=fp32,pipeline=interleaved,vstages=2,p2p_sync=1");
    if (wl_gpt_generate(&mod, &il, mach, &err) != NULL || !strstr(err.msg, "p2p_sync is Megatron's")) {
        printf("FAIL: p2p_sync with the interleaved pipeline not refused (%s)\n", err.msg);
        fails++;
    }
    sim_result a, b;
    if (simulate(&mod, "pp=4,mb=1,gb=8,dtype=fp32", mach, &a) == 0 &&
        simulate(&mod, "pp=4,mb=1,gb=8,dtype=fp32,p2p_sync=1", mach, &b) == 0) {
        printf("p2p_sync pipeline: %.6g s, exposed %.3g s (asynchronous %.6g s, exposed %.3g s)\n", b.iteration_s,
               b.exposed_comm_s, a.iteration_s, a.exposed_comm_s);
        /* not slower by rule: on these slow links the asynchronous sends
         * share them and arrive later, one exchange at a time arrives sooner */
        fails += near(b.compute_s, a.compute_s, 1e-4, "p2p_sync pipeline: the same kernels");
        sim_result_free(&a);
        sim_result_free(&b);
    } else {
        fails++;
    }
    sim_machine_free(mach);
    return fails;
}

static int zero3_volume(void)
{
    int fails = 0;
    wl_model mod = model();
    sim_err err;
    /* bytes in the schedule, rank 0 of dp=4, one micro-batch */
    wl_strategy s;
    wl_strategy_default(&s);
    if (wl_strategy_parse("dp=4,mb=1,gb=4,dtype=fp32,zero=3", &s, &err))
        return 1;
    sim_machine *mach = machine(4, 1e11, 1e20);
    sim_schedule *sc = wl_gpt_generate(&mod, &s, mach, &err);
    if (!sc) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    double h = 512, f = 2048, layer = 4 * h * h + 2 * h * f + f + 9 * h, root = 128 * h + 128 * h + 2 * h;
    double ag = 0, rs = 0, ar = 0;
    for (uint32_t i = 0; i < sc->nops; i++) {
        if (sim_sched_rank_of(sc, i) != 0)
            continue;
        const sim_payload *p = sim_sched_payload_of(sc, i);
        if (p->kind != SIM_OP_COLLECTIVE)
            continue;
        if (p->sub == SIM_COLL_ALLGATHER)
            ag += (double)p->bytes;
        else if (p->sub == SIM_COLL_REDUCESCATTER)
            rs += (double)p->bytes;
        else
            ar += (double)p->bytes;
    }
    /* layers: gathered twice (forward, backward), reduce-scattered once; the
     * root unit stays gathered from forward to backward */
    fails += near(ag, 4 * (2 * 8 * layer + root), 1e-12, "ZeRO-3 all-gather bytes = 2 x layer params + root");
    fails += near(rs, 4 * (8 * layer + root), 1e-12, "ZeRO-3 reduce-scatter bytes = layer params + root");
    fails += near(ar, 0, 1e-12, "ZeRO-3 has no all-reduce (dp, no tp/pp)");
    sim_sched_free(sc);

    /* simulated, compute free: ring all-gather/reduce-scatter move (d−1)/d·S
     * per rank, all-reduce 2(d−1)/d·S */
    sim_result dp, z3;
    if (simulate(&mod, "dp=4,mb=1,gb=4,dtype=fp32", mach, &dp) ||
        simulate(&mod, "dp=4,mb=1,gb=4,dtype=fp32,zero=3", mach, &z3)) {
        sim_machine_free(mach);
        return fails + 1;
    }
    double P = 8 * layer + root;
    fails += near(dp.iteration_s, 2 * 0.75 * 4 * P / 1e11, 0.02, "DP step, free compute: 2(d-1)/d P/B");
    fails += near(z3.iteration_s / dp.iteration_s, (3 * 8 * layer + 2 * root) / (2 * P), 0.03,
                  "ZeRO-3 / DP communication time (3x vs 2x params)");
    sim_result_free(&dp);
    sim_result_free(&z3);
    sim_machine_free(mach);
    return fails;
}

int main(void)
{
    int fails = bubbles();
    fails += dp_overlap();
    fails += zero3_volume();
    fails += launch_chain();
    fails += p2p_barrier();
    printf("%s\n", fails ? "FAILED" : "all pipeline/DP oracles hold");
    return fails ? 1 : 0;
}
