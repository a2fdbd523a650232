/* g_e2e.h — end-to-end validation against published training runs
 * (validation/data/end-to-end/, one CSV row per measured configuration).
 *
 * A row becomes what `trainsim run` takes: a cluster JSON text, a model JSON
 * text and a strategy string.  g_e2e_map.c writes them from the row's
 * columns and its family's documented defaults (e2e_family: the stack, the
 * provider's platform, each with its source); g_e2e.c checks them against
 * this build's parsers, simulates what can be expressed and records why the
 * rest cannot.
 *
 * Features that other parts of trainsim are still adding are written with
 * their agreed names (model fields kv_heads, ffn_type, norm, position,
 * tie_embeddings, bias; strategy keys attn, dtype=fp8, cp, param_overlap,
 * tp_overlap_comm, fsdp): each field or key is an e2e_item, tried alone
 * against the parser, and what the parser rejects becomes the row's reason
 * (or its fallback, where the code without the key already does what the
 * row needs).  So a row becomes expressible the day its feature lands,
 * without a change here. */
#ifndef VAL_G_E2E_H
#define VAL_G_E2E_H

#include "sim/error.h"
#include "val.h"
#include "val_csv.h"

#define E2E_MAX_ITEMS 24
#define E2E_MAX_GAPS 8
#define E2E_ITEM 96

/* One model JSON field ("\"kv_heads\": 8") or strategy key ("attn=flash").
 * When this build's parser rejects it alone: fallback_kind 0 = the row cannot
 * be expressed; 1 = leave it out (the code without it does what the row
 * needs: e.g. attn=unfused before the key existed); 2 = use `fallback`
 * instead (fsdp=full -> zero=3, the same FSDP full sharding). */
typedef struct e2e_item {
    char text[E2E_ITEM];
    char fallback[E2E_ITEM];
    int fallback_kind;
} e2e_item;

/* Something the row needs that no item expresses (a column not stated, a
 * measurement that cannot be converted, a feature with no key). */
typedef struct e2e_gap {
    char kind[64];
    char reason[256];
} e2e_gap;

/* A row mapped. */
typedef struct e2e_map {
    char row[32];            /* row_id */
    char subset[32];         /* the group's subset ("" = none) */
    char label[96];          /* for the case name: "32 x V100-SXM2-16GB" */
    double measured_s;       /* iteration time; 0 when it cannot be had */
    char measured_how[96];   /* "as stated", "from tokens/s per GPU", ... */
    int ngpus;
    char cluster[4096];      /* cluster JSON text, or: */
    char platform[64];       /* a platform by name (platforms/clusters), when cluster is "" ... */
    int platform_gpus;       /* ... on its first N GPUs: `trainsim run --platform NAME --gpus N` */
    char model[1024];        /* model JSON fields every build takes, without braces */
    int nmodel, nstrat, ngaps;
    e2e_item model_items[E2E_MAX_ITEMS];
    e2e_item strat[E2E_MAX_ITEMS];
    e2e_gap gaps[E2E_MAX_GAPS];
} e2e_map;

typedef struct e2e_family e2e_family;

/* The family (group) of that name, or NULL. */
const e2e_family *e2e_family_find(const char *group);
/* Its data file, relative to the data directory. */
const char *e2e_family_file(const e2e_family *f);
/* Rows of this family per CI run when not --all: a budget in estimated
 * simulation cost (g_e2e.c). */
double e2e_family_ci_budget(const e2e_family *f);

/* Checks that csv has every column the mapping reads (-1 naming the first missing). */
int e2e_map_columns(const val_csv *csv, sim_err *err);

/* Maps row i of csv (the family's file).  Returns 1 when the row belongs to
 * the family (out filled; gaps say what cannot be expressed), 0 when it
 * belongs to another family sharing the file, -1 with err when a column is
 * missing from the file. */
int e2e_map_row(const e2e_family *f, const val_csv *csv, int i, e2e_map *out, sim_err *err);

/* Expresses, simulates and adds as cases of out the mapped rows maps[0..n)
 * (those --rows selects; at most the cheapest ci_budget of estimated cost
 * unless --all: g_e2e.c), the rows that cannot be expressed as skipped rows
 * with their reasons; also --emit and --unexpressed.  For a group whose
 * rows another file maps (g_steps.c).  0, or -1 with err. */
int e2e_run_maps(const val_ctx *ctx, const e2e_map *maps, int n, double ci_budget, val_set *out, sim_err *err);

/* ---- pieces of the mapping, exposed for tests/validation/test_e2e.c ---- */

/* The catalogue name for a row's gpu_model text and gpu_mem_gb ("" when
 * unknown): NULL with *why set when the text is ambiguous. */
const char *e2e_gpu_name(const char *gpu_model, int mem_gb, const char **why);
/* NICs per node from an inter_node_network text: count and catalogue model
 * ("IB-NDR", "200GbE", "OPA-100").  default_kind ("IB", "GbE", "OPA") when the
 * text names none.  Returns 0, or -1 with *why when the text gives no rate. */
int e2e_nics(const char *text, int gpus_per_node, const char *default_kind, int *count, char *model, size_t n,
             const char **why);
/* Iteration time from a measurement: tokens per second per GPU ->
 * gb * seq / (tokens/s * gpus); MFU under the PaLM / nanoGPT definition
 * ((6 N + 12 L h s) FLOPs per token against `peak_tflops`). */
double e2e_time_from_tokens(double tokens_per_s_per_gpu, int gb, int seq, int gpus);
double e2e_time_from_mfu(double mfu_pct, double params, int layers, int hidden, int seq, int gb, int gpus,
                         double peak_tflops);
/* Parameters of a decoder (for the MFU definition): embeddings (untied
 * doubles them), attention with kv_heads, an FFN with 2 (gelu) or 3
 * (swiglu) matrices, biases and norms as given. */
double e2e_params(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab, int seq, int gated,
                  int tied, int bias, int learned_pos);

#endif
