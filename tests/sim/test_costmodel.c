/* test_costmodel.c — the kernel cost rule (sim/costmodel.c) on a hand-made
 * GPU: a kernel lasts at least kernel_min_s (its work overlaps that time),
 * then the stream waits launch_s; a dtype's GEMMs run at gemm_scale of the
 * curve (0 = unset = 1), a 16-bit GEMM with an edge not a multiple of 8 at
 * gemm_unaligned; an element-wise payload's bytes of a class at the GPU's
 * fraction for it (mem_class), an optimizer step's at opt_rate; a kernel's
 * tensor load and the power
 * table's rate at a load; every closed form below is computed by hand. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/costmodel.h"

static int fails;

static void expect(double got, double want, const char *what)
{
    int ok = fabs(got - want) <= 1e-12 + 1e-9 * fabs(want);
    printf("%-64s got %.6g want %.6g%s\n", what, got, want, ok ? "" : "  FAIL");
    fails += !ok;
}

static sim_gpu gpu(void)
{
    sim_gpu g;
    memset(&g, 0, sizeof g);
    for (int d = 0; d < SIM_DTYPE_COUNT; d++)
        g.peak_flops[d] = 100e12;
    g.mem_bw = 1e12;
    g.launch_s = 2e-6;
    g.kernel_min_s = 3e-6;
    /* flat curves: efficiency 0.5 everywhere */
    sim_curve half = {.n = 1, .log10_work = {0}, .efficiency = {0.5}};
    g.gemm_eff = g.attn_eff = g.mem_eff = half;
    return g;
}

