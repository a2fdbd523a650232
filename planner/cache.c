/* cache.c — results keyed by their inputs, in an append-only file.
 *
 * DIR/results.tsv holds one line per evaluation:
 *   key \t strategy \t status \t iteration_s \t ... \t simulations \t the kernels' seconds by
 *   class (sim_kclass: 5 fields) \t error \t checksum
 * key = FNV-1a 64 of (inputs hash, strategy); the inputs hash covers the
 * platform (its SimGrid XML and every GPU's specification), the model, the
 * trainsim version plus a hash of the executable (a rebuilt simulator must
 * not reuse old figures) and the fidelity (plan_inputs_hash).  Numbers are
 * written with %.17g, so a cached result is bit-identical to the computed
 * one.  Each record is one write(2) on an O_APPEND descriptor, so
 * concurrent writers (pool children never write; MPI ranks do) and a killed
 * sweep leave whole lines; a line whose checksum does not match (a torn tail
 * after a crash, an edit, a NUL byte from a crashed filesystem) is skipped
 * and counted (plan_cache_skipped) and reading goes on with the next line,
 * and a file that does not end in a newline gets one before the next record.
 * A cache the process may not write (a read-only directory or file) is
 * still read; new results then stay in memory (plan_cache_readonly).
 * Several sweeps may share one directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "planner/plan.h"
#include "sim/alloc.h"
#include "sim/fileio.h"

uint64_t plan_hash(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t plan_hash_str(uint64_t h, const char *s)
{
    return plan_hash(h, s, strlen(s) + 1);
}

static uint64_t exe_hash(void)
{
    static uint64_t cached;
    if (cached)
        return cached;
    uint64_t h = PLAN_HASH_INIT;
    FILE *f = fopen("/proc/self/exe", "rb");
    if (f) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            h = plan_hash(h, buf, n);
        fclose(f);
    }
    cached = h;
    return h;
}

uint64_t plan_inputs_hash(const sim_machine *m, const wl_model *model, plan_fidelity f)
{
    uint64_t h = plan_hash_str(PLAN_HASH_INIT, "trainsim " TRAINSIM_VERSION);
    const char *nohash = getenv("TRAINSIM_CACHE_IGNORE_BINARY"); /* for tests that compare two binaries */
    if (!(nohash && *nohash == '1')) {
        uint64_t e = exe_hash();
        h = plan_hash(h, &e, sizeof e);
    }
    h = plan_hash_str(h, m->platform_xml ? m->platform_xml : "");
    char buf[512];
    for (int r = 0; r < m->ngpus; r++) {
        snprintf(buf, sizeof buf, "%s|%d|%d", m->host[r], m->node[r], m->gpu_model[r]);
        h = plan_hash_str(h, buf);
    }
    for (int i = 0; i < m->nmodels; i++) {
        const sim_gpu *g = &m->gpus[i];
        snprintf(buf, sizeof buf, "%s|%.17g|%.17g|%.17g|%.17g|%.17g", g->model, g->mem_bw, g->mem_capacity,
                 g->launch_s, g->kernel_min_s, g->power_w);
        h = plan_hash_str(h, buf);
        for (int d = 0; d < SIM_DTYPE_COUNT; d++) {
            h = plan_hash(h, &g->peak_flops[d], sizeof(double));
            h = plan_hash(h, &g->gemm_scale[d], sizeof(double));
        }
        h = plan_hash(h, &g->gemm_unaligned, sizeof(double));
        h = plan_hash(h, g->mem_class, sizeof g->mem_class);
        h = plan_hash(h, &g->power_n, sizeof g->power_n);
        h = plan_hash(h, g->power_load, sizeof(double) * (size_t)g->power_n);
        h = plan_hash(h, g->power_rate, sizeof(double) * (size_t)g->power_n);
        const sim_curve *cv[3] = {&g->gemm_eff, &g->attn_eff, &g->mem_eff};
        for (int c = 0; c < 3; c++) {
            h = plan_hash(h, &cv[c]->n, sizeof cv[c]->n);
            h = plan_hash(h, cv[c]->log10_work, sizeof(double) * (size_t)cv[c]->n);
            h = plan_hash(h, cv[c]->efficiency, sizeof(double) * (size_t)cv[c]->n);
        }
    }
    snprintf(buf, sizeof buf, "%s|%d|%d|%d|%d|%d|%d|fid%d", model->name, model->layers, model->hidden, model->heads,
             model->ffn, model->seq, model->vocab, (int)f);
    h = plan_hash_str(h, buf);
    if (model->moe) { /* an MoE model's experts change every result */
        const wl_moe *x = &model->moe_cfg;
        snprintf(buf, sizeof buf, "moe|%d|%d|%.17g|%d|%d|%d|%d", x->experts, x->top_k, x->capacity_factor,
                 x->expert_ffn, x->shared_ffn, x->every, x->first);
        h = plan_hash_str(h, buf);
    }
    return h;
}

