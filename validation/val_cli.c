/* val_cli.c — `trainsim validate`: runs the validation groups and reports
 * each case (measured, simulated, error %), the MAPE and worst case per group
 * and subset, as a text table, JSON or CSV, optionally an SVG of simulated
 * against measured, and with --check a non-zero exit when a group exceeds
 * its threshold in validation/thresholds.json.  Also `validate --trace FILE`:
 * what the Kineto reader extracts from a PyTorch-profiler trace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/kineto.h"
#include "val.h"
#include "val_cli.h"
#include "val_report.h"

#ifndef TRAINSIM_SOURCE_DIR
#define TRAINSIM_SOURCE_DIR "."
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trainsim validate [--group NAME[,NAME...]] [--json | --csv] [--svg FILE] [--check]\n"
            "                         [--data DIR] [--thresholds FILE] [--list]\n"
            "                         [--all] [--rows ID,...] [--fidelity auto|full|fast] [--unexpressed]\n"
            "                         [--emit DIR]\n"
            "       trainsim validate --trace FILE   what the Kineto reader extracts from a PyTorch-profiler trace\n"
            "\n"
            "  --group G       run only these groups (default: all; --list shows them)\n"
            "  --json, --csv   machine-readable output instead of the table\n"
            "  --svg FILE      draw simulated against measured, one panel per group\n"
            "  --check         exit 1 when a group's error exceeds its recorded threshold\n"
            "  --data DIR      the data sets (default $TRAINSIM_DATA, else %s/validation/data)\n"
            "  --thresholds F  thresholds file (default: DIR/../thresholds.json)\n"
            "  end-to-end groups (e2e-*: published training runs, one row per configuration):\n"
            "  --all           every expressible row, not only the subset ctest checks\n"
            "  --rows ID,...   only these rows (row_id), whatever their cost\n"
            "  --fidelity F    auto (default: whole simulation unless a row's cost estimate exceeds the\n"
            "                  per-row budget, then the planner's fast fidelity), full or fast for every row\n"
            "  --unexpressed   list the rows that cannot be simulated and why (simulates nothing)\n"
            "  --emit DIR      write each expressible row as DIR/ROW.cluster.json, DIR/ROW.model.json and\n"
            "                  DIR/ROW.sh (the trainsim run command that simulates it)\n",
            TRAINSIM_SOURCE_DIR);
}

static int selected(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static void print_nccl_groups(const wl_kineto *t)
{
    printf("NCCL kernels (collective, bytes, group size (* = world size assumed), algorithm/protocol: count, "
           "min/median/max us)\n");
    wl_kgroup *g;
    int ng = wl_kineto_groups(t, WL_K_NCCL, &g);
    for (int i = 0; i < ng; i++) {
        const wl_kernel *a = g[i].first;
        printf("  %-14s %12lld B  group %-3d%s %s/%-6s x%-4d %10.1f %10.1f %10.1f%s\n",
               a->coll >= 0 ? sim_coll_name(a->coll) : "sendrecv/other", (long long)a->bytes, a->group_size,
               a->group_is_world ? "*" : " ", a->algo == SIM_ALGO_RING ? "ring" : a->algo == SIM_ALGO_TREE ? "tree" : "-",
               a->proto[0] ? a->proto : "-", g[i].count, g[i].min_us, g[i].median_us, g[i].max_us,
               a->nccl_from_op ? "  (size from the c10d op)" : "");
    }
    free(g);
}

static void print_gemm_groups(const wl_kineto *t)
{
    printf("GEMM shapes (op, dtype, batch x m x n x k: kernels, median us)\n");
    wl_kgroup *g;
    int ng = wl_kineto_groups(t, WL_K_GEMM, &g);
    for (int i = 0; i < ng && i < 30; i++) {
        const wl_kernel *a = g[i].first;
        printf("  %-13s %-4s %4lld x %6lld x %6lld x %6lld: %5d, %10.1f\n", a->op, sim_dtype_name(a->dtype),
               (long long)a->batch, (long long)a->m, (long long)a->n, (long long)a->k, g[i].count, g[i].median_us);
    }
    if (ng > 30)
        printf("  ... %d distinct shapes in all\n", ng);
    free(g);
}

/* `validate --trace FILE`: what the Kineto reader extracts. */
static void print_trace(const char *path, const wl_kineto *t)
{
    const char *dev = wl_kineto_device(t), *gpu = wl_kineto_catalog_gpu(dev);
    printf("trace      %s\n", path);
    printf("device     %s (catalogue: %s)\n", dev[0] ? dev : "(not recorded)", gpu ? gpu : "none");
    if (wl_kineto_rank(t) >= 0)
        printf("rank       %d of %d\n", wl_kineto_rank(t), wl_kineto_world(t));
    int gs, n = wl_kineto_nkernels(t), ncl = wl_kineto_count(t, WL_K_NCCL, NULL), ng = wl_kineto_count(t, WL_K_GEMM, &gs);
    int ne = 0, nv = 0, ms = wl_kineto_main_stream(t), nc[SIM_MEMC_COUNT] = {0};
    double tot[WL_K_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        const wl_kernel *k = wl_kineto_kernel(t, i);
        tot[k->cls] += k->dur_us;
        if (k->elem_bytes > 0) {
            ne++;
            nv += k->elem_vectorized;
        }
        nc[k->mclass > SIM_MEMC_STREAM && k->mclass < SIM_MEMC_COUNT ? k->mclass : 0]++;
    }
    printf("kernels    %d: GEMM %d (%d with shapes, %.3f ms), NCCL %d (%.3f ms), other %d (%.3f ms)\n", n, ng, gs,
           tot[WL_K_GEMM] / 1e3, ncl, tot[WL_K_NCCL] / 1e3, n - ng - ncl, tot[WL_K_OTHER] / 1e3);
    printf("pointwise  %d element-wise kernels with bytes from their aten op (%d vectorised)\n", ne, nv);
    printf("classed   ");
    for (int c = 1; c < SIM_MEMC_COUNT; c++)
        printf(" %s %d%s", sim_mem_class_name(c), nc[c], c + 1 < SIM_MEMC_COUNT ? "," : " kernels (sim_mem_class)\n");
    if (ms >= 0)
        printf("stream     %d has the most kernels; busy back-to-back gap median %.2f us\n", ms,
               wl_kineto_busy_gap_us(t, ms));
    printf("steps      %d", wl_kineto_nsteps(t));
    for (int i = 0; i < wl_kineto_nsteps(t); i++)
        printf("%s %s %.3f ms", i ? "," : ":", wl_kineto_step_name(t, i), wl_kineto_step_us(t, i) / 1e3);
    putchar('\n');
    if (ncl)
        print_nccl_groups(t);
    if (gs)
        print_gemm_groups(t);
}

