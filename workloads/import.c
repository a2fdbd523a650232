/* import.c — Kineto traces as schedules (see import.h).
 *
 * Per trace (rank), in four phases:
 *   1. the window: the kernels and copies launched inside the chosen
 *      ProfilerStep#N annotation (the last one by default; the whole trace
 *      without markers), by their launch time, so a step's kernels that run
 *      after its host annotation ended still belong to it;
 *   2. cross-stream dependencies: from the trace's cuda_sync records where
 *      it has them (PyTorch's enable_cuda_sync_events: the waiting stream,
 *      the stream waited for and the event record's correlation id: exact).
 *      Traces without them record a cudaStreamWaitEvent call but not which
 *      event or stream, so each is inferred from the recorded timeline: the next kernel its host thread launches waits for the last
 *      kernel launched before the call on another stream that ended before
 *      that kernel started, the latest such one (the one that can have gated
 *      it).  A host synchronisation likewise makes the next launch wait for
 *      the last-launched kernel that was still running when the host began
 *      to wait;
 *   3. host delays: a kernel that started later than its stream and its
 *      dependencies allowed waited for its launch; that wait becomes a
 *      SIM_KERNEL_DELAY before it (the GPU is free meanwhile), so host time
 *      stays what it was when kernels are priced again;
 *   4. operations: kernels and copies as fixed durations; with a target GPU
 *      (reprice), GEMMs with a recorded shape as GEMM payloads and
 *      element-wise kernels with known bytes as element-wise payloads, priced
 *      by the target's cost model (the first kernel of each op call; the
 *      rest of a split-K call is scaled; the later parts of an element-wise
 *      op over more than 2^31 bytes, which PyTorch launches in parts, take
 *      no time of their own), and every other kernel's recorded
 *      time scaled by the GPUs' ratio: peak FLOP/s of its dtype for GEMM and
 *      convolution kernels, memory bandwidth for the rest (most kernels of a
 *      training step that are not matrix products stream memory).  Copies
 *      keep their time (host links are not the GPU's).
 * NCCL kernels become collectives, their size from the kernel args or the
 * launching c10d op / nccl: annotation (kineto.h), on the process group the
 * kernel args name (one communicator per distinct group) or else on all
 * ranks; the n-th collective of every member of a communicator is the same
 * collective (NCCL's own matching rule), checked here: type and, but for
 * all-to-all, bytes.  An all-to-all becomes an all-to-allv with the recorded
 * splits where the args have them, else the rank's own bytes split evenly
 * over the members (older traces record the total only), so ranks may send
 * different amounts.  Collectives always run on the target
 * platform (their recorded durations, peers' waiting included, are not
 * used). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "kineto.h"
#include "platforms/catalog.h"
#include "sim/alloc.h"
#include "sim/json.h"

#define TOL_US 2.0   /* trace clocks count whole microseconds */
#define MAX_DEPS 4   /* inferred dependencies of one kernel */
#define NO_OP UINT32_MAX

typedef struct item {
    const wl_kernel *k;
    int copy;             /* a memory copy or set, not a kernel */
    int stream;           /* index among the rank's streams */
    int ndeps;
    int dep[MAX_DEPS];    /* items it waits for */
    double delay_us;      /* host delay before it */
    int comm;             /* NCCL kernel: its communicator in the import's table (0 = all ranks) */
    uint32_t op;          /* its operation once emitted */
} item;

typedef struct rank_in {
    wl_kineto *t;
    const char *path;
    int rank;             /* schedule rank */
    double t0, t1;        /* the window, trace clock (us) */
    double base;          /* time 0 of the replay on the trace clock: t0, or the earliest rank's on a shared clock */
    item *it;
    int n;
    int *sid, nstreams;   /* CUDA stream ids, ascending */
    int *coll, ncoll;     /* items that are NCCL collectives, in start order */
    int *p2p, np2p;       /* items that are point-to-point sends and receives, in start order */
    sim_gpu src;          /* the trace's GPU (repricing) */
    wl_et *et;            /* its execution trace, or NULL */
    const char *et_path;
    wl_kernel *kx;        /* the kernels with what the ET adds (wl_et_join), or NULL */
    int *producer;        /* [kernels]: the kernel whose output each reads (the ET's data flow), -1 */
    wl_et_stats join;
} rank_in;

static double key_us(const wl_kernel *k) { return k->launch_ts_us >= 0 ? k->launch_ts_us : k->ts_us; }
static double end_us(const item *x) { return x->k->ts_us + x->k->dur_us; }

static int cmp_item(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->k->ts_us != y->k->ts_us)
        return x->k->ts_us < y->k->ts_us ? -1 : 1;
    if (x->k->stream != y->k->stream)
        return x->k->stream < y->k->stream ? -1 : 1;
    return (x->copy > y->copy) - (x->copy < y->copy);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static const char *ordinal(int i, char *buf, size_t n)
{
    int r = i % 100;
    const char *suf = r >= 11 && r <= 13 ? "th" : i % 10 == 1 ? "st" : i % 10 == 2 ? "nd" : i % 10 == 3 ? "rd" : "th";
    snprintf(buf, n, "%d%s", i, suf);
    return buf;
}

/* ---- phase 1: the window ------------------------------------------------ */

/* The step `step` of trace t (-1: its last), or -1 without markers. */
static int pick_step(const wl_kineto *t, const char *path, int step, sim_err *err)
{
    int ns = wl_kineto_nsteps(t), pick = -1;
    if (step >= 0) {
        char want[32];
        snprintf(want, sizeof want, "ProfilerStep#%d", step);
        for (int i = 0; i < ns; i++)
            if (!strcmp(wl_kineto_step_name(t, i), want))
                pick = i;
        if (pick < 0 && !ns)
            return sim_errf(err, "%s: no ProfilerStep# markers: --step %d needs a trace recorded with "
                            "torch.profiler's schedule (prof.step())", path, step), -2;
        if (pick < 0)
            return sim_errf(err, "%s: no ProfilerStep#%d marker (the trace has %d step%s, %s%s)", path, step, ns,
                            ns == 1 ? "" : "s", wl_kineto_step_name(t, 0), ns > 1 ? " ..." : ""), -2;
    } else if (ns) {
        pick = ns - 1;
    }
    return pick;
}