int main(void)
{
    sim_gpu g = gpu();
    sim_payload p;
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ELEMENTWISE;
    p.bytes = 1000; /* 2 ns of traffic: the shortest kernel decides */
    expect(sim_cost_kernel(&g, &p), 3e-6 + 2e-6, "tiny element-wise: kernel_min + launch");
    p.bytes = 100000000; /* 100 MB at 0.5 x 1 TB/s = 200 us */
    expect(sim_cost_kernel(&g, &p), 200e-6 + 2e-6, "large element-wise: traffic + launch");
    g.kernel_min_s = 0;
    p.bytes = 1000;
    expect(sim_cost_kernel(&g, &p), 2e-9 + 2e-6, "kernel_min 0: the old additive rule");

    /* element-wise classes: a class's bytes run at mem_class[c] of the
     * curve, the rest streams; the curve is read at the payload's bytes */
    g = gpu();
    p.bytes = 100000000;
    p.class_bytes[SIM_MEMC_CAST_UP - 1] = 40000000;
    expect(sim_cost_kernel(&g, &p), 200e-6 + 2e-6, "classed bytes, class unset on the GPU: streaming");
    g.mem_class[SIM_MEMC_CAST_UP] = 0.5;
    /* 60 MB at 0.5 TB/s = 120 us, 40 MB at 0.25 TB/s = 160 us */
    expect(sim_cost_kernel(&g, &p), 280e-6 + 2e-6, "40 of 100 MB cast_up at 0.5: 120 + 160 us");
    expect(sim_cost_stream_bytes(&g, &p), 140000000, "stream-equivalent bytes 60 + 40 / 0.5 MB");
    p.class_bytes[SIM_MEMC_STRIDED - 1] = 60000000;
    g.mem_class[SIM_MEMC_STRIDED] = 0.25;
    /* 40 MB at 0.25 TB/s = 160 us, 60 MB at 0.125 TB/s = 480 us */
    expect(sim_cost_kernel(&g, &p), 640e-6 + 2e-6, "two classes, nothing streams: 160 + 480 us");
    g.mem_class[SIM_MEMC_NORM] = 0.1;
    expect(sim_cost_kernel(&g, &p), 640e-6 + 2e-6, "a class with no bytes in the payload changes nothing");
    expect(sim_cost_mem_class(&g, SIM_MEMC_REDUCE), 1, "an unset class is 1");
    expect(sim_cost_mem_class(&g, SIM_MEMC_STREAM), 1, "streaming is 1 whatever the array holds");
    g.kernel_min_s = 1;
    expect(sim_cost_kernel(&g, &p), 1 + 2e-6, "the shortest kernel still bounds a classed one");
    memset(p.class_bytes, 0, sizeof p.class_bytes);

    /* the optimizer step's bytes at opt_rate of the curve (0 = unset = 1);
     * element-wise kernels do not take it */
    g = gpu();
    sim_payload o = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_OPTIMIZER, .bytes = 100000000};
    expect(sim_cost_kernel(&g, &o), 200e-6 + 2e-6, "optimizer, rate unset: streaming");
    g.opt_rate = 0.8;
    expect(sim_cost_kernel(&g, &o), 250e-6 + 2e-6, "optimizer at rate 0.8: 1 / 0.8 as long");
    p.bytes = 100000000;
    expect(sim_cost_kernel(&g, &p), 200e-6 + 2e-6, "an element-wise kernel ignores the optimizer rate");

    g = gpu();
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_GEMM;
    p.m = p.n = p.k = 4096; /* 2 * 4096^3 FLOPs, tiles exact */
    p.batch = 1;
    p.dtype = SIM_DTYPE_BF16;
    double F = 2.0 * 4096 * 4096 * 4096, t = F / (100e12 * 0.5);
    expect(sim_cost_kernel(&g, &p), t + 2e-6, "GEMM at the curve (gemm_scale unset)");
    g.gemm_scale[SIM_DTYPE_TF32] = 0.5;
    p.dtype = SIM_DTYPE_TF32;
    expect(sim_cost_kernel(&g, &p), 2 * t + 2e-6, "TF32 GEMM at gemm_scale 0.5: twice as long");
    p.dtype = SIM_DTYPE_BF16;
    expect(sim_cost_kernel(&g, &p), t + 2e-6, "another dtype keeps the curve");

    /* gemm_unaligned: a 16-bit GEMM with an edge not a multiple of 8 at that
     * fraction; 0 (unset) or an aligned or non-16-bit GEMM: the curve */
    p.k = 4100; /* 4100 % 8 = 4 */
    double tk = 2.0 * 4096 * 4096 * 4100 / (100e12 * 0.5);
    expect(sim_cost_kernel(&g, &p), tk + 2e-6, "odd k, gemm_unaligned unset: the curve");
    g.gemm_unaligned = 0.25;
    expect(sim_cost_kernel(&g, &p), 4 * tk + 2e-6, "odd k at gemm_unaligned 0.25: four times as long");
    p.dtype = SIM_DTYPE_FP16;
    expect(sim_cost_kernel(&g, &p), 4 * tk + 2e-6, "fp16 too");
    p.dtype = SIM_DTYPE_FP8;
    g.gemm_scale[SIM_DTYPE_FP8] = 1;
    expect(sim_cost_kernel(&g, &p), tk + 2e-6, "FP8: not measured, the curve");
    p.dtype = SIM_DTYPE_BF16;
    p.k = 4104; /* a multiple of 8 */
    expect(sim_cost_kernel(&g, &p), 2.0 * 4096 * 4096 * 4104 / (100e12 * 0.5) + 2e-6, "aligned: the curve");
    p.k = 4096;
    p.m = 4097; /* any odd edge counts: a payload has no layout */
    expect(sim_cost_gemm_unaligned(&p), 1, "odd m is unaligned");
    g.gemm_unaligned = 0;

    /* the power state: a GEMM's tensor load is its time at the curve's best
     * over its time (flat curve: 1); an element-wise kernel has none; the
     * rate is linear between the table's points, held beyond them */
    g = gpu();
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_GEMM;
    p.m = p.n = p.k = 4096;
    p.batch = 1;
    p.dtype = SIM_DTYPE_BF16;
    expect(sim_cost_tensor_load(&g, &p, t), 1, "a GEMM at the curve's best: load 1");
    expect(sim_cost_tensor_load(&g, &p, 4 * t), 0.25, "the same FLOPs in 4x the time: load 0.25");
    expect(sim_cost_is_tensor(&p), 1, "a GEMM is a tensor-core kernel");
    sim_payload e = {.kind = SIM_OP_COMPUTE, .sub = SIM_KERNEL_ELEMENTWISE, .bytes = 1000000};
    expect(sim_cost_tensor_load(&g, &e, 1e-3), 0, "element-wise: no tensor load");
    expect(sim_cost_is_tensor(&e), 0, "element-wise is not a tensor-core kernel");
    expect(sim_cost_power_rate(&g, 0.9), 1, "no power table: rate 1");
    g.power_n = 3;
    g.power_load[0] = 0.4, g.power_rate[0] = 1;
    g.power_load[1] = 0.8, g.power_rate[1] = 0.9;
    g.power_load[2] = 1.0, g.power_rate[2] = 0.8;
    expect(sim_cost_power_rate(&g, 0.1), 1, "below the first load: its rate");
    expect(sim_cost_power_rate(&g, 0.6), 0.95, "halfway 0.4 -> 0.8: 0.95");
    expect(sim_cost_power_rate(&g, 0.9), 0.85, "halfway 0.8 -> 1: 0.85");
    expect(sim_cost_power_rate(&g, 1.0), 0.8, "at the last load: its rate");

    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ATTENTION;
    p.m = 1, p.n = 8, p.k = 8, p.batch = 1; /* tiny: four kernels at their shortest */
    expect(sim_cost_kernel(&g, &p), 4 * 3e-6 + 4 * 2e-6, "tiny attention: 4 x (kernel_min + launch)");
    p.sub = SIM_KERNEL_ATTENTION_BWD;
    expect(sim_cost_kernel(&g, &p), 4 * 3e-6 + 4 * 2e-6, "tiny attention backward: 4 x (kernel_min + launch)");

    /* the unfused core's traffic: 96 scores, 768 Q/K/V/O elements of 2 bytes;
     * forward 6 passes over the scores, backward 9, each with the dropout
     * mask's byte per score */
    memset(&p, 0, sizeof p);
    p.kind = SIM_OP_COMPUTE;
    p.sub = SIM_KERNEL_ATTENTION;
    p.dtype = SIM_DTYPE_FP16;
    p.m = 2, p.n = 4, p.k = 8, p.batch = 3;
    expect(sim_cost_bytes(&p), 2 * (6 * 96 + 768) + 96, "unfused attention forward bytes");
    expect(sim_cost_flops(&p), 4.0 * 3 * 2 * 16 * 8, "unfused attention forward FLOPs: QK^T and PV");
    p.sub = SIM_KERNEL_ATTENTION_BWD;
    expect(sim_cost_bytes(&p), 2 * (9 * 96 + 2 * 768) + 96, "unfused attention backward bytes");
    expect(sim_cost_flops(&p), 8.0 * 3 * 2 * 16 * 8, "unfused attention backward FLOPs: four GEMMs");
    expect(sim_cost_is_tensor(&p), 1, "the backward is a tensor-core kernel");
    return fails != 0;
}
