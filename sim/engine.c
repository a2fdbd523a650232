/* engine.c — runs a schedule on a SimGrid platform.
 *
 * One actor per (GPU rank, stream) walks its operations in order.  A
 * dependency on another stream's operation is a wait until that stream's
 * position passes it (CUDA events without a per-event object, since "op
 * done" is just "stream position > op.seq"): wait_deps, finish_op.
 * Compute kernels execute on the GPU host (speed 1e9, so 1e9 flops = 1 s of
 * kernel time; concurrent kernels on one GPU share it).  Messages and
 * collectives are SimGrid communications between GPU hosts, so contention
 * comes from the flow model.  Collectives are decomposed in collectives.c.
 *
 * Overlap interference (papers.md 3.2: Galvatron measured 1.3x on a PCIe
 * server, 1.126x on A100): while a collective or a send of a GPU is in
 * flight, a background load bounded at (1 - 1/f) of the GPU host's speed
 * runs beside its kernels (started when both are in flight), so a lone
 * kernel runs at 1/f of its speed (f =
 * the GPU's overlap_compute); a collective or send that starts while a
 * kernel of its GPU runs moves overlap_comm times the bytes (its NCCL kernel
 * gets fewer SMs and less memory bandwidth).  Receives are not counted: the
 * sender's GPU stands for the transfer.  Both rules give the same result
 * whatever order SimGrid runs the events of one instant in: the background
 * load is a rate, and a transfer looks at the kernels once every event of
 * its starting instant has run (sim_engine_comm_factor).
 *
 * Power (sim_gpu.power_*, H100/H200): before the run each GPU's tensor
 * load over the whole schedule sets the rate of its GEMM and attention
 * kernels (power_states): a GPU that runs mostly large GEMMs is held at its
 * board power limit at a lower clock.
 *
 * Time accounting: each rank keeps the intervals during which a compute
 * kernel ran and those during which communication ran; the breakdown is
 * computed from their unions at the end.  A receive counts from the moment
 * its data could start moving (both sides posted), so a pre-posted receive
 * waiting for an upstream stage is idle (bubble), not communication.
 *
 * This file owns the one SimGrid engine of the process: started by sim_run(),
 * or once by sim_preload() for every simulation forked afterwards. */
#define _GNU_SOURCE /* memfd_create */
#include "engine.h"
#include "alloc.h"
#include "fileio.h"
#include "json.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <xbt/dynar.h>

#include "costmodel.h"
#include "engine_internal.h"

#undef E
static sim_engine engine_state;
#define E engine_state

sim_engine *sim_engine_state(void) { return &engine_state; }

void sim_options_default(sim_options *o)
{
    memset(o, 0, sizeof *o);
    o->coll_mode = SIM_COLLMODE_AUTO;
    o->step_max_ring = 4;
    o->chunk_bytes = 4 << 20;
    o->tree_chunk_bytes = 512 << 10;
}

/* ---- interval accounting ---------------------------------------------- */

static void ivl_add(sim_ivlist *l, double a, double b)
{
    if (b <= a)
        return;
    if (l->n && a <= l->v[l->n - 1].b && a >= l->v[l->n - 1].a) {
        if (b > l->v[l->n - 1].b)
            l->v[l->n - 1].b = b;
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = sim_xrealloc(l->v, l->cap, sizeof *l->v, "a GPU's busy intervals");
    }
    l->v[l->n++] = (sim_ivl){a, b};
}

static int cmp_ivl(const void *x, const void *y)
{
    const sim_ivl *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a ? 1 : (a->b < b->b ? -1 : a->b > b->b);
}

/* Sorts and merges in place; returns the total length. */
static double ivl_union(sim_ivlist *l)
{
    if (!l->n)
        return 0;
    qsort(l->v, l->n, sizeof *l->v, cmp_ivl);
    uint32_t w = 0;
    for (uint32_t i = 1; i < l->n; i++) {
        if (l->v[i].a <= l->v[w].b) {
            if (l->v[i].b > l->v[w].b)
                l->v[w].b = l->v[i].b;
        } else {
            l->v[++w] = l->v[i];
        }
    }
    l->n = w + 1;
    double t = 0;
    for (uint32_t i = 0; i < l->n; i++)
        t += l->v[i].b - l->v[i].a;
    return t;
}

/* Length of the intersection of two merged, sorted lists. */
static double ivl_overlap(const sim_ivlist *x, const sim_ivlist *y)
{
    double t = 0;
    uint32_t i = 0, j = 0;
    while (i < x->n && j < y->n) {
        double a = fmax(x->v[i].a, y->v[j].a), b = fmin(x->v[i].b, y->v[j].b);
        if (b > a)
            t += b - a;
        if (x->v[i].b < y->v[j].b)
            i++;
        else
            j++;
    }
    return t;
}

/* ---- overlap interference ---------------------------------------------- */

/* The background load runs only while both a communication and a kernel of
 * the GPU are in flight (it has nothing to slow otherwise), so schedules
 * that never overlap the two pay nothing for it. */
static void bg_start(int rank)
{
    const sim_gpu *g = &E.m->gpus[E.m->gpu_model[rank]];
    if (!E.bg[rank] && g->overlap_compute > 1) {
        E.bg[rank] = sg_actor_exec_init(1e30);
        sg_exec_set_bound(E.bg[rank], 1e9 * (1 - 1 / g->overlap_compute));
        sg_exec_start(E.bg[rank]);
    }
}

static void comm_begin(int rank)
{
    if (E.comm_busy[rank]++ == 0 && E.kern_busy[rank] > 0)
        bg_start(rank);
}

static void comm_end(int rank)
{
    if (--E.comm_busy[rank] == 0 && E.bg[rank]) {
        sg_exec_cancel(E.bg[rank]);
        E.bg[rank] = NULL;
    }
}

/* Whether a kernel is in flight when a transfer starts must not depend on
 * the order in which SimGrid runs the actors of one instant (a kernel that
 * starts or ends at that very instant, seen or not by who runs first).  So
 * the transfer waits one timing quantum, after every event of its instant:
 * a kernel starting now counts, one ending now does not, whatever the
 * order. */
#define SETTLE_S 1e-9 /* SimGrid's timing precision: a shorter sleep is rounded up to it */

