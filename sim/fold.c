/* fold.c — a schedule whose communicators span several whole servers,
 * simulated on two servers of each; and tensor-parallel peers on one
 * NVSwitch, simulated as two of them.
 *
 * On a generated cluster whose servers meet only at non-blocking switches
 * every server is alike.  A ring over s whole servers (members in server
 * order, as sim/collectives.c builds rings) gives every server the same
 * traffic: its GPUs pass the ring on inside the server, one flow leaves
 * through its NIC and one arrives.  Two of those servers closed into a ring
 * of their own see exactly that: one flow out and one in through each NIC.
 * So when the GPUs of the other servers do what the first server's GPUs do
 * (checked below, operation by operation) and talk only among themselves
 * (point-to-point peers and the other communicators stay on the kept or on
 * the dropped side), the two servers give every GPU's times, provided their
 * collectives are sized and priced for the whole ring (sim_comm.whole_ranks,
 * collectives.c).  A pipeline keeps two servers of every stage; the traffic
 * between stages runs between the same positions.  Inside a kept server the
 * same holds for a TP group over all its GPUs on one NVSwitch (tp_fold
 * below): each GPU's ring traffic goes through its own switch port.  Not
 * exact: an NCCL tree over folded servers is taken at its uncontended time
 * (sim_result.folded_trees counts them; `trainsim run` accepts them while
 * they are under 0.02 % of a GPU's iteration, else it folds less or not).
 * `trainsim run` folds by default (cli.c: run_reduced; the generator builds
 * only the kept ranks and a sample of the others, gpt.c); the planner's fast
 * fidelity too (eval.c); tests/sim/run_reduced.sh and
 * tests/planner/plan_fold.sh compare with unfolded simulation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fold.h"

/* Also no NVLink domain spanning servers (GB200 NVL72): there a ring
 * between servers of a domain runs over NVLink, not through the NICs.  A
 * fat tree without oversubscription: each leaf's uplink carries at most
 * what its servers' NICs do, so only the NICs limit a flow, as under one
 * switch (second_kept says which servers a group keeps there). */
int sim_fold_fabric(const sim_machine *m)
{
    for (int r = 1; r < m->ngpus; r++)
        if (m->nvswitch[r] >= 0 && m->nvswitch[r] == m->nvswitch[r - 1] && m->node[r] != m->node[r - 1])
            return 0;
    return m->platform_xml && (m->nnodes <= 1 || m->fabric == SIM_FABRIC_SWITCH ||
                               (m->fabric == SIM_FABRIC_FAT_TREE && m->nodes_per_leaf > 0 && !m->fabric_blocking));
}

/* The index in nodes[0 .. n) of the second server a group keeps beside
 * nodes[0]: the next one, or in a fat tree whose leaves the group spans the
 * first on another leaf.  A ring step takes its slowest hop's time (each
 * member waits for its predecessor's chunk, step after step), and a ring
 * over several leaves has hops between leaves (two more links' latency):
 * two servers on different leaves closed into a ring have only such hops,
 * so they step as the whole ring does. */
static int second_kept(const sim_machine *m, const int *nodes, int n)
{
    if (m->fabric != SIM_FABRIC_FAT_TREE)
        return 1;
    for (int j = 1; j < n; j++)
        if (nodes[j] / m->nodes_per_leaf != nodes[0] / m->nodes_per_leaf)
            return j;
    return 1;
}

void sim_fold_free(sim_fold *f)
{
    sim_sched_free(f->sched);
    sim_machine_free(f->mach);
    free(f->rep);
    memset(f, 0, sizeof *f);
}

/* The nodes of communicator c in ascending order (at most cap), their
 * count, and whether every node holds the same number of its members. */
static int comm_nodes(const sim_schedule *s, const sim_machine *m, int c, int *nodes, int cap, int *even)
{
    const sim_comm *cm = &s->comms[c];
    int nn = 0;
    for (int i = 0; i < cm->nranks; i++) {
        int nd = m->node[cm->ranks[i]], j = 0;
        while (j < nn && nodes[j] != nd)
            j++;
        if (j == nn) {
            if (nn == cap)
                return -1;
            nodes[nn++] = nd;
        }
    }
    for (int a = 1; a < nn; a++) /* insertion sort: few nodes */
        for (int b = a; b > 0 && nodes[b - 1] > nodes[b]; b--) {
            int t = nodes[b];
            nodes[b] = nodes[b - 1];
            nodes[b - 1] = t;
        }
    *even = nn > 0 && cm->nranks % nn == 0;
    for (int j = 0; j < nn && *even; j++) {
        int k = 0;
        for (int i = 0; i < cm->nranks; i++)
            k += m->node[cm->ranks[i]] == nodes[j];
        *even = k == cm->nranks / nn;
    }
    return nn;
}

