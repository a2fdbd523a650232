/* test_tp_schedules.c — the tensor-parallel layer schedules of layer.c,
 * pinned operation by operation against papers.md: the Oases windows W1-W4
 * (Sec. 1.4) and V1-V4 (Sec. 1.5) with one all-reduce in flight; 6 vs 4
 * all-reduces per layer per micro-batch along the ladder (Sec. 1.3); Merak's
 * queue of two and its level-3 cross-layer window (Sec. 2.2); the sequence-
 * parallel collectives; Tesseract's SUMMA collectives (Sec. 4.3); the cut-point
 * all-gather; the memory effects against the memory model; strategy errors. */
#include <stdio.h>

#include "wl_test.h"
#include "workloads/gpt.h"
#include "workloads/layer.h"

static sim_schedule *gen(const wl_model *m, const char *text, int ngpus, wl_memory *peak)
{
    wl_strategy s = wl_test_strategy(text);
    sim_err err;
    sim_machine *mach = wl_test_machine(ngpus, 80e9);
    if (peak && wl_gpt_check(m, &s, mach, peak, &err)) {
        fprintf(stderr, "%s: %s\n", text, err.msg);
        abort();
    }
    sim_schedule *sc = wl_test_generate(m, text, mach);
    sim_machine_free(mach);
    return sc;
}

static const char *sname(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, s->streams[s->ops[op].stream].name);
}

static const char *oname(const sim_schedule *s, uint32_t op)
{
    return sim_sched_strname(s, sim_sched_payload_of(s, op)->name);
}

static const sim_stream *stream_of(const sim_schedule *s, int rank, const char *name)
{
    for (uint32_t k = 0; k < s->nstreams; k++)
        if (s->streams[k].rank == rank && strcmp(sim_sched_strname(s, s->streams[k].name), name) == 0)
            return &s->streams[k];
    return NULL;
}

static int depends_on(const sim_schedule *s, uint32_t op, uint32_t dep)
{
    const sim_op *o = &s->ops[op];
    for (uint32_t i = 0; i < o->ndeps; i++)
        if (s->deps[o->dep_first + i] == dep)
            return 1;
    return 0;
}

/* The Oases block a kernel belongs to (papers.md Sec. 1.4-1.5): forward A
 * (LN1, QKV, core, projection), P (post_attn), M (MLP), Q (post_mlp);
 * backward Qr / Qb (post_mlp recomputed / its backward), RBm / RBa (a block
 * recomputed and its backward), Pb (post_attn backward), L1b (LN1 backward). */
static const char *block(const sim_schedule *s, uint32_t op)
{
    const char *n = oname(s, op);
    int ph = s->ops[op].phase;
    int attn = !strcmp(n, "ln1") || !strcmp(n, "qkv") || !strcmp(n, "attn") || !strcmp(n, "proj");
    int mlp = !strcmp(n, "fc1") || !strcmp(n, "gelu") || !strcmp(n, "fc2");
    if (ph == SIM_PHASE_FORWARD) {
        if (attn)
            return "A";
        if (mlp)
            return "M";
        if (!strcmp(n, "post_attn"))
            return "P";
        if (!strcmp(n, "post_mlp"))
            return "Q";
        return n;
    }
    if (ph == SIM_PHASE_RECOMPUTE) {
        if (!strcmp(n, "post_mlp"))
            return "Qr";
        if (attn)
            return "RBa";
        return "RBm"; /* post_attn + LN2 and the MLP */
    }
    if (!strcmp(n, "post_mlp_bwd"))
        return "Qb";
    if (!strcmp(n, "post_attn_bwd"))
        return "Pb";
    if (!strcmp(n, "ln1_bwd"))
        return "L1b";
    if (strstr(n, "fc1") || strstr(n, "fc2") || strstr(n, "gelu"))
        return "RBm";
    if (strstr(n, "proj") || strstr(n, "attn") || strstr(n, "qkv"))
        return "RBa";
    return n;
}

/* Position of each op of rank 0's compute stream; UINT32_MAX elsewhere. */
static uint32_t *compute_positions(const sim_schedule *s, int rank, const sim_stream **cs)
{
    uint32_t *pos = malloc(sizeof(uint32_t) * s->nops);
    for (uint32_t i = 0; i < s->nops; i++)
        pos[i] = UINT32_MAX;
    *cs = stream_of(s, rank, "compute");
    for (uint32_t i = 0; i < (*cs)->nops; i++)
        pos[(*cs)->ops[i]] = i;
    return pos;
}

