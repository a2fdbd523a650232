/* moe.c — the MoE model description, the MoE strategy keys, token assignment
 * under a replication placement, and the schedule of one training step.
 *
 * Layout (DeepSpeed-MoE, Rajbhandari et al. 2022 §4; Megatron rank order as
 * in gpt.c): rank = pp_i·(tp·dp) + dp_i·tp + tp_i.  Expert parallelism splits
 * each data-parallel group into dp/ep expert-parallel groups of ep
 * consecutive dp indices; EP rank j of a group owns experts
 * [j·E/ep, (j+1)·E/ep).  Tokens stay replicated across TP ranks (each TP rank
 * holds a 1/tp slice of every local expert's FFN and all-reduces its output,
 * Megatron's expert tensor parallelism), so the all-to-alls run among the EP
 * ranks of the same TP index.  Dense gradients are all-reduced over dp,
 * expert gradients over the dp/ep copies of each expert.
 *
 * Per MoE layer and micro-batch (papers.md §5.2): gate GEMM and top-k
 * routing, all-to-allv dispatch with the uneven sizes the routing gives,
 * expert FFN as one grouped GEMM over the tokens this GPU computes, all-to-allv
 * combine; backward mirrors it (combine gradients travel as the dispatch
 * did).  The slowest GPU of a group paces both all-to-alls.
 *
 * The dense parts (attention, dense FFN, embedding and logits) follow gpt.c's
 * op list (workloads/README.md) in a compact form without memory effects;
 * the vocabulary-parallel loss all-reduces (a few bytes) are left out.
 * Pipeline orders come from pipeline.h (1f1b, gpipe, eager). */
#include "workloads/moe.h"
#include "workloads/gpt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/embedded.h"
#include "sim/fileio.h"
#include "sim/json.h"

/* ---- model -------------------------------------------------------------- */

int wl_moe_model_load(const char *spec, wl_model *m, wl_moe *moe, sim_err *err)
{
    if (wl_model_load(spec, m, err) < 0)
        return -1;
    if (!m->moe)
        return sim_errf(err, "%s: moe: model %s has no \"moe\" object {\"experts\": E, \"top_k\": k, ...} "
                        "(see workloads/README.md)", spec, m->name);
    *moe = m->moe_cfg;
    return 0;
}

double wl_moe_total_params(const char *spec, const wl_model *m)
{
    (void)spec;
    return wl_model_moe_params(m, 0);
}

double wl_moe_active_params(const char *spec, const wl_model *m)
{
    (void)spec;
    return wl_model_moe_params(m, 1);
}

int wl_moe_is_layer(const wl_moe *moe, int layer)
{
    return layer >= moe->first && (layer - moe->first) % moe->every == 0;
}

int wl_moe_count(const wl_moe *moe, int layers)
{
    int n = 0;
    for (int l = 0; l < layers; l++)
        n += wl_moe_is_layer(moe, l);
    return n;
}

/* ---- strategy ----------------------------------------------------------- */

const char *wl_balance_name(int b)
{
    static const char *n[] = {"none", "fastermoe", "prophet"};
    return (unsigned)b < WL_BAL_COUNT ? n[b] : "?";
}

void wl_moe_strategy_default(wl_moe_strategy *s)
{
    memset(s, 0, sizeof *s);
    wl_strategy_default(&s->base);
    s->base.dtype = SIM_DTYPE_FP16;
    s->ep = 1;
    s->steps = 0; /* auto: 5, or the trace's length */
    s->balance_mask = (1 << WL_BAL_COUNT) - 1;
    wl_routing_cfg_default(&s->routing);
}

static int pos_int(const char *key, const char *v, int *out, sim_err *err)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 1 || x > 1000000)
        return sim_errf(err, "strategy: %s: expected a positive integer, got \"%s\"", key, v);
    *out = (int)x;
    return 0;
}

int wl_moe_strategy_parse(const char *text, wl_moe_strategy *s, sim_err *err)
{
    char *copy = strdup(text ? text : "");
    size_t cap = strlen(copy) + 2;
    char *rest = calloc(cap, 1);
    int rc = 0;
    for (char *tok = strtok(copy, ","); tok && !rc; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        char *eq = strchr(tok, '=');
        if (!eq) {
            strcat(rest, tok);
            strcat(rest, ",");
            continue;
        }
        *eq = 0;
        char *k = tok, *v = eq + 1;
        for (char *e = k + strlen(k); e > k && e[-1] == ' '; *--e = 0)
            ;
        while (*v == ' ')
            v++;
        for (char *e = v + strlen(v); e > v && e[-1] == ' '; *--e = 0)
            ;
        if (!strcmp(k, "steps")) {
            rc = pos_int(k, v, &s->steps, err);
        } else if (!strcmp(k, "seed")) {
            char *end;
            unsigned long x = strtoul(v, &end, 10);
            if (end == v || *end)
                rc = sim_errf(err, "strategy: seed: expected a non-negative integer, got \"%s\"", v);
            s->routing.seed = x;
        } else if (!strcmp(k, "drift")) {
            char *end;
            double x = strtod(v, &end);
            if (end == v || *end || !(x >= 0) || !isfinite(x))
                rc = sim_errf(err, "strategy: drift: expected a number >= 0, got \"%s\"", v);
            s->routing.drift = x;
        } else if (!strcmp(k, "routing")) {
            rc = wl_routing_cfg_parse(v, &s->routing, err);
        } else if (!strcmp(k, "balance")) {
            if (!strcmp(v, "all"))
                s->balance_mask = (1 << WL_BAL_COUNT) - 1;
            else {
                int found = -1;
                for (int b = 0; b < WL_BAL_COUNT; b++)
                    if (!strcmp(v, wl_balance_name(b)))
                        found = b;
                if (found < 0)
                    rc = sim_errf(err, "strategy: balance: expected none, fastermoe, prophet or all, got \"%s\"", v);
                else
                    s->balance_mask = 1 << found;
            }
        } else {
            size_t w = strlen(rest);
            snprintf(rest + w, cap - w, "%s=%s,", k, v);
        }
    }
    if (!rc && wl_strategy_parse(rest, &s->base, err) < 0) {
        if (strstr(err->msg, "unknown key"))
            sim_err_prefix(err, "(MoE keys: ep, steps, seed, drift, routing, balance) ");
        rc = -1;
    }
    s->ep = wl_strategy_ep(&s->base);
    free(copy);
    free(rest);
    return rc;
}

