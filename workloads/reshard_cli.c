/* reshard_cli.c — `trainsim reshard`: parses the arguments, measures each
 * resharding implementation with the library (reshard.c: wl_reshard_time,
 * wl_reshard_pipeline_time) and prints a table as the cases finish, or one
 * JSON document (cJSON) at the end. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "sim/error.h"
#include "workloads/reshard.h"

/* The end of either report: the JSON document (doc, or NULL for the
 * table) when all went well, else the error; returns the exit status. */
static int finish(cJSON *doc, int rc, const sim_err *err)
{
    char *text = doc && !rc ? cJSON_Print(doc) : NULL;
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(doc);
    if (rc)
        sim_err_print("trainsim reshard", 1, "%s", err->msg);
    return rc;
}

int wl_reshard_cli_main(int argc, char **argv)
{
    const char *platform = "p3.8xlarge-5n";
    int json = 0, pipe = 0;
    wl_xmesh_pipe xp = {4, 8, 0.05, 8192, 4096, 2};
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--pipeline"))
            pipe = 1;
        else if (!strcmp(argv[i], "--stages") && i + 1 < argc) {
            xp.stages = (int)strtol(argv[++i], &end, 10);
            if (*end || xp.stages < 2)
                return sim_err_print("trainsim reshard", 2, "--stages: expected an integer >= 2");
        } else if (!strcmp(argv[i], "--micro") && i + 1 < argc) {
            xp.micro = (int)strtol(argv[++i], &end, 10);
            if (*end || xp.micro < 1)
                return sim_err_print("trainsim reshard", 2, "--micro: expected a positive integer");
        } else if (!strcmp(argv[i], "--forward-ms") && i + 1 < argc) {
            xp.fwd_s = strtod(argv[++i], &end) / 1e3;
            if (*end || !(xp.fwd_s > 0))
                return sim_err_print("trainsim reshard", 2, "--forward-ms: expected a positive number");
        }
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc)
            platform = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: trainsim reshard [--platform P] [--json]\n"
                   "       trainsim reshard --pipeline [--platform P] [--stages S] [--micro M] [--forward-ms X] [--json]\n"
                   "  cross-mesh resharding microbenchmarks of AlpaComm (docs/papers.md §6.3): 1 GiB one-to-many and\n"
                   "  2 GiB many-to-many, each implementation's simulated time (default platform p3.8xlarge-5n);\n"
                   "  --pipeline: S stages on one node each, alternately batch-sharded and replicated, 64 MiB fp16\n"
                   "  activations per micro-batch (default 4 stages, 8 micro-batches, forward 50 ms, backward twice),\n"
                   "  under 1F1B and Alpa's eager 1F1B, for each implementation\n");
            return 0;
        } else {
            sim_err_print("trainsim reshard", 2, "unknown option \"%s\" (see trainsim reshard --help)", argv[i]);
            return 2;
        }
    }
    sim_err err = {{0}};
    sim_machine *m = plat_load(platform, &err);
    if (!m) {
        sim_err_print("trainsim reshard", 1, "%s", err.msg);
        return 1;
    }
    if (pipe) {
        int rc = 0;
        if (xp.stages > m->nnodes) {
            sim_err_print("trainsim reshard --pipeline", 1, "%d stages need %d nodes (one per stage); %s has %d",
                          xp.stages, xp.stages, m->name, m->nnodes);
            sim_machine_free(m);
            return 1;
        }
        cJSON *doc = NULL, *times = NULL;
        if (json) {
            doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "platform", m->name);
            cJSON_AddNumberToObject(doc, "stages", xp.stages);
            cJSON_AddNumberToObject(doc, "micro", xp.micro);
            cJSON_AddNumberToObject(doc, "forward_s", xp.fwd_s);
            cJSON_AddNumberToObject(doc, "activation_bytes", (double)(xp.rows * xp.cols * xp.elem_bytes));
            times = cJSON_AddObjectToObject(doc, "time_s");
        } else
            printf("trainsim reshard: %d-stage pipeline on %s, one node per stage, outputs alternately batch-sharded and "
                   "replicated\n%.0f MiB activations per micro-batch, %d micro-batches, forward %.1f ms, backward %.1f ms "
                   "(simulated seconds per iteration)\n\n%-20s %12s %12s %12s\n",
                   xp.stages, m->name, xp.rows * xp.cols * xp.elem_bytes / 1048576.0, xp.micro, xp.fwd_s * 1e3,
                   2 * xp.fwd_s * 1e3, "implementation", "1f1b", "eager", "eager gain");
        for (int k = 0; k < WL_RS_IMPL_COUNT && !rc; k++) {
            double t1 = wl_reshard_pipeline_time(m, &xp, WL_PIPE_1F1B, (wl_rs_impl)k, &err);
            double te = t1 < 0 ? -1 : wl_reshard_pipeline_time(m, &xp, WL_PIPE_EAGER, (wl_rs_impl)k, &err);
            if (te < 0) {
                rc = 1;
                break;
            }
            if (json) {
                cJSON *x = cJSON_AddObjectToObject(times, wl_rs_impl_name(k));
                cJSON_AddNumberToObject(x, "1f1b", t1);
                cJSON_AddNumberToObject(x, "eager", te);
            } else
                printf("%-20s %12.4f %12.4f %10.1f %%\n", wl_rs_impl_name(k), t1, te, 100 * (t1 - te) / t1);
        }
        sim_machine_free(m);
        return finish(doc, rc, &err);
    }
    wl_reshard_case *cases;
    int nc = wl_reshard_suite(&cases), rc = 0;
    cJSON *doc = NULL, *jcases = NULL;
    if (json) {
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "platform", m->name);
        jcases = cJSON_AddArrayToObject(doc, "cases");
    } else
        printf("trainsim reshard: cross-mesh resharding on %s (simulated seconds)\n", m->name);
    for (int i = 0; i < nc && !rc; i++) {
        const wl_reshard_case *c = &cases[i];
        int one = c->ndims == 1;
        if (!json && (i == 0 || (!one && cases[i - 1].ndims == 1))) {
            printf("\n%s\n%-12s %-10s", one ? "1 GiB from one GPU to a (nodes, GPUs) mesh" :
                   "2 GiB between meshes (Alpa suite.py cases)", "case", "tasks");
            for (int k = 0; k < (one ? 3 : WL_RS_IMPL_COUNT); k++)
                printf(" %20s", wl_rs_impl_name(k));
            printf("\n");
        }
        wl_rs_tasks T;
        if (wl_reshard_tasks(c, m, &T, &err) < 0) {
            rc = 1;
            break;
        }
        cJSON *jt = NULL;
        if (json) {
            cJSON *jc = cJSON_CreateObject();
            int src[2] = {c->src.nodes, c->src.gpus}, dst[2] = {c->dst.nodes, c->dst.gpus};
            cJSON_AddStringToObject(jc, "case", c->name);
            cJSON_AddItemToObject(jc, "src", cJSON_CreateIntArray(src, 2));
            cJSON_AddItemToObject(jc, "dst", cJSON_CreateIntArray(dst, 2));
            cJSON_AddNumberToObject(jc, "bytes",
                                    (double)(c->elem_bytes * c->shape[0] * (one ? 1 : c->shape[1] * c->shape[2])));
            cJSON_AddNumberToObject(jc, "tasks", T.n);
            jt = cJSON_AddObjectToObject(jc, "time_s");
            cJSON_AddItemToArray(jcases, jc);
        } else
            printf("%-12s %-10d", c->name, T.n);
        for (int k = 0; k < (one ? 3 : WL_RS_IMPL_COUNT); k++) {
            double t = wl_reshard_time(c, m, &T, (wl_rs_impl)k, &err);
            if (t < 0) {
                rc = 1;
                break;
            }
            if (json)
                cJSON_AddNumberToObject(jt, wl_rs_impl_name(k), t);
            else
                printf(" %20.4f", t);
        }
        if (!json)
            printf("\n");
        wl_reshard_tasks_free(&T);
    }
    free(cases);
    sim_machine_free(m);
    return finish(doc, rc, &err);
}
