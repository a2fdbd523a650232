/* engine.c — runs a schedule on a SimGrid platform.
 *
 * One actor per (GPU rank, stream) walks its operations in order.  A
 * dependency on another stream's operation is a wait until that stream's
 * position passes it (a condition variable per stream: CUDA events without a
 * per-event object, since "op done" is just "stream position > op.seq").
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
 * sender's GPU stands for the transfer.
 *
 * Time accounting: each rank keeps the intervals during which a compute
 * kernel ran and those during which communication ran; the breakdown is
 * computed from their unions at the end.  A receive counts from the moment
 * its data could start moving (both sides posted), so a pre-posted receive
 * waiting for an upstream stage is idle (bubble), not communication.
 *
 * This file owns the one SimGrid engine of the process: started by sim_run(),
 * or once by sim_preload() for every simulation forked afterwards. */
#include "engine.h"
#include "fileio.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>

#include "costmodel.h"
#include "engine_internal.h"

sim_engine E;

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
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (sim_ivl){a, b};
}

void sim_engine_comm_interval(int rank, double a, double b) { ivl_add(&E.comm[rank], a, b); }

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

/* ---- Chrome trace ----------------------------------------------------- */

static void trace_op(uint32_t op, double t0, double t1)
{
    const sim_schedule *s = E.s;
    const sim_op *o = &s->ops[op];
    const sim_payload *p = &s->payloads[o->payload];
    fprintf(E.trace, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\",\"cat\":\"%s\",\"args\":{",
            s->streams[o->stream].rank, o->stream, t0 * 1e6, (t1 - t0) * 1e6, sim_sched_op_label(s, op),
            sim_op_kind_name(p->kind));
    fprintf(E.trace, "\"op\":%u", op);
    if (o->layer >= 0)
        fprintf(E.trace, ",\"layer\":%d", o->layer);
    if (o->micro >= 0)
        fprintf(E.trace, ",\"micro\":%d", o->micro);
    if (o->subbatch >= 0)
        fprintf(E.trace, ",\"sub\":%d", o->subbatch);
    if (o->phase)
        fprintf(E.trace, ",\"phase\":\"%s\"", sim_phase_name(o->phase));
    switch (p->kind) {
    case SIM_OP_COMPUTE:
        fprintf(E.trace, ",\"kernel\":\"%s\",\"flops\":%.0f,\"bytes\":%.0f", sim_kernel_name(p->sub),
                sim_cost_flops(p), sim_cost_bytes(p));
        break;
    case SIM_OP_COLLECTIVE:
        fprintf(E.trace, ",\"collective\":\"%s\",\"comm\":\"%s\",\"bytes\":%lld", sim_coll_name(p->sub),
                sim_sched_strname(s, s->comms[o->arg].name), (long long)p->bytes);
        break;
    case SIM_OP_SEND:
    case SIM_OP_RECV:
        fprintf(E.trace, ",\"peer\":%d,\"bytes\":%lld", o->arg, (long long)p->bytes);
        break;
    case SIM_OP_MEMORY:
        fprintf(E.trace, ",\"memory\":\"%s\",\"bytes\":%lld", sim_mem_kind_name(p->sub), (long long)p->bytes);
        break;
    }
    fputs("}}", E.trace);
}

void sim_engine_trace_transfer(uint32_t stream, int dst_rank, double bytes, double t0, double t1)
{
    if (!E.trace)
        return;
    fprintf(E.trace,
            ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"to rank %d\",\"cat\":\"transfer\",\"args\":{\"bytes\":%.0f}}",
            E.s->streams[stream].rank, SIM_TRACE_XFER_TID + stream, t0 * 1e6, (t1 - t0) * 1e6, dst_rank, bytes);
}

static void trace_header(void)
{
    const sim_schedule *s = E.s;
    fprintf(E.trace, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"trainsim %s\",\"schedule\":\"%s\",\"platform\":\"%s\"},\n\"traceEvents\":[\n",
            TRAINSIM_VERSION, s->meta.name, E.m->name);
    fprintf(E.trace, "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0 (%s)\"}}", E.m->host[0]);
    for (int r = 1; r < s->nranks; r++)
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d (%s)\"}}", r, r,
                E.m->host[r]);
    for (uint32_t i = 0; i < s->nstreams; i++) {
        const char *nm = sim_sched_strname(s, s->streams[i].name);
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
                s->streams[i].rank, i, nm);
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
                s->streams[i].rank, i, i);
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s transfers\"}}",
                s->streams[i].rank, SIM_TRACE_XFER_TID + i, nm);
    }
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