static int pick_window(rank_in *R, int step, wl_import_rank *info, sim_err *err)
{
    int pick = pick_step(R->t, R->path, step, err);
    if (pick < -1)
        return -1;
    R->t0 = -INFINITY;
    R->t1 = INFINITY;
    info->step[0] = 0;
    if (pick >= 0) {
        R->t0 = wl_kineto_step_ts_us(R->t, pick);
        R->t1 = R->t0 + wl_kineto_step_us(R->t, pick);
        snprintf(info->step, sizeof info->step, "%s", wl_kineto_step_name(R->t, pick));
        info->step_s = wl_kineto_step_us(R->t, pick) * 1e-6;
    }
    return 0;
}

static void gather(rank_in *R)
{
    int nk = wl_kineto_nkernels(R->t), nc = wl_kineto_ncopies(R->t);
    R->it = sim_xcalloc((size_t)(nk + nc) + 1, sizeof *R->it, "the imported kernels");
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < (c ? nc : nk); i++) {
            const wl_kernel *k = c ? wl_kineto_copy(R->t, i) : R->kx ? &R->kx[i] : wl_kineto_kernel(R->t, i);
            double t = key_us(k);
            if (t >= R->t0 && t < R->t1)
                R->it[R->n++] = (item){.k = k, .copy = c, .op = NO_OP};
        }
    if (R->n > 1)
        qsort(R->it, (size_t)R->n, sizeof *R->it, cmp_item);
    R->sid = sim_xcalloc((size_t)R->n + 1, sizeof *R->sid, "the imported streams");
    for (int i = 0; i < R->n; i++)
        R->sid[i] = R->it[i].k->stream;
    if (R->n > 1)
        qsort(R->sid, (size_t)R->n, sizeof *R->sid, cmp_int);
    for (int i = 0; i < R->n; i++)
        if (!R->nstreams || R->sid[R->nstreams - 1] != R->sid[i])
            R->sid[R->nstreams++] = R->sid[i];
    for (int i = 0; i < R->n; i++) {
        int *p = bsearch(&R->it[i].k->stream, R->sid, (size_t)R->nstreams, sizeof *R->sid, cmp_int);
        R->it[i].stream = (int)(p - R->sid);
    }
    if (!isfinite(R->t0)) { /* the whole trace: from its first launch */
        R->t0 = INFINITY;
        for (int i = 0; i < R->n; i++)
            R->t0 = fmin(R->t0, fmin(key_us(R->it[i].k), R->it[i].k->ts_us));
    }
}

/* ---- phase 2: dependencies ---------------------------------------------- */

/* An item by (stream, time): stream 0 for every item orders by time alone. */
typedef struct skey {
    int stream;
    double ts;
    int item;
} skey;

static int cmp_skey(const void *a, const void *b)
{
    const skey *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->item > y->item) - (x->item < y->item);
}

static void add_dep(item *K, int d)
{
    for (int i = 0; i < K->ndeps; i++)
        if (K->dep[i] == d)
            return;
    if (K->ndeps < MAX_DEPS)
        K->dep[K->ndeps++] = d;
}

/* The item a host call h gates (the next launch of its thread), and the
 * item it waited for (module comment), or 0 when none is seen. */
static int infer_dep(rank_in *R, const wl_host_call *h, const int *bl, int j, const int *last)
{
    int K = -1;
    for (int q = j; q < R->n && q < j + 256; q++)
        if (R->it[bl[q]].k->launch_tid == h->tid && R->it[bl[q]].k->launch_ts_us >= 0) {
            K = bl[q];
            break;
        }
    if (K < 0)
        return 0;
    item *k = &R->it[K];
    int best = -1;
    double best_end = -INFINITY;
    for (int s = 0; s < R->nstreams; s++) {
        int c = last[s];
        if (c < 0 || (h->kind == WL_HOST_WAIT_EVENT && s == k->stream))
            continue;
        double e = end_us(&R->it[c]);
        if (e > k->k->ts_us + TOL_US || (h->kind == WL_HOST_SYNC && e < h->ts_us - TOL_US))
            continue;
        if (e > best_end)
            best = c, best_end = e;
    }
    if (best < 0 || R->it[best].stream == k->stream)
        return 0; /* none, or implied by the stream's order */
    add_dep(k, best);
    return 1;
}

/* Dependencies from recorded stream waits (cuda_sync): exact where the trace
 * has them.  The waiting stream's first item at or after the wait waits for
 * the last item launched on the recorded stream before the event record (a
 * stream runs in launch order, so correlation ids rise along it). */
static int recorded_deps(rank_in *R)
{
    skey *k = sim_xcalloc((size_t)R->n + 1, sizeof *k, "the imported streams");
    for (int i = 0; i < R->n; i++)
        k[i] = (skey){R->it[i].k->stream, R->it[i].k->ts_us, i};
    if (R->n > 1)
        qsort(k, (size_t)R->n, sizeof *k, cmp_skey);
    int waits = 0;
    for (int w = 0; w < wl_kineto_nwaits(R->t); w++) {
        const wl_stream_wait *W = wl_kineto_wait(R->t, w);
        int lo = 0, hi = R->n; /* the first item of W->stream at or after the wait */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (k[mid].stream < W->stream || (k[mid].stream == W->stream && k[mid].ts < W->ts_us - TOL_US))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == R->n || k[lo].stream != W->stream)
            continue;
        int K = k[lo].item;
        lo = 0, hi = R->n; /* past the last item of W->wait_stream launched before the record */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            const wl_kernel *x = R->it[k[mid].item].k;
            if (k[mid].stream < W->wait_stream || (k[mid].stream == W->wait_stream && x->corr < W->record_corr))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || k[lo - 1].stream != W->wait_stream || W->wait_stream == W->stream)
            continue;
        add_dep(&R->it[K], k[lo - 1].item);
        waits++;
    }
    free(k);
    return waits;
}