static int trace_summary(const char *path)
{
    sim_err err = {{0}};
    wl_kineto *k = wl_kineto_load(path, &err);
    if (!k) {
        sim_err_print("trainsim", 1, "%s", err.msg);
        return 1;
    }
    print_trace(path, k);
    wl_kineto_free(k);
    return 0;
}

int val_cli_main(int argc, char **argv)
{
    const char *groups = NULL, *svg = NULL, *data = NULL, *thr_path = NULL, *trace = NULL, *fidelity = NULL,
               *rows = NULL, *emit = NULL;
    int json = 0, csv = 0, check = 0, list = 0, all = 0, unexpressed = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (!strcmp(o, "validate") && i == 1)
            continue;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--json")) {
            json = 1;
            continue;
        } else if (!strcmp(o, "--csv")) {
            csv = 1;
            continue;
        } else if (!strcmp(o, "--check")) {
            check = 1;
            continue;
        } else if (!strcmp(o, "--list")) {
            list = 1;
            continue;
        } else if (!strcmp(o, "--all")) {
            all = 1;
            continue;
        } else if (!strcmp(o, "--unexpressed")) {
            unexpressed = 1;
            continue;
        } else if (!strcmp(o, "--fidelity")) {
            slot = &fidelity;
        } else if (!strcmp(o, "--rows")) {
            slot = &rows;
        } else if (!strcmp(o, "--emit")) {
            slot = &emit;
        } else if (!strcmp(o, "--group")) {
            slot = &groups;
        } else if (!strcmp(o, "--svg")) {
            slot = &svg;
        } else if (!strcmp(o, "--data")) {
            slot = &data;
        } else if (!strcmp(o, "--thresholds")) {
            slot = &thr_path;
        } else if (!strcmp(o, "--trace")) {
            slot = &trace;
        } else {
            if (!sim_err_json_enabled())
                usage(stderr);
            sim_err_print("trainsim validate", 2, "unknown option \"%s\"", o);
            return 2;
        }
        if (i + 1 >= argc) {
            sim_err_print("trainsim validate", 2, "%s needs a value", o);
            return 2;
        }
        *slot = argv[++i];
    }
    if (json && csv) {
        sim_err_print("trainsim validate", 2, "give --json or --csv, not both");
        return 2;
    }
    if (trace)
        return trace_summary(trace);
    static const char *const fidelities[] = {"auto", "full", "fast"};
    int fid = -1;
    for (int k = 0; k < 3 && fidelity; k++)
        if (!strcmp(fidelity, fidelities[k]))
            fid = k;
    if (fidelity && fid < 0) {
        return sim_err_print("trainsim validate", 2, "--fidelity: expected auto, full or fast, got \"%s\"", fidelity);
    }
    if (unexpressed && (json || csv || svg || check)) {
        return sim_err_print("trainsim validate", 2,
                             "--unexpressed lists rows; it does not combine with --json, --csv, --svg or --check");
    }

    int ng;
    const val_group *groups_all = val_groups(&ng);
    if (list) {
        for (int i = 0; i < ng; i++)
            printf("%-22s %s\n", groups_all[i].name, groups_all[i].what);
        return 0;
    }
    if (groups) {
        /* every name given must exist */
        char *copy = strdup(groups);
        for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
            if (!val_group_find(tok)) {
                char known[1024] = "";
                for (int i = 0; i < ng; i++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), " %s", groups_all[i].name);
                sim_err_print("trainsim validate", 2, "--group: no group named \"%s\"; known groups:%s", tok, known);
                free(copy);
                return 2;
            }
        }
        free(copy);
    }

    char data_buf[4096], thr_buf[4096];
    if (!data)
        data = getenv("TRAINSIM_DATA");
    if (!data || !*data) {
        snprintf(data_buf, sizeof data_buf, "%s/validation/data", TRAINSIM_SOURCE_DIR);
        data = data_buf;
    }
    if (!thr_path) {
        int n = snprintf(thr_buf, sizeof thr_buf, "%s/../thresholds.json", data);
        if (n < 0 || (size_t)n >= sizeof thr_buf) {
            sim_err_print("trainsim validate", 2, "data directory path too long (%s)", data);
            return 2;
        }
        thr_path = thr_buf;
    }
    sim_err err = {{0}};
    val_thresholds *thr = val_thresholds_load(thr_path, &err);
    if (!thr && check) {
        sim_err_print("trainsim validate --check", 1, "%s", err.msg);
        return 1;
    }

    val_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.data_dir = data;
    sim_options_default(&ctx.opt);
    ctx.all = all;
    ctx.map_only = unexpressed;
    ctx.fidelity = fid < 0 ? 0 : fid;
    ctx.rows = rows;
    ctx.emit_dir = emit;

    val_result *res = calloc((size_t)ng, sizeof *res);
    int nres = 0, failed = 0;
    for (int i = 0; i < ng; i++) {
        if (!selected(groups, groups_all[i].name))
            continue;
        val_result *r = &res[nres++];
        r->group = &groups_all[i];
        r->set = val_set_new();
        if (groups_all[i].run(&ctx, r->set, &r->err) < 0) {
            r->error = 1;
            failed = 1;
            sim_err_print("trainsim validate", 1, "group %s: %s", groups_all[i].name, r->err.msg);
        }
    }
    int check_failed = 0;
    if (!unexpressed)
        val_report_check(res, nres, thr, check, stderr, &check_failed);
    if (unexpressed)
        val_report_unexpressed(res, nres, stdout);
    else if (json)
        val_report_json(res, nres, thr, stdout);
    else if (csv)
        val_report_csv(res, nres, stdout);
    else
        val_report_text(res, nres, thr, stdout);
    if (svg && val_report_svg(res, nres, thr, svg, &err) < 0) {
        sim_err_print("trainsim validate", 1, "%s", err.msg);
        failed = 1;
    }
    for (int i = 0; i < nres; i++)
        val_set_free(res[i].set);
    free(res);
    val_thresholds_free(thr);
    if (failed)
        return 1;
    return check && check_failed ? 1 : 0;
}
