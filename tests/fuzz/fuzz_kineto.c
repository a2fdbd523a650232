/* fuzz_kineto.c — the PyTorch-profiler trace reader (workloads/kineto.c),
 * after decompression. */
#include "fuzz.h"
#include "workloads/kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    wl_kineto *k = wl_kineto_parse(text, "fuzz", &err);
    free(text);
    if (k) {
        int n = wl_kineto_nkernels(k);
        for (int i = 0; i < n; i++)
            FUZZ_CHECK(wl_kineto_kernel(k, i)->name != NULL);
        for (int i = 1; i < n; i++) /* sorted by time */
            FUZZ_CHECK(!(wl_kineto_kernel(k, i)->ts_us < wl_kineto_kernel(k, i - 1)->ts_us));
    }
    wl_kineto_free(k);
    return 0;
}