/* The ops of rank r's streams, stream by stream, as a flat list per rank is
 * not kept: compare rank a (dropped) with rank b (its stand-in). */
static int same_work(const sim_schedule *s, const int *rank_streams, const int *first, int a, int b, const int *rep)
{
    int na = first[a + 1] - first[a], nb = first[b + 1] - first[b];
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++) {
        const sim_stream *x = &s->streams[rank_streams[first[a] + i]], *y = &s->streams[rank_streams[first[b] + i]];
        if (x->name != y->name || x->nops != y->nops)
            return 0;
        for (uint32_t k = 0; k < x->nops; k++) {
            const sim_op *p = &s->ops[x->ops[k]], *q = &s->ops[y->ops[k]];
            if (p->payload != q->payload || p->ndeps != q->ndeps)
                return 0;
            sim_op_kind kind = s->payloads[p->payload].kind;
            if ((kind == SIM_OP_SEND || kind == SIM_OP_RECV) && rep[p->arg] != q->arg)
                return 0;
        }
    }
    return 1;
}

/* Tensor-parallel peers inside a server: a communicator over all of a
 * kept server's GPUs (three or more), every one on the same NVSwitch, runs
 * its rings on the switch, each GPU through its own port; two of them
 * closed into a ring see what each sees in the whole one, as servers do
 * over NICs.  They stand for the others when every GPU of the server
 * reaches its NIC alone (GPUDirect RDMA under its own PCIe switch,
 * nic_direct) and the two keep NICs no dropped peer uses, there is no host
 * staging, and NCCL would not use NVLS there (the GPU has no NVLS figures:
 * a folded ring cannot stand for the switch's reductions).  Marks the
 * communicators foldable (over one server), the dropped peers and their
 * stand-in (the lowest rank; tp_rep holds each rank itself on entry);
 * returns how many fold. */
static int tp_fold(const sim_schedule *s, const sim_machine *m, int nnodes, const int *dropped_node, int *foldable,
                   int *drop_pos, int *tp_rep)
{
    int R = s->nranks, n_fold = 0;
    if (m->nstage > 0 || R < 3)
        return 0;
    int *on_node = calloc((size_t)nnodes, sizeof(int));
    if (!on_node)
        return 0;
    for (int r = 0; r < R; r++)
        on_node[m->node[r]]++;
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        int n = cm->nranks, nd = m->node[cm->ranks[0]], a = -1, b = -1, ok = n >= 3 && !foldable[c];
        ok = ok && !dropped_node[nd] && on_node[nd] == n && m->nvswitch[cm->ranks[0]] >= 0 &&
             m->gpus[m->gpu_model[cm->ranks[0]]].coll.nvls_eff <= 0;
        for (int i = 0; i < n && ok; i++) {
            int r = cm->ranks[i];
            ok = m->node[r] == nd && m->nvswitch[r] == m->nvswitch[cm->ranks[0]] && m->nic_direct[r] && !drop_pos[r];
            if (a < 0 || r < a) {
                b = a;
                a = r;
            } else if (b < 0 || r < b) {
                b = r;
            }
        }
        for (int i = 0; i < n && ok; i++) { /* the kept two's NICs are theirs */
            int r = cm->ranks[i];
            ok = r == a || r == b || (m->nic[r] != m->nic[a] && m->nic[r] != m->nic[b]);
        }
        if (!ok)
            continue;
        foldable[c] = 1;
        for (int i = 0; i < n; i++) {
            int r = cm->ranks[i];
            if (r != a && r != b) {
                drop_pos[r] = 1;
                tp_rep[r] = a;
            }
        }
        n_fold++;
    }
    free(on_node);
    return n_fold;
}

