/* test_gpt_schedule.c — the generated schedule: TP all-reduces per layer,
 * the 1F1B order, matched pipeline messages, stream conventions, the memory
 * timeline against the closed form, and sim_sched_check. */
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"

static wl_model tiny(int layers)
{
    wl_model m;
    sim_err err;
    char json[256];
    snprintf(json, sizeof json,
             "{\"name\":\"tiny\",\"layers\":%d,\"hidden\":64,\"heads\":4,\"ffn\":256,\"seq\":32,\"vocab\":1000}",
             layers);
    if (wl_model_from_json(json, "tiny.json", &m, &err))
        abort();
    return m;
}

static sim_schedule *gen(const wl_model *m, const char *text, int ngpus, wl_memory *mem)
{
    wl_strategy s;
    sim_err err;
    wl_strategy_default(&s);
    if (wl_strategy_parse(text, &s, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    sim_machine *mach = wl_test_machine(ngpus, 24e9);
    if (mem && wl_gpt_check(m, &s, mach, mem, &err)) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    sim_schedule *sc = wl_gpt_generate(m, &s, mach, &err);
    sim_machine_free(mach);
    if (!sc) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    return sc;
}

static const char *stream_name(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, s->streams[s->ops[op].stream].name);
}

static const char *op_name(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, sim_sched_payload_of(s, op)->name);
}

/* Per layer per micro-batch: 2 forward + 2 backward TP all-reduces of
 * s*b*h*d bytes; with full recompute 2 more in the recompute phase. */
static void test_tp_allreduces(void)
{
    wl_model m = tiny(4);
    for (int rc = 0; rc < 2; rc++) {
        /* tp=2, pp=2, dp=2, 3 micro-batches, fp32: s*b*h*d = 32*1*64*4 */
        sim_schedule *s = gen(&m, rc ? "tp=2,pp=2,dp=2,gb=6,dtype=fp32,recompute=full" : "tp=2,pp=2,dp=2,gb=6,dtype=fp32",
                              8, NULL);
        int count[8][4][3][SIM_PHASE_COUNT];
        memset(count, 0, sizeof count);
        for (uint32_t i = 0; i < s->nops; i++) {
            const sim_payload *p = sim_sched_payload_of(s, i);
            const sim_op *o = &s->ops[i];
            if (p->kind != SIM_OP_COLLECTIVE || strcmp(op_name(s, i), "tp_allreduce") != 0)
                continue;
            CHECK_STR(stream_name(s, i), "tp");
            CHECK(p->sub == SIM_COLL_ALLREDUCE && p->bytes == 32 * 64 * 4);
            if (o->layer < 0)
                continue; /* embedding and output layer */
            CHECK(o->layer < 4 && o->micro >= 0 && o->micro < 3);
            count[sim_sched_rank_of(s, i)][o->layer][o->micro][o->phase]++;
        }
        for (int r = 0; r < 8; r++) {
            int stage = r / 4;
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < 3; j++) {
                    int mine = l / 2 == stage;
                    CHECK(count[r][l][j][SIM_PHASE_FORWARD] == (mine ? 2 : 0));
                    CHECK(count[r][l][j][SIM_PHASE_BACKWARD] == (mine ? 2 : 0));
                    CHECK(count[r][l][j][SIM_PHASE_RECOMPUTE] == (mine && rc ? 2 : 0));
                }
        }
        sim_err err;
        CHECK(sim_sched_check(s, &err) == 0);
        sim_sched_free(s);
    }
    /* tp=1: no TP collectives and no "tp" stream */
    sim_schedule *s = gen(&m, "pp=2,dp=2,gb=4", 4, NULL);
    for (uint32_t i = 0; i < s->nops; i++)
        if (sim_sched_payload_of(s, i)->kind == SIM_OP_COLLECTIVE) {
            const char *n = op_name(s, i);
            CHECK(strcmp(n, "dp_allreduce") == 0 || strcmp(n, "embed_allreduce") == 0);
        }
    for (uint32_t i = 0; i < s->nstreams; i++)
        CHECK(strcmp(sim_sched_strname(s, s->streams[i].name), "tp") != 0);
    sim_sched_free(s);
}

