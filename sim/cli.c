/* cli.c — the `trainsim` command: the one place that prints and exits.
 *
 *   trainsim [run] [--platform P] [--model M] [--strategy S] [--schedule F]
 *                  [--json] [--trace F] [--memory F] [--save-schedule F] [--collectives MODE]
 *                  [--max-channels N]
 *                  [--compare KEY=v1,v2,...]
 *   trainsim schedule [--platform P] [--model M] [--strategy S] -o F
 *   trainsim check F
 *   trainsim import kineto TRACE... -o F [--step N] [--reprice GPU]   (workloads/import_cli.c)
 *   trainsim platform [--platform P] [-o F.xml]
 *   trainsim list
 *
 * With no arguments it runs the built-in default scenario (the Oases
 * testbed), which needs no files. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner/plan.h"
#include "planner/purchase.h"
#include "platforms/platform.h"
#include "sim/alloc.h"
#include "sim/embedded.h"
#include "sim/engine.h"
#include "sim/fold.h"
#include "sim/json.h"
#include "sim/outfile.h"
#include "sim/schedule.h"
#include "validation/fit.h"
#include "validation/val_cli.h"
#include "workloads/compare.h"
#include "workloads/gpt.h"
#include "workloads/import.h"
#include "workloads/jobs.h"
#include "workloads/moe.h"
#include "workloads/reshard.h"

#define DEFAULT_PLATFORM "oases-3090"
#define DEFAULT_MODEL "gpt-3072"
/* Oases' benchmark runs 4 sequences per micro-batch and 20 accumulation
 * steps (benchmark/overlap_run.sh, papers.md §1.2); Megatron-LM's baseline
 * recomputes every layer, without which this model does not fit in 24 GB. */
#define DEFAULT_STRATEGY "tp=4,dp=8,mb=4,gb=640,dtype=tf32,recompute=full"

typedef struct args {
    const char *cmd;
    const char *platform, *model, *strategy, *schedule;
    const char *trace, *save_schedule, *output, *memory, *compare;
    int json;
    sim_options opt;
    /* --slow and --degrade, in the order given (sim_machine_slow/_degrade) */
#define MAX_PERTURB 64
    const char *slow[MAX_PERTURB], *degrade[MAX_PERTURB];
    int nslow, ndegrade;
    const char *jobs[MAX_PERTURB]; /* --job files: several jobs on one cluster */
    int njobs;
    int gpus;          /* --gpus N: the first N GPUs of the platform (0 = all) */
    const char *trace_ranks, *trace_window; /* --trace-ranks LIST, --trace-window FROM:TO */
    const char *recorded;                   /* --recorded RANK:TRACE */
    const char *routing;                    /* --routing SPEC: an MoE model's skewed routing (one step) */
    int trace_detail;
    int quiet;         /* --quiet: no progress line */
    int exact;         /* --exact: every rank simulated (no fold: sim/fold.h) */
    int reduced;       /* ranks the run simulated when folded (0: all) */
    double reduced_tree_s; /* a GPU's tree all-reduces over folded servers, at their uncontended time */
    int platform_gpus; /* the platform's GPUs, before --gpus */
} args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim [run] [options]        simulate one training iteration (default scenario without options)\n"
            "       trainsim schedule [options] -o FILE   write the generated schedule as JSON\n"
            "       trainsim check FILE             check a schedule file\n"
            "       trainsim import kineto TRACE... -o FILE   PyTorch-profiler traces (one per rank) as a schedule\n"
            "       trainsim platform [--platform P] [-o FILE.xml]   write the SimGrid platform\n"
            "       trainsim list                   built-in clusters, models and hardware catalogue\n"
            "       trainsim validate [--help]      compare simulations with real measurements (validation/)\n"
            "       trainsim moe [options]          MoE steps with skewed routing: none / FasterMoE / Pro-Prophet balancing\n"
            "       trainsim reshard [--platform P] cross-mesh resharding microbenchmarks (send/recv, all-gather, broadcast)\n"
            "       trainsim calibrate [--check]    re-fit the catalogue's device parameters from validation/data\n"
            "       trainsim plan [options]         search parallel strategies by simulation (plan --help)\n"
            "       trainsim compare --clusters A,B [options]   which cluster to buy: time, $ and kWh to train (compare --help)\n"
            "\n"
            "options:\n"
            "  --platform P      built-in cluster name, cluster JSON file or SimGrid XML file (default %s)\n"
            "  --model M         built-in model name or model JSON file (default %s)\n"
            "  --strategy S      e.g. tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full\n"
            "                    (default %s); cp=N splits each sequence over N GPUs\n"
            "                    (context parallelism); every key: workloads/README.md\n"
            "  --schedule F      simulate this schedule JSON instead of generating one\n"
            "  --gpus N          run on the first N GPUs of the platform (default all; stated in the output)\n"
            "  --json            print the results as JSON\n"
            "  --trace F         write a Chrome trace (open it in https://ui.perfetto.dev; F.gz: compressed)\n"
            "  --trace-ranks L   trace only these ranks (e.g. 0-7,64; default: all)\n"
            "  --trace-window A:B  trace only what meets simulated seconds [A, B]\n"
            "  --trace-detail    every kernel and every step of a collective its own slice (default: a run\n"
            "                    of back-to-back kernels is one slice, a collective's steps to one peer one)\n"
            "  --recorded R:T    with --trace and an imported schedule: rank R's recorded step from its\n"
            "                    PyTorch-profiler trace T beside the simulated rank (the step import takes)\n"
            "  --memory F        write the per-GPU memory timeline as CSV (one line per memory effect)\n"
            "  --compare K=v1,v2 run the job once per value of strategy key K, side by side\n"
            "                    (e.g. pipeline=1f1b,gpipe,eager or zero=0,1,2,3; a value may set other keys\n"
            "                    for its run after '+': schedule=megatron,oases+recompute=oases);\n"
            "                    platform=A,B: the same job on several clusters (trainsim compare --help)\n"
            "  --save-schedule F also write the simulated schedule as JSON\n"
            "  --collectives M   auto (default: step by step for rings of up to 4 GPUs), step, aggregated\n"
            "  --max-channels N  at most N channels per collective, as NCCL_MAX_NCHANNELS (default: one\n"
            "                    per NIC the members of a node reach; two ways inside a bridged node)\n"
            "  --job F           a job file (model + strategy or schedule, and its GPUs), repeatable: the\n"
            "                    jobs share the cluster in one simulation, each beside its time alone\n"
            "  --slow RANKS:F    a straggler: these ranks' kernels take F times as long (e.g. 3:1.5, 0-7:1.2);\n"
            "                    the result sets the iteration beside the unperturbed one and names who waits\n"
            "  --degrade LINK:F  a slow NIC or link: F times less bandwidth on the SimGrid links named LINK\n"
            "                    (a shell pattern: n3-nic0, n*-nic0; `trainsim platform -o F.xml` lists them)\n"
            "  --quiet           no progress line (printed on a terminal's stderr for runs over ~2 s)\n"
            "  --routing SPEC    the strategy key routing=SPEC: an MoE model's routing for one step instead of\n"
            "                    the even split: zipf[:S], dirichlet[:A], uniform (a draw) or trace:FILE (as trainsim\n"
            "                    moe's, seed 1, its second step; uneven all-to-alls, per-GPU expert work); with\n"
            "                    balance=none|fastermoe|prophet in the strategy, the experts' copies that mode places\n"
            "  --exact           simulate every GPU (by default data-parallel replicas that repeat others exactly are\n"
            "                    simulated once: sim/fold.c)\n"
            "  -o F              output file (schedule, platform)\n"
            "  --version, --help\n",
            DEFAULT_PLATFORM, DEFAULT_MODEL, DEFAULT_STRATEGY);
}