static int infer_deps(rank_in *R)
{
    skey *lk = sim_xcalloc((size_t)R->n + 1, sizeof *lk, "the imported launches");
    int *bl = sim_xcalloc((size_t)R->n + 1, sizeof *bl, "the imported launches");
    int *last = sim_xcalloc((size_t)R->nstreams + 1, sizeof *last, "the imported launches");
    for (int i = 0; i < R->n; i++)
        lk[i] = (skey){0, key_us(R->it[i].k), i};
    if (R->n > 1)
        qsort(lk, (size_t)R->n, sizeof *lk, cmp_skey);
    for (int i = 0; i < R->n; i++)
        bl[i] = lk[i].item;
    free(lk);
    for (int s = 0; s < R->nstreams; s++)
        last[s] = -1;
    int j = 0, waits = 0;
    for (int i = 0; i < wl_kineto_nhost(R->t); i++) {
        const wl_host_call *h = wl_kineto_host(R->t, i);
        if (h->ts_us < R->t0 || h->ts_us >= R->t1)
            continue;
        for (; j < R->n && key_us(R->it[bl[j]].k) < h->ts_us; j++)
            last[R->it[bl[j]].stream] = bl[j];
        waits += infer_dep(R, h, bl, j, last);
    }
    free(bl);
    free(last);
    return waits;
}

/* Dependencies from the execution trace's data flow: a kernel reading what
 * a kernel of another stream wrote waits for it (where that one ended
 * before it started, as the recorded run shows).  Returns those not
 * already there. */
static int data_deps(rank_in *R)
{
    int nk = wl_kineto_nkernels(R->t), added = 0;
    int *item_of = sim_xcalloc((size_t)nk + 1, sizeof *item_of, "the imported kernels");
    for (int i = 0; i < nk; i++)
        item_of[i] = -1;
    for (int i = 0; i < R->n; i++)
        if (!R->it[i].copy)
            item_of[R->it[i].k - R->kx] = i;
    for (int i = 0; i < R->n; i++) {
        item *x = &R->it[i];
        int p = x->copy ? -1 : R->producer[x->k - R->kx], d = p >= 0 ? item_of[p] : -1;
        if (d < 0 || R->it[d].stream == x->stream || end_us(&R->it[d]) > x->k->ts_us + TOL_US)
            continue;
        int had = x->ndeps, dup = 0;
        for (int j = 0; j < x->ndeps; j++)
            dup |= x->dep[j] == d;
        add_dep(x, d);
        added += !dup && x->ndeps > had;
    }
    free(item_of);
    return added;
}

/* ---- phase 3: host delays ----------------------------------------------- */

static void host_delays(rank_in *R, wl_import_rank *info)
{
    double *ready = sim_xcalloc((size_t)R->nstreams + 1, sizeof *ready, "the imported streams");
    for (int s = 0; s < R->nstreams; s++)
        ready[s] = R->base;
    for (int i = 0; i < R->n; i++) {
        item *x = &R->it[i];
        double r = ready[x->stream];
        for (int d = 0; d < x->ndeps; d++)
            r = fmax(r, end_us(&R->it[x->dep[d]]));
        x->delay_us = x->k->ts_us > r ? x->k->ts_us - r : 0;
        ready[x->stream] = fmax(ready[x->stream], end_us(x));
        if (x->delay_us > 0) {
            info->delays++;
            info->delay_s += x->delay_us * 1e-6;
        }
    }
    free(ready);
}

/* ---- phase 4: operations ------------------------------------------------ */

/* A short name: "void at::native::(anonymous namespace)::foo<...>(...)" ->
 * "at::native::foo"; "Memcpy HtoD (Pinned -> Device)" -> "Memcpy HtoD". */
static void short_name(const char *name, char *buf, size_t n)
{
    static const char anon[] = "(anonymous namespace)::";
    size_t j = 0;
    if (!strncmp(name, "void ", 5))
        name += 5;
    for (const char *p = name; *p && j + 1 < n;) {
        if (!strncmp(p, anon, sizeof anon - 1)) {
            p += sizeof anon - 1;
            continue;
        }
        if ((*p == '<' || *p == '(') && j > 0)
            break;
        buf[j++] = *p++;
    }
    while (j > 0 && buf[j - 1] == ' ')
        j--;
    buf[j] = 0;
}

/* The communicators of an import: 0 is every rank; the others are the
 * process groups the kernel args name ("Process Group Ranks"). */
typedef struct comm_table {
    int n, cap;
    int *size;
    int **ranks;
} comm_table;

/* "[0, 1, 2]" -> out[0..n); -1 when it is not such a list or longer than max. */
static int parse_list(const char *s, int64_t *out, int max)
{
    int n = 0;
    if (!s || *s != '[')
        return -1;
    for (s++;;) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ']')
            return s[1] ? -1 : n;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || n >= max)
            return -1;
        out[n++] = v;
        s = end;
    }
}

/* The communicator of an NCCL kernel of rank `rank`: 0 without a process
 * group, else the group's entry (added on first sight).  -1 with err for a
 * group that is not a list of distinct ranks of the job holding this one. */
