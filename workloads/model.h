/* model.h — model descriptions (workloads/models/<name>.json) and training
 * strategies with Megatron-like names. */
#ifndef WL_MODEL_H
#define WL_MODEL_H

#include <stdint.h>

#include "sim/error.h"
#include "sim/machine.h"

/* A GPT-style decoder. */
typedef struct wl_model {
    char name[64];
    int layers;
    int hidden;
    int heads;
    int ffn;   /* FFN inner size; 4*hidden when absent */
    int seq;
    int vocab;
} wl_model;

/* Loads a model by built-in name ("gpt-3072", see workloads/models/) or JSON path. */
int wl_model_load(const char *spec, wl_model *out, sim_err *err);
int wl_model_from_json(const char *text, const char *source, wl_model *out, sim_err *err);
/* Parameters of the whole model (embeddings included, tied output). */
double wl_model_params(const wl_model *m);

typedef enum wl_recompute { WL_RECOMPUTE_NONE, WL_RECOMPUTE_FULL } wl_recompute;

typedef struct wl_strategy {
    int tp, pp, dp;
    int mb;             /* micro-batch size (sequences) */
    int gb;             /* global batch size (sequences) */
    sim_dtype dtype;    /* fp32, tf32 (fp32 with TF32 matmuls), fp16, bf16 (mixed precision) */
    wl_recompute recompute;
    int64_t dp_bucket_bytes; /* data-parallel gradient bucket size */
} wl_strategy;

/* Defaults: tp=pp=1, dp=0 ("auto": filled from the GPU count by
 * wl_gpt_check), mb=1, gb=0 ("auto": mb*dp), dtype tf32, recompute none,
 * 25 MiB buckets. */
void wl_strategy_default(wl_strategy *s);
/* Parses "tp=4,pp=2,dp=4,mb=2,gb=64,dtype=bf16,recompute=full" on top of *s.
 * Unknown keys and bad values are errors naming the key and what is expected. */
int wl_strategy_parse(const char *text, wl_strategy *s, sim_err *err);
/* Formats a strategy back into the same syntax. */
void wl_strategy_format(const wl_strategy *s, char *buf, int len);

#endif
