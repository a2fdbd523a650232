/* MoE routing, assignment and schedules (issue 6):
 *   - routing is a function of the seed (same seed, same counts; another
 *     seed, other counts) and every source routes exactly its tokens;
 *   - a bad routing trace is an error naming the file and the field;
 *   - perfect balance gives max/mean = 1;
 *   - replicating the heaviest expert never raises the compute imbalance and
 *     shortens the simulated step on a skewed case (Pro-Prophet's overlapped
 *     copies and FasterMoE's shadowing both);
 *   - a routed step is the generator's, sized by the routing. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/engine.h"
#include "tests/sim/star.h"
#include "workloads/moe.h"

#include <cjson/cJSON.h>

static int fails;
#define CHECK(c, ...)                                                                                             \
    do {                                                                                                          \
        if (!(c)) {                                                                                               \
            printf("FAIL: " __VA_ARGS__);                                                                         \
            printf("\n");                                                                                         \
            fails++;                                                                                              \
        }                                                                                                         \
    } while (0)

static const char *write_tmp(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/trainsim-test-%d-%s", (int)getpid(), name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void routing_determinism(void)
{
    wl_routing_cfg c;
    wl_routing_cfg_default(&c);
    sim_err e;
    CHECK(wl_routing_cfg_parse("zipf:1.5", &c, &e) == 0, "parse zipf:1.5");
    c.seed = 42;
    c.drift = 0.1;
    wl_routing *a = wl_routing_new(&c, 3, 2, 16, 4, 1000, &e), *b = wl_routing_new(&c, 3, 2, 16, 4, 1000, &e);
    c.seed = 43;
    wl_routing *d = wl_routing_new(&c, 3, 2, 16, 4, 1000, &e);
    int same = 1, differ = 0;
    for (int s = 0; s < 3; s++)
        for (int l = 0; l < 2; l++) {
            const int64_t *x = wl_routing_counts(a, s, l), *y = wl_routing_counts(b, s, l), *z = wl_routing_counts(d, s, l);
            for (int k = 0; k < 4; k++) {
                int64_t sum = 0;
                for (int i = 0; i < 16; i++) {
                    same &= x[k * 16 + i] == y[k * 16 + i];
                    differ |= x[k * 16 + i] != z[k * 16 + i];
                    sum += x[k * 16 + i];
                }
                CHECK(sum == 1000, "source %d of step %d layer %d routes %lld tokens, not 1000", k, s, l, (long long)sum);
            }
        }
    CHECK(same, "the same seed gave different routing");
    CHECK(differ, "another seed gave the same routing");
    /* Zipf is skewed: the heaviest expert gets several times the mean */
    int64_t tot[16], mx = 0;
    wl_routing_totals(a, 0, 0, tot);
    for (int i = 0; i < 16; i++)
        mx = tot[i] > mx ? tot[i] : mx;
    CHECK(mx > 3 * 4000 / 16, "zipf:1.5 heaviest expert %lld of 4000 tokens is not skewed", (long long)mx);
    CHECK(wl_routing_cfg_parse("zipf:-1", &c, &e) < 0 && strstr(e.msg, "zipf exponent"), "zipf:-1 accepted");
    CHECK(wl_routing_cfg_parse("gauss", &c, &e) < 0 && strstr(e.msg, "expected uniform, zipf"), "gauss accepted");
    wl_routing_free(a);
    wl_routing_free(b);
    wl_routing_free(d);
}

