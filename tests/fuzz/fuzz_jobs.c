/* fuzz_jobs.c — the job-file reader and placement (workloads/jobs.c,
 * `trainsim run --job`).  The input holds up to four job files separated by
 * ASCII record separators (0x1e), placed on a 2-node, 8-GPU cluster.
 * Properties: accepted jobs own disjoint GPUs of the cluster, each job's
 * schedule has as many ranks as it has GPUs, and the jobs' one schedule
 * passes the schedule check.  Inputs that name a global batch or
 * micro-batch count are skipped: how large a generated schedule gets is the
 * generator's limit (WL_MAX_SCHEDULE_OPS), not this reader's, and would make
 * inputs timeouts. */
#include "fuzz.h"
#include "platforms/platform.h"
#include "workloads/jobs.h"

static const char CLUSTER[] = "{\"name\": \"fuzz-2x4\", \"nodes\": 2, \"node\": {\"gpu\": \"RTX3090\", "
                              "\"gpus_per_node\": 4, \"nic\": \"100GbE\"}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text || strstr(text, "gb") || strstr(text, "global") || strstr(text, "micro")) {
        free(text);
        return 0;
    }
    static sim_machine *m;
    sim_err err;
    if (!m && !(m = plat_from_json(CLUSTER, "fuzz-2x4", &err)))
        abort();
    const char *texts[4], *paths[4] = {"fuzz-a", "fuzz-b", "fuzz-c", "fuzz-d"};
    int n = 0;
    for (char *p = text; n < 4;) {
        texts[n++] = p;
        char *sep = strchr(p, 0x1e);
        if (!sep)
            break;
        *sep = 0;
        p = sep + 1;
    }
    wl_job *jobs = wl_jobs_from_json(texts, paths, n, m, &err);
    if (jobs) {
        unsigned char owned[8] = {0};
        for (int j = 0; j < n; j++) {
            FUZZ_CHECK(jobs[j].sched->nranks == jobs[j].ngpus);
            for (int g = 0; g < jobs[j].ngpus; g++) {
                FUZZ_CHECK(jobs[j].gpus[g] >= 0 && jobs[j].gpus[g] < 8 && !owned[jobs[j].gpus[g]]);
                owned[jobs[j].gpus[g]] = 1;
            }
        }
        sim_schedule *s = wl_jobs_schedule(jobs, n, NULL, m, &err);
        FUZZ_CHECK(s && sim_sched_check(s, &err) == 0);
        sim_sched_free(s);
        wl_jobs_free(jobs, n);
    }
    free(text);
    return 0;
}