/* Folds s (see the header).  present: which ranks' operations s holds
 * (NULL: all); a dropped rank that is absent is taken to do its stand-in's
 * work (the generator made it so; a sample of them is present and
 * checked).  select: when not NULL, stops once the servers are chosen and
 * sets select[r] to 1 for a kept rank, 2 for a dropped one to check (those
 * on the last server of each folded group) and 0 for the others; returns 1
 * when something folds. */
static int fold(const sim_schedule *s, const sim_machine *m, int what, const unsigned char *present,
                unsigned char *select, sim_fold *f, sim_err *err)
{
    memset(f, 0, sizeof *f);
    int R = s->nranks, nnodes = 0, ok = sim_fold_fabric(m);
    for (int r = 0; r < R && ok; r++) {
        ok = m->gpu_model[r] == m->gpu_model[0];
        if (m->node[r] + 1 > nnodes)
            nnodes = m->node[r] + 1;
    }
    if (!ok)
        return 0;
    int *dropped_node = calloc((size_t)nnodes, sizeof(int));
    int *nodes = malloc(sizeof(int) * (size_t)nnodes), *foldable = calloc((size_t)s->ncomms + 1, sizeof(int));
    int *rep = malloc(sizeof(int) * (size_t)R), *newrank = malloc(sizeof(int) * (size_t)R);
    int *first = calloc((size_t)R + 1, sizeof(int)), *rank_streams = malloc(sizeof(int) * (s->nstreams + 1));
    uint32_t *map = NULL, *pmap = NULL, *deps = NULL;
    int *kept_rank = NULL; /* per folded rank: its rank in s */
    int *drop_pos = NULL, *tp_rep = NULL; /* a tensor-parallel peer dropped; its stand-in in its server */
    int *cmap = malloc(sizeof(int) * ((size_t)s->ncomms + 1)), *smap = malloc(sizeof(int) * (s->nstreams + 1));
    int rc = 0;
    if (!dropped_node || !nodes || !foldable || !rep || !newrank || !first || !rank_streams || !cmap ||
        !smap) {
        rc = sim_errf(err, "out of memory folding a schedule");
        goto out;
    }
    /* Communicators spread evenly over the same servers fold together when
     * their members are all the schedule's ranks on those servers (one
     * tensor-parallel group; the data-parallel groups of a stage, one per
     * position in the replica).  Groups over more servers go first; a group
     * whose servers another group already keeps or drops the other way is
     * left whole (ZeRO's data-parallel groups across folded tensor-parallel
     * replicas). */
    {
        int *set = malloc(sizeof(int) * (size_t)nnodes), *mark = calloc((size_t)R, sizeof(int));
        int *order = malloc(sizeof(int) * ((size_t)s->ncomms + 1)), *span = malloc(sizeof(int) * ((size_t)s->ncomms + 1));
        int *seen = calloc((size_t)s->ncomms + 1, sizeof(int)), *group = calloc((size_t)s->ncomms + 1, sizeof(int));
        int *kept_node = calloc((size_t)nnodes, sizeof(int));
        if (!set || !mark || !order || !span || !seen || !group || !kept_node) {
            rc = sim_errf(err, "out of memory folding a schedule");
            goto grouped;
        }
        for (int c = 0; c < s->ncomms; c++) {
            int even;
            span[c] = comm_nodes(s, m, c, set, nnodes, &even);
            if (!even)
                span[c] = 0;
            order[c] = c;
        }
        for (int a = 1; a < s->ncomms; a++) /* stable: by span, descending */
            for (int b = a; b > 0 && span[order[b - 1]] < span[order[b]]; b--) {
                int t = order[b];
                order[b] = order[b - 1];
                order[b - 1] = t;
            }
        for (int oi = 0; oi < s->ncomms; oi++) {
            int c = order[oi], even, nn = span[c];
            if (nn < 3 || seen[c] || !(what & SIM_FOLD_SERVERS))
                continue;
            comm_nodes(s, m, c, nodes, nnodes, &even);
            /* the communicators with this server set, and their members */
            int union_size = 0, on_nodes = 0, round = c + 1;
            for (int d = 0; d < s->ncomms; d++) {
                group[d] = 0;
                if (span[d] != nn || seen[d])
                    continue;
                comm_nodes(s, m, d, set, nnodes, &even);
                if (memcmp(set, nodes, sizeof(int) * (size_t)nn))
                    continue;
                group[d] = seen[d] = 1;
                for (int i = 0; i < s->comms[d].nranks; i++)
                    if (mark[s->comms[d].ranks[i]] != round) {
                        mark[s->comms[d].ranks[i]] = round;
                        union_size++;
                    }
            }
            for (int r = 0; r < R; r++)
                for (int j = 0; j < nn; j++)
                    on_nodes += m->node[r] == nodes[j];
            int agrees = 1, k2 = second_kept(m, nodes, nn);
            for (int j = 0; j < nn && agrees; j++)
                agrees = j == 0 || j == k2 ? !dropped_node[nodes[j]] : !kept_node[nodes[j]];
            if (union_size == on_nodes && agrees) { /* no other ranks share these servers */
                for (int d = 0; d < s->ncomms; d++)
                    if (group[d])
                        foldable[d] = nn;
                for (int j = 0; j < nn; j++)
                    (j == 0 || j == k2 ? kept_node : dropped_node)[nodes[j]] = 1;
            }
        }
    grouped:
        free(set);
        free(mark);
        free(order);
        free(span);
        free(seen);
        free(group);
        free(kept_node);
        if (rc < 0)
            goto out;
    }
    /* every foldable communicator keeps exactly its first server and the
     * second second_kept names */
    int any = 0;
    for (int c = 0; c < s->ncomms; c++)
        if (foldable[c]) {
            int even, nn = comm_nodes(s, m, c, nodes, nnodes, &even);
            for (int j = 0; j < nn && ok; j++)
                ok = dropped_node[nodes[j]] == !(j == 0 || j == second_kept(m, nodes, nn));
            any = 1;
        }
    if (!ok)
        goto out;
    drop_pos = calloc((size_t)R, sizeof(int));
    tp_rep = malloc(sizeof(int) * (size_t)R);
    if (!drop_pos || !tp_rep) {
        rc = sim_errf(err, "out of memory folding a schedule");
        goto out;
    }
    for (int r = 0; r < R; r++)
        tp_rep[r] = r;
    if (what & SIM_FOLD_PEERS)
        any += tp_fold(s, m, nnodes, dropped_node, foldable, drop_pos, tp_rep);
    if (!any)
        goto out;
    /* the stand-in of a dropped rank: the member of the same communicator in
     * its first server with the same place among its server's members */
    for (int r = 0; r < R; r++)
        rep[r] = r;
    for (int c = 0; c < s->ncomms; c++) {
        if (!foldable[c])
            continue;
        const sim_comm *cm = &s->comms[c];
        int even, nn = comm_nodes(s, m, c, nodes, nnodes, &even), per = cm->nranks / nn;
        int *local = calloc((size_t)nn, sizeof(int)), *base = malloc(sizeof(int) * (size_t)per);
        if (!local || !base) {
            free(local);
            free(base);
            rc = sim_errf(err, "out of memory folding a schedule");
            goto out;
        }
        /* members in rank order within each node */
        int *sorted = malloc(sizeof(int) * (size_t)cm->nranks);
        if (!sorted) {
            free(local);
            free(base);
            rc = sim_errf(err, "out of memory folding a schedule");
            goto out;
        }
        memcpy(sorted, cm->ranks, sizeof(int) * (size_t)cm->nranks);
        for (int a = 1; a < cm->nranks; a++)
            for (int b = a; b > 0 && sorted[b - 1] > sorted[b]; b--) {
                int t = sorted[b];
                sorted[b] = sorted[b - 1];
                sorted[b - 1] = t;
            }
        for (int i = 0; i < cm->nranks; i++) {
            int r = sorted[i], j = 0;
            while (nodes[j] != m->node[r])
                j++;
            if (j == 0)
                base[local[0]] = r;
            local[j]++;
        }
        memset(local, 0, sizeof(int) * (size_t)nn);
        for (int i = 0; i < cm->nranks; i++) {
            int r = sorted[i], j = 0;
            while (nodes[j] != m->node[r])
                j++;
            if (dropped_node[nodes[j]])
                rep[r] = base[local[j]];
            local[j]++;
        }
        free(sorted);
        free(local);
        free(base);
    }
    for (int r = 0; r < R; r++) /* then the peer's stand-in inside its server */
        if (drop_pos[rep[r]])
            rep[r] = tp_rep[rep[r]];
    if (select) {
        /* the kept ranks; to check: a dropped server's peers that stand where
         * kept ones do (the last server of a group over servers), and the
         * last peer of a group inside a server */
        int *pos = calloc((size_t)nnodes, sizeof(int)), *at = malloc(sizeof(int) * (size_t)R);
        if (!pos || !at) {
            free(pos);
            free(at);
            rc = sim_errf(err, "out of memory folding a schedule");
            goto out;
        }
        for (int r = 0; r < R; r++) {
            at[r] = pos[m->node[r]]++;
            select[r] = !dropped_node[m->node[r]] && !drop_pos[r];
        }
        for (int c = 0; c < s->ncomms; c++)
            if (foldable[c]) {
                const sim_comm *cm = &s->comms[c];
                int even, nn = comm_nodes(s, m, c, nodes, nnodes, &even), last = cm->ranks[0], jd = nn - 1;
                while (jd > 0 && !dropped_node[nodes[jd]])
                    jd--;
                for (int i = 0; i < cm->nranks; i++) {
                    int r = cm->ranks[i];
                    if (nn > 1 && m->node[r] == nodes[jd] && dropped_node[nodes[jd]] && at[r] == at[rep[r]])
                        select[r] = 2;
                    last = r > last ? r : last;
                }
                if (nn == 1)
                    select[last] = 2;
            }
        free(pos);
        free(at);
        rc = 1;
        goto out;
    }
    /* streams per rank, in creation order */
    for (uint32_t i = 0; i < s->nstreams; i++)
        first[s->streams[i].rank + 1]++;
    for (int r = 0; r < R; r++)
        first[r + 1] += first[r];
    {
        int *fill = calloc((size_t)R, sizeof(int));
        if (!fill) {
            rc = sim_errf(err, "out of memory folding a schedule");
            goto out;
        }
        for (uint32_t i = 0; i < s->nstreams; i++) {
            int r = s->streams[i].rank;
            rank_streams[first[r] + fill[r]++] = (int)i;
        }
        free(fill);
    }
    int nk = 0;
    for (int r = 0; r < R; r++) {
        int drop = dropped_node[m->node[r]] || drop_pos[r];
        newrank[r] = drop ? -1 : nk++;
        if (drop && (rep[r] == r || ((!present || present[r]) && !same_work(s, rank_streams, first, r, rep[r], rep))))
            goto out; /* not a member of a folded group, or not doing its stand-in's work */
        if (!drop && present && !present[r])
            goto out; /* a kept rank must be there */
    }
    /* what crosses between kept and dropped ranks would be lost */
    for (uint32_t i = 0; i < s->nops; i++) {
        const sim_op *o = &s->ops[i];
        int r = sim_sched_rank_of(s, i), kept = newrank[r] >= 0;
        const sim_payload *p = &s->payloads[o->payload];
        if ((p->kind == SIM_OP_SEND || p->kind == SIM_OP_RECV) && (newrank[o->arg] >= 0) != kept)
            goto out;
        if (p->kind == SIM_OP_COLLECTIVE && foldable[o->arg] && !sim_coll_foldable(p))
            goto out; /* a broadcast, an explicit tree or an all-to-all needs every member */
        for (uint32_t k = 0; k < o->ndeps; k++)
            if ((newrank[sim_sched_rank_of(s, s->deps[o->dep_first + k])] >= 0) != kept)
                goto out;
    }
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        int nkept = 0;
        for (int i = 0; i < cm->nranks; i++)
            nkept += newrank[cm->ranks[i]] >= 0;
        if (!foldable[c] && nkept && nkept != cm->nranks)
            goto out;
    }

    /* ---- the folded schedule ---- */
    f->sched = sim_sched_new(nk);
    f->rep = malloc(sizeof(int) * (size_t)R);
    kept_rank = malloc(sizeof(int) * ((size_t)nk + 1));
    map = malloc(sizeof(uint32_t) * (s->nops + 1));
    pmap = malloc(sizeof(uint32_t) * (s->npayloads + 1));
    deps = malloc(sizeof(uint32_t) * 8);
    int maxdeps = 8;
    if (!f->sched || !f->rep || !kept_rank || !map || !pmap || !deps) {
        rc = sim_errf(err, "out of memory folding a schedule");
        goto out;
    }
    f->sched->meta = s->meta;
    f->sched->layout = (sim_layout){0}; /* the kept ranks are not the whole layout */
    for (int r = 0; r < R; r++)
        f->rep[r] = newrank[rep[r]];
    int *kr = malloc(sizeof(int) * ((size_t)R + 1));
    if (!kr) {
        rc = sim_errf(err, "out of memory folding a schedule");
        goto out;
    }
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        int n = 0;
        for (int i = 0; i < cm->nranks; i++)
            if (newrank[cm->ranks[i]] >= 0)
                kr[n++] = newrank[cm->ranks[i]];
        cmap[c] = -1;
        if (!n)
            continue;
        const char *nm = sim_sched_strname(s, cm->name);
        cmap[c] = sim_sched_comm(f->sched, nm ? nm : "comm", kr, n);
        if (foldable[c]) {
            f->sched->comms[cmap[c]].whole_ranks = cm->nranks;
            f->sched->comms[cmap[c]].whole_nodes = foldable[c];
        }
    }
    free(kr);
    for (uint32_t i = 0; i < s->nstreams; i++)
        smap[i] = -1;
    for (uint32_t i = 0; i < s->npayloads; i++)
        pmap[i] = UINT32_MAX;
    /* the kept ops' new ids first: a schedule read from a file may depend
     * on an op that comes later in it */
    for (uint32_t id = 0, next = 0; id < s->nops; id++)
        map[id] = newrank[sim_sched_rank_of(s, id)] >= 0 ? next++ : UINT32_MAX;
    for (uint32_t id = 0; id < s->nops; id++) {
        const sim_op *o = &s->ops[id];
        int r = sim_sched_rank_of(s, id);
        if (newrank[r] < 0)
            continue;
        if (o->ndeps > maxdeps) {
            maxdeps = o->ndeps;
            uint32_t *d = realloc(deps, sizeof(uint32_t) * (size_t)maxdeps);
            if (!d) {
                rc = sim_errf(err, "out of memory folding a schedule");
                goto out;
            }
            deps = d;
        }
        for (uint32_t k = 0; k < o->ndeps; k++)
            deps[k] = map[s->deps[o->dep_first + k]];
        if (smap[o->stream] < 0)
            smap[o->stream] = sim_sched_stream_role(f->sched, newrank[r], sim_sched_strname(s, s->streams[o->stream].name),
                                                    s->streams[o->stream].role);
        if (pmap[o->payload] == UINT32_MAX)
            pmap[o->payload] = sim_sched_copy_payload(f->sched, s, o->payload);
        sim_op_kind kind = s->payloads[o->payload].kind;
        int32_t arg = o->arg;
        if (kind == SIM_OP_COLLECTIVE)
            arg = cmap[arg];
        else if (kind == SIM_OP_SEND || kind == SIM_OP_RECV)
            arg = newrank[arg];
        sim_tags t = {o->layer, o->micro, o->subbatch, o->phase};
        sim_sched_add(f->sched, smap[o->stream], pmap[o->payload], arg, t, o->ndeps ? deps : NULL, o->ndeps);
    }
    for (int r = 0; r < R; r++)
        if (newrank[r] >= 0)
            kept_rank[newrank[r]] = r;
    if (!(f->mach = sim_machine_subset(m, kept_rank, nk))) {
        rc = sim_errf(err, "out of memory folding a schedule");
        goto out;
    }
    f->nranks = R;
    rc = 1;
