/* costmodel.h — how long a compute kernel takes on a GPU.
 *
 * A roofline: time = max(FLOPs / (peak × efficiency(FLOPs) × tile(m, n)),
 *                        bytes / (memory bandwidth × efficiency(bytes)),
 *                        shortest kernel × kernels)
 *                    + launch overhead × kernels,
 * with efficiency curves per kernel class and GPU model, interpolated with
 * GSL over log10 of the work (FLOPs; bytes for memory-bound kernels; the
 * sequence length for fused attention).  An element-wise kernel's bytes of
 * a class slower than streaming (sim_mem_class) count 1 / the class's
 * fraction.  Calibration fills the curves (sim_gpu). */
#ifndef SIM_COSTMODEL_H
#define SIM_COSTMODEL_H

#include "machine.h"
#include "schedule.h"

/* Seconds for one compute payload on one GPU. */
/* 1 when a 16-bit GEMM payload has an edge that is not a multiple of 8 elements (gemm_unaligned applies). */
int sim_cost_gemm_unaligned(const sim_payload *p);
/* A kernel's tensor-core load: the time its FLOPs take at the GPU's best
 * rate for its kind (the curve's last point) over its time t; 0 for a
 * kernel without tensor-core work.  The engine averages it over a GPU's
 * kernels to find the GPU's power state (sim_gpu.power_*). */
double sim_cost_tensor_load(const sim_gpu *g, const sim_payload *p, double t);
/* 1, or the rate the GPU's power state leaves its tensor-core kernels at
 * tensor load L (linear between the sim_gpu.power_* points). */
double sim_cost_power_rate(const sim_gpu *g, double L);
/* 1 for the kinds whose rate the power state sets (GEMMs, attention). */
int sim_cost_is_tensor(const sim_payload *p);
double sim_cost_kernel(const sim_gpu *gpu, const sim_payload *p);
/* A fused attention backward's two memory-bound side kernels (FA2 and
 * cuDNN: dO·O's row sums before the main kernel, dQ's conversion from its
 * fp32 accumulator after it), in seconds; 0 for other kernels.  Part of
 * sim_cost_kernel; the attention fits take it off measured times. */
double sim_cost_flash_side(const sim_gpu *gpu, const sim_payload *p);
/* The fraction of the memory curve an element-wise class runs at on g (1 for
 * streaming, and for a class the GPU's catalogue entry does not give). */
double sim_cost_mem_class(const sim_gpu *g, int c);
/* An element-wise payload's bytes with each class's part scaled by 1 / its
 * fraction (its time at the streaming rate); sim_cost_bytes for the rest. */
double sim_cost_stream_bytes(const sim_gpu *g, const sim_payload *p);
/* FLOPs and bytes the cost model charges for a payload. */
double sim_cost_flops(const sim_payload *p);
double sim_cost_bytes(const sim_payload *p);
/* Fraction of a GEMM's m x n output tiles that is useful work (128-wide tiles, narrower on short edges). */
double sim_cost_tile_eff(double m, double n);
/* Efficiency read off a curve at log10(work); 1 for an empty curve. */
double sim_curve_eval(const sim_curve *c, double work);

#endif
