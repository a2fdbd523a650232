/* bom.c — a cluster's bill of materials, priced and powered (see bom.h).
 *
 * Counting follows the cluster JSON the platform builder reads (platform.c
 * has already accepted it, so fields are read here without re-checking):
 * GPUs = nodes x gpus_per_node; one server per node, its class from the
 * GPU's attachment (NVSwitch GPUs sit on an HGX-class baseboard, PCIe GPUs
 * in a one- or two-socket server); the NICs listed per node; one switch
 * port per NIC when there is more than one node, and on a fat tree the
 * leaves' uplinks counted at both ends (leaf and spine) in ports of the
 * nodes' first NIC model, as many as carry the leaf's NIC bandwidth over the
 * oversubscription; one NVLink bridge per listed pair.
 *
 * Figures: GPU price and board power from gpus.json (its price_source /
 * price_date when the entry has them, else its source), everything else
 * from purchase.json, each with its source; then the user's costs file
 * (plat_bom_apply_costs).  A price nobody gives stays < 0, so that the cost
 * arithmetic can name the missing part instead of pricing it at zero. */
#include "platforms/bom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "platforms/catalog.h"
#include "platforms/platform.h"
#include "sim/embedded.h"

#define PURCHASE_JSON "platforms/catalog/purchase.json"

static const char *const KIND_NAMES[PLAT_ITEM_KINDS] = {"gpu", "server", "nic", "switch_port", "nvlink_bridge"};

const char *plat_item_kind_name(plat_item_kind k)
{
    return k >= 0 && k < PLAT_ITEM_KINDS ? KIND_NAMES[k] : "?";
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static cJSON *purchase_catalogue(sim_err *err)
{
    const char *text = sim_embedded(PURCHASE_JSON);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    if (!root)
        sim_errf(err, "%s: %s", PURCHASE_JSON, text ? "malformed JSON in the built-in catalogue"
                                                    : "not compiled into this binary (re-run cmake)");
    return root;
}

/* The entry of array whose `key` names `name` (case and '-' insensitive). */
static const cJSON *find(const cJSON *root, const char *array, const char *key, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, array))
        if (str(e, key, NULL) && plat_name_eq(str(e, key, NULL), name))
            return e;
    return NULL;
}