/* --json anywhere on the command line: errors are JSON too (sim_err_print). */
#define json_errors sim_err_json_enabled()

#define report(code, ...) sim_err_print("trainsim", code, __VA_ARGS__)

static int fail(const char *msg) { return report(1, "%s", msg); }

static void oom(const char *msg) { report(1, "%s", msg); }

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    sim_options_default(&a->opt);
    a->cmd = "run";
    int i = 1;
    if (i < argc && argv[i][0] != '-')
        a->cmd = argv[i++];
    for (; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(o, "--version")) {
            printf("trainsim %s\n", TRAINSIM_VERSION);
            return -1;
        } else if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        } else if (!strcmp(o, "--platform")) {
            slot = &a->platform;
        } else if (!strcmp(o, "--model")) {
            slot = &a->model;
        } else if (!strcmp(o, "--strategy")) {
            slot = &a->strategy;
        } else if (!strcmp(o, "--schedule")) {
            slot = &a->schedule;
        } else if (!strcmp(o, "--trace")) {
            slot = &a->trace;
        } else if (!strcmp(o, "--trace-ranks")) {
            slot = &a->trace_ranks;
        } else if (!strcmp(o, "--trace-window")) {
            slot = &a->trace_window;
        } else if (!strcmp(o, "--recorded")) {
            slot = &a->recorded;
        } else if (!strcmp(o, "--routing")) {
            slot = &a->routing;
        } else if (!strcmp(o, "--exact")) {
            a->exact = 1;
            continue;
        } else if (!strcmp(o, "--quiet")) {
            a->quiet = 1;
            continue;
        } else if (!strcmp(o, "--trace-detail")) {
            a->trace_detail = 1;
            continue;
        } else if (!strcmp(o, "--memory")) {
            slot = &a->memory;
        } else if (!strcmp(o, "--compare")) {
            slot = &a->compare;
        } else if (!strcmp(o, "--save-schedule")) {
            slot = &a->save_schedule;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            slot = &a->output;
        } else if (!strcmp(o, "--collectives")) {
            if (i + 1 >= argc)
                return report(2, "--collectives needs a value: auto, step or aggregated");
            const char *v = argv[++i];
            if (!strcmp(v, "auto"))
                a->opt.coll_mode = SIM_COLLMODE_AUTO;
            else if (!strcmp(v, "step"))
                a->opt.coll_mode = SIM_COLLMODE_STEP;
            else if (!strcmp(v, "aggregated"))
                a->opt.coll_mode = SIM_COLLMODE_AGGREGATED;
            else
                return report(2, "--collectives: expected auto, step or aggregated, got \"%s\"", v);
            continue;
        } else if (!strcmp(o, "--gpus")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || !end || *end || end == argv[i + 1] || v < 1 || v > SIM_MAX_GPUS)
                return report(2, "--gpus: expected a whole number of GPUs from 1 to %d, got \"%s\"", SIM_MAX_GPUS,
                              i + 1 < argc ? argv[i + 1] : "");
            a->gpus = (int)v;
            i++;
            continue;
        } else if (!strcmp(o, "--max-channels")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || !end || *end || end == argv[i + 1] || v < 1 || v > 64)
                return fprintf(stderr, "trainsim: --max-channels: expected a whole number from 1 to 64, got \"%s\"\n",
                               i + 1 < argc ? argv[i + 1] : ""),
                       2;
            a->opt.max_channels = (int)v;
            i++;
            continue;
        } else if (!strcmp(o, "--job")) {
            if (i + 1 >= argc)
                return report(2, "--job needs a job file (model + strategy or schedule, and its GPUs)");
            if (a->njobs >= MAX_PERTURB)
                return report(2, "--job: at most %d jobs", MAX_PERTURB);
            a->jobs[a->njobs++] = argv[++i];
            continue;
        } else if (!strcmp(o, "--slow") || !strcmp(o, "--degrade")) {
            int is_slow = o[2] == 's';
            int *n = is_slow ? &a->nslow : &a->ndegrade;
            if (i + 1 >= argc)
                return report(2, "%s needs a value: %s:FACTOR", o, is_slow ? "RANKS" : "LINK");
            if (*n >= MAX_PERTURB)
                return report(2, "%s: at most %d of them", o, MAX_PERTURB);
            (is_slow ? a->slow : a->degrade)[(*n)++] = argv[++i];
            continue;
        } else if (!strcmp(a->cmd, "check") && o[0] != '-' && !a->schedule) {
            a->schedule = o;
            continue;
        } else {
            if (!json_errors)
                usage(stderr);
            return report(2, "unknown option \"%s\"", o);
        }
        if (i + 1 >= argc) {
            return report(2, "%s needs a value", o);
        }
        *slot = argv[++i];
    }
    if (!a->platform)
        a->platform = DEFAULT_PLATFORM;
    if (!a->model)
        a->model = DEFAULT_MODEL;
    return 0;
}

/* Builds the schedule the arguments ask for: read from a file, or generated
 * from model + strategy on the machine. */
static sim_schedule *make_schedule(const args *a, const sim_machine *m, wl_model *model, wl_strategy *st,
                                   char *st_text, size_t st_len, sim_fold *fold, sim_err *err)
{
    if (fold)
        memset(fold, 0, sizeof *fold);
    if (a->schedule)
        return sim_sched_load(a->schedule, err);
    if (wl_model_load(a->model, model, err) < 0)
        return NULL;
    wl_strategy_default(st);
    const char *text = a->strategy ? a->strategy : DEFAULT_STRATEGY;
    /* the default strategy belongs to the default model and platform */
    if (!a->strategy && (strcmp(a->model, DEFAULT_MODEL) || strcmp(a->platform, DEFAULT_PLATFORM)))
        text = "";
    if (wl_strategy_parse(text, st, err) < 0)
        return NULL;
    if (a->routing && wl_strategy_set_routing(st, a->routing, err) < 0) { /* --routing is the key routing= */
        sim_err_prefix(err, "--routing: ");
        return NULL;
    }
    wl_strategy given = *st; /* dp and gb on auto filled in (tp*pp*cp*dp = GPUs) */
    if (wl_gpt_resolve(model, &given, m, st, err))
        return NULL;
    wl_strategy_format(st, st_text, (int)st_len);
    if (st->routing[0]) /* a routed step (workloads/moe_balance.c): folded whole if at all */
        return wl_gpt_generate(model, st, m, err);
    return fold ? wl_gpt_generate_folded(model, st, m, SIM_FOLD_ALL, fold, err) : wl_gpt_generate(model, st, m, err);
}

static const char *gb(double bytes, char *buf, size_t n)
{
    snprintf(buf, n, "%.2f GB", bytes / 1e9);
    return buf;
}

/* ---- --slow / --degrade ---------------------------------------------- */

