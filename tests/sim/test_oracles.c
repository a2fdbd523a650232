/* Analytical oracles on uncontended platforms (issue: simulator core):
 * one transfer = latency + bytes/bandwidth; two transfers into one link take
 * twice as long; a ring all-reduce takes 2(N-1)/N·S/B plus 2(N-1) latencies
 * (step by step and aggregated); a ring all-gather (N-1)/N·S/B plus N-1
 * latencies; the 1F1B bubble fraction is (p-1)/(m+p-1) and stage 0's
 * backwards end F + B apart in the steady phase; with NCCL protocol
 * numbers the simulated ring equals sim_coll_predict (base + steps x (route
 * latency + step latency) + bytes / (efficiency x bandwidth)) in both modes
 * and small messages pick a low-latency protocol; the pipelined double
 * binary tree on two GPUs takes S/B + (C+1) route latencies for C chunks per
 * tree; a kernel beside a transfer of its GPU runs at 1/f while it lasts and
 * the transfer moves f_comm times the bytes, whatever order the actors of
 * one instant run in (a kernel starting with the transfer counts, one
 * ending as it starts does not); with several channels (2 nodes
 * x 4 GPUs on NVSwitch, a NIC per GPU) step-by-step and aggregated rings
 * agree and equal the closed form: per GPU 3 of its 4 channel edges on
 * NVLink and one through its NIC, plus a route latency per step; NVLink
 * SHARP on one NVSwitch node moves S (n + 1) / n per GPU port. */
#include "platforms/platform.h"
#include "sim/engine.h"
#include "star.h"

#define BW 10e9
#define LAT 1e-6

static double run(sim_schedule *s, sim_machine *m, sim_coll_mode mode, sim_result *r)
{
    sim_options o;
    sim_options_default(&o);
    o.coll_mode = mode;
    return run_opts(s, m, &o, r);
}