/* Peak memory per GPU of stage `stage` before any balancing copies, the way
 * workloads/README.md counts it for GPT: 16 bytes per parameter of model
 * state (ZeRO paper §3.1), Korthikanti et al.'s activations per layer and
 * micro-batch in flight (an MoE layer's FFN part for the top-k expert
 * passes of an average token, plus its dispatch and combine buffers), and
 * a 1 GiB context.  Pro-Prophet's and FasterMoE's copies add weights and
 * gradients on top (not counted here). */
static double stage_memory(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st, int stage, double *states,
                           double *acts, int *inflight)
{
    const wl_strategy *b = &st->base;
    double h = m->hidden, t = b->tp, s = m->seq, mb = b->mb, a = m->heads;
    double d = sim_dtype_bytes(b->dtype) >= 4 ? 4 : 2;
    int L = m->layers / b->pp, l0 = stage * L, mm = b->gb / (b->mb * b->dp);
    double params = 0, act = 0;
    for (int l = l0; l < l0 + L; l++) {
        params += 4 * h * h / t + 6 * h;
        double f = m->ffn;
        if (wl_moe_is_layer(moe, l)) {
            params += h * moe->experts + (double)(moe->experts / st->ep) * (2 * h * moe->expert_ffn / t + h);
            f = (double)moe->expert_ffn * moe->top_k;
            act += 2 * s * mb * moe->top_k * h * d; /* dispatch + combine buffers */
        } else {
            params += 2 * h * m->ffn / t;
        }
        act += s * mb * h * (d * (4 + (4 + 2 * f / h) / t) + 2) + a * s * s * mb * (2 * d + 1) / t;
    }
    if (stage == 0 || stage == b->pp - 1)
        params += (double)m->vocab * h / t;
    wl_pipe_step *order = malloc(sizeof *order * (size_t)(2 * mm + 1));
    int n = wl_pipe_order(b->pipeline, b->pp, 1, mm, stage, order);
    *inflight = wl_pipe_max_inflight(order, n);
    free(order);
    *states = 16 * params;
    *acts = act * *inflight;
    return *states + *acts + (double)(1ll << 30);
}

int wl_moe_resolve(const wl_model *m, const wl_moe *moe, wl_moe_strategy *st, const sim_machine *mach, sim_err *err)
{
    wl_strategy *b = &st->base;
    int tp = b->tp, pp = b->pp;
    /* this generator emits GPT-shaped layers (MHA, gelu experts with biases,
     * learned positions, tied embeddings): a model of another architecture
     * would be simulated as something it is not */
    char arch[160] = "";
    snprintf(arch, sizeof arch, "%s%s%s%s%s%s", m->kv_heads ? " kv_heads" : "",
             m->ffn_type != WL_FFN_GELU ? " ffn_type" : "", m->position != WL_POS_LEARNED ? " position" : "",
             m->untied ? " tie_embeddings" : "", m->no_bias || m->qkv_bias ? " bias" : "",
             m->norm != WL_NORM_LAYERNORM || m->norm_no_bias || m->embed_norm ? " norm" : "");
    if (wl_strategy_cp(b) > 1)
        return sim_errf(err, "strategy: cp=%d: context parallelism is modelled in `trainsim run` only, not in "
                        "`trainsim moe`", b->cp);
    if (b->dtype == SIM_DTYPE_FP8)
        return sim_errf(err, "strategy: dtype=fp8 (FP8 GEMMs with per-tensor scaling) is modelled in `trainsim run` "
                        "only; use bf16 with `trainsim moe`");
    if (moe->shared_ffn)
        return sim_errf(err, "model %s: shared experts (moe.shared_ffn) are modelled in `trainsim run` only, not in "
                        "`trainsim moe`", m->name);
    if (arch[0])
        return sim_errf(err, "model %s: `trainsim moe` simulates GPT-style MoE layers only (multi-head attention, gelu "
                        "experts with biases, layernorm, learned positions, tied embeddings); not modelled there yet:"
                        "%s", m->name, arch);
    if (wl_strategy_resolve_world(b, mach, err))
        return -1;
    if (b->dp % st->ep)
        return sim_errf(err, "strategy: ep=%d must divide dp=%d (expert-parallel groups are split from data-parallel "
                        "groups, as in DeepSpeed-MoE)", st->ep, b->dp);
    if (moe->experts % st->ep)
        return sim_errf(err, "strategy: ep=%d must divide the %d experts of model %s", st->ep, moe->experts, m->name);
    if (m->heads % tp || m->hidden % tp || m->ffn % tp || moe->expert_ffn % tp)
        return sim_errf(err, "strategy: tp=%d must divide heads %d, hidden %d, ffn %d and expert_ffn %d", tp, m->heads,
                        m->hidden, m->ffn, moe->expert_ffn);
    if (b->stage_split != WL_SPLIT_UNIFORM || b->grad_coll != WL_GRAD_AUTO)
        return sim_errf(err, "strategy: %s is modelled in the dense pipeline (trainsim run), not in `trainsim moe`",
                        b->stage_split != WL_SPLIT_UNIFORM ? "an uneven stage split (stage_split, pp_layers)"
                                                           : "grad_collective");
    if (m->layers % pp)
        return sim_errf(err, "strategy: pp=%d must divide the %d layers", pp, m->layers);
    if (b->gb % (b->mb * b->dp))
        return sim_errf(err, "strategy: gb=%d is not divisible by mb·dp = %d", b->gb, b->mb * b->dp);
    if (b->recompute != WL_RECOMPUTE_NONE || b->zero || b->osdp[0] || b->dp_overlap || b->vstages > 1 ||
        (b->pipeline != WL_PIPE_1F1B && b->pipeline != WL_PIPE_GPIPE && b->pipeline != WL_PIPE_EAGER))
        return sim_errf(err, "strategy: MoE runs model pipeline=1f1b, gpipe or eager with end-of-step data "
                        "parallelism; recompute, ZeRO, OSDP, DP overlap, interleaving and Merak's schedules are not "
                        "modelled for MoE yet");
    if (st->steps == 0)
        st->steps = st->routing.dist == WL_ROUTE_TRACE ? -1 : 5;
    for (int stage = 0; stage < b->pp && !st->fragment; stage++) {
        double states, acts;
        int inflight;
        double need = stage_memory(m, moe, st, stage, &states, &acts, &inflight);
        const sim_gpu *g = sim_machine_gpu(mach, stage * b->tp * b->dp);
        if (g->mem_capacity > 0 && need > g->mem_capacity)
            return sim_errf(err, "out of GPU memory on stage %d: needs %.1f GB per GPU (model states %.1f for "
                            "16 bytes per parameter, activations %.1f for %d micro-batches in flight, context 1.1) but "
                            "the %s has %.1f GB; try a larger ep, more pp or tp, or a smaller mb",
                            stage, need / 1e9, states / 1e9, acts / 1e9, inflight, g->model, g->mem_capacity / 1e9);
    }
    return 0;
}