/* "rank 3 kernels x1.50, ranks 8-15 x1.20; links n3-nic0 bandwidth /4" */
static void describe_perturbation(const sim_machine *m, char *b, size_t n)
{
    size_t l = 0;
    b[0] = 0;
    for (int r = 0; m->compute_slow && r < m->ngpus && l < n; r++) {
        double f = m->compute_slow[r];
        if (f == 1)
            continue;
        int e = r;
        while (e + 1 < m->ngpus && m->compute_slow[e + 1] == f)
            e++;
        l += (size_t)(e > r ? snprintf(b + l, n - l, "%sranks %d-%d kernels x%g", l ? ", " : "", r, e, f)
                            : snprintf(b + l, n - l, "%srank %d kernels x%g", l ? ", " : "", r, f));
        r = e;
    }
    for (int d = 0; d < m->ndegrade && l < n; d++)
        l += (size_t)snprintf(b + l, n - l, "%slinks %s bandwidth /%g", l ? "; " : "", m->degrade[d].pattern,
                              m->degrade[d].factor);
}

/* Time rank r spends not computing, more than without the perturbation:
 * how long it waits for the slowed ranks or links. */
static double wait_added(const sim_result *r, const sim_result *base, int rank)
{
    return (r->iteration_s - r->rank[rank].compute_s) - (base->iteration_s - base->rank[rank].compute_s);
}

typedef struct rank_wait {
    int rank;
    double s;
} rank_wait;

static int by_wait_desc(const void *x, const void *y)
{
    const rank_wait *a = x, *b = y;
    return a->s < b->s ? 1 : a->s > b->s ? -1 : a->rank - b->rank;
}

static void print_perturbed(const sim_machine *m, const sim_result *r, const sim_result *base)
{
    char what[512];
    describe_perturbation(m, what, sizeof what);
    double T0 = base->iteration_s;
    printf("perturbed             %s\n", what);
    printf("unperturbed           %.4f s (the perturbation costs %+.1f %%)\n", T0,
           T0 > 0 ? 100 * (r->iteration_s - T0) / T0 : 0);
    rank_wait *w = sim_xcalloc((size_t)r->nranks, sizeof *w, "the ranks' waits");
    double eps = 1e-6 * fmax(r->iteration_s, 1e-9);
    int waiting = 0;
    for (int i = 0; i < r->nranks; i++) {
        w[i] = (rank_wait){i, wait_added(r, base, i)};
        waiting += w[i].s > eps;
    }
    qsort(w, (size_t)r->nranks, sizeof *w, by_wait_desc);
    printf("waiting               ");
    if (!waiting)
        printf("no rank waits longer than unperturbed");
    for (int i = 0; i < waiting && i < 6; i++)
        printf("%srank %d +%.4f s", i ? ", " : "", w[i].rank, w[i].s);
    if (waiting > 6)
        printf(", ... (%d ranks wait longer in all)", waiting);
    printf("\n");
    free(w);
}

/* The GPUs of the run's ranks: "32 x RTX3090", or for a cluster of node
 * groups "16 x RTX4090 + 16 x A100-PCIe-80GB"; and their mean peak of
 * dtype in TFLOP/s (MFU is against it). */
static double gpu_mix(const sim_machine *m, int nranks, int dtype, char *out, size_t n)
{
    size_t l = 0;
    double peak = 0;
    out[0] = 0;
    for (int md = 0; md < m->nmodels; md++) {
        int count = 0;
        for (int r = 0; r < nranks; r++)
            count += m->gpu_model[r] == md;
        if (count && l < n)
            l += (size_t)snprintf(out + l, n - l, "%s%d x %s", l ? " + " : "", count, m->gpus[md].model);
        peak += count * m->gpus[md].peak_flops[dtype] / 1e12 / (nranks > 0 ? nranks : 1);
    }
    return peak;
}

/* The kernels' own seconds by class (sim_kclass), mean per GPU, with each
 * class's share of their sum: where the compute time goes. */
static void print_kernel_classes(const sim_result *r)
{
    double sum = 0;
    for (int c = 0; c < SIM_KCLASS_COUNT; c++)
        sum += r->kernel_s[c];
    if (sum <= 0)
        return;
    printf("kernels per GPU       ");
    const char *sep = "";
    for (int c = 0; c < SIM_KCLASS_COUNT; c++)
        if (r->kernel_s[c] > 0) {
            printf("%s%s %.4f s (%.1f %%)", sep, sim_kclass_label(c), r->kernel_s[c], 100 * r->kernel_s[c] / sum);
            sep = ", ";
        }
    printf("; own durations, mean\n");
}

static void print_text(const args *a, const sim_machine *m, const sim_schedule *s, const sim_result *r,
                       const sim_result *base, const char *strategy)
{
    const sim_gpu *g = sim_machine_gpu(m, r->peak_mem_rank); /* the capacity the peak is measured against */
    double T = r->iteration_s, pct = T > 0 ? 100 / T : 0; /* an iteration of no time has no rates */
    double samples = s->meta.samples_per_iteration, tokens = s->meta.tokens_per_iteration;
    double tflops = T > 0 ? s->meta.model_flops_per_iteration / T / s->nranks / 1e12 : 0;
    char mix[256];
    double peak = gpu_mix(m, s->nranks, s->meta.dtype, mix, sizeof mix);
    char b1[32], b2[32];
    char part[96] = "";
    if (s->nranks < a->platform_gpus) /* --gpus, or a schedule smaller than the platform */
        snprintf(part, sizeof part, ": its first %d of %d GPUs", s->nranks, a->platform_gpus);
    printf("trainsim %s: %s on %s (%d nodes, %s%s)\n", TRAINSIM_VERSION, s->meta.name[0] ? s->meta.name : a->schedule,
           m->name, m->nnodes, mix, part);
    if (strategy[0])
        printf("strategy              %s\n", strategy);
    printf("iteration time        %.4f s\n", T);
    if (base)
        print_perturbed(m, r, base);
    if (samples > 0 && T > 0)
        printf("throughput            %.2f samples/s, %.0f tokens/s\n", samples / T, tokens / T);
    if (s->meta.model_flops_per_iteration > 0 && T > 0)
        printf("model TFLOP/s per GPU %.2f   MFU %.1f %% of %.1f TFLOP/s (%s peak)\n", tflops,
               peak > 0 ? 100 * tflops / peak : 0, peak, sim_dtype_name((sim_dtype)s->meta.dtype));
    printf("time per GPU (mean)   compute %.4f s (%.1f %%), exposed communication %.4f s (%.1f %%), bubble/idle %.4f s (%.1f %%)\n",
           r->compute_s, pct * r->compute_s, r->exposed_comm_s, pct * r->exposed_comm_s, r->idle_s, pct * r->idle_s);
    print_kernel_classes(r);
    printf("communication         %.4f s in all, %.4f s of it hidden behind compute\n", r->comm_s,
           r->comm_s - r->exposed_comm_s);
    const sim_rank_result *pr = &r->rank[r->peak_mem_rank];
    printf("peak memory per GPU   %s of %s (rank %d:", gb(r->peak_mem, b1, sizeof b1), gb(g->mem_capacity, b2, sizeof b2),
           r->peak_mem_rank);
    for (int k = 0; k < SIM_MEM_KIND_COUNT; k++)
        if (pr->peak_by_kind[k] > 0)
            printf(" %s %.2f", sim_mem_kind_name(k), pr->peak_by_kind[k] / 1e9);
    printf(")\n");
    printf("simulated             %llu operations, %llu flows, %llu kernel executions in %.2f s wall\n",
           (unsigned long long)r->ops, (unsigned long long)r->flows, (unsigned long long)r->execs, r->wall_s);
    if (a->reduced)
        printf("reduced               %d of the %d GPUs simulated: the others repeat them exactly (data-parallel "
               "replicas on a non-blocking fabric, tensor-parallel peers on an NVSwitch: sim/fold.c); --exact "
               "simulates every GPU\n", a->reduced, s->nranks);
    if (a->reduced_tree_s > 0)
        printf("                      (but for %.3f ms per GPU of tree all-reduces over folded servers, taken at their "
               "uncontended time: under 0.02 %% of the iteration)\n", a->reduced_tree_s * 1e3);
    if (a->trace)
        printf("trace                 %s (open in https://ui.perfetto.dev)\n", a->trace);
}

