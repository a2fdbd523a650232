/* cli.c — `trainsim plan`: enumerate, prune, simulate, rank.
 *
 *   trainsim plan [--platform P] [--model M] [--gpus N] [--global-batch B]
 *                 [--dtype D] [--jobs N] [--cache DIR | --no-cache]
 *                 [--fidelity fast|full] [--top N] [--json | --csv]
 *                 [--svg FILE] [--quiet]
 *   trainsim plan --search oases|galvatron|osdp ...   (search.c)
 *
 * stdout carries only results, so a sweep, its cached repeat, a parallel and
 * a serial run and an MPI run print byte-identical output; timing, cache
 * hits and the progress bar go to stderr. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "planner/plan.h"
#include "planner/search.h"
#include "platforms/platform.h"
#include "sim/engine.h"
#include "sim/json.h"
#include "sim/machine.h"
#include "sim/outfile.h"
#include "workloads/gpt.h"

typedef struct opts {
    const char *platform, *model, *cache, *svg, *search, *only;
    const char *axis[64];
    int naxis;
    int gpus, gb, jobs, top, refine, verify, json, csv, quiet, nocache, placements;
    sim_dtype dtype;
    plan_fidelity fidelity;
    double mem_budget_gb;
    int layers, batch;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim plan [options]   search parallel strategies by simulation\n"
            "  --platform P        cluster name, cluster JSON or SimGrid XML (default oases-3090)\n"
            "  --model M           model name or JSON (default gpt-3072)\n"
            "  --gpus N            use the first N GPUs of the platform (default all)\n"
            "  --global-batch B    sequences per iteration (default 4 x GPUs)\n"
            "  --dtype D           fp32, tf32 (default), fp16, bf16\n"
            "  --jobs N            evaluations in parallel (default: all %d cores)\n"
            "  --cache DIR         result cache (default .trainsim-cache); --no-cache to disable\n"
            "  --fidelity F        fast (default: extrapolated from reduced simulations) or full\n"
            "  --top N             rows of the ranked table (default 20, 0 = all)\n"
            "  --refine K          after a fast sweep, simulate the K best whole and rank them by that\n"
            "  --verify N          after a fast sweep, simulate N strategies drawn at random (the same each\n"
            "                      time) whole and report the fast fidelity's error on them\n"
            "  --placements K      for the K best pipelined strategies, try their stages on every distinct\n"
            "                      arrangement of the GPU kinds (node groups of mixed GPUs) and report the fastest\n"
            "  --json, --csv       machine-readable output (all evaluated strategies)\n"
            "  --svg FILE          throughput against peak memory, with the Pareto front\n"
            "  --quiet             no progress bar\n"
            "  --axis KEY=V1,V2    search these values of a strategy key (replaces the table's, or adds a\n"
            "                      key: --axis pipeline=1f1b,interleaved --axis dp_overlap=0,1); repeatable;\n"
            "                      an MoE model's balancing under skewed routing: --axis routing=zipf:1.2\n"
            "                      --axis balance=none,fastermoe,prophet\n"
            "  --strategies \"S1;S2\" evaluate these strategies (on top of gb and dtype) instead of the sweep\n"
            "  --search A          a seed's search, priced by fragments of the workload generator:\n"
            "                      oases, galvatron or osdp; with --layers N, --batch B, --mem-budget GB;\n"
            "                      galvatron also loops over --pp P1,P2 (default: divisors of the GPUs and layers),\n"
            "                      --batches B1,B2 (default: doubling until memory runs out, at most\n"
            "                      --max-batch, 1024) and --micro-batches M1,M2 (default 1 at PP 1, else\n"
            "                      PP, 2PP, 4PP), with --pipeline gpipe (default) or 1f1b\n"
            "MPI: mpirun -np K trainsim plan ... spreads the evaluations over the ranks%s.\n",
            plan_ncpus(), plan_mpi_available() ? "" : " (not in this build)");
}

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static int need(int argc, char **argv, int i)
{
    if (i + 1 >= argc) {
        sim_err_print("trainsim plan", 2, "%s needs a value", argv[i]);
        return 0;
    }
    return 1;
}

static int posint(const char *opt, const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 1 << 30) {
        sim_err_print("trainsim plan", 2, "%s: expected a non-negative integer, got \"%s\"", opt, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* "4,8,16": positive integers, at most max of them */
