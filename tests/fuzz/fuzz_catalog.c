/* fuzz_catalog.c — the GPU catalogue reader (platforms/catalog.c), on a
 * gpus.json text, looking up the first model the seed has. */
#include "fuzz.h"
#include "platforms/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    sim_gpu g;
    plat_gpu_info info;
    if (plat_gpu_from_text(text, "RTX3090", &g, &info, &err) == 0)
        FUZZ_CHECK(g.peak_flops[0] > 0 && g.mem_bw > 0);
    plat_gpu_from_text(text, "A100", &g, NULL, &err);
    free(text);
    return 0;
}
