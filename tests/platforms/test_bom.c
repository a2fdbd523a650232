/* Bills of materials counted from cluster JSON against hand counts (GPUs,
 * servers and their class, NICs, switch ports with a fat tree's uplinks at
 * both ends, NVLink bridges), priced from the catalogue with a source for
 * every figure; a costs file laid over it (and its bad inputs: negative,
 * unknown part, unknown model, unknown field); the what-if edits of a
 * cluster (nodes, nic, gpu, nvlink) and their errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/bom.h"
#include "platforms/edit.h"
#include "platforms/platform.h"

static int fails;

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (!(cond)) {                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                               \
            printf(__VA_ARGS__);                                                                                      \
            printf("\n");                                                                                             \
            fails++;                                                                                                  \
        }                                                                                                             \
    } while (0)

static const plat_item *item(const plat_bom *b, plat_item_kind k, const char *model)
{
    for (int i = 0; i < b->nitems; i++)
        if (b->item[i].kind == k && (!model || !strcmp(b->item[i].model, model)))
            return &b->item[i];
    return NULL;
}

static double count(const plat_bom *b, plat_item_kind k)
{
    double n = 0;
    for (int i = 0; i < b->nitems; i++)
        if (b->item[i].kind == k)
            n += b->item[i].count;
    return n;
}

static int bom_of(const char *spec, plat_bom *b)
{
    char source[256];
    sim_err e;
    char *json = plat_cluster_text(spec, source, sizeof source, &e);
    int rc = json ? plat_bom_from_json(json, source, b, &e) : -1;
    if (rc < 0)
        printf("FAIL: %s: %s\n", spec, e.msg), fails++;
    free(json);
    return rc;
}

/* every figure says where it comes from */
static void sourced(const plat_bom *b, const char *what)
{
    for (int i = 0; i < b->nitems; i++) {
        const plat_item *it = &b->item[i];
        CHECK(it->price_usd >= 0 && it->price_source[0] && it->power_source[0], "%s: %s %s has no price or source",
              what, plat_item_kind_name(it->kind), it->model);
    }
    CHECK(b->gpu_power.busy_w > b->gpu_power.comm_w && b->gpu_power.comm_w > b->gpu_power.idle_w &&
              b->gpu_power.idle_w > 0 && b->gpu_power.idle_source[0] && b->gpu_power.comm_source[0],
          "%s: GPU power states busy %g > comm %g > idle %g > 0, each with a source", what, b->gpu_power.busy_w,
          b->gpu_power.comm_w, b->gpu_power.idle_w);
    CHECK(b->electricity_usd_kwh > 0 && b->amortization_years > 0, "%s: electricity and amortisation", what);
}

static void counts(void)
{
    plat_bom b;
    /* 128 DGX-like nodes, 8 HDR NICs each, fat tree of 16 nodes per leaf:
     * 1024 node ports + 8 leaves x 128 uplinks at both ends */
    if (bom_of("a100-sxm-128n", &b) == 0) {
        CHECK(b.ngpus == 1024 && b.nodes == 128, "a100-sxm-128n: %d GPUs, %d nodes", b.ngpus, b.nodes);
        CHECK(!strcmp(b.server_class, "hgx-8gpu") && count(&b, PLAT_ITEM_SERVER) == 128, "server class %s",
              b.server_class);
        CHECK(count(&b, PLAT_ITEM_NIC) == 1024 && item(&b, PLAT_ITEM_NIC, "IB-HDR"), "NICs %g",
              count(&b, PLAT_ITEM_NIC));
        CHECK(count(&b, PLAT_ITEM_SWITCH_PORT) == 1024 + 2 * 8 * 128, "switch ports %g (want 3072)",
              count(&b, PLAT_ITEM_SWITCH_PORT));
        CHECK(count(&b, PLAT_ITEM_NVLINK_BRIDGE) == 0, "no bridges on NVSwitch");
        sourced(&b, "a100-sxm-128n");
    }
    if (bom_of("rtx4090-4x8", &b) == 0) {
        CHECK(b.ngpus == 32 && !strcmp(b.server_class, "pcie-2socket"), "rtx4090-4x8: %d GPUs, %s", b.ngpus,
              b.server_class);
        CHECK(count(&b, PLAT_ITEM_NIC) == 4 && count(&b, PLAT_ITEM_SWITCH_PORT) == 4, "one 100GbE NIC and port per node");
        const plat_item *g = item(&b, PLAT_ITEM_GPU, "RTX4090");
        CHECK(g && g->count == 32 && g->price_usd > 0 && g->power_w == 450, "RTX4090 x32 priced, 450 W board power");
        sourced(&b, "rtx4090-4x8");
    }
    /* bridged pairs: 4 per node */
    if (bom_of("h100-pcie-2x8", &b) == 0) {
        CHECK(count(&b, PLAT_ITEM_NVLINK_BRIDGE) == 8, "h100-pcie-2x8 bridges %g (want 8)",
              count(&b, PLAT_ITEM_NVLINK_BRIDGE));
        CHECK(count(&b, PLAT_ITEM_NIC) == 4 && item(&b, PLAT_ITEM_SWITCH_PORT, "IB-NDR"), "2 NDR NICs per node");
    }
    /* one node: no switch */
    if (bom_of("azure-nd-a100-v4", &b) == 0)
        CHECK(count(&b, PLAT_ITEM_SWITCH_PORT) == 0 && count(&b, PLAT_ITEM_NIC) == 8, "one node, no switch ports");
}