/* The F/B micro-batch sequence of a rank's compute stream: "F0 F1 B0 ...". */
static void fb_sequence(const sim_schedule *s, int rank, char *buf, size_t len)
{
    size_t w = 0;
    buf[0] = 0;
    int last_phase = -1, last_micro = -1;
    for (uint32_t k = 0; k < s->nstreams; k++) {
        const sim_stream *st = &s->streams[k];
        if (st->rank != rank || strcmp(sim_sched_strname(s, st->name), "compute") != 0)
            continue;
        for (uint32_t i = 0; i < st->nops; i++) {
            const sim_op *o = &s->ops[st->ops[i]];
            if (o->micro < 0 || (o->phase != SIM_PHASE_FORWARD && o->phase != SIM_PHASE_BACKWARD))
                continue;
            if (o->phase == last_phase && o->micro == last_micro)
                continue;
            last_phase = o->phase;
            last_micro = o->micro;
            w += (size_t)snprintf(buf + w, len - w, "%s%c%d", w ? " " : "",
                                  o->phase == SIM_PHASE_FORWARD ? 'F' : 'B', o->micro);
        }
    }
}

static void test_1f1b(void)
{
    /* pp=4, m=6: PipeDream-Flush (Narayanan et al. 2021, Fig. 4 top) */
    static const char *want[4] = {
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5",
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5",
    };
    wl_model m = tiny(4);
    for (int rc = 0; rc < 2; rc++) {
        sim_schedule *s = gen(&m, rc ? "pp=4,gb=6,recompute=full" : "pp=4,gb=6", 4, NULL);
        char buf[256];
        for (int r = 0; r < 4; r++) {
            fb_sequence(s, r, buf, sizeof buf);
            CHECK_STR(buf, want[r]);
        }
        sim_err err;
        CHECK(sim_sched_check(s, &err) == 0);
        sim_sched_free(s);
    }
    /* fewer micro-batches than stages: all forwards, then all backwards */
    sim_schedule *s = gen(&m, "pp=4,gb=2", 4, NULL);
    char buf[256];
    fb_sequence(s, 0, buf, sizeof buf);
    CHECK_STR(buf, "F0 F1 B0 B1");
    fb_sequence(s, 3, buf, sizeof buf);
    CHECK_STR(buf, "F0 B0 F1 B1");
    sim_sched_free(s);
}

/* Every send has its receive at the peer, in order, same tag and bytes; the
 * four pipeline streams are used as documented. */
static void test_messages(void)
{
    wl_model m = tiny(8);
    sim_schedule *s = gen(&m, "tp=2,pp=4,dp=2,gb=10,dtype=bf16", 16, NULL);
    int nsend = 0, nrecv = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind == SIM_OP_SEND) {
            nsend++;
            const char *n = op_name(s, i);
            int src = sim_sched_rank_of(s, i), dst = s->ops[i].arg;
            CHECK(dst == src + 4 || dst == src - 4); /* same tp and dp index, next/previous stage */
            CHECK_STR(stream_name(s, i), dst > src ? "pp-send-next" : "pp-send-prev");
            CHECK_STR(n, dst > src ? "send_act" : "send_grad");
            CHECK(s->ops[i].ndeps == 1); /* on the kernel that produced the data */
        } else if (p->kind == SIM_OP_RECV) {
            nrecv++;
            int dst = sim_sched_rank_of(s, i), src = s->ops[i].arg;
            CHECK_STR(stream_name(s, i), src < dst ? "pp-recv-prev" : "pp-recv-next");
            CHECK(s->ops[i].ndeps == 0);
        }
    }
    CHECK(nsend == nrecv);
    CHECK(nsend == 2 /* directions */ * 3 /* stage boundaries */ * 4 /* tp*dp */ * 5 /* micro-batches */);
    /* match in order per (src, dst, tag) */
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind != SIM_OP_SEND)
            continue;
        int src = sim_sched_rank_of(s, i), dst = s->ops[i].arg;
        int k = 0; /* position of this send among src->dst sends with this tag */
        for (uint32_t j = 0; j < i; j++) {
            const sim_payload *q = sim_sched_payload_of(s, j);
            k += q->kind == SIM_OP_SEND && sim_sched_rank_of(s, j) == src && s->ops[j].arg == dst && q->tag == p->tag;
        }
        int found = 0;
        for (uint32_t j = 0; j < s->nops && !found; j++) {
            const sim_payload *q = sim_sched_payload_of(s, j);
            if (q->kind == SIM_OP_RECV && sim_sched_rank_of(s, j) == dst && s->ops[j].arg == src && q->tag == p->tag &&
                k-- == 0) {
                found = 1;
                CHECK(q->bytes == p->bytes && q->bytes == 32 * 64 * 2);
                CHECK(s->ops[j].micro == s->ops[i].micro);
            }
        }
        CHECK(found);
    }
    sim_err err;
    CHECK(sim_sched_check(s, &err) == 0);
    if (sim_sched_check(s, &err))
        fprintf(stderr, "%s\n", err.msg);
    sim_sched_free(s);
}

