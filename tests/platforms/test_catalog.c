/* test_catalog.c — GPU/NIC catalogue lookups, every built-in cluster, the
 * XML round trip (generated XML read back by plat_from_xml), and the
 * shipped hand-written example. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "platforms/catalog.h"
#include "platforms/platform.h"
#include "sim/costmodel.h"

static int failures;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b); }

/* The catalogue additions (issue 15): datasheet dense rates, memory,
 * NVLink, and what the fallbacks make of missing types. */
static void test_new_gpus(void)
{
    static const struct {
        const char *alias, *model;
        double fp32, tf32, bf16, fp8, mem_gb, gbps, nvlink;
        int p2p;
        plat_nvlink_kind kind;
    } G[] = {
        {"3090ti", "RTX3090Ti", 40, 40, 80, 80, 24, 1008, 56.25, 0, PLAT_NVLINK_BRIDGE}, /* fp8 -> bf16 */
        {"a6000", "RTX-A6000", 38.7, 77.4, 154.8, 154.8, 48, 768, 56.25, 1, PLAT_NVLINK_BRIDGE},
        {"A40", "A40", 37.4, 74.8, 149.7, 149.7, 48, 696, 56.25, 1, PLAT_NVLINK_BRIDGE},
        {"l40s", "L40S", 91.6, 183, 362.05, 733, 48, 864, 0, 1, PLAT_NVLINK_NONE},
        {"h200-sxm", "H200", 67, 494.7, 989.4, 1978.9, 141, 4800, 450, 1, PLAT_NVLINK_NVSWITCH},
        {"b200", "B200", 75, 1125, 2250, 4500, 180, 8000, 900, 1, PLAT_NVLINK_NVSWITCH},
        {"GB200", "GB200", 90, 1250, 2500, 5000, 186, 8000, 900, 1, PLAT_NVLINK_NVSWITCH},
        {"gb300-nvl72", "GB300", 80, 1250, 2500, 5000, 288, 8000, 900, 1, PLAT_NVLINK_NVSWITCH},
    };
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++) {
        sim_gpu g;
        plat_gpu_info info;
        sim_err err = {{0}};
        CHECK(plat_gpu_lookup_info(G[i].alias, &g, &info, &err) == 0, "%s: %s", G[i].alias, err.msg);
        CHECK(strcmp(g.model, G[i].model) == 0, "%s -> %s", G[i].alias, g.model);
        CHECK(near(g.peak_flops[SIM_DTYPE_FP32], G[i].fp32 * 1e12) && near(g.peak_flops[SIM_DTYPE_TF32], G[i].tf32 * 1e12) &&
                  near(g.peak_flops[SIM_DTYPE_BF16], G[i].bf16 * 1e12) && near(g.peak_flops[SIM_DTYPE_FP8], G[i].fp8 * 1e12),
              "%s rates %g %g %g %g", G[i].model, g.peak_flops[SIM_DTYPE_FP32], g.peak_flops[SIM_DTYPE_TF32],
              g.peak_flops[SIM_DTYPE_BF16], g.peak_flops[SIM_DTYPE_FP8]);
        CHECK(near(g.mem_capacity, G[i].mem_gb * 1e9) && near(g.mem_bw, G[i].gbps * 1e9), "%s memory", G[i].model);
        CHECK(info.nvlink == G[i].kind && (G[i].kind == PLAT_NVLINK_NONE || near(info.nvlink_GBps, G[i].nvlink)) &&
                  info.p2p == G[i].p2p,
              "%s NVLink/P2P", G[i].model);
        CHECK(g.power_w > 0 && g.overlap_compute >= 1, "%s power/overlap", G[i].model);
    }
    /* GB200 / GB300 are sold in NVL72 racks only: their prices are documented estimates */
    sim_gpu g;
    sim_err err = {{0}};
    CHECK(plat_gpu_lookup("GB200", &g, &err) == 0 && g.price_usd > 0, "GB200 price %g", g.price_usd);
    CHECK(plat_gpu_lookup("GB300", &g, &err) == 0 && g.price_usd > 0 && g.power_w == 1400, "GB300 price %g, power %g",
          g.price_usd, g.power_w);
    /* its ConnectX-8 (IB-XDR) sits on PCIe Gen6: 96.8 GB/s effective x16 */
    CHECK(fabs(plat_pcie_bw(6, 16, &err) - 96.8e9) < 1e6, "PCIe 6.0 x16 %g", plat_pcie_bw(6, 16, &err));
    CHECK(plat_gpu_lookup("A100-SXM-40GB", &g, &err) == 0 && g.price_usd > 0, "A100 SXM 40 GB price %g", g.price_usd);
    /* calibrated device parameters (validation/fit_*.c): shortest kernel, launch gap, TF32/FP8 scales */
    CHECK(plat_gpu_lookup("A100-SXM-80GB", &g, &err) == 0 && g.kernel_min_s > 1e-6 && g.kernel_min_s < 1e-5 &&
              g.launch_s > 0 && g.launch_s < 1e-5 && g.gemm_scale[SIM_DTYPE_TF32] > 0.3 && g.gemm_scale[SIM_DTYPE_TF32] < 1 &&
              g.gemm_scale[SIM_DTYPE_BF16] == 1,
          "A100 calibration kmin %g launch %g tf32 %g", g.kernel_min_s, g.launch_s, g.gemm_scale[SIM_DTYPE_TF32]);
    CHECK(plat_gpu_lookup("H100-SXM", &g, &err) == 0 && g.gemm_scale[SIM_DTYPE_FP8] > 0.5 &&
              g.gemm_scale[SIM_DTYPE_FP8] < 1 && g.mem_eff.efficiency[g.mem_eff.n - 1] < 0.95,
          "H100 fp8 scale %g", g.gemm_scale[SIM_DTYPE_FP8]);
    CHECK(plat_gpu_lookup("RTX4090", &g, &err) == 0 && g.kernel_min_s == 0 && g.gemm_scale[SIM_DTYPE_TF32] == 1,
          "uncalibrated GPUs keep the old cost rule");
}

