/* xmlplat.c — hand-written SimGrid XML platforms (plat_from_xml).
 *
 * SimGrid parses the XML itself when the engine loads it; here we only need
 * to know which hosts are GPUs.  A light scan (no XML library) finds each
 * <host id="..."> element and its <prop id="trainsim:gpu|rank|node|nic|nvswitch""
 * value="..."/> children, skipping comments.  Hosts without trainsim:gpu are
 * ordinary hosts (CPUs, storage) and are ignored.  Ranks follow
 * trainsim:rank when every GPU host has one, else document order; without
 * trainsim:node every GPU host is its own node; trainsim:nic (default 0)
 * names the node's NIC the GPU's inter-node routes leave by, which the
 * collectives need to spread their channels, and trainsim:nvswitch (default
 * none) the NVSwitch fabric it is on, for NVLink SHARP (sim/machine.h).  Syntax errors in the rest
 * of the file are SimGrid's to report when it loads the platform. */
#include "platform.h"
#include "catalog.h"
#include "sim/fileio.h"

#include <stdlib.h>
#include <string.h>

typedef struct xhost {
    char id[128];
    char gpu[48];
    int rank, node, nic, nvswitch; /* -1 = not given */
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

sim_machine *plat_from_xml(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    xhost *hosts = NULL;
    int n = 0, cap = 0;
    sim_machine *m = NULL;
    const char *p = text;
    while ((p = strchr(p, '<')) != NULL) {
        if (strncmp(p, "<!--", 4) == 0) {
            p = skip_comment(p);
            continue;
        }
        if (strncmp(p, "<host", 5) != 0 || !strchr(" \t\r\n", p[5])) {
            p++;
            continue;
        }
        const char *tag_end = strchr(p, '>');
        if (!tag_end) {
            sim_errf(err, "%s: unterminated <host> element", path);
            goto fail;
        }
        xhost h = {"", "", -1, -1, -1, -1};
        attr(p + 5, tag_end, "id", h.id, sizeof h.id);
        /* The element's body runs to </host> unless the tag is self-closing. */
        const char *body = tag_end + 1, *body_end = body;
        if (tag_end[-1] != '/') {
            const char *close = strstr(body, "</host>");
            body_end = close ? close : body + strlen(body);
        }
        for (const char *q = body; (q = strstr(q, "<prop")) != NULL && q < body_end; q++) {
            const char *qe = strchr(q, '>');
            char id[64], val[128];
            if (!qe || !attr(q + 5, qe, "id", id, sizeof id) || !attr(q + 5, qe, "value", val, sizeof val))
                continue;
            if (strcmp(id, "trainsim:gpu") == 0) {
                snprintf(h.gpu, sizeof h.gpu, "%.47s", val);
            } else if ((strcmp(id, "trainsim:rank") == 0 && parse_int(val, &h.rank)) ||
                       (strcmp(id, "trainsim:node") == 0 && parse_int(val, &h.node)) ||
                       (strcmp(id, "trainsim:nic") == 0 && parse_int(val, &h.nic)) ||
                       (strcmp(id, "trainsim:nvswitch") == 0 && parse_int(val, &h.nvswitch))) {
                sim_errf(err, "%s: host \"%s\": property %s: expected a non-negative integer, got \"%s\"", path, h.id,
                         id, val);
                goto fail;
            }
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
        m->nic[i] = hosts[i].nic >= 0 ? hosts[i].nic : 0;
        m->nvswitch[i] = hosts[i].nvswitch;
        if (m->node[i] > maxnode)
            maxnode = m->node[i];
    }
    free(which);
    m->nnodes = maxnode + 1;
    m->platform_xml = text;
    free(hosts);
    return m;

fail:
    free(hosts);
    free(text);
    return NULL;
}
