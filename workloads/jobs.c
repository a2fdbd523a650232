/* jobs.c — several jobs on one cluster (see jobs.h).
 *
 * Placement is decided on the platform's ranks before any schedule is
 * built, so a model job is generated on exactly the GPUs it gets (a
 * sim_machine_subset: its TP groups see the nodes they really span). */
#include "jobs.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "model.h"
#include "sim/alloc.h"
#include "sim/fileio.h"
#include "sim/json.h"

/* What a job file asks for, before placement. */
typedef struct job_spec {
    const char *path;
    cJSON *doc;
    const char *model, *strategy, *schedule;
    const cJSON *gpus, *nodes;
    int count, spread;
} job_spec;

#define JOB_FILE_MAX ((size_t)1 << 20)

static int expected(sim_err *err, const char *path, const char *field, const char *what, const cJSON *got)
{
    char *txt = got ? cJSON_PrintUnformatted(got) : NULL;
    sim_errf(err, "%s: %s: expected %s, got %s", path, field, what, txt ? txt : "nothing");
    free(txt);
    return -1;
}

static const char *opt_string(job_spec *j, const char *key, sim_err *err, int *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->doc, key);
    if (!v)
        return NULL;
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        *bad = expected(err, j->path, key, "a non-empty string", v);
        return NULL;
    }
    return v->valuestring;
}

static int read_spec(const char *text, const char *path, job_spec *j, char *name, size_t name_len, sim_err *err)
{
    static const char *const known[] = {"name", "model", "strategy", "schedule", "gpus", "nodes", "count",
                                        "placement", NULL};
    memset(j, 0, sizeof *j);
    j->path = path;
    if (!(j->doc = sim_json_parse(text, path, err)))
        return -1;
    if (!cJSON_IsObject(j->doc))
        return expected(err, path, "the job", "an object {\"model\": ..., \"strategy\": ..., \"gpus\": [...]}", j->doc);
    const cJSON *it;
    cJSON_ArrayForEach(it, j->doc)
    {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++)
            ok = !strcmp(it->string, known[i]);
        if (!ok)
            return sim_errf(err, "%s: %s: unknown field; known: name, model, strategy, schedule, gpus, nodes, count, "
                                 "placement",
                            path, it->string);
    }
    int bad = 0;
    const char *nm = opt_string(j, "name", err, &bad);
    j->model = opt_string(j, "model", err, &bad);
    j->strategy = opt_string(j, "strategy", err, &bad);
    j->schedule = opt_string(j, "schedule", err, &bad);
    const char *placement = opt_string(j, "placement", err, &bad);
    if (bad)
        return -1;
    if (!nm) { /* the file's base name without its extension */
        const char *b = strrchr(path, '/');
        nm = b ? b + 1 : path;
    }
    snprintf(name, name_len, "%.*s", (int)strcspn(nm, "."), nm);
    if (!name[0])
        snprintf(name, name_len, "job");
    if (!j->model == !j->schedule)
        return sim_errf(err, "%s: give either \"model\" (with \"strategy\") or \"schedule\"", path);
    if (j->schedule && j->strategy)
        return sim_errf(err, "%s: strategy: a schedule file is already a strategy; give model with strategy", path);
    j->gpus = cJSON_GetObjectItemCaseSensitive(j->doc, "gpus");
    j->nodes = cJSON_GetObjectItemCaseSensitive(j->doc, "nodes");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(j->doc, "count");
    if (!!j->gpus + !!j->nodes + !!count != 1)
        return sim_errf(err, "%s: say where the job runs with exactly one of \"gpus\" (a list), \"nodes\" (a list) "
                             "or \"count\" (with \"placement\": packed or spread)",
                        path);
    if (count) {
        if (!cJSON_IsNumber(count) || count->valuedouble != floor(count->valuedouble) || count->valuedouble < 1 ||
            count->valuedouble > SIM_MAX_GPUS)
            return expected(err, path, "count", "a whole number of GPUs from 1 to 65536", count);
        j->count = (int)count->valuedouble;
    }
    if (placement && strcmp(placement, "packed") && strcmp(placement, "spread"))
        return expected(err, path, "placement", "\"packed\" or \"spread\"",
                        cJSON_GetObjectItemCaseSensitive(j->doc, "placement"));
    if (placement && !count)
        return sim_errf(err, "%s: placement: goes with \"count\" (gpus and nodes already say where)", path);
    j->spread = placement && !strcmp(placement, "spread");
    return 0;
}

