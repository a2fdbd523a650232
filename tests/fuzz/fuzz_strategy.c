/* fuzz_strategy.c — the strategy string parser (workloads/model.c).
 * Property: a strategy that parses formats to a string that parses to the
 * same formatted string. */
#include "fuzz.h"
#include "workloads/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    wl_strategy s, t;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err) == 0) {
        char a[1024], b[1024];
        wl_strategy_format(&s, a, sizeof a);
        wl_strategy_default(&t);
        FUZZ_CHECK(wl_strategy_parse(a, &t, &err) == 0);
        wl_strategy_format(&t, b, sizeof b);
        FUZZ_CHECK(strcmp(a, b) == 0);
    }
    free(text);
    return 0;
}
