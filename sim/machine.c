/* machine.c — see machine.h. */
#include "machine.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_names[SIM_DTYPE_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
static const int dtype_sizes[SIM_DTYPE_COUNT] = {4, 4, 2, 2, 1};

const char *sim_dtype_name(sim_dtype d)
{
    return (d >= 0 && d < SIM_DTYPE_COUNT) ? dtype_names[d] : "?";
}

int sim_dtype_parse(const char *s, sim_dtype *out)
{
    for (int i = 0; i < SIM_DTYPE_COUNT; i++)
        if (s && strcmp(s, dtype_names[i]) == 0) {
            *out = (sim_dtype)i;
            return 0;
        }
    return -1;
}

int sim_dtype_bytes(sim_dtype d)
{
    return (d >= 0 && d < SIM_DTYPE_COUNT) ? dtype_sizes[d] : 4;
}

static const char *const mem_class_names[SIM_MEMC_COUNT] = {"stream", "cast_up", "norm", "reduce", "strided"};

const char *sim_mem_class_name(int c) { return c >= 0 && c < SIM_MEMC_COUNT ? mem_class_names[c] : "?"; }

int sim_mem_class_parse(const char *name)
{
    for (int c = 0; name && c < SIM_MEMC_COUNT; c++)
        if (!strcmp(name, mem_class_names[c]))
            return c;
    return -1;
}

const char *sim_proto_name(sim_proto p)
{
    static const char *const names[SIM_PROTO_COUNT] = {"LL", "LL128", "Simple"};
    return p >= 0 && p < SIM_PROTO_COUNT ? names[p] : "?";
}

void sim_gpu_neutral_comm(sim_gpu *g)
{
    for (int p = 0; p < SIM_PROTO_COUNT; p++) {
        g->coll.base_s[p] = 0;
        g->coll.step_s[p] = 0;
        g->coll.eff[p] = 1;
        g->coll.net_eff[p] = 1;
    }
    g->coll.nvls_base_s = 0;
    g->coll.nvls_eff = 0;
    g->overlap_compute = 1;
    g->overlap_comm = 1;
}

sim_machine *sim_machine_new(int ngpus, int nmodels)
{
    sim_machine *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->ngpus = ngpus;
    m->nmodels = nmodels;
    m->host = calloc((size_t)ngpus, sizeof *m->host);
    m->node = calloc((size_t)ngpus, sizeof *m->node);
    m->gpu_model = calloc((size_t)ngpus, sizeof *m->gpu_model);
    m->nic = calloc((size_t)ngpus, sizeof *m->nic);
    m->nvswitch = malloc((size_t)(ngpus > 0 ? ngpus : 1) * sizeof *m->nvswitch);
    m->nic_direct = calloc((size_t)(ngpus > 0 ? ngpus : 1), 1);
    m->gpus = calloc((size_t)(nmodels > 0 ? nmodels : 1), sizeof *m->gpus);
    if (!m->host || !m->node || !m->gpu_model || !m->nic || !m->nvswitch || !m->nic_direct || !m->gpus) {
        sim_machine_free(m);
        return NULL;
    }
    for (int i = 0; i < (nmodels > 0 ? nmodels : 1); i++)
        sim_gpu_neutral_comm(&m->gpus[i]);
    for (int i = 0; i < ngpus; i++)
        m->nvswitch[i] = -1;
    return m;
}

void sim_machine_free(sim_machine *m)
{
    if (!m)
        return;
    if (m->host)
        for (int i = 0; i < m->ngpus; i++)
            free(m->host[i]);
    free(m->host);
    free(m->node);
    free(m->gpu_model);
    free(m->nic);
    free(m->nvswitch);
    free(m->nic_direct);
    free(m->gpus);
    free(m->ring_pos);
    free(m->nvl_local);
    free(m->nvl_links);
    free(m->stage);
    free(m->compute_slow);
    free(m->degrade);
    free(m->platform_xml);
    free(m);
}

const sim_gpu *sim_machine_gpu(const sim_machine *m, int rank)
{
    return &m->gpus[m->gpu_model[rank]];
}