/* Index list field (gpus or nodes) of the job: each in [0, limit). */
static int read_indices(const job_spec *j, const char *field, const cJSON *list, int limit, int **out, int *n,
                        sim_err *err)
{
    int len = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (len < 1 || len > SIM_MAX_GPUS)
        return expected(err, j->path, field, "a non-empty list of indices", list);
    *out = sim_xcalloc((size_t)len, sizeof **out, "a job's placement");
    *n = len;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || it->valuedouble < 0 ||
            it->valuedouble >= limit) {
            char what[96], where[80];
            snprintf(what, sizeof what, "an index from 0 to %d (the cluster's %s)", limit - 1, field);
            snprintf(where, sizeof where, "%s[%d]", field, i);
            return expected(err, j->path, where, what, it);
        }
        (*out)[i++] = (int)it->valuedouble;
    }
    return 0;
}

/* Claims the GPUs of an explicit list (gpus, or every GPU of the nodes). */
static int place_explicit(const job_spec *j, const sim_machine *m, int *owner, int id, wl_job *job, sim_err *err)
{
    int *idx = NULL, n = 0;
    int nodes = j->nodes != NULL;
    if (read_indices(j, nodes ? "nodes" : "gpus", nodes ? j->nodes : j->gpus, nodes ? m->nnodes : m->ngpus, &idx, &n,
                     err) < 0)
        return free(idx), -1;
    job->gpus = sim_xcalloc((size_t)m->ngpus, sizeof *job->gpus, "a job's placement");
    for (int i = 0; i < n; i++)
        for (int r = 0; r < m->ngpus; r++) {
            if (nodes ? m->node[r] != idx[i] : r != idx[i])
                continue;
            if (owner[r] >= 0) {
                free(idx);
                return sim_errf(err, "%s: %s: GPU %d (node %d) is already %s", j->path, nodes ? "nodes" : "gpus", r,
                                m->node[r], owner[r] == id ? "listed for this job" : "another job's");
            }
            owner[r] = id;
            job->gpus[job->ngpus++] = r;
        }
    free(idx);
    return 0;
}

/* Claims count free GPUs: node after node (packed) or one per node in turn
 * (spread), lowest ranks first. */
static int place_count(const job_spec *j, const sim_machine *m, int *owner, int id, wl_job *job, sim_err *err)
{
    int free_gpus = 0;
    for (int r = 0; r < m->ngpus; r++)
        free_gpus += owner[r] < 0;
    if (j->count > free_gpus)
        return sim_errf(err, "%s: count: %d GPUs asked, %d of the cluster's %d are not taken by the jobs before it",
                        j->path, j->count, free_gpus, m->ngpus);
    job->gpus = sim_xcalloc((size_t)j->count, sizeof *job->gpus, "a job's placement");
    while (job->ngpus < j->count)
        for (int node = 0; node < m->nnodes && job->ngpus < j->count; node++)
            for (int r = 0; r < m->ngpus; r++)
                if (m->node[r] == node && owner[r] < 0) {
                    owner[r] = id;
                    job->gpus[job->ngpus++] = r;
                    if (j->spread || job->ngpus == j->count)
                        break; /* spread: the next node's turn */
                }
    return 0;
}

/* The schedule file's path relative to the job file. */
static void sibling_path(const char *job_path, const char *rel, char *out, size_t n)
{
    const char *slash = strrchr(job_path, '/');
    if (rel[0] == '/' || !slash)
        snprintf(out, n, "%s", rel);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - job_path), job_path, rel);
}