/* The memory effects on each rank's compute stream peak at the closed form;
 * the DP all-reduces carry the rank's gradients; meta is filled. */
static void test_memory_and_meta(void)
{
    wl_model m = tiny(4);
    static const char *strategies[] = {"tp=2,pp=2,dp=1,mb=2,gb=8,dtype=fp16",
                                       "tp=2,pp=2,dp=1,mb=2,gb=8,dtype=fp16,recompute=full",
                                       "tp=1,pp=1,dp=2,mb=2,gb=8,dtype=fp32,bucket=0.01",
                                       "tp=2,pp=1,dp=1,mb=1,gb=3,dtype=tf32,recompute=full"};
    static const int gpus[] = {4, 4, 2, 2};
    for (int k = 0; k < 4; k++) {
        wl_memory mem;
        sim_schedule *s = gen(&m, strategies[k], gpus[k], &mem);
        double peak_all = 0, peak0 = 0;
        for (uint32_t st = 0; st < s->nstreams; st++) {
            const sim_stream *ss = &s->streams[st];
            double cur = 0, peak = 0, dp_bytes = 0, grads = 0;
            for (uint32_t i = 0; i < ss->nops; i++) {
                const sim_payload *p = sim_sched_payload_of(s, ss->ops[i]);
                if (p->kind == SIM_OP_MEMORY) {
                    cur += (double)p->bytes;
                    peak = cur > peak ? cur : peak;
                    if (p->sub == SIM_MEM_GRADIENTS)
                        grads = (double)p->bytes;
                }
            }
            if (strcmp(sim_sched_strname(s, ss->name), "compute") == 0) {
                /* everything but the persistent state is freed by the end */
                double persistent = 0;
                for (uint32_t i = 0; i < ss->nops; i++) {
                    const sim_payload *p = sim_sched_payload_of(s, ss->ops[i]);
                    if (p->kind == SIM_OP_MEMORY && p->sub != SIM_MEM_ACTIVATIONS)
                        persistent += (double)p->bytes;
                }
                CHECK(cur == persistent);
                /* the optimizer step is the last operation */
                uint32_t lastop = ss->ops[ss->nops - 1];
                CHECK_STR(op_name(s, lastop), "optimizer");
                CHECK(s->ops[lastop].phase == SIM_PHASE_OPTIMIZER);
                peak_all = peak > peak_all ? peak : peak_all;
                if (ss->rank == 0)
                    peak0 = peak;
                /* the DP buckets of this rank add up to its gradients */
                for (uint32_t t2 = 0; t2 < s->nstreams; t2++)
                    if (s->streams[t2].rank == ss->rank &&
                        strcmp(sim_sched_strname(s, s->streams[t2].name), "dp") == 0)
                        for (uint32_t i = 0; i < s->streams[t2].nops; i++) {
                            uint32_t op = s->streams[t2].ops[i];
                            if (strcmp(op_name(s, op), "dp_allreduce") == 0)
                                dp_bytes += (double)sim_sched_payload_of(s, op)->bytes;
                        }
                int dp = strstr(strategies[k], "dp=2") ? 2 : 1;
                CHECK(dp == 1 || dp_bytes == grads);
            }
        }
        if (peak_all != mem.total || peak0 != mem.total)
            fprintf(stderr, "%s: timeline peak %.0f (rank 0 %.0f), closed form %.0f\n", strategies[k], peak_all, peak0,
                    mem.total);
        CHECK(peak_all == mem.total);
        CHECK(peak0 == mem.total);

        wl_strategy st;
        wl_strategy_default(&st);
        sim_err err;
        CHECK(wl_strategy_parse(strategies[k], &st, &err) == 0);
        CHECK_HAS(s->meta.name, "tiny");
        CHECK(s->meta.samples_per_iteration == st.gb);
        CHECK(s->meta.tokens_per_iteration == st.gb * 32.0);
        CHECK(s->meta.model_flops_per_iteration == wl_gpt_model_flops(&m, &st));
        CHECK(s->meta.dtype == (int)st.dtype);
        CHECK(sim_sched_check(s, &err) == 0);
        sim_sched_free(s);
    }
}

