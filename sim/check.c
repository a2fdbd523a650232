/* check.c — sim_sched_check(): is a schedule well formed, and can it finish?
 *
 * Three static passes (ranges; collectives matched across communicator
 * members; messages matched across channels), then a dry run of the engine's
 * synchronisation without time: streams advance while their dependencies are
 * done, collectives complete when every member has arrived, a send and its
 * receive complete together.  Whatever cannot advance at the end is a cycle
 * or a deadlock, and is reported by the operations it is stuck on.  An
 * operation is done iff its stream's position is past op.seq, so the dry run
 * needs state per stream, not per operation. */
#include "schedule.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#define DESC 320

typedef struct p2p_ref {
    int src, dst, tag;
    uint32_t op;
} p2p_ref;

typedef struct pair {
    uint32_t op, partner;
} pair;

static int cmp_p2p(const void *a, const void *b)
{
    const p2p_ref *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->op < y->op ? -1 : x->op > y->op;
}

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return x->op < y->op ? -1 : x->op > y->op;
}

/* Member index of rank in communicator c, or -1. */
static int member_of(const sim_comm *c, int rank)
{
    for (int i = 0; i < c->nranks; i++)
        if (c->ranks[i] == rank)
            return i;
    return -1;
}

static int check_ranges(const sim_schedule *s, sim_err *err)
{
    char d[DESC];
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        if (cm->nranks < 1)
            return sim_errf(err, "communicator %d (\"%s\") has no members", c, sim_sched_strname(s, cm->name));
        for (int i = 0; i < cm->nranks; i++) {
            if (cm->ranks[i] < 0 || cm->ranks[i] >= s->nranks)
                return sim_errf(err, "communicator %d (\"%s\"): member %d is rank %d, but the schedule has ranks 0..%d",
                                c, sim_sched_strname(s, cm->name), i, cm->ranks[i], s->nranks - 1);
            for (int j = 0; j < i; j++)
                if (cm->ranks[j] == cm->ranks[i])
                    return sim_errf(err, "communicator %d (\"%s\"): rank %d is listed twice", c,
                                    sim_sched_strname(s, cm->name), cm->ranks[i]);
        }
    }
    for (uint32_t st = 0; st < s->nstreams; st++)
        if (s->streams[st].rank < 0 || s->streams[st].rank >= s->nranks)
            return sim_errf(err, "stream \"%s\" belongs to rank %d, but the schedule has ranks 0..%d",
                            sim_sched_strname(s, s->streams[st].name), s->streams[st].rank, s->nranks - 1);
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        const sim_payload *p = &s->payloads[o->payload];
        int rank = s->streams[o->stream].rank;
        for (uint32_t k = 0; k < o->ndeps; k++) {
            uint32_t dep = s->deps[o->dep_first + k];
            if (dep >= s->nops || dep == i) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s depends on op %u, which %s", d, dep,
                                dep == i ? "is itself" : "does not exist");
            }
        }
        switch (p->kind) {
        case SIM_OP_COLLECTIVE:
            if (o->arg < 0 || o->arg >= s->ncomms) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s uses communicator %d, but the schedule has %d communicators", d, o->arg,
                                s->ncomms);
            }
            if (member_of(&s->comms[o->arg], rank) < 0) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s uses communicator %d (\"%s\"), which does not include rank %d", d,
                                o->arg, sim_sched_strname(s, s->comms[o->arg].name), rank);
            }
            if ((p->sub == SIM_COLL_BROADCAST || p->sub == SIM_COLL_REDUCE) &&
                (p->root < 0 || p->root >= s->comms[o->arg].nranks)) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s has root %d, outside the communicator's %d members", d, p->root,
                                s->comms[o->arg].nranks);
            }
            if (p->sub == SIM_COLL_ALLTOALLV) {
                int64_t sum = 0;
                int bad = p->m < 0 || p->n != s->comms[o->arg].nranks || (uint64_t)(p->m + p->n) > s->nsizes;
                for (int64_t q = 0; !bad && q < p->n; q++) {
                    bad = s->sizes[p->m + q] < 0;
                    sum += s->sizes[p->m + q];
                }
                if (bad || sum != p->bytes) {
                    sim_sched_describe(s, i, d, sizeof d);
                    return sim_errf(err, "%s is an all-to-allv whose send sizes are not %d counts >= 0 summing to its bytes",
                                    d, s->comms[o->arg].nranks);
                }
            }
            /* fallthrough */
        case SIM_OP_SEND:
        case SIM_OP_RECV:
            if (p->bytes < 0) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s moves %lld bytes; expected a count >= 0", d, (long long)p->bytes);
            }
            if (p->kind != SIM_OP_COLLECTIVE && (o->arg < 0 || o->arg >= s->nranks || o->arg == rank)) {
                sim_sched_describe(s, i, d, sizeof d);
                return sim_errf(err, "%s has peer rank %d; expected another rank in 0..%d", d, o->arg,
                                s->nranks - 1);
            }
            break;
        default:
            break;
        }
    }
    return 0;
}