/* ---- token assignment --------------------------------------------------- */

int64_t wl_moe_assign(const wl_moe *moe, int ep, const int64_t *counts, const wl_moe_place *pl, int64_t per_source,
                      int64_t *compute, int64_t *send)
{
    int E = moe->experts, per = E / ep;
    int64_t cap = INT64_MAX, dropped = 0;
    if (moe->capacity_factor > 0)
        cap = (int64_t)ceil(moe->capacity_factor * (double)per_source / E);
    memset(compute, 0, (size_t)ep * sizeof *compute);
    memset(send, 0, (size_t)ep * ep * sizeof *send);
    int *h = malloc((size_t)ep * sizeof *h);
    for (int e = 0; e < E; e++) {
        int owner = e / per, nh = 0;
        h[nh++] = owner;
        for (int g = 0; pl && g < ep; g++)
            if (g != owner && pl->holds[(size_t)e * ep + g])
                h[nh++] = g;
        for (int k = 0; k < ep; k++) {
            int64_t c = counts[(size_t)k * E + e];
            if (c > cap) {
                dropped += c - cap;
                c = cap;
            }
            int local = 0;
            for (int i = 0; i < nh && !local; i++)
                local = h[i] == k;
            if (local) {
                compute[k] += c;
                continue;
            }
            /* an even split over the copies (assumption: papers.md §5.2 says
             * only that replicas take load off the heavy expert) */
            for (int i = 0; i < nh; i++) {
                int64_t share = c / nh + (i < c % nh);
                compute[h[i]] += share;
                send[(size_t)k * ep + h[i]] += share;
            }
        }
    }
    free(h);
    return dropped;
}

double wl_moe_imbalance(const int64_t *compute, int ep)
{
    double mx = 0, sum = 0;
    for (int g = 0; g < ep; g++) {
        sum += (double)compute[g];
        mx = (double)compute[g] > mx ? (double)compute[g] : mx;
    }
    return sum > 0 ? mx / (sum / ep) : 1.0;
}

/* ---- schedule ----------------------------------------------------------- */

typedef struct gen {
    sim_schedule *s;
    const wl_model *m;
    const wl_moe *moe;
    const wl_moe_strategy *st;
    wl_moe_place *const *places;
    int rank, pp_i, dp_i, tp_i, ep_i, eg, mbs;
    int tp, pp, dp, ep;
    sim_dtype dt;
    int d;                 /* activation bytes */
    int64_t sb;            /* tokens per micro-batch */
    int c_compute, c_tp, c_ep, c_dp, c_pro, c_sn, c_rp, c_sp, c_rn;
    int tp_comm, ep_comm, dp_comm, edp_comm;
    int *bal_comm;         /* per (moe layer, expert): communicator of its copies, -1 none */
    uint32_t pend[8];
    int npend;
    uint32_t last;         /* last compute op (UINT32_MAX none) */
    int64_t *tok;          /* per moe layer: tokens this GPU computes */
    int64_t *disp;         /* per moe layer: dispatch bytes to each EP rank [ep] */
    int64_t *comb;         /* per moe layer: combine bytes to each EP rank [ep] */
    uint32_t *bcast_ready; /* per moe layer: op the experts' first forward waits for */
    uint32_t *prev_moe_end; /* per moe layer: combine of micro 0 (prefetch trigger of the next) */
    uint32_t last_side;    /* last op on the ep/prophet streams the DP reduce must wait for */
} gen;

