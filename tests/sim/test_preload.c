/* test_preload.c — sim_preload(): simulations forked from a process that
 * loaded the platform once give the same results, bit for bit, as fresh
 * ones (full machine and a replica-like view with another rank-to-host map
 * on the same platform text); a platform SimGrid cannot load is an error,
 * not a crash; a machine on another platform is refused afterwards. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "sim/engine.h"
#include "workloads/gpt.h"
#include "workloads/model.h"

static int fails;
#define CHECK(c, what)                                                                                                 \
    do {                                                                                                               \
        if (!(c)) {                                                                                                    \
            printf("FAIL: %s\n", what);                                                                                \
            fails++;                                                                                                   \
        } else {                                                                                                       \
            printf("ok: %s\n", what);                                                                                  \
        }                                                                                                              \
    } while (0)

static sim_schedule *gen(const sim_machine *m, const char *strategy)
{
    wl_model md;
    wl_strategy st;
    sim_err err = {{0}};
    wl_strategy_default(&st);
    if (wl_model_load("gpt-1024", &md, &err) < 0 || wl_strategy_parse(strategy, &st, &err) < 0) {
        printf("FAIL: %s\n", err.msg);
        exit(1);
    }
    md.layers = 4;
    sim_schedule *s = wl_gpt_generate(&md, &st, m, &err);
    if (!s) {
        printf("FAIL: %s: %s\n", strategy, err.msg);
        exit(1);
    }
    return s;
}

/* the first n ranks of m, on hosts taken in reverse order (same platform text) */
static sim_machine *view(const sim_machine *m, int n)
{
    int ranks[64];
    if (n > 64)
        abort();
    for (int r = 0; r < n; r++)
        ranks[r] = m->ngpus - 1 - r;
    return sim_machine_subset(m, ranks, n);
}

static int same(const sim_result *a, const sim_result *b)
{
    if (a->iteration_s != b->iteration_s || a->nranks != b->nranks || a->compute_s != b->compute_s ||
        a->comm_s != b->comm_s || a->exposed_comm_s != b->exposed_comm_s || a->idle_s != b->idle_s ||
        a->peak_mem != b->peak_mem || a->flows != b->flows || a->execs != b->execs || a->ops != b->ops)
        return 0;
    return memcmp(a->rank, b->rank, (size_t)a->nranks * sizeof *a->rank) == 0;
}

int main(void)
{
    sim_err err = {{0}};
    sim_machine *m = plat_load("oases-3090", &err);
    if (!m) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    sim_machine *v = view(m, 8);
    sim_schedule *s[2] = {gen(m, "tp=4,pp=2,dp=4,mb=1,gb=8,recompute=full"), gen(v, "tp=2,pp=2,dp=2,mb=1,gb=4")};
    sim_machine *mm[2] = {m, v};
    sim_options o;
    sim_options_default(&o);
    sim_result ref[2], got[2];
    for (int i = 0; i < 2; i++)
        if (sim_run_isolated(s[i], mm[i], &o, &ref[i], &err) < 0) {
            printf("FAIL: reference run: %s\n", err.msg);
            return 1;
        }

    /* a platform SimGrid rejects: an error here, and nothing stays loaded */
    sim_machine *bad = view(m, 1);
    free(bad->platform_xml);
    bad->platform_xml = strdup("<?xml version='1.0'?>\n<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n");
    CHECK(sim_preload(bad, &err) < 0 && strstr(err.msg, "cannot load"), "an unloadable platform is an error");
    printf("   (%s)\n", err.msg);

    CHECK(sim_preload(m, &err) == 0, "preload");
    /* forking is only safe while the process has one thread (SimGrid's
     * thread contexts, in the sanitizer build, start theirs with actors) */
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        threads += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(threads <= 1, "one thread after the preload");
    CHECK(sim_preload(v, &err) == 0, "preloading the same platform text again does nothing");
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 2; i++) {
            if (sim_run_isolated(s[i], mm[i], &o, &got[i], &err) < 0) {
                printf("FAIL: preloaded run: %s\n", err.msg);
                return 1;
            }
            char what[96];
            snprintf(what, sizeof what, "%s, preloaded (round %d): identical results (%.9g s)",
                     i ? "8-rank view" : "full machine", round, got[i].iteration_s);
            CHECK(same(&ref[i], &got[i]), what);
            sim_result_free(&got[i]);
        }

    /* another platform after the preload: refused with a clear error */
    sim_machine *other = plat_load("oases-3090-nvlink", &err);
    CHECK(other && sim_preload(other, &err) < 0, "preloading a second platform is refused");
    sim_result r;
    int rc = other ? sim_run_isolated(s[0], other, &o, &r, &err) : 0;
    CHECK(rc < 0 && strstr(err.msg, "preloaded"), "a simulation on another platform is refused");
    printf("   (%s)\n", err.msg);

    for (int i = 0; i < 2; i++) {
        sim_result_free(&ref[i]);
        sim_sched_free(s[i]);
    }
    sim_machine_free(bad);
    sim_machine_free(other);
    sim_machine_free(v);
    sim_machine_free(m);
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails != 0;
}