/* The compute kernels that can run beside collective x: those after the
 * kernel it was launched from and before the first kernel that waits for it,
 * as "block<sub>.<layer>" tokens, runs of one block collapsed. */
static void window(const sim_schedule *s, const sim_stream *cs, const uint32_t *pos, uint32_t x, char *buf,
                   size_t len)
{
    const sim_op *o = &s->ops[x];
    uint32_t from = UINT32_MAX;
    for (uint32_t i = 0; i < o->ndeps; i++) {
        uint32_t d = s->deps[o->dep_first + i];
        if (pos[d] != UINT32_MAX && (from == UINT32_MAX || pos[d] > from))
            from = pos[d];
    }
    size_t w = 0;
    buf[0] = 0;
    char last[32] = "";
    for (uint32_t i = from + 1; i < cs->nops; i++) {
        uint32_t k = cs->ops[i];
        if (depends_on(s, k, x))
            break;
        if (sim_sched_payload_of(s, k)->kind != SIM_OP_COMPUTE)
            continue;
        char tok[32];
        const sim_op *ko = &s->ops[k];
        if (ko->subbatch >= 0)
            snprintf(tok, sizeof tok, "%s%d.%d", block(s, k), ko->subbatch, ko->layer);
        else
            snprintf(tok, sizeof tok, "%s.%d", block(s, k), ko->layer);
        if (strcmp(tok, last)) {
            w += (size_t)snprintf(buf + w, len > w ? len - w : 0, "%s%s", w ? " " : "", tok);
            snprintf(last, sizeof last, "%s", tok);
        }
    }
}

/* The layer all-reduces of a rank, in stream order, for one micro-batch and
 * phase group (forward, or backward with recompute). */
static int layer_ars(const sim_schedule *s, int rank, int micro, int backward, uint32_t *out, int max)
{
    const sim_stream *tp = stream_of(s, rank, "tp");
    int n = 0;
    for (uint32_t i = 0; tp && i < tp->nops; i++) {
        const sim_op *o = &s->ops[tp->ops[i]];
        if (o->layer < 0 || o->micro != micro || strcmp(oname(s, tp->ops[i]), "tp_allreduce"))
            continue;
        if ((o->phase == SIM_PHASE_FORWARD) == !backward && n < max)
            out[n++] = tp->ops[i];
    }
    return n;
}

/* papers.md Sec. 1.4 and 1.5, three layers on one stage. */
static void test_oases_windows(void)
{
    static const char *fwd[12] = {
        "A2.0",      "P1.0 M1.0", "P2.0 M2.0", "Q1.0 A1.1", /* W1-W4 of layer 0 */
        "Q2.0 A2.1", "P1.1 M1.1", "P2.1 M2.1", "Q1.1 A1.2", /* layer 1 */
        "Q2.1 A2.2", "P1.2 M1.2", "P2.2 M2.2", "Q1.2",      /* layer 2; then Q2.2 exposed */
    };
    static const char *bwd[12] = {
        "Qr1.2 Qb1.2 RBm1.2", "Pb2.2 Qr2.1 RBa2.2", "Pb1.2 Qr1.1 RBa1.2", "L1b2.2 Qb2.1 RBm2.1", /* V1-V4(2) */
        "L1b1.2 Qb1.1 RBm1.1", "Pb2.1 Qr2.0 RBa2.1", "Pb1.1 Qr1.0 RBa1.1", "L1b2.1 Qb2.0 RBm2.0",
        "L1b1.1 Qb1.0 RBm1.0", "Pb2.0 RBa2.0",       "Pb1.0 RBa1.0",       "L1b2.0", /* then L1b1.0 exposed */
    };
    wl_model m = wl_test_tiny(3);
    sim_schedule *s = gen(&m, "tp=2,mb=2,gb=4,schedule=oases", 2, NULL);
    const sim_stream *cs;
    uint32_t *pos = compute_positions(s, 0, &cs);
    for (int micro = 0; micro < 2; micro++) {
        uint32_t ar[32];
        char buf[256];
        int n = layer_ars(s, 0, micro, 0, ar, 32);
        CHECK(n == 12);
        for (int i = 0; i < n && i < 12; i++) {
            window(s, cs, pos, ar[i], buf, sizeof buf);
            CHECK_STR(buf, fwd[i]);
        }
        n = layer_ars(s, 0, micro, 1, ar, 32);
        CHECK(n == 12);
        for (int i = 0; i < n && i < 12; i++) {
            window(s, cs, pos, ar[i], buf, sizeof buf);
            CHECK_STR(buf, bwd[i]);
        }
        /* the prologue of the backward: Q_2 recompute and backward and
         * RB(mlp, 2) of the top layer before the first all-reduce */
        const sim_op *first = &s->ops[ar[0]];
        CHECK(first->layer == 2 && first->subbatch == 2);
    }
    free(pos);
    sim_sched_free(s);
}

