/* Uneven all-to-all (all-to-allv, the MoE dispatch and combine) against
 * closed forms on the uncontended star (tests/sim/star.h: one full-duplex
 * link per GPU, fair sharing):
 *   - every member sends a_i to each peer: the n-1 flows of member i share its
 *     uplink at B/(n-1) each and every downlink carries n-1 flows of at most
 *     that rate, so member i finishes at a_i(n-1)/B; T = max_i a_i(n-1)/B + 2L;
 *   - every member sends b_j to member j: symmetric, T = max_j b_j(n-1)/B + 2L;
 *   - equal sizes give exactly the even all-to-all's time;
 *   - any matrix takes at least max(row sum, column sum)/B + 2L.
 * Plus the JSON round trip and the checker's handling of unequal members. */
#include <stdlib.h>

#include "sim/engine.h"
#include "tests/sim/star.h"

#define BW 10e9
#define LAT 1e-6
#define N 4

static double run(sim_schedule *s, sim_machine *m)
{
    sim_result r;
    sim_err e;
    if (sim_run_isolated(s, m, NULL, &r, &e) != 0) {
        printf("FAIL: simulation error: %s\n", e.msg);
        exit(1);
    }
    double t = r.iteration_s;
    sim_result_free(&r);
    return t;
}

/* Schedule of one all-to-allv with sizes v[i][j] (member i to member j). */
static sim_schedule *a2av(int64_t v[N][N])
{
    sim_schedule *s = sim_sched_new(N);
    int ranks[N] = {2, 0, 3, 1}; /* member order differs from rank order */
    int c = sim_sched_comm(s, "ep", ranks, N);
    for (int i = 0; i < N; i++)
        sim_sched_alltoallv(s, sim_sched_stream(s, ranks[i], "ep"), "dispatch", c, v[i], SIM_NO_TAGS, NULL, 0);
    return s;
}