/* Ranks in Megatron order and the communicators that follow from it. */
static void test_groups(void)
{
    wl_model m = tiny(4);
    sim_schedule *s = gen(&m, "tp=2,pp=2,dp=2,gb=4", 8, NULL);
    CHECK(s->nranks == 8);
    int ntp = 0, ndp = 0, nemb = 0;
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        const char *n = sim_sched_strname(s, cm->name);
        if (strncmp(n, "tp", 2) == 0) {
            ntp++;
            CHECK(cm->nranks == 2 && cm->ranks[1] == cm->ranks[0] + 1);
        } else if (strncmp(n, "dp", 2) == 0) {
            ndp++;
            CHECK(cm->nranks == 2 && cm->ranks[1] == cm->ranks[0] + 2);
        } else if (strncmp(n, "embed", 5) == 0) {
            nemb++;
            CHECK(cm->nranks == 2 && cm->ranks[0] < 4 && cm->ranks[1] == cm->ranks[0] + 4);
        }
    }
    CHECK(ntp == 4 && ndp == 4 && nemb == 4);
    sim_sched_free(s);
}

/* kernels=eager: PyTorch eager's element-wise passes per layer (layer_payloads.c,
 * elem_passes_of) against the fused defaults, in hidden-sized passes of
 * s*b*h*d bytes (tiny: bias on, GELU MLP of 4h, full heads, fp32): forward
 * post_attn 6 -> 5, post_mlp 4 -> 3; backward post_mlp_bwd 4 -> 1, the
 * activation's backward 3 -> 4 per ffn element, post_attn_bwd 8 -> 9, ln1_bwd
 * 3 -> 8 plus 3 per QKV element; the GEMMs and the kernel count unchanged. */
static void test_eager_kernels(void)
{
    wl_model m = tiny(2);
    sim_schedule *f = gen(&m, "mb=2,gb=2", 1, NULL), *e = gen(&m, "mb=2,gb=2,kernels=eager", 1, NULL);
    CHECK(f->nops == e->nops);
    int64_t unit = 32 * 2 * 64 * 4, qkv = 3 * unit, ffn = 4 * unit;
    static const struct {
        const char *name;
        int64_t fused, eager;
    } want[] = {{"post_attn", 6, 5}, {"post_mlp", 4, 3}, {"post_mlp_bwd", 4, 1}, {"post_attn_bwd", 8, 9}};
    int seen = 0, gemms_equal = 1;
    for (uint32_t i = 0; i < f->nops && i < e->nops; i++) {
        const sim_payload *a = sim_sched_payload_of(f, i), *b = sim_sched_payload_of(e, i);
        const char *n = op_name(f, i);
        CHECK(strcmp(n, op_name(e, i)) == 0);
        if (a->kind != SIM_OP_COMPUTE)
            continue;
        if (a->sub == SIM_KERNEL_GEMM)
            gemms_equal &= a->m == b->m && a->n == b->n && a->k == b->k;
        for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
            if (strcmp(n, want[w].name) == 0) {
                CHECK(a->bytes == want[w].fused * unit && b->bytes == want[w].eager * unit);
                seen++;
            }
        if (strcmp(n, "gelu_bwd") == 0)
            CHECK(a->bytes == 3 * ffn && b->bytes == 4 * ffn);
        if (strcmp(n, "ln1_bwd") == 0)
            CHECK(a->bytes == 3 * unit && b->bytes == 8 * unit + 3 * qkv);
    }
    CHECK(gemms_equal && seen == 4 * 2);
    wl_strategy s;
    sim_err err;
    char buf[512];
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("kernels=eager", &s, &err) == 0 && s.eager_kernels);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK(strstr(buf, ",kernels=eager") != NULL);
    CHECK(wl_strategy_parse("kernels=fused", &s, &err) == 0 && !s.eager_kernels);
    CHECK(wl_strategy_parse("kernels=compiled", &s, &err) != 0 && strstr(err.msg, "kernels: expected fused") != NULL);
    sim_sched_free(f);
    sim_sched_free(e);
}