double sim_engine_comm_factor(int rank)
{
    return E.kern_busy[rank] > 0 ? E.m->gpus[E.m->gpu_model[rank]].overlap_comm : 1.0;
}

/* ---- the stream actor -------------------------------------------------- */

static void wait_deps(const sim_op *o)
{
    for (uint32_t k = 0; k < o->ndeps; k++) {
        const sim_op *d = &E.s->ops[E.s->deps[o->dep_first + k]];
        if (E.pos[d->stream] > d->seq)
            continue;
        sg_mutex_lock(E.mutex);
        while (E.pos[d->stream] <= d->seq) {
            E.has_waiters[d->stream] = 1;
            sg_cond_wait(E.cond[d->stream], E.mutex);
        }
        sg_mutex_unlock(E.mutex);
    }
}

static void finish_op(uint32_t stream)
{
    E.pos[stream]++;
    if (E.has_waiters[stream]) {
        E.has_waiters[stream] = 0;
        sg_cond_notify_all(E.cond[stream]);
    }
}

static double kernel_seconds(uint32_t op, int rank)
{
    uint32_t pl = E.s->ops[op].payload;
    int model = E.m->gpu_model[rank];
    double *slot = &E.kernel_s[(size_t)pl * (size_t)E.m->nmodels + (size_t)model];
    if (*slot < 0)
        *slot = sim_cost_kernel(&E.m->gpus[model], &E.s->payloads[pl]);
    return *slot;
}

static int is_depended_on(uint32_t op) { return (E.depended[op >> 3] >> (op & 7)) & 1; }

/* Consecutive kernels of one stream run as one execution when nothing
 * outside the stream can observe the boundary between them (no dependency
 * into or out of it) and no trace asks for each kernel. */
static int can_merge(uint32_t a, uint32_t b)
{
    const sim_op *ob = &E.s->ops[b];
    return !E.trace && !is_depended_on(a) && ob->ndeps == 0 &&
           E.s->payloads[ob->payload].kind == SIM_OP_COMPUTE;
}

typedef struct send_note {
    double posted;
} send_note;

static sg_mailbox_t p2p_mailbox(int src, int dst, int tag)
{
    char name[64];
    snprintf(name, sizeof name, "p%d>%d#%d", src, dst, tag);
    return sg_mailbox_by_name(name);
}

static FILE *memlog; /* sim_options.memory_path */

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
    if (E.trace) {
        fprintf(E.trace, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory GB\",\"ts\":%.3f,\"args\":{", rank,
                simgrid_get_clock() * 1e6);
        for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
            fprintf(E.trace, "%s\"%s\":%.6f", i ? "," : "", sim_mem_kind_name(i), k[i] / 1e9);
        fputs("}}", E.trace);
    }
    if (memlog) {
        const char *nm = p->name >= 0 ? sim_sched_strname(E.s, p->name) : "";
        fprintf(memlog, "%.9f,%d,%s,%s,%lld,%.0f", simgrid_get_clock(), rank, sim_mem_kind_name(p->sub), nm ? nm : "",
                (long long)p->bytes, E.mem[rank]);
        for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
            fprintf(memlog, ",%.0f", k[i]);
        fputc('\n', memlog);
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
        wait_deps(o);
        double t0 = simgrid_get_clock();
        switch (p->kind) {
        case SIM_OP_COMPUTE: {
            double secs = kernel_seconds(op, rank);
            uint32_t last = k;
            while (last + 1 < S->nops && can_merge(S->ops[last], S->ops[last + 1]))
                secs += kernel_seconds(S->ops[++last], rank);
            if (E.kern_busy[rank]++ == 0 && E.comm_busy[rank] > 0)
                bg_start(rank);
            if (secs > 0)
                sg_actor_execute(secs * 1e9);
            E.kern_busy[rank]--;
            E.execs++;
            double t1 = simgrid_get_clock();
            ivl_add(&E.compute[rank], t0, t1);
            if (E.trace)
                trace_op(op, t0, t1);
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
            send_note *note = malloc(sizeof *note);
            note->posted = t0;
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
            free(note);
            ivl_add(&E.comm[rank], start, simgrid_get_clock());
            t0 = start;
            break;
        }
        }
        if (E.trace && p->kind != SIM_OP_MEMORY)
            trace_op(op, t0, simgrid_get_clock());
        finish_op(st);
        k++;
    }
}