/* Every member issues the same collectives on a communicator, in the same
 * order, from a single stream. */
static int check_collectives(const sim_schedule *s, sim_err *err)
{
    if (s->ncomms == 0)
        return 0;
    int rc = 0;
    size_t nslots = 0;
    size_t *base = sim_xmalloc((size_t)s->ncomms * sizeof *base, "the schedule check");
    for (int c = 0; c < s->ncomms; c++) {
        base[c] = nslots;
        nslots += (size_t)s->comms[c].nranks;
    }
    uint32_t *count = sim_xcalloc(nslots, sizeof *count, "the schedule check");
    int64_t *stream_of = sim_xmalloc(nslots * sizeof *stream_of, "the schedule check");
    for (size_t i = 0; i < nslots; i++)
        stream_of[i] = -1;
    uint32_t **seq = sim_xcalloc(nslots, sizeof *seq, "the schedule check");
    uint32_t *cap = sim_xcalloc(nslots, sizeof *cap, "the schedule check");
    char d1[DESC], d2[DESC];

    for (uint32_t st = 0; st < s->nstreams && rc == 0; st++) {
        const sim_stream *S = &s->streams[st];
        for (uint32_t k = 0; k < S->nops; k++) {
            uint32_t op = S->ops[k];
            const sim_op *o = &s->ops[op];
            if (s->payloads[o->payload].kind != SIM_OP_COLLECTIVE)
                continue;
            size_t slot = base[o->arg] + (size_t)member_of(&s->comms[o->arg], S->rank);
            if (stream_of[slot] >= 0 && stream_of[slot] != (int64_t)st) {
                sim_sched_describe(s, op, d1, sizeof d1);
                rc = sim_errf(err, "%s: rank %d issues collectives on communicator \"%s\" from two streams (\"%s\" and \"%s\"); "
                              "a communicator is used from one stream per rank, as in NCCL",
                              d1, S->rank, sim_sched_strname(s, s->comms[o->arg].name),
                              sim_sched_strname(s, s->streams[stream_of[slot]].name), sim_sched_strname(s, S->name));
                break;
            }
            stream_of[slot] = st;
            if (count[slot] == cap[slot]) {
                cap[slot] = cap[slot] ? cap[slot] * 2 : 8;
                seq[slot] = sim_xrealloc(seq[slot], cap[slot], sizeof **seq, "the schedule check");
            }
            seq[slot][count[slot]++] = op;
        }
    }
    for (int c = 0; c < s->ncomms && rc == 0; c++) {
        const sim_comm *cm = &s->comms[c];
        size_t b = base[c];
        for (int m = 1; m < cm->nranks && rc == 0; m++) {
            if (count[b + m] != count[b]) {
                rc = sim_errf(err, "collective mismatch on communicator %d (\"%s\"): rank %d issues %u collectives on it but rank %d issues %u; "
                              "every member must issue the same collectives in the same order",
                              c, sim_sched_strname(s, cm->name), cm->ranks[0], count[b], cm->ranks[m], count[b + m]);
                break;
            }
            for (uint32_t k = 0; k < count[b]; k++) {
                const sim_payload *p0 = &s->payloads[s->ops[seq[b][k]].payload];
                const sim_payload *pm = &s->payloads[s->ops[seq[b + m][k]].payload];
                /* an all-to-allv's members send different amounts by design */
                int same_bytes = p0->bytes == pm->bytes || (p0->sub == SIM_COLL_ALLTOALLV && pm->sub == SIM_COLL_ALLTOALLV);
                if (p0->sub != pm->sub || !same_bytes || p0->root != pm->root || p0->algo != pm->algo) {
                    sim_sched_describe(s, seq[b][k], d1, sizeof d1);
                    sim_sched_describe(s, seq[b + m][k], d2, sizeof d2);
                    rc = sim_errf(err, "collective mismatch on communicator %d (\"%s\"), collective #%u: %s is %s of %lld bytes (root %d) "
                                  "but %s is %s of %lld bytes (root %d)",
                                  c, sim_sched_strname(s, cm->name), k, d1, sim_coll_name(p0->sub), (long long)p0->bytes,
                                  p0->root, d2, sim_coll_name(pm->sub), (long long)pm->bytes, pm->root);
                    break;
                }
            }
        }
    }
    for (size_t i = 0; i < nslots; i++)
        free(seq[i]);
    free(seq);
    free(cap);
    free(count);
    free(stream_of);
    free(base);
    return rc;
}