typedef struct entry {
    uint64_t key;
    plan_result r;
} entry;

struct plan_cache {
    int fd; /* -1: read-only */
    char path[4096];
    uint64_t inputs;
    entry *e;
    int n, cap;
    int skipped; /* corrupt lines */
};

/* A record holds SIM_KCLASS_COUNT kernel classes after the simulations. */
_Static_assert(SIM_KCLASS_COUNT == 5, "the cache record's field count follows the kernel classes");

static uint64_t key_of(uint64_t inputs, const char *strategy)
{
    return plan_hash_str(plan_hash(PLAN_HASH_INIT, &inputs, sizeof inputs), strategy);
}

/* Record text without its checksum field. */
static int format_record(char *buf, size_t len, uint64_t key, const plan_result *r)
{
    char err[sizeof r->error];
    snprintf(err, sizeof err, "%s", r->error);
    for (char *p = err; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
    const double *k = r->kernel_s;
    return snprintf(buf, len,
                    "%016llx\t%s\t%d\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%d\t%.17g\t%.17g\t"
                    "%.17g\t%.17g\t%.17g\t%s",
                    (unsigned long long)key, r->strategy, r->status, r->iteration_s, r->samples_per_s,
                    r->tokens_per_s, r->tflops_per_gpu, r->peak_mem, r->compute_s, r->exposed_comm_s, r->idle_s,
                    r->comm_s, r->sims, k[SIM_KCLASS_GEMM], k[SIM_KCLASS_ATTENTION], k[SIM_KCLASS_ELEMENTWISE],
                    k[SIM_KCLASS_OPTIMIZER], k[SIM_KCLASS_MEASURED], err);
}

static int add(plan_cache *c, uint64_t key, const plan_result *r)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].key == key)
            return 0; /* first record wins; duplicates carry the same figures */
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        entry *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (!e)
            return -1;
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n].key = key;
    c->e[c->n].r = *r;
    c->n++;
    return 0;
}

/* An integer field in [lo, hi], or -1 with *ok cleared. */
static int int_field(const char *s, int lo, int hi, int *ok)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return *ok = 0, -1;
    return (int)v;
}

/* One record (NUL-terminated, no newline): 0 read or another sweep's, -1
 * corrupt (torn, edited, not a record). */