static int poslist(const char *opt, const char *v, int *out, int max, int *n)
{
    *n = 0;
    const char *q = v;
    while (1) {
        char *end;
        long x = strtol(q, &end, 10);
        if (end == q || x < 1 || x > 1 << 20 || (*end && *end != ',') || *n == max) {
            sim_err_print("trainsim plan", 2, "%s: expected up to %d positive integers separated by commas, got \"%s\"",
                    opt, max, v);
            return -1;
        }
        out[(*n)++] = (int)x;
        if (!*end)
            return 0;
        q = end + 1;
    }
}

/* 0 ok, 1 exit 0 (help), 2 usage error */
static int parse(int argc, char **argv, opts *o, search_opts *so)
{
    memset(o, 0, sizeof *o);
    o->platform = "oases-3090";
    o->model = "gpt-3072";
    o->cache = ".trainsim-cache";
    o->top = 20;
    o->dtype = SIM_DTYPE_TF32;
    o->fidelity = PLAN_FAST;
    search_opts_default(so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "plan"))
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--csv")) { o->csv = 1; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
        if (!strcmp(a, "--no-cache")) { o->nocache = 1; continue; }
        if (!need(argc, argv, i))
            return 2;
        const char *v = argv[++i];
        if (!strcmp(a, "--platform")) o->platform = v;
        else if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--cache")) o->cache = v;
        else if (!strcmp(a, "--svg")) o->svg = v;
        else if (!strcmp(a, "--search")) o->search = v;
        else if (!strcmp(a, "--strategies")) o->only = v;
        else if (!strcmp(a, "--axis")) {
            if (o->naxis == 64) {
                sim_err_print("trainsim plan", 2, "--axis: at most 64");
                return 2;
            }
            o->axis[o->naxis++] = v;
        }
        else if (!strcmp(a, "--gpus")) { if (posint(a, v, &o->gpus)) return 2; }
        else if (!strcmp(a, "--global-batch")) { if (posint(a, v, &o->gb)) return 2; }
        else if (!strcmp(a, "--jobs")) { if (posint(a, v, &o->jobs)) return 2; }
        else if (!strcmp(a, "--top")) { if (posint(a, v, &o->top)) return 2; }
        else if (!strcmp(a, "--refine")) { if (posint(a, v, &o->refine)) return 2; }
        else if (!strcmp(a, "--verify")) { if (posint(a, v, &o->verify)) return 2; }
        else if (!strcmp(a, "--placements")) { if (posint(a, v, &o->placements)) return 2; }
        else if (!strcmp(a, "--layers")) { if (posint(a, v, &so->layers)) return 2; }
        else if (!strcmp(a, "--batch")) { if (posint(a, v, &so->batch)) return 2; }
        else if (!strcmp(a, "--batches")) { if (poslist(a, v, so->batches, 64, &so->nbatch)) return 2; }
        else if (!strcmp(a, "--pp")) { if (poslist(a, v, so->pp, 16, &so->npp)) return 2; }
        else if (!strcmp(a, "--micro-batches")) { if (poslist(a, v, so->micro, 16, &so->nmicro)) return 2; }
        else if (!strcmp(a, "--max-batch")) { if (posint(a, v, &so->max_batch)) return 2; }
        else if (!strcmp(a, "--pipeline")) {
            if (strcmp(v, "gpipe") && strcmp(v, "1f1b")) {
                sim_err_print("trainsim plan", 2, "--pipeline: expected gpipe or 1f1b, got \"%s\"", v);
                return 2;
            }
            so->one_f_one_b = !strcmp(v, "1f1b");
        }
        else if (!strcmp(a, "--mem-budget")) {
            char *end;
            so->mem_budget = strtod(v, &end) * 1e9;
            if (!*v || *end || !(so->mem_budget > 0)) {
                sim_err_print("trainsim plan", 2, "--mem-budget: expected GB > 0, got \"%s\"", v);
                return 2;
            }
        } else if (!strcmp(a, "--dtype")) {
            if (sim_dtype_parse(v, &o->dtype) || o->dtype == SIM_DTYPE_FP8) {
                sim_err_print("trainsim plan", 2, "--dtype: expected fp32, tf32, fp16 or bf16, got \"%s\"", v);
                return 2;
            }
        } else if (!strcmp(a, "--fidelity")) {
            if (!strcmp(v, "fast"))
                o->fidelity = PLAN_FAST;
            else if (!strcmp(v, "full"))
                o->fidelity = PLAN_FULL;
            else {
                sim_err_print("trainsim plan", 2, "--fidelity: expected fast or full, got \"%s\"", v);
                return 2;
            }
        } else {
            if (!sim_err_json_enabled())
                usage(stderr);
            sim_err_print("trainsim plan", 2, "unknown option \"%s\"", a);
            return 2;
        }
    }
    if (o->verify > 0 && o->fidelity == PLAN_FULL) {
        sim_err_print("trainsim plan", 2, "--verify checks the fast fidelity against whole simulation; with "
                      "--fidelity full every strategy is simulated whole already");
        return 2;
    }
    if (o->verify > PLAN_VERIFY_MAX) {
        sim_err_print("trainsim plan", 2, "--verify: at most %d strategies, got %d", PLAN_VERIFY_MAX, o->verify);
        return 2;
    }
    return 0;
}