static int build_schedule(const job_spec *j, const sim_machine *m, wl_job *job, sim_err *err)
{
    if (j->schedule) {
        char path[4096];
        sibling_path(j->path, j->schedule, path, sizeof path);
        if (!(job->sched = sim_sched_load(path, err)))
            return -1;
        snprintf(job->schedule, sizeof job->schedule, "%s", j->schedule);
        if (job->sched->nranks != job->ngpus)
            return sim_errf(err, "%s: schedule \"%s\" has %d ranks but the job is placed on %d GPUs", j->path, path,
                            job->sched->nranks, job->ngpus);
        return 0;
    }
    wl_model model;
    memset(&model, 0, sizeof model);
    wl_strategy st;
    wl_strategy_default(&st);
    sim_err e = {{0}};
    if (wl_model_load(j->model, &model, &e) < 0 || wl_strategy_parse(j->strategy ? j->strategy : "", &st, &e) < 0)
        return sim_errf(err, "%s: %s", j->path, e.msg);
    snprintf(job->model, sizeof job->model, "%s", model.name);
    sim_machine *sub = sim_machine_subset(m, job->gpus, job->ngpus);
    if (!sub)
        return sim_errf(err, "out of memory placing %s", j->path);
    wl_strategy given = st; /* dp and gb on auto filled in (tp*pp*cp*dp = the job's GPUs) */
    if (wl_gpt_resolve(&model, &given, sub, &st, &e) == 0) {
        wl_strategy_format(&st, job->strategy, (int)sizeof job->strategy);
        job->sched = wl_gpt_generate(&model, &st, sub, &e);
    }
    sim_machine_free(sub);
    if (!job->sched)
        return sim_errf(err, "%s: on its %d GPUs: %s", j->path, job->ngpus, e.msg);
    return 0;
}

wl_job *wl_jobs_load(const char *const *paths, int n, const sim_machine *m, sim_err *err)
{
    char **texts = sim_xcalloc((size_t)n + 1, sizeof *texts, "the job files");
    wl_job *jobs = NULL;
    int i = 0;
    while (i < n && (texts[i] = sim_read_file_max(paths[i], JOB_FILE_MAX, NULL, 0, err)) != NULL)
        i++;
    if (i == n)
        jobs = wl_jobs_from_json((const char *const *)texts, paths, n, m, err);
    for (i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    return jobs;
}

wl_job *wl_jobs_from_json(const char *const *texts, const char *const *paths, int n, const sim_machine *m,
                          sim_err *err)
{
    wl_job *jobs = sim_xcalloc((size_t)n + 1, sizeof *jobs, "the jobs");
    job_spec *spec = sim_xcalloc((size_t)n + 1, sizeof *spec, "the jobs");
    int *owner = sim_xcalloc((size_t)m->ngpus + 1, sizeof *owner, "the jobs' placement");
    for (int r = 0; r < m->ngpus; r++)
        owner[r] = -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = read_spec(texts[i], paths[i], &spec[i], jobs[i].name, sizeof jobs[i].name, err);
        for (int k = 0; k < i && rc == 0; k++)
            if (!strcmp(jobs[k].name, jobs[i].name))
                rc = sim_errf(err, "%s: name: \"%s\" is also the name of %s (give each job its own \"name\")",
                              paths[i], jobs[i].name, paths[k]);
    }
    for (int i = 0; i < n && rc == 0; i++) /* explicit lists first: counts fill around them */
        if (!spec[i].count)
            rc = place_explicit(&spec[i], m, owner, i, &jobs[i], err);
    for (int i = 0; i < n && rc == 0; i++)
        if (spec[i].count)
            rc = place_count(&spec[i], m, owner, i, &jobs[i], err);
    for (int i = 0; i < n && rc == 0; i++)
        rc = build_schedule(&spec[i], m, &jobs[i], err);
    for (int i = 0; i < n; i++)
        cJSON_Delete(spec[i].doc);
    free(spec);
    free(owner);
    if (rc < 0) {
        wl_jobs_free(jobs, n);
        return NULL;
    }
    return jobs;
}

void wl_jobs_free(wl_job *jobs, int n)
{
    for (int i = 0; jobs && i < n; i++) {
        free(jobs[i].gpus);
        sim_sched_free(jobs[i].sched);
    }
    free(jobs);
}

sim_schedule *wl_jobs_schedule(const wl_job *jobs, int n, const int *include, const sim_machine *m, sim_err *err)
{
    sim_schedule *s = sim_sched_new(m->ngpus);
    size_t l = 0;
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (include && !include[i])
            continue;
        char prefix[80];
        snprintf(prefix, sizeof prefix, "%s/", jobs[i].name);
        if (sim_sched_place(s, jobs[i].sched, jobs[i].gpus, prefix, err) < 0) {
            sim_sched_free(s);
            return NULL;
        }
        if (l < sizeof s->meta.name)
            l += (size_t)snprintf(s->meta.name + l, sizeof s->meta.name - l, "%s%s", l ? " + " : "", jobs[i].name);
        if (first) /* rates and MFU are per job; the whole keeps the first job's dtype */
            s->meta.dtype = jobs[i].sched->meta.dtype;
        first = 0;
    }
    return s;
}
