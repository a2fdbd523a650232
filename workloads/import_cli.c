/* import_cli.c — `trainsim import kineto TRACE... -o FILE [--step N] [--reprice GPU] [--et ET]...`:
 * the front end of import.c (the one place of the importer that prints).
 * It writes the schedule and a line per rank saying what was imported, so a
 * user sees which rank each trace became and where the step's time went. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "platforms/catalog.h"
#include "platforms/platform.h"
#include "sim/json.h"
#include "sim/alloc.h"

#define PROG "trainsim import"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim import kineto TRACE.json[.gz]... -o FILE [--step N] [--reprice GPU|CLUSTER]\n"
            "                              [--et ET.json[.gz]]... [--json]\n"
            "  one PyTorch-profiler (Kineto) trace per rank -> a schedule (trainsim run --schedule FILE)\n"
            "  ranks come from each trace's distributedInfo, else from the argument order\n"
            "  --step N      import ProfilerStep#N (default: each trace's last step; the whole trace without markers)\n"
            "  --reprice G   price GEMMs and element-wise kernels with known shapes on GPU G (a catalogue model, or\n"
            "                the GPU of a cluster) and scale the other kernels' recorded times by the GPUs' ratio\n"
            "                (peak FLOP/s for GEMM/convolution kernels, memory bandwidth for the rest);\n"
            "                without it every kernel keeps its recorded duration\n"
            "  --et ET       each trace's PyTorch execution trace (ExecutionTraceObserver JSON), one --et per trace\n"
            "                in the traces' order: joined to it (rf_id / op order), it gives kernels the shapes,\n"
            "                all-to-all splits, process groups and send/recv peers the trace lacks\n"
            "  --json        print the summary as JSON\n");
}

/* The target GPU: a catalogue model, or the first GPU of a cluster. */
static int target_gpu(const char *name, sim_gpu *g, sim_err *err)
{
    sim_err e1 = {{0}};
    if (plat_gpu_lookup_info(name, g, NULL, &e1) == 0)
        return 0;
    sim_machine *m = plat_load(name, err);
    if (!m)
        return sim_errf(err, "--reprice %s: neither a catalogue GPU (%s) nor a cluster", name, e1.msg);
    *g = m->gpus[m->gpu_model[0]];
    sim_machine_free(m);
    return 0;
}

static void print_text(const wl_import_info *in, const sim_schedule *s, const char *out, const char *target)
{
    printf("%s: %d rank%s (ranks from %s), %u streams, %u operations%s%s\n", out, in->nranks, in->nranks == 1 ? "" : "s",
           in->rank_from_trace ? "each trace's distributedInfo" : "the argument order", s->nstreams, s->nops,
           target ? ", repriced for " : "", target ? target : "");
    printf("clock      %s\n", in->shared_clock ? "shared (the steps overlap): each rank starts at its recorded offset"
                                                : "each trace's own: every rank starts at 0");
    printf("waits      cross-stream dependencies, r: from the trace's cuda_sync records, i: inferred from "
           "cudaStreamWaitEvent / synchronisations and the timeline\n");
    printf("rank  step              step ms  start ms  kernels copies colls waits delays (ms)  repriced scaled  trace\n");
    for (int r = 0; r < in->nranks; r++) {
        const wl_import_rank *x = &in->rank[r];
        printf("%4d  %-16s %8.3f  %8.3f  %7d %6d %5d %4d%c %6d (%.3f) %8d %6d  %s\n", r, x->step[0] ? x->step : "(whole)",
               x->step_s * 1e3, x->offset_s * 1e3, x->kernels, x->copies, x->collectives, x->waits,
               x->waits_recorded ? 'r' : 'i', x->delays, x->delay_s * 1e3,
               x->repriced, x->scaled, x->path);
    }
    int et = 0, p2p = 0;
    for (int r = 0; r < in->nranks; r++)
        et += in->rank[r].et != NULL, p2p += in->rank[r].p2p;
    if (p2p)
        printf("p2p        %d point-to-point sends and receives (SendRecv kernels with a known peer)\n", p2p);
    if (!et)
        return;
    printf("execution traces joined (linked: host ops joined to ET nodes; shapes: kernels that gained a GEMM shape or "
           "element-wise bytes; splits: all-to-alls that gained per-member sizes; groups: collectives whose process "
           "group the ET recorded; peers: sends/receives whose peer the ET gave; deps: cross-stream dependencies "
           "added from the ET's data flow, beside the waits above)\n");
    printf("rank  join      linked shapes splits groups peers  deps  p2p  execution trace\n");
    for (int r = 0; r < in->nranks; r++) {
        const wl_import_rank *x = &in->rank[r];
        const wl_et_stats *j = &x->et_join;
        if (x->et)
            printf("%4d  %-8s %7d %6d %6d %6d %5d %5d %4d  %s\n", r, j->by_rf_id ? "rf_id" : "op order", j->linked,
                   j->shapes, j->splits, j->groups, j->peers, j->deps, x->p2p, x->et);
    }
}