/* TRAINSIM_PLAN_TIMES=1: per-evaluation cost on stderr (bench) */
static void print_times(void *arg, int i, const plan_result *r)
{
    (void)arg, (void)i;
    fprintf(stderr, "eval %.3f s %d sims %d folded %d replicas %s\n", r->wall_s, r->sims, r->folded, r->replicas,
            r->strategy);
}

/* ---- output ---- */

static const char *fidelity_of(const plan_ctx *ctx, const plan_result *r)
{
    return r->refined || ctx->fidelity == PLAN_FULL ? "full" : "fast";
}

/* Indices into ok[] of the Pareto front (max throughput, min memory), by memory. */
static int pareto(plan_result **ok, int n, int *front)
{
    int *idx = malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    /* insertion sort by memory, then throughput descending: n is small */
    for (int i = 1; i < n; i++) {
        int k = idx[i], j = i - 1;
        while (j >= 0 && (ok[idx[j]]->peak_mem > ok[k]->peak_mem ||
                          (ok[idx[j]]->peak_mem == ok[k]->peak_mem &&
                           ok[idx[j]]->samples_per_s < ok[k]->samples_per_s))) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = k;
    }
    int nf = 0;
    double best = -1;
    for (int i = 0; i < n; i++)
        if (ok[idx[i]]->samples_per_s > best) {
            best = ok[idx[i]]->samples_per_s;
            front[nf++] = idx[i];
        }
    free(idx);
    return nf;
}

static int write_svg(const char *path, plan_result **ok, int n, const char *title, sim_err *err)
{
    sim_outfile out;
    FILE *f = sim_out_open(&out, path, err);
    if (!f)
        return -1;
    int *front = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int nf = pareto(ok, n, front);
    double W = 760, H = 480, L = 70, R = 20, T = 40, B = 60;
    plan_svg_panel p = {L, T, W - L - R, H - T - B, 0, 0};
    for (int i = 0; i < n; i++) {
        if (ok[i]->peak_mem / 1e9 > p.xmax)
            p.xmax = ok[i]->peak_mem / 1e9;
        if (ok[i]->samples_per_s > p.ymax)
            p.ymax = ok[i]->samples_per_s;
    }
    p.xmax = p.xmax > 0 ? p.xmax * 1.05 : 1;
    p.ymax = p.ymax > 0 ? p.ymax * 1.05 : 1;
    plan_svg_begin(f, W, H, title);
    plan_svg_axes(f, &p, "peak memory per GPU (GB)", "throughput (samples/s)", 1);
    for (int i = 0; i < n; i++)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#4a7bd0\" fill-opacity=\"0.6\"><title>%s: %.4g "
                   "samples/s, %.2f GB</title></circle>\n",
                plan_svg_x(&p, ok[i]->peak_mem / 1e9), plan_svg_y(&p, ok[i]->samples_per_s), ok[i]->strategy,
                ok[i]->samples_per_s, ok[i]->peak_mem / 1e9);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#d04a4a\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < nf; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", plan_svg_x(&p, ok[front[i]]->peak_mem / 1e9),
                plan_svg_y(&p, ok[front[i]]->samples_per_s));
    fprintf(f, "\"/>\n");
    for (int i = 0; i < nf; i++)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#d04a4a\"><title>Pareto: %s</title></circle>\n",
                plan_svg_x(&p, ok[front[i]]->peak_mem / 1e9), plan_svg_y(&p, ok[front[i]]->samples_per_s),
                ok[front[i]]->strategy);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#d04a4a\">Pareto front (%d)</text>\n", W - R - 140, T + 14, nf);
    free(front);
    return plan_svg_end(&out, err);
}