/* A cluster's inline GPU object: read with the catalogue's rules, missing
 * types and curves from the same fallbacks and defaults as a built-in entry. */
static void test_inline_gpu(void)
{
    const char *json = "{\"name\": \"mine\", \"nodes\": 1, \"node\": {\"gpus_per_node\": 2, \"gpu\": "
                       "{\"model\": \"MyGPU\", \"tflops\": {\"fp32\": 10, \"bf16\": 100}, \"memory_GB\": 16, "
                       "\"memory_GBps\": 500, \"kernel_min_s\": 2e-6, \"gemm_scale\": {\"tf32\": 0.5}, "
                       "\"nvlink\": {\"kind\": \"bridge\", \"GBps\": 50}, \"price_USD\": 1234, "
                       "\"calibration_source\": \"mine\"}}}";
    sim_err err = {{0}};
    sim_machine *m = plat_from_json(json, "mine.json", &err);
    CHECK(m != NULL, "inline GPU: %s", err.msg);
    if (!m)
        return;
    const sim_gpu *g = &m->gpus[0];
    sim_gpu d;
    plat_gpu_lookup("RTX4090", &d, &err); /* an entry on the defaults */
    CHECK(strcmp(g->model, "MyGPU") == 0 && near(g->peak_flops[SIM_DTYPE_BF16], 100e12) &&
              near(g->peak_flops[SIM_DTYPE_TF32], 10e12) && near(g->peak_flops[SIM_DTYPE_FP16], 10e12) &&
              near(g->peak_flops[SIM_DTYPE_FP8], 100e12),
          "inline rates and fallbacks");
    CHECK(near(g->mem_bw, 500e9) && near(g->mem_capacity, 16e9) && near(g->kernel_min_s, 2e-6) &&
              near(g->gemm_scale[SIM_DTYPE_TF32], 0.5) && g->gemm_scale[SIM_DTYPE_BF16] == 1 && g->price_usd == 1234,
          "inline memory, shortest kernel, scale, price");
    CHECK(g->launch_s == d.launch_s && memcmp(&g->gemm_eff, &d.gemm_eff, sizeof d.gemm_eff) == 0 &&
              memcmp(&g->coll, &d.coll, sizeof d.coll) == 0 && g->overlap_compute == d.overlap_compute,
          "inline GPU takes the catalogue defaults for what it does not give");
    sim_machine_free(m);
}

