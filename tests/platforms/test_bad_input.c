/* test_bad_input.c — every malformed platform returns NULL with a message
 * naming the source, the field and what was expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"

static int failures;

/* Loads JSON text; expects failure and every needle in the message. */
static void bad_json(const char *text, const char *n1, const char *n2, const char *n3)
{
    sim_err err = {{0}};
    sim_machine *m = plat_from_json(text, "mycluster.json", &err);
    const char *needles[] = {"mycluster.json", n1, n2, n3};
    if (m) {
        fprintf(stderr, "FAIL: accepted %s\n", text);
        failures++;
        sim_machine_free(m);
        return;
    }
    for (int i = 0; i < 4; i++)
        if (needles[i] && !strstr(err.msg, needles[i])) {
            fprintf(stderr, "FAIL: message \"%s\" lacks \"%s\" (input %s)\n", err.msg, needles[i], text);
            failures++;
        }
}

static void bad_file(const char *path, const char *n1, const char *n2)
{
    sim_err err = {{0}};
    sim_machine *m = plat_load(path, &err);
    if (m) {
        fprintf(stderr, "FAIL: loaded %s\n", path);
        failures++;
        sim_machine_free(m);
        return;
    }
    if ((n1 && !strstr(err.msg, n1)) || (n2 && !strstr(err.msg, n2))) {
        fprintf(stderr, "FAIL: message \"%s\" lacks \"%s\" or \"%s\"\n", err.msg, n1, n2 ? n2 : "");
        failures++;
    }
}

#define NODE(x) "{\"nodes\": 2, \"node\": {" x "}}"