double sim_engine_comm_factor(int rank)
{
    double f = E.m->gpus[E.m->gpu_model[rank]].overlap_comm;
    if (f == 1)
        return 1;
    sg_actor_sleep_for(SETTLE_S);
    return E.kern_busy[rank] > 0 ? f : 1.0;
}

/* ---- the stream actor -------------------------------------------------- */

/* A dependency is a wait until the other stream's position passes the
 * operation (a CUDA event without an object).  The waiter files itself on
 * that stream's list and sleeps on its own semaphore; finish_op wakes
 * exactly the waiters it satisfies.  Actors switch only at SimGrid calls,
 * so the list needs no lock. */
#define NO_WAITER UINT32_MAX

static void wait_deps(uint32_t self, const sim_op *o)
{
    for (uint32_t k = 0; k < o->ndeps; k++) {
        const sim_op *d = &E.s->ops[E.s->deps[o->dep_first + k]];
        if (E.pos[d->stream] > d->seq)
            continue;
        E.wait_seq[self] = d->seq;
        E.wait_next[self] = E.wait_head[d->stream];
        E.wait_head[d->stream] = self;
        sg_sem_acquire(E.sem[self]);
    }
}

static double now_wall(void);

/* Every 4,096 operations, a look at the wall clock for the progress call. */
static void progress_tick(void)
{
    if (!E.opt.progress || (++E.ops_done & 4095))
        return;
    double w = now_wall();
    if (w < E.next_progress)
        return;
    E.next_progress = w + 0.5;
    sim_progress p = {simgrid_get_clock(), E.ops_done, E.s->nops, w - E.wall0};
    E.opt.progress(E.opt.progress_ctx, &p);
}

/* sim_options.pace: the end of the pace rank's backward operations, per
 * micro-batch (a merged run of kernels ends all of them at its end). */
static void note_pace(uint32_t stream)
{
    const sim_op *o = &E.s->ops[E.s->streams[stream].ops[E.pos[stream]]];
    if (o->phase == SIM_PHASE_BACKWARD && o->micro >= 0 && o->micro < E.res->nmicro)
        E.res->micro_end[o->micro] = simgrid_get_clock();
}

static void finish_op(uint32_t stream)
{
    progress_tick();
    if (E.res->micro_end && E.s->streams[stream].rank == E.opt.pace_rank)
        note_pace(stream);
    uint32_t pos = ++E.pos[stream];
    for (uint32_t *link = &E.wait_head[stream]; *link != NO_WAITER;) {
        uint32_t w = *link;
        if (E.wait_seq[w] < pos) {
            *link = E.wait_next[w];
            sg_sem_release(E.sem[w]);
        } else {
            link = &E.wait_next[w];
        }
    }
}

/* Filled before the run for every kernel an op runs (kernel_times). */
static double cost_seconds(uint32_t op, int rank)
{
    return E.kernel_s[(size_t)E.s->ops[op].payload * (size_t)E.m->nmodels + (size_t)E.m->gpu_model[rank]];
}

/* A kernel's time on its rank: a straggler's (--slow) take longer, and a
 * tensor-core kernel on a GPU held at its power limit (power_slow). */
static double kernel_seconds(uint32_t op, int rank)
{
    double t = cost_seconds(op, rank);
    if (E.power_slow && E.power_slow[rank] != 1 && sim_cost_is_tensor(sim_sched_payload_of(E.s, op)))
        t *= E.power_slow[rank];
    return E.m->compute_slow ? t * E.m->compute_slow[rank] : t;
}

/* The power state of each GPU (sim_gpu.power_*): its tensor load, the
 * time-weighted mean of its kernels' (sim_cost_tensor_load) over the whole
 * schedule, sets the rate of its tensor-core kernels.  A GPU whose kernels
 * are mostly large GEMMs draws its board power limit and lowers its clock;
 * one that interleaves memory-bound work stays cooler (h100-micro/duty.csv).
 * Idle and communication time are not counted: an upper bound on the load. */
static void power_states(void)
{
    const sim_schedule *s = E.s;
    int any = 0;
    for (int i = 0; i < E.m->nmodels; i++)
        any |= E.m->gpus[i].power_n > 0;
    if (!any)
        return;
    double *tc = sim_xcalloc((size_t)s->nranks + 1, sizeof *tc, "the power states");
    double *all = sim_xcalloc((size_t)s->nranks + 1, sizeof *all, "the power states");
    for (uint32_t op = 0; op < s->nops; op++) {
        const sim_payload *p = sim_sched_payload_of(s, op);
        if (p->kind != SIM_OP_COMPUTE || p->sub == SIM_KERNEL_DELAY)
            continue;
        int r = sim_sched_rank_of(s, op);
        double t = cost_seconds(op, r);
        all[r] += t;
        tc[r] += t * sim_cost_tensor_load(&E.m->gpus[E.m->gpu_model[r]], p, t);
    }
    E.power_slow = sim_xcalloc((size_t)s->nranks + 1, sizeof *E.power_slow, "the power states");
    for (int r = 0; r < s->nranks; r++)
        E.power_slow[r] = 1 / sim_cost_power_rate(&E.m->gpus[E.m->gpu_model[r]], all[r] > 0 ? tc[r] / all[r] : 0);
    free(tc);
    free(all);
}

/* Every compute op's time on its GPU, once per (payload, GPU model); a time
 * SimGrid's double clock cannot hold (beyond SIM_MAX_SECONDS) is an error
 * naming the op, not a simulation that never ends. */
static int kernel_times(sim_err *err)
{
    const sim_schedule *s = E.s;
    size_t n = (size_t)s->npayloads * (size_t)E.m->nmodels;
    E.kernel_s = sim_xcalloc(n + 1, sizeof *E.kernel_s, "the kernel times");
    for (size_t i = 0; i < n; i++)
        E.kernel_s[i] = -1;
    for (uint32_t op = 0; op < s->nops; op++) {
        const sim_payload *p = sim_sched_payload_of(s, op);
        int model = E.m->gpu_model[sim_sched_rank_of(s, op)];
        double *slot = &E.kernel_s[(size_t)s->ops[op].payload * (size_t)E.m->nmodels + (size_t)model];
        if (p->kind != SIM_OP_COMPUTE || *slot >= 0)
            continue;
        *slot = sim_cost_kernel(&E.m->gpus[model], p);
        if (!(*slot >= 0 && *slot <= SIM_MAX_SECONDS)) {
            char d[320];
            sim_sched_describe(s, op, d, sizeof d);
            return sim_errf(err, "%s: the kernel takes %g s on a %s, more than the %g s a simulation can time", d,
                            *slot, E.m->gpus[model].model, SIM_MAX_SECONDS);
        }
    }
    return 0;
}