/* Prints the ranking; returns how many strategies ran. */
/* The machine ranks that play the schedule's ranks under a placement. */
static void placement_gpus(const plan_ctx *ctx, const plan_placement *p, int i, int *rank)
{
    int B = ctx->mach->ngpus / p->pp;
    *rank = p->order[i / B] * B + i % B;
}

static void print_placements(const opts *o, const plan_ctx *ctx, const plan_placement *pl, int npl)
{
    if (o->json) {
        printf(",\n  \"placements\": [");
        for (int k = 0; k < npl; k++) {
            const plan_placement *p = &pl[k];
            printf("%s\n    {\"strategy\": ", k ? "," : "");
            sim_json_fputs(stdout, p->strategy);
            printf(", \"pp\": %d, \"distinct\": %d, \"tried\": %d, \"rank_order_s\": %.9g, \"best_s\": %.9g, "
                   "\"gpus\": [", p->pp, p->distinct, p->tried, p->rank_order_s, p->best_s);
            for (int i = 0, r; i < ctx->mach->ngpus; i++) {
                placement_gpus(ctx, p, i, &r);
                printf("%s%d", i ? ", " : "", r);
            }
            printf("]}");
        }
        printf("\n  ]");
        return;
    }
    printf("\nplacements     pipeline stages over the GPU kinds: stage s on a block of GPUs/pp ranks (rank order: "
           "block s)\n");
    printf("%12s %9s %8s %6s  %-40s %s\n", "rank-order s", "best s", "gain", "tried", "stages on", "strategy");
    int best = -1;
    for (int k = 0; k < npl; k++) {
        const plan_placement *p = &pl[k];
        char on[256] = "";
        size_t l = 0;
        int B = ctx->mach->ngpus / p->pp;
        for (int s = 0; s < p->pp && l < sizeof on; s++)
            l += (size_t)snprintf(on + l, sizeof on - l, "%s%s", s ? "," : "",
                                  sim_machine_gpu(ctx->mach, p->order[s] * B)->model);
        printf("%12.4f %9.4f %+7.1f%% %3d/%-2d  %-40s %s\n", p->rank_order_s, p->best_s,
               100 * (p->rank_order_s / p->best_s - 1), p->tried, p->distinct, on, p->strategy);
        if (best < 0 || p->best_s < pl[best].best_s)
            best = k;
    }
    if (best < 0)
        return;
    printf("place it       a job file {\"model\": \"%s\", \"strategy\": \"%s\", \"gpus\": [", o->model,
           pl[best].strategy);
    for (int i = 0, r; i < ctx->mach->ngpus; i++) {
        placement_gpus(ctx, &pl[best], i, &r);
        printf("%s%d", i ? ", " : "", r);
    }
    printf("]}\n               with trainsim run --platform %s --job FILE\n", o->platform);
}

/* --verify: the fast fidelity's error on the strategies simulated whole. */
static void verify_summary(const plan_sweep_stats *st, double *mean, double *worst, int *iworst)
{
    *mean = *worst = 0;
    *iworst = -1;
    for (int i = 0; i < st->verified; i++) {
        double e = st->check[i].fast_s / st->check[i].full_s - 1;
        *mean += fabs(e) / st->verified;
        if (*iworst < 0 || fabs(e) > *worst) {
            *worst = fabs(e);
            *iworst = i;
        }
    }
}