/* Sends and receives of a channel (src, dst, tag) match one to one, in
 * order, with equal sizes; fills pairs (op -> partner), sorted by op. */
static int check_messages(const sim_schedule *s, pair **pairs_out, size_t *npairs_out, sim_err *err)
{
    size_t ns = 0, nr = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        int k = s->payloads[s->ops[i].payload].kind;
        ns += k == SIM_OP_SEND;
        nr += k == SIM_OP_RECV;
    }
    p2p_ref *sends = sim_xmalloc((ns + 1) * sizeof *sends, "the schedule check");
    p2p_ref *recvs = sim_xmalloc((nr + 1) * sizeof *recvs, "the schedule check");
    size_t is = 0, ir = 0;
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_payload *p = &s->payloads[s->ops[i].payload];
        int rank = s->streams[s->ops[i].stream].rank;
        if (p->kind == SIM_OP_SEND)
            sends[is++] = (p2p_ref){rank, s->ops[i].arg, p->tag, i};
        else if (p->kind == SIM_OP_RECV)
            recvs[ir++] = (p2p_ref){s->ops[i].arg, rank, p->tag, i};
    }
    qsort(sends, ns, sizeof *sends, cmp_p2p);
    qsort(recvs, nr, sizeof *recvs, cmp_p2p);
    pair *pairs = sim_xmalloc((2 * ns + 1) * sizeof *pairs, "the schedule check");
    size_t np = 0;
    int rc = 0;
    char d1[DESC], d2[DESC];
    size_t a = 0, b = 0;
    while ((a < ns || b < nr) && rc == 0) {
        int c = a >= ns ? 1 : b >= nr ? -1 : cmp_p2p(&(p2p_ref){sends[a].src, sends[a].dst, sends[a].tag, 0},
                                                       &(p2p_ref){recvs[b].src, recvs[b].dst, recvs[b].tag, 0});
        if (c < 0) {
            sim_sched_describe(s, sends[a].op, d1, sizeof d1);
            rc = sim_errf(err, "%s sends to rank %d (tag %d), but rank %d posts no matching receive from rank %d", d1,
                          sends[a].dst, sends[a].tag, sends[a].dst, sends[a].src);
        } else if (c > 0) {
            sim_sched_describe(s, recvs[b].op, d1, sizeof d1);
            rc = sim_errf(err, "%s receives from rank %d (tag %d), but rank %d sends nothing to rank %d", d1,
                          recvs[b].src, recvs[b].tag, recvs[b].src, recvs[b].dst);
        } else {
            int64_t bs = s->payloads[s->ops[sends[a].op].payload].bytes;
            int64_t br = s->payloads[s->ops[recvs[b].op].payload].bytes;
            uint32_t sst = s->ops[sends[a].op].stream, rst = s->ops[recvs[b].op].stream;
            if (a > 0 && cmp_p2p(&(p2p_ref){sends[a - 1].src, sends[a - 1].dst, sends[a - 1].tag, 0},
                                 &(p2p_ref){sends[a].src, sends[a].dst, sends[a].tag, 0}) == 0 &&
                (s->ops[sends[a - 1].op].stream != sst || s->ops[recvs[b - 1].op].stream != rst)) {
                sim_sched_describe(s, sends[a].op, d1, sizeof d1);
                rc = sim_errf(err, "%s: messages from rank %d to rank %d (tag %d) are sent or received from more than one stream; "
                              "use one stream per direction, or distinct tags", d1, sends[a].src, sends[a].dst, sends[a].tag);
                break;
            }
            if (bs != br) {
                sim_sched_describe(s, sends[a].op, d1, sizeof d1);
                sim_sched_describe(s, recvs[b].op, d2, sizeof d2);
                rc = sim_errf(err, "message size mismatch: %s sends %lld bytes but its matching %s expects %lld", d1,
                              (long long)bs, d2, (long long)br);
                break;
            }
            pairs[np++] = (pair){sends[a].op, recvs[b].op};
            pairs[np++] = (pair){recvs[b].op, sends[a].op};
            a++;
            b++;
        }
    }
    free(sends);
    free(recvs);
    if (rc) {
        free(pairs);
        return rc;
    }
    qsort(pairs, np, sizeof *pairs, cmp_pair);
    *pairs_out = pairs;
    *npairs_out = np;
    return 0;
}