/* Sum of the bytes of the compute payloads called `name` in phase ph (-1:
 * any) and micro-batch micro (-1: any), and how many there are. */
static int64_t named_bytes(const sim_schedule *s, const char *name, int ph, int micro, int *count)
{
    int64_t sum = 0;
    *count = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind != SIM_OP_COMPUTE || strcmp(op_name(s, i), name) != 0)
            continue;
        if ((ph >= 0 && s->ops[i].phase != ph) || (micro >= 0 && s->ops[i].micro != micro))
            continue;
        sum += p->bytes;
        (*count)++;
    }
    return sum;
}

/* autocast=1 (torch.autocast over fp32 parameters; layer_payloads.c
 * opset_autocast, gpt.c resolve_autocast), on tiny (h 64, ffn 256, biases,
 * 2 layers, vocab 1000 padded to 1024, tied), mb=2 and two micro-batches,
 * bf16 on one GPU.  A layer's linears hold W = 4h^2 + 2h*ffn + 3h + h + ffn
 * + h = 49,728 parameters: every forward casts them (6 W bytes), the first
 * micro-batch's backward casts the gradients (6 W), the second casts and
 * adds them into .grad (18 W); the output layer the same on V*h = 65,536
 * (the tied sum 12 V*h, 24 V*h with the accumulation).  Under kernels=eager
 * the fp32 residual stream's passes (16-bit units of s*b*h*2 = 8,192 bytes):
 * ln1 2 -> 7, post_attn 5 -> 12, post_mlp 3 -> 5, post_mlp_bwd 1 -> 4,
 * post_attn_bwd 9 -> 23, ln1_bwd 8 -> 19 (+ 3 per QKV element either way);
 * final_ln 2 -> 7, final_ln_bwd 5 -> 13.  Memory: fp32 weights (4 bytes) +
 * the live 16-bit copies (2 W per layer from its forward to its backward),
 * fp32 .grad (4), Adam m, v (8); the norms' saved inputs in fp32. */
