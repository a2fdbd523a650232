/* g_galvatron.c — group galvatron-pcie: Galvatron-1's profiled all-reduce
 * coefficients (ms per MB) for every group key on one and two 8-GPU PCIe
 * servers (papers.md §3.2 and Appendix B), on platforms/clusters/
 * galvatron-rtxtitan-2x8.json (fid's topology for Galvatron's servers; the
 * one-server keys use node 0 alone: the other node is idle, so it is the 1x8
 * server).
 *
 * Key pp_n_consec: the world is cut into pp contiguous pipeline stages; in
 * each stage, all-reduce groups of n ranks are contiguous (consec = 1) or
 * strided by stagesize/n (consec = 0), as Galvatron's gen_comm_groups lays
 * out TP groups.  Galvatron's profiler (profile_allreduce.py) runs every
 * group of a stage at once and reports rank 0's group, so all groups of stage
 * 0 run concurrently here and contention between them is included; later
 * stages run after stage 0 in the pipeline and do not overlap it.  Each
 * all-reduce is one layer's fp32 activation, local batch 32 × 512 × 1024
 * floats = 64 MiB (profile_allreduce.py defaults).  coe = time_ms /
 * (2(n−1)/n · MB), MB = 2^20 bytes.
 *
 * p2p keys pp_deg_k (Galvatron-1's profile_p2p.py, read at Hetu df32daa's
 * tools/Galvatron): the world is cut into k stages of P = W / k ranks as
 * above, pipeline j holding ranks j, P + j, 2P + j, ...; in every pipeline
 * only the middle pair sends, stage k/2 - 1 to stage k/2, so on two 8-GPU
 * servers every key crosses the servers, with P messages at once (ranks
 * 8 - P .. 7 to 8 .. 7 + P).  The script fixes the local batch at 64:
 * 64 x 512 x 1024 fp32 = 128 MiB per message.  coe = the senders' mean
 * time_ms / MB (subset "p2p"). */
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "val_csv.h"
#include "val_groups.h"
#include "val_sim.h"
#include "fit.h"

#define GALV_PLATFORM "galvatron-rtxtitan-2x8"
#define GALV_BYTES (32LL * 512 * 1024 * 4)
#define GALV_P2P_BYTES (64LL * 512 * 1024 * 4)

/* One key's coefficient (ms/MB) on machine m (fit.h). */
int val_galvatron_coe(const val_ctx *ctx, const sim_machine *m, const val_galvatron_key *k, double *coe, sim_err *err)
{
    const double MB = (double)GALV_BYTES / 1048576.0;
    int W = k->world, P = W / k->pp;
    if (W > m->ngpus || P < 1 || W % k->pp)
        return sim_errf(err, "%s: key %s: %d GPUs in %d stages does not fit the %d-GPU platform", m->name, k->key, W,
                        k->pp, m->ngpus);
    if (k->p2p) {
        if (k->pp < 2 || k->pp % 2)
            return sim_errf(err, "key %s: a p2p key needs an even number of stages", k->key);
        int *src = malloc((size_t)P * sizeof *src), *dst = malloc((size_t)P * sizeof *dst);
        double *t = malloc((size_t)P * sizeof *t), mean = 0;
        for (int j = 0; j < P; j++) {
            src[j] = (k->pp / 2 - 1) * P + j;
            dst[j] = k->pp / 2 * P + j;
        }
        int r = val_sim_sends(ctx, m, src, dst, P, GALV_P2P_BYTES, t, err);
        for (int j = 0; r == 0 && j < P; j++)
            mean += t[j] / P;
        *coe = r < 0 ? 0 : mean * 1e3 / ((double)GALV_P2P_BYTES / 1048576.0);
        free(src);
        free(dst);
        free(t);
        return r < 0 ? -1 : 0;
    }
    int n = k->n, ng = P / n;
    if (n < 2 || P % n)
        return sim_errf(err, "key %s: group size %d does not divide the stage of %d GPUs", k->key, n, P);
    int *ranks = malloc((size_t)P * sizeof *ranks);
    double *t = malloc((size_t)ng * sizeof *t);
    for (int g = 0; g < ng; g++)
        for (int j = 0; j < n; j++)
            ranks[g * n + j] = k->consec ? g * n + j : g + j * ng;
    int r = val_sim_concurrent(ctx, m, SIM_COLL_ALLREDUCE, ranks, ng, n, GALV_BYTES, t, err);
    *coe = r < 0 ? 0 : t[0] * 1e3 / (val_busbw_factor(SIM_COLL_ALLREDUCE, n) * MB);
    free(ranks);
    free(t);
    return r < 0 ? -1 : 0;
}

int val_galvatron_keys(const val_ctx *ctx, val_galvatron_key **out, sim_err *err)
{
    val_csv *csv = val_csv_load_data(ctx, "profiles/galvatron_pcie_allreduce_coefficients.csv", err);
    if (!csv)
        return -1;
    int n = -1;
    int ckind = val_csv_col(csv, "kind", err), ckey = val_csv_col(csv, "key", err);
    int cworld = val_csv_col(csv, "world_gpus", err), cpp = val_csv_col(csv, "pp", err);
    int cn = val_csv_col(csv, "group_size", err), cc = val_csv_col(csv, "consecutive", err);
    int ccoe = val_csv_col(csv, "coe_ms_per_MB", err);
    val_galvatron_key *k = calloc((size_t)val_csv_rows(csv) + 1, sizeof *k);
    if (ckind < 0 || ckey < 0 || cworld < 0 || cpp < 0 || cn < 0 || cc < 0 || ccoe < 0 || !k)
        goto done;
    for (int i = 0; i < val_csv_rows(csv); i++) {
        double world, pp, coe, nd = 0, cons = 0;
        k[i].p2p = !strcmp(val_csv_str(csv, i, ckind), "p2p");
        if (val_csv_num(csv, i, cworld, &world, err) < 0 || val_csv_num(csv, i, cpp, &pp, err) < 0 ||
            val_csv_num(csv, i, ccoe, &coe, err) < 0 ||
            (!k[i].p2p && (val_csv_num(csv, i, cn, &nd, err) < 0 || val_csv_num(csv, i, cc, &cons, err) < 0)))
            goto done;
        k[i].world = (int)world, k[i].pp = (int)pp, k[i].n = (int)nd, k[i].consec = cons != 0, k[i].coe = coe;
        snprintf(k[i].key, sizeof k[i].key, "%s", val_csv_str(csv, i, ckey));
        snprintf(k[i].name, sizeof k[i].name, "%s %dx8 %s", k[i].p2p ? "p2p" : "allreduce", k[i].world / 8, k[i].key);
    }
    n = val_csv_rows(csv);
done:
    val_csv_free(csv);
    if (n < 0)
        free(k);
    else
        *out = k;
    return n;
}

int val_group_galvatron_pcie(const val_ctx *ctx, val_set *out, sim_err *err)
{
    val_galvatron_key *k;
    int nk = val_galvatron_keys(ctx, &k, err), rc = -1;
    if (nk < 0)
        return -1;
    sim_machine *m = plat_load(GALV_PLATFORM, err);
    for (int i = 0; m && i < nk; i++) {
        double sim_coe;
        if (val_galvatron_coe(ctx, m, &k[i], &sim_coe, err) < 0 ||
            val_add(out, k[i].p2p ? "p2p" : "allreduce", k[i].name, k[i].coe, sim_coe, "ms/MB", 0, err) < 0)
            goto done;
    }
    rc = m ? 0 : -1;
done:
    sim_machine_free(m);
    free(k);
    return rc;
}