/* Prints a JSON document on stdout and frees it. */
static void print_doc(cJSON *o) { sim_json_print(stdout, o); }

/* A number, or null where it is undefined (rates of an iteration that
 * takes no time): JSON has no NaN. */
static void add_num(cJSON *o, const char *key, double v)
{
    cJSON_AddItemToObject(o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

static void print_json(const sim_machine *m, int platform_gpus, const sim_schedule *s, const sim_result *r,
                       const sim_result *base, const char *strategy, const wl_model *wm, int reduced,
                       double tree_s, const char *routing)
{
    const char *model = wm ? wm->name : "";
    const sim_gpu *g = sim_machine_gpu(m, r->peak_mem_rank);
    double T = r->iteration_s;
    double rate = T > 0 ? 1 / T : NAN;
    double tflops = s->meta.model_flops_per_iteration * rate / s->nranks / 1e12;
    char mix[256];
    double peak = gpu_mix(m, s->nranks, s->meta.dtype, mix, sizeof mix);
    const sim_rank_result *pr = &r->rank[r->peak_mem_rank];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "trainsim_version", TRAINSIM_VERSION);
    cJSON_AddStringToObject(o, "platform", m->name);
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "strategy", strategy);
    cJSON *info = wm ? wl_model_describe(wm) : NULL;
    cJSON *moe = info ? cJSON_GetObjectItemCaseSensitive(info, "moe") : NULL;
    if (moe && routing)
        cJSON_ReplaceItemInObjectCaseSensitive(moe, "routing", cJSON_CreateString(routing));
    if (info) /* the model's dimensions, architecture and parameter count */
        cJSON_AddItemToObject(o, "model_info", info);
    cJSON_AddStringToObject(o, "schedule", s->meta.name);
    add_num(o, "gpus", s->nranks);
    add_num(o, "platform_gpus", platform_gpus); /* more than gpus: the run used the first gpus of them */
    cJSON_AddStringToObject(o, "gpu_model", sim_machine_gpu(m, 0)->model);
    cJSON_AddStringToObject(o, "gpu_mix", mix); /* "16 x RTX4090 + 16 x A100-PCIe-80GB" for node groups */
    add_num(o, "iteration_time_s", T);
    if (base) { /* --slow / --degrade: what was perturbed and the unperturbed iteration */
        cJSON *pt = cJSON_AddObjectToObject(o, "perturbation");
        cJSON *sl = cJSON_AddArrayToObject(pt, "slow");
        for (int i = 0; m->compute_slow && i < m->ngpus; i++)
            if (m->compute_slow[i] != 1) {
                cJSON *e = cJSON_CreateObject();
                add_num(e, "rank", i);
                add_num(e, "factor", m->compute_slow[i]);
                cJSON_AddItemToArray(sl, e);
            }
        cJSON *dg = cJSON_AddArrayToObject(pt, "degrade");
        for (int i = 0; i < m->ndegrade; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "links", m->degrade[i].pattern);
            add_num(e, "factor", m->degrade[i].factor);
            cJSON_AddItemToArray(dg, e);
        }
        add_num(pt, "unperturbed_iteration_time_s", base->iteration_s);
    }
    add_num(o, "samples_per_s", s->meta.samples_per_iteration * rate);
    add_num(o, "tokens_per_s", s->meta.tokens_per_iteration * rate);
    add_num(o, "tflops_per_gpu", tflops);
    add_num(o, "mfu", peak > 0 ? tflops / peak : 0);
    add_num(o, "peak_tflops_per_gpu", peak);
    cJSON *b = cJSON_AddObjectToObject(o, "breakdown");
    add_num(b, "compute_s", r->compute_s);
    add_num(b, "exposed_comm_s", r->exposed_comm_s);
    add_num(b, "bubble_s", r->idle_s);
    add_num(b, "comm_total_s", r->comm_s);
    add_num(b, "comm_hidden_s", r->comm_s - r->exposed_comm_s);
    cJSON *kc = cJSON_AddObjectToObject(b, "kernels_s"); /* each class's kernels at their own durations */
    for (int c = 0; c < SIM_KCLASS_COUNT; c++)
        add_num(kc, sim_kclass_name(c), r->kernel_s[c]);
    add_num(o, "peak_memory_bytes", r->peak_mem);
    add_num(o, "peak_memory_rank", r->peak_mem_rank);
    add_num(o, "memory_capacity_bytes", g->mem_capacity);
    cJSON *k = cJSON_AddObjectToObject(o, "peak_memory_by_kind");
    for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
        add_num(k, sim_mem_kind_name(i), pr->peak_by_kind[i]);
    cJSON *per = cJSON_AddArrayToObject(o, "per_gpu");
    for (int i = 0; i < r->nranks; i++) {
        const sim_rank_result *x = &r->rank[i];
        cJSON *e = cJSON_CreateObject();
        add_num(e, "rank", i);
        add_num(e, "compute_s", x->compute_s);
        add_num(e, "exposed_comm_s", x->exposed_comm_s);
        add_num(e, "bubble_s", x->idle_s);
        add_num(e, "comm_total_s", x->comm_s);
        add_num(e, "peak_memory_bytes", x->peak_mem);
        add_num(e, "end_s", x->end_s); /* when its last operation ended (trace replay compares it per rank) */
        cJSON *ek = cJSON_AddObjectToObject(e, "kernels_s");
        for (int c = 0; c < SIM_KCLASS_COUNT; c++)
            add_num(ek, sim_kclass_name(c), x->kernel_s[c]);
        if (base)
            add_num(e, "wait_added_s", wait_added(r, base, i));
        cJSON_AddItemToArray(per, e);
    }
    add_num(o, "operations", (double)r->ops);
    add_num(o, "flows", (double)r->flows);
    if (reduced) /* the operations and flows above are the reduced simulation's */
        add_num(o, "simulated_gpus", reduced);
    if (reduced && tree_s > 0)
        add_num(o, "uncontended_tree_s", tree_s);
    print_doc(o);
}

