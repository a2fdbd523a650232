/* cli.c — the `trainsim` command: the one place that prints and exits.
 *
 *   trainsim [run] [--platform P] [--model M] [--strategy S] [--schedule F]
 *                  [--json] [--trace F] [--memory F] [--save-schedule F] [--collectives MODE]
 *                  [--max-channels N]
 *                  [--compare KEY=v1,v2,...]
 *   trainsim schedule [--platform P] [--model M] [--strategy S] -o F
 *   trainsim check F
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

#include "planner/plan.h"
#include "planner/purchase.h"
#include "platforms/platform.h"
#include "sim/alloc.h"
#include "sim/embedded.h"
#include "sim/engine.h"
#include "sim/json.h"
#include "sim/outfile.h"
#include "sim/schedule.h"
#include "validation/fit.h"
#include "validation/val_cli.h"
#include "workloads/compare.h"
#include "workloads/gpt.h"
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
} args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim [run] [options]        simulate one training iteration (default scenario without options)\n"
            "       trainsim schedule [options] -o FILE   write the generated schedule as JSON\n"
            "       trainsim check FILE             check a schedule file\n"
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
            "  --json            print the results as JSON\n"
            "  --trace F         write a Chrome trace (open it in https://ui.perfetto.dev)\n"
            "  --memory F        write the per-GPU memory timeline as CSV (one line per memory effect)\n"
            "  --compare K=v1,v2 run the job once per value of strategy key K, side by side\n"
            "                    (e.g. pipeline=1f1b,gpipe,eager or zero=0,1,2,3; a value may set other keys\n"
            "                    for its run after '+': schedule=megatron,oases+recompute=oases);\n"
            "                    platform=A,B: the same job on several clusters (trainsim compare --help)\n"
            "  --save-schedule F also write the simulated schedule as JSON\n"
            "  --collectives M   auto (default: step by step for rings of up to 4 GPUs), step, aggregated\n"
            "  --max-channels N  at most N channels per collective, as NCCL_MAX_NCHANNELS (default: one\n"
            "                    per NIC the members of a node reach; two ways inside a bridged node)\n"
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
                                   char *st_text, size_t st_len, sim_err *err)
{
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
    wl_strategy given = *st; /* dp and gb on auto filled in (tp*pp*cp*dp = GPUs) */
    if (wl_gpt_resolve(model, &given, m, st, err))
        return NULL;
    wl_strategy_format(st, st_text, (int)st_len);
    return wl_gpt_generate(model, st, m, err);
}

static const char *gb(double bytes, char *buf, size_t n)
{
    snprintf(buf, n, "%.2f GB", bytes / 1e9);
    return buf;
}

static void print_text(const args *a, const sim_machine *m, const sim_schedule *s, const sim_result *r,
                       const char *strategy)
{
    const sim_gpu *g = sim_machine_gpu(m, 0);
    double T = r->iteration_s, pct = T > 0 ? 100 / T : 0; /* an iteration of no time has no rates */
    double samples = s->meta.samples_per_iteration, tokens = s->meta.tokens_per_iteration;
    double tflops = T > 0 ? s->meta.model_flops_per_iteration / T / s->nranks / 1e12 : 0;
    double peak = g->peak_flops[s->meta.dtype] / 1e12;
    char b1[32], b2[32];
    printf("trainsim %s: %s on %s (%d nodes, %d x %s)\n", TRAINSIM_VERSION,
           s->meta.name[0] ? s->meta.name : a->schedule, m->name, m->nnodes, s->nranks, g->model);
    if (strategy[0])
        printf("strategy              %s\n", strategy);
    printf("iteration time        %.4f s\n", T);
    if (samples > 0 && T > 0)
        printf("throughput            %.2f samples/s, %.0f tokens/s\n", samples / T, tokens / T);
    if (s->meta.model_flops_per_iteration > 0 && T > 0)
        printf("model TFLOP/s per GPU %.2f   MFU %.1f %% of %.1f TFLOP/s (%s peak)\n", tflops,
               peak > 0 ? 100 * tflops / peak : 0, peak, sim_dtype_name((sim_dtype)s->meta.dtype));
    printf("time per GPU (mean)   compute %.4f s (%.1f %%), exposed communication %.4f s (%.1f %%), bubble/idle %.4f s (%.1f %%)\n",
           r->compute_s, pct * r->compute_s, r->exposed_comm_s, pct * r->exposed_comm_s, r->idle_s, pct * r->idle_s);
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
    if (a->trace)
        printf("trace                 %s (open in https://ui.perfetto.dev)\n", a->trace);
}