static plat_item *add_item(plat_bom *b, plat_item_kind kind, const char *model, double count)
{
    for (int i = 0; i < b->nitems; i++)
        if (b->item[i].kind == kind && plat_name_eq(b->item[i].model, model)) {
            b->item[i].count += count;
            return &b->item[i];
        }
    if (b->nitems == PLAT_BOM_MAX)
        return NULL;
    plat_item *it = &b->item[b->nitems++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    copy(it->model, sizeof it->model, model);
    it->count = count;
    it->price_usd = -1;
    return it;
}

/* Price and power of a non-GPU item from purchase.json. */
static void price_item(const cJSON *cat, plat_item *it)
{
    static const char *const arrays[PLAT_ITEM_KINDS] = {NULL, "servers", "nics", "switch_ports", NULL};
    const cJSON *e = NULL;
    if (it->kind == PLAT_ITEM_NVLINK_BRIDGE)
        e = cJSON_GetObjectItemCaseSensitive(cat, "nvlink_bridge");
    else if (arrays[it->kind])
        e = find(cat, arrays[it->kind], it->kind == PLAT_ITEM_SERVER ? "class" : "model", it->model);
    if (!e) {
        snprintf(it->price_source, sizeof it->price_source, "%s has no %s \"%s\"", PURCHASE_JSON,
                 plat_item_kind_name(it->kind), it->model);
        copy(it->power_source, sizeof it->power_source, it->price_source);
        return;
    }
    it->price_usd = num(e, "price_USD", -1);
    it->power_w = num(e, "power_W", 0);
    copy(it->price_source, sizeof it->price_source, str(e, "price_source", str(e, "source", "")));
    copy(it->power_source, sizeof it->power_source, str(e, "power_source", str(e, "source", "")));
    copy(it->date, sizeof it->date, str(e, "date", ""));
}

/* The GPU item and power states: price and board power from the GPU's
 * entry (gpus.json's, or a cluster's inline "gpu" object, named by
 * `where`), the states below it from purchase.json's fractions. */
static int price_gpu(const cJSON *cat, plat_bom *b, const sim_gpu *gpu, const cJSON *e, const char *where)
{
    const sim_gpu g = *gpu;
    copy(b->gpu_model, sizeof b->gpu_model, g.model);
    plat_item *it = add_item(b, PLAT_ITEM_GPU, g.model, b->ngpus);
    if (!it)
        return -1;
    it->price_usd = g.price_usd > 0 ? g.price_usd : -1;
    if (g.price_usd > 0)
        snprintf(it->price_source, sizeof it->price_source, "%s: %s", where,
                 str(e, "price_source", str(e, "source", "")));
    else
        snprintf(it->price_source, sizeof it->price_source, "%s has no price for %s (price_USD 0)", where, g.model);
    copy(it->date, sizeof it->date, str(e, "price_date", ""));
    it->power_w = g.power_w;
    snprintf(it->power_source, sizeof it->power_source, "%s power_W (board power)", where);
    const cJSON *gp = cJSON_GetObjectItemCaseSensitive(cat, "gpu_power");
    plat_gpu_power *p = &b->gpu_power;
    p->busy_w = g.power_w;
    p->comm_w = num(gp, "comm_fraction", 0) * g.power_w;
    p->idle_w = num(gp, "idle_fraction", 0) * g.power_w;
    snprintf(p->busy_source, sizeof p->busy_source, "%.0f W: %s", p->busy_w, str(gp, "busy_source", ""));
    snprintf(p->comm_source, sizeof p->comm_source, "%.0f W: %s", p->comm_w, str(gp, "comm_source", ""));
    snprintf(p->idle_source, sizeof p->idle_source, "%.0f W: %s", p->idle_w, str(gp, "idle_source", ""));
    return 0;
}

/* price_gpu for a catalogue model. */
static int price_catalog_gpu(const cJSON *cat, plat_bom *b, const char *model, sim_err *err)
{
    sim_gpu g;
    if (plat_gpu_lookup(model, &g, err) < 0)
        return -1;
    cJSON *e = plat_catalog_entry(PLAT_GPUS_JSON, "gpus", g.model, err);
    int rc = e ? price_gpu(cat, b, &g, e, "gpus.json") : -1;
    cJSON_Delete(e);
    return rc;
}

static void finish(const cJSON *cat, plat_bom *b)
{
    for (int i = 0; i < b->nitems; i++)
        if (b->item[i].kind != PLAT_ITEM_GPU)
            price_item(cat, &b->item[i]);
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(cat, "electricity");
    const cJSON *am = cJSON_GetObjectItemCaseSensitive(cat, "amortization");
    b->electricity_usd_kwh = num(el, "USD_per_kWh", 0);
    snprintf(b->electricity_source, sizeof b->electricity_source, "%s (%s)", str(el, "source", ""),
             str(el, "date", ""));
    b->amortization_years = num(am, "years", 0);
    snprintf(b->amortization_source, sizeof b->amortization_source, "%s", str(am, "source", ""));
}

/* NICs of one node: "nic": "M" or "nics": [{"model": M}, ...]; the first
 * NIC model in *first. */
static int count_nics(plat_bom *b, const cJSON *node, char *first, size_t n, sim_err *err)
{
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(node, "nic"), *e;
    int per_node = 0;
    first[0] = 0;
    plat_nic nic;
    if (cJSON_IsString(one)) {
        if (plat_nic_lookup(one->valuestring, &nic, err) < 0 || !add_item(b, PLAT_ITEM_NIC, nic.model, b->nodes))
            return -1;
        copy(first, n, nic.model);
        return 1;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(node, "nics"))
    {
        if (plat_nic_lookup(str(e, "model", ""), &nic, err) < 0 || !add_item(b, PLAT_ITEM_NIC, nic.model, b->nodes))
            return -1;
        if (!first[0])
            copy(first, n, nic.model);
        per_node++;
    }
    return per_node;
}

/* Switch ports: one per NIC, and a fat tree's leaf uplinks at both ends. */
static void count_ports(plat_bom *b, const cJSON *root, int nics_per_node, const char *first)
{
    if (b->nodes < 2 || nics_per_node == 0)
        return;
    int n = b->nitems;
    for (int i = 0; i < n; i++)
        if (b->item[i].kind == PLAT_ITEM_NIC)
            add_item(b, PLAT_ITEM_SWITCH_PORT, b->item[i].model, b->item[i].count);
    const cJSON *fab = cJSON_GetObjectItemCaseSensitive(root, "fabric");
    if (!fab || strcmp(str(fab, "type", "switch"), "fat-tree"))
        return;
    int per_leaf = (int)num(fab, "nodes_per_leaf", 1);
    double over = num(fab, "oversubscription", 1);
    if (per_leaf < 1 || per_leaf >= b->nodes || !(over > 0))
        return; /* one leaf: no spine to reach */
    double up = 0;
    for (int first_node = 0; first_node < b->nodes; first_node += per_leaf) {
        int k = b->nodes - first_node < per_leaf ? b->nodes - first_node : per_leaf;
        up += ceil(k * nics_per_node / over);
    }
    add_item(b, PLAT_ITEM_SWITCH_PORT, first, 2 * up);
}

static void server_class(plat_bom *b, const plat_gpu_info *info, int sockets)
{
    if (info->nvlink == PLAT_NVLINK_NVSWITCH)
        copy(b->server_class, sizeof b->server_class, b->gpus_per_node <= 4 ? "hgx-4gpu" : "hgx-8gpu");
    else
        copy(b->server_class, sizeof b->server_class, sockets >= 2 ? "pcie-2socket" : "pcie-1socket");
    add_item(b, PLAT_ITEM_SERVER, b->server_class, b->nodes);
}

int plat_bom_from_json(const char *cluster_json, const char *source, plat_bom *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(cluster_json), *cat = purchase_catalogue(err);
    const cJSON *node = cJSON_GetObjectItemCaseSensitive(root, "node");
    int rc = -1;
    if (!cat)
        goto out;
    if (!node && cJSON_GetObjectItemCaseSensitive(root, "groups")) {
        sim_errf(err, "%s: a cluster of node groups (mixed GPUs) has no bill of materials yet: its time comes from "
                      "`trainsim run --platform`, not its cost", source);
        goto out;
    }
    if (!node) {
        sim_errf(err, "%s: not a cluster JSON with a \"node\" object", source);
        goto out;
    }
    out->nodes = (int)num(root, "nodes", 0);
    out->gpus_per_node = (int)num(node, "gpus_per_node", 0);
    out->ngpus = out->nodes * out->gpus_per_node;
    sim_gpu g;
    plat_gpu_info info;
    const cJSON *inline_gpu = cJSON_GetObjectItemCaseSensitive(node, "gpu");
    if (cJSON_IsObject(inline_gpu)) {
        char where[160];
        snprintf(where, sizeof where, "%s: node.gpu", source);
        if (plat_gpu_from_json(inline_gpu, where, &g, &info, err) < 0 || price_gpu(cat, out, &g, inline_gpu, where) < 0)
            goto out;
    } else if (plat_gpu_lookup_info(str(node, "gpu", ""), &g, &info, err) < 0 ||
               price_catalog_gpu(cat, out, g.model, err) < 0)
        goto out;
    server_class(out, &info, (int)num(node, "sockets", 1));
    char first[48];
    int per_node = count_nics(out, node, first, sizeof first, err);
    if (per_node < 0)
        goto out;
    count_ports(out, root, per_node, first);
    const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "nvlink"), "pairs");
    if (info.nvlink == PLAT_NVLINK_BRIDGE && cJSON_GetArraySize(pairs) > 0)
        add_item(out, PLAT_ITEM_NVLINK_BRIDGE, "", (double)cJSON_GetArraySize(pairs) * out->nodes);
    finish(cat, out);
    rc = 0;