static int gpu_entry(const char *text, sim_gpu *g, sim_err *err)
{
    cJSON *e = cJSON_Parse(text);
    int rc = plat_gpu_from_json(e, "mine.json", g, NULL, err);
    cJSON_Delete(e);
    return rc;
}

/* calibrated_like: a card without measurements takes a measured card's
 * device fields (its GEMM curve times a ratio), keeps its own peaks, and
 * overrides what it gives itself; bad references are explained. */
static void test_calibrated_like(void)
{
    sim_gpu h, b;
    sim_err err = {{0}};
    CHECK(plat_gpu_lookup("H100-SXM", &h, &err) == 0 && plat_gpu_lookup("B200", &b, &err) == 0, "%s", err.msg);
    double w = 1e12, r = sim_curve_eval(&b.gemm_eff, w) / sim_curve_eval(&h.gemm_eff, w);
    CHECK(r > 0.95 && r < 0.98, "B200 GEMM curve = H100's x its MAMF ratio (0.965): %g", r);
    CHECK(b.power_n == h.power_n && b.power_n > 0 && b.power_rate[b.power_n - 1] == h.power_rate[h.power_n - 1] &&
              b.gemm_scale[SIM_DTYPE_FP8] == h.gemm_scale[SIM_DTYPE_FP8] && b.launch_s == h.launch_s &&
              b.kernel_min_s == h.kernel_min_s && b.overlap_compute == h.overlap_compute &&
              memcmp(&b.mem_eff, &h.mem_eff, sizeof h.mem_eff) == 0 &&
              memcmp(b.mem_class, h.mem_class, sizeof h.mem_class) == 0 &&
              memcmp(&b.flash.eff[0], &h.flash.eff[0], sizeof h.flash.eff[0]) == 0,
          "B200 takes the H100's power table, FP8 scale, launch gap, kernel floor, overlap, memory and attention");
    CHECK(near(b.peak_flops[SIM_DTYPE_BF16], 2250e12) && near(b.mem_bw, 8000e9), "B200 keeps its own peaks");
    sim_gpu u;
    CHECK(plat_gpu_lookup("GB300", &u, &err) == 0, "%s", err.msg);
    CHECK(h.flash.score_scale[0] == 1 && h.flash.score_scale[1] == 1 && b.flash.score_scale[0] == 2 &&
              b.flash.score_scale[1] == 2 && b.flash2.score_scale[0] == 2 && u.flash.score_scale[0] == 1 &&
              u.flash.score_scale[1] == 2 && u.flash2.score_scale[1] == 2,
          "calibrated_like.score_work: B200 2 / 2, GB300 1 / 2 in both attention families, H100 1 / 1");

    const char *mine = "{\"model\": \"X1\", \"tflops\": {\"fp32\": 50, \"bf16\": 500}, \"memory_GB\": 64, "
                       "\"memory_GBps\": 2000, \"launch_s\": 3e-6, "
                       "\"calibrated_like\": {\"model\": \"h100\", \"gemm\": 0.5}}";
    sim_gpu x;
    CHECK(gpu_entry(mine, &x, &err) == 0, "inline calibrated_like: %s", err.msg);
    CHECK(near(sim_curve_eval(&x.gemm_eff, w), 0.5 * sim_curve_eval(&h.gemm_eff, w)) && x.launch_s == 3e-6 &&
              x.power_n == h.power_n,
          "inline: the curve halved, its own launch gap kept, the power table taken");
    static const struct {
        const char *like, *msg;
    } BAD[] = {{"{\"model\": \"RTX9090\"}", "RTX9090"},
               {"{\"model\": \"B200\"}", "measurements of its own"},
               {"{\"model\": \"H100-SXM\", \"gemm\": 3}", "(0, 2]"},
               {"\"H100-SXM\"", "calibrated_like: expected"},
               {"{\"model\": \"H100-SXM\", \"score_work\": 2}", "calibrated_like.score_work: expected"},
               {"{\"model\": \"H100-SXM\", \"score_work\": {\"fwd\": 20, \"bwd\": 2}}", "[0.25, 8]"}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"model\": \"X1\", \"tflops\": {\"fp32\": 50}, \"memory_GB\": 64, \"memory_GBps\": 2000, "
                 "\"calibrated_like\": %s}",
                 BAD[i].like);
        err.msg[0] = 0;
        CHECK(gpu_entry(text, &x, &err) == -1 && strstr(err.msg, BAD[i].msg) &&
                  strstr(err.msg, "calibrated_like"),
              "bad calibrated_like %s: %s", BAD[i].like, err.msg);
    }
}

