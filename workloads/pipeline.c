/* pipeline.c — per-stage orders of forward and backward passes for each
 * pipeline schedule (see pipeline.h).  The generator turns each step into a
 * micro-batch's forward or backward of one model chunk; messages and
 * dependencies between stages come from the data, not from a global clock,
 * so the bubbles are whatever the simulated times make them. */
#include "workloads/pipeline.h"

#include <string.h>

static const char *const NAMES[WL_PIPE_COUNT] = {
    "1f1b", "gpipe", "interleaved", "eager", "merak_last_no_recompute", "merak_pre_recompute",
    "merak_full_critical_path"};

const char *wl_pipe_name(wl_pipeline k)
{
    return k >= 0 && k < WL_PIPE_COUNT ? NAMES[k] : "?";
}

int wl_pipe_parse(const char *name, wl_pipeline *out)
{
    static const struct {
        const char *alias;
        wl_pipeline k;
    } ALIASES[] = {{"pipedream_flush", WL_PIPE_1F1B},
                   {"interleaved_1f1b", WL_PIPE_INTERLEAVED},
                   {"eager_1f1b", WL_PIPE_EAGER},
                   {"1f1b_overlap_friendly", WL_PIPE_EAGER}, /* Alpa's name */
                   {"last_no_recompute_1f1b", WL_PIPE_MERAK_LNR}, /* Merak's names */
                   {"pre_recompute_1f1b", WL_PIPE_MERAK_PRE},
                   {"full_critical_path_1f1b", WL_PIPE_MERAK_FCP},
                   {"shifted_critical_path", WL_PIPE_MERAK_FCP}};
    for (int k = 0; k < WL_PIPE_COUNT; k++)
        if (!strcmp(name, NAMES[k])) {
            *out = (wl_pipeline)k;
            return 0;
        }
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (!strcmp(name, ALIASES[i].alias)) {
            *out = ALIASES[i].k;
            return 0;
        }
    return -1;
}

int wl_pipe_is_merak(wl_pipeline k)
{
    return k == WL_PIPE_MERAK_LNR || k == WL_PIPE_MERAK_PRE || k == WL_PIPE_MERAK_FCP;
}

int wl_pipe_validate(wl_pipeline k, int p, int v, int m, sim_err *err)
{
    if (v < 1)
        return sim_errf(err, "strategy: vstages: expected a positive integer, got %d", v);
    if (k == WL_PIPE_INTERLEAVED) {
        if (p < 2)
            return sim_errf(err, "pipeline=interleaved needs pp >= 2 (got pp=%d)", p);
        if (v < 2)
            return sim_errf(err, "pipeline=interleaved needs vstages >= 2 model chunks per stage (got vstages=%d)", v);
        if (m % p)
            return sim_errf(err,
                            "pipeline=interleaved needs the micro-batches per pipeline (%d) to be a multiple of "
                            "pp=%d (Megatron's condition); change gb or mb",
                            m, p);
    } else if (v != 1) {
        return sim_errf(err, "vstages=%d needs pipeline=interleaved (got pipeline=%s)", v, wl_pipe_name(k));
    }
    if (k == WL_PIPE_MERAK_FCP && m < 4)
        return sim_errf(err, "pipeline=merak_full_critical_path needs at least 4 micro-batches per pipeline (got %d)",
                        m);
    return 0;
}

static wl_pipe_step step(int backward, int micro, int chunk)
{
    wl_pipe_step s = {backward, micro, chunk};
    return s;
}

/* Megatron-LM `forward_backward_pipelining_with_interleaving`
 * (Narayanan et al. 2021 §2.2.2, Fig. 4 bottom): the k-th pass of a stage
 * belongs to chunk (k mod p·v) div p (reversed for backward) and micro-batch
 * (k div p·v)·p + k mod p; warm-up (p−i−1)·2 + (v−1)·p forwards (all of them
 * when m = p), then one forward and one backward per step, then the
 * remaining backwards. */
