/* fuzz_import.c — the trace importer (workloads/import.c, `trainsim import
 * kineto`) on one rank's trace: streams, steps, collectives matched against
 * themselves, waits inferred or recorded, host delays.  The input is
 * written to a temporary file (the importer reads paths, as the command
 * line gives them).  Property: an imported schedule passes the schedule
 * check, has one rank, and every delay and fixed kernel a time the engine
 * can hold. */
#include "fuzz.h"
#include "workloads/import.h"

#include <stdio.h>
#include <unistd.h>

static char path[64];

static void remove_input(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/fuzz-import-%ld.json", dir && *dir ? dir : "/tmp", (long)getpid());
        atexit(remove_input);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    const char *paths[1] = {path};
    wl_import_opts o = {-1, NULL};
    sim_err err;
    sim_schedule *s = wl_import_kineto(paths, 1, &o, NULL, &err);
    if (s) {
        FUZZ_CHECK(s->nranks == 1);
        FUZZ_CHECK(sim_sched_check(s, &err) == 0);
        for (uint32_t i = 0; i < s->npayloads; i++)
            FUZZ_CHECK(!(s->payloads[i].seconds < 0) && !(s->payloads[i].seconds > SIM_MAX_SECONDS));
    }
    sim_sched_free(s);
    return 0;
}
