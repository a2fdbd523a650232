/* test_fsdp_oracles.c — PyTorch FSDP / HSDP (fsdp=full|grad_op|hybrid,
 * workloads/gpt.c resolve_fsdp):
 *  - memory of each mode against closed forms (tiny model, dp = 4, bf16):
 *    fp32 shards at rest (4 + 4 + 8 bytes per owned parameter), bf16
 *    gathered weights, fp32 gathered gradients; grad_op holds the layers'
 *    gathered weights from forward to backward; hybrid shards over a node;
 *  - structure: grad_op gathers each layer once per micro-batch (forward
 *    only), hybrid reduce-scatters over the node and all-reduces the shard
 *    over the nodes;
 *  - forward oracle on the star platform, from the Chrome trace: the first
 *    forward ends at the root unit's all-gather + the first layer's + its
 *    compute + max(compute, all-gather) for every further layer, with
 *    all-gathers far below and far above the layer's compute;
 *  - FSDP's own passes over the gathered gradients and parameters, every
 *    micro-batch: FSDP1's cat of the views' gradients, cast to the reduce
 *    dtype and pre-division; FSDP2's copy-in and copy-out (fsdp_impl=fsdp2);
 *  - impossible combinations are explained. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "../sim/star.h"
#include "sim/costmodel.h"
#include "sim/engine.h"
#include "sim/fileio.h"
#include "wl_test.h"
#include "workloads/gpt.h"

static double owned_of(double layer, double root, int ds)
{
    return 4 * ceil(layer / ds) + ceil(root / ds);
}

static void test_memory(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(8, 0);
    sim_machine *m4 = wl_test_machine(4, 0);
    sim_err err;
    wl_memory mem;
    double h = 64, layer = 12 * h * h + 13 * h, root = 1024 * h + 32 * h + 2 * h;
    /* bf16 activations per layer (Korthikanti et al.): sbh(4d+2) + sbh·d(4+2f/h)/t + as²b(2d+1)/t */
    double A = 2048.0 * 10 + 2048.0 * 2 * 12 + 4 * 1024.0 * 5;

    /* FULL_SHARD: at the peak (the second layer's backward) the root unit,
     * two layers' weights (current, prefetched) and two layers' full
     * gradients (current, being reduce-scattered) are gathered */
    wl_strategy s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=bf16,fsdp=full");
    CHECK(wl_gpt_check(&m, &s, m4, &mem, &err) == 0);
    double own = owned_of(layer, root, 4);
    CHECK(mem.optimizer == 8 * own);
    CHECK(mem.weights == 4 * own + 2 * root + 2 * 2 * layer);
    CHECK(mem.gradients == 4 * own + 4 * root + 2 * 4 * layer);
    CHECK(mem.gathered == 6 * root + 2 * 2 * layer + 2 * 4 * layer);
    CHECK(mem.activations == 3 * A);
    /* the same model states as DeepSpeed-style zero=3 (16 bytes per owned
     * parameter), split fp32 shard / optimizer instead of bf16 / 12 */
    wl_strategy z = wl_test_strategy("dp=4,mb=1,gb=4,dtype=bf16,zero=3");
    wl_memory zm;
    CHECK(wl_gpt_check(&m, &z, m4, &zm, &err) == 0);
    CHECK(zm.optimizer == 12 * own && zm.weights == 2 * own + 2 * root + 2 * 2 * layer);

    /* SHARD_GRAD_OP: at the peak three layers' weights are still gathered
     * from the forward (the top one was freed after its backward) */
    s = wl_test_strategy("dp=4,mb=1,gb=4,dtype=bf16,fsdp=grad_op");
    CHECK(wl_gpt_check(&m, &s, m4, &mem, &err) == 0);
    CHECK(mem.optimizer == 8 * own);
    CHECK(mem.weights == 4 * own + 2 * root + 3 * 2 * layer);
    CHECK(mem.gradients == 4 * own + 4 * root + 2 * 4 * layer);
    CHECK(mem.activations == 3 * A);

    /* HYBRID_SHARD on 2 nodes of 4: sharded over the node (4), not dp (8) */
    s = wl_test_strategy("dp=8,mb=1,gb=8,dtype=bf16,fsdp=hybrid");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.optimizer == 8 * owned_of(layer, root, 4));
    s = wl_test_strategy("dp=8,mb=1,gb=8,dtype=bf16,fsdp=full");
    CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) == 0);
    CHECK(mem.optimizer == 8 * owned_of(layer, root, 8));
    sim_machine_free(mach);
    sim_machine_free(m4);
}

/* Collectives of rank 0 named `name`: count and bytes; the communicator
 * size of the last. */