static void bad_traces(void)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"{\"format\": \"trainsim-routing\", \"version\": 1, \"experts\": 4, \"steps\": [", "malformed JSON"},
        {"{\"format\": \"other\", \"version\": 1}", "format: expected \"trainsim-routing\""},
        {"{\"format\": \"trainsim-routing\", \"version\": 1, \"experts\": 5, \"steps\": []}", "the model has 4 experts"},
        {"{\"format\": \"trainsim-routing\", \"version\": 1, \"experts\": 4, \"steps\": [{\"layers\": [[1,2,3,4]]}]}",
         "steps[0].layers: expected an array with one entry per MoE layer (2)"},
        {"{\"format\": \"trainsim-routing\", \"version\": 1, \"experts\": 4, \"steps\": [{\"layers\": [[1,2,3,4], [1,2,-3,4]]}]}",
         "steps[0].layers[1][2]: expected a token count >= 0"},
        {"{\"format\": \"trainsim-routing\", \"version\": 1, \"experts\": 4, \"steps\": [{\"layers\": [[1,2,3,4], [[1,2,3,4]]]}]}",
         "steps[0].layers[1]: expected 2 per-source arrays"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        wl_routing_cfg c;
        wl_routing_cfg_default(&c);
        char spec[300];
        snprintf(spec, sizeof spec, "trace:%s", write_tmp("bad.json", cases[i].text));
        sim_err e = {{0}};
        CHECK(wl_routing_cfg_parse(spec, &c, &e) == 0, "parse %s", spec);
        wl_routing *r = wl_routing_new(&c, 1, 2, 4, 2, 100, &e);
        CHECK(!r && strstr(e.msg, cases[i].want) && strstr(e.msg, "/tmp/trainsim-test-"),
              "bad trace %zu: got \"%s\", want \"%s\" with the file name", i, r ? "(accepted)" : e.msg, cases[i].want);
        if (!r)
            printf("bad trace %zu: %s\n", i, e.msg);
        wl_routing_free(r);
    }
    /* the missing file */
    wl_routing_cfg c;
    wl_routing_cfg_default(&c);
    sim_err e = {{0}};
    wl_routing_cfg_parse("trace:/nonexistent/trace.json", &c, &e);
    wl_routing *r = wl_routing_new(&c, 1, 2, 4, 2, 100, &e);
    CHECK(!r && strstr(e.msg, "/nonexistent/trace.json"), "missing trace: %s", e.msg);
    unlink(write_tmp("bad.json", ""));
}

/* A small MoE model on a 4-GPU star: 2 layers, the second MoE with 8 experts. */
static wl_model small_model(wl_moe *moe)
{
    wl_model m = {.name = "moe-test", .layers = 2, .hidden = 1024, .heads = 8, .ffn = 4096, .seq = 1024, .vocab = 1000,
                  .moe = 1};
    *moe = (wl_moe){.experts = 8, .top_k = 1, .capacity_factor = 0, .expert_ffn = 4096, .every = 2, .first = 1};
    return m;
}

static double step_time(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st, const sim_machine *mach,
                        const wl_routing *r, wl_moe_place *pl)
{
    sim_err e;
    wl_moe_place *places[1] = {pl};
    sim_schedule *s = wl_moe_generate(m, moe, st, mach, r, 0, places, &e);
    if (!s) {
        printf("FAIL: generate: %s\n", e.msg);
        exit(1);
    }
    sim_result res;
    if (sim_run_isolated(s, mach, NULL, &res, &e) < 0) {
        printf("FAIL: simulate: %s\n", e.msg);
        exit(1);
    }
    double t = res.iteration_s;
    sim_result_free(&res);
    sim_sched_free(s);
    return t;
}

/* The small model on four GPUs of one star, ep=4, two micro-batches of 2. */
static sim_machine *small_case(wl_model *m, wl_moe *moe, wl_moe_strategy *st)
{
    *m = small_model(moe);
    wl_moe_strategy_default(st);
    sim_err e;
    CHECK(wl_moe_strategy_parse("ep=4,mb=2,gb=16,dtype=fp16", st, &e) == 0, "strategy: %s", e.msg);
    return star_machine(4, 25e9, 2e-6, 4);
}