static uint32_t partner_of(const pair *pairs, size_t n, uint32_t op)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pairs[mid].op < op)
            lo = mid + 1;
        else
            hi = mid;
    }
    return pairs[lo].partner;
}

/* ---- dry run ---------------------------------------------------------- */

typedef struct dry {
    const sim_schedule *s;
    const pair *pairs;
    size_t npairs;
    uint32_t *pos;       /* per stream */
    uint8_t *state;      /* per stream: 0 running, 1 at collective, 2 at message */
    uint32_t *wait_head; /* per stream: first stream waiting on it */
    uint32_t *wait_next; /* per stream: next in the waiter list it is on */
    uint32_t *coll_head; /* per communicator: arrived streams */
    int *coll_count;
    uint32_t *queue;
    uint8_t *queued;
    size_t qhead, qtail, qcount; /* ring buffer of nstreams entries */
} dry;

#define NONE UINT32_MAX

static void push(dry *D, uint32_t st)
{
    if (D->queued[st])
        return;
    D->queued[st] = 1;
    D->queue[D->qtail] = st;
    D->qtail = (D->qtail + 1) % D->s->nstreams;
    D->qcount++;
}

static int op_done(const dry *D, uint32_t op)
{
    return D->pos[D->s->ops[op].stream] > D->s->ops[op].seq;
}

static void advance(dry *D, uint32_t st)
{
    D->pos[st]++;
    D->state[st] = 0;
    for (uint32_t w = D->wait_head[st]; w != NONE;) {
        uint32_t next = D->wait_next[w];
        D->wait_next[w] = NONE;
        push(D, w);
        w = next;
    }
    D->wait_head[st] = NONE;
}

static void run_stream(dry *D, uint32_t st)
{
    const sim_schedule *s = D->s;
    const sim_stream *S = &s->streams[st];
    while (D->pos[st] < S->nops) {
        if (D->state[st])
            return; /* waiting at a rendezvous */
        uint32_t op = S->ops[D->pos[st]];
        const sim_op *o = &s->ops[op];
        for (uint32_t k = 0; k < o->ndeps; k++) {
            uint32_t dep = s->deps[o->dep_first + k];
            if (!op_done(D, dep)) {
                uint32_t on = s->ops[dep].stream;
                D->wait_next[st] = D->wait_head[on];
                D->wait_head[on] = st;
                return;
            }
        }
        const sim_payload *p = &s->payloads[o->payload];
        if (p->kind == SIM_OP_COLLECTIVE) {
            int c = o->arg;
            D->state[st] = 1;
            D->wait_next[st] = D->coll_head[c];
            D->coll_head[c] = st;
            if (++D->coll_count[c] < s->comms[c].nranks)
                return;
            uint32_t w = D->coll_head[c];
            D->coll_head[c] = NONE;
            D->coll_count[c] = 0;
            while (w != NONE) {
                uint32_t next = D->wait_next[w];
                D->wait_next[w] = NONE;
                advance(D, w);
                push(D, w);
                w = next;
            }
            return;
        }
        if (p->kind == SIM_OP_SEND || p->kind == SIM_OP_RECV) {
            uint32_t partner = partner_of(D->pairs, D->npairs, op);
            uint32_t pst = s->ops[partner].stream;
            if (D->state[pst] == 2 && s->streams[pst].ops[D->pos[pst]] == partner) {
                advance(D, pst);
                push(D, pst);
                advance(D, st);
                continue;
            }
            D->state[st] = 2;
            return;
        }
        advance(D, st);
    }
}

