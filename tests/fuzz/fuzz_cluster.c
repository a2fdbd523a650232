/* fuzz_cluster.c — the cluster JSON reader and SimGrid XML writer
 * (platforms/platform.c).  Property: a cluster that is accepted yields XML
 * that the hand-written-XML check (xmlplat.c) accepts with the same GPUs.
 * Clusters of more than 256 GPUs are skipped: they repeat the same node
 * code, and their XML (~150 MB at the 65,536-GPU limit) would make every
 * input a timeout. */
#include "fuzz.h"
#include "platforms/platform.h"

#include <cjson/cJSON.h>

static double gpus_of(const cJSON *nodes, const cJSON *node)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(node, "gpus_per_node");
    return cJSON_IsNumber(nodes) && cJSON_IsNumber(g) ? nodes->valuedouble * g->valuedouble : 0;
}

static int too_large(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    double n = gpus_of(cJSON_GetObjectItemCaseSensitive(root, "nodes"), cJSON_GetObjectItemCaseSensitive(root, "node"));
    const cJSON *grp;
    cJSON_ArrayForEach(grp, cJSON_GetObjectItemCaseSensitive(root, "groups")) /* node groups: mixed GPUs */
        n += gpus_of(cJSON_GetObjectItemCaseSensitive(grp, "nodes"), cJSON_GetObjectItemCaseSensitive(grp, "node"));
    cJSON_Delete(root);
    return n > 256;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text || too_large(text)) {
        free(text);
        return 0;
    }
    sim_err err;
    sim_machine *m = plat_from_json(text, "fuzz", &err);
    free(text);
    if (!m)
        return 0;
    sim_machine *x = plat_from_xml_text(m->platform_xml, "fuzz.xml", &err);
    FUZZ_CHECK(x != NULL && x->ngpus == m->ngpus);
    sim_machine_free(x);
    sim_machine_free(m);
    return 0;
}