#define NONE UINT32_MAX

static sim_tags tg(int layer, int micro, sim_phase ph) { return (sim_tags){layer, micro, -1, (uint8_t)ph}; }

static void pend(gen *g, uint32_t op)
{
    if (op != NONE && g->npend < 8)
        g->pend[g->npend++] = op;
}

static uint32_t kern(gen *g, const char *name, sim_kernel k, int64_t m, int64_t n, int64_t kk, int64_t batch,
                     int64_t bytes, sim_tags t)
{
    uint32_t op = sim_sched_kernel(g->s, g->c_compute, name, k, m, n, kk, batch, bytes, g->dt, t, g->pend, g->npend);
    g->npend = 0;
    g->last = op;
    return op;
}

static uint32_t gemm(gen *g, const char *name, int64_t m, int64_t n, int64_t k, sim_tags t)
{
    return kern(g, name, SIM_KERNEL_GEMM, m, n, k, 0, 0, t);
}

static uint32_t elem(gen *g, const char *name, int64_t bytes, sim_tags t)
{
    return kern(g, name, SIM_KERNEL_ELEMENTWISE, 0, 0, 0, 0, bytes, t);
}

static void tp_allreduce(gen *g, const char *name, int64_t bytes, sim_tags t)
{
    if (g->tp < 2)
        return;
    uint32_t dep = g->last;
    pend(g, sim_sched_collective(g->s, g->c_tp, name, SIM_COLL_ALLREDUCE, g->tp_comm, bytes, 0, t, &dep,
                                 dep != NONE));
}

static int moe_index(const gen *g, int layer)
{
    int q = 0;
    for (int l = 0; l < layer; l++)
        q += wl_moe_is_layer(g->moe, l);
    return q;
}

static int64_t expert_param_bytes(const gen *g)
{
    return 2LL * g->m->hidden * (g->moe->expert_ffn / g->tp) * g->d;
}

static void layer_fwd(gen *g, int l, int j)
{
    const wl_model *m = g->m;
    int64_t h = m->hidden, sb = g->sb, t = g->tp, d = g->d;
    sim_tags T = tg(l, j, SIM_PHASE_FORWARD);
    elem(g, "ln1", 2 * sb * h * d, T);
    gemm(g, "qkv", sb, 3 * h / t, h, T);
    kern(g, "attn", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, g->mbs, 0, T);
    gemm(g, "proj", sb, h, h / t, T);
    tp_allreduce(g, "tp_allreduce", sb * h * d, T);
    elem(g, "post_attn", 6 * sb * h * d, T);
    if (!wl_moe_is_layer(g->moe, l)) {
        int64_t f = m->ffn / t;
        gemm(g, "fc1", sb, f, h, T);
        elem(g, "gelu", 2 * sb * f * d, T);
        gemm(g, "fc2", sb, h, f, T);
        tp_allreduce(g, "tp_allreduce", sb * h * d, T);
        elem(g, "post_mlp", 4 * sb * h * d, T);
        return;
    }
    int q = moe_index(g, l), E = g->moe->experts;
    int64_t f = g->moe->expert_ffn / t, T_tok = g->tok[q];
    gemm(g, "gate", sb, E, h, T);
    uint32_t route = elem(g, "route", sb * E * 4, T);
    const wl_moe_place *pl = g->places ? g->places[q] : NULL;
    if (pl && !pl->overlap && j == 0) {
        /* FasterMoE: shadowed experts are broadcast after the gate has
         * decided, on the all-to-all stream, before the dispatch */
        for (int e = 0; e < E; e++)
            if (g->bal_comm[(size_t)q * E + e] >= 0) {
                uint32_t dep = route;
                g->last_side = sim_sched_collective(g->s, g->c_ep, "shadow_bcast", SIM_COLL_BROADCAST,
                                                    g->bal_comm[(size_t)q * E + e], expert_param_bytes(g), 0, T, &dep, 1);
            }
    }
    uint32_t disp = NONE;
    if (g->ep > 1) {
        disp = sim_sched_alltoallv(g->s, g->c_ep, "dispatch", g->ep_comm, g->disp + (size_t)q * g->ep, T, &route, 1);
        pend(g, disp);
    }
    if (j == 0 && g->bcast_ready[q] != NONE)
        pend(g, g->bcast_ready[q]);
    if (T_tok > 0) {
        gemm(g, "expert_fc1", T_tok, f, h, T);
        elem(g, "expert_gelu", 2 * T_tok * f * d, T);
        gemm(g, "expert_fc2", T_tok, h, f, T);
        tp_allreduce(g, "tp_allreduce", T_tok * h * d, T);
    }
    if (g->ep > 1) {
        uint32_t deps[2] = {g->last, disp};
        int nd = 0;
        if (g->npend) /* experts skipped: wait on what they would have waited on */
            for (int i = 0; i < g->npend && nd < 2; i++)
                deps[nd++] = g->pend[i];
        else
            nd = 1;
        g->npend = 0;
        uint32_t comb = sim_sched_alltoallv(g->s, g->c_ep, "combine", g->ep_comm, g->comb + (size_t)q * g->ep, T,
                                            deps, nd);
        pend(g, comb);
        if (j == 0)
            g->prev_moe_end[q] = comb;
    } else if (j == 0) {
        g->prev_moe_end[q] = g->last;
    }
    elem(g, "post_mlp", 4 * sb * h * d, T);
}

