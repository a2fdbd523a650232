/* xmlplat.c — hand-written SimGrid XML platforms (plat_from_xml).
 *
 * SimGrid parses the XML itself when the engine loads it; here we only need
 * to know which hosts are GPUs.  A light scan (no XML library) finds each
 * <host id="..."> element and its <prop id="trainsim:gpu|rank|node"
 * value="..."/> children, skipping comments.  Hosts without trainsim:gpu are
 * ordinary hosts (CPUs, storage) and are ignored.  Ranks follow
 * trainsim:rank when every GPU host has one, else document order; without
 * trainsim:node every GPU host is its own node.  Optional: trainsim:ring_pos
 * on GPU hosts (all or none; the host's place in its node's ring order) and
 * trainsim:ring_bidir = 1 (rings inside a node run both ways), and
 * trainsim:cache_bytes on a <link> (a host-memory link of staged transfers
 * and its cache) — the generated platforms carry them (sim/machine.h).
 * Syntax errors in the rest of the file are SimGrid's to report when it
 * loads the platform. */
#include "platform.h"
#include "catalog.h"
#include "sim/fileio.h"

#include <stdlib.h>
#include <string.h>

typedef struct xhost {
    char id[128];
    char gpu[48];
    int rank, node, ring_pos, bidir; /* -1 = not given */
} xhost;

/* Value of attribute name="..." (or '...') inside the tag [tag, end). */
static int attr(const char *tag, const char *end, const char *name, char *out, size_t n)
{
    size_t k = strlen(name);
    for (const char *p = tag; p + k + 2 < end; p++) {
        if ((p == tag || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == '\r') &&
            strncmp(p, name, k) == 0) {
            const char *q = p + k;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (q >= end || *q != '=')
                continue;
            q++;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (q >= end || (*q != '"' && *q != '\''))
                continue;
            char quote = *q++;
            const char *e = memchr(q, quote, (size_t)(end - q));
            if (!e)
                return 0;
            snprintf(out, n, "%.*s", (int)(e - q), q);
            return 1;
        }
    }
    return 0;
}

/* Skips a comment starting at p ("<!--"); returns the position after it. */
static const char *skip_comment(const char *p)
{
    const char *e = strstr(p + 4, "-->");
    return e ? e + 3 : p + strlen(p);
}

/* The next <tag ...> element at or after p, comments skipped: *tag_end is
 * its '>', [*body, *body_end) its content (empty when self-closing).
 * Returns its start, NULL when there is none, or tag_end NULL when the tag
 * is unterminated. */
static const char *next_elem(const char *p, const char *tag, const char **tag_end, const char **body,
                             const char **body_end)
{
    size_t k = strlen(tag);
    char close[32];
    snprintf(close, sizeof close, "</%s>", tag + 1);
    while ((p = strchr(p, '<')) != NULL) {
        if (strncmp(p, "<!--", 4) == 0) {
            p = skip_comment(p);
            continue;
        }
        if (strncmp(p, tag, k) != 0 || !strchr(" \t\r\n/>", p[k]) || !p[k]) {
            p++;
            continue;
        }
        *tag_end = strchr(p, '>');
        if (!*tag_end)
            return p;
        *body = *body_end = *tag_end + 1;
        if ((*tag_end)[-1] != '/') {
            const char *c = strstr(*body, close);
            *body_end = c ? c : *body + strlen(*body);
        }
        return p;
    }
    return NULL;
}