static int order_interleaved(int p, int v, int m, int stage, wl_pipe_step *out)
{
    int total = m * v, n = 0;
    int warm = (p - stage - 1) * 2 + (v - 1) * p;
    if (m == p || warm > total)
        warm = total;
#define CHUNK(k, fwd) ((fwd) ? ((k) % (p * v)) / p : v - 1 - ((k) % (p * v)) / p)
#define MICRO(k) (((k) / (p * v)) * p + (k) % p)
    for (int k = 0; k < warm; k++)
        out[n++] = step(0, MICRO(k), CHUNK(k, 1));
    for (int k = 0; k < total - warm; k++) {
        out[n++] = step(0, MICRO(k + warm), CHUNK(k + warm, 1));
        out[n++] = step(1, MICRO(k), CHUNK(k, 0));
    }
    for (int k = total - warm; k < total; k++)
        out[n++] = step(1, MICRO(k), CHUNK(k, 0));
#undef CHUNK
#undef MICRO
    return n;
}

/* w warm-up forwards, then pairs, then the remaining backwards.  fb = 1:
 * each pair is forward then backward (1F1B: the stage holds w+1); fb = 0:
 * backward then forward (eager: the stage holds w). */
static int order_warm(int m, int warm, int fb, wl_pipe_step *out)
{
    int n = 0;
    if (warm > m)
        warm = m;
    for (int j = 0; j < warm; j++)
        out[n++] = step(0, j, 0);
    for (int j = 0; j < m - warm; j++) {
        if (fb)
            out[n++] = step(0, j + warm, 0);
        out[n++] = step(1, j, 0);
        if (!fb)
            out[n++] = step(0, j + warm, 0);
    }
    for (int j = m - warm; j < m; j++)
        out[n++] = step(1, j, 0);
    return n;
}

int wl_pipe_order(wl_pipeline k, int p, int v, int m, int stage, wl_pipe_step *out)
{
    int n = 0;
    switch (k) {
    case WL_PIPE_GPIPE:
        /* GPipe (Huang et al. 2019; Narayanan et al. 2021 Fig. 3): every
         * micro-batch forward, then every backward in the same order */
        for (int j = 0; j < m; j++)
            out[n++] = step(0, j, 0);
        for (int j = 0; j < m; j++)
            out[n++] = step(1, j, 0);
        return n;
    case WL_PIPE_INTERLEAVED:
        return order_interleaved(p, v, m, stage, out);
    case WL_PIPE_EAGER:
        /* Alpa `OverlapFriendlyPipeDreamSchedule` (papers.md §6.2): min(M,
         * 2(S−i)−1) forwards before the first backward, then B and F
         * alternate, so the send of micro-batch k overlaps the forward of k+1 */
        return order_warm(m, 2 * (p - stage) - 1, 0, out);
    case WL_PIPE_MERAK_FCP:
        /* Merak full_critical_path_1f1b (papers.md §2.3): 1F1B, and on stage
         * P−2 the first backward and the third forward swap places */
        n = order_warm(m, p - stage - 1, 1, out);
        if (stage == p - 2 && m >= 4) {
            /* stage P−2 warms up with one forward: F0 F1 B0 F2 ... → F0 F1 F2 B0 ... */
            wl_pipe_step t = out[2];
            out[2] = out[3];
            out[3] = t;
        }
        return n;
    case WL_PIPE_1F1B:
    case WL_PIPE_MERAK_LNR:
    case WL_PIPE_MERAK_PRE:
    default:
        /* PipeDream-Flush (Narayanan et al. 2021 §2.2.1; Megatron-LM
         * `forward_backward_pipelining_without_interleaving`; DeepSpeed's
         * TrainSchedule, the base of Merak's variants): p−i−1 warm-up forwards */
        return order_warm(m, p - stage - 1, 1, out);
    }
}

int wl_pipe_max_inflight(const wl_pipe_step *steps, int n)
{
    int cur = 0, best = 0;
    for (int i = 0; i < n; i++) {
        cur += steps[i].backward ? -1 : 1;
        if (cur > best)
            best = cur;
    }
    return best;
}

double wl_pipe_merak_ratio(wl_pipeline k, double r0, int p, int stage)
{
    if (stage >= p - 1)
        return 0;
    if (k == WL_PIPE_MERAK_FCP && p > 2 && stage == p - 2)
        stage = p - 3;
    double r = 1 - (1 - r0) * (double)(p - 1) / (double)(p - 1 - stage);
    return r < 0 ? 0 : r > 1 ? 1 : r;
}