/* Collectives of a rank's "tp" stream in flight when each layer all-reduce
 * is launched: itself plus the earlier ones not yet retired.  One is retired
 * once a kernel up to the launch point has waited for it or for a later one
 * on the same in-order stream, or once the host waited for it before
 * launching a later one (an explicit dependency between the two). */
static int max_in_flight(const sim_schedule *s, int rank, int *min_out)
{
    const sim_stream *cs;
    uint32_t *pos = compute_positions(s, rank, &cs);
    const sim_stream *tp = stream_of(s, rank, "tp");
    uint32_t n = tp ? tp->nops : 0;
    uint32_t *waited = malloc(sizeof(uint32_t) * s->nops);
    uint32_t *ret_pos = malloc(sizeof(uint32_t) * (n + 1)), *ret_launch = malloc(sizeof(uint32_t) * (n + 1));
    for (uint32_t i = 0; i < s->nops; i++)
        waited[i] = UINT32_MAX;
    for (uint32_t i = 0; i < cs->nops; i++) {
        const sim_op *o = &s->ops[cs->ops[i]];
        for (uint32_t d = 0; d < o->ndeps; d++) {
            uint32_t x = s->deps[o->dep_first + d];
            if (waited[x] == UINT32_MAX)
                waited[x] = i;
        }
    }
    ret_pos[n] = UINT32_MAX;
    for (uint32_t j = n; j-- > 0;) {
        uint32_t w = waited[tp->ops[j]];
        ret_pos[j] = w < ret_pos[j + 1] ? w : ret_pos[j + 1];
    }
    /* ret_launch[j]: the first k > j whose launch explicitly waited for one
     * of ops[j..k) */
    for (uint32_t j = 0; j < n; j++) {
        ret_launch[j] = UINT32_MAX;
        for (uint32_t k = j + 1; k < n && ret_launch[j] == UINT32_MAX; k++)
            for (uint32_t x = j; x < k; x++)
                if (depends_on(s, tp->ops[k], tp->ops[x]))
                    ret_launch[j] = k;
    }
    int worst = 0, best = 1 << 30;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t y = tp->ops[i];
        const sim_op *o = &s->ops[y];
        if (o->layer < 0)
            continue;
        uint32_t from = 0;
        for (uint32_t d = 0; d < o->ndeps; d++)
            if (pos[s->deps[o->dep_first + d]] != UINT32_MAX)
                from = pos[s->deps[o->dep_first + d]];
        int k = 1;
        for (uint32_t j = 0; j < i; j++)
            if (!(ret_pos[j] <= from || ret_launch[j] <= i))
                k++;
        worst = k > worst ? k : worst;
        best = k < best ? k : best;
    }
    free(waited);
    free(ret_pos);
    free(ret_launch);
    free(pos);
    if (min_out)
        *min_out = best;
    return worst;
}