static void print_json(const wl_import_info *in, const sim_schedule *s, const char *out, const char *target)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schedule", out);
    cJSON_AddNumberToObject(j, "ranks", in->nranks);
    cJSON_AddStringToObject(j, "ranks_from", in->rank_from_trace ? "distributedInfo" : "argument order");
    cJSON_AddBoolToObject(j, "shared_clock", in->shared_clock);
    cJSON_AddNumberToObject(j, "operations", s->nops);
    if (target)
        cJSON_AddStringToObject(j, "repriced_for", target);
    cJSON *a = cJSON_AddArrayToObject(j, "rank");
    for (int r = 0; r < in->nranks; r++) {
        const wl_import_rank *x = &in->rank[r];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "trace", x->path);
        cJSON_AddStringToObject(o, "device", x->device);
        cJSON_AddStringToObject(o, "step", x->step);
        cJSON_AddNumberToObject(o, "step_s", x->step_s);
        cJSON_AddNumberToObject(o, "offset_s", x->offset_s);
        cJSON_AddNumberToObject(o, "kernels", x->kernels);
        cJSON_AddNumberToObject(o, "copies", x->copies);
        cJSON_AddNumberToObject(o, "collectives", x->collectives);
        cJSON_AddNumberToObject(o, "waits", x->waits);
        cJSON_AddStringToObject(o, "waits_from", x->waits_recorded ? "cuda_sync records" : "inferred");
        cJSON_AddNumberToObject(o, "delays", x->delays);
        cJSON_AddNumberToObject(o, "delay_s", x->delay_s);
        cJSON_AddNumberToObject(o, "repriced", x->repriced);
        cJSON_AddNumberToObject(o, "scaled", x->scaled);
        cJSON_AddNumberToObject(o, "p2p", x->p2p);
        if (x->et) {
            cJSON *e = cJSON_AddObjectToObject(o, "et");
            cJSON_AddStringToObject(e, "path", x->et);
            cJSON_AddStringToObject(e, "joined_by", x->et_join.by_rf_id ? "rf_id" : "op order");
            cJSON_AddNumberToObject(e, "linked", x->et_join.linked);
            cJSON_AddNumberToObject(e, "shapes", x->et_join.shapes);
            cJSON_AddNumberToObject(e, "splits", x->et_join.splits);
            cJSON_AddNumberToObject(e, "groups", x->et_join.groups);
            cJSON_AddNumberToObject(e, "peers", x->et_join.peers);
            cJSON_AddNumberToObject(e, "deps", x->et_join.deps);
        }
        cJSON_AddItemToArray(a, o);
    }
    sim_json_print(stdout, j);
}

/* argv[0] is "import". */
int wl_import_cli_main(int argc, char **argv)
{
    const char *out = NULL, *reprice = NULL;
    int json = 0, step = -1, n = 0, nets = 0;
    const char **paths = sim_xcalloc((size_t)argc + 1, sizeof *paths, "the trace list");
    const char **ets = sim_xcalloc((size_t)argc + 1, sizeof *ets, "the execution traces");
    int rc = 0;
    if (argc < 2 || strcmp(argv[1], "kineto")) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            usage(stdout);
            free(paths), free(ets);
            return 0;
        }
        usage(stderr);
        free(paths), free(ets);
        return sim_err_print(PROG, 2, "give the trace format: trainsim import kineto TRACE...");
    }
    for (int i = 2; i < argc && !rc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            free(paths), free(ets);
            return 0;
        } else if (!strcmp(o, "--json")) {
            json = 1;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--step") || !strcmp(o, "--reprice") || !strcmp(o, "--et")) {
            if (i + 1 >= argc) {
                rc = sim_err_print(PROG, 2, "%s needs a value", o);
                break;
            }
            const char *v = argv[++i];
            char *end;
            if (!strcmp(o, "-o"))
                out = v;
            else if (!strcmp(o, "--et"))
                ets[nets++] = v;
            else if (!strcmp(o, "--reprice"))
                reprice = v;
            else if ((step = (int)strtol(v, &end, 10)) < 0 || *end || end == v)
                rc = sim_err_print(PROG, 2, "--step %s: expected a step number N >= 0 (ProfilerStep#N)", v);
        } else if (o[0] == '-' && o[1]) {
            rc = sim_err_print(PROG, 2, "unknown option \"%s\" (see trainsim import --help)", o);
        } else {
            paths[n++] = o;
        }
    }
    if (!rc && !n)
        rc = sim_err_print(PROG, 2, "give at least one trace (one per rank)");
    if (!rc && nets && nets != n)
        rc = sim_err_print(PROG, 2, "%d execution trace%s (--et) for %d trace%s: give one --et per trace, in the "
                           "traces' order", nets, nets == 1 ? "" : "s", n, n == 1 ? "" : "s");
    if (!rc && !out)
        rc = sim_err_print(PROG, 2, "give the output schedule with -o FILE");
    sim_err err = {{0}};
    sim_gpu target;
    if (!rc && reprice && target_gpu(reprice, &target, &err) < 0)
        rc = sim_err_print(PROG, 1, "%s", err.msg);
    if (!rc) {
        wl_import_opts opt = {step, reprice ? &target : NULL, nets ? ets : NULL};
        wl_import_info info;
        sim_schedule *s = wl_import_kineto(paths, n, &opt, &info, &err);
        if (!s || sim_sched_save(s, out, &err) < 0) {
            rc = sim_err_print(PROG, 1, "%s", err.msg);
        } else if (json) {
            print_json(&info, s, out, reprice ? target.model : NULL);
        } else {
            print_text(&info, s, out, reprice ? target.model : NULL);
        }
        sim_sched_free(s);
        wl_import_info_free(&info);
    }
    free(paths);
    free(ets);
    return rc;
}