out:
    if (rc != 1 || select)
        sim_fold_free(f);
    free(dropped_node);
    free(nodes);
    free(foldable);
    free(rep);
    free(newrank);
    free(first);
    free(rank_streams);
    free(cmap);
    free(smap);
    free(map);
    free(pmap);
    free(deps);
    free(kept_rank);
    free(drop_pos);
    free(tp_rep);
    return rc;
}

int sim_fold_expand(const sim_fold *f, sim_result *r, sim_err *err)
{
    int n = f->nranks;
    sim_rank_result *all = malloc(sizeof *all * (size_t)(n > 0 ? n : 1));
    if (!all)
        return sim_errf(err, "out of memory expanding a folded result");
    sim_result x = *r;
    x.nranks = n;
    x.rank = all;
    x.compute_s = x.comm_s = x.exposed_comm_s = x.idle_s = x.peak_mem = 0;
    memset(x.kernel_s, 0, sizeof x.kernel_s);
    x.peak_mem_rank = 0;
    for (int i = 0; i < n; i++) {
        const sim_rank_result *R = &r->rank[f->rep[i]];
        all[i] = *R;
        x.compute_s += R->compute_s / n;
        x.comm_s += R->comm_s / n;
        x.exposed_comm_s += R->exposed_comm_s / n;
        x.idle_s += R->idle_s / n;
        for (int c = 0; c < SIM_KCLASS_COUNT; c++)
            x.kernel_s[c] += R->kernel_s[c] / n;
        if (R->peak_mem > x.peak_mem) {
            x.peak_mem = R->peak_mem;
            x.peak_mem_rank = i;
        }
    }
    free(r->rank);
    *r = x;
    return 0;
}