static void layer_bwd(gen *g, int l, int j, int last_micro)
{
    const wl_model *m = g->m;
    int64_t h = m->hidden, sb = g->sb, t = g->tp, d = g->d;
    sim_tags T = tg(l, j, SIM_PHASE_BACKWARD);
    elem(g, "post_mlp_bwd", 4 * sb * h * d, T);
    if (!wl_moe_is_layer(g->moe, l)) {
        int64_t f = m->ffn / t;
        gemm(g, "fc2_dgrad", sb, f, h, T);
        gemm(g, "fc2_wgrad", f, h, sb, T);
        elem(g, "gelu_bwd", 3 * sb * f * d, T);
        gemm(g, "fc1_dgrad", sb, h, f, T);
        tp_allreduce(g, "tp_allreduce", sb * h * d, T);
        gemm(g, "fc1_wgrad", h, f, sb, T);
    } else {
        int q = moe_index(g, l), E = g->moe->experts;
        int64_t f = g->moe->expert_ffn / t, T_tok = g->tok[q];
        uint32_t a2a = NONE;
        if (g->ep > 1) {
            uint32_t dep = g->last;
            a2a = sim_sched_alltoallv(g->s, g->c_ep, "combine_bwd", g->ep_comm, g->disp + (size_t)q * g->ep, T, &dep, 1);
            pend(g, a2a);
        }
        if (T_tok > 0) {
            gemm(g, "expert_fc2_dgrad", T_tok, f, h, T);
            gemm(g, "expert_fc2_wgrad", f, h, T_tok, T);
            elem(g, "expert_gelu_bwd", 3 * T_tok * f * d, T);
            gemm(g, "expert_fc1_dgrad", T_tok, h, f, T);
            tp_allreduce(g, "tp_allreduce", T_tok * h * d, T);
            gemm(g, "expert_fc1_wgrad", h, f, T_tok, T);
        }
        uint32_t experts_done = T_tok > 0 ? g->last : a2a;
        if (g->ep > 1) {
            uint32_t deps[1] = {experts_done != NONE ? experts_done : g->last};
            a2a = sim_sched_alltoallv(g->s, g->c_ep, "dispatch_bwd", g->ep_comm, g->comb + (size_t)q * g->ep, T, deps,
                                      deps[0] != NONE);
            pend(g, a2a);
        }
        const wl_moe_place *pl = g->places ? g->places[q] : NULL;
        if (pl && last_micro) {
            /* gradients of the copies go back to the owner once per step:
             * FasterMoE on the all-to-all stream (the next layer's
             * all-to-all waits), Pro-Prophet on its own stream, overlapping
             * the backward of the layers below */
            for (int e = 0; e < E; e++) {
                int c = g->bal_comm[(size_t)q * E + e];
                if (c < 0)
                    continue;
                uint32_t dep = experts_done != NONE ? experts_done : g->last;
                g->last_side = sim_sched_collective(g->s, pl->overlap ? g->c_pro : g->c_ep,
                                                    pl->overlap ? "replica_reduce" : "shadow_reduce", SIM_COLL_REDUCE, c,
                                                    expert_param_bytes(g), 0, T, &dep, dep != NONE);
            }
        }
        gemm(g, "gate_dgrad", sb, h, E, T);
        gemm(g, "gate_wgrad", h, E, sb, T);
    }
    elem(g, "post_attn_bwd", 6 * sb * h * d, T);
    gemm(g, "proj_dgrad", sb, h / t, h, T);
    gemm(g, "proj_wgrad", h / t, h, sb, T);
    kern(g, "attn_bwd", SIM_KERNEL_ATTENTION, m->heads / t, m->seq, h / m->heads, 2 * g->mbs, 0, T);
    gemm(g, "qkv_dgrad", sb, h, 3 * h / t, T);
    tp_allreduce(g, "tp_allreduce", sb * h * d, T);
    gemm(g, "qkv_wgrad", h, 3 * h / t, sb, T);
    elem(g, "ln1_bwd", 2 * sb * h * d, T);
}

static void forward(gen *g, int j)
{
    int L = g->m->layers / g->pp, l0 = g->pp_i * L;
    int64_t h = g->m->hidden, sb = g->sb, d = g->d;
    if (g->pp_i == 0) {
        if (!g->st->fragment)
            elem(g, "embed", 2 * sb * h * d, tg(-1, j, SIM_PHASE_FORWARD));
    } else {
        pend(g, sim_sched_recv(g->s, g->c_rp, "recv_act", g->rank - g->tp * g->dp, sb * h * d, 0,
                               tg(-1, j, SIM_PHASE_FORWARD), NULL, 0));
    }
    for (int l = l0; l < l0 + L; l++) {
        if (j == 0 && g->c_pro >= 0 && wl_moe_is_layer(g->moe, l)) {
            /* Pro-Prophet: broadcast this layer's replicas once the previous
             * MoE layer's micro-batch 0 has combined, so the transfer runs
             * under the dense layer in between (papers.md §5.2, scheduler) */
            int q = moe_index(g, l), E = g->moe->experts;
            const wl_moe_place *pl = g->places ? g->places[q] : NULL;
            if (pl && pl->overlap) {
                uint32_t trig = NONE;
                for (int p = q - 1; p >= 0 && trig == NONE; p--)
                    trig = g->prev_moe_end[p];
                for (int e = 0; e < E; e++) {
                    int c = g->bal_comm[(size_t)q * E + e];
                    if (c < 0)
                        continue;
                    uint32_t op = sim_sched_collective(g->s, g->c_pro, "replica_bcast", SIM_COLL_BROADCAST, c,
                                                       expert_param_bytes(g), 0, tg(l, 0, SIM_PHASE_FORWARD), &trig,
                                                       trig != NONE);
                    g->bcast_ready[q] = op;
                    g->last_side = op;
                }
            }
        }
        layer_fwd(g, l, j);
    }
    if (g->pp_i == g->pp - 1) {
        if (g->st->fragment)
            return;
        elem(g, "final_ln", 2 * sb * h * d, tg(-1, j, SIM_PHASE_FORWARD));
        int64_t V = (g->m->vocab + 127) / 128 * 128 / g->tp;
        gemm(g, "logits", sb, V, h, tg(-1, j, SIM_PHASE_FORWARD));
        elem(g, "loss", sb * V * 4 * 2, tg(-1, j, SIM_PHASE_FORWARD));
    } else {
        uint32_t dep = g->last;
        sim_sched_send(g->s, g->c_sn, "send_act", g->rank + g->tp * g->dp, sb * h * d, 0, tg(-1, j, SIM_PHASE_FORWARD),
                       &dep, 1);
    }
}