out:
    if (rc < 0)
        sim_err_prefix(err, "%s: bill of materials: ", source);
    cJSON_Delete(root);
    cJSON_Delete(cat);
    return rc;
}

int plat_bom_from_machine(const sim_machine *m, plat_bom *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *cat = purchase_catalogue(err);
    if (!cat)
        return -1;
    out->nodes = m->nnodes;
    out->ngpus = m->ngpus;
    out->gpus_per_node = m->nnodes > 0 ? m->ngpus / m->nnodes : m->ngpus;
    int rc = price_catalog_gpu(cat, out, sim_machine_gpu(m, 0)->model, err);
    if (rc == 0) {
        finish(cat, out);
        snprintf(out->note, sizeof out->note, "%s is a hand-written SimGrid platform: only its GPUs are counted "
                 "(no servers, NICs or switches)", m->name);
    }
    cJSON_Delete(cat);
    return rc;
}

/* ---- a user's costs file ---- */

/* "kind:model" of a costs file key into the kind and the catalogue's name
 * of the model (checked); power keys also take gpu_busy/gpu_comm/gpu_idle
 * (state 0..2 in *gpu_state, else -1). */
static int parse_key(const cJSON *cat, const char *own_gpu, const char *key, int power, plat_item_kind *kind,
                     int *gpu_state, char *model, size_t n, sim_err *err)
{
    static const char *const states[3] = {"gpu_busy", "gpu_comm", "gpu_idle"};
    const char *colon = strchr(key, ':');
    size_t kl = colon ? (size_t)(colon - key) : strlen(key);
    const char *name = colon ? colon + 1 : "";
    *gpu_state = -1;
    *kind = PLAT_ITEM_KINDS;
    for (int k = 0; k < PLAT_ITEM_KINDS; k++)
        if (strlen(KIND_NAMES[k]) == kl && !strncmp(key, KIND_NAMES[k], kl) && !(power && k == PLAT_ITEM_GPU))
            *kind = (plat_item_kind)k;
    for (int s = 0; power && s < 3; s++)
        if (strlen(states[s]) == kl && !strncmp(key, states[s], kl))
            *kind = PLAT_ITEM_GPU, *gpu_state = s;
    if (*kind == PLAT_ITEM_KINDS)
        return sim_errf(err, "unknown part \"%.*s\"; expected %s", (int)kl, key,
                        power ? "gpu_busy:MODEL, gpu_comm:MODEL, gpu_idle:MODEL, server:CLASS, nic:MODEL, "
                                "switch_port:MODEL or nvlink_bridge"
                              : "gpu:MODEL, server:CLASS, nic:MODEL, switch_port:MODEL or nvlink_bridge");
    if (*kind == PLAT_ITEM_NVLINK_BRIDGE) {
        copy(model, n, "");
        return colon ? sim_errf(err, "nvlink_bridge takes no model") : 0;
    }
    if (!colon || !*name)
        return sim_errf(err, "expected %s:MODEL", KIND_NAMES[*kind]);
    if (*kind == PLAT_ITEM_GPU && own_gpu && plat_name_eq(name, own_gpu)) {
        copy(model, n, own_gpu); /* the cluster's own GPU, maybe an inline one */
    } else if (*kind == PLAT_ITEM_GPU) {
        sim_gpu g;
        if (plat_gpu_lookup(name, &g, err) < 0)
            return -1;
        copy(model, n, g.model);
    } else if (*kind == PLAT_ITEM_SERVER) {
        const cJSON *e = find(cat, "servers", "class", name);
        if (!e) {
            char known[256] = "";
            const cJSON *s;
            cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(cat, "servers"))
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "",
                         str(s, "class", "?"));
            return sim_errf(err, "unknown server class \"%s\"; known: %s", name, known);
        }
        copy(model, n, str(e, "class", name));
    } else {
        plat_nic nic;
        if (plat_nic_lookup(name, &nic, err) < 0)
            return -1;
        copy(model, n, nic.model);
    }
    return 0;
}