static int is_depended_on(uint32_t op) { return (E.depended[op >> 3] >> (op & 7)) & 1; }

/* Consecutive kernels of one stream run as one execution when nothing
 * outside the stream can observe the boundary between them (no dependency
 * into or out of it).  A trace shows such a run as one slice, so asking for
 * one does not change what is simulated; --trace-detail (trace_detail)
 * runs every kernel on its own, for exact kernel boundaries in the trace
 * (a communication starting at a boundary then sees no kernel running, so
 * interference may differ from the untraced run by a few instants).  Host
 * delays (trace replay) are not kernels: the stream sleeps through them. */
static int is_kernel(const sim_payload *p) { return p->kind == SIM_OP_COMPUTE && p->sub != SIM_KERNEL_DELAY; }

static int can_merge(uint32_t a, uint32_t b)
{
    const sim_op *ob = &E.s->ops[b];
    return !E.opt.trace_detail && !is_depended_on(a) && ob->ndeps == 0 && is_kernel(&E.s->payloads[ob->payload]);
}

typedef struct send_note {
    double posted;   /* when the send started */
    uint32_t stream; /* the sender's stream (the trace's arrow starts there) */
} send_note;

static sg_mailbox_t p2p_mailbox(int src, int dst, int tag)
{
    char name[64];
    snprintf(name, sizeof name, "p%d>%d#%d", src, dst, tag);
    return sg_mailbox_by_name(name);
}

static void apply_memory(int rank, const sim_payload *p)
{
    E.mem[rank] += (double)p->bytes;
    E.mem_kind[(size_t)rank * SIM_MEM_KIND_COUNT + p->sub] += (double)p->bytes;
    if (E.mem[rank] > E.res->rank[rank].peak_mem) {
        E.res->rank[rank].peak_mem = E.mem[rank];
        memcpy(E.res->rank[rank].peak_by_kind, &E.mem_kind[(size_t)rank * SIM_MEM_KIND_COUNT],
               sizeof E.res->rank[rank].peak_by_kind);
    }
    /* the memory timeline: a counter track per GPU in the trace, a CSV line per effect */
    const double *k = &E.mem_kind[(size_t)rank * SIM_MEM_KIND_COUNT];
    if (E.trace)
        sim_trace_memory(rank, k);
    if (E.memlog) {
        fprintf(E.memlog, "%.9f,%d,%s,", simgrid_get_clock(), rank, sim_mem_kind_name(p->sub));
        sim_csv_fputs(E.memlog, p->name >= 0 ? sim_sched_strname(E.s, p->name) : "");
        fprintf(E.memlog, ",%lld,%.0f", (long long)p->bytes, E.mem[rank]);
        for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
            fprintf(E.memlog, ",%.0f", k[i]);
        fputc('\n', E.memlog);
    }
}

static void stream_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint32_t st = (uint32_t)(uintptr_t)sg_actor_self_get_data();
    const sim_stream *S = &E.s->streams[st];
    int rank = S->rank;
    uint32_t k = 0;
    while (k < S->nops) {
        uint32_t op = S->ops[k];
        const sim_op *o = &E.s->ops[op];
        const sim_payload *p = &E.s->payloads[o->payload];
        wait_deps(st, o);
        double t0 = simgrid_get_clock();
        switch (p->kind) {
        case SIM_OP_COMPUTE: {
            if (!is_kernel(p)) { /* a host delay: the stream waits, the GPU is free (idle, not compute);
                                    the host's pace, not the GPU's, so a straggler's is the same */
                sg_actor_sleep_for(cost_seconds(op, rank));
                break;
            }
            double secs = kernel_seconds(op, rank);
            double *kc = &E.kclass_s[(size_t)rank * SIM_KCLASS_COUNT];
            int cls = sim_kclass_of(p->sub); /* every kernel kind has a class (-1: host delays) */
            if (cls >= 0)
                kc[cls] += secs;
            uint32_t last = k;
            while (last + 1 < S->nops && can_merge(S->ops[last], S->ops[last + 1])) {
                uint32_t next = S->ops[++last];
                double t = kernel_seconds(next, rank);
                cls = sim_kclass_of(sim_sched_payload_of(E.s, next)->sub);
                if (cls >= 0)
                    kc[cls] += t;
                secs += t;
            }
            if (E.kern_busy[rank]++ == 0 && E.comm_busy[rank] > 0)
                bg_start(rank);
            if (secs > 0)
                sg_actor_execute(secs * 1e9);
            E.kern_busy[rank]--;
            E.execs++;
            double t1 = simgrid_get_clock();
            ivl_add(&E.compute[rank], t0, t1);
            if (E.trace)
                sim_trace_kernels(S, k, last, rank, t0, t1);
            for (; k <= last; k++)
                finish_op(st);
            continue;
        }
        case SIM_OP_MEMORY:
            apply_memory(rank, p);
            break;
        case SIM_OP_COLLECTIVE:
            comm_begin(rank);
            sim_coll_run(st, o->arg, rank, p);
            comm_end(rank);
            ivl_add(&E.comm[rank], t0, simgrid_get_clock());
            break;
        case SIM_OP_SEND: {
            send_note *note = sim_xmalloc(sizeof *note, "a message in flight");
            note->posted = t0;
            note->stream = st;
            comm_begin(rank);
            double staged = fmin((double)p->bytes, SIM_STAGE_FIFO_BYTES);
            sim_staging_hold(rank, o->arg, staged);
            sg_comm_t c = sg_mailbox_put_async(p2p_mailbox(rank, o->arg, p->tag), note,
                                               (long)((double)p->bytes * sim_engine_comm_factor(rank)));
            E.flows++;
            sg_comm_wait(c);
            sim_staging_hold(rank, o->arg, -staged);
            comm_end(rank);
            ivl_add(&E.comm[rank], t0, simgrid_get_clock());
            sim_engine_trace_transfer(st, o->arg, (double)p->bytes, t0, simgrid_get_clock());
            break;
        }
        case SIM_OP_RECV: {
            void *data = NULL;
            sg_comm_t c = sg_mailbox_get_async(p2p_mailbox(o->arg, rank, p->tag), &data);
            sg_comm_wait(c);
            send_note *note = data;
            double start = fmax(t0, note ? note->posted : t0);
            if (E.trace && note)
                sim_trace_flow(note->stream, note->posted, simgrid_get_clock(), st, start, simgrid_get_clock());
            free(note);
            ivl_add(&E.comm[rank], start, simgrid_get_clock());
            t0 = start;
            break;
        }
        }
        if (E.trace && p->kind != SIM_OP_MEMORY)
            sim_trace_op(op, t0, simgrid_get_clock());
        finish_op(st);
        k++;
    }
}