static int comm_of(comm_table *T, const rank_in *R, const wl_kernel *k, int nranks, sim_err *err)
{
    if (!k->pg_ranks)
        return 0;
    int64_t *v = sim_xcalloc((size_t)nranks + 1, sizeof *v, "a process group");
    int n = parse_list(k->pg_ranks, v, nranks), self = 0, ok = n > 0;
    for (int i = 0; ok && i < n; i++) {
        ok = v[i] >= 0 && v[i] < nranks;
        self += v[i] == R->rank;
        for (int j = 0; ok && j < i; j++)
            ok = v[j] != v[i];
    }
    if (!ok || !self || (k->group_size > 0 && k->group_size != n)) {
        free(v);
        return sim_errf(err, "%s: NCCL kernel at %.0f us: process group ranks \"%.80s\": expected %d distinct "
                        "ranks of 0..%d including this trace's rank %d", R->path, k->ts_us, k->pg_ranks,
                        k->group_size > 0 ? k->group_size : n, nranks - 1, R->rank);
    }
    int c = 1;
    for (; c < T->n; c++) {
        int same = T->size[c] == n;
        for (int i = 0; same && i < n; i++)
            same = T->ranks[c][i] == v[i];
        if (same)
            break;
    }
    if (c == T->n) {
        if (T->n >= T->cap) {
            T->cap = T->cap ? 2 * T->cap : 8;
            T->size = sim_xrealloc(T->size, (size_t)T->cap, sizeof *T->size, "the process groups");
            T->ranks = sim_xrealloc(T->ranks, (size_t)T->cap, sizeof *T->ranks, "the process groups");
        }
        T->size[c] = n;
        T->ranks[c] = sim_xcalloc((size_t)n, sizeof **T->ranks, "a process group");
        for (int i = 0; i < n; i++)
            T->ranks[c][i] = (int)v[i];
        T->n++;
    }
    free(v);
    return c;
}

static int nccl_check(const rank_in *R, const item *x, int nranks, sim_err *err)
{
    const wl_kernel *k = x->k;
    char name[160];
    short_name(k->name, name, sizeof name);
    if (k->coll < 0 && k->p2p && k->peer >= 0) {
        if (k->peer >= nranks || k->peer == R->rank || k->bytes <= 0)
            return sim_errf(err, "%s: NCCL kernel %s at %.0f us: a %s %s rank %d of %lld bytes: expected another rank "
                            "of 0..%d and a size", R->path, name, k->ts_us, k->p2p == WL_P2P_SEND ? "send" : "receive",
                            k->p2p == WL_P2P_SEND ? "to" : "from", k->peer, (long long)k->bytes, nranks - 1);
        return 0;
    }
    if (k->coll < 0)
        return sim_errf(err, "%s: NCCL kernel %s at %.0f us is point-to-point (SendRecv) without a c10d "
                        "all-to-all around it, and neither the trace (kernel args' Src/Dst Rank) nor an execution "
                        "trace (--et) records its peer", R->path, name, k->ts_us);
    if (k->bytes <= 0)
        return sim_errf(err, "%s: NCCL kernel %s at %.0f us: the trace records neither its size (kernel args, "
                        "PyTorch >= 2.3) nor a c10d op or nccl: annotation with shapes", R->path, name, k->ts_us);
    if (!k->pg_ranks && k->group_size > 0 && !k->group_is_world && k->group_size != nranks)
        return sim_errf(err, "%s: NCCL kernel %s at %.0f us runs on %d ranks but the trace does not say which "
                        "(kernel args' Process Group Ranks, PyTorch >= 2.4); without them every collective is on "
                        "all %d ranks", R->path, name, k->ts_us, k->group_size, nranks);
    return 0;
}

/* GEMM and convolution kernels, by their short name (a template argument
 * of an element-wise kernel may say "conversion"). */
static int is_compute_bound(const wl_kernel *k, const char *short_name)
{
    return k->cls == WL_K_GEMM || strstr(short_name, "gemm") || strstr(short_name, "Gemm") ||
           strstr(short_name, "conv");
}

/* The scale of a kernel's recorded time on the target GPU. */
static double time_ratio(const rank_in *R, const wl_kernel *k, const char *short_name, const sim_gpu *dst)
{
    int dt = k->has_shape ? (int)k->dtype : SIM_DTYPE_FP32;
    if (is_compute_bound(k, short_name) && R->src.peak_flops[dt] > 0 && dst->peak_flops[dt] > 0)
        return R->src.peak_flops[dt] / dst->peak_flops[dt];
    return R->src.mem_bw / dst->mem_bw;
}

static uint32_t compute_payload(sim_schedule *s, const rank_in *R, const item *x, const sim_gpu *dst,
                                unsigned char *seen_call, wl_import_rank *info)
{
    const wl_kernel *k = x->k;
    char name[160];
    short_name(k->name, name, sizeof name);
    sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_FIXED, .name = sim_sched_str(s, name)};
    p.seconds = k->dur_us * 1e-6;
    if (!dst || x->copy)
        return sim_sched_payload(s, &p);
    int first = k->op_index >= 0 && !seen_call[k->op_index];
    if (first && k->cls == WL_K_GEMM && k->has_shape) {
        p.sub = SIM_KERNEL_GEMM;
        p.dtype = (uint8_t)k->dtype;
        p.m = k->m, p.n = k->n, p.k = k->k, p.batch = k->batch > 1 ? k->batch : 0;
        p.seconds = 0;
    } else if (first && k->elem_bytes > 0) {
        p.sub = SIM_KERNEL_ELEMENTWISE;
        p.bytes = k->elem_bytes;
        if (k->mclass > SIM_MEMC_STREAM) /* a strided or widening kernel: its class's rate */
            p.class_bytes[k->mclass - 1] = k->elem_bytes;
        p.seconds = 0;
    }
    /* a later part of an element-wise op split into several launches: the
     * first part's payload carries all of the op's bytes */
    int part = !first && k->elem_bytes > WL_KINETO_SPLIT_BYTES && k->op_index >= 0;
    if (k->op_index >= 0)
        seen_call[k->op_index] = 1;
    if (part) {
        p.seconds = 0;
        info->repriced++;
    } else if (p.sub == SIM_KERNEL_FIXED) {
        p.seconds *= time_ratio(R, k, name, dst);
        info->scaled++;
    } else {
        info->repriced++;
    }
    return sim_sched_payload(s, &p);
}