/* A number, or null where it is undefined (rates of an iteration that
 * takes no time): JSON has no NaN. */
static void add_num(cJSON *o, const char *key, double v)
{
    cJSON_AddItemToObject(o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

static void print_json(const sim_machine *m, const sim_schedule *s, const sim_result *r, const char *strategy,
                       const wl_model *wm)
{
    const char *model = wm ? wm->name : "";
    const sim_gpu *g = sim_machine_gpu(m, 0);
    double T = r->iteration_s;
    double rate = T > 0 ? 1 / T : NAN;
    double tflops = s->meta.model_flops_per_iteration * rate / s->nranks / 1e12;
    double peak = g->peak_flops[s->meta.dtype] / 1e12;
    const sim_rank_result *pr = &r->rank[r->peak_mem_rank];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "trainsim_version", TRAINSIM_VERSION);
    cJSON_AddStringToObject(o, "platform", m->name);
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "strategy", strategy);
    cJSON *info = wm ? wl_model_describe(wm) : NULL;
    if (info) /* the model's dimensions, architecture and parameter count */
        cJSON_AddItemToObject(o, "model_info", info);
    cJSON_AddStringToObject(o, "schedule", s->meta.name);
    add_num(o, "gpus", s->nranks);
    cJSON_AddStringToObject(o, "gpu_model", g->model);
    add_num(o, "iteration_time_s", T);
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
        cJSON_AddItemToArray(per, e);
    }
    add_num(o, "operations", (double)r->ops);
    add_num(o, "flows", (double)r->flows);
    char *t = cJSON_Print(o);
    if (t)
        puts(t);
    free(t);
    cJSON_Delete(o);
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

static int cmd_run(const args *a, int only_schedule)
{
    sim_err err = {{0}};
    sim_machine *m = plat_load(a->platform, &err);
    if (!m)
        return fail(err.msg);
    if (a->compare && !only_schedule)
        return cmd_compare(a, m);
    wl_model model;
    memset(&model, 0, sizeof model);
    wl_strategy st;
    char st_text[256] = "";
    sim_schedule *s = make_schedule(a, m, &model, &st, st_text, sizeof st_text, &err);
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
        opt.trace_path = a->trace;
        opt.memory_path = a->memory;
        sim_result r;
        if (sim_run(s, m, &opt, &r, &err) < 0) {
            rc = fail(err.msg);
        } else {
            if (a->json)
                print_json(m, s, &r, st_text, a->schedule ? NULL : &model);
            else
                print_text(a, m, s, &r, st_text);
            sim_result_free(&r);
        }
    } else if (sim_sched_check(s, &err) < 0) {
        rc = fail(err.msg);
    }
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

static void print_models(void)
{
    printf("\nModels (trainsim --model NAME):\n");
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
        char active[48] = "";
        if (m.moe)
            snprintf(active, sizeof active, " (%.2fB active)", wl_moe_active_params(name, &m) / 1e9);
        printf("  %-14s hidden %5d, %3d layers, %3d heads (%3d K/V), ffn %6d %-6s, seq %5d, vocab %6d, %.2fB "
               "parameters%s\n", name, m.hidden, m.layers, m.heads, wl_model_kv_heads(&m), m.ffn,
               wl_ffn_type_name(m.ffn_type), m.seq, m.vocab, wl_moe_total_params(name, &m) / 1e9, active);
    }
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
    if (!strcmp(a.cmd, "list")) {
        plat_print_catalogue(stdout);
        print_models();
        return 0;
    }
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
    int rc = dispatch(argc, argv);
    sim_err err = {{0}};
    if (sim_out_check_stdout(&err) < 0 && rc == 0)
        rc = fail(err.msg);
    return rc;
}
