/* test_elem_classes.c — the element-wise classes the generator gives its
 * passes (layer_payloads.c elem_passes_of, gpt.c's final norm and casts),
 * the loss's bytes per logit by strategy key (gpt.c loss_bytes), the
 * payloads' class bytes through schedule JSON and back (old files without
 * them load as streaming; bad ones are refused with the field named), and
 * what a class costs on the H100, whose catalogue entry has fractions.
 *
 * tiny: h 64, ffn 256, 4 heads, seq 32, 2 layers, biases; mb 2 on one GPU:
 * a hidden-sized pass of 16-bit elements is u = 32*2*64*2 = 8,192 bytes, a
 * QKV-wide one 3u, an ffn-wide one 4u. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "sim/costmodel.h"
#include "wl_test.h"
#include "workloads/gpt.h"

static wl_model model(int vocab)
{
    wl_model m;
    sim_err err;
    char json[256];
    snprintf(json, sizeof json,
             "{\"name\":\"tiny\",\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":%d}", vocab);
    if (wl_model_from_json(json, "tiny.json", &m, &err))
        abort();
    return m;
}

static sim_schedule *gen(const wl_model *m, const char *text)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    sim_machine *mach = wl_test_machine(1, 80e9);
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    sim_machine_free(mach);
    if (!sc) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    return sc;
}

/* The first compute payload called name (forward micro-batch 0 or its
 * backward), or NULL. */
static const sim_payload *named(const sim_schedule *s, const char *name)
{
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind == SIM_OP_COMPUTE && p->name >= 0 && !strcmp(sim_sched_strname(s, p->name), name))
            return p;
    }
    return NULL;
}

/* p's bytes by class, streaming first: {stream, cast_up, norm, reduce, strided} in units of u. */
static int classes_are(const sim_payload *p, int64_t u, const int64_t want[SIM_MEMC_COUNT])
{
    if (!p)
        return 0;
    int64_t sum = 0;
    for (int c = 0; c < SIM_MEMC_COUNT; c++)
        sum += want[c] * u;
    int ok = p->bytes == sum;
    for (int c = 1; c < SIM_MEMC_COUNT; c++)
        ok &= p->class_bytes[c - 1] == want[c] * u;
    if (!ok) {
        fprintf(stderr, "  bytes %lld (want %lld), class bytes", (long long)p->bytes, (long long)sum);
        for (int c = 1; c < SIM_MEMC_COUNT; c++)
            fprintf(stderr, " %s %lld/%lld", sim_mem_class_name(c), (long long)p->class_bytes[c - 1],
                    (long long)(want[c] * u));
        fputc('\n', stderr);
    }
    return ok;
}

#define CLASSES(s, name, u, ...) CHECK(classes_are(named(s, name), u, (const int64_t[SIM_MEMC_COUNT]){__VA_ARGS__}))

/* The passes of a layer: fused streams; eager's norms, bias gradients and
 * the QKV concatenation have their classes; autocast adds the casts up and
 * the promoting residual adds. */
