/* costmodel.c — see costmodel.h. */
#include "costmodel.h"

#include <gsl/gsl_interp.h>
#include <math.h>

double sim_curve_eval(const sim_curve *c, double work)
{
    if (c->n <= 0)
        return 1.0;
    double x = log10(work > 1 ? work : 1);
    if (c->n == 1 || x <= c->log10_work[0])
        return c->efficiency[0];
    if (x >= c->log10_work[c->n - 1])
        return c->efficiency[c->n - 1];
    gsl_interp *it = gsl_interp_alloc(gsl_interp_linear, (size_t)c->n);
    gsl_interp_init(it, c->log10_work, c->efficiency, (size_t)c->n);
    double y = gsl_interp_eval(it, c->log10_work, c->efficiency, x, NULL);
    gsl_interp_free(it);
    return y;
}

static double peak_for(const sim_gpu *g, int dtype)
{
    double p = g->peak_flops[dtype];
    /* GPUs without a TF32 or FP8 path run those in their next wider format */
    if (p <= 0 && dtype == SIM_DTYPE_TF32)
        p = g->peak_flops[SIM_DTYPE_FP32];
    if (p <= 0 && dtype == SIM_DTYPE_FP8)
        p = g->peak_flops[SIM_DTYPE_FP16];
    if (p <= 0 && dtype == SIM_DTYPE_BF16)
        p = g->peak_flops[SIM_DTYPE_FP32]; /* e.g. V100: no bf16 tensor cores */
    return p > 0 ? p : 1e12;
}

/* Fused attention (Dao 2023, FlashAttention-2, Sec. 4.1 and its benchmark's
 * FLOP count): the forward's QK^T and PV, 4·b·heads·s²·d, of which a causal
 * kernel skips the masked blocks, half; the backward recomputes QK^T inside
 * the kernel and computes dV, dP, dQ and dK: 2.5x the forward. */
static double flash_flops(const sim_payload *p)
{
    double f = 4.0 * (double)p->batch * (double)p->m * (double)p->n * (double)p->n * (double)p->k;
    if (p->tag == 1)
        f *= 0.5;
    return p->sub == SIM_KERNEL_FLASH_BWD ? 2.5 * f : f;
}

/* Kernels older than FlashAttention-2 take its time times the published
 * ratio (Dao 2023, FlashAttention-2, Sec. 4.1: FA2 is "1.7-3.0x faster
 * than FlashAttention, 1.3-2.5x faster than FlashAttention in Triton"):
 * the geometric middle of each range, 2.26 and 1.80; on every GPU, as the
 * ratios were measured on A100 only. */
static double older_kernel_slowdown(int impl)
{
    return impl == SIM_ATTN_FA1 ? 2.26 : impl == SIM_ATTN_TRITON ? 1.80 : 1;
}

double sim_cost_flops(const sim_payload *p)
{
    double b = p->batch > 0 ? (double)p->batch : 1.0;
    switch (p->sub) {
    case SIM_KERNEL_GEMM: return 2.0 * (double)p->m * (double)p->n * (double)p->k * b;
    /* QK^T and attention-weights x V: 2 GEMMs of 2·s·s·d per head; the
     * backward takes both inputs' gradients of each: 4 */
    case SIM_KERNEL_ATTENTION: return 4.0 * b * (double)p->m * (double)p->n * (double)p->n * (double)p->k;
    case SIM_KERNEL_ATTENTION_BWD:
        return 8.0 * b * (double)p->m * (double)p->n * (double)p->n * (double)p->k;
    case SIM_KERNEL_FLASH_FWD:
    case SIM_KERNEL_FLASH_BWD: return flash_flops(p);
    default: return 0;
    }
}

