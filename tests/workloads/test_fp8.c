/* test_fp8.c — dtype=fp8 as Transformer Engine trains: the layers' GEMMs at
 * the FP8 rate, everything else (attention, element-wise, embedding, output
 * layer, communication) in bf16, the per-tensor casts that stand alone, the
 * once-a-step FP8 weight cast, the FP8 weight workspace in memory and the
 * GEMM inputs kept in FP8; refused on GPUs without FP8 tensor cores. */
#include <stdio.h>

#include "sim/costmodel.h"
#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/layer.h"

static wl_model model(void)
{
    wl_model m;
    sim_err err;
    if (wl_model_from_json("{\"name\":\"f\",\"layers\":2,\"hidden\":256,\"heads\":8,\"kv_heads\":4,\"ffn\":512,"
                           "\"seq\":256,\"vocab\":1024,\"ffn_type\":\"swiglu\",\"norm\":\"rmsnorm\","
                           "\"position\":\"rope\",\"tie_embeddings\":false,\"bias\":false}",
                           "f.json", &m, &err))
        abort();
    return m;
}

static void test_gpus(void)
{
    wl_model m = model();
    sim_err err;
    char buf[256];
    wl_strategy s = wl_test_strategy("dtype=fp8");
    CHECK(s.dtype == SIM_DTYPE_FP8);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, "dtype=fp8");
    static const struct {
        const char *gpu;
        int ok;
    } gpus[] = {{"H100-SXM", 1}, {"H100-PCIe", 1}, {"RTX4090", 1}, {"A100-SXM-80GB", 0}, {"RTX3090", 0},
                {"V100-SXM2-32GB", 0}};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        sim_machine *mach = wl_test_gpu_machine(gpus[i].gpu, 1);
        int rc = wl_gpt_check(&m, &s, mach, NULL, &err);
        if ((rc == 0) != gpus[i].ok)
            fprintf(stderr, "%s: rc %d: %s\n", gpus[i].gpu, rc, rc ? err.msg : "");
        CHECK((rc == 0) == gpus[i].ok);
        if (!gpus[i].ok)
            CHECK_HAS(err.msg, "dtype=fp8: the ");
        if (!gpus[i].ok)
            CHECK_HAS(err.msg, "has no FP8 tensor cores");
        sim_machine_free(mach);
    }
    /* an FP8 GEMM runs at the FP8 rate, twice the bf16 one on H100, times the
     * fraction of the curve FP8 GEMMs reach there (gemm_scale.fp8, fitted) */
    sim_gpu g;
    CHECK(plat_gpu_lookup_info("H100-SXM", &g, NULL, &err) == 0);
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_GEMM;
    p.m = p.n = p.k = 8192;
    p.dtype = SIM_DTYPE_BF16;
    double tb = sim_cost_kernel(&g, &p);
    p.dtype = SIM_DTYPE_FP8;
    double tf = sim_cost_kernel(&g, &p);
    double sc = g.gemm_scale[SIM_DTYPE_FP8] > 0 ? g.gemm_scale[SIM_DTYPE_FP8] : 1;
    CHECK(sc > 0.5 && sc <= 1);
    CHECK(tf < 0.52 / sc * tb && tf > 0.48 / sc * tb);
}