static void test_autocast(void)
{
    wl_model m = tiny(2);
    const int64_t W = 4 * 64 * 64 + 2 * 64 * 256 + 3 * 64 + 64 + 256 + 64, VH = 1024 * 64, unit = 32 * 2 * 64 * 2;
    CHECK(W == 49728);
    wl_memory me, ma, mf;
    sim_schedule *e = gen(&m, "mb=2,gb=4,dtype=bf16,kernels=eager", 1, &me);
    sim_schedule *a = gen(&m, "mb=2,gb=4,dtype=bf16,kernels=eager,autocast=1", 1, &ma);
    int n;
    for (int micro = 0; micro < 2; micro++) {
        CHECK(named_bytes(a, "autocast_weight_cast", SIM_PHASE_FORWARD, micro, &n) == 2 * 6 * W && n == 2);
        CHECK(named_bytes(a, "output_weight_cast", SIM_PHASE_FORWARD, micro, &n) == 6 * VH && n == 1);
    }
    CHECK(named_bytes(a, "autocast_grad_cast", SIM_PHASE_BACKWARD, 0, &n) == 2 * 6 * W && n == 2);
    CHECK(named_bytes(a, "autocast_grad_cast", -1, 1, &n) == 0 && n == 0);
    CHECK(named_bytes(a, "autocast_grad_cast_accumulate", SIM_PHASE_BACKWARD, 1, &n) == 2 * 18 * W && n == 2);
    CHECK(named_bytes(a, "output_grad_cast", SIM_PHASE_BACKWARD, 0, &n) == 6 * VH && n == 1);
    CHECK(named_bytes(a, "output_grad_cast_accumulate", SIM_PHASE_BACKWARD, 1, &n) == 6 * VH && n == 1);
    CHECK(named_bytes(a, "tied_grad_sum", SIM_PHASE_BACKWARD, 0, &n) == 12 * VH && n == 1);
    CHECK(named_bytes(a, "tied_grad_sum_accumulate", SIM_PHASE_BACKWARD, 1, &n) == 24 * VH && n == 1);
    CHECK(named_bytes(e, "autocast_weight_cast", -1, -1, &n) == 0 && n == 0);
    static const struct {
        const char *name;
        int64_t eager, autocast;
    } want[] = {{"ln1", 2, 7},          {"post_attn", 5, 12},     {"post_mlp", 3, 5},
                {"post_mlp_bwd", 1, 4}, {"post_attn_bwd", 9, 23}, {"final_ln", 2, 7},
                {"final_ln_bwd", 5, 13}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        int layers = strncmp(want[w].name, "final", 5) ? 2 : 1, ne, na;
        int64_t be = named_bytes(e, want[w].name, -1, 0, &ne), ba = named_bytes(a, want[w].name, -1, 0, &na);
        CHECK(ne == layers && na == layers);
        CHECK(be == layers * want[w].eager * unit && ba == layers * want[w].autocast * unit);
    }
    int64_t glue = 3 * 3 * unit; /* the QKV bias gradient and the dQ, dK, dV concatenation */
    CHECK(named_bytes(e, "ln1_bwd", -1, 0, &n) == 2 * (8 * unit + glue));
    CHECK(named_bytes(a, "ln1_bwd", -1, 0, &n) == 2 * (19 * unit + glue));
    /* memory: the closed form of the check against the model's parameters */
    double P = wl_model_params(&m) - 1000 * 64 + 1024 * 64; /* the padded vocabulary */
    CHECK(me.weights == 2 * P && me.optimizer == 12 * P && me.gradients == 4 * P);
    CHECK(ma.weights == 4 * P + 2 * 2 * W && ma.optimizer == 8 * P && ma.gradients == 4 * P);
    CHECK(ma.activations - me.activations == 2 * 2 * 2 * 32 * 2 * 64); /* 2 layers x 2 norms x 2 more bytes x sbh */
    /* recompute=full drops the forward's copies: one layer's at a time */
    sim_sched_free(gen(&m, "mb=2,gb=4,dtype=bf16,kernels=eager,autocast=1,recompute=full", 1, &mf));
    CHECK(mf.weights <= 4 * P + 2 * W && mf.weights >= 4 * P);
    /* kernels=fused: the casts, the fused passes unchanged */
    sim_schedule *f = gen(&m, "mb=2,gb=4,dtype=bf16", 1, NULL),
                 *fa = gen(&m, "mb=2,gb=4,dtype=bf16,autocast=1", 1, NULL);
    CHECK(named_bytes(f, "post_attn", -1, -1, &n) == named_bytes(fa, "post_attn", -1, -1, &n));
    CHECK(named_bytes(f, "ln1_bwd", -1, -1, &n) == named_bytes(fa, "ln1_bwd", -1, -1, &n));
    CHECK(named_bytes(fa, "autocast_weight_cast", -1, -1, &n) == 4 * 6 * W && n == 4);
    sim_sched_free(f);
    sim_sched_free(fa);
    sim_sched_free(e);
    sim_sched_free(a);

    /* the key, its format and what it refuses */
    wl_strategy s;
    sim_err err;
    char buf[512];
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("dtype=bf16,autocast=1", &s, &err) == 0 && s.autocast);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK(strstr(buf, ",autocast=1") != NULL);
    CHECK(wl_strategy_parse("autocast=yes", &s, &err) != 0);
    CHECK_HAS(err.msg, "autocast: expected 0 or 1");
    static const struct {
        const char *strategy, *msg;
        int gpus;
    } bad[] = {
        {"dtype=fp32,autocast=1", "it needs dtype=bf16 or fp16, got dtype=fp32", 1},
        {"dtype=bf16,dp=2,gb=2,fsdp=full,autocast=1", "fsdp keeps 16-bit weights", 2},
        {"dtype=bf16,dp=2,gb=2,zero=1,autocast=1", "zero keeps 16-bit weights", 2},
        {"dtype=bf16,tp=2,mb=2,gb=2,schedule=oases,autocast=1", "modelled for schedule=megatron", 2},
        {"dtype=bf16,dp=2,gb=2,grad_reduce=bf16,autocast=1", "grad_reduce=bf16 does not apply", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wl_memory mem;
        wl_strategy_default(&s);
        CHECK(wl_strategy_parse(bad[i].strategy, &s, &err) == 0);
        sim_machine *mach = wl_test_machine(bad[i].gpus, 24e9);
        CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) != 0);
        CHECK_HAS(err.msg, bad[i].msg);
        sim_machine_free(mach);
    }
}