static void backward(gen *g, int j, int last_micro)
{
    int L = g->m->layers / g->pp, l0 = g->pp_i * L;
    int64_t h = g->m->hidden, sb = g->sb, d = g->d;
    if (g->pp_i == g->pp - 1) {
        int64_t V = (g->m->vocab + 127) / 128 * 128 / g->tp;
        if (!g->st->fragment) {
            elem(g, "loss_bwd", sb * V * 4 * 2, tg(-1, j, SIM_PHASE_BACKWARD));
        gemm(g, "logits_dgrad", sb, h, V, tg(-1, j, SIM_PHASE_BACKWARD));
        gemm(g, "logits_wgrad", V, h, sb, tg(-1, j, SIM_PHASE_BACKWARD));
        }
    } else {
        pend(g, sim_sched_recv(g->s, g->c_rn, "recv_grad", g->rank + g->tp * g->dp, sb * h * d, 1,
                               tg(-1, j, SIM_PHASE_BACKWARD), NULL, 0));
    }
    for (int l = l0 + L - 1; l >= l0; l--)
        layer_bwd(g, l, j, last_micro);
    if (g->pp_i == 0) {
        if (!g->st->fragment)
            elem(g, "embed_bwd", 2 * sb * h * d, tg(-1, j, SIM_PHASE_BACKWARD));
    } else {
        uint32_t dep = g->last;
        sim_sched_send(g->s, g->c_sp, "send_grad", g->rank - g->tp * g->dp, sb * h * d, 1,
                       tg(-1, j, SIM_PHASE_BACKWARD), &dep, 1);
    }
}

/* Dense and expert parameters of this rank. */
static void rank_params(const gen *g, double *dense, double *expert)
{
    const wl_model *m = g->m;
    double h = m->hidden, t = g->tp;
    int L = m->layers / g->pp, l0 = g->pp_i * L;
    *dense = 0;
    *expert = 0;
    for (int l = l0; l < l0 + L; l++) {
        *dense += 4 * h * h / t + 6 * h;
        if (wl_moe_is_layer(g->moe, l)) {
            *dense += h * g->moe->experts;
            *expert += (double)(g->moe->experts / g->ep) * 2 * h * g->moe->expert_ffn / t;
        } else {
            *dense += 2 * h * m->ffn / t;
        }
    }
    if (g->pp_i == 0 || g->pp_i == g->pp - 1)
        *dense += (double)m->vocab * h / t;
}

static void generate_rank(gen *g, int m_micro)
{
    sim_schedule *s = g->s;
    g->c_compute = sim_sched_stream_role(s, g->rank, "compute", SIM_ROLE_COMPUTE);
    g->c_tp = g->tp > 1 ? sim_sched_stream_role(s, g->rank, "tp", SIM_ROLE_TP) : -1;
    g->c_ep = g->ep > 1 ? sim_sched_stream_role(s, g->rank, "ep", SIM_ROLE_EP) : -1;
    int any_overlap = 0, any_shadow = 0;
    int nq = wl_moe_count(g->moe, g->m->layers);
    for (int q = 0; g->places && q < nq; q++)
        if (g->places[q]) {
            any_overlap |= g->places[q]->overlap;
            any_shadow |= !g->places[q]->overlap;
        }
    if (any_shadow && g->c_ep < 0)
        g->c_ep = sim_sched_stream_role(s, g->rank, "ep", SIM_ROLE_EP);
    g->c_pro = any_overlap ? sim_sched_stream_role(s, g->rank, "prophet", SIM_ROLE_EP) : -1;
    g->c_sn = sim_sched_stream_role(s, g->rank, "pp-send-next", SIM_ROLE_PP);
    g->c_rp = sim_sched_stream_role(s, g->rank, "pp-recv-prev", SIM_ROLE_PP);
    g->c_sp = sim_sched_stream_role(s, g->rank, "pp-send-prev", SIM_ROLE_PP);
    g->c_rn = sim_sched_stream_role(s, g->rank, "pp-recv-next", SIM_ROLE_PP);
    g->npend = 0;
    g->last = NONE;
    g->last_side = NONE;
    for (int q = 0; q < nq; q++) {
        g->bcast_ready[q] = NONE;
        g->prev_moe_end[q] = NONE;
    }
    /* the stage's pass order (pipeline.h: 1f1b, gpipe or Alpa's eager 1F1B,
     * whose extra warm-up forwards let a stage's send overlap its next
     * forward, papers.md §6.2) */
    wl_pipe_step *order = malloc(sizeof *order * (size_t)(2 * m_micro + 1));
    int nsteps = wl_pipe_order(g->st->base.pipeline, g->pp, 1, m_micro, g->pp_i, order), last_bwd = 0;
    for (int i = 0; i < nsteps; i++)
        if (order[i].backward)
            last_bwd = i;
    for (int i = 0; i < nsteps; i++) {
        if (order[i].backward)
            backward(g, order[i].micro, i == last_bwd);
        else
            forward(g, order[i].micro);
    }
    free(order);
    if (g->st->fragment) {
        /* the planner's fragment ends when the copies' gradients are home */
        if (g->last_side != NONE)
            pend(g, g->last_side);
        if (g->npend)
            elem(g, "end", 0, tg(-1, -1, SIM_PHASE_BACKWARD));
        return;
    }
    /* gradients after the flush, then the optimizer */
    double dense, expert;
    rank_params(g, &dense, &expert);
    int gbytes = sim_dtype_bytes(g->dt) >= 4 ? 4 : 2;
    int64_t bucket = wl_gpt_bucket_bytes(&g->st->base, g->dp, gbytes, 0, 0);
    uint32_t lastdp = NONE;
    if (g->dp > 1) {
        g->c_dp = sim_sched_stream_role(s, g->rank, "dp", SIM_ROLE_DP);
        int64_t left = (int64_t)(dense * gbytes);
        uint32_t deps[2] = {g->last, g->last_side};
        int nd = g->last_side != NONE ? 2 : 1;
        while (left > 0) {
            int64_t b = left < bucket ? left : bucket;
            lastdp = sim_sched_collective(s, g->c_dp, "dp_allreduce", SIM_COLL_ALLREDUCE, g->dp_comm, b, 0,
                                          tg(-1, -1, SIM_PHASE_BACKWARD), deps, nd);
            left -= b;
        }
        if (g->edp_comm >= 0) {
            left = (int64_t)(expert * gbytes);
            while (left > 0) {
                int64_t b = left < bucket ? left : bucket;
                lastdp = sim_sched_collective(s, g->c_dp, "expert_dp_allreduce", SIM_COLL_ALLREDUCE, g->edp_comm, b, 0,
                                              tg(-1, -1, SIM_PHASE_BACKWARD), deps, nd);
                left -= b;
            }
        }
    }
    pend(g, lastdp);
    pend(g, g->last_side);
    kern(g, "optimizer", SIM_KERNEL_OPTIMIZER, (int64_t)(dense + expert), 0, 0, 0, (int64_t)((dense + expert) * 28),
         tg(-1, -1, SIM_PHASE_OPTIMIZER));
}

