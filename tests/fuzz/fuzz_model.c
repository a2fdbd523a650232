/* fuzz_model.c — the model JSON reader (workloads/model.c).
 *
 * Known and reported, not yet fixed in model.c (issue 19): the default
 * "ffn" = 4 x hidden overflows an int for hidden > 536,870,911.  Inputs
 * that reach it are skipped so that the fuzzer looks for other faults;
 * remove the filter when model.c refuses such a hidden size. */
#include "fuzz.h"
#include "workloads/model.h"

#include <cjson/cJSON.h>

static int known_overflow(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "hidden");
    int bad = cJSON_IsNumber(h) && h->valuedouble > 536870911.0;
    cJSON_Delete(root);
    return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text || known_overflow(text)) {
        free(text);
        return 0;
    }
    sim_err err;
    wl_model m;
    wl_model_from_json(text, "fuzz", &m, &err);
    free(text);
    return 0;
}