/* run --compare: the job once per value, side by side (workloads/compare.c) */
static int cmd_compare(const args *a, sim_machine *m)
{
    sim_err err = {{0}};
    wl_model model;
    if (a->schedule)
        return sim_machine_free(m), report(2, "--compare varies a strategy key; it cannot use --schedule");
    if (wl_model_load(a->model, &model, &err) < 0)
        return sim_machine_free(m), fail(err.msg);
    const char *text = a->strategy ? a->strategy : DEFAULT_STRATEGY;
    if (!a->strategy && (strcmp(a->model, DEFAULT_MODEL) || strcmp(a->platform, DEFAULT_PLATFORM)))
        text = "";
    if (!strncmp(a->compare, "platform=", 9)) {
        /* clusters, not a strategy key: the purchasing comparison runs the
         * strategy (or searches one) on each */
        char *argv[16];
        int argc = 0;
        argv[argc++] = "compare";
        argv[argc++] = "--clusters";
        argv[argc++] = (char *)a->compare + 9;
        argv[argc++] = "--model";
        argv[argc++] = (char *)a->model;
        argv[argc++] = "--dtype";
        argv[argc++] = "tf32"; /* trainsim run's default */
        if (text[0]) {
            argv[argc++] = "--strategy";
            argv[argc++] = (char *)text;
        }
        if (a->json)
            argv[argc++] = "--json";
        argv[argc] = NULL;
        sim_machine_free(m);
        return plan_compare_cli_main(argc, argv);
    }
    int n = 0;
    wl_compare_row *rows = wl_compare_run(m, &model, text, a->compare, &a->opt, &n, &err);
    if (!rows)
        return sim_machine_free(m), fail(err.msg);
    char key[64] = "";
    const char *eq = strchr(a->compare, '=');
    snprintf(key, sizeof key, "%.*s", (int)(eq - a->compare), a->compare);
    char *out = wl_compare_format(rows, n, key, m, &model, a->json);
    if (out)
        fputs(out, stdout);
    free(out);
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += rows[i].ok;
    wl_compare_free(rows, n);
    sim_machine_free(m);
    return ok ? 0 : 1;
}

/* The same schedule on the machine without its perturbations, in a child
 * process (one simulation per process), without trace or memory log. */
static int unperturbed_run(const sim_schedule *s, sim_machine *m, const sim_options *opt, sim_result *out,
                           sim_err *err)
{
    double *slow = m->compute_slow;
    int nd = m->ndegrade;
    m->compute_slow = NULL, m->ndegrade = 0;
    sim_options o = *opt;
    o.trace_path = o.memory_path = NULL;
    int rc = sim_run_isolated(s, m, &o, out, err);
    m->compute_slow = slow, m->ndegrade = nd;
    return rc;
}

/* ---- progress ------------------------------------------------------------ */

/* One line on a terminal's stderr, rewritten in place. */
static void print_progress(void *ctx, const sim_progress *p)
{
    (void)ctx;
    double frac = p->ops ? (double)p->ops_done / (double)p->ops : 0;
    double eta = frac > 0 ? p->wall_s * (1 - frac) / frac : 0;
    fprintf(stderr, "\r\033[Ksimulated %.3f s, %.1f of %.1f M operations (%.0f %%), %.0f s wall, about %.0f s left",
            p->simulated_s, (double)p->ops_done / 1e6, (double)p->ops / 1e6, 100 * frac, p->wall_s, eta);
}

/* A schedule this large takes more than ~15 s (bench/: ~4-7 us per operation
 * on one core): say so, and that the planner's fast fidelity exists. */
#define LONG_RUN_OPS 3000000u

/* Platforms from this many GPUs take SimGrid more than ~10 s to load
 * (docs/performance.md: 9 s at 16,384 GPUs, 109 s at 65,536), before any
 * progress can be counted: say so first. */
#define LONG_LOAD_GPUS 16384

static void progress_options(const args *a, const sim_machine *m, const sim_schedule *s, const char *strategy,
                             sim_options *opt)
{
    if (a->quiet || !isatty(2))
        return;
    opt->progress = print_progress;
    if (m->ngpus >= LONG_LOAD_GPUS)
        fprintf(stderr, "trainsim: loading a platform of %d GPUs into SimGrid (about %s)...\n", m->ngpus,
                m->ngpus >= 4 * LONG_LOAD_GPUS   ? "two minutes"
                : m->ngpus >= 2 * LONG_LOAD_GPUS ? "45 s"
                                                 : "10 s");
    if (s->nops >= LONG_RUN_OPS && !a->schedule && strategy[0])
        fprintf(stderr, "trainsim: %.1f M operations: a whole simulation takes minutes; the planner's fast fidelity "
                        "estimates it in seconds: trainsim plan --platform %s --model %s --strategies \"%s\"\n",
                s->nops / 1e6, a->platform, a->model, strategy);
}

static void progress_done(const sim_options *opt)
{
    if (opt->progress)
        fputs("\r\033[K", stderr);
}

/* ---- trace selection ---------------------------------------------------- */

/* Fills opt's trace fields from --trace-ranks, --trace-window and
 * --trace-detail for a schedule of nranks; *mask (malloc'd, or NULL) is the
 * caller's to free.  0, or -1 with err. */
/* A whole trace costs about this many bytes per operation (85 MB for the
 * default scenario's 625 k operations); by default a trace stays under
 * TRACE_DEFAULT_BYTES by keeping the first ranks. */
#define TRACE_BYTES_PER_OP 140.0
#define TRACE_DEFAULT_BYTES 100e6

static int trace_options(const args *a, const sim_schedule *s, sim_options *opt, unsigned char **mask, sim_err *err)
{
    int nranks = s->nranks;
    *mask = NULL;
    opt->trace_path = a->trace;
    opt->trace_detail = a->trace_detail;
    if (!a->trace && (a->trace_ranks || a->trace_window || a->trace_detail))
        return sim_errf(err, "--trace-ranks, --trace-window and --trace-detail select what --trace FILE writes: "
                             "give --trace");
    if (a->trace_ranks) {
        *mask = sim_xcalloc((size_t)nranks + 1, 1, "the traced ranks");
        if (sim_ranks_parse("--trace-ranks", a->trace_ranks, strlen(a->trace_ranks), nranks, *mask, err) < 0)
            return -1;
        opt->trace_ranks = *mask;
    } else if (a->trace && !a->trace_window && TRACE_BYTES_PER_OP * s->nops > TRACE_DEFAULT_BYTES) {
        double *ops = sim_xcalloc((size_t)nranks + 1, sizeof *ops, "the traced ranks");
        for (uint32_t i = 0; i < s->nstreams; i++)
            ops[s->streams[i].rank] += s->streams[i].nops;
        *mask = sim_xcalloc((size_t)nranks + 1, 1, "the traced ranks");
        double bytes = 0;
        int k = 0;
        while (k < nranks && (k == 0 || bytes + TRACE_BYTES_PER_OP * ops[k] <= TRACE_DEFAULT_BYTES))
            bytes += TRACE_BYTES_PER_OP * ops[k], (*mask)[k++] = 1;
        free(ops);
        opt->trace_ranks = *mask;
        fprintf(stderr, "trainsim: the trace keeps ranks 0-%d of %d (about %.0f MB; the whole would be about %.1f GB): "
                        "--trace-ranks or --trace-window choose others\n",
                k - 1, nranks, bytes / 1e6, TRACE_BYTES_PER_OP * s->nops / 1e9);
    }
    if (a->trace_window) {
        char *end = NULL;
        double from = strtod(a->trace_window, &end), to = -1;
        if (end && *end == ':')
            to = strtod(end + 1, &end);
        if (!end || *end || !(from >= 0) || !(to > from) || !isfinite(to))
            return sim_errf(err, "--trace-window \"%s\": expected FROM:TO in simulated seconds, 0 <= FROM < TO",
                            a->trace_window);
        opt->trace_from = from;
        opt->trace_to = to;
    }
    return 0;
}