double sim_cost_bytes(const sim_payload *p)
{
    double b = p->batch > 0 ? (double)p->batch : 1.0;
    double e = sim_dtype_bytes((sim_dtype)p->dtype);
    switch (p->sub) {
    case SIM_KERNEL_GEMM: return e * b * ((double)p->m * p->k + (double)p->k * p->n + (double)p->m * p->n);
    case SIM_KERNEL_ATTENTION:
    case SIM_KERNEL_ATTENTION_BWD: {
        /* Unfused attention materialises the score matrix (Megatron-LM's
         * core attention: baddbmm, the fused scale-mask-softmax, dropout,
         * bmm).  Forward: written by QK^T, read and written by the softmax
         * and by dropout, which also writes its one-byte mask, read by the
         * second GEMM: 6 passes and the mask; Q, K, V read, the output
         * written.  Backward: the probabilities read for dV, their gradient
         * written by dO·Vᵀ, read with the mask and written by dropout's
         * backward, the softmax's backward reading its output and that
         * gradient and writing the scores' gradient, which dQ and dK each
         * read: 9 passes and the mask; dO read twice, Q, K, V read and dQ,
         * dK, dV written. */
        double scores = b * (double)p->m * (double)p->n * (double)p->n;
        double qkv = 4.0 * b * (double)p->m * (double)p->n * (double)p->k;
        return p->sub == SIM_KERNEL_ATTENTION ? e * (6.0 * scores + qkv) + scores
                                              : e * (9.0 * scores + 2.0 * qkv) + scores;
    }
    default: return (double)p->bytes;
    }
}

/* Tile quantisation (NVIDIA, "Matrix Multiplication Background" user guide,
 * tile and wave quantisation): cuBLAS covers the m x n output with whole
 * thread-block tiles, 128 wide along an edge of at least 128 (an edge that
 * is not a multiple pays for the padded tile: n = 192 runs 2 tiles, 75 %
 * useful); a shorter edge is taken as fitting its tile exactly, since the
 * heuristics pick narrow or split-k kernels for small problems (measured
 * kernels of traces do not show a padding loss there: group kineto-gemm). */
static double tile_of(double e)
{
    return e < 128 ? e : 128;
}

double sim_cost_tile_eff(double m, double n)
{
    if (m <= 0 || n <= 0)
        return 1;
    double tm = tile_of(m), tn = tile_of(n);
    return (m * n) / (ceil(m / tm) * tm * ceil(n / tn) * tn);
}

/* A 16-bit GEMM with an edge that is not a multiple of 8 elements (16
 * bytes) keeps cuBLAS off its TMA kernels, which need 16-byte aligned rows:
 * on H100 those run at about a third of the aligned rate (validation/data/
 * h100-micro/gemm.csv, fitted by fit_gemm.c).  Only the 16-bit types were
 * measured (FP8 GEMMs are padded by the stacks that run them, and Azure's
 * 1024 x 2145 x 1024 FP8 row runs at the aligned rate). */
int sim_cost_gemm_unaligned(const sim_payload *p)
{
    if (p->dtype != SIM_DTYPE_BF16 && p->dtype != SIM_DTYPE_FP16)
        return 0;
    return p->m % 8 || p->n % 8 || p->k % 8;
}

double sim_cost_mem_class(const sim_gpu *g, int c)
{
    double f = c > SIM_MEMC_STREAM && c < SIM_MEMC_COUNT ? g->mem_class[c] : 1;
    return f > 0 ? f : 1; /* checked on load: 0 < f <= 1, or absent */
}

/* An element-wise payload's bytes as streaming bytes: each class's share
 * takes 1 / its fraction as long.  The curve is still read at the payload's
 * own bytes: the class changes the rate, not the size the kernel has.  An
 * optimizer step's bytes take 1 / the GPU's optimizer rate as long: its
 * kernels (multi-tensor loops over lists of parameter, gradient and moment
 * tensors: PyTorch's fused and foreach AdamW, apex's FusedAdam) run below
 * the streaming rate (opt_rate, measured on fused AdamW). */
