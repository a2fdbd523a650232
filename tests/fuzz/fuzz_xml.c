/* fuzz_xml.c — the hand-written SimGrid XML check (platforms/xmlplat.c),
 * without SimGrid (the child that loads it is not fuzzed). */
#include "fuzz.h"
#include "platforms/platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    sim_err err;
    sim_machine *m = plat_from_xml_text(text, "fuzz.xml", &err);
    free(text);
    if (m)
        FUZZ_CHECK(m->ngpus > 0 && m->nnodes > 0);
    sim_machine_free(m);
    return 0;
}