/* ---- setup and results ------------------------------------------------- */

/* The platform text as a file SimGrid can open: an anonymous memory file
 * named by /proc/self/fd/N, so that nothing is on disk for a signal, an
 * abort or a kill to leave behind; where memfd is missing, a temporary file
 * in $TMPDIR registered for removal (outfile.h).  *fd is the memory file or
 * -1, *slot the registry slot of the temporary file or -1. */
static int write_platform(const sim_machine *m, char *path, size_t len, int *fd, int *slot, sim_err *err)
{
    size_t n = strlen(m->platform_xml);
    *slot = -1;
    *fd = memfd_create("trainsim-platform.xml", MFD_CLOEXEC);
    if (*fd >= 0) {
        snprintf(path, len, "/proc/self/fd/%d", *fd);
        if (access(path, R_OK) == 0 && sim_write_all(*fd, m->platform_xml, n) == 0)
            return 0;
        close(*fd);
        *fd = -1;
    }
    const char *dir = getenv("TMPDIR");
    snprintf(path, len, "%s/trainsim-platform-XXXXXX.xml", dir && *dir ? dir : "/tmp");
    int tfd = mkstemps(path, 4);
    if (tfd < 0)
        return sim_errf(err, "cannot create a temporary platform file (%s): %s", path, strerror(errno));
    *slot = sim_tmp_register(path);
    int bad = sim_write_all(tfd, m->platform_xml, n) != 0;
    close(tfd);
    if (bad) {
        unlink(path);
        sim_tmp_unregister(*slot);
        return sim_errf(err, "cannot write the temporary platform file %s", path);
    }
    return 0;
}