sim_machine *sim_machine_subset(const sim_machine *m, const int *ranks, int n)
{
    sim_machine *v = sim_machine_new(n, m->nmodels);
    if (!v)
        return NULL;
    snprintf(v->name, sizeof v->name, "%s", m->name);
    v->nnodes = m->nnodes;
    v->fabric = m->fabric;
    v->nodes_per_leaf = m->nodes_per_leaf;
    v->fabric_blocking = m->fabric_blocking;
    memcpy(v->gpus, m->gpus, sizeof *m->gpus * (size_t)(m->nmodels > 0 ? m->nmodels : 1));
    v->platform_xml = m->platform_xml ? strdup(m->platform_xml) : NULL;
    int ok = !m->platform_xml || v->platform_xml;
    v->ring_bidir = m->ring_bidir;
    if (m->ring_pos)
        ok = ok && (v->ring_pos = malloc((size_t)n * sizeof *v->ring_pos)) != NULL;
    if (m->nstage > 0) {
        ok = ok && (v->stage = malloc((size_t)m->nstage * sizeof *v->stage)) != NULL;
        if (ok) {
            memcpy(v->stage, m->stage, (size_t)m->nstage * sizeof *v->stage);
            v->nstage = m->nstage;
        }
    }
    if (m->nvl_links && m->nvl_local) { /* a node's links: valid for any view of its ranks */
        v->nvl_width = m->nvl_width;
        ok = ok && (v->nvl_local = malloc((size_t)(n > 0 ? n : 1) * sizeof *v->nvl_local)) != NULL &&
             (v->nvl_links = malloc((size_t)(n > 0 ? n : 1) * (size_t)m->nvl_width)) != NULL;
        for (int i = 0; ok && i < n; i++) {
            v->nvl_local[i] = m->nvl_local[ranks[i]];
            memcpy(v->nvl_links + (size_t)i * (size_t)m->nvl_width,
                   m->nvl_links + (size_t)ranks[i] * (size_t)m->nvl_width, (size_t)m->nvl_width);
        }
    }
    if (m->compute_slow)
        ok = ok && (v->compute_slow = malloc((size_t)(n > 0 ? n : 1) * sizeof *v->compute_slow)) != NULL;
    if (m->ndegrade > 0) {
        ok = ok && (v->degrade = malloc((size_t)m->ndegrade * sizeof *v->degrade)) != NULL;
        if (ok) {
            memcpy(v->degrade, m->degrade, (size_t)m->ndegrade * sizeof *v->degrade);
            v->ndegrade = m->ndegrade;
        }
    }
    for (int i = 0; i < n && ok; i++) {
        if (v->compute_slow)
            v->compute_slow[i] = m->compute_slow[ranks[i]];
        v->host[i] = strdup(m->host[ranks[i]]);
        v->node[i] = m->node[ranks[i]];
        v->gpu_model[i] = m->gpu_model[ranks[i]];
        v->nic[i] = m->nic[ranks[i]];
        v->nvswitch[i] = m->nvswitch[ranks[i]];
        v->nic_direct[i] = m->nic_direct[ranks[i]];
        if (v->ring_pos)
            v->ring_pos[i] = m->ring_pos[ranks[i]];
        ok = v->host[i] != NULL;
    }
    if (!ok) {
        sim_machine_free(v);
        return NULL;
    }
    return v;
}

int sim_machine_first(sim_machine *m, int n, sim_err *err)
{
    if (n <= 0 || n == m->ngpus)
        return 0;
    if (n > m->ngpus)
        return sim_errf(err, "--gpus %d: the platform %s has only %d GPUs", n, m->name, m->ngpus);
    for (int r = n; r < m->ngpus; r++) { /* sim_machine_free frees host[0..ngpus) */
        free(m->host[r]);
        m->host[r] = NULL;
    }
    m->ngpus = n;
    int nodes = 0;
    for (int r = 0; r < n; r++)
        if (r == 0 || m->node[r] != m->node[r - 1])
            nodes++;
    m->nnodes = nodes;
    return 0;
}