int main(void)
{
    /* node.nvlink.domain_gpus: NVSwitch only, whole nodes, at most the cluster */
#define NVL72(n, nv) "{\"nodes\": " #n ", \"node\": {\"gpu\": \"GB200\", \"gpus_per_node\": 4, \"nic\": \"IB-NDR\", " \
                     "\"nvlink\": " nv "}}"
    bad_json(NVL72(18, "{\"nvswitch\": true, \"domain_gpus\": 70}"), "node.nvlink.domain_gpus",
             "70 is not a multiple of node.gpus_per_node (4)", NULL);
    bad_json(NVL72(2, "{\"nvswitch\": true, \"domain_gpus\": 72}"), "node.nvlink.domain_gpus",
             "72 is more than the cluster's 8 GPUs", NULL);
    bad_json(NVL72(18, "{\"domain_gpus\": 72}"), "node.nvlink.domain_gpus", "NVSwitch", "\"nvswitch\": true");
    bad_json(NVL72(18, "{\"nvswitch\": true, \"domain_gpus\": 0}"), "node.nvlink.domain_gpus", "positive integer",
             NULL);
    bad_json(NVL72(18, "{\"nvswitch\": true, \"domain_gpus\": \"72\"}"), "node.nvlink.domain_gpus", "\"72\"", NULL);
    bad_json(NVL72(200, "{\"nvswitch\": true, \"domain_gpus\": 800}"), "node.nvlink.domain_gpus", "more than 576",
             NULL);
    bad_json("{\"nodes\": 36, \"node\": {\"gpu\": \"GB200\", \"gpus_per_node\": 4, \"nic\": \"IB-NDR\", "
             "\"nvlink\": {\"nvswitch\": true, \"domain_gpus\": 72}}, \"fabric\": {\"type\": \"fat-tree\", "
             "\"nodes_per_leaf\": 8}}",
             "fabric.nodes_per_leaf", "8 does not hold whole NVLink domains of 18 nodes", NULL);
    bad_json(NODE("\"gpu\": \"RTX9090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\""), "node.gpu",
             "unknown GPU model \"RTX9090\"", "RTX3090");
    /* an inline GPU object: the catalogue's fields and checks */
#define MYGPU(x) NODE("\"gpu\": {\"model\": \"MyGPU\", " x "}, \"gpus_per_node\": 2, \"nic\": \"100GbE\"")
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16"), "node.gpu", "MyGPU",
             "memory_GB and memory_GBps must be positive");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, \"tflop\": 3"),
             "node.gpu", "unknown field \"tflop\"", "known: model");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10, \"fp16\": -1}, \"memory_GB\": 16, \"memory_GBps\": 500"),
             "node.gpu", "tflops", "fp16");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"nvlink\": {\"kind\": \"xgmi\", \"GBps\": 64}"),
             "node.gpu", "nvlink.kind", "expected none, bridge, mesh or nvswitch");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, \"gemm\": {\"9\": 1.5}"),
             "node.gpu", "MyGPU.gemm", "efficiency in (0, 1]");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"power\": {\"load\": [0.8, 0.4], \"gemm_rate\": [1, 0.9]}"),
             "node.gpu", "power: point 2", "above the previous one");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"power\": {\"load\": [0.4, 0.8], \"gemm_rate\": [1]}"),
             "node.gpu", "power", "2 to 8 points each");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, \"gemm_unaligned\": 0"),
             "node.gpu", "gemm_unaligned", "expected a number in");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, \"optimizer_rate\": 1.2"),
             "node.gpu", "optimizer_rate", "expected a number in");
    /* memory_class: known classes, fractions in (0, 1] */
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"memory_class\": {\"cast_down\": 0.5}"),
             "MyGPU: memory_class", "unknown class \"cast_down\"", "known: cast_up, norm, reduce, strided");
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"memory_class\": {\"stream\": 0.5}"),
             "memory_class", "unknown class \"stream\"", NULL);
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"memory_class\": {\"reduce\": 1.5}"),
             "memory_class.reduce", "fraction of the memory curve in (0, 1]", NULL);
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"memory_class\": {\"norm\": 0}"),
             "memory_class.norm", "in (0, 1]", NULL);
    bad_json(MYGPU("\"tflops\": {\"fp32\": 10}, \"memory_GB\": 16, \"memory_GBps\": 500, "
                   "\"memory_class\": [0.5]"),
             "memory_class", "expected an object of fractions", NULL);
    bad_json(NODE("\"gpu\": {\"tflops\": {\"fp32\": 10}}, \"gpus_per_node\": 2, \"nic\": \"100GbE\""), "node.gpu",
             "model: expected a GPU model name", NULL);
    bad_json(NODE("\"gpu\": 7, \"gpus_per_node\": 2, \"nic\": \"100GbE\""), "node.gpu", "or a GPU object", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": -2, \"nic\": \"100GbE\""), "node.gpus_per_node",
             "expected a positive integer, got -2", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 2.5, \"nic\": \"100GbE\""), "node.gpus_per_node",
             "2.5", NULL);
    bad_json("{\"nodes\": 0, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 4}}", "nodes",
             "expected a positive integer, got 0", NULL);
    bad_json("{\"nodes\": 2,\n \"node\": {\"gpu\": \"RTX3090\",\n  \"gpus_per_node\": 4,,}}", "mycluster.json:3:",
             "malformed JSON", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4"), "needs a NIC", NULL, NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"42GbE\""), "node.nic",
             "unknown NIC model \"42GbE\"", "100GbE");
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_nod\": 4"), "node.gpus_per_nod", "unknown field",
             "gpus_per_node");
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"pcie\": {\"gen\": 9}"),
             "node.pcie.gen", "unknown PCIe generation 9", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"sockets\": 3"),
             "node.sockets", "expected 1 or 2", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"switches\": "
                  "[{\"socket\": 0, \"gpus\": [0, 1, 7]}]"),
             "node.switches[0].gpus", "GPU indices in 0..3", "7");
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"switches\": "
                  "[{\"socket\": 0, \"gpus\": [0, 1, 2]}]"),
             "node.switches", "GPU 3 is under no switch", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"nvlink\": "
                  "{\"pairs\": [[0, 0]]}"),
             "node.nvlink.pairs[0]", "distinct GPU indices", NULL);
    bad_json(NODE("\"gpu\": \"RTX4090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"nvlink\": "
                  "{\"pairs\": [[0, 1]]}"),
             "node.nvlink", "RTX4090 has no NVLink", NULL);
    bad_json("{\"nodes\": 2, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\"}, "
             "\"fabric\": {\"type\": \"torus\"}}",
             "fabric.type", "\"switch\" or \"fat-tree\"", "torus");
    bad_json("{\"nodes\": 2, \"node\": {\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\"}, "
             "\"fabric\": {\"type\": \"fat-tree\", \"nodes_per_leaf\": 0}}",
             "fabric.nodes_per_leaf", "positive integer", NULL);
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"p2p_level\": \"NVB\""),
             "node.p2p_level", "\"PXB\"", "NVB");
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"host_cache_MB\": -1"),
             "node.host_cache_MB", "a number >= 0", "-1");
    bad_json(NODE("\"gpu\": \"RTX3090\", \"gpus_per_node\": 4, \"nic\": \"100GbE\", \"switches\": "
                  "[{\"socket\": 0, \"gpus\": [0, 1, 2, 3], \"p2p_GBps\": 0}]"),
             "node.switches[0].p2p_GBps", "a positive number", NULL);
    bad_json("{\"nodes\": 2}", "node", "missing", NULL);
    bad_json("[1, 2]", "expected an object", NULL, NULL);

    bad_file("/nonexistent/dir/cluster.json", "/nonexistent/dir/cluster.json", "No such file");
    bad_file("no-such-cluster", "unknown platform \"no-such-cluster\"", "oases-3090");

    /* XML without GPU hosts. */
    char path[] = "/tmp/trainsim-bad-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("<?xml version='1.0'?>\n<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
          "<!-- <host id=\"c\"><prop id=\"trainsim:gpu\" value=\"RTX3090\"/></host> -->"
          "<host id=\"cpu0\" speed=\"1Gf\"/></zone></platform>\n",
          f);
    fclose(f);
    char xpath[64];
    snprintf(xpath, sizeof xpath, "%s.xml", path);
    rename(path, xpath);
    bad_file(xpath, xpath, "trainsim:gpu");

    /* XML with an unknown GPU model. */
    f = fopen(xpath, "w");
    fputs("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><host id=\"g0\" speed=\"1Gf\">"
          "<prop id=\"trainsim:gpu\" value=\"TPUv4\"/></host></zone></platform>\n",
          f);
    fclose(f);
    bad_file(xpath, "host \"g0\"", "unknown GPU model \"TPUv4\"");

    /* XML with a bad cache property on a link. */
    f = fopen(xpath, "w");
    fputs("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><host id=\"g0\" speed=\"1Gf\">"
          "<prop id=\"trainsim:gpu\" value=\"RTX3090\"/></host><link id=\"m\" bandwidth=\"1GBps\">"
          "<prop id=\"trainsim:cache_bytes\" value=\"lots\"/></link></zone></platform>\n",
          f);
    fclose(f);
    bad_file(xpath, "trainsim:cache_bytes", "\"lots\"");
    remove(xpath);

    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures != 0;
}