/* An all-to-all's bytes to each member: the recorded splits where the
 * kernel args give one per member, else the rank's bytes split evenly. */
static void alltoall_split(const wl_kernel *k, int members, int64_t *split)
{
    int n = k->in_splits && k->elem_size > 0 ? parse_list(k->in_splits, split, members) : -1;
    int ok = n == members;
    for (int j = 0; ok && j < n; j++)
        ok = split[j] >= 0 && split[j] <= SIM_MAX_BYTES / k->elem_size;
    for (int j = 0; j < members; j++)
        split[j] = ok ? split[j] * k->elem_size : k->bytes / members + (j < k->bytes % members);
}

static void emit_rank(sim_schedule *s, rank_in *R, const int *comm, const comm_table *T, const wl_import_opts *o,
                      wl_import_rank *info)
{
    char sname[32];
    int *stream = sim_xcalloc((size_t)R->nstreams + 1, sizeof *stream, "the imported streams");
    for (int i = 0; i < R->nstreams; i++) {
        snprintf(sname, sizeof sname, "stream %d", R->sid[i]);
        stream[i] = sim_sched_stream(s, R->rank, sname);
    }
    int max_call = 0;
    for (int i = 0; i < R->n; i++)
        max_call = R->it[i].k->op_index > max_call ? R->it[i].k->op_index : max_call;
    unsigned char *seen = sim_xcalloc((size_t)max_call + 1, 1, "the imported op calls");
    int nr = s->nranks;
    int64_t *split = sim_xcalloc((size_t)nr, sizeof *split, "an all-to-all's sizes");
    /* a repriced kernel carries the target's launch gap (costmodel.c), which
     * the recorded gap after it also holds: the delay after it drops it */
    unsigned char *priced = sim_xcalloc((size_t)R->nstreams + 1, 1, "the imported streams");
    for (int i = 0; i < R->n; i++) {
        item *x = &R->it[i];
        if (priced[x->stream] && o->reprice)
            x->delay_us = fmax(0, x->delay_us - o->reprice->launch_s * 1e6);
        uint32_t deps[MAX_DEPS];
        int nd = 0;
        for (int d = 0; d < x->ndeps; d++)
            if (R->it[x->dep[d]].op != NO_OP)
                deps[nd++] = R->it[x->dep[d]].op;
        int st = stream[x->stream];
        if (x->delay_us > 0) {
            sim_payload p = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_DELAY, .name = sim_sched_str(s, "host delay"),
                             .seconds = x->delay_us * 1e-6};
            sim_sched_add(s, st, sim_sched_payload(s, &p), -1, SIM_NO_TAGS, deps, nd);
            nd = 0;
        }
        const wl_kernel *k = x->k;
        if (!x->copy && k->cls == WL_K_NCCL && k->coll == SIM_COLL_ALLTOALL) {
            alltoall_split(k, x->comm ? T->size[x->comm] : nr, split);
            x->op = sim_sched_alltoallv(s, st, "alltoall", comm[x->comm], split, SIM_NO_TAGS, deps, nd);
        } else if (!x->copy && k->cls == WL_K_NCCL && k->coll < 0) {
            x->op = k->p2p == WL_P2P_SEND
                        ? sim_sched_send(s, st, "send", k->peer, k->bytes, 0, SIM_NO_TAGS, deps, nd)
                        : sim_sched_recv(s, st, "recv", k->peer, k->bytes, 0, SIM_NO_TAGS, deps, nd);
        } else if (!x->copy && k->cls == WL_K_NCCL) {
            x->op = sim_sched_collective(s, st, sim_coll_name(k->coll), (sim_coll)k->coll, comm[x->comm], k->bytes, 0,
                                         SIM_NO_TAGS, deps, nd);
        } else {
            uint32_t p = compute_payload(s, R, x, o->reprice, seen, info);
            priced[x->stream] = s->payloads[p].sub != SIM_KERNEL_FIXED;
            x->op = sim_sched_add(s, st, p, -1, SIM_NO_TAGS, deps, nd);
            continue;
        }
        priced[x->stream] = 0;
    }
    free(split);
    free(priced);
    free(seen);
    free(stream);
}

/* ---- ranks and collectives across ranks ---------------------------------- */

static int assign_ranks(rank_in *R, int n, wl_import_info *info, sim_err *err)
{
    int with = 0;
    for (int i = 0; i < n; i++)
        with += wl_kineto_rank(R[i].t) >= 0;
    info->rank_from_trace = with == n;
    if (with && with < n) {
        int a = 0, b = 0;
        while (wl_kineto_rank(R[a].t) < 0)
            a++;
        while (wl_kineto_rank(R[b].t) >= 0)
            b++;
        return sim_errf(err, "%s records its rank (distributedInfo) and %s does not: give the traces of one job",
                        R[a].path, R[b].path);
    }
    int *owner = sim_xcalloc((size_t)n, sizeof *owner, "the imported ranks");
    for (int i = 0; i < n; i++)
        owner[i] = -1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        int r = with ? wl_kineto_rank(R[i].t) : i, w = wl_kineto_world(R[i].t);
        if (with && w > 0 && w != n)
            rc = sim_errf(err, "%s: rank %d of a job of %d ranks, but %d trace%s given: give one trace per rank", R[i].path,
                          r, w, n, n == 1 ? " was" : "s were");
        else if (r >= n)
            rc = sim_errf(err, "%s: rank %d, but only %d traces were given (ranks 0..%d expected)", R[i].path, r, n,
                          n - 1);
        else if (owner[r] >= 0)
            rc = sim_errf(err, "%s and %s both hold rank %d: a rank given twice", R[owner[r]].path, R[i].path, r);
        else
            owner[r] = i, R[i].rank = r;
    }
    for (int r = 0; r < n && !rc; r++)
        if (owner[r] < 0)
            rc = sim_errf(err, "rank %d is missing: no trace among the %d given records it", r, n);
    free(owner);
    return rc;
}