static void test_gpus(void)
{
    sim_gpu g;
    sim_err err = {{0}};
    CHECK(plat_gpu_lookup("3090", &g, &err) == 0, "%s", err.msg);
    CHECK(strcmp(g.model, "RTX3090") == 0, "alias 3090 gave %s", g.model);
    CHECK(near(g.peak_flops[SIM_DTYPE_FP32], 35.6e12), "3090 fp32 %g", g.peak_flops[SIM_DTYPE_FP32]);
    CHECK(near(g.peak_flops[SIM_DTYPE_TF32], 35.6e12), "3090 tf32 %g", g.peak_flops[SIM_DTYPE_TF32]);
    CHECK(near(g.peak_flops[SIM_DTYPE_FP16], 71e12), "3090 fp16 %g", g.peak_flops[SIM_DTYPE_FP16]);
    CHECK(near(g.mem_capacity, 24e9) && near(g.mem_bw, 936.2e9), "3090 memory %g %g", g.mem_capacity, g.mem_bw);
    CHECK(g.launch_s > 0 && g.launch_s < 1e-4, "launch %g", g.launch_s); /* fitted: PyTorch eager dispatch, ~40 us */
    /* the RTX 3090 carries its fitted curve (validation/fit_gemm.c): 8 points, log10 FLOPs 6..13 */
    CHECK(g.gemm_eff.n == 8 && g.gemm_eff.log10_work[0] == 6 && g.gemm_eff.log10_work[7] == 13 &&
              g.gemm_eff.efficiency[7] > 0.5 && g.gemm_eff.efficiency[7] <= 1,
          "fitted GEMM curve sorted (n=%d)", g.gemm_eff.n);
    CHECK(g.mem_eff.n == 8 && g.attn_eff.n == 8, "fitted curves %d %d", g.mem_eff.n, g.attn_eff.n);
    for (int i = 1; i < g.gemm_eff.n; i++)
        CHECK(g.gemm_eff.log10_work[i] > g.gemm_eff.log10_work[i - 1], "curve not ascending at %d", i);

    CHECK(plat_gpu_lookup("rtx3090", &g, &err) == 0 && strcmp(g.model, "RTX3090") == 0, "rtx3090");
    CHECK(plat_gpu_lookup("RTX-3090", &g, &err) == 0 && strcmp(g.model, "RTX3090") == 0, "RTX-3090");
    CHECK(plat_gpu_lookup("A100", &g, &err) == 0 && strcmp(g.model, "A100-SXM-80GB") == 0, "a100 -> %s", g.model);
    CHECK(near(g.peak_flops[SIM_DTYPE_TF32], 156e12) && near(g.peak_flops[SIM_DTYPE_BF16], 312e12) &&
              near(g.peak_flops[SIM_DTYPE_FP32], 19.5e12),
          "A100 rates");
    CHECK(near(g.peak_flops[SIM_DTYPE_FP8], 312e12), "A100 fp8 falls back to bf16: %g", g.peak_flops[SIM_DTYPE_FP8]);
    CHECK(plat_gpu_lookup("h100", &g, &err) == 0 && near(g.peak_flops[SIM_DTYPE_FP8], 1978.9e12) &&
              near(g.peak_flops[SIM_DTYPE_TF32], 494.7e12) && near(g.peak_flops[SIM_DTYPE_BF16], 989.4e12) &&
              near(g.peak_flops[SIM_DTYPE_FP32], 67e12),
          "H100 SXM rates");
    CHECK(plat_gpu_lookup("v100", &g, &err) == 0 && near(g.peak_flops[SIM_DTYPE_TF32], 15.7e12) &&
              near(g.peak_flops[SIM_DTYPE_FP16], 125e12),
          "V100: tf32 falls back to fp32 (%g)", g.peak_flops[SIM_DTYPE_TF32]);
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        CHECK(g.peak_flops[d] > 0, "V100 %s peak is zero", sim_dtype_name((sim_dtype)d));

    const char *all[] = {"RTX3090", "RTX3090Ti", "RTX4090", "RTX-A6000", "A40", "L40S", "A100-PCIe-40GB",
                         "A100-PCIe-80GB", "A100-SXM-80GB", "A100-SXM-40GB", "V100-SXM2-32GB", "H100-PCIe",
                         "H100-SXM", "H200", "B200"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        plat_gpu_info info;
        CHECK(plat_gpu_lookup_info(all[i], &g, &info, &err) == 0, "%s: %s", all[i], err.msg);
        CHECK(g.power_w > 0 && g.price_usd > 0 && info.pcie_gen >= 3, "%s power/price/pcie", all[i]);
    }
    plat_gpu_info info;
    plat_gpu_lookup_info("RTX4090", &g, &info, &err);
    CHECK(!info.p2p && info.nvlink == PLAT_NVLINK_NONE, "4090 has neither P2P nor NVLink");
    plat_gpu_lookup_info("A100-SXM-80GB", &g, &info, &err);
    CHECK(info.p2p && info.nvlink == PLAT_NVLINK_NVSWITCH && info.nvlink_GBps == 300, "A100 SXM NVSwitch 300");

    CHECK(plat_gpu_lookup("RTX9090", &g, &err) == -1, "unknown model accepted");
    test_new_gpus();
    CHECK(strstr(err.msg, "RTX9090") && strstr(err.msg, "RTX3090") && strstr(err.msg, "H100-SXM"),
          "message lists known models: %s", err.msg);
}

