/* test_tpo_oracles.c — Megatron-Core's TP communication overlap
 * (tp_overlap_comm, workloads/layer.c) against closed forms on a uniform
 * star platform (tests/sim/star.h: latency 0, so a ring collective of S
 * bytes over t GPUs takes (t-1)/t·S/B and a ring step S/(t·B); kernels cost
 * their FLOPs only), sequence parallel, tp = 4, one pipeline stage:
 *  - structure: per layer and micro-batch, 2·(tp-1) ring sends in forward
 *    and 2·(tp-1) in backward, 2·4 pipelined reduce-scatters of S/4 in
 *    forward, and no synchronous all-gather left in the layers;
 *  - compute far above communication: the ring all-gathers hide entirely
 *    and each pipelined reduce-scatter exposes its last chunk, so the step
 *    is shorter than plain sequence parallelism by, per layer and
 *    micro-batch, 4 all-gathers (qkv, fc1 forward; fc2, proj input
 *    gradients) and 2 reduce-scatters less their last quarter;
 *  - communication far above compute: every transfer is exposed, and the
 *    GEMM chunks but one hide behind them: the step is shorter by 3/4 of the
 *    six overlapped GEMMs. */
#include <math.h>
#include <stdio.h>

#include "../sim/star.h"
#include "sim/costmodel.h"
#include "sim/engine.h"
#include "wl_test.h"
#include "workloads/gpt.h"

#define L 2
#define H 1024.0
#define SEQ 1024.0

static wl_model model(void)
{
    wl_model m;
    sim_err err;
    if (wl_model_from_json("{\"layers\":2,\"hidden\":1024,\"heads\":16,\"seq\":1024,\"vocab\":128}", "t", &m, &err))
        abort();
    return m;
}

static sim_schedule *gen(const wl_model *m, const char *text, const sim_machine *mach)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err)) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        return NULL;
    }
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    if (!sc)
        fprintf(stderr, "%s: %s\n", text, err.msg);
    else if (sim_sched_check(sc, &err))
        fprintf(stderr, "%s: %s\n", text, err.msg);
    return sc;
}

static const char *name_of(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, sim_sched_payload_of(s, op)->name);
}

static void test_structure(void)
{
    wl_model m = model();
    sim_machine *mach = star_flops_machine(4, 1e12, 100e12, 4);
    sim_schedule *s = gen(&m, "tp=4,mb=1,gb=2,dtype=fp32,sp=1,tp_overlap_comm=1", mach);
    CHECK(s != NULL);
    if (!s) {
        sim_machine_free(mach);
        return;
    }
    int sends = 0, recvs = 0, rs_chunks = 0, layer_ag = 0;
    double S = SEQ * H * 4;
    for (uint32_t i = 0; i < s->nops; i++) {
        if (sim_sched_rank_of(s, i) != 1)
            continue;
        const sim_payload *p = sim_sched_payload_of(s, i);
        const char *n = name_of(s, i);
        if (p->kind == SIM_OP_SEND) {
            sends++;
            CHECK(p->bytes == S / 4);
            CHECK(s->ops[i].arg == 2); /* the next rank of the ring */
        } else if (p->kind == SIM_OP_RECV) {
            recvs++;
            CHECK(s->ops[i].arg == 0);
        } else if (p->kind == SIM_OP_COLLECTIVE && p->sub == SIM_COLL_REDUCESCATTER && p->bytes == S / 4) {
            rs_chunks++;
        } else if (p->kind == SIM_OP_COLLECTIVE && p->sub == SIM_COLL_ALLGATHER && s->ops[i].layer >= 0 &&
                   s->ops[i].phase == SIM_PHASE_FORWARD) {
            layer_ag++;
        }
        (void)n;
    }
    /* 2 micro-batches x 2 layers x (2 forward + 2 backward rings of 3 steps) */
    CHECK(sends == 2 * L * 4 * 3 && recvs == sends);
    CHECK(rs_chunks == 2 * L * 2 * 4);
    CHECK(layer_ag == 0);
    sim_sched_free(s);
    sim_machine_free(mach);
}

