/* trace.c — the Chrome trace (Perfetto) of a run: one process per GPU, one
 * track per stream and one "transfers" track beside it, a memory counter
 * per GPU, flow arrows from each send to its receive.
 *
 * What the engine simulates does not depend on the trace: merged kernel
 * runs (engine.c can_merge) stay merged and are shown as one slice; a
 * collective's steps to one peer are one slice on the transfers track.
 * trace_detail shows every kernel (the engine then runs each on its own)
 * and every step.  Times
 * are written in whole nanoseconds, each boundary rounded once, so that
 * back-to-back slices on a track never overlap.  Ranks and a time window
 * may be selected (a 1,024-GPU trace would be gigabytes); a path ending in
 * ".gz" is written gzip-compressed (zlib through a stdio cookie, so every
 * writer here stays a FILE *). */
#define _GNU_SOURCE /* fopencookie */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <simgrid/engine.h>

#include "alloc.h"
#include "costmodel.h"
#include "engine_internal.h"
#include "json.h"

/* ---- gzip through a FILE * --------------------------------------------- */

static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
    size_t done = 0;
    while (done < n) { /* gzwrite takes an unsigned count */
        unsigned part = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
        int w = gzwrite((gzFile)cookie, buf + done, part);
        if (w <= 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)w;
    }
    return (ssize_t)done;
}

static int gz_close(void *cookie) { return gzclose((gzFile)cookie) == Z_OK ? 0 : EOF; }

/* A FILE * that compresses into out's file (a duplicate of its descriptor:
 * the compressed bytes land where out would have written, and out's commit
 * then checks and renames the file as for any output). */
static FILE *gz_stream(FILE *out)
{
    int fd = dup(fileno(out));
    gzFile z = fd >= 0 ? gzdopen(fd, "wb6") : NULL;
    if (!z) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
    FILE *f = fopencookie(z, "w", io);
    if (!f)
        gzclose(z);
    return f;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* ---- what is written ----------------------------------------------------- */

static int rank_wanted(int rank) { return !E.opt.trace_ranks || E.opt.trace_ranks[rank]; }

/* Whether [t0, t1] of this rank is traced: its rank selected and the
 * interval meeting the window (an instant at its edge counts). */
static int wanted(int rank, double t0, double t1)
{
    if (!E.trace || !rank_wanted(rank))
        return 0;
    return !(E.opt.trace_to > E.opt.trace_from) || (t1 >= E.opt.trace_from && t0 <= E.opt.trace_to);
}

/* A time as microseconds with three decimals, from whole nanoseconds. */
static long long ns_of(double t) { return llround(t * 1e9); }

static void put_us(long long ns) { fprintf(E.trace, "%lld.%03lld", ns / 1000, ns % 1000); }

/* The start of an "X" slice: ts and dur from the two boundaries' rounded
 * nanoseconds. */
static void slice_head(int pid, uint32_t tid, double t0, double t1)
{
    long long a = ns_of(t0), b = ns_of(t1);
    fprintf(E.trace, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":", pid, tid);
    put_us(a);
    fputs(",\"dur\":", E.trace);
    put_us(b > a ? b - a : 0);
}

/* Names as quoted JSON strings, escaped once per string (a trace has
 * millions of events but a few hundred names). */
static const char *qname(int32_t id) { return id >= 0 && (uint32_t)id < E.nqname ? E.qname[id] : "\"\""; }

static void flush_transfer(uint32_t stream);

static const char *qlabel(uint32_t op)
{
    const sim_payload *p = sim_sched_payload_of(E.s, op);
    if (p->name >= 0)
        return qname(p->name);
    static char buf[64]; /* the enum names need no escaping */
    snprintf(buf, sizeof buf, "\"%s\"", sim_sched_op_label(E.s, op));
    return buf;
}

static void op_args(uint32_t op)
{
    const sim_schedule *s = E.s;
    const sim_op *o = &s->ops[op];
    const sim_payload *p = &s->payloads[o->payload];
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
        fprintf(E.trace, ",\"collective\":\"%s\",\"comm\":%s,\"bytes\":%lld", sim_coll_name(p->sub),
                qname(s->comms[o->arg].name), (long long)p->bytes);
        break;
    case SIM_OP_SEND:
    case SIM_OP_RECV:
        fprintf(E.trace, ",\"peer\":%d,\"bytes\":%lld", o->arg, (long long)p->bytes);
        break;
    case SIM_OP_MEMORY:
        fprintf(E.trace, ",\"memory\":\"%s\",\"bytes\":%lld", sim_mem_kind_name(p->sub), (long long)p->bytes);
        break;
    }
}