static void test_in_flight(void)
{
    wl_model m = wl_test_tiny(3);
    struct {
        const char *strategy;
        int want_max;
    } cases[] = {
        {"tp=2,mb=2,gb=4,schedule=oases", 1},
        {"tp=2,mb=2,gb=4,schedule=overlap_checkpoint", 1},
        {"tp=2,mb=2,gb=4,schedule=default_checkpoint", 1},
        {"tp=2,mb=2,gb=4,schedule=merak,tp_overlap=2", 2},
        {"tp=2,mb=2,gb=4,schedule=merak,tp_overlap=3", 2},
        {"tp=2,mb=2,gb=4,schedule=merak,tp_overlap=3,recompute=full", 2},
        {"tp=2,mb=2,gb=4,schedule=merak,tp_overlap=1", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_schedule *s = gen(&m, cases[i].strategy, 2, NULL);
        int lo, hi = max_in_flight(s, 0, &lo);
        if (hi != cases[i].want_max)
            fprintf(stderr, "%s: at most %d all-reduces in flight, want %d\n", cases[i].strategy, hi,
                    cases[i].want_max);
        CHECK(hi == cases[i].want_max);
        CHECK(lo == 1);
        sim_sched_free(s);
    }
}

/* Merak level 3 defers the MLP's dropout-residual into the next layer, so
 * ARm_2 of layer l runs beside Q_1^l and A_1^{l+1}; level 2 has only Q_1^l
 * beside it (papers.md Sec. 2.2). */
static void test_merak_levels(void)
{
    wl_model m = wl_test_tiny(3);
    for (int level = 2; level <= 3; level++) {
        char st[96];
        snprintf(st, sizeof st, "tp=2,mb=2,gb=2,schedule=merak,tp_overlap=%d", level);
        sim_schedule *s = gen(&m, st, 2, NULL);
        const sim_stream *cs;
        uint32_t *pos = compute_positions(s, 0, &cs);
        uint32_t ar[32];
        char buf[256];
        int n = layer_ars(s, 0, 0, 0, ar, 32);
        CHECK(n == 12);
        /* ARa_1 of layer 0: A_2 beside it (fp2) */
        window(s, cs, pos, ar[0], buf, sizeof buf);
        CHECK_STR(buf, "A2.0");
        window(s, cs, pos, ar[3], buf, sizeof buf); /* ARm_2 of layer 0 */
        CHECK_STR(buf, level == 3 ? "Q1.0 A1.1" : "Q1.0");
        free(pos);
        sim_sched_free(s);
    }
    /* level 1: the row-parallel GEMMs in halves, 4 half-size all-reduces forward */
    sim_schedule *s = gen(&m, "tp=2,mb=1,gb=1,schedule=merak,tp_overlap=1,dtype=fp32", 2, NULL);
    uint32_t ar[32];
    int n = layer_ars(s, 0, 0, 0, ar, 32);
    CHECK(n == 12);
    for (int i = 0; i < n; i++)
        CHECK(sim_sched_payload_of(s, ar[i])->bytes == 32 * 64 * 4 / 2);
    sim_sched_free(s);
}

/* All-reduce volume per layer per micro-batch in units of s·b·h·d: 6 with
 * Megatron-style recomputation, 4 when recomputation repeats no
 * communication (docs/papers.md Sec. 1.3), counted on every rank. */
static void test_allreduce_counts(void)
{
    wl_model m = wl_test_tiny(2);
    struct {
        const char *strategy;
        int units, ops;
    } cases[] = {
        {"schedule=megatron", 4, 4},
        {"schedule=megatron,recompute=full", 6, 6},
        {"schedule=megatron,recompute=selective", 4, 4},
        {"schedule=megatron,recompute=oases", 4, 4},
        {"schedule=default_checkpoint", 6, 6},
        {"schedule=optim_comm_checkpoint", 4, 4},
        {"schedule=overlap_checkpoint", 6, 12},
        {"schedule=oases", 4, 8},
        {"schedule=merak,tp_overlap=1", 4, 8},
        {"schedule=merak,tp_overlap=2,recompute=full", 6, 12},
        {"schedule=merak,tp_overlap=3", 4, 8},
    };
    int64_t unit = 32 * 2 * 64 * 4; /* s·b·h·d, mb=2, fp32 */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char st[160];
        snprintf(st, sizeof st, "tp=2,pp=2,dp=1,mb=2,gb=4,dtype=fp32,%s", cases[c].strategy);
        sim_schedule *s = gen(&m, st, 4, NULL);
        int64_t bytes[4][2][2];
        int ops[4][2][2];
        memset(bytes, 0, sizeof bytes);
        memset(ops, 0, sizeof ops);
        for (uint32_t i = 0; i < s->nops; i++) {
            const sim_op *o = &s->ops[i];
            if (o->layer < 0 || strcmp(oname(s, i), "tp_allreduce"))
                continue;
            int r = sim_sched_rank_of(s, i);
            bytes[r][o->layer % 2][o->micro] += sim_sched_payload_of(s, i)->bytes;
            ops[r][o->layer % 2][o->micro]++;
        }
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < 2; l++)
                for (int j = 0; j < 2; j++) {
                    if (l != r / 2) { /* stage r/2 holds layer r/2 */
                        CHECK(ops[r][l][j] == 0);
                        continue;
                    }
                    if (bytes[r][l][j] != cases[c].units * unit || ops[r][l][j] != cases[c].ops)
                        fprintf(stderr, "%s: rank %d layer %d micro %d: %lld bytes (%d ops), want %d units (%d ops)\n",
                                st, r, l, j, (long long)bytes[r][l][j], ops[r][l][j], cases[c].units, cases[c].ops);
                    CHECK(bytes[r][l][j] == cases[c].units * unit);
                    CHECK(ops[r][l][j] == cases[c].ops);
                }
        sim_sched_free(s);
    }
}

