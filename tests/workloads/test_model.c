/* test_model.c — model JSON, built-in models and strategy strings, with the
 * bad inputs each reader must reject by name. */
#include <stdio.h>
#include <unistd.h>

#include "wl_test.h"
#include "workloads/model.h"

static void test_builtins(void)
{
    static const struct {
        const char *name;
        int h, l, a, s, v;
    } want[] = {
        {"gpt-1024", 1024, 24, 16, 1024, 50257},    {"gpt-2048", 2048, 24, 32, 1024, 50257},
        {"gpt-3072", 3072, 24, 48, 1024, 50257},    {"gpt-4096", 4096, 16, 64, 1024, 50257},
        {"gpt-6144", 6144, 16, 96, 1024, 50257},    {"gpt-8192", 8192, 8, 128, 1024, 50257},
        {"gpt-12288", 12288, 4, 192, 1024, 50257},  {"gpt3-175b", 12288, 96, 96, 2048, 51200},
        {"gpt-1.3b", 2048, 24, 16, 2048, 50257},    {"gpt-13b", 5120, 40, 40, 2048, 50257},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        wl_model m;
        sim_err err = {{0}};
        int rc = wl_model_load(want[i].name, &m, &err);
        if (rc) {
            fprintf(stderr, "%s: %s\n", want[i].name, err.msg);
            CHECK(rc == 0);
            continue;
        }
        CHECK_STR(m.name, want[i].name);
        CHECK(m.hidden == want[i].h && m.layers == want[i].l && m.heads == want[i].a);
        CHECK(m.seq == want[i].s && m.vocab == want[i].v && m.ffn == 4 * want[i].h);
    }
    /* GPT-3 175B: 12h^2 + 13h per layer, 96 layers, tied embeddings: ~174.6e9 */
    wl_model g;
    sim_err err;
    CHECK(wl_model_load("gpt3-175b", &g, &err) == 0);
    double h = 12288;
    double want_p = 96 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h;
    CHECK(wl_model_params(&g) == want_p);
    CHECK(want_p > 174e9 && want_p < 176e9);
}