static void describe_coll(const wl_kernel *k, char *buf, size_t n)
{
    if (k->coll == SIM_COLL_ALLTOALL)
        snprintf(buf, n, "an alltoall of %lld bytes", (long long)k->bytes);
    else
        snprintf(buf, n, "an %s of %lld bytes", sim_coll_name(k->coll), (long long)k->bytes);
}

static void describe_group(const comm_table *T, int c, char *buf, size_t n)
{
    size_t l = (size_t)snprintf(buf, n, "%s", c ? " of process group [" : "");
    for (int i = 0; c && i < T->size[c] && l < n; i++)
        l += (size_t)snprintf(buf + l, n - l, "%s%d", i ? "," : "", T->ranks[c][i]);
    if (c && l < n)
        snprintf(buf + l, n - l, "]");
}

/* The n-th collective of every member of a communicator must be the same
 * collective (NCCL's rule); each member is compared with the first. */
static int match_collectives(rank_in *R, const int *by_rank, int nranks, const comm_table *T, sim_err *err)
{
    int *all = sim_xcalloc((size_t)nranks, sizeof *all, "the world communicator");
    for (int r = 0; r < nranks; r++)
        all[r] = r;
    int rc = 0;
    for (int c = 0; c < T->n && !rc; c++) {
        const int *mem = c ? T->ranks[c] : all;
        int nm = c ? T->size[c] : nranks;
        const rank_in *A = &R[by_rank[mem[0]]];
        char grp[256];
        describe_group(T, c, grp, sizeof grp);
        for (int m = 1; m < nm && !rc; m++) {
            const rank_in *B = &R[by_rank[mem[m]]];
            int ia = 0, ib = 0, nth = 0;
            for (;; nth++) {
                while (ia < A->ncoll && A->it[A->coll[ia]].comm != c)
                    ia++;
                while (ib < B->ncoll && B->it[B->coll[ib]].comm != c)
                    ib++;
                if (ia == A->ncoll || ib == B->ncoll)
                    break;
                const wl_kernel *a = A->it[A->coll[ia++]].k, *b = B->it[B->coll[ib++]].k;
                if (a->coll == b->coll && (a->bytes == b->bytes || a->coll == SIM_COLL_ALLTOALL))
                    continue;
                char da[96], db[96], ord[16];
                describe_coll(a, da, sizeof da);
                describe_coll(b, db, sizeof db);
                rc = sim_errf(err, "%s: rank %d's %s collective%s is %s, rank %d's (%s) is %s: collectives do not "
                              "match across ranks", B->path, B->rank, ordinal(nth + 1, ord, sizeof ord), grp, db,
                              A->rank, A->path, da);
                break;
            }
            if (!rc && (ia < A->ncoll || ib < B->ncoll)) {
                int na = 0, nb = 0;
                for (int i = 0; i < A->ncoll; i++)
                    na += A->it[A->coll[i]].comm == c;
                for (int i = 0; i < B->ncoll; i++)
                    nb += B->it[B->coll[i]].comm == c;
                rc = sim_errf(err, "%s (rank %d) has %d collectives%s in the step, %s (rank %d) has %d: the traces "
                              "are not of one step of one job", B->path, B->rank, nb, grp, A->path, A->rank, na);
            }
        }
    }
    free(all);
    return rc;
}

/* The n-th send from a to b is the n-th receive of b from a (NCCL's order
 * on the pair): their counts and sizes must agree. */
static int match_p2p(rank_in *R, const int *by_rank, int nranks, sim_err *err)
{
    for (int a = 0; a < nranks; a++) {
        const rank_in *A = &R[by_rank[a]];
        for (int b = 0; b < nranks; b++) {
            const rank_in *B = &R[by_rank[b]];
            int ia = 0, ib = 0, nth = 0;
            for (;; nth++) {
                while (ia < A->np2p && (A->it[A->p2p[ia]].k->p2p != WL_P2P_SEND || A->it[A->p2p[ia]].k->peer != b))
                    ia++;
                while (ib < B->np2p && (B->it[B->p2p[ib]].k->p2p != WL_P2P_RECV || B->it[B->p2p[ib]].k->peer != a))
                    ib++;
                if (ia == A->np2p || ib == B->np2p)
                    break;
                const wl_kernel *s = A->it[A->p2p[ia++]].k, *r = B->it[B->p2p[ib++]].k;
                char ord[16];
                if (s->bytes != r->bytes)
                    return sim_errf(err, "%s: rank %d's %s send to rank %d is %lld bytes, but %s (rank %d) receives %lld "
                                    "bytes from rank %d there: sends and receives do not match", A->path, a,
                                    ordinal(nth + 1, ord, sizeof ord), b, (long long)s->bytes, B->path, b,
                                    (long long)r->bytes, a);
            }
            if (ia < A->np2p || ib < B->np2p) {
                int ns = 0, nr = 0;
                for (int i = 0; i < A->np2p; i++)
                    ns += A->it[A->p2p[i]].k->p2p == WL_P2P_SEND && A->it[A->p2p[i]].k->peer == b;
                for (int i = 0; i < B->np2p; i++)
                    nr += B->it[B->p2p[i]].k->p2p == WL_P2P_RECV && B->it[B->p2p[i]].k->peer == a;
                if (ns != nr)
                    return sim_errf(err, "%s (rank %d) sends %d message%s to rank %d in the step, but %s (rank %d) "
                                    "receives %d from it: sends and receives do not match", A->path, a, ns,
                                    ns == 1 ? "" : "s", b, B->path, b, nr);
            }
        }
    }
    return 0;
}

