/* Analytical oracles on uncontended platforms (issue: simulator core):
 * one transfer = latency + bytes/bandwidth; two transfers into one link take
 * twice as long; a ring all-reduce takes 2(N-1)/N·S/B plus 2(N-1) latencies
 * (step by step and aggregated); a ring all-gather (N-1)/N·S/B plus N-1
 * latencies; the 1F1B bubble fraction is (p-1)/(m+p-1). */
#include "sim/engine.h"
#include "star.h"

#define BW 10e9
#define LAT 1e-6

static double run(sim_schedule *s, sim_machine *m, sim_coll_mode mode, sim_result *r)
{
    sim_options o;
    sim_options_default(&o);
    o.coll_mode = mode;
    sim_err e;
    if (sim_run_isolated(s, m, &o, r, &e) != 0) {
        printf("FAIL: simulation error: %s\n", e.msg);
        exit(1);
    }
    return r->iteration_s;
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
    fails += bubble(4, 8);
    fails += bubble(3, 2);
    printf("%s\n", fails ? "FAILED" : "all oracles hold");
    return fails != 0;
}