void sim_trace_op(uint32_t op, double t0, double t1)
{
    const sim_op *o = &E.s->ops[op];
    flush_transfer(o->stream); /* the op's transfers end with it */
    int rank = E.s->streams[o->stream].rank;
    if (!wanted(rank, t0, t1))
        return;
    slice_head(rank, o->stream, t0, t1);
    fprintf(E.trace, ",\"name\":%s,\"cat\":\"%s\",\"args\":{", qlabel(op),
            sim_op_kind_name(E.s->payloads[o->payload].kind));
    op_args(op);
    fputs("}}", E.trace);
}

void sim_trace_kernels(const sim_stream *S, uint32_t k, uint32_t last, int rank, double t0, double t1)
{
    if (!wanted(rank, t0, t1))
        return;
    if (k == last) {
        sim_trace_op(S->ops[k], t0, t1);
        return;
    }
    double flops = 0, bytes = 0;
    for (uint32_t i = k; i <= last; i++) {
        flops += sim_cost_flops(sim_sched_payload_of(E.s, S->ops[i]));
        bytes += sim_cost_bytes(sim_sched_payload_of(E.s, S->ops[i]));
    }
    uint32_t first = S->ops[k];
    slice_head(rank, E.s->ops[first].stream, t0, t1);
    /* the run's first kernel names it */
    fprintf(E.trace, ",\"name\":%s,\"cat\":\"compute\",\"args\":{\"kernels\":%u,", qlabel(first), last - k + 1);
    op_args(first);
    fprintf(E.trace, ",\"last_op\":%u,\"run_flops\":%.0f,\"run_bytes\":%.0f}}", S->ops[last], flops, bytes);
}

/* Transfers: a collective's steps to one peer (a ring's 2(n-1) sends to its
 * successor) are one slice from the first step's start to the last one's
 * end, with their count and bytes, unless trace_detail asks for each. */
typedef struct pending_xfer {
    int dst, steps;
    double t0, t1, bytes, busy;
} pending_xfer;

static void write_transfer(uint32_t stream, const pending_xfer *x)
{
    int rank = E.s->streams[stream].rank;
    if (!wanted(rank, x->t0, x->t1))
        return;
    slice_head(rank, SIM_TRACE_XFER_TID + stream, x->t0, x->t1);
    fprintf(E.trace, ",\"name\":\"to rank %d\",\"cat\":\"transfer\",\"args\":{\"bytes\":%.0f", x->dst, x->bytes);
    if (x->steps > 1)
        fprintf(E.trace, ",\"steps\":%d,\"busy_us\":%.3f", x->steps, x->busy * 1e6);
    fputs("}}", E.trace);
}

static void flush_transfer(uint32_t stream)
{
    pending_xfer *x = E.trace_pending ? &((pending_xfer *)E.trace_pending)[stream] : NULL;
    if (x && x->steps) {
        write_transfer(stream, x);
        x->steps = 0;
    }
}

void sim_engine_trace_transfer(uint32_t stream, int dst_rank, double bytes, double t0, double t1)
{
    if (!E.trace)
        return;
    pending_xfer one = {dst_rank, 1, t0, t1, bytes, t1 - t0};
    if (E.opt.trace_detail || !E.trace_pending) {
        write_transfer(stream, &one);
        return;
    }
    pending_xfer *x = &((pending_xfer *)E.trace_pending)[stream];
    if (x->steps && (x->dst != dst_rank || t0 < x->t0))
        flush_transfer(stream);
    if (!x->steps) {
        *x = one;
        return;
    }
    x->steps++;
    x->t1 = fmax(x->t1, t1);
    x->bytes += bytes;
    x->busy += t1 - t0;
}

void sim_trace_flow(uint32_t send_stream, double send_t0, double send_t1, uint32_t recv_stream, double recv_t0,
                    double recv_t1)
{
    int a = E.s->streams[send_stream].rank, b = E.s->streams[recv_stream].rank;
    if (!wanted(a, send_t0, send_t1) || !wanted(b, recv_t0, recv_t1))
        return; /* both ends shown, or neither: no dangling arrows */
    unsigned long long id = ++E.trace_flows;
    fprintf(E.trace, ",\n{\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%u,\"name\":\"message\",\"cat\":\"p2p\",\"ts\":", id,
            a, SIM_TRACE_XFER_TID + send_stream);
    put_us(ns_of(send_t0));
    fprintf(E.trace, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%u,\"name\":\"message\","
                     "\"cat\":\"p2p\",\"ts\":",
            id, b, recv_stream);
    put_us(ns_of(recv_t0));
    fputs("}", E.trace);
}