static void balance(void)
{
    wl_moe moe;
    wl_model m;
    wl_moe_strategy st;
    sim_machine *mach = small_case(&m, &moe, &st);
    int64_t per_source = 2048;

    /* perfect balance: every expert gets the same tokens from every source */
    int64_t even[4 * 8], compute[4], send[16];
    for (int i = 0; i < 32; i++)
        even[i] = per_source / 8;
    wl_moe_assign(&moe, 4, even, NULL, per_source, compute, send);
    CHECK(wl_moe_imbalance(compute, 4) == 1.0, "perfect balance gives max/mean %.17g", wl_moe_imbalance(compute, 4));

    /* skewed: expert 0 (owned by GPU 0) takes 60% of every source's tokens */
    int64_t skew[4 * 8];
    for (int k = 0; k < 4; k++)
        for (int x = 0; x < 8; x++)
            skew[k * 8 + x] = x == 0 ? 1232 : 116;
    /* GShard capacity: cf 1 keeps at most ceil(2048/8) = 256 per (source, expert) */
    wl_moe capped = moe;
    capped.capacity_factor = 1.0;
    int64_t dropped = wl_moe_assign(&capped, 4, skew, NULL, per_source, compute, send);
    CHECK(dropped == 4 * (1232 - 256), "capacity 1.0 dropped %lld tokens, want %d", (long long)dropped, 4 * (1232 - 256));
    CHECK(compute[0] == 4 * (256 + 116), "GPU 0 computes %lld tokens under capacity", (long long)compute[0]);
    wl_routing *r = wl_routing_from_counts(1, 8, 4, skew);
    wl_moe_assign(&moe, 4, skew, NULL, per_source, compute, send);
    double imb0 = wl_moe_imbalance(compute, 4);
    double t0 = step_time(&m, &moe, &st, mach, r, NULL);
    for (int overlap = 0; overlap < 2; overlap++) {
        wl_moe_place pl = {.experts = 8, .ep = 4, .overlap = overlap};
        unsigned char holds[32] = {0};
        pl.holds = holds;
        for (int x = 0; x < 8; x++)
            holds[x * 4 + x / 2] = 1;
        holds[0 * 4 + 3] = 1; /* the heaviest expert copied to GPU 3 */
        if (!overlap)
            holds[0 * 4 + 1] = holds[0 * 4 + 2] = 1; /* FasterMoE shadows to all */
        wl_moe_assign(&moe, 4, skew, &pl, per_source, compute, send);
        double imb1 = wl_moe_imbalance(compute, 4);
        double t1 = step_time(&m, &moe, &st, mach, r, &pl);
        printf("%s: imbalance %.3f -> %.3f, step %.6f s -> %.6f s\n", overlap ? "replicate heaviest (prophet)" :
               "shadow heaviest (fastermoe)", imb0, imb1, t0, t1);
        CHECK(imb1 <= imb0, "replication raised the imbalance %.3f -> %.3f", imb0, imb1);
        CHECK(t1 < t0, "replicating the heaviest expert did not shorten the step (%.6f -> %.6f s)", t0, t1);
    }
    /* the scheduler: the same copies broadcast ahead on their own stream
     * (overlapping the dense layer) are not slower than on the critical path */
    {
        unsigned char holds[32] = {0};
        for (int x = 0; x < 8; x++)
            holds[x * 4 + x / 2] = 1;
        holds[0 * 4 + 3] = holds[0 * 4 + 2] = 1;
        wl_moe_place over = {.experts = 8, .ep = 4, .overlap = 1, .holds = holds};
        wl_moe_place crit = {.experts = 8, .ep = 4, .overlap = 0, .holds = holds};
        double to = step_time(&m, &moe, &st, mach, r, &over), tc = step_time(&m, &moe, &st, mach, r, &crit);
        printf("same copies: overlapped %.6f s, on the critical path %.6f s\n", to, tc);
        CHECK(to <= tc, "overlapping the copies' transfers made the step slower (%.6f > %.6f s)", to, tc);
    }
    wl_routing_free(r);
    sim_machine_free(mach);
}

/* A routed step is the generator's schedule sized by the routing: each
 * rank's expert GEMMs have the rows its tokens give (up to whole tiles of 8
 * per local expert), its dispatch sends
 * what the assignment says (tokens x hidden x 2 bytes), the combine the
 * transpose. */
static void routed_sizes(void)
{
    wl_moe moe;
    wl_model m;
    wl_moe_strategy st;
    sim_machine *mach = small_case(&m, &moe, &st);
    sim_err e;
    int64_t skew[4 * 8], compute[4], send[16];
    for (int k = 0; k < 4; k++)
        for (int x = 0; x < 8; x++)
            skew[k * 8 + x] = x == 0 ? 1232 : 116 + k;
    wl_moe_assign(&moe, 4, skew, NULL, 2048, compute, send);
    wl_routing *r = wl_routing_from_counts(1, 8, 4, skew);
    sim_schedule *s = wl_moe_generate(&m, &moe, &st, mach, r, 0, NULL, &e);
    CHECK(s != NULL, "generate: %s", e.msg);
    int seen_gemm[4] = {0}, seen_disp[4] = {0};
    for (uint32_t i = 0; s && i < s->nops; i++) {
        const sim_payload *p = &s->payloads[s->ops[i].payload];
        const char *name = p->name >= 0 ? sim_sched_strname(s, p->name) : "";
        int g = sim_sched_rank_of(s, i); /* tp = pp = 1: the rank is its EP index */
        if (!strcmp(name, "expert_fc1")) {
            seen_gemm[g]++;
            int64_t want = ((compute[g] + 1) / 2 + 7) / 8 * 8; /* per local expert, whole tiles of 8 */
            CHECK(p->m == want && p->batch == 2, "rank %d: expert_fc1 %lld rows x %lld, want %lld x 2", g,
                  (long long)p->m, (long long)p->batch, (long long)want);
        }
        if (!strcmp(name, "moe_dispatch") || !strcmp(name, "moe_combine")) {
            int comb = name[4] == 'c';
            seen_disp[g] += !comb;
            CHECK(p->sub == SIM_COLL_ALLTOALLV && p->n == 4, "rank %d: %s is not a 4-member all-to-allv", g, name);
            const int64_t *v = sim_sched_sizes_of(s, p);
            for (int j = 0; j < 4 && p->n == 4; j++) {
                int64_t want = j == g ? 0 : (comb ? send[j * 4 + g] : send[g * 4 + j]) * 1024 * 2;
                CHECK(v[j] == want, "rank %d: %s to %d: %lld bytes, want %lld", g, name, j, (long long)v[j],
                      (long long)want);
            }
        }
    }
    for (int g = 0; g < 4; g++)
        CHECK(seen_gemm[g] == 2 && seen_disp[g] == 2, "rank %d: %d expert_fc1 and %d dispatches, want 2 and 2 "
              "(one MoE layer, two micro-batches)", g, seen_gemm[g], seen_disp[g]);
    CHECK(compute[0] > 2 * compute[1], "the skew puts expert 0's tokens on rank 0 (%lld vs %lld)",
          (long long)compute[0], (long long)compute[1]);
    sim_sched_free(s);
    wl_routing_free(r);
    sim_machine_free(mach);
}