/* Every kernel's dtype and the casts, on a tp=2, pp=2 schedule. */
static void test_schedule(void)
{
    wl_model m = model();
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 4);
    wl_strategy s = wl_test_strategy("tp=2,pp=2,mb=2,gb=4,dtype=fp8");
    sim_err err;
    sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc != NULL);
    if (!sc)
        return;
    CHECK(sc->meta.dtype == SIM_DTYPE_FP8);
    int fp8_gemm = 0, bad = 0, cast = 0, cast_g = 0, wcast = 0, flash = 0;
    int64_t sb = 256 * 2, qkv = 256 + 2 * 4 * 32, sbhd = sb * 256 * 2;
    /* layer parameters on one rank (one layer per stage): split /2, norms whole */
    wl_layer_param_split lp = wl_model_layer_params(&m);
    int64_t layer = (lp.attn_split + lp.mlp_split) / 2 + lp.attn_rep + lp.mlp_rep;
    for (uint32_t i = 0; i < sc->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(sc, i);
        if (p->kind != SIM_OP_COMPUTE)
            continue;
        const char *n = sim_sched_strname(sc, p->name);
        int logits = !strncmp(n, "logits", 6);
        if (p->sub == SIM_KERNEL_GEMM && !logits)
            fp8_gemm += p->dtype == SIM_DTYPE_FP8;
        else if (p->sub != SIM_KERNEL_OPTIMIZER && strncmp(n, "loss", 4))
            bad += p->dtype != SIM_DTYPE_BF16; /* the rest: bf16 (the loss and Adam in fp32) */
        flash += p->sub == SIM_KERNEL_FLASH_FWD;
        cast += !strcmp(n, "fp8_cast") && p->bytes == 4 * sb * 256 / 2;
        cast_g += !strcmp(n, "fp8_cast_grad") && p->bytes == 4 * sb * qkv / 2;
        wcast += !strcmp(n, "fp8_weight_cast") && p->bytes == 4 * layer && sc->ops[i].phase == SIM_PHASE_OPTIMIZER;
        if (!strcmp(n, "post_mlp_bwd"))
            CHECK(p->bytes == 4 * sbhd + 2 * sbhd);
    }
    /* 4 ranks x 1 layer x 2 micro-batches (gb 4 = mb 2 x dp 1 x 2) */
    if (!(fp8_gemm > 0 && bad == 0 && flash == 8 && cast == 8 && cast_g == 8 && wcast == 4))
        fprintf(stderr, "fp8 GEMMs %d, not bf16 %d, flash %d, casts %d %d %d\n", fp8_gemm, bad, flash, cast, cast_g,
                wcast);
    CHECK(fp8_gemm > 0 && bad == 0 && flash == 8);
    CHECK(cast == 8 && cast_g == 8 && wcast == 4);
    CHECK(sim_sched_check(sc, &err) == 0);
    sim_sched_free(sc);
    sim_machine_free(mach);
}

/* Memory: the FP8 weight workspace (weight and transpose, 2 bytes per layer
 * parameter) on top of bf16 states, and the GEMM inputs kept in FP8. */
static void test_memory(void)
{
    wl_model m = model();
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 2);
    sim_err err;
    wl_strategy s8 = wl_test_strategy("tp=2,mb=2,dtype=fp8"), s16 = wl_test_strategy("tp=2,mb=2,dtype=bf16");
    wl_memory m8, m16;
    CHECK(wl_gpt_memory(&m, &s8, mach, &m8, &err) == 0);
    CHECK(wl_gpt_memory(&m, &s16, mach, &m16, &err) == 0);
    wl_layer_param_split lp = wl_model_layer_params(&m);
    double layers = 2.0 * ((double)(lp.attn_split + lp.mlp_split) / 2 + (double)(lp.attn_rep + lp.mlp_rep));
    CHECK(m8.weights - m16.weights == 2 * layers);
    CHECK(m8.gradients == m16.gradients && m8.optimizer == m16.optimizer);
    wl_strategy r8, r16;
    CHECK(wl_gpt_resolve(&m, &s8, mach, &r8, &err) == 0 && wl_gpt_resolve(&m, &s16, mach, &r16, &err) == 0);
    int64_t k8, k16;
    wl_layer_memory(&m, &r8, 0, &k8, NULL);
    wl_layer_memory(&m, &r16, 0, &k16, NULL);
    /* QKV's and fc1's inputs (s·b·h each, replicated) and fc2's (s·b·ffn/t)
     * at 1 byte instead of 2 */
    int64_t sbh = 256 * 2 * 256, sbf = 256 * 2 * 512 / 2;
    CHECK(k16 - k8 == 2 * sbh + sbf);
    sim_machine_free(mach);
}

/* fp8_recipe: current scaling (tensorwise) adds its amax passes to the two
 * casts' payloads (layer_payloads.c wl_opset_fp8), MXFP8 moves what delayed
 * scaling moves; the key is parsed by its names, written back when not the
 * default, and refused without dtype=fp8. */