static void print_verify_json(const plan_sweep_stats *st)
{
    double mean, worst;
    int iw;
    verify_summary(st, &mean, &worst, &iw);
    printf(",\n  \"verify\": {\"strategies\": %d, \"bound\": %.9g, \"mean_error\": %.9g, \"worst_error\": %.9g, "
           "\"within_bound\": %s, \"checked\": [",
           st->verified, PLAN_FAST_BOUND, mean, worst, worst <= PLAN_FAST_BOUND ? "true" : "false");
    for (int i = 0; i < st->verified; i++) {
        printf("%s\n    {\"strategy\": ", i ? "," : "");
        sim_json_fputs(stdout, st->check[i].strategy);
        printf(", \"fast_s\": %.9g, \"full_s\": %.9g, \"error\": %.9g}", st->check[i].fast_s, st->check[i].full_s,
               st->check[i].fast_s / st->check[i].full_s - 1);
    }
    printf("]}");
}

static void print_verify_text(const plan_sweep_stats *st)
{
    double mean, worst;
    int iw;
    verify_summary(st, &mean, &worst, &iw);
    printf("\nfast fidelity  checked on %d strateg%s drawn at random and simulated whole (--verify): mean error "
           "%.2f %%, worst %.2f %%, %s the stated %.0f %% (docs/planning.md)\n",
           st->verified, st->verified == 1 ? "y" : "ies", 100 * mean, 100 * worst,
           worst <= PLAN_FAST_BOUND ? "within" : "ABOVE", 100 * PLAN_FAST_BOUND);
    printf("%11s %11s %8s  %s\n", "fast s", "whole s", "error %", "strategy");
    for (int i = 0; i < st->verified; i++)
        printf("%11.4f %11.4f %+8.2f  %s\n", st->check[i].fast_s, st->check[i].full_s,
               100 * (st->check[i].fast_s / st->check[i].full_s - 1), st->check[i].strategy);
}

