/* fuzz_model.c — the model JSON reader (workloads/model.c), native model
 * files and Hugging Face config.json files (workloads/hf_config.c) alike,
 * then what the command line computes from an accepted model: its
 * parameter count and its description (--json's model_info), where an
 * overflow of a size would show (UBSan). */
#include "fuzz.h"
#include "workloads/model.h"

#include <cjson/cJSON.h>
#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    wl_model m;
    if (wl_model_from_json(text, "fuzz", &m, &err) == 0) {
        double p = wl_model_params(&m);
        FUZZ_CHECK(isfinite(p) && p > 0);
        cJSON_Delete(wl_model_describe(&m));
    }
    free(text);
    return 0;
}