int main(void)
{
    int fails = 0;
    sim_machine *m = star_machine(N, BW, LAT, 1);
    int64_t v[N][N];
    sim_err e;

    /* per-source sizes */
    double amax = 0;
    for (int i = 0; i < N; i++) {
        int64_t a = (int64_t)(i + 1) * 100000000;
        amax = a > amax ? (double)a : amax;
        for (int j = 0; j < N; j++)
            v[i][j] = i == j ? 0 : a;
    }
    sim_schedule *s = a2av(v);
    fails += near(run(s, m), amax * (N - 1) / BW + 2 * LAT, 1e-6, "all-to-allv, per-source sizes");
    sim_sched_free(s);

    /* per-destination sizes */
    double bmax = 0;
    for (int j = 0; j < N; j++) {
        int64_t b = (int64_t)(N - j) * 70000000;
        bmax = b > bmax ? (double)b : bmax;
        for (int i = 0; i < N; i++)
            v[i][j] = i == j ? 0 : b;
    }
    s = a2av(v);
    fails += near(run(s, m), bmax * (N - 1) / BW + 2 * LAT, 1e-6, "all-to-allv, per-destination sizes");
    sim_sched_free(s);

    /* equal sizes = the even all-to-all */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            v[i][j] = 50000000;
    s = a2av(v);
    double tv = run(s, m);
    sim_sched_free(s);
    s = sim_sched_new(N);
    int ranks[N] = {0, 1, 2, 3};
    int c = sim_sched_comm(s, "ep", ranks, N);
    for (int i = 0; i < N; i++)
        sim_sched_collective(s, sim_sched_stream(s, i, "ep"), NULL, SIM_COLL_ALLTOALL, c, 4 * 50000000LL, 0,
                             SIM_NO_TAGS, NULL, 0);
    fails += near(tv, run(s, m), 1e-9, "equal all-to-allv = even all-to-all");
    sim_sched_free(s);

    /* an irregular matrix: never faster than its busiest link */
    int64_t w[N][N] = {{0, 300, 10, 50}, {5, 0, 400, 0}, {250, 20, 0, 90}, {60, 60, 60, 0}};
    double busiest = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            w[i][j] *= 1000000;
    for (int i = 0; i < N; i++) {
        double row = 0, col = 0;
        for (int j = 0; j < N; j++) {
            row += (double)w[i][j];
            col += (double)w[j][i];
        }
        busiest = row > busiest ? row : busiest;
        busiest = col > busiest ? col : busiest;
    }
    s = a2av(w);
    double t = run(s, m);
    printf("irregular all-to-allv: %.6f s, busiest link alone %.6f s\n", t, busiest / BW + 2 * LAT);
    if (t < busiest / BW + 2 * LAT - 1e-9) {
        printf("FAIL: faster than its busiest link\n");
        fails++;
    }

    /* a reduce to a root (expert gradients back to their owner) is the
     * broadcast's chain reversed: same time on the symmetric star, for every
     * root (this deadlocked for n > 2 before the chain fix) */
    for (int root = 0; root < N; root++) {
        double tt[2];
        for (int k = 0; k < 2; k++) {
            sim_schedule *sc = sim_sched_new(N);
            int cr[N] = {1, 3, 0, 2};
            int cc = sim_sched_comm(sc, "copies", cr, N);
            for (int i = 0; i < N; i++)
                sim_sched_collective(sc, sim_sched_stream(sc, i, "x"), NULL, k ? SIM_COLL_REDUCE : SIM_COLL_BROADCAST, cc,
                                     256000000, root, SIM_NO_TAGS, NULL, 0);
            tt[k] = run(sc, m);
            sim_sched_free(sc);
        }
        char what[80];
        snprintf(what, sizeof what, "reduce = broadcast time, root %d", root);
        fails += near(tt[1], tt[0], 1e-6, what);
    }

    /* a broadcast whose receiver has a kernel running when it starts (the
     * receiver's NCCL kernel is slowed by overlap interference) must still
     * finish: every member must count the same chunks */
    {
        sim_machine *mi = star_machine(2, BW, LAT, 1);
        mi->gpus[0].overlap_comm = 1.3;
        sim_schedule *sc = sim_sched_new(2);
        int cr[2] = {0, 1};
        int cc = sim_sched_comm(sc, "pair", cr, 2);
        sim_sched_gemm(sc, sim_sched_stream(sc, 1, "compute"), "busy", 8192, 8192, 8192, 0, SIM_DTYPE_FP16, SIM_NO_TAGS,
                       NULL, 0);
        for (int i = 0; i < 2; i++)
            sim_sched_collective(sc, sim_sched_stream(sc, i, "x"), NULL, SIM_COLL_BROADCAST, cc, 16777216, 0,
                                 SIM_NO_TAGS, NULL, 0);
        printf("broadcast beside a kernel on the receiver: %.6f s\n", run(sc, mi));
        sim_sched_free(sc);
        sim_machine_free(mi);
    }

    /* checker accepts unequal members; JSON round trip keeps the sizes */
    if (sim_sched_check(s, &e) != 0) {
        printf("FAIL: check rejects an all-to-allv: %s\n", e.msg);
        fails++;
    }
    char *j1 = sim_sched_to_json(s, 0);
    sim_schedule *s2 = sim_sched_read_json(j1, "roundtrip", &e);
    char *j2 = s2 ? sim_sched_to_json(s2, 0) : NULL;
    if (!j2 || strcmp(j1, j2) != 0 || !strstr(j1, "\"send_bytes\":[0,300000000,10000000,50000000]")) {
        printf("FAIL: all-to-allv JSON round trip\n%s\n", j1);
        fails++;
    }
    free(j2);
    sim_sched_free(s2);
    /* a send_bytes array of the wrong length is an error naming the field */
    char *bad = strdup(j1);
    char *at = strstr(bad, "[0,300000000,10000000,50000000]");
    const char *shorter = "[0,300000000,10000000]         "; /* same length, one count short */
    memcpy(at, shorter, strlen(shorter));
    s2 = sim_sched_read_json(bad, "bad.json", &e);
    if (s2 || !strstr(e.msg, "send_bytes: expected an array of 4 byte counts")) {
        printf("FAIL: bad send_bytes not reported: %s\n", s2 ? "(accepted)" : e.msg);
        fails++;
    } else {
        printf("bad send_bytes: %s\n", e.msg);
    }
    sim_sched_free(s2);
    free(bad);
    free(j1);
    sim_sched_free(s);
    sim_machine_free(m);
    if (fails)
        printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