static void test_recipes(void)
{
    wl_model m = model();
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 2);
    sim_err err;
    /* tp 2, no sequence parallelism: 512 tokens, hidden 256, ffn 512 (fc1 1,024), qkv 512 */
    const int64_t sb = 512, in = sb * 256 / 2, qg = sb * 512 / 2;
    wl_layer_param_split lp = wl_model_layer_params(&m);
    const int64_t wts = (lp.attn_split + lp.mlp_split) / 2; /* a layer's linear weights on a rank */
    const struct {
        const char *recipe;
        int64_t f, b;
    } want[] = {
        {"", 4 * in, 4 * qg},
        {",fp8_recipe=mxfp8", 4 * in, 4 * qg},
        /* + the amax read of each cast; the two norms' and the activation's
         * outputs written in 16 bits and quantized (2 + 2 a element); fc1's
         * gradient likewise; the amax reads of the gradients entering fc2's
         * and the projection's backward */
        {",fp8_recipe=tensorwise", 6 * in + 4 * (2 * sb * 256 + sb * 256), 6 * qg + 4 * sb * 512 + 2 * 2 * sb * 256},
        /* te.Linear alone: QKV's, fc1's and fc2's inputs and fc1's output
         * gradient cast by the linears (read 2, write 1 + 1), and the
         * layer's weights in every forward */
        {",fp8_casts=standalone", 4 * in + 4 * (2 * sb * 256 + sb * 256) + 4 * wts, 4 * qg + 4 * sb * 512},
    };
    char text[96];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(text, sizeof text, "tp=2,mb=2,gb=2,dtype=fp8%s", want[i].recipe);
        wl_strategy s = wl_test_strategy(text);
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        int nf = 0, nb = 0, nw = 0;
        for (uint32_t k = 0; sc && k < sc->nops; k++) {
            const sim_payload *p = sim_sched_payload_of(sc, k);
            const char *n = p->kind == SIM_OP_COMPUTE ? sim_sched_strname(sc, p->name) : "";
            nf += !strcmp(n, "fp8_cast") && p->bytes == want[i].f;
            nb += !strcmp(n, "fp8_cast_grad") && p->bytes == want[i].b;
            nw += !strcmp(n, "fp8_weight_cast");
        }
        CHECK(nw == (strstr(want[i].recipe, "standalone") ? 0 : 2)); /* once a step on each rank, or never */
        if (nf != 4 || nb != 4)
            fprintf(stderr, "%s: casts %d %d\n", text, nf, nb);
        CHECK(nf == 4 && nb == 4); /* 2 ranks x 2 layers, one micro-batch */
        sim_sched_free(sc);
    }
    wl_strategy st;
    char buf[512];
    wl_strategy_default(&st);
    CHECK(st.fp8_recipe == WL_FP8_DELAYED);
    CHECK(wl_strategy_parse("fp8_recipe=Float8CurrentScaling", &st, &err) == 0 && st.fp8_recipe == WL_FP8_TENSORWISE);
    CHECK(wl_strategy_parse("fp8_recipe=fp8-mx", &st, &err) == 0 && st.fp8_recipe == WL_FP8_MXFP8);
    wl_strategy_format(&st, buf, sizeof buf);
    CHECK(strstr(buf, ",fp8_recipe=mxfp8") != NULL);
    CHECK(wl_strategy_parse("fp8_recipe=fp4", &st, &err) != 0 && strstr(err.msg, "expected delayed") != NULL);
    CHECK(wl_strategy_parse("fp8_casts=standalone", &st, &err) == 0 && st.fp8_standalone);
    wl_strategy_format(&st, buf, sizeof buf);
    CHECK(strstr(buf, ",fp8_casts=standalone") != NULL);
    CHECK(wl_strategy_parse("fp8_casts=te", &st, &err) != 0 && strstr(err.msg, "expected fused") != NULL);
    wl_strategy b16 = wl_test_strategy("tp=2,mb=2,gb=2,dtype=bf16,fp8_recipe=tensorwise");
    CHECK(wl_gpt_generate(&m, &b16, mach, &err) == NULL && strstr(err.msg, "give dtype=fp8") != NULL);
    sim_machine_free(mach);
}

int main(void)
{
    test_gpus();
    test_schedule();
    test_memory();
    test_recipes();
    return wl_test_done();
}