static int one_and_two_transfers(void)
{
    int fails = 0;
    sim_machine *m = star_machine(3, BW, LAT, 1);
    double S = 1e9;
    sim_result r;
    sim_schedule *s = sim_sched_new(3);
    sim_sched_send(s, sim_sched_stream(s, 0, "send"), NULL, 1, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    sim_sched_recv(s, sim_sched_stream(s, 1, "recv"), NULL, 0, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    fails += near(run(s, m, SIM_COLLMODE_AUTO, &r), 2 * LAT + S / BW, 1e-9, "one transfer: latency + bytes/bandwidth");
    sim_result_free(&r);
    sim_sched_free(s);

    s = sim_sched_new(3);
    for (int src = 0; src < 2; src++) {
        sim_sched_send(s, sim_sched_stream(s, src, "send"), NULL, 2, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
        sim_sched_recv(s, sim_sched_stream(s, 2, src ? "recv1" : "recv0"), NULL, src, (int64_t)S, 0, SIM_NO_TAGS,
                       NULL, 0);
    }
    fails += near(run(s, m, SIM_COLLMODE_AUTO, &r), 2 * LAT + 2 * S / BW, 1e-9, "two transfers through one link");
    sim_result_free(&r);
    sim_sched_free(s);
    sim_machine_free(m);
    return fails;
}

static int collectives(int n)
{
    int fails = 0;
    sim_machine *m = star_machine(n, BW, LAT, 1);
    double S = 1 << 30;
    int *ranks = malloc((size_t)n * sizeof *ranks);
    for (int i = 0; i < n; i++)
        ranks[i] = (n - 1 - i + 3) % n; /* scrambled order: rings are built by topology */
    for (int coll = 0; coll < 2; coll++) {
        sim_schedule *s = sim_sched_new(n);
        int c = sim_sched_comm(s, "world", ranks, n);
        for (int r = 0; r < n; r++)
            sim_sched_collective(s, sim_sched_stream(s, r, "comm"), NULL, coll ? SIM_COLL_ALLGATHER : SIM_COLL_ALLREDUCE, c,
                                 (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
        double steps = coll ? n - 1 : 2.0 * (n - 1);
        double want = steps / n * S / BW + steps * 2 * LAT;
        for (int mode = SIM_COLLMODE_STEP; mode <= SIM_COLLMODE_AGGREGATED; mode++) {
            char what[128];
            snprintf(what, sizeof what, "ring %s N=%d, %s", coll ? "all-gather" : "all-reduce", n,
                     mode == SIM_COLLMODE_STEP ? "step by step" : "aggregated");
            sim_result r;
            fails += near(run(s, m, (sim_coll_mode)mode, &r), want, 0.01, what);
            if (r.comm_s <= 0 || r.exposed_comm_s < 0.99 * r.comm_s) {
                printf("FAIL: a lone collective should be all exposed communication (comm %g exposed %g)\n", r.comm_s,
                       r.exposed_comm_s);
                fails++;
            }
            sim_result_free(&r);
        }
        sim_sched_free(s);
    }
    free(ranks);
    sim_machine_free(m);
    return fails;
}

/* A collective with NCCL protocol numbers: simulated = predicted. */
static int protocols(int n)
{
    int fails = 0;
    sim_machine *m = star_machine(n, BW, LAT, 1);
    sim_collparams *cp = &m->gpus[0].coll;
    double base[3] = {5e-6, 10e-6, 30e-6}, step[3] = {0.5e-6, 1e-6, 3e-6}, eff[3] = {0.3, 0.8, 0.95};
    /* every GPU is its own node on the star: each hop goes between nodes,
     * where the protocol runs at net_eff */
    for (int p = 0; p < 3; p++)
        cp->base_s[p] = base[p], cp->step_s[p] = step[p], cp->eff[p] = cp->net_eff[p] = eff[p];
    int *ranks = malloc((size_t)n * sizeof *ranks);
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    double sizes[3] = {4096, 1 << 20, 1 << 28};
    sim_proto want_proto[3] = {SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE};
    for (int k = 0; k < 3; k++) {
        /* ring forced: every GPU is its own node on the star, where trees are also candidates */
        sim_schedule *s = one_collective(n, ranks, n, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, sizes[k]);
        sim_proto pr;
        double want = sim_coll_predict(cp, SIM_COLL_ALLREDUCE, SIM_ALGO_RING, n, n, sizes[k], BW, 2 * LAT, &pr);
        if (pr != want_proto[k]) {
            printf("FAIL: %.0f B picked %s, expected %s\n", sizes[k], sim_proto_name(pr), sim_proto_name(want_proto[k]));
            fails++;
        }
        for (int mode = SIM_COLLMODE_STEP; mode <= SIM_COLLMODE_AGGREGATED; mode++) {
            char what[128];
            snprintf(what, sizeof what, "ring all-reduce %.0f B N=%d with protocols (%s), %s", sizes[k], n,
                     sim_proto_name(pr), mode == SIM_COLLMODE_STEP ? "step" : "aggregated");
            sim_result r;
            fails += near(run(s, m, (sim_coll_mode)mode, &r), want, 1e-4, what); /* wire bytes are whole */
            sim_result_free(&r);
        }
        sim_sched_free(s);
    }
    free(ranks);
    sim_machine_free(m);
    return fails;
}

/* 2 nodes x 4 GPUs on NVSwitch (NVLink 100 GB/s), one HDR NIC (25 GB/s) per
 * GPU on switches of two: 4 channels.  Per channel each member sends one
 * ring edge per step: per GPU 3 of its 4 edges go over its NVLink port and
 * one (the channel where it leaves the node) through its NIC; every step
 * waits for the slowest hop's route latency, the NIC's 4 us (two PCIe slots
 * of 1 us and two NIC halves of 1 us). */
static const char *nvs_2x4 =
    "{\"name\": \"nvs-2x4\", \"nodes\": 2, \"node\": {\"gpu\": \"A100-SXM-80GB\", \"gpus_per_node\": 4,"
    " \"pcie\": {\"gen\": 5, \"width\": 16},"
    " \"switches\": [{\"socket\": 0, \"gpus\": [0, 1]}, {\"socket\": 0, \"gpus\": [2, 3]}],"
    " \"nvlink\": {\"nvswitch\": true, \"GBps\": 100},"
    " \"nics\": [{\"model\": \"IB-HDR\", \"switch\": 0}, {\"model\": \"IB-HDR\", \"switch\": 0},"
    " {\"model\": \"IB-HDR\", \"switch\": 1}, {\"model\": \"IB-HDR\", \"switch\": 1}]},"
    " \"fabric\": {\"type\": \"switch\"}}";

static int channels(void)
{
    sim_err e;
    sim_machine *m = plat_from_json(nvs_2x4, "nvs-2x4", &e);
    if (!m) {
        printf("FAIL: %s\n", e.msg);
        return 1;
    }
    sim_gpu_neutral_comm(&m->gpus[0]);
    int fails = 0, ranks[8] = {5, 0, 7, 2, 1, 4, 3, 6}, n = 8;
    double S = 512.0 * (1 << 20), nvl = 100e9, nic = 25e9, lat = 4e-6;
    sim_coll colls[3] = {SIM_COLL_ALLREDUCE, SIM_COLL_ALLGATHER, SIM_COLL_REDUCESCATTER};
    for (int k = 0; k < 3; k++) {
        sim_schedule *s = one_collective(n, ranks, n, colls[k], SIM_ALGO_RING, S);
        double steps = colls[k] == SIM_COLL_ALLREDUCE ? 2.0 * (n - 1) : n - 1;
        double per_edge = steps / n * S / 4;
        double want = fmax(3 * per_edge / nvl, per_edge / nic) + steps * lat;
        for (int mode = SIM_COLLMODE_STEP; mode <= SIM_COLLMODE_AGGREGATED; mode++) {
            char what[128];
            snprintf(what, sizeof what, "%s 2x4 GPUs, 4 channels, %s", sim_coll_name(colls[k]),
                     mode == SIM_COLLMODE_STEP ? "step by step" : "aggregated");
            sim_result r;
            fails += near(run(s, m, (sim_coll_mode)mode, &r), want, 1e-4, what);
            sim_result_free(&r);
        }
        sim_sched_free(s);
    }
    sim_machine_free(m);
    return fails;
}

/* NVLink SHARP on one 8-GPU NVSwitch node: each GPU's port carries
 * S (n + 1) / n each way, so the all-reduce takes base + route latency
 * (two NVLink hops) + 9/8 S / (NVLink x efficiency), as predicted; forced
 * on a communicator that spans nodes it falls back to the ring. */
static int nvls(void)
{
    sim_err e;
    sim_machine *m = plat_load("dgx-h100-16n", &e);
    if (!m) {
        printf("FAIL: %s\n", e.msg);
        return 1;
    }
    sim_collparams *cp = &m->gpus[0].coll;
    sim_gpu_neutral_comm(&m->gpus[0]);
    cp->nvls_base_s = 10e-6;
    cp->nvls_eff = 0.5;
    int fails = 0, ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    double S = 256.0 * (1 << 20), nvl = 450e9, lat = 2 * 0.7e-6;
    for (int span = 8; span <= 16; span += 8) {
        sim_schedule *s = one_collective(16, ranks, span, SIM_COLL_ALLREDUCE, SIM_ALGO_NVLS, S);
        sim_result r;
        double t = run(s, m, SIM_COLLMODE_AUTO, &r);
        if (span == 8) {
            fails += near(t, 10e-6 + lat + 9.0 / 8 * S / (nvl * 0.5), 1e-6, "NVLS all-reduce, 8 H100 on NVSwitch");
        } else if (t < 2.0 * 15 / 16 * S / (8 * 48e9)) {
            printf("FAIL: NVLS over two nodes should fall back to the ring (%g s)\n", t);
            fails++;
        }
        sim_result_free(&r);
        sim_sched_free(s);
    }
    sim_machine_free(m);
    return fails;
}

/* Pipelined double binary tree on 2 GPUs (one per node), C chunks per tree
 * of c = S/2/C bytes, τ = c/B, route latency L: each direction carries one
 * tree's reduce and the other's broadcast; chunk 0 goes up alone, then each
 * further up chunk shares the link with the previous down chunk, and the
 * last down chunk runs alone: 2(L+τ) + (C-1)(L+2τ) = S/B + (C+1)L.  Run
 * reduce then broadcast, it would take S/B + 2CL. */
static int tree(void)
{
    int fails = 0, n = 2, C = 8;
    sim_machine *m = star_machine(n, BW, LAT, 1);
    double S = 64.0 * (1 << 20);
    int ranks[2] = {0, 1};
    sim_schedule *s = sim_sched_new(n);
    int c = sim_sched_comm(s, "world", ranks, n);
    sim_payload pl = {.kind = SIM_OP_COLLECTIVE, .sub = SIM_COLL_ALLREDUCE, .algo = SIM_ALGO_TREE, .name = -1,
                      .bytes = (int64_t)S};
    uint32_t pid = sim_sched_payload(s, &pl);
    for (int r = 0; r < n; r++)
        sim_sched_add(s, sim_sched_stream(s, r, "comm"), pid, c, SIM_NO_TAGS, NULL, 0);
    sim_options o;
    sim_options_default(&o);
    o.tree_chunk_bytes = S / 2 / C;
    sim_result r;
    sim_err e;
    if (sim_run_isolated(s, m, &o, &r, &e) != 0) {
        printf("FAIL: %s\n", e.msg);
        return 1;
    }
    double L = 2 * LAT;
    fails += near(r.iteration_s, S / BW + (C + 1) * L, 1e-6, "pipelined tree all-reduce, 2 GPUs, 8 chunks");
    sim_result_free(&r);
    sim_sched_free(s);
    sim_machine_free(m);
    return fails;
}

/* GPU 0 runs `kernels` kernels back to back and sends S bytes to GPU 1,
 * from time 0 or (after_first) once the first kernel ends; send_first makes
 * the send's stream before the kernels', so that SimGrid runs its actor
 * first at an instant both meet. */
static sim_schedule *kernels_and_send(const sim_payload *pk, int kernels, int after_first, int send_first, double S)
{
    sim_schedule *s = sim_sched_new(2);
    uint32_t kp = sim_sched_payload(s, pk);
    int send = send_first ? sim_sched_stream(s, 0, "send") : -1, cs = sim_sched_stream(s, 0, "compute");
    if (!send_first)
        send = sim_sched_stream(s, 0, "send");
    uint32_t first = sim_sched_add(s, cs, kp, -1, SIM_NO_TAGS, NULL, 0);
    for (int i = 1; i < kernels; i++)
        sim_sched_add(s, cs, kp, -1, SIM_NO_TAGS, NULL, 0);
    sim_sched_send(s, send, NULL, 1, (int64_t)S, 0, SIM_NO_TAGS, &first, after_first ? 1 : 0);
    sim_sched_recv(s, sim_sched_stream(s, 1, "recv"), NULL, 0, (int64_t)S, 0, SIM_NO_TAGS, NULL, 0);
    return s;
}

/* Overlap interference: a kernel of K seconds beside a send of T seconds
 * (T·f_comm < K·f) on the same GPU: the send starts with the kernel running,
 * so it moves f_comm times the bytes and lasts T' = T·f_comm; meanwhile the
 * kernel runs at 1/f, so it ends at T' + (K - T'/f).  The order in which
 * SimGrid runs one instant's actors must not matter: each case also runs
 * with the send's stream made first. */
static int interference(void)
{
    int fails = 0;
    sim_machine *m = star_machine(2, BW, 0, 1);
    double f = 1.3, fc = 1.2, K = 0.01, S = 20e6, T = S / BW, Tp = T * fc;
    m->gpus[0].overlap_compute = f;
    m->gpus[0].overlap_comm = fc;
    sim_payload pk = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_FIXED, .name = -1, .seconds = K};
    const struct {
        int kernels, after_first;
        double want;
        const char *what;
    } cases[] = {
        {1, 0, Tp + (K - Tp / f), "kernel beside a send: slowed while it lasts"},
        /* a send waiting for the kernel starts as it ends: nothing beside it */
        {1, 1, K + T, "a send after the kernel: not slowed"},
        /* ... but where the next kernel starts at that instant, it is */
        {2, 1, K + Tp + (K - Tp / f), "a send after a kernel, the next one starting with it"},
    };
    sim_result r;
    char what[128];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int send_first = 0; send_first < 2; send_first++) {
            sim_schedule *s = kernels_and_send(&pk, cases[c].kernels, cases[c].after_first, send_first, S);
            snprintf(what, sizeof what, "%s%s", cases[c].what, send_first ? " (send's actor first)" : "");
            fails += near(run(s, m, SIM_COLLMODE_AUTO, &r), cases[c].want, 1e-6, what);
            sim_result_free(&r);
            sim_sched_free(s);
        }
    /* with the factors at 1 the same schedule is the kernel alone */
    m->gpus[0].overlap_compute = 1;
    m->gpus[0].overlap_comm = 1;
    sim_schedule *s = kernels_and_send(&pk, 1, 0, 0, S);
    fails += near(run(s, m, SIM_COLLMODE_AUTO, &r), K, 1e-6, "no interference when the factors are 1");
    sim_result_free(&r);
    sim_sched_free(s);
    sim_machine_free(m);
    return fails;
}

/* 1F1B with uniform stages and free communication: each stage idles for
 * (p-1)·(F+B) of (m+p-1)·(F+B). */
static int bubble(int p, int m_micro)
{
    double F = 1e-3, B = 2e-3;
    sim_machine *m = star_machine(p, 1e15, 0, 1);
    sim_schedule *s = sim_sched_new(p);
    sim_payload pf = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_FIXED, .name = -1, .seconds = F};
    sim_payload pb = pf;
    pb.seconds = B;
    uint32_t fw = sim_sched_payload(s, &pf), bw = sim_sched_payload(s, &pb);
    for (int i = 0; i < p; i++) {
        int comp = sim_sched_stream(s, i, "compute");
        int sn = sim_sched_stream(s, i, "send-next"), rp = sim_sched_stream(s, i, "recv-prev");
        int sp = sim_sched_stream(s, i, "send-prev"), rn = sim_sched_stream(s, i, "recv-next");
        int warm = p - i - 1 < m_micro ? p - i - 1 : m_micro;
        int nf = 0, nb = 0;
        /* PipeDream-Flush order: warm-up forwards, then 1F1B, then cool-down backwards */
        int order_len = 2 * m_micro, *order = malloc((size_t)order_len * sizeof *order);
        int k = 0;
        for (int j = 0; j < warm; j++)
            order[k++] = 1;
        for (int j = 0; j < m_micro - warm; j++) {
            order[k++] = 1;
            order[k++] = 0;
        }
        for (int j = 0; j < warm; j++)
            order[k++] = 0;
        for (k = 0; k < order_len; k++) {
            sim_tags t = {-1, order[k] ? nf : nb, -1, order[k] ? SIM_PHASE_FORWARD : SIM_PHASE_BACKWARD};
            uint32_t dep[1];
            int nd = 0;
            if (order[k] && i > 0) {
                dep[0] = sim_sched_recv(s, rp, NULL, i - 1, 1, 0, t, NULL, 0);
                nd = 1;
            }
            if (!order[k] && i < p - 1) {
                dep[0] = sim_sched_recv(s, rn, NULL, i + 1, 1, 0, t, NULL, 0);
                nd = 1;
            }
            uint32_t op = sim_sched_add(s, comp, order[k] ? fw : bw, -1, t, dep, nd);
            if (order[k] && i < p - 1)
                sim_sched_send(s, sn, NULL, i + 1, 1, 0, t, &op, 1);
            if (!order[k] && i > 0)
                sim_sched_send(s, sp, NULL, i - 1, 1, 0, t, &op, 1);
            if (order[k])
                nf++;
            else
                nb++;
        }
        free(order);
    }
    sim_result r;
    double T = run(s, m, SIM_COLLMODE_AUTO, &r);
    int fails = near(T, (m_micro + p - 1) * (F + B), 1e-6, "1F1B iteration time (m+p-1)(F+B)");
    char what[96];
    snprintf(what, sizeof what, "1F1B bubble fraction p=%d m=%d", p, m_micro);
    fails += near(r.idle_s / T, (double)(p - 1) / (m_micro + p - 1), 1e-6, what);
    sim_result_free(&r);
    /* the pace the planner extrapolates with (sim_options.pace): stage 0
     * ends a backward every F + B while it alternates them with forwards */
    sim_options o;
    sim_options_default(&o);
    o.pace = 1;
    o.pace_rank = 0;
    run_opts(s, m, &o, &r);
    int last = m_micro - p - 1;
    if (last >= 1) {
        snprintf(what, sizeof what, "1F1B steady pace on stage 0, p=%d m=%d", p, m_micro);
        fails += near(r.nmicro == m_micro ? (r.micro_end[last] - r.micro_end[0]) / last : -1, F + B, 1e-6, what);
    }
    sim_result_free(&r);
    sim_sched_free(s);
    sim_machine_free(m);
    return fails;
}

int main(void)
{
    if (getenv("ORACLE_ONLY_COLL"))
        return collectives(8);
    int fails = one_and_two_transfers();
    fails += collectives(8);
    fails += collectives(5);
    fails += protocols(8);
    fails += protocols(5);
    fails += tree();
    fails += channels();
    fails += nvls();
    fails += interference();
    fails += bubble(4, 8);
    fails += bubble(3, 2);
    printf("%s\n", fails ? "FAILED" : "all oracles hold");
    return fails != 0;
}
