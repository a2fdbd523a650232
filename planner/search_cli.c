/* search_cli.c — prints what `trainsim plan --search` found (search.c
 * returns structs): a table of the candidates, the plan as the `trainsim
 * run` command that simulates it, and the fragments it took; or the same
 * as JSON written with cJSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "planner/search.h"
#include "sim/json.h"

static double thr(const search_row *w) { return w->batch / w->est_s; }

/* "--gpus N " when the search ran on the first N GPUs of the platform. */
static void gpus_arg(const plan_ctx *ctx, char *buf, size_t n)
{
    buf[0] = 0;
    if (ctx->platform_gpus && ctx->mach->ngpus != ctx->platform_gpus)
        snprintf(buf, n, "--gpus %d ", ctx->mach->ngpus);
}

static void print_json(const plan_ctx *ctx, const search_opts *o, const search_result *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "algorithm", r->algo);
    cJSON_AddStringToObject(root, "platform", ctx->platform_spec ? ctx->platform_spec : ctx->mach->name);
    cJSON_AddStringToObject(root, "model", ctx->model_spec ? ctx->model_spec : ctx->model.name);
    cJSON_AddNumberToObject(root, "gpus", r->gpus);
    cJSON_AddNumberToObject(root, "layers", r->layers);
    cJSON_AddBoolToObject(root, "layers_changed", o->layers && o->layers != ctx->model.layers);
    cJSON_AddNumberToObject(root, "memory_budget_bytes", r->budget);
    if (!strcmp(r->algo, "galvatron"))
        cJSON_AddStringToObject(root, "pipeline", o->one_f_one_b ? "1f1b" : "gpipe");
    cJSON *rows = cJSON_AddArrayToObject(root, "plans");
    for (int i = 0; i < r->nrows; i++) {
        const search_row *w = &r->rows[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "label", w->label);
        cJSON_AddBoolToObject(j, "ok", w->ok);
        if (w->ok) {
            cJSON_AddStringToObject(j, "strategy", w->strategy);
            cJSON_AddNumberToObject(j, "batch", w->batch);
            cJSON_AddNumberToObject(j, "micro_batches", w->micro);
            cJSON_AddNumberToObject(j, "estimated_s", w->est_s);
            cJSON_AddNumberToObject(j, "estimated_samples_per_s", thr(w));
            cJSON_AddNumberToObject(j, "peak_memory_bytes", w->peak_bytes);
            cJSON_AddNumberToObject(j, "sharded_layers", w->sharded);
        } else {
            cJSON_AddStringToObject(j, "why", w->why);
        }
        cJSON_AddBoolToObject(j, "best", i == r->best);
        cJSON_AddItemToArray(rows, j);
    }
    if (r->best >= 0) {
        cJSON_AddStringToObject(root, "strategy", r->rows[r->best].strategy);
        cJSON_AddNumberToObject(root, "estimated_s", r->rows[r->best].est_s);
        cJSON_AddNumberToObject(root, "peak_memory_bytes", r->rows[r->best].peak_bytes);
    }
    cJSON *notes = cJSON_AddArrayToObject(root, "pruned");
    for (int i = 0; i < r->nnotes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes[i]));
    cJSON_AddNumberToObject(root, "fragments", r->fragments);
    cJSON_AddNumberToObject(root, "fragment_simulations", r->sims);
    cJSON_AddNumberToObject(root, "memory_replays", r->checks);
    sim_json_print(stdout, root);
}

static void print_text(const plan_ctx *ctx, const search_opts *o, const search_result *r)
{
    printf("%s search on %s: %s, %d GPUs, %d layers, memory budget %.2f GB per GPU\n", r->algo, ctx->mach->name,
           ctx->model.name, r->gpus, r->layers, r->budget / 1e9);
    printf("estimate       fragments of the workload generator (1 and 2 layers per stage), simulated; peak memory\n"
           "               from the generator's memory replay of the whole plan\n\n");
    printf("%-30s %6s %4s %10s %11s %8s  %s\n", "candidate", "batch", "m", "est s", "est samp/s", "peak GB",
           "strategy (trainsim run --strategy)");
    for (int i = 0; i < r->nrows; i++) {
        const search_row *w = &r->rows[i];
        if (!w->ok) {
            printf("%-30s %6s %4s  nothing fits: %s\n", w->label, "-", "-", w->why);
            continue;
        }
        printf("%-30s %6d %4d %10.6f %11.3f %8.2f  %s%s\n", w->label, w->batch, w->micro, w->est_s, thr(w),
               w->peak_bytes / 1e9, w->strategy, i == r->best ? "  <- best" : "");
    }
    for (int i = 0; i < r->nnotes; i++)
        printf("pruned         %s\n", r->notes[i]);
    if (r->best >= 0) {
        const search_row *b = &r->rows[r->best];
        char ga[32];
        gpus_arg(ctx, ga, sizeof ga);
        printf("best           %s\n", b->strategy);
        printf("               %.3f samples/s estimated (%.6f s per iteration), peak %.2f GB\n", thr(b), b->est_s,
               b->peak_bytes / 1e9);
        printf("run it         trainsim run --platform %s %s--model %s --strategy \"%s\"\n",
               ctx->platform_spec ? ctx->platform_spec : ctx->mach->name, ga,
               ctx->model_spec ? ctx->model_spec : ctx->model.name, b->strategy);
        if (o->layers && o->layers != ctx->model.layers)
            printf("               (on the model with %d layers instead of %d: --layers)\n", o->layers,
                   ctx->model.layers);
    }
    printf("simulations    %d fragments (%d simulations), %d memory replays\n", r->fragments, r->sims, r->checks);
}

void search_print(const plan_ctx *ctx, const search_opts *o, const search_result *r, int json)
{
    if (json)
        print_json(ctx, o, r);
    else
        print_text(ctx, o, r);
    /* the wall time on stderr: stdout stays byte-identical between runs */
    fprintf(stderr, "trainsim plan: --search %s in %.2f s\n", r->algo, r->wall_s);
}
