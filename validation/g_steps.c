/* g_steps.c — groups e2e-h100-steps and e2e-h200-steps: whole single-GPU
 * training steps of GPT models measured by this project on one H100 SXM5
 * (validation/data/h100-micro/steps.csv) and on one H200
 * (validation/data/h200-micro/steps.csv; bench/gpu/measure.py,
 * section_steps; PROVENANCE.md, h100-micro and h200-micro).  Each row is
 * mapped to what `trainsim run` takes and goes through the end-to-end
 * pipeline of g_e2e.c (e2e_run_maps: the same parsers, generator and
 * engine, the simulated breakdown, --rows, --emit, --unexpressed), compared
 * by step time: the median of the row's timed steps against the simulated
 * iteration time.  End-to-end predictions: nothing is fitted on these rows.
 *
 * From the row: the model (vocab, hidden, layers, heads, seq) and the
 * micro-batch; its params column is checked against the parameter count of
 * the architecture below, so a row of another model is an error, not a
 * silent miss.  From measure.py, the same for every row (stated once here,
 * not per row):
 *  - the GPT / Block classes: ffn = 4 x hidden (nn.Linear(h, 4h)), learned
 *    positions (nn.Embedding(seq, h)), nn.LayerNorm, biases on every
 *    Linear, tanh-GELU, the output layer tied to the token embedding;
 *  - the step, and so the strategy keys STACK: one process on one GPU
 *    (tp = pp = dp = 1) and one forward / backward per optimizer step
 *    (gb = mb = the micro_batch column); torch.autocast(bf16) over a model
 *    left in fp32 (dtype=bf16 with autocast=1: weights cast by every
 *    forward, an fp32 residual stream, gradients cast back into fp32
 *    .grad); PyTorch eager, no torch.compile (kernels=eager: one kernel per
 *    element-wise op); no activation checkpointing (recompute=none);
 *    F.scaled_dot_product_attention(is_causal=True), which ran cuDNN's
 *    fused flash kernels on Hopper (the traces beside the CSV), the GPU's
 *    best fused kernel (attn=flash, what attn=auto gives on H100 in bf16);
 *    F.cross_entropy on logits.float() (loss=torch: the cast up, fp32
 *    log_softmax forward and backward, the cast down); fused AdamW is what
 *    the generator emits for any step;
 *  - the card (STEP_CARDS): one H100 80GB HBM3 SXM5, the first GPU of the
 *    catalogue's azure-nd-h100-v5 node (`--platform azure-nd-h100-v5
 *    --gpus 1`); one H200, a node of that one GPU (a cluster JSON: no
 *    built-in platform has H200s, and a single-GPU step uses no link). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g_e2e.h"
#include "sim/alloc.h"
#include "val_groups.h"

/* Where each card's steps are and what runs them. */
typedef struct steps_card {
    const char *gpu;      /* the catalogue model (the case label) */
    const char *file;     /* its steps.csv, relative to the data directory */
    const char *platform; /* a built-in platform whose first GPU runs a row, or NULL: */
    const char *cluster;  /* the cluster JSON of a one-GPU node */
} steps_card;

static const steps_card STEP_CARDS[] = {
    {"H100-SXM", "h100-micro/steps.csv", "azure-nd-h100-v5", NULL},
    {"H200", "h200-micro/steps.csv", NULL,
     "{\"name\": \"h200-1gpu\", \"nodes\": 1, \"node\": {\"gpu\": \"H200\", \"gpus_per_node\": 1, \"sockets\": 1, "
     "\"pcie\": {\"gen\": 5, \"width\": 16}}, \"fabric\": {\"type\": \"switch\"}}"},
};
#define STACK "dtype=bf16", "recompute=none", "attn=flash", "kernels=eager", "autocast=1", "loss=torch"

enum { S_NAME, S_VOCAB, S_HIDDEN, S_LAYERS, S_HEADS, S_SEQ, S_MB, S_PARAMS, S_STEP, S_STEPS, S_MHZ, S_WATT, S_NCOLS };
static const char *const SCOLS[S_NCOLS] = {"name", "vocab", "hidden", "layers", "heads", "seq", "micro_batch",
                                           "params", "step_ms_median", "steps", "sm_mhz_mean", "power_w_mean"};

typedef struct srow {
    const steps_card *card;
    const val_csv *csv;
    int i;
    int col[S_NCOLS];
} srow;

/* "FILE: line L (row NAME), column C: " before a message about a value. */
static int bad(const srow *r, int c, sim_err *err, const char *why)
{
    return sim_errf(err, "%s: line %d (row \"%s\"), column \"%s\": %s, got %s", val_csv_path(r->csv),
                    val_csv_line(r->csv, r->i), val_csv_str(r->csv, r->i, r->col[S_NAME]), SCOLS[c], why,
                    val_csv_str(r->csv, r->i, r->col[c])[0] ? val_csv_str(r->csv, r->i, r->col[c]) : "nothing");
}

/* A number column (val_csv's error names file, line and column). */
static int number(const srow *r, int c, double *v, sim_err *err)
{
    return val_csv_num(r->csv, r->i, r->col[c], v, err);
}

/* A positive whole number below 1e9. */
static int whole(const srow *r, int c, int *out, sim_err *err)
{
    double v;
    if (number(r, c, &v, err) < 0)
        return -1;
    if (!(v >= 1 && v < 1e9 && v == floor(v)))
        return bad(r, c, err, "expected a positive whole number");
    *out = (int)v;
    return 0;
}

/* A positive number. */
static int positive(const srow *r, int c, double *v, sim_err *err)
{
    if (number(r, c, v, err) < 0)
        return -1;
    return *v > 0 ? 0 : bad(r, c, err, "expected a positive number");
}