/* One figure of the file onto the bill. */
static void apply_one(plat_bom *b, plat_item_kind kind, int gpu_state, const char *model, int power, double v,
                      const char *src, const char *date)
{
    if (kind == PLAT_ITEM_GPU && gpu_state >= 0) {
        if (!plat_name_eq(model, b->gpu_model))
            return;
        plat_gpu_power *p = &b->gpu_power;
        double *w[3] = {&p->busy_w, &p->comm_w, &p->idle_w};
        char *s[3] = {p->busy_source, p->comm_source, p->idle_source};
        *w[gpu_state] = v;
        snprintf(s[gpu_state], PLAT_SOURCE_MAX, "%.0f W: %s", v, src);
        if (gpu_state == 0)
            apply_one(b, kind, -1, model, 1, v, src, date);
        return;
    }
    for (int i = 0; i < b->nitems; i++) {
        plat_item *it = &b->item[i];
        if (it->kind != kind || !plat_name_eq(it->model, model))
            continue;
        if (power) {
            it->power_w = v;
            copy(it->power_source, sizeof it->power_source, src);
        } else {
            it->price_usd = v;
            copy(it->price_source, sizeof it->price_source, src);
            copy(it->date, sizeof it->date, date);
        }
    }
}

static int apply_table(plat_bom *b, const cJSON *cat, const cJSON *table, int power, const char *src,
                       const char *date, const char *source, sim_err *err)
{
    const char *what = power ? "power_W" : "prices_USD";
    if (!cJSON_IsObject(table))
        return sim_errf(err, "%s: %s: expected an object {\"PART:MODEL\": number}", source, what);
    const cJSON *e;
    cJSON_ArrayForEach(e, table)
    {
        plat_item_kind kind;
        int state;
        char model[48];
        if (parse_key(cat, b ? b->gpu_model : NULL, e->string, power, &kind, &state, model, sizeof model, err) < 0)
            return sim_err_prefix(err, "%s: %s.%s: ", source, what, e->string);
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0) || !isfinite(e->valuedouble)) {
            char *t = cJSON_PrintUnformatted(e);
            sim_errf(err, "%s: %s.%s: expected %s >= 0, got %s", source, what, e->string,
                     power ? "a power in watts" : "a price in USD", t ? t : "?");
            free(t);
            return -1;
        }
        if (b)
            apply_one(b, kind, state, model, power, e->valuedouble, src, date);
    }
    return 0;
}