/* --recorded R:TRACE: the recorded step of rank R as its own process in the
 * Chrome trace, beside the simulated rank, its first kernel where the replay
 * starts the rank's (*events malloc'd, or NULL).  0, -1
 * (usage) or -2 (the trace) with err. */
#define RECORDED_PID_BASE 1000000

static int recorded_options(const args *a, const sim_schedule *s, sim_options *opt, char **events, sim_err *err)
{
    *events = NULL;
    if (!a->recorded)
        return 0;
    if (!a->trace)
        return sim_errf(err, "--recorded puts a recorded step beside the simulated one in the Chrome trace: give "
                             "--trace FILE");
    char *end = NULL;
    long rank = strtol(a->recorded, &end, 10);
    if (end == a->recorded || *end != ':' || !end[1] || rank < 0 || rank >= s->nranks)
        return sim_errf(err, "--recorded \"%s\": expected RANK:TRACE with RANK in 0..%d (the schedule's ranks) and "
                             "TRACE a PyTorch-profiler trace", a->recorded, s->nranks - 1);
    char label[600];
    snprintf(label, sizeof label, "rank %ld recorded (%s)", rank, end + 1);
    double first = wl_import_replay_start_us(s, (int)rank);
    if (!(*events = wl_import_recorded_events(end + 1, -1, RECORDED_PID_BASE + (int)rank, label, first, err)))
        return -2; /* the trace's own error: a bad input, not a bad command line */
    opt->trace_extra = *events;
    return 0;
}

/* ---- several jobs on one cluster (--job) -------------------------------- */

/* Per job: when its GPUs finish, their mean exposed communication, and the
 * NICs it sends through across nodes. */
typedef struct job_figures {
    double end_s, exposed_comm_s;
} job_figures;

static job_figures job_figures_of(const wl_job *j, const sim_result *r)
{
    job_figures f = {0, 0};
    for (int i = 0; i < j->ngpus; i++) {
        f.end_s = fmax(f.end_s, r->rank[j->gpus[i]].end_s);
        f.exposed_comm_s += r->rank[j->gpus[i]].exposed_comm_s / j->ngpus;
    }
    return f;
}

/* Marks uses[rank] for the job's ranks that exchange data with another
 * node (a communicator spanning nodes, or a peer on another node): their
 * NICs (sim_machine.nic) carry the job's inter-node traffic. */
static void inter_node_ranks(const wl_job *j, const sim_machine *m, unsigned char *uses)
{
    const sim_schedule *s = j->sched;
    for (int c = 0; c < s->ncomms; c++) {
        int spans = 0;
        for (int k = 1; k < s->comms[c].nranks; k++)
            spans |= m->node[j->gpus[s->comms[c].ranks[k]]] != m->node[j->gpus[s->comms[c].ranks[0]]];
        for (int k = 0; spans && k < s->comms[c].nranks; k++)
            uses[j->gpus[s->comms[c].ranks[k]]] = 1;
    }
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        int a = j->gpus[sim_sched_rank_of(s, i)], b;
        if ((p->kind == SIM_OP_SEND || p->kind == SIM_OP_RECV) && m->node[a] != m->node[b = j->gpus[s->ops[i].arg]])
            uses[a] = uses[b] = 1;
    }
}

/* The NICs (node, nic) that jobs a and b both send through, as
 * "n0-nic0, n1-nic0"; the nodes they share otherwise (PCIe switches, host
 * memory) counted in *nodes. */
static void shared_between(const wl_job *ja, const wl_job *jb, const sim_machine *m, char *out, size_t n,
                           int *nodes)
{
    unsigned char *ua = sim_xcalloc((size_t)m->ngpus, 2, "the jobs' NICs"), *ub = ua + m->ngpus;
    inter_node_ranks(ja, m, ua);
    inter_node_ranks(jb, m, ub);
    size_t l = 0;
    out[0] = 0;
    *nodes = 0;
    for (int node = 0; node < m->nnodes; node++) {
        int in_a = 0, in_b = 0;
        for (int i = 0; i < ja->ngpus; i++)
            in_a |= m->node[ja->gpus[i]] == node;
        for (int i = 0; i < jb->ngpus; i++)
            in_b |= m->node[jb->gpus[i]] == node;
        *nodes += in_a && in_b;
        for (int nic = 0; nic < 64; nic++) {
            int a = 0, b = 0;
            for (int r = 0; r < m->ngpus; r++)
                if (m->node[r] == node && m->nic[r] == nic)
                    a |= ua[r], b |= ub[r];
            if (a && b && l < n)
                l += (size_t)snprintf(out + l, n - l, "%sn%d-nic%d", l ? ", " : "", node, nic);
        }
    }
    free(ua);
}

static void print_jobs_text(const sim_machine *m, const wl_job *jobs, int n, const sim_result *alone,
                            const sim_result *shared)
{
    printf("trainsim %s: %d jobs on %s (%d nodes, %d GPUs), sharing its links in one simulation\n",
           TRAINSIM_VERSION, n, m->name, m->nnodes, m->ngpus);
    printf("%-12s %5s %12s %12s %9s  %-24s %s\n", "job", "GPUs", "alone", "shared", "slowdown",
           "exposed comm (alone)", "model, strategy or schedule");
    for (int i = 0; i < n; i++) {
        job_figures fa = job_figures_of(&jobs[i], &alone[i]), fs = job_figures_of(&jobs[i], shared);
        char what[320];
        snprintf(what, sizeof what, "%s %s", jobs[i].model[0] ? jobs[i].model : "schedule",
                 jobs[i].model[0] ? jobs[i].strategy : jobs[i].schedule);
        char comm[64];
        snprintf(comm, sizeof comm, "%.4f s (%.4f s)", fs.exposed_comm_s, fa.exposed_comm_s);
        printf("%-12s %5d %10.4f s %10.4f s %8.3fx  %-24s %s\n", jobs[i].name, jobs[i].ngpus, fa.end_s, fs.end_s,
               fa.end_s > 0 ? fs.end_s / fa.end_s : 1, comm, what);
    }
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            char nics[1024];
            int nodes;
            shared_between(&jobs[i], &jobs[k], m, nics, sizeof nics, &nodes);
            if (nics[0] || nodes)
                printf("shared                %s and %s: %s%s%s%d node%s\n", jobs[i].name, jobs[k].name,
                       nics[0] ? "NICs " : "", nics, nics[0] ? "; " : "", nodes, nodes == 1 ? "" : "s");
        }
    printf("simulated             %llu operations in %.2f s wall (and each job alone)\n",
           (unsigned long long)shared->ops, shared->wall_s);
}