/* Sequence parallelism (Korthikanti et al. 2022 Sec. 4.2.2): per layer per
 * micro-batch, forward 2 all-gathers + 2 reduce-scatters, backward 4
 * all-gathers (2 gradients, 2 inputs for the weight gradients) + 2
 * reduce-scatters, no layer all-reduce; full recompute repeats the forward's. */
static void test_sequence_parallel(void)
{
    wl_model m = wl_test_tiny(2);
    for (int rc = 0; rc < 2; rc++) {
        sim_schedule *s = gen(&m, rc ? "tp=2,mb=1,gb=1,sp=1,recompute=full" : "tp=2,mb=1,gb=1,sp=1", 2, NULL);
        int ag[SIM_PHASE_COUNT] = {0}, rs[SIM_PHASE_COUNT] = {0}, ar = 0;
        for (uint32_t i = 0; i < s->nops; i++) {
            const sim_op *o = &s->ops[i];
            if (o->layer != 1 || sim_sched_rank_of(s, i) != 0)
                continue;
            const sim_payload *p = sim_sched_payload_of(s, i);
            if (p->kind != SIM_OP_COLLECTIVE)
                continue;
            CHECK(p->bytes == 32 * 64 * 4);
            if (p->sub == SIM_COLL_ALLGATHER)
                ag[o->phase]++;
            else if (p->sub == SIM_COLL_REDUCESCATTER)
                rs[o->phase]++;
            else
                ar++;
        }
        CHECK(ag[SIM_PHASE_FORWARD] == 2 && rs[SIM_PHASE_FORWARD] == 2);
        CHECK(ag[SIM_PHASE_BACKWARD] == 4 && rs[SIM_PHASE_BACKWARD] == 2);
        CHECK(ag[SIM_PHASE_RECOMPUTE] == (rc ? 2 : 0) && rs[SIM_PHASE_RECOMPUTE] == (rc ? 2 : 0));
        CHECK(ar == 0);
        /* around the layers: the embedding output reduce-scattered, the final
         * LN output all-gathered, its gradient reduce-scattered; only the
         * loss' all-reduces remain */
        int emb_rs = 0, out_ag = 0;
        for (uint32_t i = 0; i < s->nops; i++) {
            const sim_op *o = &s->ops[i];
            const sim_payload *p = sim_sched_payload_of(s, i);
            if (o->layer >= 0 || sim_sched_rank_of(s, i) != 0 || p->kind != SIM_OP_COLLECTIVE)
                continue;
            if (p->sub == SIM_COLL_ALLREDUCE)
                CHECK_STR(oname(s, i), "loss_allreduce");
            emb_rs += p->sub == SIM_COLL_REDUCESCATTER;
            out_ag += p->sub == SIM_COLL_ALLGATHER;
        }
        CHECK(emb_rs == 2 && out_ag == 1);
        sim_sched_free(s);
    }
}

/* Tesseract, q=2, d=2 (tp=8): per layer per micro-batch, four linears of q
 * SUMMA steps each: forward q broadcasts in ROW and q in COL per linear,
 * backward q more of each plus q reduces in ROW and q in COL; layer norms 2
 * all-reduces each way in ROW; after the step one depth all-reduce per
 * layer.  Groups: ROW consecutive, COL stride q, DEP stride q². */