static double now_wall(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static int report_stuck(sim_err *err)
{
    char buf[sizeof err->msg];
    int w = snprintf(buf, sizeof buf, "the simulation stopped with operations that can never run:");
    int shown = 0;
    for (uint32_t st = 0; st < E.s->nstreams && shown < 6; st++) {
        if (E.pos[st] >= E.s->streams[st].nops)
            continue;
        char d[320];
        sim_sched_describe(E.s, E.s->streams[st].ops[E.pos[st]], d, sizeof d);
        if (w > 0 && (size_t)w < sizeof buf)
            w += snprintf(buf + w, sizeof buf - (size_t)w, "\n  %s", d);
        shown++;
    }
    return sim_errf(err, "%s", buf);
}

/* Each actor's stack (SimGrid's contexts/stack-size), in KiB. */
#define ACTOR_STACK_KIB 8192
#define STR_(x) #x
#define STR(x) STR_(x)

/* Starts SimGrid and loads the machine's platform: the fixed cost of a
 * simulation (the platform file, SimGrid's options, the XML parse). */
static int engine_start(const sim_machine *m, sim_err *err)
{
    char platform_path[4200];
    int fd, slot;
    if (write_platform(m, platform_path, sizeof platform_path, &fd, &slot, err) < 0)
        return -1;
    /* CM02 without TCP artefacts gives bytes / bottleneck + latency exactly
     * (simgrid-notes.md); the fair-bottleneck solver shares a link evenly
     * between flows, as PCIe, NVLink and credit-based fabrics do, instead of
     * TCP's weighting by round-trip time. */
    static char *argv[] = {"trainsim",
                           "--cfg=network/model:CM02",
                           "--cfg=network/crosstraffic:0",
                           "--cfg=network/TCP-gamma:0",
                           "--cfg=network/solver:fairbottleneck",
                           "--cfg=contexts/stack-size:" STR(ACTOR_STACK_KIB),
                           "--log=root.thres:critical",
                           "--log=xbt_exception.thres:error", /* parse errors: SimGrid's last words */
                           "--log=root.app:stderr",
                           NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
#ifdef TRAINSIM_SANITIZE
    /* AddressSanitizer cannot follow SimGrid's hand-made context switches */
    static char thread_ctx[] = "--cfg=contexts/factory:thread";
    argv[5] = thread_ctx;
#endif
    simgrid_init(&argc, argv);
    simgrid_load_platform(platform_path);
    if (fd >= 0)
        close(fd);
    else
        unlink(platform_path);
    sim_tmp_unregister(slot);
    return 0;
}

/* ---- checking a platform as SimGrid sees it ---------------------------- */

/* What the probe child found, in memory shared with the parent: which pair
 * it was routing when it died, or the problem it reported. */
typedef struct probe_state {
    int stage;    /* 0 loading, 1 hosts and links, 2 routes, 3 done */
    int a, b;     /* the ranks being routed */
    char msg[1024];
} probe_state;

/* The routes between every pair of GPU hosts, from an actor: SimGrid seals
 * its routing zones when the simulation starts, and asking for a route
 * across zones before that fails inside SimGrid.  Beyond PROBE_ALL_PAIRS
 * GPUs (a million route queries, ~3 s), each GPU is routed to and from the
 * GPUs of its own node and rank 0. */
#define PROBE_ALL_PAIRS 1024
static struct {
    const sim_machine *m;
    sg_host_t *h;
    probe_state *ps;
} probe;

static void probe_routes(int argc, char **argv)
{
    (void)argc, (void)argv;
    const sim_machine *m = probe.m;
    probe_state *ps = probe.ps;
    xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            if (probe.h[a] == probe.h[b] ||
                (m->ngpus > PROBE_ALL_PAIRS && a && b && m->node[a] != m->node[b]))
                continue;
            ps->a = a, ps->b = b;
            xbt_dynar_reset(route);
            sg_host_get_route(probe.h[a], probe.h[b], route);
            if (xbt_dynar_is_empty(route) && !(sg_host_get_route_latency(probe.h[a], probe.h[b]) > 0)) {
                snprintf(ps->msg, sizeof ps->msg, "no route from host \"%s\" (rank %d) to host \"%s\" (rank %d)",
                         m->host[a], a, m->host[b], b);
                return;
            }
        }
    xbt_dynar_free(&route);
    ps->stage = 3;
}

static void probe_child(const sim_machine *m, int routes, probe_state *ps)
{
    sim_err e;
    if (engine_start(m, &e) < 0) {
        snprintf(ps->msg, sizeof ps->msg, "%.1000s", e.msg);
        return;
    }
    ps->stage = 1;
    sg_host_t *h = sim_xcalloc((size_t)m->ngpus, sizeof *h, "the platform's hosts");
    for (int r = 0; r < m->ngpus; r++) {
        if (!(h[r] = sg_host_by_name(m->host[r]))) {
            snprintf(ps->msg, sizeof ps->msg, "no host named \"%s\" for rank %d", m->host[r], r);
            return;
        }
        /* kernels run seconds x 1e9 flops (engine.c) */
        if (sg_host_get_speed(h[r]) != 1e9) {
            snprintf(ps->msg, sizeof ps->msg, "GPU host \"%s\": speed %g flop/s; GPU hosts need speed=\"1Gf\" "
                     "(kernel times come from the cost model, not the host speed)", m->host[r],
                     sg_host_get_speed(h[r]));
            return;
        }
    }
    /* SimGrid's solver fails ("The Impossible Did Happen") when transfer
     * times leave the range its double clock resolves */
    sg_link_t *links = sg_link_list();
    for (size_t i = 0; i < sg_link_count(); i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        if (!(bw >= 1e3 && bw <= 1e15) || !(lat >= 0 && lat <= 1)) {
            snprintf(ps->msg, sizeof ps->msg, "link \"%s\": bandwidth %g B/s, latency %g s (expected a bandwidth in "
                     "[1 kB/s, 1 PB/s] and a latency in [0, 1] s)", sg_link_get_name(links[i]), bw, lat);
            free(links);
            return;
        }
    }
    free(links);
    ps->stage = 2;
    if (!routes) {
        ps->stage = 3;
        return;
    }
    probe.m = m, probe.h = h, probe.ps = ps;
    sg_actor_create("probe", h[0], probe_routes, 0, NULL);
    simgrid_run();
}

/* SimGrid's own message from what the child printed: the text after the
 * first "CRITICAL] " or "ERROR] ", without the exception's type, with the
 * memory file's name (engine_start) replaced by the platform's. */
static void simgrid_message(const char *out, const char *name, char *msg, size_t n)
{
    const char *c = strstr(out, "CRITICAL] "), *e = strstr(out, "ERROR] ");
    if (!c || (e && e < c))
        c = e ? e + 7 : NULL;
    else
        c += 10;
    if (!c) {
        snprintf(msg, n, "SimGrid stopped without a message");
        return;
    }
    if (!strncmp(c, "Uncaught exception ", 19)) {
        const char *colon = strstr(c, ": ");
        if (colon)
            c = colon + 2;
    }
    size_t len = strcspn(c, "\n");
    const char *fd = strstr(c, "/proc/self/fd/");
    if (fd && fd < c + len) {
        size_t skip = strspn(fd + 14, "0123456789");
        snprintf(msg, n, "%.*s%s%.*s", (int)(fd - c), c, name, (int)(len - (size_t)(fd + 14 + skip - c)),
                 fd + 14 + skip);
    } else {
        snprintf(msg, n, "%.*s", (int)(len < 400 ? len : 400), c);
    }
}

int sim_platform_probe(const sim_machine *m, int routes, sim_err *err)
{
    probe_state *ps = mmap(NULL, sizeof *ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ps == MAP_FAILED)
        return sim_errf(err, "cannot map memory: %s", strerror(errno));
    memset(ps, 0, sizeof *ps);
    int out[2];
    if (pipe(out) < 0) {
        munmap(ps, sizeof *ps);
        return sim_errf(err, "cannot create a pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(out[0]), close(out[1]), munmap(ps, sizeof *ps);
        return sim_errf(err, "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) { /* SimGrid's complaints go to the parent, which words the error */
        close(out[0]);
        dup2(out[1], 1);
        dup2(out[1], 2);
        probe_child(m, routes, ps);
        fflush(NULL);
        _exit(ps->stage == 3 ? 0 : 1);
    }
    close(out[1]);
    char text[8192];
    size_t len = 0;
    for (;;) { /* to the end: the child may print more than the pipe holds */
        char buf[4096];
        ssize_t r = read(out[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t k = (size_t)r < sizeof text - 1 - len ? (size_t)r : sizeof text - 1 - len;
        memcpy(text + len, buf, k);
        len += k;
    }
    text[len] = 0;
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int rc = 0;
    if (ps->stage != 3) {
        char sg[512];
        simgrid_message(text, m->name, sg, sizeof sg);
        if (ps->msg[0])
            rc = sim_errf(err, "platform \"%s\": %s", m->name, ps->msg);
        else if (ps->stage == 2)
            rc = sim_errf(err, "platform \"%s\": no usable route from host \"%s\" (rank %d) to host \"%s\" (rank %d): %s",
                          m->name, m->host[ps->a], ps->a, m->host[ps->b], ps->b, sg);
        else
            rc = sim_errf(err, "platform \"%s\": SimGrid cannot load it: %s", m->name, sg);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = sim_errf(err, "platform \"%s\": the checking process failed", m->name);
    }
    munmap(ps, sizeof *ps);
    return rc;
}

/* The platform text sim_preload() loaded, NULL when none: forked children
 * inherit the started engine and only check that their machine matches. */
static char *preloaded;
static int used; /* sim_run() ran in this process */

int sim_preload(const sim_machine *m, sim_err *err)
{
    if (preloaded)
        return strcmp(preloaded, m->platform_xml) == 0
                   ? 0
                   : sim_errf(err, "internal: sim_preload: this process already preloaded another platform");
    if (used)
        return sim_errf(err, "internal: sim_preload after a simulation in this process");
    char *copy = sim_xstrdup(m->platform_xml, "the platform");
    /* SimGrid exits on a platform it cannot load: try it in a child first,
     * so that the caller gets an error instead of dying */
    if (sim_platform_probe(m, 0, err) < 0) {
        free(copy);
        return -1;
    }
    if (engine_start(m, err) < 0) {
        free(copy);
        return -1;
    }
    preloaded = copy;
    return 0;
}

int sim_coll_foldable(const sim_payload *p)
{
    int ring = p->sub == SIM_COLL_ALLREDUCE || p->sub == SIM_COLL_ALLGATHER || p->sub == SIM_COLL_REDUCESCATTER;
    return p->kind == SIM_OP_COLLECTIVE && ring && (p->algo == SIM_ALGO_AUTO || p->algo == SIM_ALGO_RING);
}

/* A folded communicator (sim_comm.whole_ranks) runs only ring
 * collectives (step by step or aggregated, as the whole ring would). */
static int check_fold(const sim_schedule *s, sim_err *err)
{
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *op = &s->ops[i];
        const sim_payload *p = &s->payloads[op->payload];
        if (p->kind != SIM_OP_COLLECTIVE || s->comms[op->arg].whole_ranks <= s->comms[op->arg].nranks)
            continue;
        if (!sim_coll_foldable(p) || s->comms[op->arg].whole_nodes < 1) {
            char d[320];
            sim_sched_describe(s, i, d, sizeof d);
            return sim_errf(err, "%s: a communicator that stands for a larger ring (\"whole\" over 1 or more "
                                 "servers) runs only ring all-reduce, all-gather and reduce-scatter", d);
        }
    }
    return 0;
}

/* Opens the trace and the memory timeline (outfile.h: written beside their
 * targets, renamed into place when the run succeeds). */
static int open_outputs(sim_err *err)
{
    if (sim_trace_open(err) < 0)
        return -1;
    if (E.opt.memory_path) {
        if (!(E.memlog = sim_out_open(&E.memlog_out, E.opt.memory_path, err)))
            return -1;
        fputs("time_s,rank,kind,what,delta_bytes,total_bytes", E.memlog);
        for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
            fprintf(E.memlog, ",%s_bytes", sim_mem_kind_name(i));
        fputc('\n', E.memlog);
    }
    return 0;
}

/* Commits both outputs (ok) or discards what was written (a failed run). */
static int close_outputs(int ok, sim_err *err)
{
    int rc = sim_trace_close(ok, err);
    ok = ok && rc == 0;
    if (E.memlog && ok && sim_out_commit(&E.memlog_out, err) < 0)
        rc = -1;
    sim_out_discard(&E.memlog_out); /* a no-op after a commit */
    E.memlog = NULL;
    return rc;
}

/* ---- degraded links (--degrade) ----------------------------------------- */

/* Divides the bandwidth of the links the machine's patterns name, before
 * the collectives read route bandwidths (so NCCL's choices see the slow
 * link as it would) and before host staging reads its DRAM figures.  The
 * original bandwidths come back in engine_free: a preloaded platform
 * outlives the run. */
/* Whether a SimGrid link is named by pattern: its own name, or the platform
 * file's name of a SPLITDUPLEX link, which SimGrid splits into NAME_UP and
 * NAME_DOWN (both directions slow down together). */
static int link_named(const char *pattern, const char *name)
{
    if (fnmatch(pattern, name, 0) == 0)
        return 1;
    size_t n = strlen(name);
    size_t cut = n > 3 && !strcmp(name + n - 3, "_UP") ? n - 3 : n > 5 && !strcmp(name + n - 5, "_DOWN") ? n - 5 : 0;
    char base[256];
    if (!cut || cut >= sizeof base)
        return 0;
    memcpy(base, name, cut);
    base[cut] = 0;
    return fnmatch(pattern, base, 0) == 0;
}

static int degrade_links(const sim_machine *m, sim_err *err)
{
    if (m->ndegrade <= 0)
        return 0;
    sg_link_t *links = sg_link_list();
    size_t n = sg_link_count();
    E.degraded = sim_xcalloc(n + 1, sizeof *E.degraded, "the degraded links");
    E.degraded_bw = sim_xcalloc(n + 1, sizeof *E.degraded_bw, "the degraded links");
    int rc = 0;
    for (int d = 0; d < m->ndegrade && rc == 0; d++) {
        int hits = 0;
        for (size_t i = 0; i < n; i++) {
            if (!link_named(m->degrade[d].pattern, sg_link_get_name(links[i])))
                continue;
            size_t k = 0;
            while (k < E.ndegraded && E.degraded[k] != links[i])
                k++;
            if (k == E.ndegraded) { /* first pattern to touch it keeps the original */
                E.degraded[k] = links[i];
                E.degraded_bw[k] = sg_link_get_bandwidth(links[i]);
                E.ndegraded++;
            }
            sg_link_set_bandwidth(links[i], sg_link_get_bandwidth(links[i]) / m->degrade[d].factor);
            hits++;
        }
        if (!hits)
            rc = sim_errf(err, "--degrade \"%s\": no link of platform \"%s\" has that name (`trainsim platform "
                               "-o FILE.xml` lists the links: n0-nic0 is node 0's first NIC on built-in clusters)",
                          m->degrade[d].pattern, m->name);
    }
    free(links);
    return rc;
}

static void restore_links(void)
{
    for (size_t k = 0; k < E.ndegraded; k++)
        sg_link_set_bandwidth(E.degraded[k], E.degraded_bw[k]);
    free(E.degraded);
    free(E.degraded_bw);
}

/* Frees the run's state, whatever point setup reached (SimGrid owns the
 * condition objects until exit). */
static void engine_free(void)
{
    if (E.comms)
        sim_coll_teardown();
    sim_staging_teardown();
    restore_links();
    for (int r = 0; E.compute && r < E.s->nranks; r++)
        free(E.compute[r].v);
    for (int r = 0; E.comm && r < E.s->nranks; r++)
        free(E.comm[r].v);
    free(E.compute);
    free(E.comm);
    free(E.mem);
    free(E.comm_busy);
    free(E.kern_busy);
    free(E.kclass_s);
    free(E.bg);
    free(E.mem_kind);
    free(E.kernel_s);
    free(E.power_slow);
    free(E.depended);
    free(E.pos);
    free(E.sem);
    free(E.wait_head);
    free(E.wait_next);
    free(E.wait_seq);
    free(E.hosts);
}


/* SimGrid maps a stack for every actor and aborts, without a word, when the
 * address space is full: under a limit (ulimit -v) say so first. */
static int check_stack_room(uint32_t actors, sim_err *err)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    double used = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        unsigned long pages;
        if (fscanf(f, "%lu", &pages) == 1)
            used = (double)pages * (double)sysconf(_SC_PAGESIZE);
        fclose(f);
    }
    double need = (double)actors * (ACTOR_STACK_KIB + 64) * 1024.0, room = (double)rl.rlim_cur - used;
    if (need <= room)
        return 0;
    return sim_errf(err,
                    "the address-space limit (ulimit -v, %.0f MiB) leaves %.0f MiB, and the simulation needs "
                    "%.0f MiB more: %d KiB of stack for each of its %u streams; raise the limit",
                    (double)rl.rlim_cur / 1048576.0, room / 1048576.0, need / 1048576.0, ACTOR_STACK_KIB, actors);
}

/* Each actor's stack is a mapping and its guard page another: past the
 * system's count of mappings per process (vm.max_map_count, 65,530 by
 * default) SimGrid aborts ("Failed to protect stack").  Say so first.
 * TRAINSIM_MAX_MAP_COUNT stands for the system's value (tests).  The
 * mappings in use are counted only when the actors' need half the limit:
 * every simulation (each of the planner's) passes here. */
static int check_map_room(uint32_t actors, sim_err *err)
{
    const char *forced = getenv("TRAINSIM_MAX_MAP_COUNT");
    long max = forced ? atol(forced) : 0, used = 0;
    if (!forced) {
        FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
        if (!f)
            return 0;
        if (fscanf(f, "%ld", &max) != 1)
            max = 0;
        fclose(f);
    }
    long need = 2 * (long)actors + 1000; /* stack + guard per actor, and room for the rest */
    if (max <= 0 || 2 * need <= max)
        return 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f) {
        int c;
        while ((c = fgetc(f)) != EOF)
            used += c == '\n';
        fclose(f);
    }
    if (used + need <= max)
        return 0;
    return sim_errf(err,
                    "the simulation needs %u actors (one per stream with operations), about %ld memory mappings "
                    "with their stacks, and this system allows %ld per process (vm.max_map_count; %ld in use): "
                    "simulate fewer GPUs, or raise it (sysctl -w vm.max_map_count=%ld)",
                    actors, need, max, used, 2 * (used + need));
}

static int engine_setup(const sim_schedule *s, const sim_machine *m, sim_err *err)
{
    int nr = s->nranks;
    E.hosts = sim_xcalloc((size_t)nr, sizeof *E.hosts, "the engine's hosts");
    for (int r = 0; r < nr; r++)
        if (!(E.hosts[r] = sg_host_by_name(m->host[r])))
            return sim_errf(err, "platform \"%s\": no host named \"%s\" for rank %d", m->name, m->host[r], r);
    E.pos = sim_xcalloc(s->nstreams, sizeof *E.pos, "the engine's streams");
    E.sem = sim_xcalloc(s->nstreams, sizeof *E.sem, "the engine's streams");
    E.wait_head = sim_xcalloc(s->nstreams, sizeof *E.wait_head, "the engine's streams");
    E.wait_next = sim_xcalloc(s->nstreams, sizeof *E.wait_next, "the engine's streams");
    E.wait_seq = sim_xcalloc(s->nstreams, sizeof *E.wait_seq, "the engine's streams");
    for (uint32_t i = 0; i < s->nstreams; i++) {
        E.sem[i] = sg_sem_init(0);
        E.wait_head[i] = NO_WAITER;
    }
    E.depended = sim_xcalloc(s->nops / 8 + 1, 1, "the engine's dependency bits");
    for (uint32_t i = 0; i < s->ndeps; i++)
        E.depended[s->deps[i] >> 3] |= (uint8_t)(1u << (s->deps[i] & 7));
    E.compute = sim_xcalloc((size_t)nr, sizeof *E.compute, "the engine's per-GPU state");
    E.comm = sim_xcalloc((size_t)nr, sizeof *E.comm, "the engine's per-GPU state");
    E.mem = sim_xcalloc((size_t)nr, sizeof *E.mem, "the engine's per-GPU state");
    E.comm_busy = sim_xcalloc((size_t)nr, sizeof *E.comm_busy, "the engine's per-GPU state");
    E.kern_busy = sim_xcalloc((size_t)nr, sizeof *E.kern_busy, "the engine's per-GPU state");
    E.kclass_s = sim_xcalloc((size_t)nr * SIM_KCLASS_COUNT, sizeof *E.kclass_s, "the engine's per-GPU state");
    E.bg = sim_xcalloc((size_t)nr, sizeof *E.bg, "the engine's per-GPU state");
    E.mem_kind = sim_xcalloc((size_t)nr * SIM_MEM_KIND_COUNT, sizeof *E.mem_kind, "the engine's per-GPU state");
    if (degrade_links(m, err) < 0 || sim_coll_setup(err) < 0 || sim_staging_setup(err) < 0 ||
        open_outputs(err) < 0)
        return -1;
    uint32_t actors = 0;
    for (uint32_t i = 0; i < s->nstreams; i++)
        actors += s->streams[i].nops > 0;
    if (check_stack_room(actors, err) < 0 || check_map_room(actors, err) < 0)
        return -1;
    for (uint32_t i = 0; i < s->nstreams; i++) {
        if (s->streams[i].nops == 0)
            continue;
        char name[96];
        snprintf(name, sizeof name, "r%d:%s", s->streams[i].rank, sim_sched_strname(s, s->streams[i].name));
        sg_actor_t a = sg_actor_init(name, E.hosts[s->streams[i].rank]);
        sg_actor_set_data(a, (void *)(uintptr_t)i);
        sg_actor_start(a, stream_main, 0, NULL);
    }
    return 0;
}

int sim_kclass_of(int kernel)
{
    switch (kernel) {
    case SIM_KERNEL_GEMM: return SIM_KCLASS_GEMM;
    case SIM_KERNEL_ATTENTION:
    case SIM_KERNEL_ATTENTION_BWD:
    case SIM_KERNEL_FLASH_FWD:
    case SIM_KERNEL_FLASH_BWD: return SIM_KCLASS_ATTENTION;
    case SIM_KERNEL_ELEMENTWISE: return SIM_KCLASS_ELEMENTWISE;
    case SIM_KERNEL_OPTIMIZER: return SIM_KCLASS_OPTIMIZER;
    case SIM_KERNEL_FIXED: return SIM_KCLASS_MEASURED;
    default: return -1;
    }
}

const char *sim_kclass_name(int c)
{
    static const char *names[SIM_KCLASS_COUNT] = {"gemm", "attention", "elementwise", "optimizer", "measured"};
    return c >= 0 && c < SIM_KCLASS_COUNT ? names[c] : "?";
}

const char *sim_kclass_label(int c)
{
    static const char *labels[SIM_KCLASS_COUNT] = {"GEMM", "attention", "element-wise", "optimizer", "measured"};
    return c >= 0 && c < SIM_KCLASS_COUNT ? labels[c] : "?";
}

/* The breakdown per rank and the means, from the busy intervals and the
 * kernels' own seconds by class the streams summed as they ran them. */
static void collect_results(const sim_schedule *s, sim_result *out)
{
    int nr = s->nranks;
    double T = simgrid_get_clock();
    out->iteration_s = T;
    for (int r = 0; r < nr; r++) {
        sim_rank_result *R = &out->rank[r];
        R->compute_s = ivl_union(&E.compute[r]);
        R->comm_s = ivl_union(&E.comm[r]);
        R->exposed_comm_s = R->comm_s - ivl_overlap(&E.compute[r], &E.comm[r]);
        R->idle_s = fmax(0, T - R->compute_s - R->exposed_comm_s);
        R->end_s = fmax(E.compute[r].n ? E.compute[r].v[E.compute[r].n - 1].b : 0,
                        E.comm[r].n ? E.comm[r].v[E.comm[r].n - 1].b : 0);
        R->start_s = E.compute[r].n ? E.compute[r].v[0].a : 0;
        out->compute_s += R->compute_s / nr;
        out->comm_s += R->comm_s / nr;
        out->exposed_comm_s += R->exposed_comm_s / nr;
        out->idle_s += R->idle_s / nr;
        for (int c = 0; c < SIM_KCLASS_COUNT; c++) {
            R->kernel_s[c] = E.kclass_s[(size_t)r * SIM_KCLASS_COUNT + c];
            out->kernel_s[c] += R->kernel_s[c] / nr;
        }
        if (R->peak_mem > out->peak_mem) {
            out->peak_mem = R->peak_mem;
            out->peak_mem_rank = r;
        }
    }
    out->ops = s->nops;
    out->flows = E.flows;
    out->folded_trees = E.folded_trees;
    out->folded_tree_s = E.folded_tree_s;
    out->execs = E.execs;
}

int sim_run(const sim_schedule *s, const sim_machine *m, const sim_options *opt_in, sim_result *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    if (used)
        return sim_errf(err, "internal: one simulation per process (SimGrid keeps one engine)");
    if (s->nranks > m->ngpus)
        return sim_errf(err, "the schedule needs %d GPUs but the platform \"%s\" has %d", s->nranks, m->name,
                        m->ngpus);
    if (sim_sched_check(s, err) < 0 || check_fold(s, err) < 0)
        return -1;
    used = 1;
    double wall0 = now_wall();
    memset(&E, 0, sizeof E);
    E.wall0 = wall0;
    E.next_progress = wall0 + 2; /* runs shorter than ~2 s say nothing */
    E.s = s;
    E.m = m;
    sim_options_default(&E.opt);
    if (opt_in)
        E.opt = *opt_in;
    E.res = out;
    out->nranks = s->nranks;
    out->rank = sim_xcalloc((size_t)s->nranks, sizeof *out->rank, "the per-GPU results");
    if (E.opt.pace && E.opt.pace_rank >= 0 && E.opt.pace_rank < s->nranks) {
        for (uint32_t i = 0; i < s->nops; i++)
            if (s->ops[i].micro >= out->nmicro)
                out->nmicro = s->ops[i].micro + 1;
        out->micro_end = sim_xcalloc(out->nmicro > 0 ? (size_t)out->nmicro : 1, sizeof *out->micro_end,
                                     "the micro-batches' ends");
    }
    int rc = kernel_times(err);
    if (rc == 0)
        power_states();
    if (rc == 0 && preloaded && strcmp(preloaded, m->platform_xml) != 0)
        rc = sim_errf(err, "internal: the platform of \"%s\" differs from the one this process preloaded "
                           "(sim_preload: one platform per process)", m->name);
    else if (rc == 0 && !preloaded)
        rc = engine_start(m, err);
    if (rc == 0)
        rc = engine_setup(s, m, err);
    if (rc == 0) {
        simgrid_run();
        for (uint32_t st = 0; st < s->nstreams && rc == 0; st++)
            if (E.pos[st] < s->streams[st].nops)
                rc = report_stuck(err);
    }
    if (rc == 0)
        collect_results(s, out);
    if (close_outputs(rc == 0, err) < 0)
        rc = -1;
    engine_free();
    if (rc < 0) {
        sim_result_free(out);
        return -1;
    }
    out->wall_s = now_wall() - wall0;
    return 0;
}

void sim_result_free(sim_result *r)
{
    free(r->rank);
    r->rank = NULL;
    free(r->micro_end);
    r->micro_end = NULL;
    r->nmicro = 0;
}