static void test_passes(void)
{
    wl_model m = model(1000);
    const int64_t u = 32 * 2 * 64 * 2, W = 49728, VH = 1024 * 64;
    sim_schedule *f = gen(&m, "mb=2,gb=2,dtype=bf16");
    for (uint32_t i = 0; i < f->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(f, i);
        if (p->name >= 0 && !strcmp(sim_sched_strname(f, p->name), "loss"))
            continue; /* Megatron's loss casts its logits up eagerly (test_loss) */
        for (int c = 0; c < SIM_MEMC_COUNT - 1; c++)
            CHECK(p->class_bytes[c] == 0);
    }
    CLASSES(f, "ln1_bwd", u, 3, 0, 0, 0, 0);
    sim_sched_free(f);

    /* eager, 16-bit stream (MosaicML's MPT) */
    sim_schedule *e = gen(&m, "mb=2,gb=2,dtype=bf16,kernels=eager");
    CLASSES(e, "ln1", u, 0, 0, 2, 0, 0);
    CLASSES(e, "post_attn", u, 3, 0, 2, 0, 0);
    CLASSES(e, "post_mlp", u, 3, 0, 0, 0, 0);
    CLASSES(e, "post_mlp_bwd", u, 0, 0, 0, 1, 0);
    CLASSES(e, "gelu_bwd", 4 * u, 3, 0, 0, 1, 0);
    CLASSES(e, "post_attn_bwd", u, 3, 0, 3, 3, 0);
    /* LN1's 3 + 2 + the sum 3; the QKV bias gradient 3u and the cat 2 x 3u */
    CLASSES(e, "ln1_bwd", u, 3, 0, 3, 2 + 3, 6);
    CLASSES(e, "final_ln", u, 0, 0, 2, 0, 0);
    CLASSES(e, "final_ln_bwd", u, 0, 0, 3, 2, 0);
    sim_sched_free(e);

    /* plain AMP (the bench steps): the fp32 residual stream */
    sim_schedule *a = gen(&m, "mb=2,gb=2,dtype=bf16,kernels=eager,autocast=1");
    CLASSES(a, "ln1", u, 3, 0, 4, 0, 0);
    CLASSES(a, "post_attn", u, 3, 5, 4, 0, 0);
    CLASSES(a, "post_mlp", u, 0, 5, 0, 0, 0);
    CLASSES(a, "post_mlp_bwd", u, 3, 0, 0, 1, 0);
    CLASSES(a, "post_attn_bwd", u, 9, 3, 6, 5, 0);
    CLASSES(a, "ln1_bwd", u, 6, 3, 6, 4 + 3, 6);
    CLASSES(a, "final_ln", u, 3, 0, 4, 0, 0);
    CLASSES(a, "final_ln_bwd", u, 0, 3, 6, 4, 0);
    CLASSES(a, "autocast_weight_cast", W, 6, 0, 0, 0, 0);
    CLASSES(a, "autocast_grad_cast", W, 0, 6, 0, 0, 0);
    CLASSES(a, "output_weight_cast", VH, 6, 0, 0, 0, 0);
    CLASSES(a, "output_grad_cast", VH, 0, 6, 0, 0, 0);
    sim_sched_free(a);
    sim_schedule *a2 = gen(&m, "mb=2,gb=4,dtype=bf16,kernels=eager,autocast=1");
    CLASSES(a2, "autocast_grad_cast_accumulate", W, 12, 6, 0, 0, 0);
    sim_sched_free(a2);

    /* without biases the bias reductions go, the norms' gradients stay */
    wl_model nb = model(1000);
    nb.no_bias = 1;
    sim_schedule *n = gen(&nb, "mb=2,gb=2,dtype=bf16,kernels=eager");
    CLASSES(n, "post_mlp_bwd", u, 0, 0, 0, 0, 0);
    CLASSES(n, "post_attn_bwd", u, 3, 0, 3, 2, 0);
    CLASSES(n, "ln1_bwd", u, 3, 0, 3, 2, 6);
    sim_sched_free(n);
}

/* The loss per strategy key, in bytes per logit of the padded vocabulary
 * (50,257 -> 50,304: a row of 201 KB, past a block's 48 KB of shared memory,
 * so log_softmax reads it three times; 1,000 -> 1,024: 4 KB, read once). */