static int print_report(const opts *o, const plan_ctx *ctx, const plan_space *sp, plan_result *res, int n,
                        const plan_placement *pl, int npl, const plan_sweep_stats *st)
{
    plan_result **ok = malloc(sizeof *ok * (size_t)(n ? n : 1));
    int nok = plan_result_rank(res, n, ok), nfail = 0;
    const plan_result *firstfail = NULL;
    for (int i = 0; i < n; i++)
        if (res[i].status != 0 && nfail++ == 0)
            firstfail = &res[i];
    const sim_gpu *g = sim_machine_gpu(ctx->mach, 0);
    int pruned = 0;
    for (int r = 0; r < PLAN_PRUNE_COUNT; r++)
        pruned += plan_space_pruned(sp, r);
    if (o->csv) {
        printf("rank,strategy,samples_per_s,tokens_per_s,iteration_s,peak_memory_bytes,exposed_comm_s,compute_s,"
               "bubble_s,tflops_per_gpu,simulations,fidelity");
        for (int c = 0; c < SIM_KCLASS_COUNT; c++)
            printf(",kernels_%s_s", sim_kclass_name(c));
        printf("\n");
        for (int i = 0; i < nok; i++) {
            printf("%d,\"%s\",%.9g,%.9g,%.9g,%.0f,%.9g,%.9g,%.9g,%.9g,%d,%s", i + 1, ok[i]->strategy,
                   ok[i]->samples_per_s, ok[i]->tokens_per_s, ok[i]->iteration_s, ok[i]->peak_mem,
                   ok[i]->exposed_comm_s, ok[i]->compute_s, ok[i]->idle_s, ok[i]->tflops_per_gpu, ok[i]->sims,
                   fidelity_of(ctx, ok[i]));
            for (int c = 0; c < SIM_KCLASS_COUNT; c++)
                printf(",%.9g", ok[i]->kernel_s[c]);
            printf("\n");
        }
    } else if (o->json) {
        printf("{\n  \"trainsim_version\": \"%s\",\n  \"platform\": ", TRAINSIM_VERSION);
        sim_json_fputs(stdout, ctx->mach->name);
        printf(",\n  \"model\": ");
        sim_json_fputs(stdout, ctx->model.name);
        cJSON *info = wl_model_describe(&ctx->model);
        char *info_text = info ? cJSON_PrintUnformatted(info) : NULL;
        if (info_text) /* the model's dimensions, architecture and parameter count */
            printf(",\n  \"model_info\": %s", info_text);
        free(info_text);
        cJSON_Delete(info);
        printf(",\n  \"gpus\": %d,\n  \"global_batch\": %d,\n  \"dtype\": \"%s\",\n  \"fidelity\": \"%s\",\n",
               ctx->mach->ngpus, ctx->gb, sim_dtype_name(ctx->dtype), ctx->fidelity == PLAN_FAST ? "fast" : "full");
        printf("  \"search_space\": ");
        sim_json_fputs(stdout, plan_space_axes(sp));
        printf(",\n  \"enumerated\": %d,\n  \"pruned\": {", plan_space_enumerated(sp));
        for (int r = 0; r < PLAN_PRUNE_COUNT; r++)
            printf("%s\"%s\": %d", r ? ", " : "", plan_prune_name(r), plan_space_pruned(sp, r));
        printf("},\n  \"pruned_examples\": {");
        int first = 1;
        for (int r = 0; r < PLAN_PRUNE_COUNT; r++)
            if (plan_space_pruned(sp, r)) {
                printf("%s\"%s\": ", first ? "" : ", ", plan_prune_name(r));
                sim_json_fputs(stdout, plan_space_example(sp, r));
                first = 0;
            }
        printf("},\n  \"simulated\": %d,\n  \"failed\": %d,\n", n, nfail);
        printf("  \"best\": ");
        if (nok)
            sim_json_fputs(stdout, ok[0]->strategy);
        else
            printf("null");
        if (npl)
            print_placements(o, ctx, pl, npl);
        if (st->verified)
            print_verify_json(st);
        printf(",\n  \"ranking\": [\n");
        for (int i = 0; i < nok; i++) {
            printf("    {\"rank\": %d, \"strategy\": ", i + 1);
            sim_json_fputs(stdout, ok[i]->strategy);
            printf(", \"samples_per_s\": %.9g, \"tokens_per_s\": %.9g, \"iteration_time_s\": %.9g, "
                   "\"peak_memory_bytes\": %.0f, \"exposed_comm_s\": %.9g, \"compute_s\": %.9g, \"bubble_s\": %.9g, "
                   "\"tflops_per_gpu\": %.9g, \"simulations\": %d, \"fidelity\": \"%s\", \"kernels_s\": {",
                   ok[i]->samples_per_s, ok[i]->tokens_per_s, ok[i]->iteration_s, ok[i]->peak_mem,
                   ok[i]->exposed_comm_s, ok[i]->compute_s, ok[i]->idle_s, ok[i]->tflops_per_gpu, ok[i]->sims,
                   fidelity_of(ctx, ok[i]));
            for (int c = 0; c < SIM_KCLASS_COUNT; c++)
                printf("%s\"%s\": %.9g", c ? ", " : "", sim_kclass_name(c), ok[i]->kernel_s[c]);
            printf("}}%s\n", i + 1 < nok ? "," : "");
        }
        printf("  ]\n}\n");
    } else {
        printf("trainsim plan: %s on %s (%d x %s), global batch %d, %s, %s fidelity\n", ctx->model.name,
               ctx->mach->name, ctx->mach->ngpus, g->model, ctx->gb, sim_dtype_name(ctx->dtype),
               ctx->fidelity == PLAN_FAST ? "fast" : "full");
        printf("search space   %s\n", plan_space_axes(sp));
        printf("candidates     %d enumerated, %d pruned, %d simulated%s\n", plan_space_enumerated(sp), pruned, n,
               nfail ? "" : "");
        for (int r = 0; r < PLAN_PRUNE_COUNT; r++)
            if (plan_space_pruned(sp, r))
                printf("  pruned %-13s %5d   e.g. %s\n", plan_prune_name(r), plan_space_pruned(sp, r),
                       plan_space_example(sp, r));
        if (nfail)
            printf("  failed in simulation %d   e.g. %s: %s\n", nfail, firstfail->strategy, firstfail->error);
        if (!nok) {
            printf("no strategy can run\n");
        } else {
            int top = o->top == 0 || o->top > nok ? nok : o->top;
            printf("\n%4s %10s %10s %9s %8s %9s %8s  %s\n", "rank", "samples/s", "tokens/s", "iter s", "peak GB",
                   "exposed s", "TFLOP/s", "strategy");
            int nrefined = 0;
            for (int i = 0; i < top; i++) {
                nrefined += ok[i]->refined;
                printf("%3d%c %10.3f %10.0f %9.4f %8.2f %9.4f %8.2f  %s\n", i + 1, ok[i]->refined ? '*' : ' ',
                       ok[i]->samples_per_s, ok[i]->tokens_per_s, ok[i]->iteration_s, ok[i]->peak_mem / 1e9,
                       ok[i]->exposed_comm_s, ok[i]->tflops_per_gpu, ok[i]->strategy);
            }
            if (top < nok)
                printf("  ... %d more (--top 0 shows all)\n", nok - top);
            if (nrefined)
                printf("  * simulated whole (--refine); the others from the fast fidelity\n");
            if (st->verified)
                print_verify_text(st);
            printf("\nbest           %s\n", ok[0]->strategy);
            char gpus[32] = "";
            if (ctx->platform_gpus > ctx->mach->ngpus)
                snprintf(gpus, sizeof gpus, " --gpus %d", ctx->mach->ngpus);
            printf("run it         trainsim run --platform %s%s --model %s --strategy %s\n", o->platform, gpus,
                   o->model, ok[0]->strategy);
            if (npl)
                print_placements(o, ctx, pl, npl);
        }
    }
    if (o->svg) {
        char title[256];
        snprintf(title, sizeof title, "%s on %s (%d GPUs, gb %d): %d strategies", ctx->model.name, ctx->mach->name,
                 ctx->mach->ngpus, ctx->gb, nok);
        sim_err e;
        if (write_svg(o->svg, ok, nok, title, &e) < 0)
            sim_err_print("trainsim plan", 1, "%s", e.msg);
    }
    free(ok);
    return nok;
}