static void costs_file(void)
{
    plat_bom b;
    sim_err e;
    if (bom_of("rtx4090-4x8", &b) < 0)
        return;
    const char *ok = "{\"source\": \"quote\", \"date\": \"2024-06\", \"prices_USD\": {\"gpu:4090\": 1799, "
                     "\"nic:100g\": 700, \"server:pcie-2socket\": 14000}, \"power_W\": {\"gpu_idle:RTX4090\": 30, "
                     "\"gpu_busy:RTX4090\": 420, \"switch_port:100GbE\": 9}, \"electricity_USD_per_kWh\": 0.2}";
    CHECK(plat_bom_apply_costs(&b, ok, "c.json", &e) == 0, "costs file: %s", e.msg);
    const plat_item *g = item(&b, PLAT_ITEM_GPU, "RTX4090"), *n = item(&b, PLAT_ITEM_NIC, "100GbE");
    CHECK(g && g->price_usd == 1799 && strstr(g->price_source, "quote (c.json)") && !strcmp(g->date, "2024-06"),
          "GPU price overridden with its source: %s", g ? g->price_source : "?");
    CHECK(g && g->power_w == 420 && b.gpu_power.busy_w == 420 && b.gpu_power.idle_w == 30, "GPU powers overridden");
    CHECK(n && n->price_usd == 700, "NIC price overridden");
    CHECK(item(&b, PLAT_ITEM_SWITCH_PORT, "100GbE")->power_w == 9 && b.electricity_usd_kwh == 0.2,
          "port power and electricity overridden");
    /* an entry for a part this cluster does not have is fine */
    CHECK(plat_bom_apply_costs(&b, "{\"prices_USD\": {\"nic:IB-NDR\": 2000}}", "c.json", &e) == 0, "%s", e.msg);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"prices_USD\": {\"gpu:RTX4090\": -5}}", "c.json: prices_USD.gpu:RTX4090: expected a price in USD >= 0, got -5"},
        {"{\"prices_USD\": {\"gpu:RTX9090\": 5}}", "unknown GPU model \"RTX9090\""},
        {"{\"prices_USD\": {\"cpu:x\": 5}}", "c.json: prices_USD.cpu:x: unknown part \"cpu\""},
        {"{\"prices_USD\": {\"server:mainframe\": 5}}", "unknown server class \"mainframe\"; known: pcie-1socket"},
        {"{\"power_W\": {\"nic:100GbE\": \"a lot\"}}", "c.json: power_W.nic:100GbE: expected a power in watts >= 0"},
        {"{\"price\": {}}", "c.json: price: unknown field"},
        {"{\"amortization_years\": 0}", "c.json: amortization_years: expected a number > 0"},
        {"[1,", "c.json: malformed JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        int rc = plat_bom_apply_costs(NULL, bad[i].text, "c.json", &e);
        CHECK(rc < 0 && strstr(e.msg, bad[i].want), "costs %s: want \"%s\", got \"%s\"", bad[i].text, bad[i].want,
              e.msg);
    }
}

/* Edits go through the platform builder like any cluster. */
static sim_machine *edited(const char *spec, const char *field, const char *value, char **json_out)
{
    char source[256];
    sim_err e;
    char *json = plat_cluster_text(spec, source, sizeof source, &e);
    char *out = json ? plat_cluster_edit(json, source, field, value, &e) : NULL;
    free(json);
    sim_machine *m = out ? plat_from_json(out, source, &e) : NULL;
    if (!m)
        printf("edit %s %s=%s: %s\n", spec, field, value, e.msg);
    if (json_out)
        *json_out = out;
    else
        free(out);
    return m;
}