double sim_cost_stream_bytes(const sim_gpu *g, const sim_payload *p)
{
    double b = sim_cost_bytes(p);
    if (p->kind == SIM_OP_COMPUTE && p->sub == SIM_KERNEL_OPTIMIZER)
        return g->opt_rate > 0 && g->opt_rate < 1 ? b / g->opt_rate : b;
    if (p->kind != SIM_OP_COMPUTE || p->sub != SIM_KERNEL_ELEMENTWISE)
        return b;
    for (int c = 1; c < SIM_MEMC_COUNT; c++)
        b += (double)p->class_bytes[c - 1] * (1 / sim_cost_mem_class(g, c) - 1);
    return b;
}

/* The fused-attention family a kernel runs: the GPU's best, or
 * FlashAttention-2 itself (and the older kernels, priced from it). */
static const sim_flash *flash_family(const sim_gpu *g, const sim_payload *p)
{
    return p->algo == SIM_ATTN_BEST ? &g->flash : &g->flash2;
}

/* A fused-attention payload's head dimension (k; 128, the curves', when
 * unset). */
static double flash_hd(const sim_payload *p)
{
    return p->k > 0 ? (double)p->k : 128;
}

/* The work a kernel computes over its model FLOPs: its head dimension runs
 * as the next instantiation of its family, the padding's zeros computed. */
static double flash_padding(const sim_flash *f, const sim_payload *p)
{
    double d = flash_hd(p);
    for (int i = 0; i < f->n_head_dims; i++)
        if (f->head_dims[i] >= d)
            return f->head_dims[i] / d;
    return 1;
}

/* Time per FLOP at the kernel's head dimension against the curves' 128
 * (sim_flash): the padding, then below 128 (as the measured card ran it)
 * the per-score work's larger share. */
static double flash_head_dim_factor(const sim_flash *f, const sim_payload *p)
{
    int dir = p->sub == SIM_KERNEL_FLASH_BWD;
    double scale = f->score_scale[dir] > 0 ? f->score_scale[dir] : 1;
    double pad = flash_padding(f, p), per_score = scale * 128 / (pad * flash_hd(p));
    return pad * (per_score > 1 ? 1 + f->score_share[dir] * (per_score - 1) : 1);
}

double sim_cost_kernel(const sim_gpu *g, const sim_payload *p)
{
    if (p->sub == SIM_KERNEL_FIXED || p->sub == SIM_KERNEL_DELAY)
        return p->seconds;
    double flops = sim_cost_flops(p), bytes = sim_cost_bytes(p);
    double t_mem = bytes > 0 ? sim_cost_stream_bytes(g, p) / (g->mem_bw * sim_curve_eval(&g->mem_eff, bytes)) : 0;
    double t_flop = 0, side = 0; /* side: the fused backward's small kernels */
    int kernels = 1;
    if (p->sub == SIM_KERNEL_GEMM) {
        double sc = g->gemm_scale[p->dtype] > 0 ? g->gemm_scale[p->dtype] : 1; /* dtype checked on load */
        double un = g->gemm_unaligned > 0 && sim_cost_gemm_unaligned(p) ? g->gemm_unaligned : 1;
        t_flop = flops / (peak_for(g, p->dtype) * sim_curve_eval(&g->gemm_eff, flops) * sc * un *
                          sim_cost_tile_eff((double)p->m, (double)p->n));
    } else if (p->sub == SIM_KERNEL_ATTENTION || p->sub == SIM_KERNEL_ATTENTION_BWD) {
        t_flop = flops / (peak_for(g, p->dtype) * sim_curve_eval(&g->attn_eff, flops));
        /* four framework ops each way (launch_s is a framework op's cost
         * where it is fitted): batched GEMM, softmax, dropout, batched
         * GEMM; backward their four autograd nodes, each GEMM's launching
         * two GEMMs */
        kernels = 4;
    } else if (p->sub == SIM_KERNEL_FLASH_FWD || p->sub == SIM_KERNEL_FLASH_BWD) {
        /* The efficiency is read at the sequence length a query row runs
         * through (its K/V loop), the variable the FlashAttention
         * benchmarks sweep at a full grid; a causal row runs half of it on
         * average, at the family's causal factor (the masked diagonal
         * blocks and the rows' unequal work).  The backward launches three kernels (FA2: dO·O row sums,
         * the main kernel, dQ's conversion from its fp32 accumulator). */
        int bwd = p->sub == SIM_KERNEL_FLASH_BWD;
        const sim_flash *f = flash_family(g, p);
        double row = p->tag == 1 ? 0.5 * (double)p->n : (double)p->n;
        double causal = p->tag == 1 && f->causal[bwd] > 0 ? f->causal[bwd] : 1;
        t_flop = flops * flash_head_dim_factor(f, p) * older_kernel_slowdown(p->algo) /
                 (peak_for(g, p->dtype) * causal * sim_curve_eval(&f->eff[bwd], row));
        kernels = bwd ? 3 : 1;
        side = sim_cost_flash_side(g, p);
    }
    /* a kernel runs at least kernel_min (its work overlaps that fixed time),
     * then the stream waits launch_s before the next */
    return fmax(fmax(t_flop, t_mem), kernels * g->kernel_min_s) + kernels * g->launch_s + side;
}