/* --placements K: the K best strategies with a pipeline, each on every
 * distinct arrangement of the GPU kinds (placement.c). */
static int find_placements(const opts *o, const plan_ctx *ctx, plan_result *res, int n, plan_placement **pl, int *npl,
                           sim_err *err)
{
    plan_result **ok = calloc((size_t)(n ? n : 1), sizeof *ok);
    *pl = calloc((size_t)o->placements, sizeof **pl);
    if (!ok || !*pl) {
        free(ok);
        return sim_errf(err, "out of memory");
    }
    int nok = plan_result_rank(res, n, ok), rc = 0;
    for (int i = 0; i < nok && *npl < o->placements && !rc; i++) {
        plan_placement *p = &(*pl)[*npl];
        rc = plan_place(ctx, ok[i]->strategy, p, err);
        *npl += !rc && p->tried > 0;
    }
    free(ok);
    return rc;
}

int plan_cli_main(int argc, char **argv)
{
    opts o;
    search_opts so;
    int rc = parse(argc, argv, &o, &so);
    if (rc)
        return rc == 1 ? 0 : 2;
    sim_err err = {{0}};
    int mrank = 0, msize = 1;
    if (plan_mpi_start(&argc, &argv, &mrank, &msize, &err) < 0) {
        sim_err_print("trainsim plan", 1, "%s", err.msg);
        return 1;
    }
    plan_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.platform_spec = o.platform;
    ctx.model_spec = o.model;
    ctx.dtype = o.dtype;
    ctx.fidelity = o.fidelity;
    ctx.only = o.only;
    ctx.axis = o.axis;
    ctx.naxis = o.naxis;
    ctx.mach = plat_load(o.platform, &err);
    ctx.platform_gpus = ctx.mach ? ctx.mach->ngpus : 0;
    if (!ctx.mach || sim_machine_first(ctx.mach, o.gpus, &err) < 0 || wl_model_load(o.model, &ctx.model, &err) < 0) {
        sim_err_print("trainsim plan", 1, "%s", err.msg);
        sim_machine_free(ctx.mach);
        plan_mpi_stop();
        return 1;
    }
    ctx.gb = o.gb ? o.gb : 4 * ctx.mach->ngpus;
    ctx.inputs_hash = plan_inputs_hash(ctx.mach, &ctx.model, ctx.fidelity);
    int jobs = o.jobs ? o.jobs : plan_ncpus() / msize;
    if (jobs < 1)
        jobs = 1;

    if (o.search) {
        rc = 0;
        if (mrank == 0) {
            search_result *sr = calloc(1, sizeof *sr);
            rc = !sr ? sim_errf(&err, "out of memory") : search_run(&ctx, o.search, &so, sr, &err);
            if (sr && (rc == 0 || sr->nrows))
                search_print(&ctx, &so, sr, o.json);
            free(sr);
            rc = rc < 0 ? 1 : 0;
        }
        if (rc)
            sim_err_print("trainsim plan", 1, "%s", err.msg);
        sim_machine_free(ctx.mach);
        plan_mpi_stop();
        return rc;
    }

    double t0 = now();
    plan_space *sp = plan_space_new(&ctx, &err);
    if (!sp) {
        sim_err_print("trainsim plan", 1, "%s", err.msg);
        sim_machine_free(ctx.mach);
        plan_mpi_stop();
        return 1;
    }
    int n = plan_space_count(sp);
    plan_result *res = calloc((size_t)(n ? n : 1), sizeof *res);
    plan_sweep_opts so_ = {.jobs = jobs, .cache_dir = o.nocache ? NULL : o.cache, .refine = o.refine,
                           .verify = o.verify, .progress = mrank == 0 && !o.quiet && isatty(2), .mpi_rank = mrank,
                           .mpi_size = msize};
    if (getenv("TRAINSIM_PLAN_TIMES") && getenv("TRAINSIM_PLAN_TIMES")[0] == '1')
        so_.on_result = print_times;
    plan_sweep_stats st;
    double t_space = now() - t0;
    rc = res ? plan_sweep_run(&ctx, sp, &so_, res, &st, &err) : sim_errf(&err, "out of memory");
    if (res && st.cache_warning[0])
        fprintf(stderr, "trainsim plan: %s\n", st.cache_warning);
    int nran = 1, npl = 0;
    plan_placement *pl = NULL;
    if (rc == 0 && mrank == 0 && o.placements > 0)
        rc = find_placements(&o, &ctx, res, n, &pl, &npl, &err);
    if (rc == 0 && mrank == 0) {
        nran = print_report(&o, &ctx, sp, res, n, pl, npl, &st);
        double el = t_space + st.wall_s;
        fprintf(stderr, "trainsim plan: %d strategies: %d evaluated (%d simulations) on %d process%s x %d rank%s, "
                        "%d from the cache, in %.2f s (%.1f evaluations/s); %.3f CPU s per evaluation on rank 0\n",
                n, st.evaluated, st.sims, jobs, jobs == 1 ? "" : "es", msize, msize == 1 ? "" : "s", st.cached, el,
                el > 0 ? st.evaluated / el : 0, st.mine ? st.cpu_s / st.mine : 0);
        if (st.verified) {
            double mean, worst;
            int iw;
            verify_summary(&st, &mean, &worst, &iw);
            fprintf(stderr, "trainsim plan: --verify: %d drawn at random, simulated whole in %.2f s: fast fidelity "
                            "mean error %.2f %%, worst %.2f %% (%s), %s the stated %.0f %%\n",
                    st.verified, st.verify_wall_s, 100 * mean, 100 * worst, iw >= 0 ? st.check[iw].strategy : "-",
                    worst <= PLAN_FAST_BOUND ? "within" : "ABOVE", 100 * PLAN_FAST_BOUND);
        }
        if (st.refined)
            fprintf(stderr, "trainsim plan: the %d fastest simulated whole (--refine) in %.2f s, %.2f CPU s\n",
                    st.refined, st.refine_wall_s, st.refine_cpu_s);
    } else if (rc < 0) {
        sim_err_print("trainsim plan", 1, "%s", err.msg);
    }
    free(pl);
    free(res);
    plan_space_free(sp);
    sim_machine_free(ctx.mach);
    plan_mpi_stop();
    return rc < 0 || nran == 0 ? 1 : 0; /* no strategy can run: a failure scripts must see */
}