static int colls(const sim_schedule *s, const char *name, double *bytes, int *members)
{
    int n = 0;
    *bytes = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (sim_sched_rank_of(s, i) != 0 || p->kind != SIM_OP_COLLECTIVE ||
            strcmp(sim_sched_strname(s, p->name), name))
            continue;
        n++;
        *bytes += (double)p->bytes;
        *members = s->comms[s->ops[i].arg].nranks;
    }
    return n;
}

static void test_structure(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(8, 0);
    sim_err err;
    double h = 64, layer = 12 * h * h + 13 * h, root = 1024 * h + 32 * h + 2 * h, bytes;
    int members = 0;
    /* grad_op, 2 micro-batches: each layer gathered once per micro-batch,
     * the root once; every layer and the root reduce-scattered in fp32 */
    wl_strategy s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,fsdp=grad_op");
    sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    CHECK(colls(sc, "fsdp_allgather", &bytes, &members) == 2 * 4 + 1);
    CHECK(bytes == 2 * (2 * 4 * layer + root) && members == 8);
    CHECK(colls(sc, "fsdp_reducescatter", &bytes, &members) == 2 * 4 + 1);
    CHECK(bytes == 4 * (2 * 4 * layer + root));
    sim_sched_free(sc);
    /* hybrid on 2 nodes of 4: reduce-scatter over the node, then the
     * shard's all-reduce over the 2 nodes */
    s = wl_test_strategy("dp=8,mb=1,gb=8,dtype=bf16,fsdp=hybrid");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    CHECK(colls(sc, "fsdp_reducescatter", &bytes, &members) == 5 && members == 4);
    CHECK(colls(sc, "hsdp_allreduce", &bytes, &members) == 5 && members == 2);
    CHECK(bytes == 4 * (4 * ceil(layer / 4) + ceil(root / 4)));
    sim_sched_free(sc);
    sim_machine_free(mach);
}

/* Element-wise kernels of rank 0 named `name`: count, bytes, bytes of class
 * cls, and whether they all ran on the stream named `stream`. */
static int passes(const sim_schedule *s, const char *name, int cls, const char *stream, double *bytes, double *cbytes,
                  int *on)
{
    int n = 0;
    *bytes = *cbytes = 0;
    *on = 1;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (sim_sched_rank_of(s, i) != 0 || p->kind != SIM_OP_COMPUTE || strcmp(sim_sched_strname(s, p->name), name))
            continue;
        n++;
        *bytes += (double)p->bytes;
        if (cls > SIM_MEMC_STREAM)
            *cbytes += (double)p->class_bytes[cls - 1];
        *on &= !strcmp(sim_sched_strname(s, s->streams[s->ops[i].stream].name), stream);
    }
    return n;
}