static void test_tesseract(void)
{
    wl_model m = wl_test_tiny(2);
    sim_schedule *s = gen(&m, "tp=8,mb=4,gb=4,schedule=tesseract,tess_depth=2", 8, NULL);
    int bc = 0, red = 0, lnar = 0, dep = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        if (sim_sched_rank_of(s, i) != 5 || o->layer != 1)
            continue;
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (p->kind != SIM_OP_COLLECTIVE)
            continue;
        const sim_comm *c = &s->comms[o->arg];
        const char *cn = sim_sched_strname(s, c->name);
        if (p->sub == SIM_COLL_BROADCAST) {
            bc++;
            CHECK(c->nranks == 2);
        } else if (p->sub == SIM_COLL_REDUCE) {
            red++;
        } else if (!strcmp(oname(s, i), "ln_allreduce")) {
            lnar++;
            CHECK(strstr(cn, "tess-row") != NULL);
            CHECK(c->ranks[0] == 4 && c->ranks[1] == 5); /* rank 5 = i 1, j 0, k 1: ROW {4, 5} */
        } else if (!strcmp(oname(s, i), "tess_grad_allreduce")) {
            dep++;
            CHECK(c->nranks == 2 && c->ranks[0] == 1 && c->ranks[1] == 5); /* DEP stride 4 */
        }
    }
    /* forward 4 linears × q steps × 2 broadcasts + 4 bias broadcasts;
     * backward 4 × q × 2 broadcasts; reduces 4 × q × 2 + 4 bias reduces */
    CHECK(bc == 4 * 2 * 2 + 4 + 4 * 2 * 2);
    CHECK(red == 4 * 2 * 2 + 4);
    CHECK(lnar == 2 * 2 + 2 * 2);
    CHECK(dep == 1);
    sim_sched_free(s);
}

/* The cut-point (papers.md Sec. 1.4): layers before it run in TP groups of
 * tp_cut_tp ranks on their slice of the micro-batch; at the cut each
 * sub-batch input is all-gathered along the batch over tp/tp_cut_tp ranks;
 * the backward slices without communication. */
static void test_cut(void)
{
    wl_model m = wl_test_tiny(3);
    sim_schedule *s = gen(&m, "tp=4,mb=4,gb=4,dtype=fp32,schedule=oases,tp_cut=1:2", 4, NULL);
    int gathers = 0, small = 0, large = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        if (sim_sched_rank_of(s, i) != 1 || sim_sched_payload_of(s, i)->kind != SIM_OP_COLLECTIVE || o->layer < 0)
            continue;
        const sim_comm *c = &s->comms[o->arg];
        const sim_payload *p = sim_sched_payload_of(s, i);
        if (!strcmp(oname(s, i), "cut_allgather")) {
            gathers++;
            CHECK(o->layer == 1 && o->phase == SIM_PHASE_FORWARD);
            CHECK(c->nranks == 2 && c->ranks[0] == 1 && c->ranks[1] == 3); /* stride 2 */
            CHECK(p->bytes == 32 * 2 * 64 * 4);                            /* a sub-batch of the full mb */
            CHECK_STR(sname(s, i), "tp-cut");
        } else if (o->layer == 0) {
            small++;
            CHECK(c->nranks == 2 && c->ranks[0] == 0 && c->ranks[1] == 1);
            CHECK(p->bytes == 32 * 1 * 64 * 4); /* mb 4 → 2 per small group → 1 per sub-batch */
        } else {
            large++;
            CHECK(c->nranks == 4);
        }
    }
    CHECK(gathers == 2);
    CHECK(small == 8 && large == 16);
    sim_sched_free(s);
}

/* The memory effects of every schedule peak where the memory model says
 * (wl_gpt_check): a running sum along each rank's compute stream. */