double sim_cost_flash_side(const sim_gpu *g, const sim_payload *p)
{
    if (p->sub != SIM_KERNEL_FLASH_BWD)
        return 0;
    double out = 2.0 * (p->batch > 0 ? (double)p->batch : 1) * (double)p->m * (double)p->n * (double)p->k;
    double rows = 2 * out, dq = 3 * out; /* dO and O read; dQ read in fp32, written in 16 bits */
    return rows / (g->mem_bw * sim_curve_eval(&g->mem_eff, rows)) + dq / (g->mem_bw * sim_curve_eval(&g->mem_eff, dq));
}

int sim_cost_is_tensor(const sim_payload *p)
{
    return p->kind == SIM_OP_COMPUTE &&
           (p->sub == SIM_KERNEL_GEMM || p->sub == SIM_KERNEL_ATTENTION || p->sub == SIM_KERNEL_ATTENTION_BWD ||
            p->sub == SIM_KERNEL_FLASH_FWD || p->sub == SIM_KERNEL_FLASH_BWD);
}

static double curve_max(const sim_curve *c)
{
    return c->n > 0 ? c->efficiency[c->n - 1] : 1;
}

double sim_cost_tensor_load(const sim_gpu *g, const sim_payload *p, double t)
{
    if (!sim_cost_is_tensor(p) || t <= 0)
        return 0;
    double best, work = sim_cost_flops(p);
    if (p->sub == SIM_KERNEL_GEMM) {
        best = curve_max(&g->gemm_eff) * (g->gemm_scale[p->dtype] > 0 ? g->gemm_scale[p->dtype] : 1);
    } else if (p->sub == SIM_KERNEL_ATTENTION || p->sub == SIM_KERNEL_ATTENTION_BWD) {
        best = curve_max(&g->attn_eff);
    } else {
        /* against the best kernel's rate, whichever kernel runs; padded
         * zeros keep the tensor cores busy too */
        best = curve_max(&g->flash.eff[p->sub == SIM_KERNEL_FLASH_BWD]);
        work *= flash_padding(flash_family(g, p), p);
    }
    double tbest = work / (peak_for(g, p->dtype) * (best > 0 ? best : 1));
    return fmin(1, tbest / t);
}

double sim_cost_power_rate(const sim_gpu *g, double L)
{
    if (g->power_n <= 0)
        return 1;
    if (L <= g->power_load[0])
        return g->power_rate[0];
    for (int i = 1; i < g->power_n; i++)
        if (L <= g->power_load[i])
            return g->power_rate[i - 1] + (g->power_rate[i] - g->power_rate[i - 1]) * (L - g->power_load[i - 1]) /
                                              (g->power_load[i] - g->power_load[i - 1]);
    return g->power_rate[g->power_n - 1];
}