int sim_fold_schedule(const sim_schedule *s, const sim_machine *m, int what, sim_fold *f, sim_err *err)
{
    return fold(s, m, what, NULL, NULL, f, err);
}

int sim_fold_select(const sim_schedule *s, const sim_machine *m, int what, unsigned char *select, sim_err *err)
{
    sim_fold f;
    return fold(s, m, what, NULL, select, &f, err);
}

int sim_fold_partial(const sim_schedule *s, const sim_machine *m, int what, const unsigned char *present,
                     sim_fold *f, sim_err *err)
{
    return fold(s, m, what, present, NULL, f, err);
}

int sim_run_reduced(const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_fold *pre,
                    sim_regen_fn regen, void *ctx, int isolate, int retry, sim_result *r, sim_reduced *reduced,
                    sim_err *err)
{
    static const int tries[] = {SIM_FOLD_ALL, SIM_FOLD_PEERS};
    int (*whole)(const sim_schedule *, const sim_machine *, const sim_options *, sim_result *, sim_err *) =
        isolate ? sim_run_isolated : sim_run;
    if (reduced)
        memset(reduced, 0, sizeof *reduced);
    if (pre && !pre->sched)
        return whole(s, m, opt, r, err);
    for (int t = 0; t < 2; t++) {
        sim_fold f;
        int folded = 1;
        if (t == 0 && pre) {
            f = *pre;
            memset(pre, 0, sizeof *pre);
        } else if (pre) {
            sim_schedule *own = regen(ctx, tries[t], &f, err);
            if (!own)
                return -1;
            if (!f.sched) { /* whole: run it */
                int rc = whole(own, m, opt, r, err);
                sim_sched_free(own);
                return rc;
            }
            sim_sched_free(own);
        } else if ((folded = sim_fold_schedule(s, m, tries[t], &f, err)) < 0) {
            return -1;
        }
        if (!folded)
            break;
        /* in a child: SimGrid runs once per process, and another try may
         * have to run here after it */
        int rc = sim_run_isolated(f.sched, f.mach, opt, r, err);
        /* tree all-reduces over folded servers were taken at their uncontended
         * time: exact enough while a GPU spends under 0.02 % of the iteration
         * in them (five times slower under contention would still be within
         * 0.1 %), else the next try */
        if (rc == 0 && r->folded_trees > 0 && r->folded_tree_s / f.sched->nranks > 2e-4 * r->iteration_s) {
            sim_result_free(r);
            sim_fold_free(&f);
            if (!retry)
                return 1;
            continue;
        }
        if (rc == 0 && (rc = sim_fold_expand(&f, r, err)) < 0)
            sim_result_free(r);
        if (rc == 0 && reduced) {
            reduced->ranks = f.sched->nranks;
            reduced->tree_s = r->folded_trees ? r->folded_tree_s / f.sched->nranks : 0;
        }
        sim_fold_free(&f);
        return rc;
    }
    if (!pre) /* s is whole */
        return whole(s, m, opt, r, err);
    sim_schedule *all = regen(ctx, 0, NULL, err);
    if (!all)
        return -1;
    int rc = whole(all, m, opt, r, err);
    sim_sched_free(all);
    return rc;
}