static void count_step(void *ctx, const wl_moe_report *r)
{
    *(int *)ctx = r->steps;
}

/* The whole run: Pro-Prophet's planner (previous step's statistics,
 * candidates simulated) against no balancing, on a strongly skewed routing. */
static void planner_run(void)
{
    wl_moe moe;
    wl_model m = small_model(&moe);
    m.layers = 4; /* MoE layers 1 and 3 */
    sim_machine *mach = star_machine(4, 25e9, 2e-6, 4);
    wl_moe_strategy st;
    wl_moe_strategy_default(&st);
    sim_err e;
    CHECK(wl_moe_strategy_parse("ep=4,mb=2,gb=16,steps=3,routing=zipf:2,drift=0.02,seed=5", &st, &e) == 0, "%s", e.msg);
    wl_moe_report rep;
    int steps_seen = 0;
    int rc = wl_moe_run(&m, &moe, &st, mach, &rep, count_step, &steps_seen, &e);
    CHECK(rc == 0, "wl_moe_run: %s", e.msg);
    CHECK(rep.steps == 3 && steps_seen == 3, "3 steps expected, got %d (%d reported)", rep.steps, steps_seen);
    for (int i = 0; i < rep.steps; i++) {
        size_t n = (size_t)i * WL_BAL_COUNT + WL_BAL_NONE, p = (size_t)i * WL_BAL_COUNT + WL_BAL_PROPHET;
        double tn = rep.time_s[n], tp = rep.time_s[p], in = rep.imb_mean[n], ip = rep.imb_mean[p];
        printf("step %d: none %.6f s (imbalance %.3f), prophet %.6f s (imbalance %.3f)\n", i, tn, in, tp, ip);
        if (i == 0)
            CHECK(tn == tp && in == ip, "step 0 has no statistics: prophet must equal none");
        else
            CHECK(tp < tn && ip < in, "step %d: prophet did not improve on none", i);
    }
    wl_moe_report_free(&rep);
    sim_machine_free(mach);
}

/* The built-in MoE models have the sizes DeepSpeed-MoE publishes (Table 1:
 * 350M+MoE-128 13B, 1.3B+MoE-128 52B parameters). */
static void model_sizes(void)
{
    const char *names[2] = {"gpt-moe-350m", "gpt-moe-1.3b"};
    double published[2] = {13e9, 52e9};
    for (int i = 0; i < 2; i++) {
        wl_model m;
        wl_moe moe;
        sim_err e;
        CHECK(wl_moe_model_load(names[i], &m, &moe, &e) == 0, "%s: %s", names[i], e.msg);
        double p = wl_moe_total_params(names[i], &m);
        printf("%s: %.2fB parameters (published %.0fB)\n", names[i], p / 1e9, published[i] / 1e9);
        CHECK(fabs(p - published[i]) / published[i] < 0.02, "%s has %.2fB parameters", names[i], p / 1e9);
    }
    wl_model m;
    wl_moe moe;
    sim_err e;
    CHECK(wl_moe_model_load("gpt-1.3b", &m, &moe, &e) < 0 && strstr(e.msg, "no \"moe\" object"),
          "a dense model loads as MoE: %s", e.msg);
}

int main(void)
{
    (void)near;
    model_sizes();
    routing_determinism();
    bad_traces();
    balance();
    routed_sizes();
    planner_run();
    if (fails)
        printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