static int parse_line(plan_cache *c, char *line)
{
    char *tab = strrchr(line, '\t');
    if (!tab)
        return -1;
    *tab = 0;
    char *end;
    unsigned long long sum = strtoull(tab + 1, &end, 16);
    if (end == tab + 1 || *end || plan_hash_str(PLAN_HASH_INIT, line) != sum)
        return -1; /* torn or edited line */
    char *f[24];
    int nf = 0;
    for (char *p = line; nf < 24;) {
        f[nf++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
    if (nf == 14)
        return 0; /* a record of a trainsim before the kernel classes: another executable's, so another sweep's */
    if (nf != 19 || strlen(f[1]) >= sizeof(((plan_result *)0)->strategy))
        return -1;
    plan_result r;
    memset(&r, 0, sizeof r);
    uint64_t key = strtoull(f[0], NULL, 16);
    snprintf(r.strategy, sizeof r.strategy, "%s", f[1]);
    if (key != key_of(c->inputs, r.strategy))
        return 0; /* another sweep's inputs */
    int ok = 1;
    r.status = int_field(f[2], -1000, 1000, &ok);
    double *d[] = {&r.iteration_s, &r.samples_per_s, &r.tokens_per_s, &r.tflops_per_gpu, &r.peak_mem,
                   &r.compute_s,   &r.exposed_comm_s, &r.idle_s,      &r.comm_s};
    for (int i = 0; i < 9; i++) {
        *d[i] = strtod(f[3 + i], &end);
        ok &= end != f[3 + i] && !*end;
    }
    r.sims = int_field(f[12], 0, INT32_MAX, &ok);
    for (int i = 0; i < SIM_KCLASS_COUNT; i++) {
        r.kernel_s[i] = strtod(f[13 + i], &end);
        ok &= end != f[13 + i] && !*end;
    }
    if (!ok)
        return -1;
    snprintf(r.error, sizeof r.error, "%s", f[18]);
    add(c, key, &r);
    return 0;
}

/* Every record of text[0, len); lines that are not records (a NUL byte
 * inside, a bad checksum) are counted in c->skipped, the rest still read. */
static void parse_text(plan_cache *c, char *text, size_t len)
{
    for (size_t at = 0; at < len;) {
        char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        if (n == 0)
            continue;
        line[n] = 0; /* the newline, or the NUL after the text */
        if (memchr(line, 0, n) || parse_line(c, line) < 0)
            c->skipped++;
    }
}

plan_cache *plan_cache_from_text(uint64_t inputs_hash, const char *text, size_t len)
{
    plan_cache *c = sim_xcalloc(1, sizeof *c, "the result cache");
    c->fd = -1;
    c->inputs = inputs_hash;
    char *copy = sim_xmalloc(len + 1, "the result cache");
    memcpy(copy, text, len);
    copy[len] = 0;
    parse_text(c, copy, len);
    free(copy);
    return c;
}

static int writable_error(int e) { return e == EACCES || e == EROFS || e == EPERM; }

plan_cache *plan_cache_open(const char *dir, uint64_t inputs_hash, int load, sim_err *err)
{
    struct stat st;
    if (mkdir(dir, 0777) < 0 && errno != EEXIST && !(stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) {
        sim_errf(err, "%s: cannot create the cache directory: %s", dir, strerror(errno));
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/results.tsv", dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
    if (fd < 0 && !writable_error(errno)) {
        sim_errf(err, "%s: cannot open the cache: %s", path, strerror(errno));
        return NULL;
    }
    size_t len = 0;
    sim_err e;
    char *text = load ? sim_read_file_max(path, SIM_READ_MAX, &len, 1, &e) : NULL;
    plan_cache *c = plan_cache_from_text(inputs_hash, text ? text : "", text ? len : 0);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->fd = fd;
    /* a torn last record: end it so the next append starts a line */
    if (fd >= 0 && len > 0 && text[len - 1] != '\n' && write(fd, "\n", 1) != 1) {
        sim_errf(err, "%s: cannot write: %s", path, strerror(errno));
        free(text);
        plan_cache_close(c);
        return NULL;
    }
    free(text);
    return c;
}

int plan_cache_skipped(const plan_cache *c) { return c->skipped; }
int plan_cache_readonly(const plan_cache *c) { return c->fd < 0; }

void plan_cache_close(plan_cache *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->e);
    free(c);
}

int plan_cache_get(const plan_cache *c, const char *strategy, plan_result *out)
{
    uint64_t key = key_of(c->inputs, strategy);
    for (int i = 0; i < c->n; i++)
        if (c->e[i].key == key && strcmp(c->e[i].r.strategy, strategy) == 0) {
            *out = c->e[i].r;
            out->cached = 1;
            out->wall_s = 0;
            return 1;
        }
    return 0;
}

int plan_cache_put(plan_cache *c, const plan_result *r, sim_err *err)
{
    if (c->fd < 0) { /* read-only: kept for this process only */
        add(c, key_of(c->inputs, r->strategy), r);
        return 0;
    }
    char line[PLAN_STRATEGY_MAX + sizeof r->error + 512];
    uint64_t key = key_of(c->inputs, r->strategy);
    int n = format_record(line, sizeof line - 24, key, r);
    if (n < 0 || (size_t)n >= sizeof line - 24)
        return sim_errf(err, "%s: record too long", c->path);
    n += snprintf(line + n, sizeof line - (size_t)n, "\t%016llx\n",
                  (unsigned long long)plan_hash_str(PLAN_HASH_INIT, line));
    ssize_t w = write(c->fd, line, (size_t)n);
    if (w != n)
        return sim_errf(err, "%s: cannot append: %s", c->path, w < 0 ? strerror(errno) : "short write");
    add(c, key, r);
    return 0;
}

int plan_cache_size(const plan_cache *c) { return c->n; }
