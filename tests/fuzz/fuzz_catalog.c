/* fuzz_catalog.c — the GPU catalogue reader (platforms/catalog.c), on a
 * gpus.json text, looking up one of the seed's models (chosen by the
 * input's length, so that each is tried). */
#include "fuzz.h"
#include "platforms/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const models[] = {"RTX3090", "A100", "H100-SXM", "V100", "RTX4090", "nope"};
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    sim_gpu g;
    plat_gpu_info info;
    if (plat_gpu_from_text(text, models[size % 6], &g, &info, &err) == 0)
        FUZZ_CHECK(g.peak_flops[0] > 0 && g.mem_bw > 0);
    free(text);
    return 0;
}