static void print_jobs_json(const sim_machine *m, const wl_job *jobs, int n, const sim_result *alone,
                            const sim_result *shared)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "trainsim_version", TRAINSIM_VERSION);
    cJSON_AddStringToObject(o, "platform", m->name);
    cJSON *arr = cJSON_AddArrayToObject(o, "jobs");
    for (int i = 0; i < n; i++) {
        job_figures fa = job_figures_of(&jobs[i], &alone[i]), fs = job_figures_of(&jobs[i], shared);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", jobs[i].name);
        cJSON_AddStringToObject(e, "model", jobs[i].model);
        cJSON_AddStringToObject(e, "strategy", jobs[i].strategy);
        cJSON_AddStringToObject(e, "schedule", jobs[i].schedule);
        cJSON_AddItemToObject(e, "gpus", cJSON_CreateIntArray(jobs[i].gpus, jobs[i].ngpus));
        add_num(e, "alone_iteration_time_s", fa.end_s);
        add_num(e, "shared_iteration_time_s", fs.end_s);
        add_num(e, "slowdown", fa.end_s > 0 ? fs.end_s / fa.end_s : 1);
        add_num(e, "alone_exposed_comm_s", fa.exposed_comm_s);
        add_num(e, "shared_exposed_comm_s", fs.exposed_comm_s);
        cJSON *sh = cJSON_AddArrayToObject(e, "shared_with");
        for (int k = 0; k < n; k++) {
            char nics[1024];
            int nodes;
            if (k == i)
                continue;
            shared_between(&jobs[i], &jobs[k], m, nics, sizeof nics, &nodes);
            if (!nics[0] && !nodes)
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "job", jobs[k].name);
            cJSON_AddStringToObject(x, "nics", nics);
            add_num(x, "nodes", nodes);
            cJSON_AddItemToArray(sh, x);
        }
        cJSON_AddItemToArray(arr, e);
    }
    add_num(o, "operations", (double)shared->ops);
    print_doc(o);
}

/* Each job alone (a child process each), then all of them together. */
static int cmd_jobs(const args *a, sim_machine *m)
{
    sim_err err = {{0}};
    wl_job *jobs = wl_jobs_load(a->jobs, a->njobs, m, &err);
    if (!jobs)
        return sim_machine_free(m), fail(err.msg);
    int n = a->njobs, rc = 0, ran = 0;
    sim_result *alone = sim_xcalloc((size_t)n, sizeof *alone, "the jobs' results"), shared;
    int *only = sim_xcalloc((size_t)n, sizeof *only, "the jobs' results");
    sim_options quiet = a->opt;
    quiet.trace_path = quiet.memory_path = NULL;
    for (; ran < n && rc == 0; ran++) {
        memset(only, 0, (size_t)n * sizeof *only);
        only[ran] = 1;
        sim_schedule *s = wl_jobs_schedule(jobs, n, only, m, &err);
        if (!s || sim_run_isolated(s, m, &quiet, &alone[ran], &err) < 0)
            rc = fail(err.msg), ran--;
        sim_sched_free(s);
    }
    sim_schedule *all = rc ? NULL : wl_jobs_schedule(jobs, n, NULL, m, &err);
    sim_options opt = a->opt;
    opt.memory_path = a->memory;
    unsigned char *mask = NULL;
    if (!rc && (!all || trace_options(a, all, &opt, &mask, &err) < 0 || (a->save_schedule && sim_sched_save(all, a->save_schedule, &err) < 0) ||
                sim_run(all, m, &opt, &shared, &err) < 0))
        rc = fail(err.msg);
    else if (!rc) {
        if (a->json)
            print_jobs_json(m, jobs, n, alone, &shared);
        else
            print_jobs_text(m, jobs, n, alone, &shared);
        sim_result_free(&shared);
    }
    for (int i = 0; i < ran; i++)
        sim_result_free(&alone[i]);
    free(mask);
    free(alone);
    free(only);
    sim_sched_free(all);
    wl_jobs_free(jobs, n);
    sim_machine_free(m);
    return rc;
}

/* sim_run, on the ranks sim/fold.c keeps where that is exact and asked for:
 * not with --exact, and not where every rank's own output is wanted (a
 * trace, the memory timeline, perturbed ranks or links, a recorded rank). */
static int reducible(const args *a)
{
    return !a->exact && !a->trace && !a->memory && !a->nslow && !a->ndegrade && !a->recorded;
}

/* sim_run_reduced where reducible, else sim_run on s (then whole: the
 * generator folds only a reducible run). */
static int run_reduced(args *a, const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_result *r,
                       sim_fold *pre, sim_regen_fn regen, void *ctx, sim_err *err)
{
    if (!reducible(a))
        return sim_run(s, m, opt, r, err);
    sim_reduced red;
    int rc = sim_run_reduced(s, m, opt, pre, regen, ctx, 0, 1, r, &red, err);
    a->reduced = red.ranks;
    a->reduced_tree_s = red.tree_s;
    return rc;
}

static int cmd_run(args *a, int only_schedule)
{
    sim_err err = {{0}};
    sim_machine *m = plat_load(a->platform, &err);
    if (!m)
        return fail(err.msg);
    a->platform_gpus = m->ngpus;
    if (sim_machine_first(m, a->gpus, &err) < 0)
        return sim_machine_free(m), report(2, "%s", err.msg);
    for (int i = 0; i < a->nslow; i++)
        if (sim_machine_slow(m, a->slow[i], &err) < 0)
            return sim_machine_free(m), report(2, "%s", err.msg);
    for (int i = 0; i < a->ndegrade; i++)
        if (sim_machine_degrade(m, a->degrade[i], &err) < 0)
            return sim_machine_free(m), report(2, "%s", err.msg);
    if ((a->nslow || a->ndegrade) && (only_schedule || a->compare))
        return sim_machine_free(m), report(2, "--slow and --degrade perturb one simulated run (trainsim run)");
    if (a->njobs) {
        if (only_schedule || a->compare || a->schedule || a->strategy || strcmp(a->model, DEFAULT_MODEL))
            return sim_machine_free(m),
                   report(2, "--job: each job file gives its model and strategy or schedule; --model, --strategy, "
                             "--schedule and --compare do not go with it");
        return cmd_jobs(a, m);
    }
    if (a->compare && !only_schedule)
        return cmd_compare(a, m);
    wl_model model;
    memset(&model, 0, sizeof model);
    wl_strategy st;
    char st_text[256] = "";
    /* a run that may be reduced gets only the kept ranks from the generator */
    sim_fold pre = {0};
    int gen_fold = !only_schedule && !a->save_schedule && !a->schedule && reducible(a);
    memset(&st, 0, sizeof st);
    sim_schedule *s = make_schedule(a, m, &model, &st, st_text, sizeof st_text, gen_fold ? &pre : NULL, &err);
    if (st.routing[0]) /* routed steps fold as a whole schedule (the generator's retries do not route) */
        gen_fold = 0;
    if (!s) {
        sim_machine_free(m);
        return fail(err.msg);
    }
    int rc = 0;
    const char *save = only_schedule ? a->output : a->save_schedule;
    if (only_schedule && !save) {
        rc = report(2, "schedule: give the output file with -o FILE");
    } else if (save && sim_sched_save(s, save, &err) < 0) {
        rc = fail(err.msg);
    } else if (!only_schedule) {
        sim_options opt = a->opt;
        opt.memory_path = a->memory;
        unsigned char *mask = NULL;
        char *recorded = NULL;
        sim_result r, base, *basep = NULL;
        if (trace_options(a, s, &opt, &mask, &err) < 0) {
            rc = report(2, "%s", err.msg);
        } else if ((rc = recorded_options(a, s, &opt, &recorded, &err)) < 0) {
            rc = rc == -1 ? report(2, "%s", err.msg) : fail(err.msg);
        } else if (progress_options(a, m, pre.sched ? pre.sched : s, st_text, &opt), 0) {
        } else if ((a->nslow || a->ndegrade) && unperturbed_run(s, m, &a->opt, &base, &err) < 0) {
            rc = fail(err.msg);
        } else if (basep = a->nslow || a->ndegrade ? &base : NULL, run_reduced(a, s, m, &opt, &r, gen_fold ? &pre : NULL, wl_gpt_regenerate,
                                   &(wl_gpt_regen_ctx){&model, &st, m}, &err) < 0) {
            progress_done(&opt);
            rc = fail(err.msg);
        } else {
            progress_done(&opt);
            if (a->json)
                print_json(m, a->platform_gpus, s, &r, basep, st_text, a->schedule ? NULL : &model, a->reduced, a->reduced_tree_s,
                           st.routing[0] ? st.routing : NULL);
            else
                print_text(a, m, s, &r, basep, st_text);
            sim_result_free(&r);
        }
        if (basep)
            sim_result_free(basep);
        free(mask);
        free(recorded);
    } else if (sim_sched_check(s, &err) < 0) {
        rc = fail(err.msg);
    }
    sim_fold_free(&pre);
    sim_sched_free(s);
    sim_machine_free(m);
    return rc;
}