static void edits(void)
{
    char *json = NULL;
    sim_machine *m = edited("rtx4090-4x8", "nodes", "8", &json);
    CHECK(m && m->ngpus == 64 && m->nnodes == 8 && strstr(m->name, "rtx4090-4x8+nodes=8"), "nodes=8: %d GPUs, %s",
          m ? m->ngpus : 0, m ? m->name : "");
    sim_machine_free(m);
    free(json);
    plat_bom b;
    m = edited("a100-sxm-128n", "nic", "IB-NDR", &json);
    CHECK(m && json && plat_bom_from_json(json, "x", &b, NULL) == 0 && item(&b, PLAT_ITEM_NIC, "IB-NDR") &&
              !item(&b, PLAT_ITEM_NIC, "IB-HDR") && count(&b, PLAT_ITEM_NIC) == 1024,
          "nic=IB-NDR replaces every NIC of the list");
    sim_machine_free(m);
    free(json);
    m = edited("rtx4090-4x8", "nic", "25GbE", &json);
    CHECK(m && json && plat_bom_from_json(json, "x", &b, NULL) == 0 && item(&b, PLAT_ITEM_NIC, "25GbE"), "nic=25GbE");
    sim_machine_free(m);
    free(json);
    m = edited("rtx4090-4x8", "nvlink", "bridge", &json);
    CHECK(!m, "RTX 4090 has no NVLink: the builder refuses the bridges");
    free(json);
    m = edited("h100-pcie-2x8", "nvlink", "none", &json);
    CHECK(m && json && plat_bom_from_json(json, "x", &b, NULL) == 0 && count(&b, PLAT_ITEM_NVLINK_BRIDGE) == 0,
          "nvlink=none removes the bridges");
    sim_machine_free(m);
    free(json);
    m = edited("a100-pcie-8x8", "nvlink", "bridge", &json);
    CHECK(m && json && plat_bom_from_json(json, "x", &b, NULL) == 0 && count(&b, PLAT_ITEM_NVLINK_BRIDGE) == 32,
          "nvlink=bridge on 8 nodes x 8 GPUs: 32 bridges");
    sim_machine_free(m);
    free(json);
    m = edited("rtx4090-4x8", "gpu", "h100-pcie", &json);
    CHECK(m && !strcmp(sim_machine_gpu(m, 0)->model, "H100-PCIe"), "gpu=h100-pcie");
    sim_machine_free(m);
    free(json);
    static const struct {
        const char *field, *value, *want;
    } bad[] = {
        {"nodes", "0", "src: nodes=0: expected a positive number of nodes"},
        {"nic", "900GbE", "src: nic=900GbE: unknown NIC model \"900GbE\"; known:"},
        {"gpu", "RTX9090", "src: gpu=RTX9090: unknown GPU model"},
        {"nvlink", "maybe", "src: nvlink=maybe: expected none, bridge or nvswitch"},
        {"colour", "red", "src: cannot vary \"colour\"; the fields are nodes, gpu, nic, nvlink"},
    };
    char source[256];
    sim_err e;
    char *text = plat_cluster_text("rtx4090-4x8", source, sizeof source, &e);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        char *out = plat_cluster_edit(text, "src", bad[i].field, bad[i].value, &e);
        CHECK(!out && strstr(e.msg, bad[i].want), "edit %s=%s: want \"%s\", got \"%s\"", bad[i].field, bad[i].value,
              bad[i].want, e.msg);
        free(out);
    }
    free(text);
}

/* a cluster's inline GPU object is priced and powered from its own fields,
 * and a costs file may name it */
static void inline_gpu(void)
{
    const char *json = "{\"name\": \"mine\", \"nodes\": 2, \"node\": {\"gpus_per_node\": 4, \"nic\": \"100GbE\", "
                       "\"gpu\": {\"model\": \"MyGPU\", \"tflops\": {\"fp32\": 10, \"bf16\": 100}, "
                       "\"memory_GB\": 16, \"memory_GBps\": 500, \"power_W\": 300, \"price_USD\": 1234, "
                       "\"source\": \"my quote\"}}}";
    plat_bom b;
    sim_err e = {{0}};
    int rc = plat_bom_from_json(json, "mine.json", &b, &e);
    CHECK(rc == 0, "inline GPU: %s", e.msg);
    if (rc < 0)
        return;
    const plat_item *g = item(&b, PLAT_ITEM_GPU, "MyGPU");
    CHECK(g && g->count == 8 && g->price_usd == 1234 && g->power_w == 300 && strstr(g->price_source, "my quote") &&
              strstr(g->price_source, "mine.json: node.gpu"),
          "inline GPU x8 at 1234 USD, 300 W, its source (%s)", g ? g->price_source : "none");
    CHECK(b.gpu_power.busy_w == 300, "busy power from the inline board power");
    CHECK(plat_bom_apply_costs(&b, "{\"prices_USD\": {\"gpu:MyGPU\": 999}}", "costs.json", &e) == 0 &&
              item(&b, PLAT_ITEM_GPU, "MyGPU")->price_usd == 999,
          "costs file names the inline GPU: %s", e.msg);
}

int main(void)
{
    counts();
    inline_gpu();
    costs_file();
    edits();
    if (fails)
        printf("%d failure(s)\n", fails);
    else
        printf("ok\n");
    return fails ? 1 : 0;
}