/* The value of <prop id="id" value="..."/> in [body, body_end), 1 if found. */
static int prop(const char *body, const char *body_end, const char *id, char *val, size_t n)
{
    for (const char *q = body; (q = strstr(q, "<prop")) != NULL && q < body_end; q++) {
        const char *qe = strchr(q, '>');
        char got[64];
        if (qe && attr(q + 5, qe, "id", got, sizeof got) && strcmp(got, id) == 0 && attr(q + 5, qe, "value", val, n))
            return 1;
    }
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 100000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int cmp_rank(const void *a, const void *b)
{
    const xhost *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ring order and direction (host properties) and the staging memories
 * (link properties) into the machine. */
static int xml_rings(const char *path, const char *text, const xhost *hosts, int n, sim_machine *m, sim_err *err)
{
    int given = 0;
    for (int i = 0; i < n; i++) {
        given += hosts[i].ring_pos >= 0;
        m->ring_bidir |= hosts[i].bidir > 0;
    }
    if (given && given != n)
        return sim_errf(err, "%s: trainsim:ring_pos is on %d of %d GPU hosts; give it on all or none", path, given, n);
    if (given && !(m->ring_pos = malloc((size_t)n * sizeof *m->ring_pos)))
        return sim_errf(err, "%s: out of memory", path);
    for (int i = 0; given && i < n; i++)
        m->ring_pos[i] = hosts[i].ring_pos;
    const char *p = text, *tag_end, *body, *body_end;
    while ((p = next_elem(p, "<link", &tag_end, &body, &body_end)) != NULL && tag_end) {
        char id[64] = "", val[64], *end;
        attr(p + 5, tag_end, "id", id, sizeof id);
        p = body_end;
        if (!prop(body, body_end, "trainsim:cache_bytes", val, sizeof val))
            continue;
        double c = strtod(val, &end);
        if (!*val || *end || !(c >= 0))
            return sim_errf(err, "%s: link property trainsim:cache_bytes: expected a number >= 0, got \"%s\"", path, val);
        sim_stage *ns = realloc(m->stage, (size_t)(m->nstage + 1) * sizeof *ns);
        if (!ns)
            return sim_errf(err, "%s: out of memory", path);
        m->stage = ns;
        snprintf(ns[m->nstage].link, sizeof ns->link, "%s", id);
        ns[m->nstage++].cache_bytes = c;
    }
    return 0;
}

sim_machine *plat_from_xml(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    xhost *hosts = NULL;
    int n = 0, cap = 0;
    sim_machine *m = NULL;
    const char *p = text, *tag_end, *body, *body_end;
    while ((p = next_elem(p, "<host", &tag_end, &body, &body_end)) != NULL) {
        if (!tag_end) {
            sim_errf(err, "%s: unterminated <host> element", path);
            goto fail;
        }
        xhost h = {"", "", -1, -1, -1, 0};
        attr(p + 5, tag_end, "id", h.id, sizeof h.id);
        char val[128];
        if (prop(body, body_end, "trainsim:gpu", val, sizeof val))
            snprintf(h.gpu, sizeof h.gpu, "%.47s", val);
        static const char *const ints[] = {"trainsim:rank", "trainsim:node", "trainsim:ring_pos", "trainsim:ring_bidir"};
        int *dst[] = {&h.rank, &h.node, &h.ring_pos, &h.bidir};
        for (int i = 0; i < 4; i++)
            if (prop(body, body_end, ints[i], val, sizeof val) && parse_int(val, dst[i])) {
                sim_errf(err, "%s: host \"%s\": property %s: expected a non-negative integer, got \"%s\"", path,
                         h.id, ints[i], val);
                goto fail;
            }
        p = body_end;
        if (!h.gpu[0])
            continue;
        if (!h.id[0]) {
            sim_errf(err, "%s: a <host> with trainsim:gpu has no id", path);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            xhost *nh = realloc(hosts, (size_t)cap * sizeof *nh);
            if (!nh) {
                sim_errf(err, "%s: out of memory", path);
                goto fail;
            }
            hosts = nh;
        }
        hosts[n++] = h;
    }
    if (n == 0) {
        sim_errf(err,
                 "%s: no GPU host found; mark each GPU host with <prop id=\"trainsim:gpu\" value=\"MODEL\"/> "
                 "(e.g. RTX3090), optionally trainsim:rank and trainsim:node",
                 path);
        goto fail;
    }

    /* Ranks: all given (a permutation of 0..n-1) or none. */
    int given = 0;
    for (int i = 0; i < n; i++)
        given += hosts[i].rank >= 0;
    if (given && given != n) {
        sim_errf(err, "%s: trainsim:rank is on %d of %d GPU hosts; give it on all or none", path, given, n);
        goto fail;
    }
    int nodes_given = 0;
    for (int i = 0; i < n; i++)
        nodes_given += hosts[i].node >= 0;
    if (nodes_given && nodes_given != n) {
        sim_errf(err, "%s: trainsim:node is on %d of %d GPU hosts; give it on all or none", path, nodes_given, n);
        goto fail;
    }
    if (given) {
        qsort(hosts, (size_t)n, sizeof *hosts, cmp_rank);
        for (int i = 0; i < n; i++)
            if (hosts[i].rank != i) {
                sim_errf(err, "%s: trainsim:rank values must be 0..%d, each once (host \"%s\" has %d)", path, n - 1,
                         hosts[i].id, hosts[i].rank);
                goto fail;
            }
    }

    /* Models: one sim_gpu per distinct catalogue entry. */
    sim_gpu *models = calloc((size_t)n, sizeof *models);
    int *which = calloc((size_t)n, sizeof *which);
    int nm = 0;
    if (!models || !which) {
        free(models), free(which);
        sim_errf(err, "%s: out of memory", path);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        sim_gpu g;
        if (plat_gpu_lookup(hosts[i].gpu, &g, err)) {
            free(models), free(which);
            sim_err_prefix(err, "%s: host \"%s\": trainsim:gpu: ", path, hosts[i].id);
            goto fail;
        }
        int k = 0;
        while (k < nm && strcmp(models[k].model, g.model) != 0)
            k++;
        if (k == nm)
            models[nm++] = g;
        which[i] = k;
    }
    m = sim_machine_new(n, nm);
    if (!m) {
        free(models), free(which);
        sim_errf(err, "%s: out of memory", path);
        goto fail;
    }
    memcpy(m->gpus, models, (size_t)nm * sizeof *models);
    free(models);
    const char *base = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : path);
    int maxnode = -1;
    for (int i = 0; i < n; i++) {
        m->host[i] = strdup(hosts[i].id);
        if (!m->host[i]) {
            free(which);
            sim_machine_free(m);
            m = NULL;
            sim_errf(err, "%s: out of memory", path);
            goto fail;
        }
        m->node[i] = hosts[i].node >= 0 ? hosts[i].node : i;
        m->gpu_model[i] = which[i];
        if (m->node[i] > maxnode)
            maxnode = m->node[i];
    }
    free(which);
    m->nnodes = maxnode + 1;
    if (xml_rings(path, text, hosts, n, m, err) < 0) {
        sim_machine_free(m);
        m = NULL;
        goto fail;
    }
    m->platform_xml = text;
    free(hosts);
    return m;

fail:
    free(hosts);
    free(text);
    return NULL;
}