/* optimizer=: the step's bytes per parameter (wl_optimizer): fused 28,
 * foreach 80, megatron 28 + a read and a write of the gradients (+ fp16's
 * unscale, a read and a write more), with fp32 gradients (4 bytes) unless
 * grad_reduce keeps them in 16 bits (fp16 keeps 2-byte gradients); the key round-trips through the
 * strategy's text and a bad value names the choices. */
static void test_optimizer(void)
{
    wl_model m = tiny(2);
    static const struct {
        const char *text;
        int64_t per;
    } want[] = {{"mb=2,gb=2,dtype=bf16", 28},
                {"mb=2,gb=2,dtype=bf16,optimizer=fused", 28},
                {"mb=2,gb=2,dtype=bf16,optimizer=foreach", 80},
                {"mb=2,gb=2,dtype=bf16,optimizer=megatron", 28 + 2 * 4},
                {"mb=2,gb=2,dtype=fp16,optimizer=megatron", 28 + 4 * 2}, /* fp16 gradients: 2 bytes */
                {"mb=2,gb=2,dtype=bf16,grad_reduce=bf16,optimizer=megatron", 28 + 2 * 2},
                /* Megatron-LM of early 2021: DDP's flatten, scale and copy
                 * back (6 g), the cast to fp32 main gradients (g + 4), the
                 * unscale (fp16 only), the norm, Adam, the weights back */
                {"mb=2,gb=2,dtype=fp16,optimizer=megatron_legacy", 6 * 2 + (2 + 4) + 8 + 4 + 28 + (4 + 2)},
                {"mb=2,gb=2,dtype=bf16,optimizer=megatron_legacy", 6 * 4 + (4 + 4) + 4 + 28 + (4 + 2)},
                {"mb=2,gb=2,dtype=fp32,optimizer=megatron_legacy", 6 * 4 + 4 + 28}};
    int64_t base = 0;
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        sim_schedule *s = gen(&m, want[w].text, 1, NULL);
        int n;
        int64_t b = named_bytes(s, "optimizer", SIM_PHASE_OPTIMIZER, -1, &n);
        CHECK(n == 1);
        if (w == 0)
            base = b / 28; /* the parameters the step updates */
        if (b != want[w].per * base)
            fprintf(stderr, "%s: %lld bytes per parameter, expected %lld\n", want[w].text, (long long)(b / base), (long long)want[w].per);
        CHECK(b == want[w].per * base);
        sim_sched_free(s);
    }
    wl_strategy st;
    sim_err err;
    char text[256];
    wl_strategy_default(&st);
    CHECK(wl_strategy_parse("optimizer=foreach", &st, &err) == 0 && st.optimizer == WL_OPT_FOREACH);
    wl_strategy_format(&st, text, sizeof text);
    CHECK(strstr(text, ",optimizer=foreach") != NULL);
    CHECK(wl_strategy_parse("optimizer=adam", &st, &err) < 0 && strstr(err.msg, "expected fused") != NULL);
    /* the legacy step is whole on every replica, and keeps fp32 main
     * gradients beside the master weights: 4 more bytes of optimizer memory */
    CHECK(wl_strategy_parse("mb=1,gb=2,dtype=fp16,zero=1,optimizer=megatron_legacy", &st, &err) == 0);
    sim_machine *mach = wl_test_machine(2, 24e9);
    sim_schedule *no = wl_gpt_generate(&m, &st, mach, &err);
    CHECK(!no && strstr(err.msg, "needs zero=0") != NULL);
    CHECK(wl_strategy_parse("mb=1,gb=2,dtype=fp16,zero=0,dp_overlap=1,optimizer=megatron_legacy", &st, &err) == 0);
    no = wl_gpt_generate(&m, &st, mach, &err);
    CHECK(!no && strstr(err.msg, "dp_overlap=0") != NULL);
    sim_machine_free(mach);
    wl_memory ma, mb;
    sim_schedule *a = gen(&m, "mb=2,gb=2,dtype=fp16,optimizer=megatron", 1, &ma);
    sim_schedule *b = gen(&m, "mb=2,gb=2,dtype=fp16,optimizer=megatron_legacy", 1, &mb);
    int n;
    double np = (double)(named_bytes(a, "optimizer", SIM_PHASE_OPTIMIZER, -1, &n) / (28 + 4 * 2));
    CHECK(mb.optimizer - ma.optimizer == 4 * np && mb.optimizer == 16 * np);
    sim_sched_free(a);
    sim_sched_free(b);
}