static void test_json(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_from_json("{\"name\":\"x\",\"layers\":2,\"hidden\":64,\"heads\":4}", "x.json", &m, &err) == 0);
    CHECK(m.ffn == 256 && m.vocab == 50257 && m.seq == 1024);
    /* name defaults to the file name */
    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":100,\"seq\":8,\"vocab\":99}",
                             "dir/tiny.json", &m, &err) == 0);
    CHECK_STR(m.name, "tiny");
    CHECK(m.ffn == 100 && m.seq == 8 && m.vocab == 99);

    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":64,\"heads\":\"many\"}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: heads: expected a positive integer, got \"many\"");
    CHECK(wl_model_from_json("{\"layers\":2.5,\"hidden\":64,\"heads\":4}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: layers: expected a positive integer, got 2.5");
    /* sizes beyond any model are refused (they would overflow the parameter count) */
    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":1073741824,\"heads\":4}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: hidden: 1073741824 is larger than trainsim models (at most 1048576)");
    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":64,\"heads\":4,\"seq\":0}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: seq: expected a positive integer, got 0");
    CHECK(wl_model_from_json("{\"layers\":2,\"heads\":4}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: hidden: missing (expected a positive integer)");
    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":100,\"heads\":3}", "model.json", &m, &err) == -1);
    CHECK_STR(err.msg, "model.json: hidden: 100 is not divisible by heads (3)");
    CHECK(wl_model_from_json("{\"layers\":2,\"hidden\":64,\"heads\":4,\"hiden\":3}", "model.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "model.json: unknown field \"hiden\"");
    CHECK(wl_model_from_json("[1,2]", "model.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "model.json: expected a JSON object");
    /* malformed: the error points at line 3 */
    CHECK(wl_model_from_json("{\n  \"layers\": 2,\n  \"hidden\": 64,,\n}", "bad.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "bad.json:3:");
    CHECK_HAS(err.msg, "malformed JSON");
}

static void test_files(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_load("/nonexistent/dir/model.json", &m, &err) == -1);
    CHECK_HAS(err.msg, "/nonexistent/dir/model.json");
    CHECK_HAS(err.msg, "No such file or directory");
    CHECK(wl_model_load("no-such-model", &m, &err) == -1);
    CHECK_HAS(err.msg, "no-such-model");
    CHECK_HAS(err.msg, "gpt-3072"); /* lists the built-ins */

    char path[] = "/tmp/wl_test_modelXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"name\": \"mine\", \"layers\": 4, \"hidden\": 128, \"heads\": 2, \"ffn\": 384}\n", f);
    fclose(f);
    CHECK(wl_model_load(path, &m, &err) == 0);
    CHECK_STR(m.name, "mine");
    CHECK(m.ffn == 384 && m.layers == 4);
    /* a malformed file: the error names the path, line and column */
    f = fopen(path, "w");
    fputs("{\n  \"layers\": 4\n  \"hidden\": 128\n}\n", f);
    fclose(f);
    CHECK(wl_model_load(path, &m, &err) == -1);
    CHECK_HAS(err.msg, path);
    CHECK_HAS(err.msg, ":3:");
    unlink(path);
}

static void test_strategy(void)
{
    wl_strategy s;
    sim_err err;
    char buf[256];
    wl_strategy_default(&s);
    CHECK(s.tp == 1 && s.pp == 1 && s.dp == 0 && s.mb == 1 && s.gb == 0);
    CHECK(s.dtype == SIM_DTYPE_TF32 && s.recompute == WL_RECOMPUTE_NONE && s.dp_bucket_bytes == 0);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "tp=1,pp=1,dp=auto,mb=1,gb=auto,dtype=tf32,recompute=none,bucket=auto");

    CHECK(wl_strategy_parse(" tp = 4 , pp=2,dp=4, micro-batch=2,global-batch=64 ,dtype=bf16,recompute=full, bucket=40 ,",
                            &s, &err) == 0);
    CHECK(s.tp == 4 && s.pp == 2 && s.dp == 4 && s.mb == 2 && s.gb == 64);
    CHECK(s.dtype == SIM_DTYPE_BF16 && s.recompute == WL_RECOMPUTE_FULL && s.dp_bucket_bytes == 40 << 20);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full,bucket=40");
    /* the canonical string parses back to the same strategy */
    wl_strategy s2;
    wl_strategy_default(&s2);
    CHECK(wl_strategy_parse(buf, &s2, &err) == 0);
    CHECK(memcmp(&s, &s2, sizeof s) == 0);
    /* MoE routing and balance read back, and a longer routing given first leaves nothing behind */
    CHECK(wl_strategy_parse("routing=dirichlet:0.25,routing=zipf:1.5,balance=prophet", &s2, &err) == 0);
    wl_strategy_format(&s2, buf, sizeof buf);
    CHECK_STR(buf, "tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full,bucket=40,routing=zipf:1.5,balance=prophet");
    wl_strategy s3;
    wl_strategy_default(&s3);
    CHECK(wl_strategy_parse(buf, &s3, &err) == 0);
    CHECK(memcmp(&s2, &s3, sizeof s2) == 0);
    CHECK(wl_strategy_parse("routing=zipf:-1", &s3, &err) == -1);
    CHECK_HAS(err.msg, "strategy: routing: ");
    CHECK(wl_strategy_parse("balance=even", &s3, &err) == -1);
    CHECK_HAS(err.msg, "strategy: balance: expected none (DeepSpeed-MoE), fastermoe");
    CHECK(wl_strategy_parse("micro_batch=3,bucket=0.5,dp=auto", &s, &err) == 0);
    CHECK(s.mb == 3 && s.dp == 0 && s.dp_bucket_bytes == 1 << 19);

    wl_strategy before = s;
    CHECK(wl_strategy_parse("tp=2,foo=1", &s, &err) == -1);
    CHECK_STR(
        err.msg,
        "strategy: unknown key \"foo\" (known: tp, pp, cp, ep, dp, mb, gb, dtype, recompute, recompute_layers, bucket, pipeline, vstages, ckpt_ratio, dp_overlap, param_overlap, grad_reduce, zero, fsdp, fsdp_impl, fp8_recipe, fp8_casts, osdp, osdp_split, schedule, sp, tp_overlap_comm, tp_overlap, tess_depth, tp_cut, attn, kernels, autocast, launch_blocking, p2p_sync, stage_split, pp_layers, grad_collective, grad_accum, loss, optimizer, routing, balance)");
    CHECK(memcmp(&s, &before, sizeof s) == 0); /* unchanged on error */
    CHECK(wl_strategy_parse("tp=x", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: tp: expected a positive integer, got \"x\"");
    CHECK(wl_strategy_parse("pp=0", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: pp: expected a positive integer, got \"0\"");
    CHECK(wl_strategy_parse("mb=2.5", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: mb: expected a positive integer, got \"2.5\"");
    CHECK(wl_strategy_parse("dtype=int8", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: dtype: expected fp32, tf32, fp16, bf16 or fp8, got \"int8\"");
    CHECK(wl_strategy_parse("recompute=some", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: recompute: expected none, full, selective or oases, got \"some\"");
    CHECK(wl_strategy_parse("bucket=-1", &s, &err) == -1);
    CHECK_HAS(err.msg, "strategy: bucket:");
    CHECK(wl_strategy_parse("tp4", &s, &err) == -1);
    CHECK_HAS(err.msg, "\"tp4\": expected key=value");
    CHECK(wl_strategy_parse("dp=", &s, &err) == -1);
    CHECK_STR(err.msg, "strategy: dp: expected a positive integer or auto, got \"\"");
}

int main(void)
{
    test_builtins();
    test_json();
    test_files();
    test_strategy();
    return wl_test_done();
}
