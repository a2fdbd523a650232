/* fuzz_et.c — the PyTorch execution-trace reader (workloads/et.c), after
 * decompression: every node it keeps has a name, the nodes are sorted by id
 * and found by it, and a group's ranks stay inside the bound asked for. */
#include "fuzz.h"
#include "workloads/et.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    wl_et *et = wl_et_parse(text, "fuzz", &err);
    free(text);
    if (et) {
        int n = wl_et_nnodes(et), ranks[8];
        for (int i = 0; i < n; i++) {
            const wl_et_node *x = wl_et_node_at(et, i);
            FUZZ_CHECK(x->name != NULL && wl_et_find(et, x->id) == x);
            FUZZ_CHECK(i == 0 || wl_et_node_at(et, i - 1)->id < x->id);
            int g = wl_et_group_ranks(et, x, ranks, 8);
            for (int r = 0; r < g; r++)
                FUZZ_CHECK(ranks[r] >= 0 && ranks[r] < 8);
        }
    }
    wl_et_free(et);
    return 0;
}