/* Every NCCL kernel's communicator (comm_of). */
static int find_comms(rank_in *R, int n, comm_table *T, sim_err *err)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < R[i].ncoll; c++) {
            item *x = &R[i].it[R[i].coll[c]];
            if ((x->comm = comm_of(T, &R[i], x->k, n, err)) < 0)
                return -1;
        }
    return 0;
}

/* Ranks of one machine share its clock: then the steps overlap in time and
 * every rank's collectives end together, and a rank that began its step
 * later arrived later at the first collective, which the others waited
 * for.  Replaying from each rank's own step start would lose that skew, so
 * on a shared clock (all steps of the window overlap) time 0 is the
 * earliest start and each rank begins with its offset as a host delay.
 * Without it (no overlap: separate clocks) every rank starts at 0. */
static void align(rank_in *R, int n, wl_import_info *info)
{
    double first = INFINITY, last_start = -INFINITY, first_end = INFINITY;
    for (int i = 0; i < n; i++) {
        first = fmin(first, R[i].t0);
        last_start = fmax(last_start, R[i].t0);
        first_end = fmin(first_end, R[i].t0 + info->rank[R[i].rank].step_s * 1e6);
    }
    info->shared_clock = n > 1 && last_start < first_end;
    for (int i = 0; i < n; i++) {
        R[i].base = info->shared_clock ? first : R[i].t0;
        info->rank[R[i].rank].offset_s = (R[i].t0 - R[i].base) * 1e-6;
    }
}

/* ---- the import ----------------------------------------------------------- */

static int prepare_rank(rank_in *R, int nranks, const wl_import_opts *o, wl_import_rank *info, sim_err *err)
{
    info->path = R->path;
    snprintf(info->device, sizeof info->device, "%s", wl_kineto_device(R->t));
    if (pick_window(R, o->step, info, err) < 0)
        return -1;
    gather(R);
    if (!R->n)
        return sim_errf(err, "%s: no GPU kernels in %s", R->path, info->step[0] ? info->step : "the trace");
    R->coll = sim_xcalloc((size_t)R->n, sizeof *R->coll, "the imported collectives");
    R->p2p = sim_xcalloc((size_t)R->n, sizeof *R->p2p, "the imported sends and receives");
    info->et_join = R->join;
    info->et = R->et_path;
    double last_end = R->t0;
    for (int i = 0; i < R->n; i++) {
        const item *x = &R->it[i];
        last_end = fmax(last_end, end_us(x));
        info->copies += x->copy;
        info->kernels += !x->copy;
        if (!x->copy && x->k->cls == WL_K_NCCL) {
            if (nccl_check(R, x, nranks, err) < 0)
                return -1;
            if (x->k->coll < 0)
                R->p2p[R->np2p++] = i;
            else
                R->coll[R->ncoll++] = i;
        }
    }
    info->collectives = R->ncoll;
    info->p2p = R->np2p;
    /* a step that does not wait for the GPU at its end (no synchronisation
     * inside the annotation) ends when its last launched work does */
    info->step_s = fmax(info->step_s, (last_end - R->t0) * 1e-6);
    info->waits_recorded = wl_kineto_nwaits(R->t) > 0;
    info->waits = info->waits_recorded ? recorded_deps(R) : infer_deps(R);
    if (R->producer)
        info->et_join.deps = data_deps(R);
    if (o->reprice) {
        const char *model = wl_kineto_catalog_gpu(info->device);
        if (!model)
            return sim_errf(err, "%s: the trace's GPU \"%s\" is not in the catalogue: repricing needs its peak "
                            "FLOP/s and memory bandwidth", R->path, info->device[0] ? info->device : "(not recorded)");
        if (plat_gpu_lookup_info(model, &R->src, NULL, err) < 0)
            return sim_err_prefix(err, "%s: ", R->path);
    }
    return 0;
}

static void free_ranks(rank_in *R, int n)
{
    for (int i = 0; R && i < n; i++) {
        wl_kineto_free(R[i].t);
        free(R[i].it);
        free(R[i].sid);
        free(R[i].coll);
        free(R[i].p2p);
        free(R[i].kx);
        free(R[i].producer);
        wl_et_free(R[i].et);
    }
    free(R);
}