/* Rank 0's kernels named in `names`, priced by the cost model. */
static double gemm_seconds(const sim_schedule *s, const sim_machine *mach, const char *const *names)
{
    double t = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        if (sim_sched_rank_of(s, i) != 0 || sim_sched_payload_of(s, i)->kind != SIM_OP_COMPUTE)
            continue;
        for (int k = 0; names[k]; k++)
            if (strcmp(name_of(s, i), names[k]) == 0)
                t += sim_cost_kernel(&mach->gpus[0], sim_sched_payload_of(s, i));
    }
    return t;
}

static void test_regimes(void)
{
    wl_model m = model();
    const char *base = "tp=4,mb=1,gb=2,dtype=fp32,sp=1", *ovl = "tp=4,mb=1,gb=2,dtype=fp32,sp=1,tp_overlap_comm=1";
    double S = SEQ * H * 4;

    /* compute-bound: a 1 MB ring step takes 0.1 us, a qkv chunk 4 us */
    double bw = 1e13;
    sim_machine *mach = star_flops_machine(4, bw, 100e12, 4);
    sim_result r0, r1;
    if (wl_test_simulate(&m, base, mach, &r0, NULL) || wl_test_simulate(&m, ovl, mach, &r1, NULL)) {
        wl_test_failures++;
    } else {
        double ag = 0.75 * S / bw, rs = ag, rs4 = ag / 4;
        double want = 2 * L * (4 * ag + 2 * (rs - rs4)); /* 2 micro-batches */
        if (near(r0.iteration_s - r1.iteration_s, want, 0.005,
                 "compute-bound: rings hidden, last reduce-scatter chunk exposed"))
            wl_test_failures++;
        sim_result_free(&r0);
        sim_result_free(&r1);
    }
    sim_machine_free(mach);

    /* communication-bound: a ring step takes 1 ms */
    bw = 1e9;
    mach = star_flops_machine(4, bw, 100e12, 4);
    sim_schedule *s0 = NULL;
    if (wl_test_simulate(&m, base, mach, &r0, &s0) || wl_test_simulate(&m, ovl, mach, &r1, NULL)) {
        wl_test_failures++;
    } else {
        static const char *const overlapped[] = {"qkv", "proj", "fc1", "fc2", "fc2_dgrad", "proj_dgrad", NULL};
        double hidden = 0.75 * gemm_seconds(s0, mach, overlapped);
        if (near(r0.iteration_s - r1.iteration_s, hidden, 0.005,
                 "communication-bound: 3 of 4 GEMM chunks hide behind the transfers"))
            wl_test_failures++;
        sim_result_free(&r0);
        sim_result_free(&r1);
        sim_sched_free(s0);
    }
    sim_machine_free(mach);
}

static void test_keys(void)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,tp_overlap_comm=1", &s, &err) == -1);
    CHECK_HAS(err.msg, "give sp=1");
    CHECK(wl_strategy_parse("tp=4,tp_overlap_comm=1,sp=1", &s, &err) == 0);
    char buf[256];
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",sp=1,tp_overlap_comm=1");
    wl_model m = model();
    sim_machine *mach = star_flops_machine(4, 1e12, 100e12, 4);
    wl_model odd = m;
    odd.seq = 1000; /* not divisible by 4 x tp */
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,mb=1,gb=1,sp=1,tp_overlap_comm=1", &s, &err) == 0);
    CHECK(wl_gpt_generate(&odd, &s, mach, &err) == NULL);
    CHECK_HAS(err.msg, "seq·mb must be divisible by 16");
    sim_machine_free(mach);
}

int main(void)
{
    test_structure();
    test_regimes();
    test_keys();
    return wl_test_done();
}
