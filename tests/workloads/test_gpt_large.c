/* test_gpt_large.c — GPT-3 175B on 1,024 GPUs (Narayanan et al. 2021's
 * tp 8, pp 16, dp 8, gb 1536, mb 1: 192 micro-batches) must generate in
 * seconds with a few hundred payloads: shapes are shared, nothing is
 * quadratic.  Skipped under sanitizers (3x memory). */
#include <stdio.h>
#include <time.h>

#include "wl_test.h"
#include "workloads/gpt.h"

int main(void)
{
#ifdef TRAINSIM_SANITIZE
    puts("skipped under sanitizers");
    return 0;
#else
    wl_model m;
    wl_strategy st;
    sim_err err;
    CHECK(wl_model_load("gpt3-175b", &m, &err) == 0);
    wl_strategy_default(&st);
    CHECK(wl_strategy_parse("tp=8,pp=16,dp=8,gb=1536,mb=1,dtype=fp16", &st, &err) == 0);
    sim_machine *mach = wl_test_machine(1024, 0); /* capacity 0: memory not checked */
    clock_t t0 = clock();
    sim_schedule *s = wl_gpt_generate(&m, &st, mach, &err);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(s != NULL);
    if (!s)
        return wl_test_done();
    printf("%s: %u operations, %u dependencies, %u payloads, %u streams in %.2f s\n", s->meta.name, s->nops,
           s->ndeps, s->npayloads, s->nstreams, secs);
    CHECK(s->nranks == 1024);
    CHECK(s->npayloads < 200);
    CHECK(s->nops > 30000000u && s->nops < 40000000u);
    CHECK(secs < 20);
    /* 6 layers x 192 micro-batches x 4 all-reduces per layer on every TP rank */
    int tp_ar = 0;
    for (uint32_t k = 0; k < s->nstreams; k++)
        if (s->streams[k].rank == 0 && strcmp(sim_sched_strname(s, s->streams[k].name), "tp") == 0)
            for (uint32_t i = 0; i < s->streams[k].nops; i++)
                tp_ar += s->ops[s->streams[k].ops[i]].layer >= 0;
    CHECK(tp_ar == 6 * 192 * 4);
    sim_sched_free(s);
    sim_machine_free(mach);
    return wl_test_done();
#endif
}