/* ---- setup and results ------------------------------------------------- */

static int write_platform(const sim_machine *m, char *path, size_t len, sim_err *err)
{
    snprintf(path, len, "/tmp/trainsim-platform-XXXXXX.xml");
    int fd = mkstemps(path, 4);
    if (fd < 0)
        return sim_errf(err, "cannot create a temporary platform file in /tmp");
    size_t n = strlen(m->platform_xml);
    int bad = sim_write_all(fd, m->platform_xml, n) != 0;
    close(fd);
    if (bad) {
        unlink(path);
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

/* Starts SimGrid and loads the machine's platform: the fixed cost of a
 * simulation (a temporary file, SimGrid's options, the XML parse). */
static int engine_start(const sim_machine *m, sim_err *err)
{
    char platform_path[64];
    if (write_platform(m, platform_path, sizeof platform_path, err) < 0)
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
                           "--cfg=contexts/stack-size:8192",
                           "--log=root.thres:critical",
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
    unlink(platform_path);
    return 0;
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
    char *copy = strdup(m->platform_xml);
    if (!copy)
        return sim_errf(err, "out of memory");
    /* SimGrid exits on a platform it cannot load: try it in a child first,
     * so that the caller gets an error instead of dying */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        free(copy);
        return sim_errf(err, "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        sim_err e;
        _exit(engine_start(m, &e) < 0 ? 1 : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(copy);
        return sim_errf(err, "platform \"%s\": SimGrid cannot load it", m->name);
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

/* A folded communicator (sim_options.fold_members) runs only ring
 * collectives (step by step or aggregated, as the whole ring would). */
static int check_fold(const sim_schedule *s, const sim_options *o, sim_err *err)
{
    if (!o->fold_members)
        return 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *op = &s->ops[i];
        const sim_payload *p = &s->payloads[op->payload];
        if (p->kind != SIM_OP_COLLECTIVE || o->fold_members[op->arg] <= s->comms[op->arg].nranks)
            continue;
        if (!sim_coll_foldable(p) || o->fold_nodes[op->arg] < 2) {
            char d[320];
            sim_sched_describe(s, i, d, sizeof d);
            return sim_errf(err, "internal: %s: a folded communicator runs only ring all-reduce, all-gather and "
                                 "reduce-scatter", d);
        }
    }
    return 0;
}

int sim_run(const sim_schedule *s, const sim_machine *m, const sim_options *opt_in, sim_result *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    if (used)
        return sim_errf(err, "internal: one simulation per process (SimGrid keeps one engine)");
    if (s->nranks > m->ngpus)
        return sim_errf(err, "the schedule needs %d GPUs but the platform \"%s\" has %d", s->nranks, m->name,
                        m->ngpus);
    if (sim_sched_check(s, err) < 0 || (opt_in && check_fold(s, opt_in, err) < 0))
        return -1;
    used = 1;
    double wall0 = now_wall();
    memset(&E, 0, sizeof E);
    E.s = s;
    E.m = m;
    sim_options_default(&E.opt);
    if (opt_in)
        E.opt = *opt_in;
    E.res = out;

    if (preloaded) {
        if (strcmp(preloaded, m->platform_xml) != 0)
            return sim_errf(err, "internal: the platform of \"%s\" differs from the one this process preloaded "
                                 "(sim_preload: one platform per process)", m->name);
    } else if (engine_start(m, err) < 0) {
        return -1;
    }

    int nr = s->nranks;
    out->nranks = nr;
    out->rank = calloc((size_t)nr, sizeof *out->rank);
    E.hosts = calloc((size_t)nr, sizeof *E.hosts);
    for (int r = 0; r < nr; r++) {
        E.hosts[r] = sg_host_by_name(m->host[r]);
        if (!E.hosts[r]) {
            sim_errf(err, "platform \"%s\": no host named \"%s\" for rank %d", m->name, m->host[r], r);
            goto fail;
        }
    }
    E.pos = calloc(s->nstreams, sizeof *E.pos);
    E.has_waiters = calloc(s->nstreams, 1);
    E.cond = calloc(s->nstreams, sizeof *E.cond);
    for (uint32_t i = 0; i < s->nstreams; i++)
        E.cond[i] = sg_cond_init();
    E.mutex = sg_mutex_init();
    E.depended = calloc(s->nops / 8 + 1, 1);
    for (uint32_t i = 0; i < s->ndeps; i++)
        E.depended[s->deps[i] >> 3] |= (uint8_t)(1u << (s->deps[i] & 7));
    E.kernel_s = malloc(((size_t)s->npayloads * (size_t)m->nmodels + 1) * sizeof *E.kernel_s);
    for (size_t i = 0; i < (size_t)s->npayloads * (size_t)m->nmodels; i++)
        E.kernel_s[i] = -1;
    E.compute = calloc((size_t)nr, sizeof *E.compute);
    E.comm = calloc((size_t)nr, sizeof *E.comm);
    E.mem = calloc((size_t)nr, sizeof *E.mem);
    E.comm_busy = calloc((size_t)nr, sizeof *E.comm_busy);
    E.kern_busy = calloc((size_t)nr, sizeof *E.kern_busy);
    E.bg = calloc((size_t)nr, sizeof *E.bg);
    E.mem_kind = calloc((size_t)nr * SIM_MEM_KIND_COUNT, sizeof *E.mem_kind);
    if (sim_coll_setup(err) < 0 || sim_staging_setup(err) < 0)
        goto fail;
    if (E.opt.trace_path) {
        E.trace = fopen(E.opt.trace_path, "w");
        if (!E.trace) {
            sim_errf(err, "%s: cannot write the trace", E.opt.trace_path);
            goto fail;
        }
        trace_header();
    }
    if (E.opt.memory_path) {
        memlog = fopen(E.opt.memory_path, "w");
        if (!memlog) {
            sim_errf(err, "%s: cannot write the memory timeline", E.opt.memory_path);
            goto fail;
        }
        fputs("time_s,rank,kind,what,delta_bytes,total_bytes", memlog);
        for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
            fprintf(memlog, ",%s_bytes", sim_mem_kind_name(i));
        fputc('\n', memlog);
    }

    for (uint32_t i = 0; i < s->nstreams; i++) {
        if (s->streams[i].nops == 0)
            continue;
        char name[96];
        snprintf(name, sizeof name, "r%d:%s", s->streams[i].rank, sim_sched_strname(s, s->streams[i].name));
        sg_actor_t a = sg_actor_init(name, E.hosts[s->streams[i].rank]);
        sg_actor_set_data(a, (void *)(uintptr_t)i);
        sg_actor_start(a, stream_main, 0, NULL);
    }
    simgrid_run();

    for (uint32_t st = 0; st < s->nstreams; st++)
        if (E.pos[st] < s->streams[st].nops) {
            report_stuck(err);
            goto fail;
        }

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
        out->compute_s += R->compute_s / nr;
        out->comm_s += R->comm_s / nr;
        out->exposed_comm_s += R->exposed_comm_s / nr;
        out->idle_s += R->idle_s / nr;
        if (R->peak_mem > out->peak_mem) {
            out->peak_mem = R->peak_mem;
            out->peak_mem_rank = r;
        }
    }
    out->ops = s->nops;
    out->flows = E.flows;
    out->execs = E.execs;
    out->wall_s = now_wall() - wall0;
    if (E.trace) {
        fputs("\n]}\n", E.trace);
        fclose(E.trace);
        E.trace = NULL;
    }
    if (memlog)
        fclose(memlog);
    memlog = NULL;
    sim_coll_teardown();
    sim_staging_teardown();
    for (int r = 0; r < nr; r++) {
        free(E.compute[r].v);
        free(E.comm[r].v);
    }
    free(E.compute);
    free(E.comm);
    free(E.mem);
    free(E.comm_busy);
    free(E.kern_busy);
    free(E.bg);
    free(E.mem_kind);
    free(E.kernel_s);
    free(E.depended);
    free(E.pos);
    free(E.has_waiters);
    free(E.cond); /* SimGrid owns the condition objects until exit */
    free(E.hosts);
    return 0;
fail:
    sim_staging_teardown();
    if (E.trace)
        fclose(E.trace);
    E.trace = NULL;
    if (memlog)
        fclose(memlog);
    memlog = NULL;
    return -1;
}

void sim_result_free(sim_result *r)
{
    free(r->rank);
    r->rank = NULL;
}
