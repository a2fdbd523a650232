/* fuzz_schedule.c — the schedule JSON reader (sim/schedule_json.c).
 * Property: a schedule that reads back is checked without crashing, and it
 * round-trips: write(read(write(s))) == write(s). */
#include "fuzz.h"
#include "sim/schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    sim_schedule *s = sim_sched_read_json(text, "fuzz", &err);
    free(text);
    if (!s)
        return 0;
    sim_sched_check(s, &err);
    char *a = sim_sched_to_json(s, 0);
    sim_schedule *t = sim_sched_read_json(a, "fuzz-written", &err);
    FUZZ_CHECK(t != NULL);
    char *b = sim_sched_to_json(t, 0);
    FUZZ_CHECK(strcmp(a, b) == 0);
    free(a);
    free(b);
    sim_sched_free(t);
    sim_sched_free(s);
    return 0;
}