static void add_item(e2e_item *a, int *n, const char *text)
{
    if (*n < E2E_MAX_ITEMS)
        snprintf(a[(*n)++].text, sizeof a[0].text, "%s", text);
}

/* Row i of steps.csv as an e2e_map, or -1 with err naming file, line and column. */
static int map_step(const srow *r, e2e_map *m, sim_err *err)
{
    memset(m, 0, sizeof *m);
    const char *name = val_csv_str(r->csv, r->i, r->col[S_NAME]);
    if (!name[0] || strlen(name) >= sizeof m->row || strpbrk(name, " /\\\"'"))
        return bad(r, S_NAME, err, "expected a model name of 1-31 characters, no spaces, slashes or quotes");
    int V = 0, h = 0, L = 0, a = 0, seq = 0, mb = 0, steps = 0; /* set by whole(); zero for -O3's flow analysis */
    double params = 0, step_ms = 0, mhz = 0, watt = 0;
    if (whole(r, S_VOCAB, &V, err) < 0 || whole(r, S_HIDDEN, &h, err) < 0 || whole(r, S_LAYERS, &L, err) < 0 ||
        whole(r, S_HEADS, &a, err) < 0 || whole(r, S_SEQ, &seq, err) < 0 || whole(r, S_MB, &mb, err) < 0 ||
        whole(r, S_STEPS, &steps, err) < 0 || positive(r, S_PARAMS, &params, err) < 0 ||
        positive(r, S_STEP, &step_ms, err) < 0 || positive(r, S_MHZ, &mhz, err) < 0 ||
        positive(r, S_WATT, &watt, err) < 0)
        return -1;
    if (h % a)
        return bad(r, S_HEADS, err, "expected a divisor of the hidden size");
    /* the parameter count measure.py printed (sum of model.parameters())
     * against its architecture with this row's columns */
    double want = e2e_params(L, h, a, 0, 4 * h, V, seq, 0, 1, 1, 1);
    if (fabs(params - want) > 0.5) {
        char why[192];
        snprintf(why, sizeof why,
                 "expected %.0f, the parameters of measure.py's GPT (ffn 4 x hidden, learned positions, "
                 "LayerNorm, biases, tied output) with this row's columns",
                 want);
        return bad(r, S_PARAMS, err, why);
    }
    snprintf(m->row, sizeof m->row, "%s", name);
    snprintf(m->label, sizeof m->label, "1 x %s", r->card->gpu);
    if (r->card->platform) {
        snprintf(m->platform, sizeof m->platform, "%s", r->card->platform);
        m->platform_gpus = 1;
    } else
        snprintf(m->cluster, sizeof m->cluster, "%s", r->card->cluster);
    m->ngpus = 1;
    m->measured_s = step_ms / 1e3;
    snprintf(m->measured_how, sizeof m->measured_how, "median of %d steps, SM %.0f MHz, %.0f W", steps, mhz, watt);
    snprintf(m->model, sizeof m->model,
             "\"name\": \"%s\", \"layers\": %d, \"hidden\": %d, \"heads\": %d, \"ffn\": %d, \"seq\": %d, \"vocab\": %d",
             name, L, h, a, 4 * h, seq, V);
    static const char *const arch[] = {"\"position\": \"learned\"", "\"tie_embeddings\": true", "\"bias\": true",
                                       "\"norm\": \"layernorm\""};
    for (size_t k = 0; k < sizeof arch / sizeof arch[0]; k++)
        add_item(m->model_items, &m->nmodel, arch[k]);
    char key[32];
    static const char *const one_gpu[] = {"tp=1", "pp=1", "dp=1"};
    for (size_t k = 0; k < sizeof one_gpu / sizeof one_gpu[0]; k++)
        add_item(m->strat, &m->nstrat, one_gpu[k]);
    snprintf(key, sizeof key, "mb=%d", mb);
    add_item(m->strat, &m->nstrat, key);
    snprintf(key, sizeof key, "gb=%d", mb);
    add_item(m->strat, &m->nstrat, key);
    static const char *const stack[] = {STACK};
    for (size_t k = 0; k < sizeof stack / sizeof stack[0]; k++)
        add_item(m->strat, &m->nstrat, stack[k]);
    return 0;
}

static int steps_group(const val_ctx *ctx, const steps_card *card, val_set *out, sim_err *err)
{
    val_csv *csv = val_csv_load_data(ctx, card->file, err);
    if (!csv)
        return -1;
    int n = val_csv_rows(csv), rc = -1;
    e2e_map *maps = NULL;
    srow r = {.card = card, .csv = csv};
    for (int c = 0; c < S_NCOLS; c++)
        if ((r.col[c] = val_csv_col(csv, SCOLS[c], err)) < 0)
            goto done;
    maps = sim_xcalloc(n > 0 ? (size_t)n : 1, sizeof *maps, "the single-GPU steps");
    for (r.i = 0; r.i < n; r.i++)
        if (map_step(&r, &maps[r.i], err) < 0)
            goto done;
    for (int i = 0; i < n; i++) /* one case per model: a repeated name would hide a row */
        for (int j = 0; j < i; j++)
            if (!strcmp(maps[i].row, maps[j].row)) {
                r.i = i;
                bad(&r, S_NAME, err, "expected a name not used by an earlier row");
                goto done;
            }
    /* a few thousand engine operations per row: every row, always */
    rc = e2e_run_maps(ctx, maps, n, 15e6, out, err);
done:
    free(maps);
    val_csv_free(csv);
    return rc;
}

int val_group_e2e_h100_steps(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return steps_group(ctx, &STEP_CARDS[0], out, err);
}

int val_group_e2e_h200_steps(const val_ctx *ctx, val_set *out, sim_err *err)
{
    return steps_group(ctx, &STEP_CARDS[1], out, err);
}