static void test_memory(void)
{
    wl_model m = wl_test_tiny(4);
    const char *cases[] = {
        "schedule=megatron",
        "schedule=megatron,recompute=full",
        "schedule=megatron,recompute=selective",
        "schedule=megatron,recompute=oases",
        "schedule=megatron,sp=1",
        "schedule=megatron,sp=1,recompute=selective",
        "schedule=default_checkpoint",
        "schedule=optim_comm_checkpoint",
        "schedule=overlap_checkpoint",
        "schedule=oases",
        "schedule=megatron,tp_cut=1:1,recompute=full",
        "schedule=optim_comm_checkpoint,tp_cut=3:1",
        "schedule=merak,tp_overlap=1,recompute=full",
        "schedule=merak,tp_overlap=2,recompute=selective",
        "schedule=merak,tp_overlap=3,recompute=full",
        "schedule=merak,tp_overlap=3",
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char st[160];
        snprintf(st, sizeof st, "tp=2,pp=2,dp=1,mb=2,gb=8,%s", cases[c]);
        wl_memory peak;
        sim_schedule *s = gen(&m, st, 4, &peak);
        double worst = 0;
        for (int r = 0; r < 4; r++) {
            const sim_stream *cs = stream_of(s, r, "compute");
            double cur = 0, hi = 0;
            for (uint32_t i = 0; i < cs->nops; i++) {
                const sim_payload *p = sim_sched_payload_of(s, cs->ops[i]);
                if (p->kind != SIM_OP_MEMORY)
                    continue;
                cur += (double)p->bytes;
                hi = cur > hi ? cur : hi;
            }
            CHECK(cur > 0); /* what persists: weights, gradients, optimizer, buffers, context */
            worst = hi > worst ? hi : worst;
        }
        if (worst != peak.total)
            fprintf(stderr, "%s: schedule peaks at %.0f bytes, the memory model says %.0f\n", st, worst, peak.total);
        CHECK(worst == peak.total);
        sim_sched_free(s);
    }
    /* Oases keeps 4·s·b·h elements per layer per micro-batch (docs/papers.md Sec. 1.3) */
    wl_strategy st;
    sim_err err;
    wl_strategy_default(&st);
    CHECK(wl_strategy_parse("tp=2,mb=2,dtype=fp32,schedule=oases", &st, &err) == 0);
    CHECK(wl_layer_kept_bytes(&m, &st) == 4 * 32 * 2 * 64 * 4);
    CHECK(wl_strategy_parse("schedule=default_checkpoint", &st, &err) == 0);
    CHECK(wl_layer_kept_bytes(&m, &st) == 32 * 2 * 64 * 4);
}

static void test_strategy_keys(void)
{
    wl_strategy s;
    sim_err err;
    char buf[256];
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,schedule=oases", &s, &err) == 0);
    CHECK(s.schedule == WL_TP_OASES && s.recompute == WL_RECOMPUTE_OASES);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "tp=4,pp=1,dp=auto,mb=1,gb=auto,dtype=tf32,recompute=oases,bucket=auto,schedule=oases");
    wl_strategy back;
    wl_strategy_default(&back);
    CHECK(wl_strategy_parse(buf, &back, &err) == 0 && memcmp(&back, &s, sizeof s) == 0);
    /* a ladder schedule after a recompute replaces it (run --compare appends
     * schedule=... to a base strategy); a recompute after it must agree */
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,recompute=full,schedule=oases", &s, &err) == 0);
    CHECK(s.recompute == WL_RECOMPUTE_OASES);
    CHECK(wl_strategy_parse("recompute=full", &s, &err) == -1);
    CHECK_HAS(err.msg, "schedule=oases recomputes oases");
    CHECK(wl_strategy_parse("schedule=megatron,recompute=full", &s, &err) == 0);
    CHECK(s.recompute == WL_RECOMPUTE_FULL);
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=8,schedule=tesseract,tess_depth=2,tp_cut=none", &s, &err) == 0);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",schedule=tesseract,tess_depth=2");
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,schedule=merak,tp_overlap=2,recompute=full,tp_cut=none", &s, &err) == 0);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, "recompute=full,bucket=auto,schedule=merak,tp_overlap=2");
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=4,schedule=oases,tp_cut=12:2", &s, &err) == 0);
    CHECK(s.tp_cut_layers == 12 && s.tp_cut_tp == 2);
    wl_strategy_format(&s, buf, sizeof buf);
    CHECK_HAS(buf, ",tp_cut=12:2");

    struct {
        const char *text, *msg;
    } bad[] = {
        {"schedule=fast", "strategy: schedule: expected megatron, default_checkpoint, optim_comm_checkpoint, "
                          "overlap_checkpoint, oases, merak or tesseract, got \"fast\""},
        {"schedule=oases,recompute=full", "strategy: schedule=oases recomputes oases (docs/papers.md Sec. 1.3), but "
                                          "recompute=full was given; drop recompute or give recompute=oases"},
        {"schedule=merak,recompute=oases", "needs schedule=megatron, optim_comm_checkpoint or oases"},
        {"sp=2", "strategy: sp: expected 0 or 1, got \"2\""},
        {"schedule=oases,sp=1", "sp=1 (Megatron sequence parallelism) needs schedule=megatron"},
        {"schedule=merak,tp_overlap=4", "strategy: tp_overlap: expected 1, 2 or 3"},
        {"tess_depth=2", "tess_depth=2 needs schedule=tesseract"},
        {"tp=8,schedule=tesseract,tess_depth=3", "tess_depth=3 does not divide tp=8"},
        {"tp=8,schedule=tesseract", "tp/tess_depth = 8/1 = 8 is not a square"},
        {"tp=4,tp_cut=12", "strategy: tp_cut: expected LAYERS:TP"},
        {"tp=4,tp_cut=12:4", "must be smaller than tp=4"},
        {"tp=4,tp_cut=12:3", "must be smaller than tp=4 and divide it"},
        {"tp=4,tp_cut=0:2", "tp_cut (layers): expected a positive integer"},
        {"tp=4,schedule=merak,tp_cut=2:2", "tp_cut (Oases' cut-point resharding) needs a 1-D schedule"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wl_strategy_default(&s);
        err.msg[0] = 0;
        CHECK(wl_strategy_parse(bad[i].text, &s, &err) == -1);
        CHECK_HAS(err.msg, bad[i].msg);
    }
    /* model-dependent: odd micro-batches cannot be split in two sub-batches */
    wl_model m = wl_test_tiny(4);
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=2,mb=3,schedule=oases", &s, &err) == 0);
    sim_machine *mach = wl_test_machine(2, 80e9);
    sim_schedule *sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc == NULL);
    CHECK_HAS(err.msg, "mb must be even, got mb=3");
    wl_strategy_default(&s);
    CHECK(wl_strategy_parse("tp=2,mb=2,schedule=oases,tp_cut=9:1", &s, &err) == 0);
    sc = wl_gpt_generate(&m, &s, mach, &err);
    CHECK(sc == NULL);
    CHECK_HAS(err.msg, "the cut must fall inside the 4 layers");
    sim_machine_free(mach);
}