static int cmd_check(const args *a)
{
    sim_err err = {{0}};
    if (!a->schedule)
        return report(2, "check: give a schedule file");
    sim_schedule *s = sim_sched_load(a->schedule, &err);
    if (!s || sim_sched_check(s, &err) < 0) {
        sim_sched_free(s);
        return fail(err.msg);
    }
    printf("%s: ok, %d ranks, %u streams, %u operations, %d communicators\n", a->schedule, s->nranks, s->nstreams,
           s->nops, s->ncomms);
    sim_sched_free(s);
    return 0;
}

static int cmd_platform(const args *a)
{
    sim_err err = {{0}};
    sim_machine *m = plat_load(a->platform, &err);
    if (!m)
        return fail(err.msg);
    int rc = 0;
    if (a->output)
        rc = sim_out_write(a->output, m->platform_xml, strlen(m->platform_xml), &err) < 0 ? fail(err.msg) : 0;
    else
        fputs(m->platform_xml, stdout);
    sim_machine_free(m);
    return rc;
}

/* trainsim list: the built-in clusters, the catalogue and the models, as
 * text or (--json) one document. */
static int cmd_list(const args *a)
{
    cJSON *doc = plat_catalogue_doc(), *models = cJSON_AddArrayToObject(doc, "models");
    for (int i = 0; sim_embedded_path(i); i++) {
        const char *p = sim_embedded_path(i);
        const char *dir = "workloads/models/";
        size_t len = strlen(p);
        if (strncmp(p, dir, strlen(dir)) != 0 || len < strlen(dir) + 5)
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(len - strlen(dir) - 5), p + strlen(dir));
        wl_model m;
        sim_err err;
        if (wl_model_load(name, &m, &err) != 0)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddNumberToObject(o, "hidden", m.hidden);
        cJSON_AddNumberToObject(o, "layers", m.layers);
        cJSON_AddNumberToObject(o, "heads", m.heads);
        cJSON_AddNumberToObject(o, "kv_heads", wl_model_kv_heads(&m));
        cJSON_AddNumberToObject(o, "ffn", m.ffn);
        cJSON_AddStringToObject(o, "ffn_type", wl_ffn_type_name(m.ffn_type));
        cJSON_AddNumberToObject(o, "seq", m.seq);
        cJSON_AddNumberToObject(o, "vocab", m.vocab);
        cJSON_AddNumberToObject(o, "parameters", (double)wl_moe_total_params(name, &m));
        if (m.moe)
            cJSON_AddNumberToObject(o, "active_parameters", (double)wl_moe_active_params(name, &m));
        cJSON_AddItemToArray(models, o);
    }
    if (a->json) {
        print_doc(doc);
        return 0;
    }
    const cJSON *e;
#define S(o, k) cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k))
#define N(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    printf("Built-in clusters (trainsim --platform NAME):\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "clusters"))
        printf("  %-22s %4d x %-16s %s\n", S(e, "name"), (int)N(e, "gpus"), S(e, "gpu"), S(e, "description"));
    printf("\nGPUs (dense TFLOP/s fp32/tf32/fp16/bf16/fp8, memory, bandwidth, PCIe, P2P, NVLink, power, price, and where\n"
           "its GEMM costs come from: calibrated on measurements, like a measured card, or the catalogue's priors):\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "gpus"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "dense_tflops");
        printf("  %-16s %6.1f %6.1f %6.1f %6.1f %7.1f  %3.0f GB %6.0f GB/s  gen%d %-3s %-8s %4.0f W  $%-6.0f %s\n",
               S(e, "model"), N(t, "fp32"), N(t, "tf32"), N(t, "fp16"), N(t, "bf16"), N(t, "fp8"), N(e, "memory_GB"),
               N(e, "memory_GBps"), (int)N(e, "pcie_gen"), cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "p2p")) ? "yes" : "no",
               S(e, "nvlink"), N(e, "power_W"), N(e, "price_USD"), S(e, "gemm_curve"));
    }
    printf("\nNICs:\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "nics"))
        printf("  %-8s %4.0f Gb/s  %4.1f us  %s\n", S(e, "model"), N(e, "Gbps"), N(e, "latency_us"), S(e, "kind"));
    printf("\nModels (trainsim --model NAME):\n");
    cJSON_ArrayForEach(e, models)
    {
        char active[48] = "";
        if (cJSON_GetObjectItemCaseSensitive(e, "active_parameters"))
            snprintf(active, sizeof active, " (%.2fB active)", N(e, "active_parameters") / 1e9);
        printf("  %-14s hidden %5d, %3d layers, %3d heads (%3d K/V), ffn %6d %-6s, seq %5d, vocab %6d, %.2fB "
               "parameters%s\n", S(e, "name"), (int)N(e, "hidden"), (int)N(e, "layers"), (int)N(e, "heads"),
               (int)N(e, "kv_heads"), (int)N(e, "ffn"), S(e, "ffn_type"), (int)N(e, "seq"), (int)N(e, "vocab"),
               N(e, "parameters") / 1e9, active);
    }
#undef S
#undef N
    cJSON_Delete(doc);
    return 0;
}

static int dispatch(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "validate"))
        return val_cli_main(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "moe"))
        return wl_moe_cli_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "reshard"))
        return wl_reshard_cli_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "calibrate"))
        return val_fit_cli_main(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "plan"))
        return plan_cli_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "compare"))
        return plan_compare_cli_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "import"))
        return wl_import_cli_main(argc - 1, argv + 1);
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc; /* -1: --help or --version done */
    if (!strcmp(a.cmd, "run"))
        return cmd_run(&a, 0);
    if (!strcmp(a.cmd, "schedule"))
        return cmd_run(&a, 1);
    if (!strcmp(a.cmd, "check"))
        return cmd_check(&a);
    if (!strcmp(a.cmd, "platform"))
        return cmd_platform(&a);
    if (!strcmp(a.cmd, "list"))
        return cmd_list(&a);
    if (!json_errors)
        usage(stderr);
    return report(2, "unknown command \"%s\"", a.cmd);
}

/* Exit codes: 0 success; 1 a failure (bad input, an impossible strategy, a
 * failed simulation, an output that could not be written, stdout
 * included); 2 a usage error. */
int main(int argc, char **argv)
{
    sim_tmp_install_handlers();
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--json"))
            sim_err_json(1);
    sim_alloc_set_handler(oom);
    sim_json_init();
    int rc = dispatch(argc, argv);
    sim_err err = {{0}};
    if (sim_out_check_stdout(&err) < 0 && rc == 0)
        rc = fail(err.msg);
    return rc;
}