sim_schedule *wl_import_kineto(const char *const *paths, int n, const wl_import_opts *o, wl_import_info *info,
                               sim_err *err)
{
    wl_import_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    if (n < 1 || n > SIM_MAX_GPUS) {
        sim_errf(err, "import: %d traces given (1..%d, one per rank)", n, SIM_MAX_GPUS);
        return NULL;
    }
    rank_in *R = sim_xcalloc((size_t)n, sizeof *R, "the imported traces");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        R[i].path = paths[i];
        R[i].t = wl_kineto_load(paths[i], err);
        rc = R[i].t ? 0 : -1;
        R[i].et_path = o->et ? o->et[i] : NULL;
        if (!rc && R[i].et_path && !(R[i].et = wl_et_load(o->et[i], err)))
            rc = -1;
        if (!rc && R[i].et &&
            !(R[i].kx = wl_et_join(R[i].et, o->et[i], R[i].t, paths[i], n, &R[i].join, &R[i].producer, err)))
            rc = -1;
    }
    info->nranks = n;
    info->rank = sim_xcalloc((size_t)n, sizeof *info->rank, "the import summary");
    int *by_rank = sim_xcalloc((size_t)n, sizeof *by_rank, "the imported ranks");
    if (!rc)
        rc = assign_ranks(R, n, info, err);
    for (int i = 0; i < n && !rc; i++) {
        by_rank[R[i].rank] = i;
        rc = prepare_rank(&R[i], n, o, &info->rank[R[i].rank], err);
    }
    comm_table T = {1, 0, NULL, NULL}; /* entry 0: every rank */
    if (!rc)
        rc = find_comms(R, n, &T, err);
    if (!rc)
        rc = match_collectives(R, by_rank, n, &T, err);
    if (!rc)
        rc = match_p2p(R, by_rank, n, err);
    if (!rc) {
        align(R, n, info);
        for (int i = 0; i < n; i++)
            host_delays(&R[i], &info->rank[R[i].rank]);
    }
    sim_schedule *s = NULL;
    if (!rc) {
        s = sim_sched_new(n);
        snprintf(s->meta.name, sizeof s->meta.name, "kineto import: %d rank%s, %s", n, n == 1 ? "" : "s",
                 info->rank[0].step[0] ? info->rank[0].step : "whole trace");
        int *all = sim_xcalloc((size_t)n, sizeof *all, "the world communicator");
        for (int r = 0; r < n; r++)
            all[r] = r;
        int *comm = sim_xcalloc((size_t)T.n, sizeof *comm, "the communicators");
        comm[0] = sim_sched_comm(s, "world", all, n);
        free(all);
        for (int c = 1; c < T.n; c++) {
            char name[256];
            describe_group(&T, c, name, sizeof name);
            comm[c] = sim_sched_comm(s, name + 4, T.ranks[c], T.size[c]); /* "process group [..]" */
        }
        for (int r = 0; r < n; r++)
            emit_rank(s, &R[by_rank[r]], comm, &T, o, &info->rank[r]);
        free(comm);
    }
    /* what a trace implies may still be no schedule (a communicator used
     * from two streams, waits that deadlock): refused here with the check's
     * words, so that no caller gets a schedule that cannot run */
    if (s && sim_sched_check(s, err) < 0) {
        sim_sched_free(s);
        s = NULL;
    }
    for (int c = 1; c < T.n; c++)
        free(T.ranks[c]);
    free(T.ranks);
    free(T.size);
    free(by_rank);
    free_ranks(R, n);
    if (!s || info == &local)
        wl_import_info_free(info);
    return s;
}

void wl_import_info_free(wl_import_info *info)
{
    if (!info)
        return;
    free(info->rank);
    info->rank = NULL;
}

/* ---- the recorded side of a side-by-side timeline ------------------------ */

double wl_import_replay_start_us(const sim_schedule *s, int rank)
{
    double lead = INFINITY;
    for (uint32_t i = 0; i < s->nstreams; i++) {
        const sim_stream *S = &s->streams[i];
        if (S->rank != rank || !S->nops)
            continue;
        if (s->ops[S->ops[0]].ndeps) /* starts after another stream's work, not at time 0 */
            continue;
        const sim_payload *p = sim_sched_payload_of(s, S->ops[0]);
        lead = fmin(lead, p->kind == SIM_OP_COMPUTE && p->sub == SIM_KERNEL_DELAY ? p->seconds * 1e6 : 0);
    }
    return isfinite(lead) ? lead : 0;
}

static void recorded_event(FILE *f, int pid, const wl_kernel *k, double t0)
{
    char *name = sim_json_quote(k->name ? k->name : "?");
    double ts = k->ts_us - t0;
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":%s}", pid, k->stream,
            ts, k->dur_us, name);
    free(name);
}

char *wl_import_recorded_events(const char *path, int step, int pid, const char *label, double first_us,
                                sim_err *err)
{
    wl_kineto *t = wl_kineto_load(path, err);
    if (!t)
        return NULL;
    int pick = pick_step(t, path, step, err);
    if (pick < -1) {
        wl_kineto_free(t);
        return NULL;
    }
    int nk = wl_kineto_nkernels(t), nc = wl_kineto_ncopies(t);
    /* the step's window on the trace clock (the whole trace without markers) */
    double t_lo = pick >= 0 ? wl_kineto_step_ts_us(t, pick) : -INFINITY;
    double t1 = pick >= 0 ? t_lo + wl_kineto_step_us(t, pick) : INFINITY;
    double first = INFINITY, t0 = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < (c ? nc : nk); i++) {
            const wl_kernel *k = c ? wl_kineto_copy(t, i) : wl_kineto_kernel(t, i);
            double key = key_us(k);
            if (key >= t_lo && key < t1)
                first = fmin(first, k->ts_us);
        }
    t0 = isfinite(first) ? first - first_us : 0; /* the first event at first_us */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        wl_kineto_free(t);
        sim_errf(err, "%s: out of memory for the recorded timeline", path);
        return NULL;
    }
    char *q = sim_json_quote(label);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":%s}}", pid, q);
    free(q);
    int *seen = sim_xcalloc((size_t)(nk + nc) + 1, sizeof *seen, "the recorded streams");
    int nseen = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < (c ? nc : nk); i++) {
            const wl_kernel *k = c ? wl_kineto_copy(t, i) : wl_kineto_kernel(t, i);
            double key = key_us(k);
            if (!(key >= t_lo && key < t1))
                continue;
            int j = 0;
            while (j < nseen && seen[j] != k->stream)
                j++;
            if (j == nseen) {
                seen[nseen++] = k->stream;
                fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
                           "\"stream %d (recorded)\"}}", pid, k->stream, k->stream);
            }
            recorded_event(f, pid, k, t0);
        }
    free(seen);
    wl_kineto_free(t);
    if (fclose(f) != 0) {
        free(buf);
        sim_errf(err, "%s: out of memory for the recorded timeline", path);
        return NULL;
    }
    return buf;
}