static void test_nics(void)
{
    plat_nic n;
    sim_err err = {{0}};
    CHECK(plat_nic_lookup("100gbe", &n, &err) == 0 && near(n.bw, 12.5e9), "100GbE %g", n.bw);
    CHECK(plat_nic_lookup("hdr", &n, &err) == 0 && near(n.bw, 25e9) && n.latency_s > 0, "HDR");
    CHECK(plat_nic_lookup("IB-NDR", &n, &err) == 0 && near(n.bw, 50e9), "NDR");
    CHECK(plat_nic_lookup("connectx-8", &n, &err) == 0 && near(n.bw, 100e9), "ConnectX-8 (IB-XDR) %g", n.bw);
    CHECK(plat_nic_lookup("10GbE", &n, &err) == 0 && n.latency_s >= 10e-6, "10GbE TCP latency");
    CHECK(plat_nic_lookup("42GbE", &n, &err) == -1 && strstr(err.msg, "100GbE"), "%s", err.msg);
    CHECK(near(plat_pcie_bw(4, 16, &err), 25e9) && near(plat_pcie_bw(3, 8, &err), 6.25e9), "PCIe table");
    CHECK(plat_pcie_bw(7, 16, &err) < 0, "PCIe gen 7 accepted");
}

static const struct {
    const char *name, *gpu;
    int nnodes, per_node;
} clusters[] = {
    {"oases-3090", "RTX3090", 8, 4},       {"oases-3090-nvlink", "RTX3090", 8, 4},
    {"a100-sxm-128n", "A100-SXM-80GB", 128, 8}, {"galvatron-pcie-2x8", "RTX3090", 2, 8},
    {"p3.8xlarge-5n", "V100-SXM2-16GB", 5, 4}, {"rtx4090-4x8", "RTX4090", 4, 8},
    {"h100-pcie-2x8", "H100-PCIe", 2, 8},
};