static void test_grad_passes(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *mach = wl_test_machine(8, 0);
    sim_err err;
    double h = 64, layer = 12 * h * h + 13 * h, root = 1024 * h + 32 * h + 2 * h, all = 2 * 4 * layer + root;
    double b, c;
    int on;
    /* FSDP1, 2 micro-batches, reduced in fp32: per layer and micro-batch (and
     * the root once) the cat (2 + 2 bytes, the cat kernel's class) on the
     * compute stream, then on the reduce-scatter's stream the cast (2 + 4,
     * a widening copy) and the pre-division (4 + 4), ahead of the
     * reduce-scatter */
    wl_strategy s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,fsdp=full");
    sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    CHECK(passes(sc, "fsdp_grad_cat", SIM_MEMC_STRIDED, "compute", &b, &c, &on) == 9 && on);
    CHECK(b == 4 * all && c == b);
    CHECK(passes(sc, "fsdp_grad_cast", SIM_MEMC_CAST_UP, "fsdp-rs", &b, &c, &on) == 9 && on);
    CHECK(b == 6 * all && c == b);
    CHECK(passes(sc, "fsdp_grad_predivide", SIM_MEMC_STREAM, "fsdp-rs", &b, &c, &on) == 9 && on);
    CHECK(b == 8 * all);
    CHECK(passes(sc, "fsdp_grad_copy_in", SIM_MEMC_STREAM, "compute", &b, &c, &on) == 0);
    CHECK(passes(sc, "fsdp_param_copy_out", SIM_MEMC_STREAM, "compute", &b, &c, &on) == 0);
    /* on its stream each reduce-scatter follows its own pre-division */
    int prev_div = 0, ok = 1;
    for (uint32_t i = 0; i < sc->nops; i++) {
        if (sim_sched_rank_of(sc, i) != 0)
            continue;
        const char *n = sim_sched_strname(sc, sim_sched_payload_of(sc, i)->name);
        if (!strcmp(n, "fsdp_reducescatter"))
            ok &= prev_div, prev_div = 0;
        else if (!strcmp(n, "fsdp_grad_predivide"))
            prev_div = 1;
    }
    CHECK(ok);
    sim_sched_free(sc);
    /* reduced in bf16: no cast, the pre-division at 2 + 2 */
    s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,fsdp=full,grad_reduce=bf16");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc != NULL);
    CHECK(sc && passes(sc, "fsdp_grad_cast", SIM_MEMC_CAST_UP, "fsdp-rs", &b, &c, &on) == 0);
    CHECK(sc && passes(sc, "fsdp_grad_predivide", SIM_MEMC_STREAM, "fsdp-rs", &b, &c, &on) == 9 && b == 4 * all);
    sim_sched_free(sc);
    /* FSDP2: the gradients copied into the reduce-scatter buffer and widened
     * (2 + 4), no division of its own; every gathered layer copied out of
     * the all-gather buffer (2 + 2), in forward and again in backward */
    s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,fsdp=full,fsdp_impl=fsdp2");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    CHECK(sc && passes(sc, "fsdp_grad_copy_in", SIM_MEMC_STREAM, "compute", &b, &c, &on) == 9 && on && b == 6 * all);
    CHECK(sc && passes(sc, "fsdp_param_copy_out", SIM_MEMC_STREAM, "compute", &b, &c, &on) == 2 * 2 * 4 && on &&
          b == 2 * 2 * 4 * 4 * layer);
    CHECK(sc && passes(sc, "fsdp_grad_cat", SIM_MEMC_STRIDED, "compute", &b, &c, &on) == 0);
    CHECK(sc && passes(sc, "fsdp_grad_predivide", SIM_MEMC_STREAM, "fsdp-rs", &b, &c, &on) == 0);
    sim_sched_free(sc);
    /* every reduce-scatter waits for its own copy-in, the root unit's too
     * where the stage's embedding all-reduce also comes before it (pp 2) */
    s = wl_test_strategy("pp=2,dp=4,mb=1,gb=16,dtype=bf16,fsdp=full,fsdp_impl=fsdp2");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && sim_sched_check(sc, &err) == 0);
    int nrs = 0, waits = 0;
    for (uint32_t i = 0; sc && i < sc->nops; i++) {
        if (strcmp(sim_sched_strname(sc, sim_sched_payload_of(sc, i)->name), "fsdp_reducescatter"))
            continue;
        const sim_op *o = &sc->ops[i];
        int w = 0;
        for (int k = 0; k < o->ndeps; k++)
            w |= !strcmp(sim_sched_strname(sc, sim_sched_payload_of(sc, sc->deps[o->dep_first + k])->name),
                         "fsdp_grad_copy_in");
        nrs++, waits += w;
    }
    CHECK(nrs > 0 && waits == nrs);
    sim_sched_free(sc);
    /* Megatron-FSDP and DeepSpeed-style zero=3 have none of them */
    s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,fsdp=full,fsdp_impl=megatron");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && passes(sc, "fsdp_grad_cat", SIM_MEMC_STRIDED, "compute", &b, &c, &on) == 0);
    CHECK(sc && passes(sc, "fsdp_grad_predivide", SIM_MEMC_STREAM, "fsdp-rs", &b, &c, &on) == 0);
    sim_sched_free(sc);
    s = wl_test_strategy("dp=8,mb=1,gb=16,dtype=bf16,zero=3");
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc && passes(sc, "fsdp_grad_cat", SIM_MEMC_STRIDED, "compute", &b, &c, &on) == 0);
    sim_sched_free(sc);
    sim_machine_free(mach);
}

/* The end of rank 0's last forward kernel of micro-batch 0, from a trace. */
static double forward_end(const char *path)
{
    sim_err err;
    char *text = sim_read_file(path, &err);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    double end = -1;
    const cJSON *ev = root ? cJSON_GetObjectItemCaseSensitive(root, "traceEvents") : NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat"), *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "compute") || !args || pid->valueint != 0)
            continue;
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(args, "phase"), *mb = cJSON_GetObjectItemCaseSensitive(args, "micro");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "forward") || !mb || mb->valueint != 0)
            continue;
        double t = (cJSON_GetObjectItemCaseSensitive(e, "ts")->valuedouble +
                    cJSON_GetObjectItemCaseSensitive(e, "dur")->valuedouble) * 1e-6;
        end = t > end ? t : end;
    }
    cJSON_Delete(root);
    return end;
}

/* fsdp=full on 2 GPUs of a star (latency 0: an all-gather of X bytes takes
 * X/(2B)), kernels at their FLOPs: all-gathers of the root unit (R) and of
 * each layer (a), layer forward f.  The embedding waits for R, the first
 * layer's all-gather follows it and the first layer waits for it; layer j's
 * is issued when layer j-1 starts (FSDP's rate limit, two units gathered),
 * so the forward ends at R + a + f + (L-1)·max(f, a) + the output layer. */