/* grad_accum=cast_add (DeepSpeed's BF16_Optimizer): after every
 * micro-batch's backward the stage's 16-bit gradients cast to fp32 (2 + 4,
 * cast_up) and added into the fp32 buffer (4 + 4 + 4): 18 bytes per
 * parameter, once per micro-batch; fused (the default) has no pass. */
static void test_grad_accum(void)
{
    wl_model m = tiny(2);
    double P = wl_model_params(&m) - 1000 * 64 + 1024 * 64; /* the padded vocabulary */
    sim_schedule *c = gen(&m, "mb=2,gb=4,dtype=bf16,grad_accum=cast_add", 1, NULL);
    sim_schedule *f = gen(&m, "mb=2,gb=4,dtype=bf16", 1, NULL);
    int n;
    for (int micro = 0; micro < 2; micro++)
        CHECK(named_bytes(c, "hp_grad_accumulate", SIM_PHASE_BACKWARD, micro, &n) == 18 * P && n == 1);
    int64_t cast = 0;
    for (uint32_t i = 0; i < c->nops; i++)
        if (!strcmp(op_name(c, i), "hp_grad_accumulate"))
            cast = sim_sched_payload_of(c, i)->class_bytes[SIM_MEMC_CAST_UP - 1];
    CHECK(cast == 6 * P);
    CHECK(named_bytes(f, "hp_grad_accumulate", -1, -1, &n) == 0 && n == 0);
    sim_sched_free(c);
    sim_sched_free(f);
    wl_strategy s;
    sim_err err;
    char buf[512];
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("dtype=bf16,grad_accum=cast_add", &s, &err) == 0 && s.grad_accum == WL_GACC_CAST_ADD);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK(strstr(buf, ",grad_accum=cast_add") != NULL);
    CHECK(wl_strategy_parse("grad_accum=sum", &s, &err) != 0);
    CHECK_HAS(err.msg, "grad_accum: expected fused");
    static const char *const bad[] = {"dtype=fp32,grad_accum=cast_add", "dtype=bf16,dp=2,gb=2,fsdp=full,grad_accum=cast_add",
                                      "dtype=bf16,dp=2,gb=2,zero=2,grad_accum=cast_add"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wl_memory mem;
        wl_strategy_default(&s);
        CHECK(wl_strategy_parse(bad[i], &s, &err) == 0);
        sim_machine *mach = wl_test_machine(2, 24e9);
        CHECK(wl_gpt_check(&m, &s, mach, &mem, &err) != 0);
        CHECK_HAS(err.msg, "grad_accum=cast_add adds 16-bit gradients into a whole fp32 buffer");
        sim_machine_free(mach);
    }
}

int main(void)
{
    test_tp_allreduces();
    test_1f1b();
    test_messages();
    test_memory_and_meta();
    test_groups();
    test_eager_kernels();
    test_autocast();
    test_optimizer();
    test_grad_accum();
    return wl_test_done();
}