/* ---- perturbations ------------------------------------------------------ */

/* The factor after the last ':' of spec (>= 1, finite); *what_len is the
 * length of the part before it. */
static int split_factor(const char *opt, const char *spec, size_t *what_len, double *factor, sim_err *err)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec)
        return sim_errf(err, "%s \"%s\": expected %s:FACTOR", opt, spec,
                        strcmp(opt, "--slow") ? "LINK" : "RANKS");
    char *end = NULL;
    errno = 0;
    double f = strtod(colon + 1, &end);
    if (end == colon + 1 || *end || errno || !isfinite(f) || f < 1 || f > 1e6)
        return sim_errf(err, "%s \"%s\": FACTOR: expected a number from 1 to 1e6 (how many times %s), got \"%s\"",
                        opt, spec, strcmp(opt, "--slow") ? "less bandwidth" : "longer the kernels take", colon + 1);
    *what_len = (size_t)(colon - spec);
    *factor = f;
    return 0;
}

/* One rank number of a RANKS list, in [0, n). */
static int rank_number(const char *opt, const char *spec, const char **p, int n, int *out, sim_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno || **p == '-' || **p == '+' || **p == ' ')
        return sim_errf(err, "%s \"%s\": expected rank numbers and ranges such as 3 or 0-3,8", opt, spec);
    if (v < 0 || v >= n)
        return sim_errf(err, "%s \"%s\": rank %ld is not on the platform (ranks 0 to %d)", opt, spec, v, n - 1);
    *out = (int)v;
    *p = end;
    return 0;
}

int sim_ranks_parse(const char *opt, const char *spec, size_t len, int n, unsigned char *mask, sim_err *err)
{
    char list[256];
    if (len >= sizeof list)
        return sim_errf(err, "%s \"%.40s...\": the rank list is longer than %zu characters", opt, spec,
                        sizeof list - 1);
    memcpy(list, spec, len);
    list[len] = 0;
    if (!list[0])
        return sim_errf(err, "%s \"%s\": expected rank numbers and ranges such as 3 or 0-3,8", opt, spec);
    const char *p = list;
    while (*p) {
        int a, b;
        if (rank_number(opt, spec, &p, n, &a, err) < 0)
            return -1;
        b = a;
        if (*p == '-') {
            p++;
            if (rank_number(opt, spec, &p, n, &b, err) < 0)
                return -1;
            if (b < a)
                return sim_errf(err, "%s \"%s\": the range %d-%d runs backwards", opt, spec, a, b);
        }
        if (*p && *p != ',')
            return sim_errf(err, "%s \"%s\": expected rank numbers and ranges such as 3 or 0-3,8", opt, spec);
        if (*p == ',' && !*++p)
            return sim_errf(err, "%s \"%s\": the rank list ends with a comma", opt, spec);
        for (int r = a; r <= b; r++)
            mask[r] = 1;
    }
    return 0;
}

int sim_machine_slow(sim_machine *m, const char *spec, sim_err *err)
{
    size_t n;
    double f;
    if (split_factor("--slow", spec, &n, &f, err) < 0)
        return -1;
    unsigned char *mask = calloc((size_t)m->ngpus + 1, 1);
    if (!mask)
        return sim_errf(err, "out of memory for --slow");
    if (sim_ranks_parse("--slow", spec, n, m->ngpus, mask, err) < 0)
        return free(mask), -1;
    if (!m->compute_slow) {
        m->compute_slow = malloc((size_t)(m->ngpus > 0 ? m->ngpus : 1) * sizeof *m->compute_slow);
        if (!m->compute_slow)
            return free(mask), sim_errf(err, "out of memory for --slow");
        for (int i = 0; i < m->ngpus; i++)
            m->compute_slow[i] = 1;
    }
    for (int r = 0; r < m->ngpus; r++)
        if (mask[r])
            m->compute_slow[r] *= f;
    free(mask);
    return 0;
}