/* The layer API used directly: WL_LAYER_NO_RECOMPUTE keeps everything under
 * recompute=full; wl_layer_recompute + WL_LAYER_RECOMPUTED moves the
 * recomputation ahead; the memory effects return to zero either way. */
static void test_layer_api(void)
{
    wl_model m = wl_test_tiny(2);
    for (int mode = 0; mode < 3; mode++) {
        wl_strategy st;
        sim_err err;
        wl_strategy_default(&st);
        CHECK(wl_strategy_parse("tp=2,mb=2,recompute=full,dtype=fp32", &st, &err) == 0);
        sim_schedule *s = sim_sched_new(2);
        int ranks[2] = {0, 1};
        int comm = sim_sched_comm(s, "tp", ranks, 2);
        wl_layer *L = wl_layer_new(s, &m, &st, &err);
        CHECK(L != NULL);
        for (int r = 0; r < 2 && L; r++) {
            wl_cursor c;
            wl_cursor_init(&c, s, r, comm);
            unsigned f = mode == 1 ? WL_LAYER_NO_RECOMPUTE : 0;
            wl_layer_forward(L, &c, 0, 2, 0, f);
            if (mode == 2) {
                wl_layer_recompute(L, &c, 0, 2, 0, 0);
                f = WL_LAYER_RECOMPUTED;
            }
            wl_layer_backward(L, &c, 0, 2, 0, f);
        }
        CHECK(sim_sched_check(s, &err) == 0);
        int rec = 0;
        double cur = 0, hi = 0;
        for (uint32_t i = 0; i < s->nops; i++) {
            const sim_payload *p = sim_sched_payload_of(s, i);
            if (sim_sched_rank_of(s, i) != 0)
                continue;
            rec += s->ops[i].phase == SIM_PHASE_RECOMPUTE && p->kind == SIM_OP_COMPUTE;
            if (p->kind == SIM_OP_MEMORY) {
                cur += (double)p->bytes;
                hi = cur > hi ? cur : hi;
            }
        }
        int64_t kept, tr, A;
        wl_layer_memory(&m, &st, 0, &kept, &tr);
        A = tr;
        CHECK(cur == 0);
        CHECK(rec == (mode == 1 ? 0 : 2 * 9)); /* 9 forward kernels per layer */
        if (mode == 0)
            CHECK(hi == 2 * kept + A);
        if (mode == 1)
            CHECK(hi == 2 * A);
        if (mode == 2)
            CHECK(hi == 2 * kept + 2 * A);
        wl_layer_free(L);
        sim_sched_free(s);
    }
}

int main(void)
{
    test_oases_windows();
    test_in_flight();
    test_merak_levels();
    test_allreduce_counts();
    test_sequence_parallel();
    test_tesseract();
    test_cut();
    test_memory();
    test_strategy_keys();
    test_layer_api();
    return wl_test_done();
}