static int report_stuck(const dry *D, sim_err *err)
{
    const sim_schedule *s = D->s;
    char buf[sizeof err->msg], d[DESC], d2[DESC];
    int w = snprintf(buf, sizeof buf, "the schedule cannot finish (a dependency cycle or a deadlock); stuck:");
    int shown = 0, stuck = 0;
    for (uint32_t st = 0; st < s->nstreams; st++) {
        if (D->pos[st] >= s->streams[st].nops)
            continue;
        stuck++;
        if (shown >= 6 || w < 0 || (size_t)w >= sizeof buf - 16)
            continue;
        shown++;
        uint32_t op = s->streams[st].ops[D->pos[st]];
        sim_sched_describe(s, op, d, sizeof d);
        const sim_op *o = &s->ops[op];
        const sim_payload *p = &s->payloads[o->payload];
        const char *why = "";
        d2[0] = 0;
        for (uint32_t k = 0; k < o->ndeps; k++) {
            uint32_t dep = s->deps[o->dep_first + k];
            if (!op_done(D, dep)) {
                sim_sched_describe(s, dep, d2, sizeof d2);
                why = "waits for";
                break;
            }
        }
        if (!*why && p->kind == SIM_OP_COLLECTIVE) {
            why = "waits for the other members of its communicator";
            snprintf(d2, sizeof d2, "\"%s\" (%d of %d arrived)", sim_sched_strname(s, s->comms[o->arg].name),
                     D->coll_count[o->arg], s->comms[o->arg].nranks);
        } else if (!*why) {
            why = "waits for its matching";
            sim_sched_describe(s, partner_of(D->pairs, D->npairs, op), d2, sizeof d2);
        }
        w += snprintf(buf + w, sizeof buf - (size_t)w, "\n  %s %s %s", d, why, d2);
    }
    if (stuck > shown && w > 0 && (size_t)w < sizeof buf)
        snprintf(buf + w, sizeof buf - (size_t)w, "\n  ... and %d more streams", stuck - shown);
    return sim_errf(err, "%s", buf);
}

int sim_sched_check(const sim_schedule *s, sim_err *err)
{
    if (s->nranks < 1)
        return sim_errf(err, "the schedule has no ranks");
    if (check_ranges(s, err) || check_collectives(s, err))
        return -1;
    pair *pairs = NULL;
    size_t npairs = 0;
    if (check_messages(s, &pairs, &npairs, err))
        return -1;
    if (s->nstreams == 0) {
        free(pairs);
        return 0;
    }
    dry D = {.s = s, .pairs = pairs, .npairs = npairs};
    uint32_t n = s->nstreams;
    D.pos = sim_xcalloc(n, sizeof *D.pos, "the schedule check");
    D.state = sim_xcalloc(n, 1, "the schedule check");
    D.wait_head = sim_xmalloc(n * sizeof *D.wait_head, "the schedule check");
    D.wait_next = sim_xmalloc(n * sizeof *D.wait_next, "the schedule check");
    D.coll_head = sim_xmalloc(((size_t)s->ncomms + 1) * sizeof *D.coll_head, "the schedule check");
    D.coll_count = sim_xcalloc((size_t)s->ncomms + 1, sizeof *D.coll_count, "the schedule check");
    D.queue = sim_xmalloc(n * sizeof *D.queue, "the schedule check");
    D.queued = sim_xcalloc(n, 1, "the schedule check");
    memset(D.wait_head, 0xff, n * sizeof *D.wait_head);
    memset(D.wait_next, 0xff, n * sizeof *D.wait_next);
    memset(D.coll_head, 0xff, ((size_t)s->ncomms + 1) * sizeof *D.coll_head);
    for (uint32_t st = 0; st < n; st++)
        push(&D, st);
    while (D.qcount > 0) {
        uint32_t st = D.queue[D.qhead];
        D.qhead = (D.qhead + 1) % n;
        D.qcount--;
        D.queued[st] = 0;
        run_stream(&D, st);
    }
    int rc = 0;
    for (uint32_t st = 0; st < n && rc == 0; st++)
        if (D.pos[st] < s->streams[st].nops)
            rc = report_stuck(&D, err);
    free(D.pos);
    free(D.state);
    free(D.wait_head);
    free(D.wait_next);
    free(D.coll_head);
    free(D.coll_count);
    free(D.queue);
    free(D.queued);
    free(pairs);
    return rc;
}