static void test_clusters(void)
{
    for (size_t c = 0; c < sizeof clusters / sizeof clusters[0]; c++) {
        sim_err err = {{0}};
        sim_machine *m = plat_load(clusters[c].name, &err);
        CHECK(m != NULL, "%s: %s", clusters[c].name, err.msg);
        if (!m)
            continue;
        CHECK(strcmp(m->name, clusters[c].name) == 0, "name %s", m->name);
        CHECK(m->nnodes == clusters[c].nnodes && m->ngpus == clusters[c].nnodes * clusters[c].per_node,
              "%s: %d nodes %d gpus", clusters[c].name, m->nnodes, m->ngpus);
        CHECK(m->nmodels == 1 && strcmp(m->gpus[0].model, clusters[c].gpu) == 0, "%s model %s", clusters[c].name,
              m->gpus[0].model);
        sim_gpu g;
        plat_gpu_lookup(clusters[c].gpu, &g, &err);
        CHECK(memcmp(&g, &m->gpus[0], sizeof g) == 0, "%s: GPU spec differs from the catalogue", clusters[c].name);
        for (int r = 0; r < m->ngpus; r++) {
            char want[48];
            snprintf(want, sizeof want, "n%d-gpu%d", r / clusters[c].per_node, r % clusters[c].per_node);
            CHECK(m->host[r] && strcmp(m->host[r], want) == 0, "rank %d host %s", r, m->host[r]);
            CHECK(m->node[r] == r / clusters[c].per_node && m->gpu_model[r] == 0, "rank %d node", r);
        }
        CHECK(strstr(m->platform_xml, "<platform version=\"4.1\">") != NULL, "DTD 4.1");
        CHECK(strstr(m->platform_xml, "sharing_policy=\"FATPIPE\"") == NULL, "no FATPIPE");

        /* Round trip: the generated XML carries trainsim:* properties. */
        char path[] = "/tmp/trainsim-rt-XXXXXX";
        int fd = mkstemp(path);
        FILE *f = fdopen(fd, "w");
        fputs(m->platform_xml, f);
        fclose(f);
        char xpath[64];
        snprintf(xpath, sizeof xpath, "%s.xml", path);
        rename(path, xpath);
        sim_machine *x = plat_load(xpath, &err);
        CHECK(x != NULL, "%s: XML round trip: %s", clusters[c].name, err.msg);
        if (x) {
            CHECK(x->ngpus == m->ngpus && x->nnodes == m->nnodes, "round trip counts %d %d", x->ngpus, x->nnodes);
            for (int r = 0; r < m->ngpus && r < x->ngpus; r++)
                CHECK(strcmp(x->host[r], m->host[r]) == 0 && x->node[r] == m->node[r], "round trip rank %d", r);
            CHECK(strcmp(x->platform_xml, m->platform_xml) == 0, "XML text kept");
        }
        sim_machine_free(x);
        remove(xpath);
        sim_machine_free(m);
    }
}

static void test_example_xml(void)
{
    char path[1024];
    const char *src = getenv("SRC");
    snprintf(path, sizeof path, "%s/platforms/examples/two-node.xml", src ? src : ".");
    sim_err err = {{0}};
    sim_machine *m = plat_load(path, &err);
    CHECK(m != NULL, "%s", err.msg);
    if (!m)
        return;
    CHECK(m->ngpus == 4 && m->nnodes == 2, "example: %d GPUs %d nodes", m->ngpus, m->nnodes);
    CHECK(strcmp(m->host[0], "alpha-gpu0") == 0 && strcmp(m->host[3], "beta-gpu1") == 0, "example hosts %s %s",
          m->host[0], m->host[3]);
    CHECK(m->node[1] == 0 && m->node[2] == 1, "example nodes");
    CHECK(m->nmodels == 1 && strcmp(m->gpus[0].model, "RTX4090") == 0, "example model");
    sim_machine_free(m);
}

/* The listing's document names every built-in cluster, GPU and NIC. */
static int listed(const cJSON *doc, const char *list, const char *key, const char *want)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, list))
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, key)), want))
            return 1;
    return 0;
}

static void test_listing(void)
{
    cJSON *doc = plat_catalogue_doc();
    CHECK(listed(doc, "clusters", "name", "oases-3090") && listed(doc, "clusters", "name", "a100-sxm-128n") &&
              listed(doc, "gpus", "model", "H100-SXM") && listed(doc, "nics", "model", "IB-HDR"),
          "catalogue listing lacks a built-in entry");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(doc, "clusters"))
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")), "oases-3090"))
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "gpus")) == 32, "oases-3090: 32 GPUs");
    cJSON_Delete(doc);
}

int main(void)
{
    test_gpus();
    test_inline_gpu();
    test_calibrated_like();
    test_nics();
    test_clusters();
    test_example_xml();
    test_listing();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures != 0;
}