static void test_forward_oracle(void)
{
    wl_model m;
    sim_err err;
    CHECK(wl_model_from_json("{\"layers\":6,\"hidden\":512,\"heads\":8,\"seq\":512,\"vocab\":512}", "u", &m, &err) == 0);
    double h = 512, layer = 12 * h * h + 13 * h, root = 512 * h + 512 * h + 2 * h;
    for (int k = 0; k < 2; k++) {
        double bw = k == 0 ? 4e11 : 1e9; /* all-gathers far below, far above a layer's compute */
        sim_machine *mach = star_flops_machine(2, bw, 100e12, 2);
        wl_strategy s = wl_test_strategy("dp=2,mb=1,gb=2,dtype=bf16,fsdp=full");
        sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
        CHECK(sc != NULL);
        if (!sc) {
            sim_machine_free(mach);
            continue;
        }
        /* per-layer forward and the output layer, priced by the cost model */
        double f = 0, out = 0;
        for (uint32_t i = 0; i < sc->nops; i++) {
            const sim_payload *p = sim_sched_payload_of(sc, i);
            if (sim_sched_rank_of(sc, i) != 0 || p->kind != SIM_OP_COMPUTE || sc->ops[i].micro != 0 ||
                sc->ops[i].phase != SIM_PHASE_FORWARD)
                continue;
            double c = sim_cost_kernel(&mach->gpus[0], p);
            if (sc->ops[i].layer == 0)
                f += c;
            else if (sc->ops[i].layer < 0)
                out += c;
        }
        char path[] = "/tmp/trainsim-fsdp-XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0)
            close(fd);
        sim_options o;
        sim_options_default(&o);
        o.trace_path = path;
        o.trace_detail = 1; /* every kernel on its own: the oracle reads one kernel's end */
        sim_result r;
        if (sim_run_isolated(sc, mach, &o, &r, &err) == 0) {
            double R = 2 * root / (2 * bw), a = 2 * layer / (2 * bw);
            double want = R + a + f + 5 * fmax(f, a) + out;
            char what[96];
            snprintf(what, sizeof what, "FSDP first forward, all-gather %s compute", k ? "above" : "below");
            if (near(forward_end(path), want, 0.001, what))
                wl_test_failures++;
            sim_result_free(&r);
        } else {
            fprintf(stderr, "%s\n", err.msg);
            wl_test_failures++;
        }
        unlink(path);
        sim_sched_free(sc);
        sim_machine_free(mach);
    }
}

static void test_errors(void)
{
    wl_model m = wl_test_tiny(4);
    sim_machine *m8 = wl_test_machine(8, 0);
    sim_err err;
    wl_memory mem;
    struct {
        const char *s, *want;
    } bad[] = {
        {"dp=8,gb=8,fsdp=full,zero=3", "fsdp and zero both choose the sharding"},
        {"dp=4,pp=2,gb=8,fsdp=grad_op", "with pp=2 several micro-batches are in flight"},
        {"tp=4,dp=2,gb=8,fsdp=hybrid", "each node holds one GPU of every data-parallel group"},
        {"dp=8,gb=8,fsdp_impl=fsdp2", "fsdp_impl chooses whose FSDP shards the model, but fsdp=none"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wl_strategy s = wl_test_strategy(bad[i].s);
        CHECK(wl_gpt_check(&m, &s, m8, &mem, &err) == -1);
        CHECK_HAS(err.msg, bad[i].want);
    }
    wl_strategy s;
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("fsdp=half", &s, &err) == -1);
    CHECK_HAS(err.msg, "fsdp: expected none, full, grad_op or hybrid");
    CHECK(wl_strategy_parse("fsdp=shard_grad_op", &s, &err) == 0 && s.fsdp == WL_FSDP_GRAD_OP);
    char buf[256];
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",fsdp=grad_op");
    CHECK(!strstr(buf, "fsdp_impl")); /* fsdp1, the default, reads as before */
    CHECK(wl_strategy_parse("fsdp_impl=deepspeed", &s, &err) == -1);
    CHECK_HAS(err.msg, "fsdp_impl: expected fsdp1 (PyTorch's FullyShardedDataParallel), fsdp2");
    CHECK(wl_strategy_parse("fsdp_impl=fully_shard", &s, &err) == 0 && s.fsdp_impl == WL_FSDP_IMPL_FSDP2);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",fsdp=grad_op,fsdp_impl=fsdp2");
    sim_machine_free(m8);
}

int main(void)
{
    test_memory();
    test_structure();
    test_grad_passes();
    test_forward_oracle();
    test_errors();
    return wl_test_done();
}
