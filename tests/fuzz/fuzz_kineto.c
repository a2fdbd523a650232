/* fuzz_kineto.c — the PyTorch-profiler trace reader (validation/kineto.c),
 * after decompression. */
#include "fuzz.h"
#include "validation/kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    val_kineto *k = val_kineto_parse(text, "fuzz", &err);
    free(text);
    if (k) {
        int n = val_kineto_nkernels(k);
        for (int i = 0; i < n; i++)
            FUZZ_CHECK(val_kineto_kernel(k, i)->name != NULL);
        for (int i = 1; i < n; i++) /* sorted by time */
            FUZZ_CHECK(!(val_kineto_kernel(k, i)->ts_us < val_kineto_kernel(k, i - 1)->ts_us));
    }
    val_kineto_free(k);
    return 0;
}