sim_schedule *wl_moe_generate(const wl_model *m, const wl_moe *moe, const wl_moe_strategy *st,
                              const sim_machine *mach, const wl_routing *r, int step, wl_moe_place *const *places,
                              sim_err *err)
{
    wl_moe_strategy rs = *st;
    if (wl_moe_resolve(m, moe, &rs, mach, err) < 0)
        return NULL;
    const wl_strategy *b = &rs.base;
    int tp = b->tp, pp = b->pp, dp = b->dp, ep = rs.ep, E = moe->experts;
    int n = tp * pp * dp, nq = wl_moe_count(moe, m->layers), ngroups = dp / ep;
    int m_micro = b->gb / (b->mb * dp);
    sim_schedule *s = sim_sched_new(n);
    s->layout = (sim_layout){tp, 1, dp, pp, ep};
    gen g;
    memset(&g, 0, sizeof g);
    g.s = s;
    g.m = m;
    g.moe = moe;
    g.st = &rs;
    g.places = places;
    g.tp = tp;
    g.pp = pp;
    g.dp = dp;
    g.ep = ep;
    g.dt = b->dtype;
    g.d = sim_dtype_bytes(b->dtype);
    g.mbs = b->mb;
    g.sb = (int64_t)m->seq * b->mb;
    int64_t per_source = g.sb * moe->top_k;
    /* routing → per-GPU token counts and all-to-all sizes (the same for every EP group) */
    int64_t *tok_all = calloc((size_t)nq * ep, sizeof *tok_all);
    int64_t *send_all = calloc((size_t)nq * ep * ep, sizeof *send_all);
    for (int q = 0; q < nq; q++)
        wl_moe_assign(moe, ep, wl_routing_counts(r, step, q), places ? places[q] : NULL, per_source,
                      tok_all + (size_t)q * ep, send_all + (size_t)q * ep * ep);
    g.tok = calloc((size_t)nq, sizeof *g.tok);
    g.disp = calloc((size_t)nq * ep, sizeof *g.disp);
    g.comb = calloc((size_t)nq * ep, sizeof *g.comb);
    g.bcast_ready = calloc((size_t)nq + 1, sizeof *g.bcast_ready);
    g.prev_moe_end = calloc((size_t)nq + 1, sizeof *g.prev_moe_end);
    g.bal_comm = malloc(((size_t)nq * E + 1) * sizeof *g.bal_comm);
    int *ranks = malloc((size_t)(n + 1) * sizeof *ranks);
    /* communicators, per rank looked up below */
    int *tp_c = malloc(sizeof(int) * (size_t)(pp * dp + 1)), *dp_c = malloc(sizeof(int) * (size_t)(pp * tp + 1));
    int *ep_c = malloc(sizeof(int) * (size_t)(pp * tp * ngroups + 1)), *edp_c = malloc(sizeof(int) * (size_t)(pp * tp * ep + 1));
    char name[96];
    for (int p = 0; p < pp; p++) {
        for (int d = 0; d < dp && tp > 1; d++) {
            for (int t = 0; t < tp; t++)
                ranks[t] = p * tp * dp + d * tp + t;
            snprintf(name, sizeof name, "tp.p%d.d%d", p, d);
            tp_c[p * dp + d] = sim_sched_comm(s, name, ranks, tp);
        }
        for (int t = 0; t < tp; t++) {
            if (dp > 1) {
                for (int d = 0; d < dp; d++)
                    ranks[d] = p * tp * dp + d * tp + t;
                snprintf(name, sizeof name, "dp.p%d.t%d", p, t);
                dp_c[p * tp + t] = sim_sched_comm(s, name, ranks, dp);
            }
            for (int e = 0; e < ngroups && ep > 1; e++) {
                for (int j = 0; j < ep; j++)
                    ranks[j] = p * tp * dp + (e * ep + j) * tp + t;
                snprintf(name, sizeof name, "ep.p%d.t%d.g%d", p, t, e);
                ep_c[(p * tp + t) * ngroups + e] = sim_sched_comm(s, name, ranks, ep);
            }
            for (int j = 0; j < ep && ngroups > 1; j++) {
                for (int e = 0; e < ngroups; e++)
                    ranks[e] = p * tp * dp + (e * ep + j) * tp + t;
                snprintf(name, sizeof name, "edp.p%d.t%d.e%d", p, t, j);
                edp_c[(p * tp + t) * ep + j] = sim_sched_comm(s, name, ranks, ngroups);
            }
        }
    }
    /* balance communicators: owner first (the root), then the copies, per EP group */
    int *bal_base = malloc(sizeof(int) * ((size_t)nq * E + 1));
    for (int q = 0; q < nq; q++)
        for (int e = 0; e < E; e++) {
            bal_base[(size_t)q * E + e] = -1;
            const wl_moe_place *pl = places ? places[q] : NULL;
            if (!pl)
                continue;
            int owner = e / (E / ep), cnt = 0;
            for (int j = 0; j < ep; j++)
                cnt += j != owner && pl->holds[(size_t)e * ep + j];
            if (!cnt)
                continue;
            bal_base[(size_t)q * E + e] = s->ncomms;
            for (int p = 0; p < pp; p++)
                for (int t = 0; t < tp; t++)
                    for (int grp = 0; grp < ngroups; grp++) {
                        int k = 0;
                        ranks[k++] = p * tp * dp + (grp * ep + owner) * tp + t;
                        for (int j = 0; j < ep; j++)
                            if (j != owner && pl->holds[(size_t)e * ep + j])
                                ranks[k++] = p * tp * dp + (grp * ep + j) * tp + t;
                        snprintf(name, sizeof name, "copies.l%d.e%d.p%d.t%d.g%d", q, e, p, t, grp);
                        sim_sched_comm(s, name, ranks, k);
                    }
        }
    for (int rank = 0; rank < n; rank++) {
        g.rank = rank;
        g.pp_i = rank / (tp * dp);
        g.dp_i = rank % (tp * dp) / tp;
        g.tp_i = rank % tp;
        g.ep_i = g.dp_i % ep;
        g.eg = g.dp_i / ep;
        g.tp_comm = tp > 1 ? tp_c[g.pp_i * dp + g.dp_i] : -1;
        g.dp_comm = dp > 1 ? dp_c[g.pp_i * tp + g.tp_i] : -1;
        g.ep_comm = ep > 1 ? ep_c[(g.pp_i * tp + g.tp_i) * ngroups + g.eg] : -1;
        g.edp_comm = ngroups > 1 ? edp_c[(g.pp_i * tp + g.tp_i) * ep + g.ep_i] : -1;
        int block = (g.pp_i * tp + g.tp_i) * ngroups + g.eg; /* index within a balance comm block */
        for (int q = 0; q < nq; q++) {
            g.tok[q] = tok_all[(size_t)q * ep + g.ep_i];
            for (int j = 0; j < ep; j++) {
                int64_t bytes_per_tok = (int64_t)m->hidden * g.d;
                g.disp[(size_t)q * ep + j] = j == g.ep_i ? 0 : send_all[((size_t)q * ep + g.ep_i) * ep + j] * bytes_per_tok;
                g.comb[(size_t)q * ep + j] = j == g.ep_i ? 0 : send_all[((size_t)q * ep + j) * ep + g.ep_i] * bytes_per_tok;
            }
            for (int e = 0; e < E; e++) {
                int base = bal_base[(size_t)q * E + e];
                const wl_moe_place *pl = places ? places[q] : NULL;
                int member = base >= 0 && (e / (E / ep) == g.ep_i || pl->holds[(size_t)e * ep + g.ep_i]);
                g.bal_comm[(size_t)q * E + e] = member ? base + block : -1;
            }
        }
        generate_rank(&g, m_micro);
    }
    snprintf(s->meta.name, sizeof s->meta.name, "%s moe step %d", m->name, step);
    s->meta.samples_per_iteration = b->gb;
    s->meta.tokens_per_iteration = (double)b->gb * m->seq;
    double h = m->hidden, fwd_per_token = 0;
    for (int l = 0; l < m->layers; l++)
        fwd_per_token += 8 * h * h + 4.0 * m->seq * h +
                         (wl_moe_is_layer(moe, l) ? 2 * h * E + 4.0 * moe->top_k * h * moe->expert_ffn : 4 * h * m->ffn);
    fwd_per_token += 2 * h * m->vocab;
    s->meta.model_flops_per_iteration = 3 * fwd_per_token * s->meta.tokens_per_iteration;
    s->meta.dtype = b->dtype;
    free(tok_all);
    free(send_all);
    free(g.tok);
    free(g.disp);
    free(g.comb);
    free(g.bcast_ready);
    free(g.prev_moe_end);
    free(g.bal_comm);
    free(bal_base);
    free(ranks);
    free(tp_c);
    free(dp_c);
    free(ep_c);
    free(edp_c);
    return s;
}