static void test_loss(void)
{
    wl_model big = model(50257), small = model(1000);
    const int64_t Lb = 64 * 50304, Ls = 64 * 1024;
    static const struct {
        const char *key;
        int big;
        int64_t f[SIM_MEMC_COUNT], b[SIM_MEMC_COUNT];
    } want[] = {
        {"", 1, {32, 6}, {14}}, /* Megatron unfused: cast up, max, subtract, exp, sum, divide; scale, cast back */
        {",loss=megatron", 1, {32, 6}, {14}},
        {",loss=megatron_fused", 1, {22}, {10}}, /* cast with max, subtract-exp-sum, divide; scale with cast */
        {",autocast=1,loss=torch", 1, {16, 6}, {26}}, /* 48 a logit: 6 cast up, 3 reads + 1 write, fill, 4 passes, cast down */
        {",autocast=1,loss=torch", 0, {8, 6}, {26}},  /* the row in shared memory: read once */
        {",loss=torch", 1, {8}, {10}}, /* bf16 logits, no autocast: the same passes over 2-byte elements */
        {",loss=torch", 0, {4}, {10}},
        {",loss=fused", 1, {2}, {4}},      /* flash-attn: 3 x 2 bytes */
    };
    char text[128];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(text, sizeof text, "mb=2,gb=2,dtype=bf16,kernels=eager%s", want[i].key);
        sim_schedule *s = gen(want[i].big ? &big : &small, text);
        int64_t L = want[i].big ? Lb : Ls;
        CHECK(classes_are(named(s, "loss"), L, want[i].f));
        CHECK(classes_are(named(s, "loss_bwd"), L, want[i].b));
        sim_sched_free(s);
    }
    /* fp32 logits: nothing to cast, the softmax's passes stay; fused reads 4-byte logits */
    sim_schedule *s = gen(&big, "mb=2,gb=2,dtype=tf32,loss=torch");
    CLASSES(s, "loss", Lb, 16, 0, 0, 0, 0);
    CLASSES(s, "loss_bwd", Lb, 20, 0, 0, 0, 0);
    sim_sched_free(s);
    s = gen(&big, "mb=2,gb=2,dtype=tf32,loss=fused");
    CLASSES(s, "loss_bwd", Lb, 8, 0, 0, 0, 0);
    sim_sched_free(s);
    s = gen(&big, "mb=2,gb=2,dtype=tf32");
    CLASSES(s, "loss", Lb, 32, 0, 0, 0, 0);
    CLASSES(s, "loss_bwd", Lb, 8, 0, 0, 0, 0);
    sim_sched_free(s);
    s = gen(&big, "mb=2,gb=2,dtype=tf32,loss=megatron_fused");
    CLASSES(s, "loss", Lb, 20, 0, 0, 0, 0);
    CLASSES(s, "loss_bwd", Lb, 8, 0, 0, 0, 0);
    sim_sched_free(s);

    /* the key: parsed, written back only when not the default, refused with the choices */
    wl_strategy st;
    sim_err err;
    char buf[512];
    wl_strategy_default(&st);
    CHECK(st.loss == WL_LOSS_MEGATRON);
    wl_strategy_format(&st, buf, sizeof buf);
    CHECK(strstr(buf, "loss=") == NULL);
    CHECK(wl_strategy_parse("loss=fused", &st, &err) == 0 && st.loss == WL_LOSS_FUSED);
    wl_strategy_format(&st, buf, sizeof buf);
    CHECK_HAS(buf, ",loss=fused");
    CHECK(wl_strategy_parse("loss=megatron_fused", &st, &err) == 0 && st.loss == WL_LOSS_MEGATRON_FUSED);
    wl_strategy_format(&st, buf, sizeof buf);
    CHECK_HAS(buf, ",loss=megatron_fused");
    CHECK(wl_strategy_parse("loss=triton", &st, &err) != 0);
    CHECK_HAS(err.msg, "strategy: loss: expected megatron");
    CHECK_HAS(err.msg, "got \"triton\"");
}

