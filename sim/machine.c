/* machine.c — see machine.h. */
#include "machine.h"

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
    }
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
    m->gpus = calloc((size_t)(nmodels > 0 ? nmodels : 1), sizeof *m->gpus);
    if (!m->host || !m->node || !m->gpu_model || !m->gpus) {
        sim_machine_free(m);
        return NULL;
    }
    for (int i = 0; i < (nmodels > 0 ? nmodels : 1); i++)
        sim_gpu_neutral_comm(&m->gpus[i]);
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
    free(m->gpus);
    free(m->ring_pos);
    free(m->stage);
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
    for (int i = 0; i < n && ok; i++) {
        v->host[i] = strdup(m->host[ranks[i]]);
        v->node[i] = m->node[ranks[i]];
        v->gpu_model[i] = m->gpu_model[ranks[i]];
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