void sim_trace_memory(int rank, const double *kind_bytes)
{
    double t = simgrid_get_clock();
    if (!wanted(rank, t, t))
        return;
    fprintf(E.trace, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory GB\",\"ts\":", rank);
    put_us(ns_of(t));
    fputs(",\"args\":{", E.trace);
    for (int i = 0; i < SIM_MEM_KIND_COUNT; i++)
        fprintf(E.trace, "%s\"%s\":%.6f", i ? "," : "", sim_mem_kind_name(i), kind_bytes[i] / 1e9);
    fputs("}}", E.trace);
}

/* Writes a formatted text as a JSON string (escaped). */
__attribute__((format(printf, 1, 2))) static void trace_str(const char *fmt, ...)
{
    char buf[2 * SIM_NAME_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sim_json_fputs(E.trace, buf);
}

static void trace_header(void)
{
    const sim_schedule *s = E.s;
    fprintf(E.trace, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"trainsim %s\",\"schedule\":",
            TRAINSIM_VERSION);
    sim_json_fputs(E.trace, s->meta.name);
    fputs(",\"platform\":", E.trace);
    sim_json_fputs(E.trace, E.m->name);
    fputs("},\n\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"name\":\"trainsim\",\"args\":{}}", E.trace);
    for (int r = 0; r < s->nranks; r++) {
        if (!rank_wanted(r))
            continue;
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":", r);
        trace_str("rank %d (%s)", r, E.m->host[r]);
        fputs("}}", E.trace);
    }
    for (uint32_t i = 0; i < s->nstreams; i++) {
        if (!rank_wanted(s->streams[i].rank))
            continue;
        const char *nm = sim_sched_strname(s, s->streams[i].name);
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":%s}}",
                s->streams[i].rank, i, qname(s->streams[i].name));
        fprintf(E.trace,
                ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
                s->streams[i].rank, i, i);
        fprintf(E.trace, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":",
                s->streams[i].rank, SIM_TRACE_XFER_TID + i);
        trace_str("%s transfers", nm);
        fputs("}}", E.trace);
    }
}

int sim_trace_open(sim_err *err)
{
    if (!E.opt.trace_path)
        return 0;
    if (!(E.trace_file = sim_out_open(&E.trace_out, E.opt.trace_path, err)))
        return -1;
    E.trace = E.trace_file;
    if (ends_with(E.opt.trace_path, ".gz") && !(E.trace = gz_stream(E.trace_file))) {
        E.trace = NULL;
        return sim_errf(err, "%s: cannot start gzip compression", E.opt.trace_path);
    }
    E.nqname = sim_sched_nstrings(E.s);
    E.qname = sim_xcalloc(E.nqname + 1, sizeof *E.qname, "the trace's names");
    for (uint32_t i = 0; i < E.nqname; i++)
        E.qname[i] = sim_json_quote(sim_sched_strname(E.s, (int32_t)i));
    trace_header();
    if (!E.opt.trace_detail)
        E.trace_pending = sim_xcalloc(E.s->nstreams + 1, sizeof(pending_xfer), "the trace's transfers");
    return 0;
}

int sim_trace_close(int ok, sim_err *err)
{
    int rc = 0;
    for (uint32_t i = 0; E.trace && i < E.s->nstreams; i++)
        flush_transfer(i);
    free(E.trace_pending);
    E.trace_pending = NULL;
    if (E.trace) {
        if (E.opt.trace_extra)
            fputs(E.opt.trace_extra, E.trace);
        fputs("\n]}\n", E.trace);
        if (E.trace != E.trace_file && fclose(E.trace) != 0 && ok) /* the gzip stream ends in the file */
            rc = sim_errf(err, "%s: write failed: compressing the trace", E.opt.trace_path), ok = 0;
        E.trace = NULL;
    }
    if (E.trace_file && ok && sim_out_commit(&E.trace_out, err) < 0)
        rc = -1;
    sim_out_discard(&E.trace_out); /* a no-op after a commit */
    E.trace_file = NULL;
    for (uint32_t i = 0; E.qname && i < E.nqname; i++)
        free(E.qname[i]);
    free(E.qname);
    E.qname = NULL;
    return rc;
}