/* Whether some <link id="..."> of the platform text matches pattern (the
 * file's names: a SPLITDUPLEX link's two directions share one). */
static int names_a_link(const char *xml, const char *pattern)
{
    static const char tag[] = "<link id=\"";
    for (const char *p = xml ? strstr(xml, tag) : NULL; p; p = strstr(p + 1, tag)) {
        const char *a = p + sizeof tag - 1, *b = strchr(a, '"');
        char id[256];
        if (!b || (size_t)(b - a) >= sizeof id)
            continue;
        memcpy(id, a, (size_t)(b - a));
        id[b - a] = 0;
        if (fnmatch(pattern, id, 0) == 0)
            return 1;
    }
    return 0;
}

int sim_machine_degrade(sim_machine *m, const char *spec, sim_err *err)
{
    size_t n;
    double f;
    if (split_factor("--degrade", spec, &n, &f, err) < 0)
        return -1;
    if (n >= sizeof m->degrade->pattern)
        return sim_errf(err, "--degrade \"%.40s...\": the link name is longer than %zu characters", spec,
                        sizeof m->degrade->pattern - 1);
    sim_degrade *d = realloc(m->degrade, (size_t)(m->ndegrade + 1) * sizeof *d);
    if (!d)
        return sim_errf(err, "out of memory for --degrade");
    m->degrade = d;
    memcpy(d[m->ndegrade].pattern, spec, n);
    d[m->ndegrade].pattern[n] = 0;
    if (!names_a_link(m->platform_xml, d[m->ndegrade].pattern)) /* said before anything is simulated */
        return sim_errf(err, "--degrade \"%s\": no link of platform \"%s\" has that name (`trainsim platform -o "
                             "FILE.xml` lists the links: n0-nic0 is node 0's first NIC on built-in clusters)",
                        d[m->ndegrade].pattern, m->name);
    d[m->ndegrade].factor = f;
    m->ndegrade++;
    return 0;
}

/* Depth first through the GPUs not yet used, the one with the most links
 * left to the last first (ties by index), within *budget steps. */
static int widest_cycle(int n, const int *left, int *order, int k, int *used, long *budget)
{
    if (--*budget < 0)
        return 0;
    int last = order[k - 1];
    if (k == n)
        return left[last * n + order[0]] > 0;
    int cand[SIM_NVL_MAX], nc = 0;
    for (int h = 0; h < n; h++)
        if (!used[h] && left[last * n + h] > 0) {
            int j = nc++;
            for (; j > 0 && left[last * n + cand[j - 1]] < left[last * n + h]; j--)
                cand[j] = cand[j - 1];
            cand[j] = h;
        }
    for (int i = 0; i < nc; i++) {
        used[cand[i]] = 1;
        order[k] = cand[i];
        if (widest_cycle(n, left, order, k + 1, used, budget))
            return 1;
        used[cand[i]] = 0;
    }
    return 0;
}

int sim_nvl_rings(int n, int *links, int max_rings, int *orders)
{
    if (n < 3 || n > SIM_NVL_MAX)
        return 0;
    int used[SIM_NVL_MAX], count = 0;
    while (count < max_rings) {
        int *cyc = orders + (size_t)count * (size_t)n, fits = count > 0;
        const int *prev = count > 0 ? orders + (size_t)(count - 1) * (size_t)n : NULL;
        for (int i = 0; fits && i < n; i++) /* the last ring again while its links last */
            fits = links[prev[i] * n + prev[(i + 1) % n]] > 0;
        if (fits) {
            memcpy(cyc, prev, sizeof(int) * (size_t)n);
        } else {
            long budget = 100000;
            memset(used, 0, sizeof used);
            used[0] = 1;
            cyc[0] = 0;
            if (!widest_cycle(n, links, cyc, 1, used, &budget))
                break;
        }
        for (int i = 0; i < n; i++) {
            links[cyc[i] * n + cyc[(i + 1) % n]]--;
            links[cyc[(i + 1) % n] * n + cyc[i]]--;
        }
        count++;
    }
    return count;
}

