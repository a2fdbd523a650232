/* edit.c — one field of a cluster JSON changed (see edit.h).  A table of
 * fields, each a function that checks its value against the catalogue and
 * rewrites the JSON; everything else about the cluster stays as written. */
#include "platforms/edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "platforms/catalog.h"
#include "platforms/platform.h"

static cJSON *node_of(cJSON *root, sim_err *err)
{
    cJSON *node = cJSON_GetObjectItemCaseSensitive(root, "node");
    if (!cJSON_IsObject(node))
        sim_errf(err, "the cluster has no \"node\" object");
    return node;
}

static int set(cJSON *obj, const char *key, cJSON *value)
{
    if (!value)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, value) ? 0 : -1;
    return cJSON_AddItemToObject(obj, key, value) ? 0 : -1;
}

static int edit_nodes(cJSON *root, const char *v, sim_err *err)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 1000000)
        return sim_errf(err, "expected a positive number of nodes");
    return set(root, "nodes", cJSON_CreateNumber((double)n));
}

static int edit_gpu(cJSON *root, const char *v, sim_err *err)
{
    sim_gpu g;
    cJSON *node = node_of(root, err);
    if (!node || plat_gpu_lookup(v, &g, err) < 0)
        return -1;
    return set(node, "gpu", cJSON_CreateString(g.model));
}

static int edit_nic(cJSON *root, const char *v, sim_err *err)
{
    plat_nic nic;
    cJSON *node = node_of(root, err);
    if (!node || plat_nic_lookup(v, &nic, err) < 0)
        return -1;
    cJSON *nics = cJSON_GetObjectItemCaseSensitive(node, "nics"), *e;
    if (!cJSON_IsArray(nics))
        return set(node, "nic", cJSON_CreateString(nic.model));
    cJSON_ArrayForEach(e, nics)
        if (set(e, "model", cJSON_CreateString(nic.model)) < 0)
            return -1;
    return 0;
}

static int edit_nvlink(cJSON *root, const char *v, sim_err *err)
{
    cJSON *node = node_of(root, err);
    if (!node)
        return -1;
    cJSON *gpn = cJSON_GetObjectItemCaseSensitive(node, "gpus_per_node");
    int per = cJSON_IsNumber(gpn) ? gpn->valueint : 0;
    cJSON *nv = cJSON_CreateObject();
    if (!strcmp(v, "none")) {
        /* an NVSwitch GPU gets its switch unless told otherwise */
        cJSON_AddBoolToObject(nv, "nvswitch", 0);
        cJSON *gpu = cJSON_GetObjectItemCaseSensitive(node, "gpu");
        sim_gpu g;
        plat_gpu_info info;
        sim_err e;
        if (!cJSON_IsString(gpu) || plat_gpu_lookup_info(gpu->valuestring, &g, &info, &e) < 0 ||
            info.nvlink != PLAT_NVLINK_NVSWITCH) {
            cJSON_Delete(nv);
            cJSON_DeleteItemFromObjectCaseSensitive(node, "nvlink");
            return 0;
        }
    } else if (!strcmp(v, "bridge")) {
        if (per < 2 || per % 2)
            return cJSON_Delete(nv), sim_errf(err, "bridges join GPU pairs: needs an even gpus_per_node, got %d", per);
        cJSON *pairs = cJSON_AddArrayToObject(nv, "pairs");
        for (int g = 0; g < per; g += 2) {
            int ab[2] = {g, g + 1};
            cJSON_AddItemToArray(pairs, cJSON_CreateIntArray(ab, 2));
        }
    } else if (!strcmp(v, "nvswitch")) {
        cJSON_AddBoolToObject(nv, "nvswitch", 1);
    } else {
        cJSON_Delete(nv);
        return sim_errf(err, "expected none, bridge or nvswitch");
    }
    return set(node, "nvlink", nv);
}

static const struct {
    const char *field;
    int (*fn)(cJSON *root, const char *value, sim_err *err);
} FIELDS[] = {{"nodes", edit_nodes}, {"gpu", edit_gpu}, {"nic", edit_nic}, {"nvlink", edit_nvlink}};
#define NFIELDS ((int)(sizeof FIELDS / sizeof FIELDS[0]))

const char *plat_cluster_edit_fields(void)
{
    return "nodes, gpu, nic, nvlink";
}

char *plat_cluster_edit(const char *json, const char *source, const char *field, const char *value, sim_err *err)
{
    int f = 0;
    while (f < NFIELDS && strcmp(FIELDS[f].field, field))
        f++;
    if (f == NFIELDS)
        return sim_errf(err, "%s: cannot vary \"%s\"; the fields are %s", source, field, plat_cluster_edit_fields()),
               NULL;
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return sim_errf(err, "%s: malformed cluster JSON", source), NULL;
    }
    char *out = NULL;
    if (FIELDS[f].fn(root, value, err) < 0) {
        sim_err_prefix(err, "%s: %s=%s: ", source, field, value);
    } else {
        cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
        char buf[256];
        snprintf(buf, sizeof buf, "%s+%s=%s", cJSON_IsString(name) ? name->valuestring : source, field, value);
        if (set(root, "name", cJSON_CreateString(buf)) == 0)
            out = cJSON_Print(root);
        if (!out)
            sim_errf(err, "out of memory");
    }
    cJSON_Delete(root);
    return out;
}