static int apply_scalar(const cJSON *root, const char *key, int positive, double *dst, char *dst_src,
                        const char *src, const char *source, sim_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (positive ? !(v->valuedouble > 0) : v->valuedouble < 0))
        return sim_errf(err, "%s: %s: expected a number %s 0", source, key, positive ? ">" : ">=");
    if (dst) {
        *dst = v->valuedouble;
        copy(dst_src, PLAT_SOURCE_MAX, src);
    }
    return 0;
}

int plat_bom_apply_costs(plat_bom *b, const char *text, const char *source, sim_err *err)
{
    static const char *const keys[] = {"source", "date", "note", "prices_USD", "power_W", "electricity_USD_per_kWh",
                                       "amortization_years", NULL};
    cJSON *root = cJSON_Parse(text), *cat = purchase_catalogue(err);
    int rc = -1;
    if (!cat)
        goto out;
    if (!cJSON_IsObject(root)) {
        sim_errf(err, "%s: malformed JSON (expected an object with prices_USD and/or power_W)", source);
        goto out;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, root)
    {
        int ok = 0;
        for (int i = 0; keys[i] && !ok; i++)
            ok = !strcmp(e->string, keys[i]);
        if (!ok) {
            sim_errf(err, "%s: %s: unknown field; known: source, date, note, prices_USD, power_W, "
                     "electricity_USD_per_kWh, amortization_years", source, e->string);
            goto out;
        }
    }
    char src[PLAT_SOURCE_MAX];
    snprintf(src, sizeof src, "%s (%s)", str(root, "source", "no source given"), source);
    const char *date = str(root, "date", "");
    const cJSON *prices = cJSON_GetObjectItemCaseSensitive(root, "prices_USD");
    const cJSON *power = cJSON_GetObjectItemCaseSensitive(root, "power_W");
    if ((prices && apply_table(b, cat, prices, 0, src, date, source, err) < 0) ||
        (power && apply_table(b, cat, power, 1, src, date, source, err) < 0) ||
        apply_scalar(root, "electricity_USD_per_kWh", 0, b ? &b->electricity_usd_kwh : NULL,
                     b ? b->electricity_source : NULL, src, source, err) < 0 ||
        apply_scalar(root, "amortization_years", 1, b ? &b->amortization_years : NULL,
                     b ? b->amortization_source : NULL, src, source, err) < 0)
        goto out;
    rc = 0;
out:
    cJSON_Delete(root);
    cJSON_Delete(cat);
    return rc;
}