/* class_bytes through JSON and back; files without it; bad ones. */
static void test_json(void)
{
    wl_model m = model(50257);
    sim_schedule *a = gen(&m, "mb=2,gb=2,dtype=bf16,kernels=eager,autocast=1,loss=torch");
    sim_err err;
    char *text = sim_sched_to_json(a, 0);
    CHECK_HAS(text, "\"class_bytes\":{\"cast_up\":");
    sim_schedule *b = sim_sched_read_json(text, "a.json", &err);
    CHECK(b != NULL && b->nops == a->nops);
    int classed = 0;
    for (uint32_t i = 0; b && i < a->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(a, i), *q = sim_sched_payload_of(b, i);
        CHECK(p->bytes == q->bytes && !memcmp(p->class_bytes, q->class_bytes, sizeof p->class_bytes));
        for (int c = 0; c < SIM_MEMC_COUNT - 1; c++)
            classed += q->class_bytes[c] > 0;
    }
    CHECK(classed > 0);
    char *again = b ? sim_sched_to_json(b, 0) : NULL;
    CHECK(again && !strcmp(text, again));
    free(again);
    sim_sched_free(b);
    free(text);
    sim_sched_free(a);

    /* a file written before classes: all streaming */
    static const char *head = "{\"format\":\"trainsim-schedule\",\"version\":1,\"nranks\":1,\"ranks\":[{\"rank\":0,"
                              "\"streams\":[{\"name\":\"compute\",\"ops\":[{\"id\":0,\"op\":\"compute\",\"kernel\":"
                              "\"elementwise\",\"bytes\":1000,\"dtype\":\"bf16\"%s}]}]}]}";
    char doc[1024];
    snprintf(doc, sizeof doc, head, "");
    sim_schedule *old = sim_sched_read_json(doc, "old.json", &err);
    CHECK(old && old->payloads[0].bytes == 1000);
    for (int c = 0; old && c < SIM_MEMC_COUNT - 1; c++)
        CHECK(old->payloads[0].class_bytes[c] == 0);
    sim_sched_free(old);
    snprintf(doc, sizeof doc, head, ",\"class_bytes\":{\"norm\":300,\"strided\":700}");
    sim_schedule *ok = sim_sched_read_json(doc, "ok.json", &err);
    CHECK(ok && ok->payloads[0].class_bytes[SIM_MEMC_NORM - 1] == 300 &&
          ok->payloads[0].class_bytes[SIM_MEMC_STRIDED - 1] == 700);
    sim_sched_free(ok);
    static const struct {
        const char *cls, *msg;
    } bad[] = {
        {",\"class_bytes\":{\"cast_down\":10}", "ops[0].class_bytes.cast_down: unknown class; known: cast_up"},
        {",\"class_bytes\":{\"stream\":10}", "class_bytes.stream: unknown class"},
        {",\"class_bytes\":{\"norm\":1001}", "class_bytes.norm: expected a byte count in 0..1000"},
        {",\"class_bytes\":{\"norm\":1.5}", "class_bytes.norm: expected a byte count"},
        {",\"class_bytes\":{\"norm\":600,\"reduce\":600}", "add up to 1200, more than the op's 1000"},
        {",\"class_bytes\":[1]", "class_bytes: expected an object of byte counts by class"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(doc, sizeof doc, head, bad[i].cls);
        sim_schedule *x = sim_sched_read_json(doc, "bad.json", &err);
        CHECK(x == NULL);
        if (!x)
            CHECK_HAS(err.msg, bad[i].msg);
        sim_sched_free(x);
    }
}

/* On the H100 (catalogue fractions) a classed pass costs more than the same
 * bytes streaming, by the closed form; on a GPU without fractions (the V100)
 * the same; the SXM A100s' fractions are the H100's rates scaled by SMs x
 * clock (validation/fit_memory.c), below 1. */
static void test_cost(void)
{
    sim_machine *h = wl_test_gpu_machine("H100-SXM", 1), *a = wl_test_gpu_machine("V100-SXM2-16GB", 1);
    const sim_gpu *g = &h->gpus[0];
    CHECK(fabs(sim_cost_mem_class(g, SIM_MEMC_STRIDED) - 0.3475) < 1e-9);
    CHECK(sim_cost_mem_class(&a->gpus[0], SIM_MEMC_STRIDED) == 1);
    sim_machine *a100 = wl_test_gpu_machine("A100-SXM-80GB", 1);
    CHECK(fabs(sim_cost_mem_class(&a100->gpus[0], SIM_MEMC_STRIDED) - 0.3572) < 1e-9);
    sim_machine_free(a100);
    wl_model m = model(1000);
    sim_schedule *e = gen(&m, "mb=2,gb=2,dtype=bf16,kernels=eager");
    const sim_payload *p = named(e, "ln1_bwd");
    sim_payload plain = *p;
    memset(plain.class_bytes, 0, sizeof plain.class_bytes);
    double B = (double)p->bytes, stream = B;
    for (int c = 1; c < SIM_MEMC_COUNT; c++)
        stream += (double)p->class_bytes[c - 1] * (1 / sim_cost_mem_class(g, c) - 1);
    sim_gpu big = *g;
    big.kernel_min_s = 0; /* the pass is small: let its traffic show */
    double t = sim_cost_kernel(&big, p), t0 = sim_cost_kernel(&big, &plain);
    double want = stream / (g->mem_bw * sim_curve_eval(&g->mem_eff, B)) + g->launch_s;
    CHECK(fabs(t - want) <= 1e-12 + 1e-9 * want && t > t0);
    CHECK(sim_cost_kernel(&a->gpus[0], p) == sim_cost_kernel(&a->gpus[0], &plain));
    sim_sched_free(e);
    sim_machine_free(h);
    sim_machine_free(a);
}

int main(void)
{
    test_passes();
    test_loss();
    test_json();
    test_cost();
    return wl_test_done();
}
