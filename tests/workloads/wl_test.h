/* wl_test.h — tiny assertion helpers and a hand-built machine for the
 * workloads tests (platforms/ is not needed to test the generator). */
#ifndef WL_TEST_H
#define WL_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/catalog.h"
#include "sim/engine.h"
#include "sim/machine.h"
#include "workloads/gpt.h"
#include "workloads/model.h"

static int wl_test_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            wl_test_failures++;                                                       \
        }                                                                             \
    } while (0)

#define CHECK_STR(got, want)                                                                      \
    do {                                                                                          \
        const char *g_ = (got), *w_ = (want);                                                     \
        if (strcmp(g_, w_) != 0) {                                                                \
            fprintf(stderr, "%s:%d: got\n  %s\nwant\n  %s\n", __FILE__, __LINE__, g_, w_);        \
            wl_test_failures++;                                                                   \
        }                                                                                         \
    } while (0)

#define CHECK_HAS(got, part)                                                                      \
    do {                                                                                          \
        const char *g_ = (got), *p_ = (part);                                                     \
        if (!strstr(g_, p_)) {                                                                    \
            fprintf(stderr, "%s:%d: \"%s\" not found in\n  %s\n", __FILE__, __LINE__, p_, g_);    \
            wl_test_failures++;                                                                   \
        }                                                                                         \
    } while (0)

/* n GPUs of one model, 4 per node. */
static inline sim_machine *wl_test_machine(int n, double mem_capacity)
{
    sim_machine *m = sim_machine_new(n, 1);
    snprintf(m->name, sizeof m->name, "test-%d", n);
    snprintf(m->gpus[0].model, sizeof m->gpus[0].model, "RTX3090");
    m->gpus[0].mem_capacity = mem_capacity;
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        m->gpus[0].peak_flops[d] = 71e12;
    m->gpus[0].peak_flops[SIM_DTYPE_FP32] = 35.6e12;
    m->gpus[0].mem_bw = 936e9;
    m->nnodes = (n + 3) / 4;
    for (int i = 0; i < n; i++)
        m->node[i] = i / 4;
    return m;
}

/* n GPUs of a catalogue model (its peaks, curves, FlashAttention support),
 * 80 GB each, 4 per node. */
static inline sim_machine *wl_test_gpu_machine(const char *gpu, int n)
{
    sim_machine *m = wl_test_machine(n, 80e9);
    sim_err err;
    if (plat_gpu_lookup_info(gpu, &m->gpus[0], NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    return m;
}

/* The stream of that rank and name, or -1. */
static inline int wl_test_stream(const sim_schedule *s, int rank, const char *name)
{
    for (uint32_t i = 0; i < s->nstreams; i++)
        if (s->streams[i].rank == rank && !strcmp(sim_sched_strname(s, s->streams[i].name), name))
            return (int)i;
    return -1;
}

/* A strategy parsed over the defaults; a string that does not parse is a
 * bug in the test, so it stops there. */
static inline wl_strategy wl_test_strategy(const char *text)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err)) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    return s;
}

/* Generates `text` for model m on mach (a strategy that does not generate
 * is a bug in the test: it stops there); a schedule that fails
 * sim_sched_check counts as a failure. */
static inline sim_schedule *wl_test_generate(const wl_model *m, const char *text, const sim_machine *mach)
{
    wl_strategy s = wl_test_strategy(text);
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    if (!sc) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    if (sim_sched_check(sc, &err)) {
        fprintf(stderr, "%s: schedule check: %s\n", text, err.msg);
        wl_test_failures++;
    }
    return sc;
}

/* The tiny GPT of the workloads tests: hidden 64, 4 heads, ffn 256, seq 32,
 * vocabulary 1000 (1024 once padded). */
static inline wl_model wl_test_tiny(int layers)
{
    wl_model m;
    sim_err err;
    char json[160];
    snprintf(json, sizeof json,
             "{\"name\":\"tiny\",\"layers\":%d,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1000}", layers);
    if (wl_model_from_json(json, "tiny.json", &m, &err))
        abort();
    return m;
}

/* Generates `text` for model m and simulates it in a child process; 0 and
 * r filled (and the schedule in *keep when keep is not NULL, for the caller
 * to free), or 1 with the reason printed. */
static inline int wl_test_simulate(const wl_model *m, const char *text, const sim_machine *mach, sim_result *r,
                                   sim_schedule **keep)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    sim_schedule *sc = NULL;
    int rc = wl_strategy_parse(text, &s, &err) || !(sc = wl_gpt_generate(m, &s, mach, &err));
    if (!rc) {
        sim_options o;
        sim_options_default(&o);
        rc = sim_run_isolated(sc, mach, &o, r, &err) != 0;
    }
    if (rc)
        printf("FAIL: %s: %s\n", text, err.msg);
    if (keep && !rc)
        *keep = sc;
    else
        sim_sched_free(sc);
    return rc;
}

static inline int wl_test_done(void)
{
    if (wl_test_failures)
        fprintf(stderr, "%d check(s) failed\n", wl_test_failures);
    return wl_test_failures ? 1 : 0;
}

#endif
